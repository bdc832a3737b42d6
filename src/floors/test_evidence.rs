//! Running mapped tests and reading their results (`reference/test-evidence.md`): exactly the tests an
//! evidence map names, once, in the sandbox, with every result classified — passed, failed, not built, not
//! found, not run — and each test's own events kept, with every timing field removed.
//!
//! Rust: `cargo build --tests --keep-going --message-format=json` builds what it can and names each test
//! executable; each needed executable then runs with `--exact` and libtest JSON (`RUSTC_BOOTSTRAP=1` for
//! the test binary only). Go: `go test -json -count=1 -vet=off -run '^(…)$'` over the mapped packages only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::floors::behaviour::{self, BehaviourReport, Status};
use crate::floors::{Floor, FloorResult, Verdict};
use crate::ledger::ready::{self, Snapshot};
use crate::pack;
use crate::sandbox::Network;
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{PackageKind, package_kind, shown_dir};
use crate::sandbox::{self, Sandbox};
use crate::select::evidence_map::EvidenceMap;

mod id;

pub use id::{CargoTest, GoTest, Target, TargetKind, TestId};

/// What happened to one mapped test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed(String),
    NotBuilt(String),
    NotFound(String),
    NotRun(String),
    /// The machine cannot run it: the checkout asks for a toolchain this image lacks, say.
    Blocked(String),
    /// More than one test target of the package holds it: the id must say which (a contract error).
    Ambiguous(String),
}

impl Outcome {
    /// The word `reports/red-on-base.json` uses.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::NotBuilt(_) => "not-built",
            Outcome::NotFound(_) | Outcome::Ambiguous(_) => "not-found",
            Outcome::NotRun(_) | Outcome::Blocked(_) => "not-run",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Outcome::Passed => "",
            Outcome::Failed(d)
            | Outcome::NotBuilt(d)
            | Outcome::NotFound(d)
            | Outcome::NotRun(d)
            | Outcome::Blocked(d)
            | Outcome::Ambiguous(d) => d,
        }
    }
}

/// A test's result and its own events, timing removed, one JSON object per line.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub outcome: Outcome,
    pub events: Vec<String>,
    /// The cargo target whose result this is, when one target held the test: red-on-base runs the same
    /// target's test on the base, never another target's of the same path.
    pub target: Option<Target>,
}

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
}

/// The tools the tests of these packages need (for the preflight): cargo or go, by package.
pub fn needs(root: &Path, tests: &[TestId]) -> BTreeSet<Tool> {
    tests
        .iter()
        .filter_map(|t| match package_kind(root, &t.package)? {
            PackageKind::Cargo => Some(Tool::Cargo),
            PackageKind::Go { .. } => Some(Tool::Go),
        })
        .collect()
}

/// Runs every test once and returns each one's result.
pub fn run_tests(run: &Run, tests: &[TestId]) -> BTreeMap<TestId, TestResult> {
    let mut by_package: BTreeMap<&str, Vec<&TestId>> = BTreeMap::new();
    for test in tests {
        by_package
            .entry(test.package.as_str())
            .or_default()
            .push(test);
    }
    let mut results = BTreeMap::new();
    if let Some(why) = run.sandbox.reach_problem(run.root) {
        return tests
            .iter()
            .map(|t| {
                (
                    t.clone(),
                    TestResult {
                        outcome: Outcome::Blocked(why.clone()),
                        events: Vec::new(),
                        target: None,
                    },
                )
            })
            .collect();
    }
    for (package, tests) in by_package {
        if let Some(why) = run.sandbox.read_problem(run.root, package) {
            results.extend(all(&tests, Outcome::Blocked(why)));
            continue;
        }
        let toolchains = run.sandbox.toolchains();
        let found = match package_kind(run.root, package) {
            Some(PackageKind::Cargo) => match run
                .sandbox
                .tool(Tool::Cargo)
                .and_then(|_| toolchains.rust_for(run.root, package))
            {
                Ok(toolchain) => rust(run, package, toolchain, &tests),
                Err(why) => all(&tests, Outcome::Blocked(why)),
            },
            Some(PackageKind::Go { module }) => match run
                .sandbox
                .tool(Tool::Go)
                .and_then(|_| toolchains.go_for(run.root, &module))
                .and_then(|()| {
                    run.sandbox
                        .dependency_problem(run.root, package)
                        .map_or(Ok(()), Err)
                }) {
                Ok(()) => go(run, &module, package, &tests),
                Err(why) => all(&tests, Outcome::Blocked(why)),
            },
            None => all(
                &tests,
                Outcome::NotFound(format!(
                    "`{}` holds neither Cargo.toml (cargo) nor a go.mod at or above it (Go)",
                    shown_dir(package)
                )),
            ),
        };
        results.extend(found);
    }
    results
}

