//! The gate: every floor on one change — feature-map, weakening, behaviour, tests, red-on-base — and the proof pack,
//! as one library stage. `aayu verify --ci` renders what it returns; `aayu action` publishes it. Nothing here
//! prints a report or reads back what another stage printed: the floors return typed results, the pack is
//! assembled from them, and progress streams to the [`Log`] as it happens.
//!
//! Order matters for safety (SPEC §4): every dependency of the change — the built-in step runner's
//! packages, the mapped tests' packages, and the same packages in red-on-base's copy of the base — is
//! fetched once, as a sandbox uid, before any product code runs; every later step runs offline.

pub(crate) mod checks;
pub(crate) mod inputs;
pub(crate) mod plan;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::floors::behaviour::{self, BehaviourReport};
use crate::floors::feature_map::{self, MapReport};
use crate::floors::red_on_base;
use crate::floors::test_evidence::{self, TestId};
use crate::floors::weakening;
use crate::floors::{FloorResult, Verdict};
use crate::git::{GitError, Repo};
use crate::log::Log;
use crate::pack::{self, Pack};
use crate::sandbox::{FetchTree, Sandbox, SandboxError, SandboxSettings};
use crate::story::evidence_map;
use crate::story::{Binding, Story};
use plan::Plan;

/// Everything the gate needs, resolved by its caller.
pub struct Inputs<'a> {
    pub repo: &'a Repo,
    /// The configuration — never from a tree the change wrote (the caller read it at the base or the
    /// default branch).
    pub config: &'a Config,
    /// The change, as full SHAs.
    pub base: String,
    pub head: String,
    pub story: Option<Story>,
    /// What the merge gate knows of the pull request and the run (`None` on the CLI).
    pub binding: Option<Binding>,
    /// `--red-on-base`: run it also for a story that is not a bug.
    pub force_red_on_base: bool,
    pub sandbox: SandboxSettings,
    /// This very binary, which a leading `aayu` in a control argv stands for.
    pub aayu: PathBuf,
    /// Where the pack folder is written (replaced whole).
    pub out: PathBuf,
    /// Where the run folder is made: `RUNNER_TEMP` or the temp folder, never the checkout.
    pub temp: PathBuf,
    pub now: time::OffsetDateTime,
    /// `owner/name` of the repository, for the pack and its links.
    pub slug: String,
    /// Inside GitHub Actions (the pack's identity is then `ci`).
    pub actions: bool,
}

/// What the gate found and wrote.
pub struct GateRun {
    pub pack: Pack,
    /// The pack folder (`pack.json` and `artifacts/`).
    pub pack_dir: PathBuf,
    /// The SHA-256 of `pack.json`'s bytes: what the comment, the status and `aayu ship` name.
    pub pack_sha256: String,
    pub floors: Vec<FloorResult>,
    pub map: MapReport,
    pub weakening: weakening::Report,
    /// Red-on-base's verdict per criterion, when it ran.
    pub red_on_base: Option<red_on_base::Report>,
    /// Each criterion's evidence and why (the evidence map's criteria the snapshot lacks too).
    pub criteria: Vec<test_evidence::Criterion>,
    /// The coverage floor's report, when it computed a number.
    pub coverage: Option<crate::floors::coverage::Report>,
}

impl GateRun {
    /// Whether every floor holds.
    pub fn holds(&self) -> bool {
        self.floors.iter().all(|f| f.verdict.holds())
    }
}

