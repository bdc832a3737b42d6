//! cargo: a folder with a `Cargo.toml` of its own. A test id's rest is `[<target>[(<kind>)]/]<test path>`
//! (the path as libtest prints it); `cargo build --tests --keep-going --message-format=json` builds what
//! it can and names each test executable, and each executable that may hold a wanted test runs with
//! exactly those names, `--exact`, and libtest's JSON (`RUSTC_BOOTSTRAP=1` for the test binary only). A
//! lib and a bin of one name are two targets: a test both hold is ambiguous until its id says which.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{
    Exited, Job, LaunchError, Marker, Outcome, Package, Ran, Run, Runner, RunnerError, TestId,
    TestResult, exited, join,
};
use crate::sandbox::FetchPlan;
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, cargo_workspace, is_virtual_manifest, shown_dir};

mod canary;
mod cfg;
pub(crate) mod coverage;
mod harness;
mod test_code;

pub struct Cargo;

/// Why cargo's runner cannot read or run a package's tests.
#[derive(Debug, thiserror::Error)]
pub enum CargoError {
    #[error(
        "`{manifest}` is a virtual workspace manifest (no `[package]`), which has no tests of its own: name the member's folder (`crates/<member>:{rest}`)"
    )]
    VirtualManifest { manifest: String, rest: String },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Exited(#[from] Exited),
    #[error("{0}")]
    LibraryPath(#[source] std::env::JoinPathsError),
}

/// A cargo test id's rest that is not `[<target>[(<kind>)]/]<test path>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CargoIdError {
    #[error("doc tests are not evidence: move the example into a `#[test]`")]
    DocTest,
    #[error(
        "`{rest}` is not `[<target>[(<kind>)]/]<test path>` (kinds: lib, bin, test, example, bench)"
    )]
    Grammar { rest: String },
    #[error("`{path}` is not a test path as libtest prints it (`tests::name`)")]
    NotAPath { path: String },
}

