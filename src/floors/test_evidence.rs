//! The tests floor (`reference/test-evidence.md`): exactly the tests an evidence map names, once, in the
//! sandbox, by each package's runner ([`crate::runners`]), with every result classified — passed, failed,
//! not built, not found, not run — and each test's own events kept, with every timing field removed; then
//! per criterion, evidence only when every mapped test and check holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use crate::floors::behaviour::{self, BehaviourReport, Status};
use crate::floors::{Floor, FloorResult, Verdict};
use crate::runners::{self, Job, LaunchError, Launcher, Ran, RunnerError};
use crate::sandbox::preflight::Tool;
use crate::sandbox::{self, Network, Sandbox};
use crate::story::evidence_map::EvidenceMap;
use crate::story::ready::{self, Snapshot};

pub use crate::runners::{Outcome, TestId, TestResult};

/// Told what is still running and for how long.
pub type Heartbeat<'a> = dyn Fn(&str, Duration) + 'a;

/// What a run of tests needs.
pub struct Run<'a> {
    pub sandbox: &'a Sandbox,
    /// The checkout the tests run in (the repository, or the base commit's temporary copy).
    pub root: &'a Path,
    pub timeout: Duration,
    /// A build cache of its own (red-on-base's tree), by name; `None`: the slot's usual one.
    pub target: Option<&'a str>,
    /// Told every ~10 s what is still running (a build, a test executable) and for how long.
    pub heartbeat: Option<&'a Heartbeat<'a>>,
    /// Whether the tests are canaries ([`crate::floors::canary`]): each runner runs them as
    /// [`runners::Runner::run_canaries`] says.
    pub canaries: bool,
}

/// The tools the tests of these packages need (for the preflight): each package's runner's.
pub fn needs(root: &Path, tests: &[TestId]) -> BTreeSet<Tool> {
    tests
        .iter()
        .filter_map(|t| runners::package_of(root, t))
        .map(|p| p.runner.tool())
        .collect()
}

/// Runs every test once, by its package's runner in the sandbox, and returns each one's result; a test
/// whose result `ran` already holds (the coverage floor's run of its package's whole suite) is not run
/// again.
pub fn run_tests(
    run: &Run,
    tests: &[TestId],
    ran: &BTreeMap<TestId, TestResult>,
) -> BTreeMap<TestId, TestResult> {
    // By package and runner: a folder two runners claim runs each one's ids by that runner.
    let mut by_package: BTreeMap<(&str, &str), Vec<&TestId>> = BTreeMap::new();
    let mut results: BTreeMap<TestId, TestResult> = tests
        .iter()
        .filter_map(|t| Some((t.clone(), ran.get(t)?.clone())))
        .collect();
    for test in tests.iter().filter(|t| !ran.contains_key(*t)) {
        let runner = runners::package_of(run.root, test).map_or("", |f| f.runner.name());
        by_package
            .entry((test.package.as_str(), runner))
            .or_default()
            .push(test);
    }
    if by_package.is_empty() {
        return results;
    }
    if let Some(why) = run.sandbox.reach_problem(run.root) {
        let all: Vec<&TestId> = by_package.values().flatten().copied().collect();
        results.extend(runners::all(&all, Outcome::Blocked(why)));
        return results;
    }
    let launcher = InSandbox { run };
    for ((package, _), tests) in by_package {
        if let Some(why) = run.sandbox.read_problem(run.root, package) {
            results.extend(runners::all(&tests, Outcome::Blocked(why)));
            continue;
        }
        let Some(found) = runners::package_of(run.root, tests[0]) else {
            results.extend(runners::all(
                &tests,
                Outcome::NotFound(runners::unclaimed(package)),
            ));
            continue;
        };
        let package = found.package();
        let mut env = match package_env(run, &package) {
            Ok(env) => env,
            Err(why) => {
                // Said as on every machine (a toolchain's folder is this machine's).
                let why = runners::scrub(&why.to_string(), run.root);
                results.extend(runners::all(&tests, Outcome::Blocked(why)));
                continue;
            }
        };
        // A build cache of its own (red-on-base's tree).
        if let Some(name) = run.target {
            match run.sandbox.named_target_dir(0, name) {
                Ok(dir) => env.push(("CARGO_TARGET_DIR".to_string(), dir.into_os_string())),
                Err(e) => {
                    results.extend(runners::all(&tests, Outcome::NotRun(e.to_string())));
                    continue;
                }
            }
        }
        let on = runners::Run {
            root: run.root,
            launcher: &launcher,
            timeout: run.timeout,
            env,
        };
        results.extend(if run.canaries {
            runners::run_canaries(&on, &package, &tests)
        } else {
            runners::run_named(&on, &package, &tests)
        });
    }
    results
}