/// Why the gate could not make a pack.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Git(#[from] GitError),
    /// The change's selection could not be made (git, or an evidence map the selection reads).
    #[error(transparent)]
    Select(#[from] crate::select::SelectError),
    /// The change's evidence map, or a name in it, is not valid: the user's to fix (exit 2).
    #[error("{0}")]
    Contract(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Behaviour(#[from] behaviour::BehaviourError),
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the pack this aayu made does not match its own schema (a bug): {0}")]
    Schema(String),
}

/// A gate that made no pack: the user's to fix (exit 2) or not (exit 1), with the hint of its cause.
impl crate::failure::Diagnose for GateError {
    fn status(&self) -> crate::exit::ExitStatus {
        use crate::exit::ExitStatus;
        match self {
            GateError::Git(g) => g.status(),
            GateError::Select(s) => s.status(),
            GateError::Contract(_)
            | GateError::Sandbox(SandboxError::ForbiddenId { .. })
            | GateError::Behaviour(behaviour::BehaviourError::Target(_)) => ExitStatus::Usage,
            _ => ExitStatus::Failure,
        }
    }

    fn hint(&self) -> Option<String> {
        match self {
            GateError::Git(g) => g.hint(),
            // Only git's hint: a selection's own hints speak of `--check`, which the gate has not.
            GateError::Select(crate::select::SelectError::Git(g)) => g.hint(),
            GateError::Sandbox(SandboxError::ForbiddenId { .. }) => Some(
                "set `[verify] sandbox_uids` in the default branch's .aayudha/config.toml to a range of unused ids at or above 1000, e.g. [61000, 61063]".to_string(),
            ),
            _ => None,
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> GateError {
    let what = what.into();
    move |source| GateError::Io { what, source }
}

/// Runs every floor on the change and writes the pack (also when floors fail): the map floors, the plan,
/// the one fetch, then the floors that run product code, then the pack.
pub fn run(inputs: &Inputs, progress: &mut Log) -> Result<GateRun, GateError> {
    // The run folder lives outside the checkout (a pull request may commit `.aayudha/proof` as a link);
    // the finished pack is moved into place at the end.
    let staging = tempfile::Builder::new()
        .prefix("aayu-run-")
        .tempdir_in(&inputs.temp)
        .map_err(io(format!(
            "create the run folder in `{}`",
            inputs.temp.display()
        )))?;
    let _interrupted = crate::sandbox::cleanup::dir(staging.path());
    let mut stage = Stage {
        inputs,
        root: inputs.repo.root().to_path_buf(),
        out: staging.path(),
        progress,
    };
    let mut floors = Vec::new();
    let (map, weakened) = stage.map_floors(&mut floors)?;

    // What will run: the behaviour checks the diff and the story's evidence map select, the mapped tests,
    // the touched packages' suites, and for a bug, the same tests on the base.
    let plan = plan::plan(&inputs.change())?;
    let on_base = plan
        .red_on_base
        .then(|| red_on_base::prepare(inputs.repo, &inputs.base, &inputs.head));
    let sandbox = stage.sandbox(&plan, on_base.as_ref())?;
    let behaviour = stage.behaviour(&plan, sandbox.as_ref(), &mut floors)?;
    // coverage (first in the pack's checks): the touched packages' whole suites, run before the tests
    // floor, which reads the mapped tests of those packages from these runs.
    let covered = stage.coverage(&plan, sandbox.as_ref())?;
    let mut story = stage.story_floors(
        &plan,
        sandbox.as_ref(),
        on_base.as_ref(),
        &covered.mapped,
        behaviour.as_ref(),
    )?;
    floors.append(&mut story.floors);
    floors.insert(0, covered.floor);
    if let Some(sandbox) = &sandbox {
        let mut phases = crate::timing::Phases::start();
        phases.report(
            "product code (fetches, builds, tests, checks)",
            sandbox.product_time(),
        );
    }
    drop(sandbox);
    let (pack, pack_sha256) = stage.pack(&floors, &story.criteria, behaviour.as_ref())?;
    Ok(GateRun {
        pack,
        pack_dir: inputs.out.clone(),
        pack_sha256,
        floors,
        map,
        weakening: weakened,
        red_on_base: story.red,
        criteria: story.criteria,
        coverage: covered.report,
    })
}

/// One gate run in progress: its inputs, the repository's folder, the run folder, the log.
struct Stage<'a, 'i> {
    inputs: &'a Inputs<'i>,
    root: PathBuf,
    out: &'a Path,
    progress: &'a mut Log,
}

/// The tests and red-on-base floors of a story.
struct StoryFloors {
    floors: Vec<FloorResult>,
    criteria: Vec<test_evidence::Criterion>,
    red: Option<red_on_base::Report>,
}

/// A test run's settings in the sandbox, with a heartbeat.
fn tests_run<'r>(
    sandbox: &'r Sandbox,
    root: &'r Path,
    timeout: Duration,
    heartbeat: &'r dyn Fn(&str, Duration),
) -> test_evidence::Run<'r> {
    test_evidence::Run {
        sandbox,
        root,
        timeout,
        target: None,
        heartbeat: Some(heartbeat),
    }
}

impl Stage<'_, '_> {
    /// feature-map and weakening: the maps against the source, and at the base and the head, from git's
    /// objects; no product code runs.
    fn map_floors(
        &mut self,
        floors: &mut Vec<FloorResult>,
    ) -> Result<(MapReport, weakening::Report), GateError> {
        let (inputs, out) = (self.inputs, self.out);
        let (repo, config) = (inputs.repo, inputs.config);
        let map = in_group(self.progress, "aayudha feature-map floor", |log| {
            Ok(feature_map::check(
                repo,
                crate::floors::scan::Bounds::of(&config.verify),
                &mut |done, total, elapsed| crate::log::scan_beat(log, done, total, elapsed),
            )?)
        })?;
        write_json(out, "reports/feature-map.json", &map)?;
        floors.push(feature_map::floor(
            &map,
            config.verify.drift_blocking_from,
            inputs.now,
        ));
        let story_labels = plan::story_labels(&inputs.change());
        let weakened = in_group(self.progress, "aayudha weakening floor", |_| {
            Ok(weakening::compare(repo, &inputs.base, &inputs.head)?)
        })?;
        write_json(out, "reports/weakening.json", &weakened)?;
        floors.push(weakening::floor(
            &weakened,
            config.verify.weakening_blocking_from,
            inputs.now,
            story_labels.iter().any(|l| l == weakening::WAIVER),
        ));
        Ok((map, weakened))
    }

    /// The sandbox, when product code runs: the preflight, then every dependency fetched once, as a
    /// sandbox uid, before any product code runs (the base's too); every later step runs offline.
    fn sandbox(
        &mut self,
        plan: &Plan,
        on_base: Option<&red_on_base::Prepared>,
    ) -> Result<Option<Sandbox>, GateError> {
        if !plan.runs_product_code() {
            return Ok(None);
        }
        let (repo, root) = (self.inputs.repo, &self.root);
        let sandbox = Sandbox::new(&self.inputs.sandbox)?;
        // Whether each lock file is committed is read from git: the checkout's index, the base's commit.
        let mut trees = vec![FetchTree::new(
            root,
            crate::runners::fetch_packages(
                sandbox.toolchains(),
                root,
                plan.check_packages()
                    .into_iter()
                    .chain(plan.test_packages.iter().cloned()),
            ),
            |lock| repo.is_tracked(lock),
        )];
        if let Some(prepared) = on_base
            && let Some(base_root) = prepared.root()
        {
            let packages = crate::runners::fetch_packages(
                sandbox.toolchains(),
                base_root,
                plan.test_packages.iter().cloned(),
            );
            let mut base_tree = FetchTree::new(base_root, packages, |lock| {
                repo.id_at(prepared.base(), lock).is_some()
            });
            base_tree.lock_from = Some(root.clone());
            trees.push(base_tree);
        }
        // Before any floor: are the tools there, and do they run as the sandbox uid? In Actions every
        // tool's version goes in the (folded) group; locally only what is blocked.
        in_group(self.progress, "aayudha preflight", |log| {
            let all = log.actions();
            for line in sandbox.preflight(root, &plan.needs) {
                if all || line.contains(": blocked: ") {
                    let _ = writeln!(log, "{line}");
                }
            }
            Ok(())
        })?;
        if trees.iter().any(|t| !t.packages.is_empty()) {
            let _ = self
                .progress
                .command("::group::aayudha: fetching dependencies");
            sandbox.fetch(&trees, self.progress);
            let _ = self.progress.command("::endgroup::");
        }
        Ok(Some(sandbox))
    }

    /// behaviour: the selected checks, each in the sandbox.
    fn behaviour(
        &mut self,
        plan: &Plan,
        sandbox: Option<&Sandbox>,
        floors: &mut Vec<FloorResult>,
    ) -> Result<Option<BehaviourReport>, GateError> {
        let (inputs, config) = (self.inputs, self.inputs.config);
        let loaded = &plan.maps;
        match (
            sandbox,
            plan.selected.is_empty() || !loaded.errors.is_empty(),
        ) {
            (Some(sandbox), false) => {
                let options = behaviour::Options::of(
                    &config.verify,
                    (&self.root, self.out),
                    inputs.sandbox.jobs,
                    inputs.aayu.clone(),
                );
                let report = behaviour::run(
                    &loaded.maps,
                    &plan.selected,
                    &options,
                    sandbox,
                    self.progress,
                )?;
                floors.push(behaviour::floor(&report));
                Ok(Some(report))
            }
            _ => {
                floors.push(behaviour::floor_without_checks(!loaded.errors.is_empty()));
                Ok(None)
            }
        }
    }

    /// coverage: the touched packages' whole suites, instrumented, for a story.
    fn coverage(
        &mut self,
        plan: &Plan,
        sandbox: Option<&Sandbox>,
    ) -> Result<crate::floors::coverage::Covered, GateError> {
        use crate::floors::coverage;
        let skipped = |why: &str| coverage::Covered {
            floor: coverage::skipped(why),
            report: None,
            mapped: BTreeMap::new(),
        };
        let inputs = self.inputs;
        let config = inputs.config;
        let sandbox = match (&inputs.story, sandbox) {
            (None, _) => {
                return Ok(skipped(
                    "no story: only the map floors (feature-map and behaviour) ran",
                ));
            }
            (Some(_), None) => {
                return Ok(skipped("no package with tests is touched by the change"));
            }
            (Some(_), Some(sandbox)) => sandbox,
        };
        let mut phases = crate::timing::Phases::start();
        let (base, head) = (&inputs.base, &inputs.head);
        let added = inputs.repo.added_lines(
            (base, head),
            &coverage::SOURCES,
            coverage::MAX_FILE,
            coverage::MAX_LINES,
        )?;
        let timeout = Duration::from_secs(config.verify.suite_timeout_s);
        let mapped = plan.test_ids();
        let settings = coverage::Settings {
            base,
            head,
            threshold: config.verify.coverage_threshold,
            blocking: config.verify.coverage_blocking_from,
            now: inputs.now,
            mapped: &mapped,
        };
        let (root, progress) = (&self.root, &mut *self.progress);
        let covered = in_group(
            progress,
            "aayudha coverage floor: the touched packages' whole suites",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                Ok(coverage::run(&run, &plan.touched, &added, &settings))
            },
        )?;
        if let Some(report) = &covered.report {
            write_json(self.out, "reports/coverage.json", report)?;
        }
        phases.end("coverage floor (the touched packages' suites, instrumented)");
        Ok(covered)
    }

    /// tests and red-on-base: the mapped tests (those the coverage run gave are not run again), then, for
    /// a bug, the same tests on the base; only for a story.
    fn story_floors(
        &mut self,
        plan: &Plan,
        sandbox: Option<&Sandbox>,
        on_base: Option<&red_on_base::Prepared>,
        suites_ran: &BTreeMap<TestId, test_evidence::TestResult>,
        behaviour: Option<&BehaviourReport>,
    ) -> Result<StoryFloors, GateError> {
        let inputs = self.inputs;
        let config = inputs.config;
        let timeout = Duration::from_secs(config.verify.check_timeout_s);
        let mut found = StoryFloors {
            floors: Vec::new(),
            criteria: Vec::new(),
            red: None,
        };
        let Some(story) = &inputs.story else {
            for floor in [crate::floors::Floor::Tests, crate::floors::Floor::RedOnBase] {
                found.floors.push(FloorResult::new(
                    floor,
                    Verdict::Skipped,
                    "aayu verify --ci",
                    "no story: only the map floors (feature-map and behaviour) ran".into(),
                ));
            }
            return Ok(found);
        };
        let Some(evidence) = &story.evidence else {
            let evidenced = test_evidence::floor_without_map(&story.snapshot);
            found.floors.push(evidenced.floor);
            found.floors.push(red_on_base::skipped("no evidence map"));
            found.criteria = evidenced.criteria;
            return Ok(found);
        };
        let fresh;
        let sandbox = match sandbox {
            Some(sandbox) => sandbox,
            None => {
                fresh = Sandbox::new(&inputs.sandbox)?;
                &fresh
            }
        };
        let (root, out) = (self.root.as_path(), self.out);
        let mapped = plan.test_ids();
        let results = in_group(
            self.progress,
            "aayudha tests floor: the mapped tests",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                Ok(test_evidence::run_tests(&run, &mapped, suites_ran))
            },
        )?;
        // Two targets holding an unqualified test is the evidence map's to fix (exit 2), not a result.
        if let Some((id, why)) = results.iter().find_map(|(id, r)| match &r.outcome {
            test_evidence::Outcome::Ambiguous(why) => Some((id, why.clone())),
            _ => None,
        }) {
            let criterion = plan
                .tests
                .iter()
                .find(|t| &t.id == id)
                .map_or(0, |t| t.criterion);
            return Err(GateError::Contract(format!(
                "{}: criterion {criterion}: {why}",
                evidence_map::path(story.number)
            )));
        }
        let mut evidenced = test_evidence::floor(
            out,
            &story.snapshot,
            evidence,
            &results,
            behaviour,
            sandbox.no_network(),
        )
        .map_err(io("write the evidence"))?;
        for resolved in sandbox.resolved_locks(root) {
            evidenced.floor.detail = format!("{}; {}", evidenced.floor.detail, resolved.sentence());
        }
        found.floors.push(evidenced.floor);
        found.criteria = evidenced.criteria;
        let Some(prepared) = on_base else {
            found
                .floors
                .push(red_on_base::skipped("the story is not labelled type:bug"));
            return Ok(found);
        };
        let report = in_group(
            self.progress,
            "aayudha red-on-base floor: the mapped tests on the base",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                Ok(red_on_base::run(prepared, evidence, &run, &results))
            },
        )?;
        write_json(out, "reports/red-on-base.json", &report)?;
        found.floors.push(red_on_base::floor(
            &report,
            config.verify.red_on_base_blocking_from,
            inputs.now,
            sandbox.no_network(),
        ));
        found.red = Some(report);
        Ok(found)
    }

    /// The pack: the run folder hashed into artifacts, the floors as checks, checked against the schema,
    /// written whole into `out`, and the SHA-256 of its `pack.json`.
    fn pack(
        &self,
        floors: &[FloorResult],
        criteria: &[test_evidence::Criterion],
        behaviour: Option<&BehaviourReport>,
    ) -> Result<(Pack, String), GateError> {
        let inputs = self.inputs;
        let artifacts =
            pack::build::artifacts(self.out, behaviour).map_err(io("hash the run folder"))?;
        let pack = pack::build::assemble(pack::build::Parts {
            repo: inputs.repo,
            slug: &inputs.slug,
            story: inputs.story.as_ref(),
            binding: inputs.binding.as_ref(),
            base: &inputs.base,
            head: &inputs.head,
            actions: inputs.actions,
            criteria,
            artifacts,
            checks: floors.iter().map(pack::build::check).collect(),
            now: inputs.now,
        });
        let value = serde_json::to_value(&pack).map_err(|e| GateError::Schema(e.to_string()))?;
        pack::validate(&value).map_err(|e| GateError::Schema(e.to_string()))?;
        pack::write(&inputs.out, &pack, self.out)
            .map_err(io(format!("write the pack to `{}`", inputs.out.display())))?;
        let (pack_sha256, _) = crate::hash::file(&inputs.out.join("pack.json"))
            .map_err(io("read the pack back to hash it"))?;
        Ok((pack, pack_sha256))
    }
}