impl Runner for Cargo {
    fn name(&self) -> &'static str {
        "cargo"
    }

    fn title(&self) -> &'static str {
        "cargo"
    }

    fn marker(&self) -> Marker {
        Marker {
            files: &["Cargo.toml"],
            above: false,
        }
    }

    fn tool(&self) -> Tool {
        Tool::Cargo
    }

    fn toolchain(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Vec<(String, OsString)>, RunnerError> {
        Ok(toolchains
            .rust_for(root, package.dir)?
            .map(|name| vec![("RUSTUP_TOOLCHAIN".to_string(), name.into())])
            .unwrap_or_default())
    }

    fn found_by<'a>(&self, rest: &'a str) -> &'a str {
        let path = rest.split_once('/').map_or(rest, |(_, path)| path);
        path.rsplit("::").next().unwrap_or(path)
    }

    fn check_id(&self, root: &Path, package: &Package, rest: &str) -> Result<(), RunnerError> {
        CargoTest::parse(rest)?;
        if is_virtual_manifest(root, package.dir) {
            return Err(CargoError::VirtualManifest {
                manifest: join(package.dir, "Cargo.toml"),
                rest: rest.to_string(),
            }
            .into());
        }
        Ok(())
    }

    fn fetch(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, RunnerError> {
        let workspace = cargo_workspace(root, package.dir);
        let manifest = root.join(package.dir).join("Cargo.toml");
        Ok(Some(FetchPlan {
            unit: workspace.clone(),
            argv: vec![
                "cargo".into(),
                "fetch".into(),
                "--quiet".into(),
                "--manifest-path".into(),
                manifest.display().to_string(),
            ],
            cwd: None,
            env: self.toolchain(toolchains, root, package)?,
            lock: join(&workspace, "Cargo.lock"),
            lends_lock: true,
            offline_first: true,
            without_committed_lock: None,
            install: None,
        }))
    }

    fn run_named(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        let (wanted, mut results) = super::read_ids(tests, CargoTest::parse);
        if wanted.is_empty() {
            return results;
        }
        let ids: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
        let built = match build(run, package, &[], run.timeout.max(Duration::from_secs(600))) {
            Ok(built) => built,
            Err(outcome) => {
                results.extend(super::all(&ids, outcome));
                return results;
            }
        };
        let library = match library_env(run, &built) {
            Ok(env) => env,
            Err(why) => {
                results.extend(super::all(&ids, Outcome::NotRun(why.to_string())));
                return results;
            }
        };
        // Run every executable that may hold a wanted test, with exactly those names. A target whose
        // executable gave no result at all is remembered with why: a test missing from it was not looked for.
        let mut gathered = Gathered::default();
        // Targets whose `harness = false` makes their output the test's own, not libtest's record.
        let harnessless = harnessless_targets(run.root, package);
        for (target, exe) in &built.executables {
            let names: BTreeSet<&str> = wanted
                .iter()
                .filter(|(_, spec)| spec.wants(target))
                .map(|(_, spec)| spec.path.as_str())
                .collect();
            if names.is_empty() || harnessless.contains(target) {
                continue;
            }
            // Each test runs alone, in a process of its own: one test's early end (an abort, an exit, a
            // signal, the time limit) decides nothing about another's, and a line a test prints in
            // libtest's form about another test is a test the run did not ask for.
            for name in names {
                let alone = BTreeSet::from([name]);
                match run_executable(run, package, (target, exe), &alone, &library) {
                    Ok((events, unfinished)) => {
                        if let Some(why) = unfinished {
                            gathered
                                .ended
                                .insert((target.clone(), name.to_string()), why);
                        }
                        for (name, list) in events {
                            gathered
                                .seen
                                .entry(name)
                                .or_default()
                                .push((target.clone(), list));
                        }
                    }
                    Err(why) => {
                        gathered
                            .ended
                            .insert((target.clone(), name.to_string()), why.to_string());
                    }
                }
            }
        }
        results.extend(classify(package, &wanted, &built, &harnessless, &gathered));
        results
    }

    fn harness(&self, diff: &super::harness::Diff) -> Vec<super::harness::Change> {
        harness::changes(diff)
    }

    fn canaries(&self) -> bool {
        true
    }

    fn canary(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
        on: &super::Canary,
    ) -> BTreeMap<TestId, Result<TestId, String>> {
        canary::canary(run.root, package, tests, on)
    }

    /// Files under a `tests/` folder, and `tests.rs` modules.
    fn is_test_file(&self, path: &str) -> bool {
        // The package's integration tests (`tests/`), and a test module in a file of its own
        // (`src/store/tests.rs`); a `src/tests/` folder is the crate's own code.
        let parts: Vec<&str> = path.split('/').collect();
        let (name, dirs) = parts.split_last().unwrap_or((&"", &[]));
        *name == "tests.rs" || dirs.first() == Some(&"tests")
    }

    fn cover_suite(
        &self,
        run: &Run,
        package: &Package,
        cover: &super::Cover,
    ) -> Result<super::Suite, RunnerError> {
        Ok(coverage::cover_suite(run, package, cover)?)
    }

    fn covers(&self) -> bool {
        true
    }

    fn coverage_words(&self) -> (&'static str, &'static str) {
        ("llvm-cov", "llvm-cov")
    }

    fn test_code(
        &self,
        root: &Path,
        package: &Package,
        paths: &[String],
    ) -> BTreeMap<String, super::TestCode> {
        test_code::test_code(root, package, paths)
    }

    /// An id names the suite's `<target>/<path>` when its path is the same and its target (if it names
    /// one) is that target.
    fn names_test(&self, rest: &str, name: &str) -> bool {
        let (Ok(id), Some((target, path))) = (CargoTest::parse(rest), name.split_once('/')) else {
            return false;
        };
        id.path == path && target_of(target).is_some_and(|t| id.wants(&t))
    }
}

/// A target as [`Target`]'s `Display` writes it (`calc(lib)`).
fn target_of(text: &str) -> Option<Target> {
    let (name, kind) = text.strip_suffix(')')?.split_once('(')?;
    Some(Target {
        name: name.to_string(),
        kind: TargetKind::from_word(kind)?,
    })
}

/// What the runs said of each wanted test, and where — a test missing from a target whose run ended
/// early was not looked for there.
#[derive(Default)]
struct Gathered {
    /// Each test's own events, by the name libtest gives it, with the target that held it.
    seen: BTreeMap<String, Vec<(Target, Vec<Value>)>>,
    /// Why a test's own run ended before it gave a result, by target and name.
    ended: BTreeMap<(Target, String), String>,
}

