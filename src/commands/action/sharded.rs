//! A sharded gate (`docs/action.md`, "A sharded gate"): the merge gate spread over an Actions matrix.
//!
//! - `plan` (trusted, no product code): the units the single gate job would run on this pull request,
//!   split over the legs by measured time; the artifact `aayudha-plan` (`plan.json`) and the outputs
//!   `matrix` and `plan_digest`.
//! - `shard` (one leg, the gate job's image and sandbox): the plan checked against `plan_digest`, then
//!   exactly its units, uploaded as `aayudha-pack-shard-<i>-of-<N>-attempt-<k>` with `timings.json`.
//! - `merge` (trusted, no product code): every leg's newest artifact verified (GitHub's digest, every
//!   file's hash, the units the plan gave it and no other), then the one pack judged from all of them as
//!   one job judges its own, uploaded as `aayudha-pack`; `aayudha-timings` beside it. A leg missing,
//!   failed or tampered with makes the gate `blocked`, naming the leg, and no pack is uploaded.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::PullGate;
use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::gate::Executed;
use crate::gate::units::{self, Unit};
use crate::publish::archive::{self, Limits};
use crate::publish::job::Job;
use crate::publish::results::{Listed, Results};
use crate::settings::action::ActionOptions;
use crate::shard::timings::{Timings, UnitTime};

/// The plan's artifact, with its one file `plan.json`.
pub const PLAN_ARTIFACT: &str = "aayudha-plan";
/// The merged timings' artifact (never inside `aayudha-pack`).
pub const TIMINGS_ARTIFACT: &str = "aayudha-timings";
/// Every leg's artifact name starts so: `aayudha-pack-shard-<i>-of-<N>-attempt-<k>`.
const SHARD_PREFIX: &str = "aayudha-pack-shard-";
/// The most legs a plan splits into (a matrix allows 256; each leg is a runner and an image pull).
pub const MAX_SHARDS: u32 = 64;
/// `plan.json`'s schema.
const PLAN_SCHEMA: &str = include_str!("../../../schemas/plan.v1.json");
/// The newest authoritative timings sidecars the plan reads.
const SIDECARS: usize = 20;

/// `plan.json`: every unit and its leg.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub schema_version: u32,
    pub shards: u32,
    pub units: Vec<PlanUnit>,
}

/// A unit of `plan.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanUnit {
    pub id: String,
    pub shard: u32,
    pub kind: String,
    pub package: Option<String>,
}

/// A leg's `shard.json`: which leg of which plan, the units it ran, the files of its run folder with
/// their hashes (under `run/` in the zip), and what its units gave.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardFile {
    schema_version: u32,
    shard: u32,
    of: u32,
    attempt: u32,
    plan_digest: String,
    base_sha: String,
    head_sha: String,
    units: Vec<String>,
    files: Vec<ShardEntry>,
    executed: Executed,
}

/// A file of a leg's run folder.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardEntry {
    path: String,
    sha256: String,
    size: u64,
}

impl PlanFile {
    /// Reads `plan.json`: its schema, then its type; each leg within `shards`, each id once.
    pub fn parse(bytes: &[u8]) -> Result<PlanFile, String> {
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("plan.json:{}:{}: not JSON: {e}", e.line(), e.column()))?;
        let schema: serde_json::Value =
            serde_json::from_str(PLAN_SCHEMA).map_err(|e| format!("the plan schema: {e}"))?;
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| format!("the plan schema: {e}"))?;
        if let Some(e) = validator.iter_errors(&value).next() {
            let at = e.instance_path().to_string();
            return Err(format!(
                "plan.json: {}: {e}",
                if at.is_empty() { "/" } else { &at }
            ));
        }
        let plan: PlanFile =
            serde_json::from_value(value).map_err(|e| format!("plan.json: {e}"))?;
        let mut seen = BTreeSet::new();
        for unit in &plan.units {
            if unit.shard > plan.shards {
                return Err(format!(
                    "plan.json: unit `{}` is on shard {} of {}",
                    unit.id, unit.shard, plan.shards
                ));
            }
            if !seen.insert(unit.id.as_str()) {
                return Err(format!("plan.json: unit `{}` is listed twice", unit.id));
            }
        }
        Ok(plan)
    }

    /// The ids of leg `shard`'s units.
    fn of_shard(&self, shard: u32) -> BTreeSet<String> {
        self.units
            .iter()
            .filter(|u| u.shard == shard)
            .map(|u| u.id.clone())
            .collect()
    }

    /// Whether the plan's units are exactly `units` (the pull request as this job sees it).
    fn matches(&self, units: &[Unit]) -> Result<(), String> {
        let planned: BTreeSet<&str> = self.units.iter().map(|u| u.id.as_str()).collect();
        let here: BTreeSet<&str> = units.iter().map(|u| u.id.as_str()).collect();
        if let Some(id) = here.difference(&planned).next() {
            return Err(format!(
                "the plan has no unit `{id}`, which this pull request needs"
            ));
        }
        if let Some(id) = planned.difference(&here).next() {
            return Err(format!(
                "the plan's unit `{id}` is not one this pull request needs"
            ));
        }
        Ok(())
    }
}

