//! The split of a gate's units over the shards of an Actions matrix, by expected time: longest processing
//! time first (LPT), the same on every machine and for every order of the input. Also the naive split by
//! count, which the benchmark (`benches/shard_split.rs`) compares it with.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sha2::{Digest, Sha256};

/// One thing to place: a group of units that must share a shard (a package's suite with its red-on-base,
/// say), named by a key that is unique in the plan, with its expected time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item<'a> {
    pub key: &'a str,
    /// Expected milliseconds (see [`super::timings::Estimates`]).
    pub ms: u64,
}

/// The shard (1-based) of each item, in the input's order. Items are placed longest first, each on the
/// shard with the smallest total so far (of equal totals, the lowest number). Items of equal time are
/// placed in the order of their key's SHA-256 (bytewise), then of the key: the order is then a property of
/// the keys, not of the plan's order or the platform. A `shards` of 0 counts as 1.
///
/// With `shards` larger than the number of items, the items take shards 1, 2, … and the rest stay empty.
pub fn split(items: &[Item], shards: u32) -> Vec<u32> {
    let shards = shards.max(1);
    let digests: Vec<[u8; 32]> = items
        .iter()
        .map(|item| Sha256::digest(item.key.as_bytes()).into())
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        items[b]
            .ms
            .cmp(&items[a].ms)
            .then_with(|| digests[a].cmp(&digests[b]))
            .then_with(|| items[a].key.cmp(items[b].key))
    });
    // Shard k is chosen only when shards 1..k all hold an item already, so no item goes beyond shard
    // `items.len()`: the heap holds no more shards than that (a huge `shards` allocates nothing).
    let open = shards.min(u32::try_from(items.len()).unwrap_or(u32::MAX));
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> =
        (1..=open).map(|shard| Reverse((0, shard))).collect();
    let mut assignment = vec![0; items.len()];
    for index in order {
        let Some(Reverse((total, shard))) = heap.pop() else {
            break;
        };
        assignment[index] = shard;
        heap.push(Reverse((total.saturating_add(items[index].ms), shard)));
    }
    assignment
}

/// Each shard's expected time (index 0 is shard 1) under an assignment as [`split`] returns it. A shard
/// number outside `1..=shards` counts nowhere; a `shards` of 0 counts as 1.
pub fn totals(items: &[Item], assignment: &[u32], shards: u32) -> Vec<u64> {
    let mut totals = vec![0u64; shards.max(1) as usize];
    for (item, &shard) in items.iter().zip(assignment) {
        if let Some(total) = (shard as usize)
            .checked_sub(1)
            .and_then(|index| totals.get_mut(index))
        {
            *total = total.saturating_add(item.ms);
        }
    }
    totals
}