/// Each test's canary placed by its package's runner in the tree of `run` (a per-run copy of the head,
/// [`crate::floors::canary`]): the test whose run must fail with the canary's message, or why it cannot
/// apply.
pub fn canaries(
    run: &Run,
    tests: &[TestId],
    canary: &runners::Canary,
) -> BTreeMap<TestId, Result<TestId, String>> {
    let mut by_package: BTreeMap<(&str, &str), Vec<&TestId>> = BTreeMap::new();
    for test in tests {
        let runner = runners::package_of(run.root, test).map_or("", |f| f.runner.name());
        by_package
            .entry((test.package.as_str(), runner))
            .or_default()
            .push(test);
    }
    let launcher = InSandbox { run };
    let mut placed = BTreeMap::new();
    for tests in by_package.into_values() {
        let Some(found) = runners::package_of(run.root, tests[0]) else {
            continue;
        };
        let package = found.package();
        // The package's variables, its install's among them (where its tests run).
        let on = runners::Run {
            root: run.root,
            launcher: &launcher,
            timeout: run.timeout,
            env: package_env(run, &package).unwrap_or_default(),
        };
        placed.extend(package.runner.canary(&on, &package, &tests, canary));
    }
    placed
}

/// Why a package's processes cannot run here: a blocked reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unrunnable {
    /// The preflight's reason its runner's tool is missing.
    #[error("{0}")]
    Tool(String),
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The fetch's reason the package's dependencies are missing.
    #[error("{0}")]
    Dependencies(String),
}

/// What a package's processes need to run here — its runner's tool (and a version the package accepts),
/// its toolchain, its fetched dependencies — as the variables they get, its install's included; or why
/// it cannot run (a blocked reason).
pub(crate) fn package_env(
    run: &Run,
    package: &runners::Package,
) -> Result<Vec<(String, std::ffi::OsString)>, Unrunnable> {
    let version = run
        .sandbox
        .tool(package.runner.tool())
        .map_err(Unrunnable::Tool)?;
    package.runner.accepts_tool(run.root, package, &version)?;
    let mut env = package
        .runner
        .toolchain(run.sandbox.toolchains(), run.root, package)?;
    if let Some(why) = run.sandbox.dependency_problem(run.root, package.dir) {
        return Err(Unrunnable::Dependencies(why));
    }
    // What the package's install gave it (a Python venv of this tree's own).
    env.extend(run.sandbox.installed_env(run.root, package.dir));
    Ok(env)
}

/// What the installed environment of the package that runs `id` loads into its test processes, read as
/// data before any test of it runs; `None` when its stack installs none (or it cannot run).
pub(crate) fn installed(run: &Run, id: &TestId) -> Option<(String, runners::harness::Environment)> {
    let found = runners::package_of(run.root, id)?;
    let package = found.package();
    let env = package_env(run, &package).ok()?;
    let environment = package.runner.installed(&env)?;
    Some((found.dir.clone(), environment))
}

/// The tests floor's launcher: each process in the sandbox as the first slot's uid, offline; a process
/// that went over a limit, or one of whose processes survived the kill, gave no result to trust.
pub(crate) struct InSandbox<'a, 'b> {
    pub run: &'a Run<'b>,
}

impl Launcher for InSandbox<'_, '_> {
    /// A fresh folder of the first slot's uid.
    fn scratch(&self, name: &str) -> Result<std::path::PathBuf, LaunchError> {
        Ok(self.run.sandbox.fresh_dir(0, name)?)
    }