/// The runner's results service, which holds this run's artifacts.
fn results(ctx: &Context) -> Result<Results, Failure> {
    let github = ctx.github;
    let (Some(url), Some(token)) = (&github.results_url, &github.runtime_token) else {
        return Err(Failure::usage(
            "ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are not set: a sharded gate passes its plan and its legs' results as this run's artifacts",
        )
        .with_hint("the sharded gate runs as steps of a GitHub Actions workflow (the Docker action receives both)"));
    };
    Results::new(url, token)
        .map_err(|e| Failure::unexpected("the results service cannot be reached").caused_by(e))
}

/// Zips `dir` and uploads it as this run's artifact `name`.
fn upload(ctx: &Context, dir: &Path, name: &str, retention: u32) -> Result<(), Failure> {
    let zip = dir.with_extension("zip");
    let file = std::fs::File::create(&zip).map_err(|e| {
        Failure::unexpected(format!("cannot create `{}`", zip.display())).caused_by(e)
    })?;
    archive::build(dir, std::io::BufWriter::new(file))
        .map_err(|e| Failure::unexpected(format!("cannot zip `{name}`")).caused_by(e))?;
    let (days, _) = crate::publish::results::retention(retention, ctx.github.retention_max);
    results(ctx)?
        .upload(name, &zip, Some(days), ctx.env.now()?)
        .map_err(|e| {
            Failure::unexpected(format!("cannot upload the `{name}` artifact")).caused_by(e)
        })?;
    Ok(())
}

/// Downloads this run's `aayudha-plan` and reads its one file: the plan and its digest.
fn download_plan(results: &Results) -> Result<(PlanFile, String), String> {
    let zip = results
        .download(PLAN_ARTIFACT)
        .map_err(|e| format!("the plan: {e}"))?;
    let mut entries = archive::entries(&zip, small_zip(1)).map_err(|e| format!("the plan: {e}"))?;
    let bytes = entries
        .remove("plan.json")
        .filter(|_| entries.is_empty())
        .ok_or_else(|| {
            format!("the `{PLAN_ARTIFACT}` artifact must hold plan.json and nothing else")
        })?;
    let digest = crate::hash::bytes(&bytes);
    Ok((PlanFile::parse(&bytes)?, digest))
}

/// Limits for the sharded gate's own small zips.
fn small_zip(entries: usize) -> Limits {
    Limits {
        entries,
        entry_bytes: 64 << 20,
        total_bytes: 256 << 20,
    }
}

/// The legs' estimated durations: the newest authoritative timings sidecars on the ledger (each one
/// that does not parse is said and skipped), else each kind's default.
fn estimates(ctx: &mut Context, pull: &PullGate) -> crate::shard::timings::Estimates {
    let verify = &pull.config.verify;
    let limits = crate::shard::timings::Limits {
        check_timeout_s: verify.check_timeout_s,
        suite_timeout_s: verify.suite_timeout_s,
    };
    let ledger = format!("refs/remotes/origin/{}", pull.config.ledger.branch);
    let mut read = Vec::new();
    for sidecar in crate::ledger::timings::authoritative(&pull.repo, &ledger, SIDECARS) {
        match Timings::parse(&sidecar.bytes) {
            Ok(timings) => read.push(timings),
            Err(e) => {
                let _ = writeln!(
                    ctx.err,
                    "notice: the timings sidecar `{}` on the ledger is ignored: {e}",
                    crate::log::escape_data(&sidecar.path)
                );
            }
        }
    }
    crate::shard::timings::Estimates::new(&read, limits)
}