/// Each wanted test's result from what the runs gathered: passed or failed in the one target that held
/// it; not built, not found, not run or ambiguous, with why.
fn classify(
    package: &Package,
    wanted: &[(&TestId, CargoTest)],
    built: &Built,
    harnessless: &BTreeSet<Target>,
    gathered: &Gathered,
) -> BTreeMap<TestId, TestResult> {
    let shown = shown_dir(package.dir);
    let (seen, ended) = (&gathered.seen, &gathered.ended);
    let mut results = BTreeMap::new();
    for (test, spec) in wanted {
        let candidates: Vec<&(Target, Vec<Value>)> = seen
            .get(&spec.path)
            .map(|v| v.iter().filter(|(t, _)| spec.wants(t)).collect())
            .unwrap_or_default();
        let mut held_by = None;
        let outcome_and_events = match candidates.as_slice() {
            [] => {
                let runner_error = ended
                    .iter()
                    .find(|((t, name), _)| spec.wants(t) && *name == spec.path)
                    .map(|(_, why)| why.clone());
                let in_harnessless = harnessless.iter().find(|t| spec.wants(t));
                let own_broken: Vec<(&Target, &String)> =
                    built.broken.iter().filter(|(t, _)| spec.wants(t)).collect();
                let why = if spec.target.is_some() && !own_broken.is_empty() {
                    Outcome::NotBuilt(describe_broken(own_broken.into_iter()))
                } else if let Some(error) = runner_error {
                    Outcome::NotRun(format!("no result for `{}`: {error}", spec.path))
                } else if let Some(target) = in_harnessless {
                    Outcome::NotRun(format!(
                        "`{test}` is in a target without libtest's harness: its output is not a test result (`{target}` has `harness = false`)"
                    ))
                } else if !built.broken.is_empty() {
                    Outcome::NotBuilt(format!(
                        "no test `{}` ran; {}",
                        spec.path,
                        describe_broken(built.broken.iter())
                    ))
                } else if spec.target.is_some() && !built.executables.keys().any(|t| spec.wants(t))
                {
                    Outcome::NotFound(format!(
                        "`{shown}` has no test target `{}` (its targets: {})",
                        spec.target
                            .as_ref()
                            .map(|(n, k)| k
                                .map_or_else(|| n.clone(), |k| format!("{n}({})", k.word())))
                            .unwrap_or_default(),
                        built
                            .executables
                            .keys()
                            .map(Target::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                } else if spec.path.contains("::") {
                    Outcome::NotFound(format!("no test `{}` in `{shown}`", spec.path))
                } else {
                    Outcome::NotFound(format!(
                        "no test `{}` in `{shown}` (a test inside a module is named by its path, as `cargo test -- --list` prints it, such as `tests::{}`)",
                        spec.path, spec.path
                    ))
                };
                (why, Vec::new())
            }
            [(found, events)] => {
                // Another target the id may mean gave no result: it may hold the same test, so this
                // result cannot be said to be the id's.
                // (Only this test's own run counts: another test's crash in that target says nothing.)
                let unknown: Vec<String> = built
                    .broken
                    .keys()
                    .chain(
                        ended
                            .keys()
                            .filter(|(_, name)| *name == spec.path)
                            .map(|(t, _)| t),
                    )
                    .filter(|t| *t != found && spec.wants(t))
                    .map(|t| format!("`{t}`"))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if unknown.is_empty() {
                    held_by = Some(found.clone());
                    // A record that never ended (the process crashed, exited, or ran out of time) is
                    // no result, whatever it held so far.
                    let outcome = match ended.get(&(found.clone(), spec.path.clone())) {
                        Some(why) => Outcome::NotRun(format!(
                            "the test started but gave no whole result: {why}"
                        )),
                        None => libtest_outcome(events),
                    };
                    (outcome, events.iter().map(Value::to_string).collect())
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
                // An id without a target, or without its kind, runs on the base in the target that held it.
                pinned: held_by
                    .filter(|_| spec.target.as_ref().is_none_or(|(_, kind)| kind.is_none()))
                    .map(|t| format!("{t}/{}", spec.path)),
                note: None,
            },
        );
    }
    results
}

/// The package's targets with `harness = false` in its manifest (`[lib]`, `[[bin]]`, `[[test]]`,
/// `[[bench]]`, `[[example]]`): their executables are the test's own program, whose output is no record of
/// libtest's. `cargo metadata` does not say, so the manifest is read as data.
fn harnessless_targets(root: &Path, package: &Package) -> BTreeSet<Target> {
    let Ok(bytes) = crate::safe_fs::read(root, &join(package.dir, "Cargo.toml"), 1 << 20) else {
        return BTreeSet::new();
    };
    let Ok(manifest) = toml::from_str::<toml::Table>(&String::from_utf8_lossy(&bytes)) else {
        return BTreeSet::new();
    };
    let package_name = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let off = |t: &toml::Value| t.get("harness").and_then(toml::Value::as_bool) == Some(false);
    let mut found = BTreeSet::new();
    if let Some(lib) = manifest.get("lib").filter(|l| off(l)) {
        let name = lib
            .get("name")
            .and_then(toml::Value::as_str)
            .map_or_else(|| package_name.replace('-', "_"), str::to_string);
        found.insert(Target {
            name,
            kind: TargetKind::Lib,
        });
    }
    for (table, kind) in [
        ("bin", TargetKind::Bin),
        ("test", TargetKind::Test),
        ("bench", TargetKind::Bench),
        ("example", TargetKind::Example),
    ] {
        for target in manifest
            .get(table)
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter(|t| off(t))
        {
            if let Some(name) = target.get("name").and_then(toml::Value::as_str) {
                found.insert(Target {
                    name: name.to_string(),
                    kind,
                });
            }
        }
    }
    found
}

/// What `cargo build --tests` made of a package: its test executables by target (name and kind: a lib
/// and a bin of one name are two targets), and the targets that failed with their first error.
struct Built {
    executables: BTreeMap<Target, PathBuf>,
    broken: BTreeMap<Target, String>,
    /// The package's own bin executables (built for its integration tests' `CARGO_BIN_EXE_*`).
    bins: BTreeMap<Target, PathBuf>,
    /// The folders of the library path its test executables need (see [`library_env`]).
    library: Vec<PathBuf>,
    /// Whether something links Rust's std as a dylib (the toolchain's folder is needed too).
    dynamic: bool,
}

/// `cargo build --tests` of the package, with `extra` arguments (the coverage floor's `--config`).
fn build(
    run: &Run,
    package: &Package,
    extra: &[String],
    timeout: Duration,
) -> Result<Built, Outcome> {
    let shown = shown_dir(package.dir);
    let dir = run.root.join(package.dir);
    let manifest = dir.join("Cargo.toml").display().to_string();
    let argv = [
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
    .into_iter()
    .chain(extra.iter().cloned())
    .collect();
    let built = run
        .launcher
        .launch(Job {
            what: format!("building the tests of `{shown}` (cargo build --tests)"),
            argv,
            cwd: run.root.to_path_buf(),
            env: run.env.clone(),
            timeout,
            report: None,
            stdin: Vec::new(),
        })
        .map_err(|why| Outcome::NotRun(why.to_string()))?;
    let mut executables: BTreeMap<Target, PathBuf> = BTreeMap::new();
    let mut bins: BTreeMap<Target, PathBuf> = BTreeMap::new();
    let mut broken: BTreeMap<Target, String> = BTreeMap::new();
    let mut linked: BTreeSet<PathBuf> = BTreeSet::new();
    let mut dynamic = false;
    let package_root = dir.canonicalize().unwrap_or_else(|_| dir.clone());
    for line in String::from_utf8_lossy(&built.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        // Where build scripts put native libraries, and whether anything links Rust's std as a
        // dylib: what `cargo test` puts on the library path.
        if message.get("reason").and_then(Value::as_str) == Some("build-script-executed") {
            for path in message
                .get("linked_paths")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let path = path.split_once('=').map_or(path, |(_, p)| p);
                linked.insert(PathBuf::from(path));
            }
        }
        if message
            .pointer("/target/kind")
            .and_then(Value::as_array)
            .is_some_and(|kinds| kinds.iter().any(|k| k == "dylib"))
        {
            dynamic = true;
        }
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
        dynamic |= kinds.contains(&"proc-macro");
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
            Some("compiler-artifact") if kind == TargetKind::Bin => {
                if let Some(exe) = message.get("executable").and_then(Value::as_str) {
                    bins.insert(target, PathBuf::from(exe));
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
        return Err(Outcome::NotBuilt(why));
    }
    // Native library folders inside the build's own folder, as cargo keeps them (never one elsewhere).
    let profile_dir = executables
        .values()
        .next()
        .and_then(|exe| exe.parent())
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    let mut library: Vec<PathBuf> = Vec::new();
    if let Some(profile_dir) = &profile_dir {
        library.extend(linked.into_iter().filter(|p| p.starts_with(profile_dir)));
        if dynamic || !library.is_empty() {
            library.insert(0, profile_dir.join("deps"));
            library.insert(1, profile_dir.clone());
        }
    }
    Ok(Built {
        executables,
        broken,
        bins,
        library,
        dynamic,
    })
}

/// The library path a test executable needs, as `cargo test` gives it: the build's folders and the
/// native ones its build scripts named, and — when something links Rust's std as a dylib (a proc-macro
/// crate's own tests, a `dylib` crate) — the toolchain's library folder (`rustc --print
/// target-libdir`, asked as the process's uid). Empty when nothing needs one.
fn library_env(run: &Run, built: &Built) -> Result<Vec<(String, std::ffi::OsString)>, CargoError> {
    if built.library.is_empty() {
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if built.dynamic {
        let ran = run.launcher.launch(Job {
            what: "rustc --print target-libdir".to_string(),
            argv: ["rustc", "--print", "target-libdir"]
                .map(String::from)
                .to_vec(),
            cwd: run.root.to_path_buf(),
            env: run.env.clone(),
            timeout: Duration::from_secs(60),
            report: None,
            stdin: Vec::new(),
        })?;
        if ran.code != Some(0) {
            return Err(Exited::of("`rustc --print target-libdir`", &ran, run.root).into());
        }
        let dir = String::from_utf8_lossy(&ran.stdout).trim().to_string();
        if !dir.is_empty() {
            dirs.push(PathBuf::from(dir));
        }
    }
    dirs.extend(built.library.iter().cloned());
    let joined = std::env::join_paths(&dirs).map_err(CargoError::LibraryPath)?;
    Ok(vec![("LD_LIBRARY_PATH".to_string(), joined)])
}

/// Each test's own events, by the name libtest gives it.
type Events = BTreeMap<String, Vec<Value>>;

/// What a test executable's stdout says, read as libtest's record.
#[derive(Debug)]
enum Record {
    /// One frame, `suite started` … `suite ok|failed`, whose counts agree with its events and the exit
    /// status.
    Whole(Events),
    /// The frame never ended (a crash, an exit, the time limit): the events it holds so far.
    Unfinished(Events),
    /// Lines that cannot be libtest's own: what does not add up.
    Forged(String),
}

/// Reads libtest's JSON record from a test executable's stdout. Events count only inside one `suite
/// started` … `suite ok|failed` frame; each test has exactly one `started` and one result; no event names
/// a test that was not asked for (`names`, when the run named its tests); the frame's `passed + failed +
/// ignored` (and its `test_count`) equal the results seen; nothing follows the end; the exit status agrees.
/// A test can still write to fd 1 itself: these counts are what make such a line show.
fn read_record(stdout: &str, names: Option<&BTreeSet<&str>>, code: Option<i32>) -> Record {
    let mut events: Events = BTreeMap::new();
    let (mut began, mut end): (Option<Value>, Option<Value>) = (None, None);
    for line in stdout.lines() {
        let Ok(mut event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(kind) = event
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        let what = event
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if end.is_some() && (kind == "suite" || kind == "test") {
            return Record::Forged(format!("a `{kind}` line after the suite's end"));
        }
        match (kind.as_str(), what.as_str()) {
            ("suite", "started") if began.is_none() => began = Some(event),
            ("suite", "started") => return Record::Forged("a second `suite started`".to_string()),
            ("suite", "ok" | "failed") if began.is_some() => end = Some(event),
            ("suite", _) => return Record::Forged(format!("a `suite {what}` out of its frame")),
            ("test", _) if began.is_none() => {
                return Record::Forged("a test event before `suite started`".to_string());
            }
            ("test", _) => {
                let Some(name) = event
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                else {
                    return Record::Forged("a test event without a name".to_string());
                };
                if names.is_some_and(|n| !n.contains(name.as_str())) {
                    return Record::Forged(format!(
                        "an event of `{name}`, which was not asked for"
                    ));
                }
                if let Some(object) = event.as_object_mut() {
                    object.shift_remove("exec_time");
                }
                events.entry(name).or_default().push(event);
            }
            _ => {}
        }
    }
    let Some(end) = end else {
        return Record::Unfinished(events);
    };
    let mut counted = BTreeMap::from([("ok", 0u64), ("failed", 0), ("ignored", 0)]);
    for (name, list) in &events {
        let of = |e: &str| {
            list.iter()
                .filter(|v| v.get("event").and_then(Value::as_str) == Some(e))
                .count()
        };
        let results = of("ok") + of("failed") + of("ignored");
        // libtest also says when a test runs long (`timeout`): a warning, not a result.
        if of("started") != 1 || results != 1 || list.len() != 2 + of("timeout") {
            return Record::Forged(format!(
                "`{name}` has {} `started` and {results} result events",
                of("started")
            ));
        }
        for (word, n) in &mut counted {
            *n += of(word) as u64;
        }
    }
    let number = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64);
    let said = (
        number(&end, "passed"),
        number(&end, "failed"),
        number(&end, "ignored"),
    );
    let seen = (
        Some(counted["ok"]),
        Some(counted["failed"]),
        Some(counted["ignored"]),
    );
    if said != seen {
        return Record::Forged(format!(
            "the suite counts {said:?} passed, failed, ignored but its events {seen:?}"
        ));
    }
    let results = counted.values().sum::<u64>();
    if began
        .as_ref()
        .and_then(|b| number(b, "test_count"))
        .is_some_and(|n| n != results)
    {
        return Record::Forged("`suite started` announced another number of tests".to_string());
    }
    let failed = counted["failed"] > 0;
    let status_agrees = match code {
        Some(0) => !failed && end.get("event").and_then(Value::as_str) == Some("ok"),
        Some(_) => failed,
        None => false,
    };
    if !status_agrees {
        return Record::Forged(format!(
            "the executable exited with {} after the suite said `{}`",
            code.map_or("a signal".to_string(), |c| c.to_string()),
            end.get("event").and_then(Value::as_str).unwrap_or("")
        ));
    }
    Record::Whole(events)
}

/// Runs one test executable with exactly `names` and returns each test's own events, timing removed, and
/// why the executable did not finish when it did not (it crashed or ran out of time: a test it did not
/// report was not looked for); `Err` when it could not run.
fn run_executable(
    run: &Run,
    package: &Package,
    (target, exe): (&Target, &Path),
    names: &BTreeSet<&str>,
    library: &[(String, std::ffi::OsString)],
) -> Result<(Events, Option<String>), LaunchError> {
    let (record, ran) = launch_executable(
        run,
        package,
        (target, exe),
        Asked {
            names,
            whole: false,
            skip: &BTreeSet::new(),
            env: library.to_vec(),
            timeout: run.timeout,
        },
    )?;
    let unfinished = match &record {
        Record::Unfinished(_) => Some(exited(
            &format!("the test executable of target `{target}`"),
            &ran,
            run.root,
        )),
        Record::Forged(what) => Some(format!(
            "the test output does not match libtest's record ({what}): its events are not a test result"
        )),
        Record::Whole(_) => None,
    };
    let events = match record {
        Record::Whole(events) | Record::Unfinished(events) => events,
        Record::Forged(_) => BTreeMap::new(),
    };
    Ok((events, unfinished))
}

/// What a run of a test executable asks for.
struct Asked<'a> {
    /// The tests it may report: the ones named on its command line (`--exact`), or — `whole` — every
    /// test the executable listed, run without naming them.
    names: &'a BTreeSet<&'a str>,
    whole: bool,
    /// Tests a whole run leaves out (`--skip`, exact): the ones that run alone.
    skip: &'a BTreeSet<&'a str>,
    /// Variables beside libtest's own (the coverage floor's `LLVM_PROFILE_FILE`).
    env: Vec<(String, std::ffi::OsString)>,
    timeout: Duration,
}

/// Runs a test executable as asked and reads its stdout as libtest's record.
fn launch_executable(
    run: &Run,
    package: &Package,
    (target, exe): (&Target, &Path),
    asked: Asked,
) -> Result<(Record, Ran), LaunchError> {
    let shown = shown_dir(package.dir);
    let mut argv = vec![exe.display().to_string()];
    if asked.whole {
        for name in asked.skip {
            argv.extend(["--skip".to_string(), name.to_string()]);
        }
    } else {
        argv.extend(asked.names.iter().map(|n| n.to_string()));
    }
    argv.push("--exact".into());
    argv.extend(["-Z", "unstable-options", "--format", "json"].map(String::from));
    // Tests named one by one run alone; a whole suite runs as `cargo test` runs it.
    if !asked.whole {
        argv.extend(["--test-threads", "1"].map(String::from));
    }
    // The test binary alone reads libtest's JSON, unstable: cargo's own variables are the build's.
    let mut env = vec![("RUSTC_BOOTSTRAP".to_string(), "1".into())];
    env.extend(asked.env);
    let ran: Ran = run.launcher.launch(Job {
        what: format!("running the tests of `{shown}`, target `{target}`"),
        argv,
        cwd: run.root.join(package.dir),
        env,
        timeout: asked.timeout,
        report: None,
        stdin: Vec::new(),
    })?;
    let record = read_record(
        &String::from_utf8_lossy(&ran.stdout),
        Some(asked.names),
        ran.code,
    );
    Ok((record, ran))
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
            let message = events
                .iter()
                .rev()
                .find_map(|e| e.get("message").and_then(Value::as_str));
            Outcome::Failed(match (rust_failure(stdout), message) {
                // `#[should_panic]` that did not panic, or panicked otherwise: libtest's own words.
                (failure, Some(message)) if failure == "the test failed" => message.to_string(),
                (failure, Some(message)) if !failure.contains(message) => {
                    format!("{message}: {failure}")
                }
                (failure, _) => failure,
            })
        }
        Some("ignored") => Outcome::NotRun("the test is ignored".to_string()),
        _ => Outcome::NotRun(
            "the test started but gave no result (a crash or a timeout)".to_string(),
        ),
    }
}

/// [`rust_failure`] of a failed test's captured output, for the runners' snapshot.
#[cfg(test)]
pub(super) fn failure_of(stdout: &str) -> String {
    rust_failure(stdout)
}

/// What a `cargo test` user reads first of a failed test: the panic's message — `assertion `left ==
/// right` failed` with its `left:`/`right:` lines, or whatever the test panicked with — and where (`at
/// src/lib.rs:15:9`); the lines are joined with `; `, the thread's id left out.
fn rust_failure(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().collect();
    let Some(at) = lines.iter().position(|l| l.contains(" panicked at ")) else {
        // A test that returned `Err` prints `Error: …`.
        return lines
            .iter()
            .find(|l| l.starts_with("Error: ") || l.contains("assert"))
            .map_or_else(|| "the test failed".to_string(), |l| l.trim().to_string());
    };
    let head = without_thread_id(lines[at]);
    let after = head
        .split_once(" panicked at ")
        .map_or("", |(_, rest)| rest);
    // `panicked at src/lib.rs:15:9:` (the message on the lines after), or the older
    // `panicked at 'message', src/lib.rs:15:9`.
    let (location, inline) = match after.strip_suffix(':') {
        Some(location) => (location.to_string(), None),
        None => match after.rsplit_once("', ") {
            Some((message, location)) => (
                location.to_string(),
                Some(message.trim_start_matches('\'').to_string()),
            ),
            None => (after.to_string(), None),
        },
    };
    let mut message: Vec<String> = inline.into_iter().collect();
    message.extend(
        lines[at + 1..]
            .iter()
            .take_while(|l| {
                !l.starts_with("note: ")
                    && !l.starts_with("stack backtrace:")
                    && !l.contains(" panicked at ")
            })
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .map(str::to_string),
    );
    if message.is_empty() {
        format!("panicked at {location}")
    } else {
        format!("{} (at {location})", message.join("; "))
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

/// The kind of a cargo target, as a test id qualifies it: `lib(lib)`, `notes(bin)`, `cli(test)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TargetKind {
    Lib,
    Bin,
    Test,
    Example,
    Bench,
}

impl TargetKind {
    pub fn word(self) -> &'static str {
        match self {
            TargetKind::Lib => "lib",
            TargetKind::Bin => "bin",
            TargetKind::Test => "test",
            TargetKind::Example => "example",
            TargetKind::Bench => "bench",
        }
    }

    fn from_word(word: &str) -> Option<TargetKind> {
        [
            TargetKind::Lib,
            TargetKind::Bin,
            TargetKind::Test,
            TargetKind::Example,
            TargetKind::Bench,
        ]
        .into_iter()
        .find(|k| k.word() == word)
    }

    /// The kind of a target in cargo's JSON messages (`target.kind`: `["lib"]`, `["rlib", "cdylib"]`,
    /// `["proc-macro"]`, `["bin"]`, `["test"]` …); `None` for a build script.
    pub fn of_cargo(kinds: &[&str]) -> Option<TargetKind> {
        let first = kinds.first()?;
        match *first {
            "lib" | "rlib" | "dylib" | "cdylib" | "staticlib" | "proc-macro" => {
                Some(TargetKind::Lib)
            }
            other => TargetKind::from_word(other),
        }
    }
}

/// A cargo target by name and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub name: String,
    pub kind: TargetKind,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name, self.kind.word())
    }
}

/// A cargo test id's rest: `[<target>[(<kind>)]/]<test path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoTest {
    pub target: Option<(String, Option<TargetKind>)>,
    pub path: String,
}