fn sandboxed(
    run: &Run,
    what: &str,
    argv: Vec<String>,
    cwd: &Path,
    env: Vec<(String, std::ffi::OsString)>,
    timeout: Duration,
) -> Result<sandbox::Outcome, String> {
    let beat = |elapsed: Duration| {
        if let Some(heartbeat) = run.heartbeat {
            heartbeat(what, elapsed);
        }
    };
    run.sandbox
        .run(
            sandbox::Job {
                argv: &argv,
                cwd,
                slot: 0,
                network: false,
                stdin: Vec::new(),
                timeout,
                env,
                heartbeat: Some(&beat),
            },
            &BTreeSet::new(),
        )
        .map_err(|e| format!("cannot run `{}`: {e}", argv.join(" ")))
        .and_then(|outcome| {
            if !outcome.survivors.is_empty() {
                return Err(format!(
                    "{} process(es) of `{}` survived the kill: its result cannot be trusted",
                    outcome.survivors.len(),
                    argv.join(" ")
                ));
            }
            match &outcome.over_limit {
                Some(over) => Err(format!("`{}` went over a limit: {over}", argv.join(" "))),
                None => Ok(outcome),
            }
        })
}

fn all(tests: &[&TestId], outcome: Outcome) -> BTreeMap<TestId, TestResult> {
    tests
        .iter()
        .map(|t| {
            (
                (*t).clone(),
                TestResult {
                    outcome: outcome.clone(),
                    events: Vec::new(),
                    target: None,
                },
            )
        })
        .collect()
}