/// `--mode plan`: the units and their legs.
pub fn plan(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let shards = options.shards.unwrap_or(1);
    if !(1..=MAX_SHARDS).contains(&shards) {
        return Err(Failure::usage(format!(
            "the input `shards` must be 1 to {MAX_SHARDS}, not {shards}"
        ))
        .with_hint("set `shards` in the plan job's `with:` (each leg is a runner: a few are usually enough)"));
    }
    let job = Job::of(ctx.github);
    let (pull, story) = PullGate::open(ctx, options)?;
    let inputs = pull.inputs(story, ctx.env)?;
    // An evidence map the pull request breaks is said where the single job says it: the summary.
    let plan = crate::gate::plan::plan(&inputs.change())
        .map_err(|e| super::no_pack(ctx, &job, Failure::from(e)))?;
    let units = units::units(&plan, pull.repo.root());
    let estimates = estimates(ctx, &pull);
    // A group (a package's suite or tests with its base) goes to one leg whole.
    let mut groups: BTreeMap<&str, u64> = BTreeMap::new();
    for unit in &units {
        // At least a millisecond each: units that took no time still spread over the legs.
        *groups.entry(unit.group.as_str()).or_default() += estimates.ms(&unit.id).max(1);
    }
    let items: Vec<crate::shard::split::Item> = groups
        .iter()
        .map(|(key, ms)| crate::shard::split::Item { key, ms: *ms })
        .collect();
    let legs = crate::shard::split::split(&items, shards);
    let leg_of: BTreeMap<&str, u32> = items.iter().zip(&legs).map(|(i, &l)| (i.key, l)).collect();
    let file = PlanFile {
        schema_version: 1,
        shards,
        units: units
            .iter()
            .map(|u| PlanUnit {
                id: u.id.clone(),
                shard: leg_of[u.group.as_str()],
                kind: u.kind.to_string(),
                package: u.package.clone(),
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file)
        .map_err(|e| Failure::unexpected("cannot write plan.json").caused_by(e))?;
    bytes.push(b'\n');
    // What this aayu writes, its own schema checks (a bug otherwise).
    PlanFile::parse(&bytes).map_err(|e| {
        Failure::unexpected(format!("the plan this aayu made is not valid (a bug): {e}"))
    })?;
    let digest = crate::hash::bytes(&bytes);
    let dir = pull.temp.path().join("plan");
    std::fs::create_dir_all(&dir)
        .and_then(|()| crate::safe_fs::write_atomic(&dir.join("plan.json"), &bytes))
        .map_err(|e| Failure::unexpected("cannot write plan.json").caused_by(e))?;
    upload(ctx, &dir, PLAN_ARTIFACT, pull.config.proof.retention_days)?;
    let matrix = serde_json::json!({
        "include": (1..=shards).map(|i| serde_json::json!({"shard": i, "of": shards})).collect::<Vec<_>>()
    });
    job.output(ctx.err, "matrix", &matrix.to_string());
    job.output(ctx.err, "plan_digest", &digest);
    let mut totals = vec![(0usize, 0u64); shards as usize];
    for unit in &units {
        let leg = &mut totals[(leg_of[unit.group.as_str()] - 1) as usize];
        leg.0 += 1;
        leg.1 += estimates.ms(&unit.id);
    }
    let mut summary = format!(
        "## aayudha plan\n\n{} over {} (plan.json sha256 `{digest}`)\n\n| shard | units | estimated |\n|---|---|---|\n",
        crate::log::count(units.len(), "unit", "units"),
        crate::log::count(shards as usize, "shard", "shards"),
    );
    for (i, (count, ms)) in totals.iter().enumerate() {
        summary.push_str(&format!(
            "| {} | {count} | {} s |\n",
            i + 1,
            ms.div_ceil(1000)
        ));
    }
    // Which units went where: their names come from the pull request's maps, so each is code.
    for leg in 1..=shards {
        let ids: Vec<String> = file
            .units
            .iter()
            .filter(|u| u.shard == leg)
            .map(|u| crate::output::markdown::code(&u.id))
            .collect();
        if !ids.is_empty() {
            summary.push_str(&format!(
                "\n<details><summary>shard {leg}</summary>\n\n{}\n</details>\n",
                ids.join(", ")
            ));
        }
    }
    job.summary(ctx.err, &summary);
    let slowest = totals.iter().map(|t| t.1).max().unwrap_or(0);
    let _ = writeln!(
        ctx.out,
        "aayudha plan: {} over {}; the slowest is estimated at {} s; plan.json sha256 {digest}",
        crate::log::count(units.len(), "unit", "units"),
        crate::log::count(shards as usize, "shard", "shards"),
        slowest.div_ceil(1000)
    );
    Ok(ExitStatus::Ok)
}

/// The leg's own inputs: `shard` of `shards`, and the plan's digest.
fn leg_inputs(options: &ActionOptions) -> Result<(u32, u32, String), Failure> {
    let missing = |name: &str, from: &str| {
        Failure::usage(format!("the shard mode needs the input `{name}`"))
            .with_hint(format!("pass `{name}: {from}` in the shard job's `with:`"))
    };
    let shard = options
        .shard
        .ok_or_else(|| missing("shard", "${{ matrix.shard }}"))?;
    let shards = options
        .shards
        .ok_or_else(|| missing("shards", "${{ matrix.of }}"))?;
    let digest = options
        .plan_digest
        .clone()
        .ok_or_else(|| missing("plan_digest", "${{ needs.plan.outputs.plan_digest }}"))?;
    if !(1..=MAX_SHARDS).contains(&shards) || !(1..=shards).contains(&shard) {
        return Err(Failure::usage(format!(
            "the inputs `shard` {shard} and `shards` {shards} name no leg: `shard` must be 1 to `shards`, `shards` at most {MAX_SHARDS}"
        )));
    }
    if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Failure::usage(format!(
            "the input `plan_digest` must be the plan job's SHA-256 (64 hex digits), not `{}`",
            digest.escape_debug()
        )));
    }
    Ok((shard, shards, digest.to_ascii_lowercase()))
}

/// `--mode shard`: one leg runs exactly its units and uploads what they gave.
pub fn shard(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let (shard, shards, digest) = leg_inputs(options)?;
    let job = Job::of(ctx.github);
    let (pull, story) = PullGate::open(ctx, options)?;
    // Why this leg uploaded nothing goes to its summary too: the merge can only say it has no artifact.
    leg(ctx, (pull, story), (shard, shards, digest)).map_err(|f| super::no_pack(ctx, &job, f))
}