/// The naive split by count: round robin over the shards in the order of the keys, whatever the items'
/// times. Only the benchmark uses it, to show what measuring time buys.
pub fn by_count(items: &[Item], shards: u32) -> Vec<u32> {
    let shards = u64::from(shards.max(1));
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        items[a]
            .key
            .cmp(items[b].key)
            .then(items[a].ms.cmp(&items[b].ms))
    });
    let mut assignment = vec![0; items.len()];
    for (place, index) in order.into_iter().enumerate() {
        // The remainder is below `shards`, a u32.
        assignment[index] = (place as u64 % shards) as u32 + 1;
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random numbers (xorshift64).
    struct Xorshift(u64);

    impl Xorshift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// `count` keys with skewed times: mostly short, a few long.
    fn skewed(random: &mut Xorshift, count: usize) -> Vec<(String, u64)> {
        (0..count)
            .map(|i| {
                let ms = match random.next() % 10 {
                    0 => 60_000 + random.next() % 600_000,
                    1..=3 => 10_000 + random.next() % 50_000,
                    _ => 500 + random.next() % 10_000,
                };
                (format!("check:p/f.c{i}"), ms)
            })
            .collect()
    }

    fn items(owned: &[(String, u64)]) -> Vec<Item<'_>> {
        owned
            .iter()
            .map(|(key, ms)| Item { key, ms: *ms })
            .collect()
    }

    /// The smallest possible slowest shard, by trying every assignment (small inputs only).
    fn optimal(items: &[Item], shards: u32) -> u64 {
        fn walk(items: &[Item], totals: &mut Vec<u64>, best: &mut u64) {
            let Some((first, rest)) = items.split_first() else {
                *best = (*best).min(totals.iter().copied().max().unwrap_or(0));
                return;
            };
            let mut tried_empty = false;
            for shard in 0..totals.len() {
                // Empty shards are interchangeable: trying one is enough.
                if totals[shard] == 0 {
                    if tried_empty {
                        continue;
                    }
                    tried_empty = true;
                }
                totals[shard] += first.ms;
                if totals[shard] < *best {
                    walk(rest, totals, best);
                }
                totals[shard] -= first.ms;
            }
        }
        let mut best = u64::MAX;
        walk(items, &mut vec![0; shards as usize], &mut best);
        best
    }

    #[test]
    fn every_item_gets_a_shard_in_range() {
        let mut random = Xorshift(0x9e37_79b9_7f4a_7c15);
        for shards in 1..=9 {
            let owned = skewed(&mut random, 40);
            let items = items(&owned);
            let assignment = split(&items, shards);
            assert_eq!(assignment.len(), items.len());
            assert!(
                assignment.iter().all(|s| (1..=shards).contains(s)),
                "{assignment:?}"
            );
            let by_count = by_count(&items, shards);
            assert!(by_count.iter().all(|s| (1..=shards).contains(s)));
            let totals = totals(&items, &assignment, shards);
            assert_eq!(totals.len(), shards as usize);
            assert_eq!(
                totals.iter().sum::<u64>(),
                items.iter().map(|i| i.ms).sum::<u64>()
            );
        }
        assert_eq!(split(&[], 4), Vec::<u32>::new());
        assert_eq!(by_count(&[], 4), Vec::<u32>::new());
    }

    #[test]
    fn zero_shards_count_as_one() {
        let owned = skewed(&mut Xorshift(7), 5);
        let items = items(&owned);
        assert_eq!(split(&items, 0), vec![1; 5]);
        assert_eq!(by_count(&items, 0), vec![1; 5]);
        assert_eq!(totals(&items, &split(&items, 0), 0).len(), 1);
    }

    #[test]
    fn more_shards_than_items_leaves_shards_empty() {
        let items = [
            Item {
                key: "suite:a",
                ms: 30,
            },
            Item {
                key: "suite:b",
                ms: 10,
            },
            Item {
                key: "suite:c",
                ms: 20,
            },
        ];
        let assignment = split(&items, 5);
        assert_eq!(assignment, vec![1, 3, 2]);
        assert_eq!(totals(&items, &assignment, 5), vec![30, 20, 10, 0, 0]);
        // A huge shard count allocates nothing for the shards no item can reach.
        assert_eq!(split(&items, u32::MAX), vec![1, 3, 2]);
    }

    #[test]
    fn the_input_order_does_not_matter() {
        let mut random = Xorshift(0x2545_f491_4f6c_dd1d);
        let mut owned = skewed(&mut random, 200);
        // Many equal times, so that the key's hash decides.
        for (i, (_, ms)) in owned.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
            *ms = 1000 + (i as u64 % 2);
        }
        let first: std::collections::HashMap<String, u32> = {
            let items = items(&owned);
            let assignment = split(&items, 7);
            owned
                .iter()
                .map(|(k, _)| k.clone())
                .zip(assignment)
                .collect()
        };
        for _ in 0..5 {
            // Fisher-Yates.
            for i in (1..owned.len()).rev() {
                let j = (random.next() % (i as u64 + 1)) as usize;
                owned.swap(i, j);
            }
            let items = items(&owned);
            for (item, shard) in items.iter().zip(split(&items, 7)) {
                assert_eq!(first[item.key], shard, "{}", item.key);
            }
        }
    }

    #[test]
    fn equal_times_are_ordered_by_the_key_hash() {
        let (a, b) = ("check:p/f.one", "check:p/f.two");
        let a_first = Sha256::digest(a.as_bytes()) < Sha256::digest(b.as_bytes());
        let items = [Item { key: a, ms: 5 }, Item { key: b, ms: 5 }];
        let expected = if a_first { vec![1, 2] } else { vec![2, 1] };
        assert_eq!(split(&items, 2), expected);
        let swapped = [items[1], items[0]];
        let mut expected = expected;
        expected.reverse();
        assert_eq!(split(&swapped, 2), expected);
    }

    #[test]
    fn equal_times_spread_evenly() {
        for (count, shards) in [(12, 4), (10, 4), (64, 64), (65, 64), (7, 3)] {
            let owned: Vec<(String, u64)> = (0..count)
                .map(|i| (format!("tests:pkg{i}"), 1500))
                .collect();
            let items = items(&owned);
            let totals = totals(&items, &split(&items, shards), shards);
            let (min, max) = (
                totals.iter().copied().min().unwrap_or(0),
                totals.iter().copied().max().unwrap_or(0),
            );
            assert!(max - min <= 1500, "{count} over {shards}: {totals:?}");
        }
    }

    #[test]
    fn the_slowest_shard_keeps_the_lpt_bounds() {
        let mut random = Xorshift(0xdead_beef_cafe_f00d);
        for round in 0..60 {
            let shards = 2 + round % 4;
            let owned = skewed(&mut random, 9 + round as usize % 3);
            let items = items(&owned);
            let slowest = totals(&items, &split(&items, shards), shards)
                .into_iter()
                .max()
                .unwrap_or(0);
            let sum: u64 = items.iter().map(|i| i.ms).sum();
            let largest = items.iter().map(|i| i.ms).max().unwrap_or(0);
            let m = u64::from(shards);
            // Graham: the last item placed on the slowest shard found it at or below the mean.
            assert!(slowest * m <= sum + m * largest, "round {round}");
            // LPT is within 4/3 - 1/(3m) of the best split: 3m * slowest <= (4m - 1) * optimal.
            let best = optimal(&items, shards);
            assert!(
                3 * m * slowest <= (4 * m - 1) * best,
                "round {round}: {slowest} beside the best {best} over {shards}"
            );
        }
    }

    #[test]
    fn by_count_is_round_robin_in_key_order() {
        let items = [
            Item { key: "c", ms: 1 },
            Item { key: "a", ms: 1000 },
            Item { key: "d", ms: 1 },
            Item { key: "b", ms: 1 },
        ];
        assert_eq!(by_count(&items, 3), vec![3, 1, 1, 2]);
    }
}