impl CargoTest {
    pub fn parse(rest: &str) -> Result<CargoTest, CargoIdError> {
        // libtest names a doc test `src/lib.rs - foo (line 12)`.
        if rest.contains(" - ") && rest.ends_with(')') && rest.contains("(line ") {
            return Err(CargoIdError::DocTest);
        }
        let Some((prefix, path)) = rest.split_once('/') else {
            return CargoTest::path_only(rest);
        };
        let grammar = || CargoIdError::Grammar {
            rest: rest.to_string(),
        };
        let (name, kind) = match prefix.split_once('(') {
            Some((name, kind)) => {
                let kind = kind
                    .strip_suffix(')')
                    .and_then(TargetKind::from_word)
                    .ok_or_else(grammar)?;
                (name, Some(kind))
            }
            None => (prefix, None),
        };
        let target_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !target_name {
            return Err(grammar());
        }
        let mut test = CargoTest::path_only(path).map_err(|_| grammar())?;
        test.target = Some((name.to_string(), kind));
        Ok(test)
    }

    fn path_only(path: &str) -> Result<CargoTest, CargoIdError> {
        // A leading `-` would reach libtest as one of its options (`--include-ignored`).
        if path.is_empty()
            || path.split("::").any(str::is_empty)
            || path.starts_with('-')
            || path.contains('/')
            || path.chars().any(char::is_whitespace)
        {
            return Err(CargoIdError::NotAPath {
                path: path.to_string(),
            });
        }
        Ok(CargoTest {
            target: None,
            path: path.to_string(),
        })
    }