/// The leg itself: the plan checked, its units run, what they gave uploaded.
fn leg(
    ctx: &mut Context,
    (pull, story): (PullGate, Option<crate::story::Story>),
    (shard, shards, digest): (u32, u32, String),
) -> Result<ExitStatus, Failure> {
    let _interrupted = crate::sandbox::cleanup::dir(pull.temp.path());
    let (file, found) = download_plan(&results(ctx)?).map_err(Failure::unexpected)?;
    if found != digest {
        return Err(Failure::unexpected(format!(
            "the `{PLAN_ARTIFACT}` artifact's plan.json has sha256 {found}, not the plan job's {digest}: this leg runs nothing"
        )));
    }
    if file.shards != shards {
        return Err(Failure::usage(format!(
            "the plan has {} shards but this leg was started as one of {shards}",
            file.shards
        )));
    }
    let inputs = pull.inputs(story, ctx.env)?;
    let plan = crate::gate::plan::plan(&inputs.change()).map_err(Failure::from)?;
    file.matches(&units::units(&plan, pull.repo.root()))
        .map_err(|why| {
            Failure::unexpected(format!("the plan does not match the pull request: {why}"))
        })?;
    let mine = file.of_shard(shard);
    let plan = plan.only(&inputs.change(), &mine);
    let _ = writeln!(
        ctx.out,
        "aayudha shard {shard} of {shards}: {}",
        crate::log::count(mine.len(), "unit", "units")
    );
    let folder = crate::gate::run_folder(&inputs).map_err(Failure::from)?;
    let executed = crate::gate::execute(&inputs, &plan, folder.path(), ctx.err);
    if crate::sandbox::cleanup::interrupted() {
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let executed = executed.map_err(Failure::from)?;
    let attempt = u32::try_from(ctx.github.run_attempt.unwrap_or(1)).unwrap_or(u32::MAX);
    let dir = pull.temp.path().join("shard");
    let shard_file = ShardFile {
        schema_version: 1,
        shard,
        of: shards,
        attempt,
        plan_digest: digest,
        base_sha: pull.pr.base_sha.clone(),
        head_sha: pull.pr.head_sha.clone(),
        units: mine.iter().cloned().collect(),
        files: copy_run_files(folder.path(), &dir.join("run"))?,
        executed,
    };
    let timings = Timings {
        schema_version: 1,
        // Only what was measured: a unit that did not run (a base refused for a shallow history) has no
        // time, rather than a time of 0.
        units: mine
            .iter()
            .filter_map(|id| {
                let took = shard_file.executed.elapsed.get(id)?;
                Some(UnitTime {
                    id: id.clone(),
                    ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                })
            })
            .collect(),
    };
    crate::safe_fs::write_json(&dir.join("shard.json"), &shard_file)
        .and_then(|()| crate::safe_fs::write_atomic(&dir.join("timings.json"), &timings.to_vec()))
        .map_err(|e| Failure::unexpected("cannot write the leg's results").caused_by(e))?;
    let name = format!("{SHARD_PREFIX}{shard}-of-{shards}-attempt-{attempt}");
    upload(ctx, &dir, &name, pull.config.proof.retention_days)?;
    let _ = writeln!(
        ctx.out,
        "aayudha shard {shard} of {shards}: uploaded as `{name}`"
    );
    // Uploaded: the merge and the pack job report the verdict.
    Ok(ExitStatus::Ok)
}

/// Copies the files a leg's checks left in its run folder (`behaviour/…`: the only files made before any
/// verdict) into `to`, and lists them with their hashes.
fn copy_run_files(run: &Path, to: &Path) -> Result<Vec<ShardEntry>, Failure> {
    let fail =
        |e: std::io::Error| Failure::unexpected("cannot copy the leg's run folder").caused_by(e);
    let mut entries = Vec::new();
    for rel in crate::pack::files_under(run).map_err(fail)? {
        if !rel.starts_with("behaviour/") {
            continue;
        }
        let target = to.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        std::fs::copy(run.join(&rel), &target).map_err(fail)?;
        let (sha256, size) = crate::hash::file(&target).map_err(fail)?;
        entries.push(ShardEntry {
            path: rel,
            sha256,
            size,
        });
    }
    Ok(entries)
}

/// Why the merge cannot assemble the pack: one line, naming the leg when it is one leg's; and whether
/// re-running the failed jobs can help (a leg missing), or something must be fixed first.
#[derive(Debug)]
struct Blocked {
    reason: String,
    rerun: bool,
}

impl Blocked {
    /// Something to fix (or a run to start again whole): re-running the failed jobs does not help.
    fn fix(reason: impl Into<String>) -> Blocked {
        Blocked {
            reason: reason.into(),
            rerun: false,
        }
    }

    /// A leg left no artifact: re-running the failed jobs runs it again.
    fn rerun(reason: impl Into<String>) -> Blocked {
        Blocked {
            reason: reason.into(),
            rerun: true,
        }
    }

    /// What to do next, for the summary and the log.
    fn hint(&self) -> &'static str {
        if self.rerun {
            "re-run the failed jobs: the leg runs again, then the merge and the pack job (should GitHub not serve the earlier attempt's artifacts then, re-run all jobs)"
        } else {
            "fix what it names and push, or re-run all jobs: re-running only the failed jobs makes the same merge"
        }
    }
}

