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
pub(crate) mod units;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::floors::behaviour::{self, BehaviourReport};
use crate::floors::feature_map::{self, MapReport};
use crate::floors::harness;
use crate::floors::red_on_base;
use crate::floors::test_evidence::{self, TestId};
use crate::floors::weakening;
use crate::floors::{FloorResult, Verdict};
use crate::git::{GitError, Repo};
use crate::log::Log;
use crate::pack::{self, Pack};
use crate::sandbox::toolchain::shown_dir;
use crate::sandbox::{FetchTree, Network, Sandbox, SandboxError, SandboxSettings};
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
    /// Who approved the pull request's head by the one rule of [`crate::story::approval`], read live by
    /// the action when the change has a harness change (`None` on the CLI: there are no reviews): it
    /// waives the harness floor. `Err`: why the reviews could not be read.
    pub harness_approval: Option<Approval<'a>>,
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

/// Reads who approved the head ([`Inputs::harness_approval`]).
pub type Approval<'a> = Box<dyn Fn() -> Result<Option<String>, String> + 'a>;

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
    /// What the change does to how its tests run (`reports/harness.json`).
    pub harness: harness::Report,
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
/// the one fetch, then the floors that run product code ([`Stage::execute`]), then the verdicts and the
/// pack ([`Stage::judge`]).
pub fn run(inputs: &Inputs, progress: &mut Log) -> Result<GateRun, GateError> {
    let staging = run_folder(inputs)?;
    let _interrupted = crate::sandbox::cleanup::dir(staging.path());
    let mut stage = Stage::new(inputs, staging.path(), progress);
    let mut floors = Vec::new();
    let maps = stage.map_floors(&mut floors)?;
    // What will run: the behaviour checks the diff and the story's evidence map select, the mapped tests,
    // the touched packages' suites, and for a bug, the same tests on the base.
    let plan = plan::plan(&inputs.change())?;
    let executed = stage.execute(&plan, &maps.harness)?;
    stage.judge(&plan, executed, floors, maps)
}

/// A sharded gate's leg: runs the product-code floors of `plan` (the leg's units only, see
/// [`plan::Plan::only`]) and returns what they gave, their files written into `out` (the leg's run
/// folder). No verdict and no pack: the merge judges every leg's together.
pub fn execute(
    inputs: &Inputs,
    plan: &Plan,
    out: &Path,
    progress: &mut Log,
) -> Result<Executed, GateError> {
    // The harness files, from git's objects as the merge reads them: red-on-base leaves them off the base.
    let harness = harness::scan(
        inputs.repo,
        &inputs.base,
        &inputs.head,
        inputs.config.verify.harness_scan_bytes,
    )?;
    Stage::new(inputs, out, progress).execute(plan, &harness)
}

/// A sharded gate's merge: the map floors, then the verdicts of every leg's results (`executed`, their
/// files already in `folder`) and the pack, exactly as one job judges its own.
pub fn judge(
    inputs: &Inputs,
    plan: &Plan,
    executed: Executed,
    folder: &Path,
    progress: &mut Log,
) -> Result<GateRun, GateError> {
    let mut stage = Stage::new(inputs, folder, progress);
    let mut floors = Vec::new();
    let maps = stage.map_floors(&mut floors)?;
    stage.judge(plan, executed, floors, maps)
}

/// The run folder: outside the checkout (a pull request may commit `.aayudha/proof` as a link); the
/// finished pack is moved into place at the end.
pub fn run_folder(inputs: &Inputs) -> Result<tempfile::TempDir, GateError> {
    tempfile::Builder::new()
        .prefix("aayu-run-")
        .tempdir_in(&inputs.temp)
        .map_err(io(format!(
            "create the run folder in `{}`",
            inputs.temp.display()
        )))
}