    /// Whether a target is one this id may mean.
    pub fn wants(&self, target: &Target) -> bool {
        match &self.target {
            None => true,
            Some((name, kind)) => *name == target.name && kind.is_none_or(|k| k == target.kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_ids_name_a_target_by_name_and_kind() {
        let t = CargoTest::parse("cli/adds_note").expect("target");
        assert_eq!(t.target, Some(("cli".into(), None)));
        assert_eq!(t.path, "adds_note");
        let t = CargoTest::parse("lib(test)/x").expect("kind");
        assert_eq!(t.target, Some(("lib".into(), Some(TargetKind::Test))));
        let t = CargoTest::parse("my-crate(bin)/tests::offset").expect("bin");
        assert!(t.wants(&Target {
            name: "my-crate".into(),
            kind: TargetKind::Bin
        }));
        assert!(!t.wants(&Target {
            name: "my-crate".into(),
            kind: TargetKind::Lib
        }));
        assert!(CargoTest::parse("x(widget)/t").is_err());
        assert!(CargoTest::parse("a::b/t").is_err());
        assert!(CargoTest::parse("--include-ignored").is_err());
        let doc = CargoTest::parse("src/lib.rs - foo (line 12)").expect_err("doc");
        assert!(
            doc.to_string().starts_with("doc tests are not evidence"),
            "{doc}"
        );
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

    #[test]
    fn a_rust_failure_is_its_panic_message_and_where() {
        let assert = "\nthread 'tests::breaks' (31005) panicked at src/lib.rs:15:9:\nassertion `left == right` failed: one and one\n  left: 2\n right: 3\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            rust_failure(assert),
            "assertion `left == right` failed: one and one; left: 2; right: 3 (at src/lib.rs:15:9)"
        );
        let message = "thread 'tests::x' panicked at tests/cli.rs:8:5:\nthe store is empty\n";
        assert_eq!(
            rust_failure(message),
            "the store is empty (at tests/cli.rs:8:5)"
        );
        let old = "thread 'x' panicked at 'boom', src/main.rs:3:5\nnote: …\n";
        assert_eq!(rust_failure(old), "boom (at src/main.rs:3:5)");
        assert_eq!(rust_failure(""), "the test failed");
    }

    #[test]
    fn thread_ids_are_dropped_from_failures() {
        assert_eq!(
            without_thread_id("thread 'a_b' (31005) panicked at tests/x.rs:17:5:"),
            "thread 'a_b' panicked at tests/x.rs:17:5:"
        );
        assert_eq!(without_thread_id("assertion failed"), "assertion failed");
    }
}