/// `--mode merge`: every leg verified, then the one pack. A leg missing, failed or tampered with blocks
/// the gate: `result` `blocked`, `reason` naming it, no pack, a non-zero exit.
pub fn merge(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let job = Job::of(ctx.github);
    // The outputs and the summary of a blocked gate, and the failure the job ends with.
    let blocked = |ctx: &mut Context, why: Blocked| {
        job.output(ctx.err, "result", "blocked");
        // One line whatever it quotes (an evidence map's error is the pull request's text).
        let line: String = why
            .reason
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        job.output(ctx.err, "reason", &line);
        let summary = format!(
            "## aayudha merge: blocked\n\n{}\nNo pack was made: the `aayudha/proof` status is `failure`. Next: {}.\n",
            crate::output::markdown::block(&why.reason),
            why.hint()
        );
        job.summary(ctx.err, &summary);
        Failure::unexpected(format!("the gate is blocked: {}", why.reason)).with_hint(why.hint())
    };
    let (pull, story) = match PullGate::open(ctx, options) {
        Ok(opened) => opened,
        Err(failure) => {
            let why = Blocked::fix(format!("the merge could not start: {}", failure.message));
            blocked(ctx, why);
            return Err(failure);
        }
    };
    let _interrupted = crate::sandbox::cleanup::dir(pull.temp.path());
    let inputs = pull.inputs(story, ctx.env)?;
    let legs = match verified_legs(ctx, &pull, &inputs) {
        Ok(legs) => legs,
        Err(why) => return Err(blocked(ctx, why)),
    };
    let Legs {
        plan,
        files,
        executed,
        timings,
    } = legs;
    let folder = crate::gate::run_folder(&inputs).map_err(Failure::from)?;
    for (rel, bytes) in &files {
        // A file of one leg where another's folder is (`a` and `a/b`) cannot be written: said as such.
        if let Err(e) = crate::safe_fs::write(folder.path(), rel, bytes) {
            let why = Blocked::fix(format!(
                "the legs' file `{rel}` cannot be written beside the others: {e}"
            ));
            return Err(blocked(ctx, why));
        }
    }
    let run = match crate::gate::judge(&inputs, &plan, executed, folder.path(), ctx.err) {
        Ok(run) => run,
        Err(e) => return Err(blocked(ctx, Blocked::fix(Failure::from(e).message))),
    };
    let mut publish = pull.publish(ctx, options)?;
    publish.merge = true;
    crate::publish::gate::gate(&run, publish, pull.temp.path(), ctx.out, ctx.err)?;
    // The timings beside the pack, never in it: a failure to upload them is said, never fatal.
    let dir = pull.temp.path().join("timings");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| crate::safe_fs::write_atomic(&dir.join("timings.json"), &timings.to_vec()));
    if let Err(e) = written
        .map_err(|e| Failure::unexpected("cannot write timings.json").caused_by(e))
        .and_then(|()| {
            upload(
                ctx,
                &dir,
                TIMINGS_ARTIFACT,
                pull.config.proof.retention_days,
            )
        })
    {
        let _ = writeln!(
            ctx.err,
            "warning: the timings were not uploaded: {}",
            e.message
        );
    }
    Ok(ExitStatus::Ok)
}

/// Every leg's results, verified and put together.
struct Legs {
    plan: crate::gate::plan::Plan,
    /// Every leg's run-folder files, by path.
    files: BTreeMap<String, Vec<u8>>,
    executed: Executed,
    timings: Timings,
}