/// What the floors that run product code gave — the part of a gate run that runs the pull request's
/// code, before any verdict. One job makes it and judges it; a sharded gate's legs each make one for
/// their units and the merge absorbs them all and judges once, so it is data.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Executed {
    /// The behaviour checks that ran.
    pub checks: Vec<behaviour::CheckResult>,
    /// The touched packages' suites (the coverage floor).
    pub suites: crate::floors::coverage::Suites,
    /// The mapped tests' results at the head (those the suites gave included).
    #[serde(with = "crate::runners::by_id")]
    pub tests: BTreeMap<TestId, test_evidence::TestResult>,
    /// The mapped tests on the base, when red-on-base ran here.
    pub on_base: Option<red_on_base::OnBase>,
    /// The network the product code ran with (`None`: no sandbox was made here).
    pub network: Option<Network>,
    /// What the fetch did to lock files the checkout does not commit, as the tests floor says it.
    pub resolved: Vec<String>,
    /// What the installs put into each package's environment that the harness floor reads.
    #[serde(default)]
    pub harness: harness::Facts,
    /// How long each unit took, by unit id ([`units`]): never in the pack, only in a sharded gate's
    /// timings sidecar.
    #[serde(skip)]
    pub elapsed: BTreeMap<String, Duration>,
}

impl Executed {
    /// Adds another leg's results: the network is the weakest of the two.
    pub fn absorb(&mut self, other: Executed) {
        self.checks.extend(other.checks);
        self.suites.absorb(other.suites);
        self.tests.extend(other.tests);
        self.on_base = match (self.on_base.take(), other.on_base) {
            (Some(mut mine), Some(theirs)) => {
                mine.absorb(theirs);
                Some(mine)
            }
            (mine, theirs) => mine.or(theirs),
        };
        self.network = match (self.network, other.network) {
            (Some(a), Some(b)) => Some(a.weakest(b)),
            (a, b) => a.or(b),
        };
        self.resolved.extend(other.resolved);
        self.harness.absorb(other.harness);
        self.elapsed.extend(other.elapsed);
    }
}

/// One gate run in progress: its inputs, the repository's folder, the run folder, the log.
struct Stage<'a, 'i> {
    inputs: &'a Inputs<'i>,
    root: PathBuf,
    out: &'a Path,
    progress: &'a mut Log,
    /// The change's added lines, read once: the suites run over them, the coverage floor counts them.
    added: Option<std::rc::Rc<crate::git::Added>>,
}

/// What the floors that read only git's objects found (the harness floor's verdict waits for the
/// install's facts).
struct Maps {
    map: MapReport,
    weakened: weakening::Report,
    harness: Vec<crate::runners::harness::Change>,
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
        canaries: false,
    }
}

impl<'a, 'i> Stage<'a, 'i> {
    fn new(inputs: &'a Inputs<'i>, out: &'a Path, progress: &'a mut Log) -> Stage<'a, 'i> {
        Stage {
            inputs,
            root: inputs.repo.root().to_path_buf(),
            out,
            progress,
            added: None,
        }
    }
}

impl Stage<'_, '_> {
    /// feature-map and weakening: the maps against the source, and at the base and the head, from git's
    /// objects; no product code runs.
    fn map_floors(&mut self, floors: &mut Vec<FloorResult>) -> Result<Maps, GateError> {
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
        let scan_bytes = config.verify.harness_scan_bytes;
        let harness = in_group(self.progress, "aayudha harness floor", |_| {
            Ok(harness::scan(repo, &inputs.base, &inputs.head, scan_bytes)?)
        })?;
        Ok(Maps {
            map,
            weakened,
            harness,
        })
    }

