//! Benchmark: the split of a sharded gate's units over the matrix. Two goals (docs/performance.md): on a
//! skewed plan, the slowest shard is at most 1.10x the lower bound `max(mean shard total, largest item)`
//! (beside the naive split by count, for comparison); and for 5,000 units, the estimates and the split over
//! 64 shards take under a second. Reading the recorded sidecars is timed apart.
//!
//!     cargo bench --bench shard_split
//!     AAYU_BENCH_ROUNDS=9 cargo bench --bench shard_split

use std::time::Instant;

use aayudha::shard::split::{self, Item};
use aayudha::shard::timings::{Estimates, Limits, MAX_SIDECARS, Timings, UnitTime};

/// Deterministic pseudo-random numbers (xorshift64), so that every run measures the same plan.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `low..high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

/// A synthetic plan of 300 units as the split sees it, one item a group that shares a shard: 14 touched
/// packages' suites (1 to 8 minutes), 6 of them with red-on-base on the same shard; 20 untouched packages'
/// mapped tests; 260 behaviour checks, mostly under 40 seconds, one in twenty up to 3 minutes.
fn skewed_plan(random: &mut Xorshift) -> (Vec<(String, u64)>, usize) {
    let mut items = Vec::new();
    let mut units = 0;
    for package in 0..14 {
        let mut ms = random.range(60_000, 480_000);
        units += 1;
        if package % 7 < 3 {
            ms += random.range(20_000, 120_000);
            units += 1;
        }
        items.push((format!("suite:crates/pkg{package}"), ms));
    }
    for package in 0..20 {
        items.push((
            format!("tests:services/svc{package}"),
            random.range(5_000, 60_000),
        ));
        units += 1;
    }
    for check in 0..260 {
        let ms = if random.next().is_multiple_of(20) {
            random.range(60_000, 180_000)
        } else {
            random.range(1_000, 40_000)
        };
        items.push((
            format!(
                "check:product{}/feature{}.check{check}",
                check % 5,
                check % 37
            ),
            ms,
        ));
        units += 1;
    }
    (items, units)
}

/// 20 recorded sidecars of the same 5,000 units (4,000 checks, 400 suites, 300 of them with red-on-base,
/// 300 untouched packages' tests), each run's durations jittered around the unit's own.
fn recorded(random: &mut Xorshift) -> Vec<Timings> {
    let mut ids: Vec<(String, u64)> = Vec::new();
    for check in 0..4_000 {
        ids.push((
            format!(
                "check:product{}/feature{}.check{check}",
                check % 9,
                check % 211
            ),
            random.range(500, 90_000),
        ));
    }
    for package in 0..400 {
        ids.push((
            format!("suite:crates/pkg{package}"),
            random.range(20_000, 900_000),
        ));
        if package < 300 {
            ids.push((
                format!("base:crates/pkg{package}"),
                random.range(5_000, 200_000),
            ));
        }
    }
    for package in 0..300 {
        ids.push((
            format!("tests:services/svc{package}"),
            random.range(2_000, 120_000),
        ));
    }
    (0..MAX_SIDECARS)
        .map(|_| Timings {
            schema_version: 1,
            units: ids
                .iter()
                .map(|(id, ms)| UnitTime {
                    id: id.clone(),
                    ms: ms / 2 + random.next() % ms,
                })
                .collect(),
        })
        .collect()
}

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[(seconds.len() - 1) / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::var("AAYU_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);

    // (a) The balance of a skewed plan.
    let mut random = Xorshift(0x9e37_79b9_7f4a_7c15);
    let (plan, units) = skewed_plan(&mut random);
    let items: Vec<Item> = plan.iter().map(|(key, ms)| Item { key, ms: *ms }).collect();
    let sum: u64 = items.iter().map(|i| i.ms).sum();
    let largest = items.iter().map(|i| i.ms).max().unwrap_or(0);
    println!(
        "skewed plan: {units} units in {} items, {:.1} min in all, the largest item {:.1} min",
        items.len(),
        sum as f64 / 60_000.0,
        largest as f64 / 60_000.0
    );
    let mut worst: f64 = 0.0;
    for shards in [4u32, 8, 16] {
        let bound = (sum as f64 / f64::from(shards)).max(largest as f64);
        let slowest = |assignment: &[u32]| {
            split::totals(&items, assignment, shards)
                .into_iter()
                .max()
                .unwrap_or(0) as f64
        };
        let lpt = slowest(&split::split(&items, shards));
        let count = slowest(&split::by_count(&items, shards));
        worst = worst.max(lpt / bound);
        println!(
            "{shards:>2} shards  bound {:>6.2} min  by time (LPT) {:>6.2} min {:>5.3}x   by count {:>6.2} min {:>5.3}x   (goal: LPT <= 1.10x) {}",
            bound / 60_000.0,
            lpt / 60_000.0,
            lpt / bound,
            count / 60_000.0,
            count / bound,
            if lpt / bound <= 1.10 { "ok" } else { "MISSED" }
        );
    }

    // (b) 5,000 units: the estimates from 20 sidecars and the split over 64 shards, from memory.
    let sidecars = recorded(&mut random);
    let limits = Limits {
        check_timeout_s: 600,
        suite_timeout_s: 1_800,
    };
    let mut planned = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let estimates = Estimates::new(&sidecars, limits);
        // A suite and its red-on-base share a shard: one item.
        let items: Vec<Item> = sidecars[0]
            .units
            .iter()
            .filter(|u| !u.id.starts_with("base:"))
            .map(|u| {
                let base =
                    u.id.strip_prefix("suite:")
                        .map_or(0, |dir| estimates.ms(&format!("base:{dir}")));
                Item {
                    key: &u.id,
                    ms: estimates.ms(&u.id) + base,
                }
            })
            .collect();
        let assignment = split::split(&items, 64);
        assert_eq!(assignment.len(), items.len());
        planned.push(started.elapsed().as_secs_f64());
    }
    let planned = median(planned);
    println!(
        "estimates + split, {} units over 64 shards  {:>8.1} ms   (median of {rounds}; goal: < 1 s) {}",
        sidecars[0].units.len(),
        planned * 1000.0,
        if planned < 1.0 { "ok" } else { "MISSED" }
    );

    // Reading the sidecars, apart: what the plan job does before the estimates.
    let files: Vec<Vec<u8>> = sidecars.iter().map(Timings::to_vec).collect();
    let bytes: usize = files.iter().map(Vec::len).sum();
    let mut read = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        for file in &files {
            let parsed = Timings::parse(file)?;
            assert_eq!(parsed.units.len(), sidecars[0].units.len());
        }
        read.push(started.elapsed().as_secs_f64());
    }
    let read = median(read);
    println!(
        "parse {} sidecars of {} units ({:.1} MB)  {:>8.1} ms   (median of {rounds})",
        files.len(),
        sidecars[0].units.len(),
        bytes as f64 / 1e6,
        read * 1000.0
    );

    assert!(
        worst <= 1.10,
        "the slowest shard is {worst:.3}x the bound (goal: at most 1.10x)"
    );
    assert!(
        planned < 1.0,
        "the estimates and the split took {planned:.3} s (goal: under 1 s)"
    );
    Ok(())
}