/// The plan and every leg's newest artifact, each verified; or why the gate is blocked.
fn verified_legs(
    ctx: &mut Context,
    pull: &PullGate,
    inputs: &crate::gate::Inputs,
) -> Result<Legs, Blocked> {
    // What the pull request asks for first: an evidence map it breaks is the reason, not the plan job's
    // missing artifact.
    let plan = crate::gate::plan::plan(&inputs.change())
        .map_err(|e| Blocked::fix(Failure::from(e).message))?;
    let results = results(ctx).map_err(|f| Blocked::rerun(f.message))?;
    let listed = results
        .list()
        .map_err(|e| Blocked::rerun(format!("the run's artifacts cannot be listed: {e}")))?;
    if listed.iter().any(|a| a.name == crate::pack::ARTIFACT) {
        return Err(Blocked::fix(format!(
            "this run already has an `{}` artifact: a run holds one pack, made by its merge",
            crate::pack::ARTIFACT
        )));
    }
    let (file, digest) = download_plan(&results).map_err(Blocked::fix)?;
    file.matches(&units::units(&plan, pull.repo.root()))
        .map_err(|why| Blocked::fix(format!("the plan does not match the pull request: {why}")))?;
    let attempt = u32::try_from(ctx.github.run_attempt.unwrap_or(1)).unwrap_or(u32::MAX);
    let chosen = newest_legs(&listed, file.shards, attempt)?;
    let mut legs = Legs {
        plan,
        files: BTreeMap::new(),
        executed: Executed::default(),
        timings: Timings {
            schema_version: 1,
            units: Vec::new(),
        },
    };
    let said =
        |shard: u32, why: String| Blocked::fix(format!("shard {shard} of {}: {why}", file.shards));
    let mut read = Vec::new();
    for (shard, artifact) in (1..).zip(&chosen) {
        let leg = Leg {
            shard,
            of: file.shards,
            artifact,
        };
        read.push(
            leg.read(&results, &digest, pull)
                .map_err(|why| said(shard, why))?,
        );
    }
    // The legs are pairwise disjoint, and each ran exactly the units the plan gave it.
    let mut ran: BTreeMap<&str, u32> = BTreeMap::new();
    for (shard, (leg, _, _)) in (1..).zip(&read) {
        for unit in &leg.units {
            if let Some(other) = ran.insert(unit, shard) {
                return Err(said(
                    shard,
                    format!("ran `{unit}`, which shard {other} ran too (a duplicated unit)"),
                ));
            }
        }
    }
    for (shard, (leg, _, _)) in (1..).zip(&read) {
        let planned = file.of_shard(shard);
        let claimed: BTreeSet<String> = leg.units.iter().cloned().collect();
        if let Some(unit) = claimed.difference(&planned).next() {
            return Err(said(
                shard,
                format!("ran `{unit}`, which the plan does not give it"),
            ));
        }
        if let Some(unit) = planned.difference(&claimed).next() {
            return Err(said(shard, format!("did not run its unit `{unit}`")));
        }
        results_within(&leg.executed, &claimed, pull.repo.root())
            .map_err(|why| said(shard, why))?;
    }
    for (shard, (leg, files, timings)) in (1..).zip(read) {
        for (rel, bytes) in files {
            if legs.files.insert(rel.clone(), bytes).is_some() {
                return Err(said(shard, format!("`{rel}` is also another shard's file")));
            }
        }
        legs.executed.absorb(leg.executed);
        legs.timings.units.extend(timings);
    }
    Ok(legs)
}

/// Per leg, the newest attempt's artifact: a name of a leg outside the plan, or two of one leg and
/// attempt, blocks; a leg with none blocks.
fn newest_legs(
    listed: &[Listed],
    shards: u32,
    this_attempt: u32,
) -> Result<Vec<(String, u32, Option<String>)>, Blocked> {
    let mut newest: BTreeMap<u32, (u32, &Listed)> = BTreeMap::new();
    for artifact in listed.iter().filter(|a| a.name.starts_with(SHARD_PREFIX)) {
        let Some((shard, of, attempt)) = leg_name(&artifact.name) else {
            return Err(Blocked::fix(format!(
                "`{}` is not an artifact name a leg writes",
                artifact.name.escape_debug()
            )));
        };
        if of != shards || shard > of {
            return Err(Blocked::fix(format!(
                "`{}` is a shard outside the plan, which has {shards}",
                artifact.name
            )));
        }
        if attempt > this_attempt {
            return Err(Blocked::fix(format!(
                "`{}` is of attempt {attempt}, after this run's attempt {this_attempt}",
                artifact.name
            )));
        }
        match newest.get(&shard) {
            Some((seen, _)) if *seen == attempt => {
                return Err(Blocked::fix(format!(
                    "shard {shard} of {shards}: two artifacts of attempt {attempt}"
                )));
            }
            Some((seen, _)) if *seen > attempt => {}
            _ => {
                newest.insert(shard, (attempt, artifact));
            }
        }
    }
    (1..=shards)
        .map(|shard| match newest.get(&shard) {
            Some((attempt, a)) => Ok((a.name.clone(), *attempt, a.digest.clone())),
            None => Err(Blocked::rerun(format!(
                "shard {shard} of {shards}: no artifact (the leg failed, was cancelled or did not run; its job's log says why)"
            ))),
        })
        .collect()
}