    /// Everything that runs product code, in order: the fetch, the behaviour checks, the touched
    /// packages' suites, the mapped tests, and for a bug the same tests on the base.
    fn execute(
        &mut self,
        plan: &Plan,
        harness: &[crate::runners::harness::Change],
    ) -> Result<Executed, GateError> {
        let inputs = self.inputs;
        let on_base = plan
            .red_on_base
            .then(|| red_on_base::prepare(inputs.repo, &inputs.base, &inputs.head, harness));
        let sandbox = self.sandbox(plan, on_base.as_ref())?;
        let (checks, took) = self.behaviour(plan, sandbox.as_ref())?;
        let mut executed = Executed {
            checks,
            elapsed: took
                .into_iter()
                .map(|(id, took)| (format!("check:{id}"), took))
                .collect(),
            ..Executed::default()
        };
        // coverage: the touched packages' whole suites, run before the tests floor, which reads the
        // mapped tests of those packages from these runs.
        executed.suites = self.suites(plan, sandbox.as_ref())?;
        for (dir, took) in &executed.suites.elapsed {
            executed
                .elapsed
                .insert(format!("suite:{}", shown_dir(dir)), *took);
        }
        let evidence = inputs.story.as_ref().and_then(|s| s.evidence.as_ref());
        let fresh;
        let sandbox = match (&sandbox, evidence) {
            (Some(sandbox), _) => sandbox,
            (None, Some(_)) => {
                fresh = Sandbox::new(&inputs.sandbox)?;
                &fresh
            }
            (None, None) => return Ok(executed),
        };
        executed.network = Some(sandbox.no_network());
        if evidence.is_some() {
            self.story_tests(plan, sandbox, on_base.as_ref(), &mut executed)?;
        }
        executed.resolved = sandbox
            .resolved_locks(&self.root)
            .iter()
            .map(crate::sandbox::Resolved::sentence)
            .collect();
        let mut phases = crate::timing::Phases::start();
        phases.report(
            "product code (fetches, builds, tests, checks)",
            sandbox.product_time(),
        );
        Ok(executed)
    }

    /// The verdicts of what ran (`executed`) after the map floors (`floors`), and the pack.
    fn judge(
        &mut self,
        plan: &Plan,
        executed: Executed,
        mut floors: Vec<FloorResult>,
        maps: Maps,
    ) -> Result<GateRun, GateError> {
        let mut harness = harness::report(maps.harness, &executed.harness, None);
        // The reviews are read only when there is something to waive.
        let mut unread = None;
        if let Some(read) = self.inputs.harness_approval.as_ref()
            && !harness.changes.is_empty()
        {
            match read() {
                Ok(approver) => harness.waived_by = approver,
                Err(why) => unread = Some(why),
            }
        }
        let after_weakening = floors
            .iter()
            .position(|f| f.floor == crate::floors::Floor::Weakening)
            .map_or(floors.len(), |i| i + 1);
        floors.insert(
            after_weakening,
            harness::floor(
                &harness,
                self.inputs.config.verify.harness_blocking_from,
                self.inputs.now,
                unread.as_deref(),
            ),
        );
        let behaviour = self.behaviour_floor(plan, executed.checks, &mut floors)?;
        let mut covered = self.coverage_floor(plan, executed.suites, executed.network)?;
        if harness.waived_by.is_none()
            && let Some(blocked) =
                harness::coverage_blocked(&harness, &plan.touched, &covered.floor)
        {
            covered.floor = blocked;
        }
        let mut story = self.story_floors(
            plan,
            &executed.tests,
            executed.on_base.as_ref(),
            (executed.network, &executed.resolved),
            behaviour.as_ref(),
        )?;
        floors.append(&mut story.floors);
        floors.insert(0, covered.floor);
        self.harness_notes(&mut harness, &mut story.criteria);
        write_json(self.out, "reports/harness.json", &harness)?;
        let (pack, pack_sha256) = self.pack(&floors, &story.criteria, behaviour.as_ref())?;
        Ok(GateRun {
            pack,
            pack_dir: self.inputs.out.clone(),
            pack_sha256,
            floors,
            map: maps.map,
            weakening: maps.weakened,
            harness,
            red_on_base: story.red,
            criteria: story.criteria,
            coverage: covered.report,
        })
    }