    fn launch(&self, job: Job) -> Result<Ran, LaunchError> {
        let run = self.run;
        let beat = |elapsed: Duration| {
            if let Some(heartbeat) = run.heartbeat {
                heartbeat(&job.what, elapsed);
            }
        };
        // A report file the process may write, in a fresh folder of the slot's.
        let mut env = job.env.clone();
        let report = match job.report {
            Some(var) => {
                let dir = run.sandbox.fresh_dir(0, "report")?;
                let file = dir.join("report");
                env.push((var.to_string(), file.clone().into_os_string()));
                Some(file)
            }
            None => None,
        };
        let argv = match &report {
            Some(file) => runners::with_report(&job.argv, file),
            None => job.argv.clone(),
        };
        let outcome = run
            .sandbox
            .run(
                sandbox::Job {
                    argv: &argv,
                    cwd: &job.cwd,
                    slot: 0,
                    network: false,
                    stdin: job.stdin.clone(),
                    timeout: job.timeout,
                    env,
                    heartbeat: Some(&beat),
                    stdout_cap: runners::REPORT_CAP as usize,
                },
                &BTreeSet::new(),
            )
            .map_err(|source| LaunchError::Start {
                command: job.argv.join(" "),
                source,
            })?;
        if !outcome.survivors.is_empty() {
            return Err(LaunchError::Survivors {
                count: outcome.survivors.len(),
                command: job.argv.join(" "),
            });
        }
        if let Some(over) = outcome.over_limit {
            return Err(LaunchError::OverLimit {
                command: job.argv.join(" "),
                over,
            });
        }
        Ok(Ran {
            code: outcome.code,
            signal: outcome.signal,
            timed_out: outcome.timed_out,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            report: report.and_then(|file| runners::read_report(&file)),
            truncated: outcome.stdout_truncated,
        })
    }
}

const TOOL: &str =
    "aayu test evidence (cargo test, go test -json, pytest, vitest, jest, node --test)";

/// A criterion's evidence: the artifact paths that prove it (empty when it has none), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    pub id: u32,
    pub evidence: Vec<String>,
    pub said: Said,
}

/// Why a criterion has the evidence it has (rendered by `output`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// The story has no evidence map at all (the floor's detail says so once).
    NoMap,
    /// The evidence map does not name the criterion.
    Unmapped,
    /// Every mapped test passed and every mapped check gave its artifact; what the tests' runs noted.
    Evidenced { notes: Vec<String> },
    /// What kept it from evidence: each mapped test or check that did not pass, and why.
    Missing { problems: Vec<String> },
    /// The evidence map names a criterion the Ready snapshot does not have (never in the pack).
    NotInSnapshot,
}

/// What the tests floor found: its verdict and each criterion's evidence (artifact paths, empty when it has
/// none) with why.
#[derive(Debug)]
pub struct Evidenced {
    pub floor: FloorResult,
    pub criteria: Vec<Criterion>,
}

/// The tests floor of a story without an evidence map: it fails, naming the file to commit.
pub fn floor_without_map(snapshot: &Snapshot) -> Evidenced {
    let file = crate::story::evidence_map::path(snapshot.meta.story);
    Evidenced {
        floor: FloorResult::new(
            Floor::Tests,
            Verdict::Fail,
            "aayu test evidence",
            format!(
                "no evidence map: commit `{file}` naming the tests and checks of each criterion"
            ),
        )
        .numbers(0.0, snapshot.criteria.len() as f64),
        criteria: snapshot
            .criteria
            .iter()
            .map(|c| Criterion {
                id: c.id,
                evidence: Vec::new(),
                said: Said::NoMap,
            })
            .collect(),
    }
}