/// `aayudha-pack-shard-<i>-of-<N>-attempt-<k>`, each a decimal number without a leading zero.
fn leg_name(name: &str) -> Option<(u32, u32, u32)> {
    let rest = name.strip_prefix(SHARD_PREFIX)?;
    let (shard, rest) = rest.split_once("-of-")?;
    let (of, attempt) = rest.split_once("-attempt-")?;
    let number = |s: &str| -> Option<u32> {
        (!s.is_empty() && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((number(shard)?, number(of)?, number(attempt)?))
}

/// One leg's artifact, as listed.
struct Leg<'a> {
    shard: u32,
    of: u32,
    artifact: &'a (String, u32, Option<String>),
}

impl Leg<'_> {
    /// Downloads the leg's artifact and verifies it: GitHub's digest of the zip, its entries
    /// (`shard.json`, `timings.json`, and `run/<path>` for each file `shard.json` lists, with its hash),
    /// and that it is this leg's, of this plan and pull request.
    #[allow(clippy::type_complexity)]
    fn read(
        &self,
        results: &Results,
        plan_digest: &str,
        pull: &PullGate,
    ) -> Result<(ShardFile, BTreeMap<String, Vec<u8>>, Vec<UnitTime>), String> {
        let (name, attempt, digest) = self.artifact;
        let zip = results
            .download(name)
            .map_err(|e| format!("`{name}` cannot be downloaded: {e}"))?;
        let actual = format!("sha256:{}", crate::hash::bytes(&zip));
        match digest {
            Some(digest) if digest.eq_ignore_ascii_case(&actual) => {}
            Some(digest) => {
                return Err(format!(
                    "`{name}` is not what was uploaded: GitHub reports {digest}, the download is {actual}"
                ));
            }
            None => return Err(format!("GitHub reports no digest for `{name}`")),
        }
        let mut entries =
            archive::entries(&zip, Limits::default()).map_err(|e| format!("`{name}`: {e}"))?;
        let shard_json = entries
            .remove("shard.json")
            .ok_or_else(|| format!("`{name}` has no shard.json"))?;
        let timings = entries
            .remove("timings.json")
            .ok_or_else(|| format!("`{name}` has no timings.json"))?;
        let file: ShardFile = serde_json::from_slice(&shard_json)
            .map_err(|e| format!("`{name}`: shard.json:{}:{}: {e}", e.line(), e.column()))?;
        let expected = (
            self.shard,
            self.of,
            *attempt,
            plan_digest,
            pull.pr.base_sha.as_str(),
            pull.pr.head_sha.as_str(),
        );
        let found = (
            file.shard,
            file.of,
            file.attempt,
            file.plan_digest.as_str(),
            file.base_sha.as_str(),
            file.head_sha.as_str(),
        );
        if file.schema_version != 1 || expected != found {
            return Err(format!(
                "`{name}`: shard.json is shard {} of {}, attempt {}, of plan {} on {}..{}; expected shard {} of {}, attempt {attempt}, of plan {plan_digest} on {}..{}",
                file.shard,
                file.of,
                file.attempt,
                file.plan_digest,
                file.base_sha,
                file.head_sha,
                self.shard,
                self.of,
                pull.pr.base_sha,
                pull.pr.head_sha
            ));
        }
        let mut files = BTreeMap::new();
        for entry in &file.files {
            if !entry.path.starts_with("behaviour/") || !crate::pack::safe_path(&entry.path) {
                return Err(format!(
                    "`{name}`: shard.json lists `{}`, which no leg writes",
                    entry.path.escape_debug()
                ));
            }
            let data = entries
                .remove(&format!("run/{}", entry.path))
                .ok_or_else(|| format!("`{name}`: `{}` is listed but missing", entry.path))?;
            let sha = crate::hash::bytes(&data);
            if sha != entry.sha256 || data.len() as u64 != entry.size {
                return Err(format!(
                    "`{name}`: `{}` does not match its hash (expected sha256 {} and {} bytes, found {sha} and {})",
                    entry.path,
                    entry.sha256,
                    entry.size,
                    data.len()
                ));
            }
            files.insert(entry.path.clone(), data);
        }
        if let Some(extra) = entries.keys().next() {
            return Err(format!(
                "`{name}` holds `{}`, which shard.json does not list",
                extra.escape_debug()
            ));
        }
        // The timings are not proof: one that does not parse is left out.
        let timings = Timings::parse(&timings)
            .map(|t| t.units)
            .unwrap_or_default();
        Ok((file, files, timings))
    }
}