    /// Each evidenced criterion whose mapped tests' package has a harness change says so, with where.
    fn harness_notes(
        &self,
        report: &mut harness::Report,
        criteria: &mut [test_evidence::Criterion],
    ) {
        let Some(evidence) = self.inputs.story.as_ref().and_then(|s| s.evidence.as_ref()) else {
            return;
        };
        // Each package's changed files, read from git once however many criteria map its tests.
        let mut changed_in: BTreeMap<(String, Option<&str>), Vec<String>> = BTreeMap::new();
        for criterion in criteria {
            let test_evidence::Said::Evidenced { notes } = &mut criterion.said else {
                continue;
            };
            let packages: BTreeSet<(String, Option<&str>)> = evidence
                .criterion
                .iter()
                .filter(|m| m.id == criterion.id)
                .flat_map(|m| m.tests.iter())
                .filter_map(|t| TestId::parse(t).ok())
                .map(|id| {
                    let runner =
                        crate::runners::package_of(&self.root, &id).map(|f| f.runner.name());
                    (id.package, runner)
                })
                .collect();
            let places: BTreeSet<String> = packages
                .iter()
                .flat_map(|(dir, runner)| harness::affecting(report, dir, *runner))
                .map(|c| c.place())
                .collect();
            if !places.is_empty() {
                let places: Vec<String> = places.into_iter().collect();
                report.criteria.insert(criterion.id, places.clone());
                notes.push(harness::Report::note(&places));
            }
            // What runs in the process that reports the test: its package's changed files.
            let changed: BTreeSet<String> = packages
                .into_iter()
                .flat_map(|key| {
                    changed_in
                        .entry(key)
                        .or_insert_with_key(|(dir, runner)| {
                            harness::package_changes(
                                self.inputs.repo,
                                (&self.inputs.base, &self.inputs.head),
                                dir,
                                *runner,
                                self.inputs.config.verify.harness_scan_bytes,
                            )
                        })
                        .clone()
                })
                .collect();
            if !changed.is_empty() {
                let changed: Vec<String> = changed.into_iter().collect();
                notes.push(harness::Report::reported(&changed));
                report.package_changes.insert(criterion.id, changed);
            }
        }
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
    ) -> Result<(Vec<behaviour::CheckResult>, BTreeMap<String, Duration>), GateError> {
        let (inputs, config) = (self.inputs, self.inputs.config);
        let loaded = &plan.maps;
        let Some(sandbox) =
            sandbox.filter(|_| !plan.selected.is_empty() && loaded.errors.is_empty())
        else {
            return Ok(Default::default());
        };
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
        Ok((report.checks, report.elapsed))
    }

    /// The behaviour floor of the checks that ran (sorted as one run sorts them), and its report.
    fn behaviour_floor(
        &mut self,
        plan: &Plan,
        mut checks: Vec<behaviour::CheckResult>,
        floors: &mut Vec<FloorResult>,
    ) -> Result<Option<BehaviourReport>, GateError> {
        let loaded = &plan.maps;
        if plan.selected.is_empty() || !loaded.errors.is_empty() {
            floors.push(behaviour::floor_without_checks(!loaded.errors.is_empty()));
            return Ok(None);
        }
        checks.sort_by(|a, b| {
            (&a.product, &a.feature, &a.check).cmp(&(&b.product, &b.feature, &b.check))
        });
        let report = BehaviourReport {
            schema_version: 1,
            checks,
            elapsed: BTreeMap::new(),
        };
        write_json(self.out, "reports/behaviour.json", &report)?;
        floors.push(behaviour::floor(&report));
        Ok(Some(report))
    }

    /// The change's added lines, as the coverage floor counts them (read from git once per run).
    fn added(&mut self) -> Result<std::rc::Rc<crate::git::Added>, GateError> {
        use crate::floors::coverage;
        if let Some(added) = &self.added {
            return Ok(added.clone());
        }
        let inputs = self.inputs;
        let added = std::rc::Rc::new(inputs.repo.added_lines(
            (&inputs.base, &inputs.head),
            &coverage::SOURCES,
            coverage::MAX_FILE,
            coverage::MAX_LINES,
        )?);
        self.added = Some(added.clone());
        Ok(added)
    }