/// Per criterion: evidence only when every mapped test passed and every mapped check passed with an
/// artifact of the criterion's evidence kind.
pub fn floor(
    out: &Path,
    snapshot: &Snapshot,
    evidence: &EvidenceMap,
    results: &BTreeMap<TestId, TestResult>,
    behaviour: Option<&BehaviourReport>,
    network: Network,
) -> std::io::Result<Evidenced> {
    let mut criteria = Vec::new();
    let mut evidenced = 0usize;
    // A mapped test this machine cannot run (a toolchain the image lacks) blocks the floor rather than
    // failing it, unless a test really failed.
    let (mut failed_any, mut blocked_any) = (false, false);
    let ready: BTreeMap<u32, &ready::Criterion> =
        snapshot.criteria.iter().map(|c| (c.id, c)).collect();
    for criterion in &snapshot.criteria {
        let Some(mapped) = evidence.criterion.iter().find(|c| c.id == criterion.id) else {
            criteria.push(Criterion {
                id: criterion.id,
                evidence: Vec::new(),
                said: Said::Unmapped,
            });
            continue;
        };
        let mut problems = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut events = String::new();
        for text in &mapped.tests {
            let Ok(id) = TestId::parse(text) else {
                continue;
            };
            if let Some(note) = results.get(&id).and_then(|r| r.note.as_ref())
                && !notes.contains(note)
            {
                notes.push(note.clone());
            }
            match results.get(&id).map(|r| (&r.outcome, &r.events)) {
                Some((Outcome::Passed, own)) => {
                    for event in own {
                        events.push_str(event);
                        events.push('\n');
                    }
                }
                Some((outcome, _)) => {
                    failed_any |= matches!(outcome, Outcome::Failed(_));
                    blocked_any |= matches!(outcome, Outcome::Blocked(_));
                    problems.push(format!("`{id}` {}: {}", outcome.words(), outcome.detail()))
                }
                None => problems.push(format!("`{id}` did not run")),
            }
        }
        let mut paths = Vec::new();
        for name in &mapped.checks {
            let found = behaviour.and_then(|b| {
                b.checks
                    .iter()
                    .find(|c| format!("{}.{}", c.feature, c.check) == *name)
            });
            match found {
                None => problems.push(format!("check `{name}` did not run")),
                Some(c) if c.status != Status::Passed => problems.push(format!(
                    "check `{name}` {}: {}",
                    c.status.as_str(),
                    c.reason
                )),
                Some(c) => {
                    let own: Vec<&crate::floors::behaviour::Artifact> = c
                        .artifacts
                        .iter()
                        .filter(|a| a.kind == criterion.evidence)
                        .collect();
                    if own.is_empty() {
                        problems.push(format!("check `{name}` produced no `{}` artifact (the criterion's evidence kind)", behaviour::kind_word(criterion.evidence)));
                    }
                    paths.extend(own.iter().map(|a| a.path.clone()));
                }
            }
        }
        if mapped.tests.is_empty() && mapped.checks.is_empty() {
            problems.push("the evidence map names no test or check for it".to_string());
        }
        if problems.is_empty() {
            if !mapped.tests.is_empty() {
                let rel = format!("evidence/criterion-{}.jsonl", criterion.id);
                let path = out.join(&rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                crate::safe_fs::write_atomic(&path, events.as_bytes())?;
                paths.insert(0, rel);
            }
            evidenced += 1;
            criteria.push(Criterion {
                id: criterion.id,
                evidence: paths,
                said: Said::Evidenced { notes },
            });
        } else {
            criteria.push(Criterion {
                id: criterion.id,
                evidence: Vec::new(),
                said: Said::Missing { problems },
            });
        }
    }
    for extra in evidence
        .criterion
        .iter()
        .filter(|c| !ready.contains_key(&c.id))
    {
        criteria.push(Criterion {
            id: extra.id,
            evidence: Vec::new(),
            said: Said::NotInSnapshot,
        });
    }
    let total = snapshot.criteria.len();
    let verdict = if evidenced == total {
        Verdict::Pass
    } else if blocked_any && !failed_any {
        Verdict::Blocked
    } else {
        Verdict::Fail
    };
    let floor = FloorResult::new(
        Floor::Tests,
        verdict,
        TOOL,
        format!("{evidenced} of {total} criteria evidenced"),
    )
    .numbers(evidenced as f64, total as f64)
    .network(network);
    Ok(Evidenced { floor, criteria })
}