/// Every result a leg gives belongs to one of its units.
fn results_within(
    executed: &Executed,
    units: &BTreeSet<String>,
    root: &Path,
) -> Result<(), String> {
    let has = |kind: &str, rest: &str| units.contains(&format!("{kind}:{rest}"));
    let mut checked = BTreeSet::new();
    for check in &executed.checks {
        let id = format!("check:{}/{}.{}", check.product, check.feature, check.check);
        if !units.contains(&id) {
            return Err(format!(
                "it gives a result for `{id}`, which is not its unit"
            ));
        }
        if !checked.insert(id.clone()) {
            return Err(format!("it gives two results for `{id}`"));
        }
    }
    if let Some(unit) = units
        .iter()
        .find(|u| u.starts_with("check:") && !checked.contains(*u))
    {
        return Err(format!("it gives no result for its unit `{unit}`"));
    }
    for dir in executed.suites.tallies.keys() {
        let dir = crate::sandbox::toolchain::shown_dir(dir);
        if !has("suite", dir) {
            return Err(format!(
                "it gives a result for `suite:{dir}`, which is not its unit"
            ));
        }
    }
    for id in executed.tests.keys() {
        let dir = units::test_dir(root, id);
        if !has("suite", &dir) && !has("tests", &dir) {
            return Err(format!(
                "it gives a result for the test `{id}` of `{dir}`, which is not its unit"
            ));
        }
    }
    // The installed environments it read are its own tests' packages', and so is each change they gave.
    let packages: BTreeSet<&str> = executed
        .harness
        .installed
        .iter()
        .map(|i| i.package.as_str())
        .collect();
    for dir in &packages {
        let shown = crate::sandbox::toolchain::shown_dir(dir);
        if !has("suite", shown) && !has("tests", shown) {
            return Err(format!(
                "it gives the installed environment of `{shown}`, which is not its unit"
            ));
        }
    }
    if let Some(change) = executed.harness.changes.iter().find(|c| {
        !packages
            .iter()
            .any(|dir| dir.is_empty() || c.file.starts_with(&format!("{dir}/")))
    }) {
        return Err(format!(
            "it gives a harness change of `{}`, which is not in its units' packages",
            change.file
        ));
    }
    if let Some(crate::floors::red_on_base::OnBase::Ran(on_base)) = &executed.on_base {
        for id in on_base.keys() {
            let dir = units::test_dir(root, id);
            if !has("base", &dir) {
                return Err(format!(
                    "it gives a result on the base for `{id}`, which is not its unit"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str) -> Listed {
        Listed {
            name: name.to_string(),
            id: Some(1),
            digest: Some(format!("sha256:{}", "a".repeat(64))),
        }
    }

    #[test]
    fn a_leg_name_is_read_strictly() {
        assert_eq!(
            leg_name("aayudha-pack-shard-2-of-3-attempt-1"),
            Some((2, 3, 1))
        );
        assert_eq!(
            leg_name("aayudha-pack-shard-12-of-64-attempt-10"),
            Some((12, 64, 10))
        );
        for bad in [
            "aayudha-pack-shard-02-of-3-attempt-1",
            "aayudha-pack-shard-2-of-3",
            "aayudha-pack-shard--of-3-attempt-1",
            "aayudha-pack-shard-2-of-3-attempt-1x",
            "aayudha-pack-shard-+2-of-3-attempt-1",
            "aayudha-pack",
        ] {
            assert_eq!(leg_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_newest_attempt_of_each_leg_is_taken_and_a_gap_blocks() {
        let all = [
            listed("aayudha-pack-shard-1-of-2-attempt-1"),
            listed("aayudha-pack-shard-2-of-2-attempt-1"),
            listed("aayudha-pack-shard-2-of-2-attempt-3"),
            listed("aayudha-plan"),
        ];
        let chosen = newest_legs(&all, 2, 3).expect("two legs");
        let names: Vec<&str> = chosen.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "aayudha-pack-shard-1-of-2-attempt-1",
                "aayudha-pack-shard-2-of-2-attempt-3"
            ]
        );
        let gap = newest_legs(&all[..1], 2, 1).expect_err("a gap");
        assert_eq!(
            (gap.reason.as_str(), gap.rerun),
            (
                "shard 2 of 2: no artifact (the leg failed, was cancelled or did not run; its job's log says why)",
                true
            )
        );
        let stray = newest_legs(&[listed("aayudha-pack-shard-1-of-3-attempt-1")], 2, 1)
            .expect_err("stray")
            .reason;
        assert!(
            stray.contains("a shard outside the plan, which has 2"),
            "{stray}"
        );
        let later = newest_legs(&all, 2, 2).expect_err("later").reason;
        assert!(
            later.contains("is of attempt 3, after this run's attempt 2"),
            "{later}"
        );
        let twice = newest_legs(
            &[
                listed("aayudha-pack-shard-1-of-1-attempt-2"),
                listed("aayudha-pack-shard-1-of-1-attempt-2"),
            ],
            1,
            2,
        )
        .expect_err("twice");
        assert_eq!(
            (twice.reason.as_str(), twice.rerun),
            ("shard 1 of 1: two artifacts of attempt 2", false)
        );
        let odd = newest_legs(&[listed("aayudha-pack-shard-x")], 1, 1)
            .expect_err("odd")
            .reason;
        assert!(odd.contains("not an artifact name a leg writes"), "{odd}");
    }

    #[test]
    fn a_plan_file_is_checked_by_its_schema_and_its_legs() {
        let good = br#"{"schema_version": 1, "shards": 2, "units": [{"id": "check:a/f.c", "shard": 2, "kind": "check", "package": null}, {"id": "suite:.", "shard": 1, "kind": "suite", "package": "."}]}"#;
        let plan = PlanFile::parse(good).expect("valid");
        assert_eq!(
            plan.of_shard(2),
            BTreeSet::from(["check:a/f.c".to_string()])
        );
        for (bad, says) in [
            (&br#"{"schema_version": 1, "shards": 1, "units": [], "x": 1}"#[..], "/"),
            (br#"{"schema_version": 1, "shards": 65, "units": []}"#, "/shards"),
            (br#"{"schema_version": 1, "shards": 1, "units": [{"id": "check:a", "shard": 2, "kind": "check", "package": null}]}"#, "on shard 2 of 1"),
            (br#"{"schema_version": 1, "shards": 1, "units": [{"id": "lint:a", "shard": 1, "kind": "check", "package": null}]}"#, "/units/0/id"),
            (br#"{"schema_version": 1, "shards": 1, "units": [{"id": "check:a", "shard": 1, "kind": "check", "package": null}, {"id": "check:a", "shard": 1, "kind": "check", "package": null}]}"#, "listed twice"),
            (b"{\n  nope", "plan.json:2:3"),
        ] {
            let error = PlanFile::parse(bad).expect_err("invalid");
            assert!(error.contains(says), "{error} should say {says}");
        }
    }
}