/// Runs one floor's work inside a `::group::` of the log (in Actions), so that what it reports while it
/// runs — heartbeats — is folded under it; outside Actions only what it reports is shown.
fn in_group<T>(
    log: &mut Log,
    title: &str,
    work: impl FnOnce(&mut Log) -> Result<T, GateError>,
) -> Result<T, GateError> {
    let _ = log.command(&format!("::group::{}", crate::log::escape_data(title)));
    let result = work(log);
    let _ = log.command("::endgroup::");
    result
}

/// A line from aayu itself, at least every ~10 s, while a long build or test runs: what, and for how
/// long.
fn beat(log: &RefCell<&mut Log>, what: &str, elapsed: Duration) {
    let _ = writeln!(
        log.borrow_mut(),
        "… {what}: still running after {} s",
        elapsed.as_secs()
    );
}

fn write_json<T: serde::Serialize>(out: &Path, rel: &str, value: &T) -> Result<(), GateError> {
    let path = out.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(format!("create `{}`", parent.display())))?;
    }
    crate::safe_fs::write_json(&path, value).map_err(io(format!("write `{}`", path.display())))
}

/// The sandbox settings of a run: the environment read at start-up, `[verify] env`, `sandbox_uids` and
/// `memory_limit_mb`, the repository (whose owner and group are never sandbox ids), and how many checks
/// may run at once.
pub fn sandbox_settings(
    env: &crate::settings::Env,
    config: &Config,
    jobs: Option<usize>,
    root: &Path,
) -> SandboxSettings {
    SandboxSettings {
        process_env: env.vars.clone(),
        extra_names: config.verify.env.clone(),
        uids: config.verify.sandbox_uids,
        jobs: jobs.unwrap_or(env.cores).max(1),
        workspace: Some(root.to_path_buf()),
        memory_limit_mb: config.verify.memory_limit_mb,
        chromium: Some(config.verify.chromium.clone()).filter(|c| !c.is_empty()),
        python: Some(config.verify.python.clone()).filter(|c| !c.is_empty()),
        python_wheels: Some(config.verify.python_wheels.clone())
            .filter(|c| !c.is_empty())
            .map(|c| root.join(c)),
        build_cache: crate::sandbox::build_cache::BuildCache::PerRun,
        llvm_tools: Some(config.verify.llvm_tools.clone())
            .filter(|c| !c.is_empty())
            .map(PathBuf::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::ExitStatus;
    use crate::failure::{Diagnose, Failure};
    use crate::select::SelectError;

    #[test]
    fn a_selection_error_is_the_users_without_a_check_hint() {
        let unknown = GateError::Select(SelectError::Unknown {
            arg: "x".into(),
            why: "y".into(),
        });
        assert_eq!(unknown.status(), ExitStatus::Usage);
        assert_eq!(Diagnose::hint(&unknown), None);
        let map = Failure::from(GateError::Select(SelectError::EvidenceMap(
            ".aayudha/evidence/7.toml:2: bad".into(),
        )));
        assert_eq!(
            (map.status, map.message.as_str(), map.hint),
            (ExitStatus::Usage, ".aayudha/evidence/7.toml:2: bad", None)
        );
    }
}