/// How a program exited, for a reason: `status 101` or `signal 9`, and its stderr's last lines.
fn exited(what: &str, outcome: &sandbox::Outcome, root: &Path) -> String {
    let status = match (outcome.timed_out, outcome.code, outcome.signal) {
        (true, _, _) => "ran past its time limit".to_string(),
        (_, Some(code), _) => format!("exited with status {code}"),
        (_, None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "ended".to_string(),
    };
    let said = sandbox::said(&outcome.stderr, root);
    if said.is_empty() {
        format!("{what} {status}")
    } else {
        format!("{what} {status}: {said}")
    }
}

fn rust(
    run: &Run,
    package: &str,
    toolchain: Option<String>,
    tests: &[&TestId],
) -> BTreeMap<TestId, TestResult> {
    let (wanted, mut results) = read_ids(tests, CargoTest::parse);
    if wanted.is_empty() {
        return results;
    }
    let tests: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
    let tests = tests.as_slice();
    let shown = shown_dir(package);
    let dir = run.root.join(package);
    let dir = dir.as_path();
    let mut toolchain_env: Vec<(String, std::ffi::OsString)> = toolchain
        .map(|name| vec![("RUSTUP_TOOLCHAIN".to_string(), name.into())])
        .unwrap_or_default();
    if let Some(name) = run.target {
        match run.sandbox.named_target_dir(0, name) {
            Ok(dir) => toolchain_env.push(("CARGO_TARGET_DIR".to_string(), dir.into_os_string())),
            Err(e) => return all(tests, Outcome::NotRun(e.to_string())),
        }
    }
    let manifest = dir.join("Cargo.toml").display().to_string();
    let build = [
        "cargo",
        "build",
        "--tests",
        "--keep-going",
        "--message-format=json",
        "--quiet",
        "--manifest-path",
        &manifest,
    ]
    .map(String::from)
    .to_vec();
    let built = match sandboxed(
        run,
        &format!("building the tests of `{shown}` (cargo build --tests)"),
        build,
        run.root,
        toolchain_env.clone(),
        run.timeout.max(Duration::from_secs(600)),
    ) {
        Ok(built) => built,
        Err(e) => return all(tests, Outcome::NotRun(e)),
    };
    // Test executables by target (name and kind: a lib and a bin of one name are two targets), and the
    // targets that failed to build with their first error.
    let mut executables: BTreeMap<Target, PathBuf> = BTreeMap::new();
    let mut broken: BTreeMap<Target, String> = BTreeMap::new();
    let package_root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for line in String::from_utf8_lossy(&built.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let manifest_of = message
            .get("manifest_path")
            .and_then(Value::as_str)
            .map(PathBuf::from);
        if manifest_of
            .as_ref()
            .and_then(|m| m.parent())
            .and_then(|p| p.canonicalize().ok())
            != Some(package_root.clone())
        {
            continue;
        }
        let kinds: Vec<&str> = message
            .pointer("/target/kind")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(kind) = TargetKind::of_cargo(&kinds) else {
            continue;
        };
        let target = Target {
            name: message
                .pointer("/target/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            kind,
        };
        match message.get("reason").and_then(Value::as_str) {
            Some("compiler-artifact")
                if message.pointer("/profile/test") == Some(&Value::Bool(true)) =>
            {
                if let Some(exe) = message.get("executable").and_then(Value::as_str) {
                    executables.insert(target, PathBuf::from(exe));
                }
            }
            Some("compiler-message")
                if message.pointer("/message/level").and_then(Value::as_str) == Some("error") =>
            {
                let rendered = message
                    .pointer("/message/message")
                    .and_then(Value::as_str)
                    .unwrap_or("a compile error");
                broken.entry(target).or_insert_with(|| rendered.to_string());
            }
            _ => {}
        }
    }
    if executables.is_empty() {
        let why = if broken.is_empty() {
            exited("`cargo build --tests`", &built, run.root)
        } else {
            describe_broken(broken.iter())
        };
        return all(tests, Outcome::NotBuilt(why));
    }
    // Run every executable that may hold a wanted test, with exactly those names. A target whose executable
    // gave no result at all is remembered with why: a test missing from it was not looked for.
    let mut seen: BTreeMap<String, Vec<(Target, Vec<Value>)>> = BTreeMap::new();
    let mut silent: BTreeMap<Target, String> = BTreeMap::new();
    for (target, exe) in &executables {
        let names: BTreeSet<&str> = wanted
            .iter()
            .filter(|(_, spec)| spec.wants(target))
            .map(|(_, spec)| spec.path.as_str())
            .collect();
        if names.is_empty() {
            continue;
        }
        let mut argv = vec![exe.display().to_string()];
        argv.extend(names.iter().map(|n| n.to_string()));
        argv.extend(
            [
                "--exact",
                "-Z",
                "unstable-options",
                "--format",
                "json",
                "--test-threads",
                "1",
            ]
            .map(String::from),
        );
        let env = vec![("RUSTC_BOOTSTRAP".to_string(), "1".into())];
        let ran = match sandboxed(
            run,
            &format!("running the tests of `{shown}`, target `{target}`"),
            argv,
            dir,
            env,
            run.timeout,
        ) {
            Ok(ran) => ran,
            Err(why) => {
                silent.insert(target.clone(), why);
                continue;
            }
        };
        let finished = String::from_utf8_lossy(&ran.stdout).lines().any(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|e| {
                e.get("type").and_then(Value::as_str) == Some("suite")
                    && matches!(
                        e.get("event").and_then(Value::as_str),
                        Some("ok" | "failed")
                    )
            })
        });
        if !finished {
            silent.insert(
                target.clone(),
                exited(
                    &format!("the test executable of target `{target}`"),
                    &ran,
                    run.root,
                ),
            );
        }
        let mut events: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for line in String::from_utf8_lossy(&ran.stdout).lines() {
            let Ok(mut event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if event.get("type").and_then(Value::as_str) != Some("test") {
                continue;
            }
            let Some(name) = event
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                continue;
            };
            if let Some(object) = event.as_object_mut() {
                object.shift_remove("exec_time");
            }
            events.entry(name).or_default().push(event);
        }
        for (name, list) in events {
            seen.entry(name).or_default().push((target.clone(), list));
        }
    }
    for (test, spec) in &wanted {
        let candidates: Vec<&(Target, Vec<Value>)> = seen
            .get(&spec.path)
            .map(|v| v.iter().filter(|(t, _)| spec.wants(t)).collect())
            .unwrap_or_default();
        let mut held_by = None;
        let outcome_and_events = match candidates.as_slice() {
            [] => {
                let runner_error = silent
                    .iter()
                    .find(|(t, _)| spec.wants(t))
                    .map(|(_, why)| why.clone());
                let own_broken: Vec<(&Target, &String)> =
                    broken.iter().filter(|(t, _)| spec.wants(t)).collect();
                let why = if spec.target.is_some() && !own_broken.is_empty() {
                    Outcome::NotBuilt(describe_broken(own_broken.into_iter()))
                } else if let Some(error) = runner_error {
                    Outcome::NotRun(format!("no result for `{}`: {error}", spec.path))
                } else if !broken.is_empty() {
                    Outcome::NotBuilt(format!(
                        "no test `{}` ran; {}",
                        spec.path,
                        describe_broken(broken.iter())
                    ))
                } else if spec.target.is_some() && !executables.keys().any(|t| spec.wants(t)) {
                    Outcome::NotFound(format!(
                        "`{shown}` has no test target `{}` (its targets: {})",
                        spec.target
                            .as_ref()
                            .map(|(n, k)| k
                                .map_or_else(|| n.clone(), |k| format!("{n}({})", k.word())))
                            .unwrap_or_default(),
                        executables
                            .keys()
                            .map(Target::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                } else {
                    Outcome::NotFound(format!("no test `{}` in `{shown}`", spec.path))
                };
                (why, Vec::new())
            }
            [(found, events)] => {
                // Another target the id may mean gave no result: it may hold the same test, so this
                // result cannot be said to be the id's.
                let unknown: Vec<String> = broken
                    .keys()
                    .chain(silent.keys())
                    .filter(|t| *t != found && spec.wants(t))
                    .map(|t| format!("`{t}`"))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if unknown.is_empty() {
                    held_by = Some(found.clone());
                    (
                        libtest_outcome(events),
                        events.iter().map(Value::to_string).collect(),
                    )
                } else {
                    (
                        Outcome::NotRun(format!(
                            "`{}` ran in target `{found}`, but {} gave no result (did not build or run), so it may hold the test too: qualify the id as `{shown}:{found}/{}`",
                            spec.path,
                            unknown.join(", "),
                            spec.path
                        )),
                        Vec::new(),
                    )
                }
            }
            many => {
                let spellings: Vec<String> = many
                    .iter()
                    .map(|(t, _)| format!("`{shown}:{t}/{}`", spec.path))
                    .collect();
                (
                    Outcome::Ambiguous(format!(
                        "`{test}` is a test of {} targets of `{shown}`: write {}",
                        many.len(),
                        spellings.join(" or ")
                    )),
                    Vec::new(),
                )
            }
        };
        results.insert(
            (*test).clone(),
            TestResult {
                outcome: outcome_and_events.0,
                events: outcome_and_events.1,
                target: held_by,
            },
        );
    }
    results
}

/// Each id read by its runner's grammar (checked before the run in the gate; here for any other caller):
/// the ones it reads, and a `not-found` result for each it cannot.
fn read_ids<'a, T>(
    tests: &[&'a TestId],
    parse: fn(&str) -> Result<T, String>,
) -> (Vec<(&'a TestId, T)>, BTreeMap<TestId, TestResult>) {
    let mut wanted = Vec::new();
    let mut refused = BTreeMap::new();
    for test in tests {
        match parse(&test.rest) {
            Ok(spec) => wanted.push((*test, spec)),
            Err(why) => {
                refused.insert((*test).clone(), result(Outcome::NotFound(why)));
            }
        }
    }
    (wanted, refused)
}

fn result(outcome: Outcome) -> TestResult {
    TestResult {
        outcome,
        events: Vec::new(),
        target: None,
    }
}

fn describe_broken<'a>(broken: impl Iterator<Item = (&'a Target, &'a String)>) -> String {
    let parts: Vec<String> = broken
        .map(|(t, e)| format!("target `{t}` did not build: {e}"))
        .collect();
    parts.join("; ")
}

fn libtest_outcome(events: &[Value]) -> Outcome {
    let last = events
        .iter()
        .rev()
        .find_map(|e| e.get("event").and_then(Value::as_str));
    match last {
        Some("ok") => Outcome::Passed,
        Some("failed") => {
            let stdout = events
                .iter()
                .rev()
                .find_map(|e| e.get("stdout").and_then(Value::as_str))
                .unwrap_or("");
            let first = stdout
                .lines()
                .find(|l| l.contains("panicked") || l.contains("assert"))
                .unwrap_or("the test failed");
            Outcome::Failed(without_thread_id(first.trim()))
        }
        Some("ignored") => Outcome::NotRun("the test is ignored".to_string()),
        _ => Outcome::NotRun(
            "the test started but gave no result (a crash or a timeout)".to_string(),
        ),
    }
}

/// `--- PASS: TestX (0.01s)` → `--- PASS: TestX`: Go prints each result's duration into its output.
fn without_duration(line: &str) -> String {
    let trimmed = line.trim_start();
    let is_result = ["--- PASS: ", "--- FAIL: ", "--- SKIP: "]
        .iter()
        .any(|p| trimmed.starts_with(p));
    let body = line.trim_end_matches('\n');
    match body.rfind(" (") {
        Some(at)
            if is_result
                && body.ends_with("s)")
                && body[at + 2..body.len() - 2]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '.') =>
        {
            format!("{}{}", &body[..at], &line[body.len()..])
        }
        _ => line.to_string(),
    }
}

/// `thread 'x' (31005) panicked at …` → `thread 'x' panicked at …`: the thread id changes from run to run,
/// and reports must not.
fn without_thread_id(line: &str) -> String {
    match (line.find("' ("), line.find(") panicked")) {
        (Some(open), Some(close))
            if open < close && line[open + 3..close].chars().all(|c| c.is_ascii_digit()) =>
        {
            format!("{}'{}", &line[..open], &line[close + 1..])
        }
        _ => line.to_string(),
    }
}

fn go(run: &Run, module: &str, package: &str, tests: &[&TestId]) -> BTreeMap<TestId, TestResult> {
    let (wanted, mut results) = read_ids(tests, GoTest::parse);
    if wanted.is_empty() {
        return results;
    }
    let rel = if module.is_empty() {
        package
    } else {
        package
            .strip_prefix(module)
            .map_or("", |r| r.trim_start_matches('/'))
    };
    let module = run.root.join(module);
    let module = module.as_path();
    let pkg = if rel.is_empty() {
        ".".to_string()
    } else {
        format!("./{rel}")
    };
    // The top-level functions run whole: a subtest's own result and events are read from their run (a
    // second `-run` level would also filter the subtests of a function that is mapped whole).
    let functions: BTreeSet<String> = wanted
        .iter()
        .map(|(_, spec)| regex::escape(&spec.function))
        .collect();
    let pattern = format!(
        "^({})$",
        functions.into_iter().collect::<Vec<_>>().join("|")
    );
    let argv = [
        "go", "test", "-json", "-count=1", "-vet=off", "-run", &pattern, &pkg,
    ]
    .map(String::from)
    .to_vec();
    let env = vec![("GODEBUG".to_string(), "gotestjsonbuildtext=0".into())];
    let ran = match sandboxed(
        run,
        &format!("go test `{pkg}` in `{}`", module.display()),
        argv,
        module,
        env,
        run.timeout.max(Duration::from_secs(600)),
    ) {
        Ok(ran) => ran,
        Err(e) => {
            let tests: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
            results.extend(all(&tests, Outcome::NotRun(e)));
            return results;
        }
    };
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let mut events: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut build_failed = stdout.contains("[build failed]") || stderr.contains("[build failed]");
    // Whether go ran the package at all: it ends with a package-level result (pass, fail or skip).
    let mut package_ran = false;
    for line in stdout.lines() {
        let Ok(mut event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if event.get("Test").is_none()
            && matches!(
                event.get("Action").and_then(Value::as_str),
                Some("pass" | "fail" | "skip")
            )
        {
            package_ran = true;
        }
        if event.get("FailedBuild").is_some()
            || event.get("Action").and_then(Value::as_str) == Some("build-fail")
        {
            build_failed = true;
        }
        let Some(test) = event
            .get("Test")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        if let Some(object) = event.as_object_mut() {
            object.shift_remove("Time");
            object.shift_remove("Elapsed");
            // `--- PASS: TestX (0.00s)` carries a duration too.
            if let Some(Value::String(output)) = object.get_mut("Output") {
                *output = without_duration(output);
            }
        }
        events.entry(test).or_default().push(event);
    }
    let shown = shown_dir(package);
    for (test, spec) in &wanted {
        let own = events.get(&spec.name).cloned().unwrap_or_default();
        let last = own.iter().rev().find_map(|e| {
            e.get("Action")
                .and_then(Value::as_str)
                .filter(|a| matches!(*a, "pass" | "fail" | "skip"))
        });
        let outcome = match last {
            Some("pass") => Outcome::Passed,
            Some("fail") => Outcome::Failed(
                own.iter()
                    .filter_map(|e| e.get("Output").and_then(Value::as_str))
                    .find(|o| o.contains(".go:"))
                    .unwrap_or("the test failed")
                    .trim()
                    .to_string(),
            ),
            Some(_) => Outcome::NotRun("the test was skipped".to_string()),
            None if build_failed => Outcome::NotBuilt(format!(
                "`{pkg}` did not build: {}",
                sandbox::said(&ran.stderr, run.root)
            )),
            None if !own.is_empty() => Outcome::NotRun(
                "the test started but gave no result (a crash or os.Exit)".to_string(),
            ),
            None if package_ran => {
                Outcome::NotFound(format!("no test `{}` in `{shown}`", spec.name))
            }
            // go stopped before it ran the package (go.mod, a missing module offline…): its own words.
            None => Outcome::NotBuilt(exited(&format!("`go test {pkg}`"), &ran, run.root)),
        };
        // The test's own events, and its subtests'.
        let nested = format!("{}/", spec.name);
        let kept: Vec<String> = events
            .iter()
            .filter(|(name, _)| **name == spec.name || name.starts_with(&nested))
            .flat_map(|(_, list)| list.iter().map(Value::to_string))
            .collect();
        results.insert(
            (*test).clone(),
            TestResult {
                outcome,
                events: kept,
                target: None,
            },
        );
    }
    results
}

const TOOL: &str = "aayu test evidence (cargo test, go test -json)";

/// What the tests floor found: its verdict, each criterion's evidence (artifact paths, empty when it has
/// none) and a line per criterion saying why.
#[derive(Debug)]
pub struct Evidenced {
    pub floor: FloorResult,
    pub criteria: Vec<pack::Criterion>,
    pub lines: Vec<String>,
}

/// The tests floor of a story without an evidence map: it fails, naming the file to commit.
pub fn floor_without_map(snapshot: &Snapshot) -> Evidenced {
    let file = crate::select::evidence_map::path(snapshot.meta.story);
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
            .map(|c| pack::Criterion {
                id: c.id,
                evidence: Vec::new(),
            })
            .collect(),
        lines: Vec::new(),
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
    let mut lines = Vec::new();
    let mut evidenced = 0usize;
    // A mapped test this machine cannot run (a toolchain the image lacks) blocks the floor rather than
    // failing it, unless a test really failed.
    let (mut failed_any, mut blocked_any) = (false, false);
    let ready: BTreeMap<u32, &ready::Criterion> =
        snapshot.criteria.iter().map(|c| (c.id, c)).collect();
    for criterion in &snapshot.criteria {
        let Some(mapped) = evidence.criterion.iter().find(|c| c.id == criterion.id) else {
            lines.push(format!(
                "criterion {}: no evidence — the evidence map does not name it",
                criterion.id
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: Vec::new(),
            });
            continue;
        };
        let mut problems = Vec::new();
        let mut events = String::new();
        for text in &mapped.tests {
            let Ok(id) = TestId::parse(text) else {
                continue;
            };
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
                    problems.push(format!(
                        "`{id}` {}: {}",
                        outcome_words(outcome),
                        outcome.detail()
                    ))
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
                behaviour::write_atomic(&path, events.as_bytes())?;
                paths.insert(0, rel);
            }
            evidenced += 1;
            lines.push(format!(
                "criterion {}: evidenced ({})",
                criterion.id,
                paths.join(", ")
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: paths,
            });
        } else {
            lines.push(format!(
                "criterion {}: no evidence — {}",
                criterion.id,
                problems.join("; ")
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: Vec::new(),
            });
        }
    }
    for extra in evidence
        .criterion
        .iter()
        .filter(|c| !ready.contains_key(&c.id))
    {
        lines.push(format!(
            "criterion {}: the evidence map names it, but the Ready snapshot has no such criterion",
            extra.id
        ));
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
    Ok(Evidenced {
        floor,
        criteria,
        lines,
    })
}

fn outcome_words(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed(_) => "failed",
        Outcome::NotBuilt(_) => "did not build",
        Outcome::NotFound(_) => "was not found",
        Outcome::Ambiguous(_) => "is ambiguous",
        Outcome::NotRun(_) => "did not run",
        Outcome::Blocked(_) => "cannot run here",
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn go_result_lines_lose_their_duration() {
        assert_eq!(
            without_duration("--- PASS: TestX (0.00s)\n"),
            "--- PASS: TestX\n"
        );
        assert_eq!(
            without_duration("    --- FAIL: TestX/sub (12.5s)\n"),
            "    --- FAIL: TestX/sub\n"
        );
        assert_eq!(without_duration("=== RUN   TestX\n"), "=== RUN   TestX\n");
        assert_eq!(without_duration("value (3s)\n"), "value (3s)\n");
    }

    #[test]
    fn thread_ids_are_dropped_from_failures() {
        assert_eq!(
            without_thread_id("thread 'a_b' (31005) panicked at tests/x.rs:17:5:"),
            "thread 'a_b' panicked at tests/x.rs:17:5:"
        );
        assert_eq!(without_thread_id("assertion failed"), "assertion failed");
    }

    #[test]
    fn libtest_results_are_read_from_the_last_event() {
        let ok = vec![
            serde_json::json!({"type": "test", "event": "started", "name": "a"}),
            serde_json::json!({"type": "test", "event": "ok", "name": "a"}),
        ];
        assert_eq!(libtest_outcome(&ok), Outcome::Passed);
        let started = vec![serde_json::json!({"type": "test", "event": "started", "name": "a"})];
        assert!(matches!(libtest_outcome(&started), Outcome::NotRun(_)));
    }
}