    /// coverage: the touched packages' whole suites, instrumented, for a story.
    fn suites(
        &mut self,
        plan: &Plan,
        sandbox: Option<&Sandbox>,
    ) -> Result<crate::floors::coverage::Suites, GateError> {
        use crate::floors::coverage;
        let (Some(_), Some(sandbox)) = (&self.inputs.story, sandbox) else {
            return Ok(coverage::Suites::default());
        };
        let mut phases = crate::timing::Phases::start();
        let added = self.added()?;
        let timeout = Duration::from_secs(self.inputs.config.verify.suite_timeout_s);
        let mapped = plan.test_ids();
        let settings = coverage_settings(self.inputs, &mapped);
        let (root, progress) = (&self.root, &mut *self.progress);
        let suites = in_group(
            progress,
            "aayudha coverage floor: the touched packages' whole suites",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                Ok(coverage::run_suites(&run, &plan.touched, &added, &settings))
            },
        )?;
        phases.end("coverage floor (the touched packages' suites, instrumented)");
        Ok(suites)
    }

    /// The coverage floor from the suites' results, for a story.
    fn coverage_floor(
        &mut self,
        plan: &Plan,
        suites: crate::floors::coverage::Suites,
        network: Option<Network>,
    ) -> Result<crate::floors::coverage::Covered, GateError> {
        use crate::floors::coverage;
        let skipped = |why: &str| coverage::Covered {
            floor: coverage::skipped(why),
            report: None,
        };
        if self.inputs.story.is_none() {
            return Ok(skipped(
                "no story: only the map floors (feature-map and behaviour) ran",
            ));
        }
        if !plan.runs_product_code() {
            return Ok(skipped("no package with tests is touched by the change"));
        }
        let added = self.added()?;
        let mapped = plan.test_ids();
        let settings = coverage_settings(self.inputs, &mapped);
        let judged = coverage::Judged {
            root: &self.root,
            network,
        };
        let covered = coverage::finish(&judged, &plan.touched, &added, &settings, suites);
        if let Some(report) = &covered.report {
            write_json(self.out, "reports/coverage.json", report)?;
        }
        Ok(covered)
    }

    /// The mapped tests (those the suites gave are not run again), then, for a bug, the same tests on the
    /// base; package by package (a sharded gate's units), each timed.
    fn story_tests(
        &mut self,
        plan: &Plan,
        sandbox: &Sandbox,
        on_base: Option<&red_on_base::Prepared>,
        executed: &mut Executed,
    ) -> Result<(), GateError> {
        let timeout = Duration::from_secs(self.inputs.config.verify.check_timeout_s);
        let root = self.root.as_path();
        let mut groups: BTreeMap<String, Vec<TestId>> = BTreeMap::new();
        for id in plan.test_ids() {
            groups
                .entry(units::test_dir(root, &id))
                .or_default()
                .push(id);
        }
        let groups: Vec<(String, Vec<TestId>)> = groups.into_iter().collect();
        let suites: BTreeSet<&str> = plan
            .touched
            .packages
            .iter()
            .map(|p| shown_dir(&p.dir))
            .collect();
        let suites_ran = executed.suites.mapped();
        let mut took: Vec<(String, Duration)> = Vec::new();
        let inputs = self.inputs;
        let mut facts = harness::Facts::default();
        executed.tests = in_group(
            self.progress,
            "aayudha tests floor: the mapped tests",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                let mut results = BTreeMap::new();
                let floor_started = std::time::Instant::now();
                for (dir, ids) in &groups {
                    let started = std::time::Instant::now();
                    // The package's environment, read before its tests run (the harness floor).
                    if let Some((dir, environment)) = ids
                        .first()
                        .and_then(|id| test_evidence::installed(&run, id))
                    {
                        facts.absorb(harness::facts(
                            inputs.repo,
                            (&inputs.base, &inputs.head),
                            &dir,
                            &environment,
                            inputs.config.verify.harness_scan_bytes,
                        ));
                    }
                    results.extend(test_evidence::run_tests(&run, ids, &suites_ran));
                    let kind = if suites.contains(dir.as_str()) {
                        "suite"
                    } else {
                        "tests"
                    };
                    took.push((format!("{kind}:{dir}"), started.elapsed()));
                }
                let mut phases = crate::timing::Phases::start();
                phases.report(
                    "tests floor (the mapped tests at the head)",
                    floor_started.elapsed(),
                );
                if inputs.config.verify.canary {
                    let started = std::time::Instant::now();
                    crate::floors::canary::run(inputs.repo, &inputs.head, &run, &mut results);
                    took.push(("canary".to_string(), started.elapsed()));
                    phases.report(
                        "canary (the mapped tests once more, each with a failing first statement)",
                        started.elapsed(),
                    );
                }
                Ok(results)
            },
        )?;
        for (unit, t) in took.drain(..) {
            *executed.elapsed.entry(unit).or_default() += t;
        }
        executed.harness.absorb(facts);
        let Some(prepared) = on_base else {
            return Ok(());
        };
        let head = &executed.tests;
        let on_base = in_group(
            self.progress,
            "aayudha red-on-base floor: the mapped tests on the base",
            |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                let run = tests_run(sandbox, root, timeout, &heartbeat);
                let mut tell = |dir: &str, t: Duration| took.push((format!("base:{dir}"), t));
                Ok(red_on_base::run_on_base(
                    prepared, &groups, &run, head, &mut tell,
                ))
            },
        )?;
        executed.on_base = Some(on_base);
        executed.elapsed.extend(took);
        Ok(())
    }

    /// tests and red-on-base: the verdicts of the mapped tests' results, at the head and on the base;
    /// only for a story.
    fn story_floors(
        &mut self,
        plan: &Plan,
        results: &BTreeMap<TestId, test_evidence::TestResult>,
        on_base: Option<&red_on_base::OnBase>,
        (network, resolved): (Option<Network>, &[String]),
        behaviour: Option<&BehaviourReport>,
    ) -> Result<StoryFloors, GateError> {
        let inputs = self.inputs;
        let config = inputs.config;
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
        // With an evidence map a sandbox was made (for the mapped tests), and said its network.
        let network = network.unwrap_or(Network::NotIsolated);
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
            self.out,
            &story.snapshot,
            evidence,
            results,
            behaviour,
            network,
        )
        .map_err(io("write the evidence"))?;
        let mut sentences = resolved.to_vec();
        sentences.sort();
        sentences.dedup();
        for sentence in sentences {
            evidenced.floor.detail = format!("{}; {sentence}", evidenced.floor.detail);
        }
        found.floors.push(evidenced.floor);
        found.criteria = evidenced.criteria;
        if !plan.red_on_base {
            found
                .floors
                .push(red_on_base::skipped("the story is not labelled type:bug"));
            return Ok(found);
        }
        let base = red_on_base::base_of(inputs.repo, &inputs.base, &inputs.head);
        let none_ran = red_on_base::without_runs(inputs.repo, &inputs.base, &inputs.head);
        let report = red_on_base::judge(&base, evidence, on_base.unwrap_or(&none_ran));
        write_json(self.out, "reports/red-on-base.json", &report)?;
        found.floors.push(red_on_base::floor(
            &report,
            config.verify.red_on_base_blocking_from,
            inputs.now,
            network,
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

/// The coverage floor's settings: the change, the threshold and its date, the mapped tests.
fn coverage_settings<'s>(
    inputs: &'s Inputs,
    mapped: &'s [TestId],
) -> crate::floors::coverage::Settings<'s> {
    let verify = &inputs.config.verify;
    crate::floors::coverage::Settings {
        base: &inputs.base,
        head: &inputs.head,
        threshold: verify.coverage_threshold,
        blocking: verify.coverage_blocking_from,
        now: inputs.now,
        mapped,
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
