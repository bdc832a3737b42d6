//! A cargo package's whole suite, once, instrumented (the coverage floor): `cargo build --tests` with
//! `-C instrument-coverage` added through `--config` (cargo joins configuration arrays, where `RUSTFLAGS`
//! would replace the repository's own flags), into a target folder of its own; every test executable of
//! the package listed (`--list --format terse`), then run — its mapped tests each alone, in a process of
//! their own as the tests floor runs them, the rest together — writing its profiles into a folder of its
//! own (`LLVM_PROFILE_FILE=<folder>/%p-%m.profraw`, which the package's own binaries inherit when a test
//! runs them); `llvm-profdata merge -sparse` and `llvm-cov export -format=lcov` over every test
//! executable that ran and the package's bin executables — all of it as the sandbox uid, offline, within
//! one deadline. libtest's record rules apply to each run, "asked" being the tests it was given: a run
//! that did not end, or whose record does not add up, gives no number. The mapped tests' results are read
//! from their own runs, so no test runs twice.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::{
    Cover, Exited, Job, LaunchError, Lines, Outcome, Package, Run, Suite, TestId, exited, join,
};
use super::cfg::{Cfg, printed};
use super::{
    Asked, CargoTest, Gathered, Record, build, classify, describe_broken, harnessless_targets,
    launch_executable, library_env, libtest_outcome,
};
use crate::sandbox::toolchain::{relative_join, shown_dir};

/// Why the instrumented suite of a cargo package gives no coverage, or why its coverage cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error("no LLVM tools to read its coverage with")]
    NoLlvm,
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Exited(#[from] Exited),
    #[error(transparent)]
    Cargo(#[from] super::CargoError),
    #[error(
        "target `{target}` of `{shown}` ended before its tests finished ({how}): no coverage from a partial profile"
    )]
    TargetEnded {
        target: String,
        shown: String,
        how: String,
    },
    #[error(
        "{test} in `{shown}` ended the run before it finished ({how}): no coverage from a partial profile — fix the test"
    )]
    TestEnded {
        test: String,
        shown: String,
        how: String,
    },
    #[error(
        "one of {tests} in `{shown}` ended the run before it finished ({how}; they were running side by side): no coverage from a partial profile — fix the test"
    )]
    OneOfEnded {
        tests: String,
        shown: String,
        how: String,
    },
    #[error(
        "the test output of target `{target}` of `{shown}` does not match libtest's record ({what}): its run gives no coverage to trust"
    )]
    Forged {
        target: String,
        shown: String,
        what: String,
    },
    #[error(
        "the test list of target `{target}` of `{shown}` is over {mib} MiB, more than aayu reads of a process"
    )]
    ListTooLong {
        target: String,
        shown: String,
        mib: u64,
    },
    #[error(
        "`{rel}` is not a file of the repository aayu can read as data (a link out of it, or over 1 MiB): aayu reads the cargo configuration to add its coverage flags, and never runs cargo as root for it"
    )]
    ConfigOutside { rel: String },
    #[error("the cargo configuration cannot be read as data: {0}")]
    Config(#[source] cargo_config2::Error),
    #[error("llvm-cov's report is over {mib} MiB: aayu reads no more of it")]
    ReportTooLong { mib: u64 },
    #[error("llvm-cov's summary is not JSON aayu reads: {0}")]
    Summary(#[source] serde_json::Error),
    #[error(
        "the build names a file `{0}`, with a control character: aayu refuses such a name, and reads no report that holds it"
    )]
    ControlCharacter(String),
    #[error("llvm-cov's report names `{0}`, which its summary does not: its report is not read")]
    Unsummarised(String),
    #[error("llvm-cov's report names `{0}` twice: its report is not read")]
    Twice(String),
}

/// The flags added: as a TOML array, for `--config`.
const INSTRUMENT: &str = r#"["-C", "instrument-coverage"]"#;

/// How much of the repository's cargo configuration file is read.
const CONFIG_CAP: u64 = 1 << 20;

pub(super) fn cover_suite(
    run: &Run,
    package: &Package,
    cover: &Cover,
) -> Result<Suite, CoverageError> {
    let Some(llvm) = cover.llvm else {
        return Err(CoverageError::NoLlvm);
    };
    let shown = shown_dir(package.dir);
    let deadline = Instant::now() + run.timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let over = |during: &str| over(run, shown, during);
    let config = instrument_config(run, cover, &llvm.host, left().min(Duration::from_secs(60)))?;
    let built = match build(run, package, &config, left()) {
        Ok(built) => built,
        Err(_) if left().is_zero() => return Ok(over("building its tests (cargo build --tests)")),
        Err(outcome) => {
            return Ok(Suite::broken(format!(
                "the tests of `{shown}` did not build (cargo build --tests, instrumented): {}",
                outcome.detail()
            )));
        }
    };
    if !built.broken.is_empty() {
        return Ok(Suite::broken(describe_broken(built.broken.iter())));
    }
    let harnessless = harnessless_targets(run.root, package);
    let (wanted, refused) = super::super::read_ids(cover.mapped, CargoTest::parse);
    let suite_run = SuiteRun {
        run,
        package,
        shown,
        library: library_env(run, &built)?,
        wanted: &wanted,
        deadline,
    };
    let mut suite = Suite::default();
    let mut gathered = Gathered::default();
    let mut profiles: Vec<PathBuf> = Vec::new();
    let mut objects: Vec<PathBuf> = Vec::new();
    for (n, (target, exe)) in built.executables.iter().enumerate() {
        // A target without libtest's harness prints its own output, which is no record to read.
        if harnessless.contains(target) {
            suite.notes.push(format!(
                "not run: target `{target}` of `{shown}` (`harness = false`: its output is no libtest record)"
            ));
            continue;
        }
        match suite_run.target(n, (target, exe.as_path()), &mut suite, &mut gathered)? {
            Profiled::Into(folder) => profiles.push(folder),
            Profiled::Not(instead) => return Ok(instead),
        }
        objects.push(exe.clone());
    }
    suite.mapped = refused;
    suite
        .mapped
        .extend(classify(package, &wanted, &built, &harnessless, &gathered));
    // Every changed Rust file of the change: its lines count wherever the package's tests ran them.
    let sources: Vec<PathBuf> = cover
        .changed
        .iter()
        .filter(|p| p.ends_with(".rs") && crate::safe_fs::is_regular(run.root, p))
        .map(|p| run.root.join(p))
        .collect();
    if sources.is_empty() {
        return Ok(suite);
    }
    if objects.is_empty() {
        suite.uncounted = Some(
            "no test executable with libtest's harness ran in it (only `harness = false` targets)"
                .to_string(),
        );
        return Ok(suite);
    }
    objects.extend(built.bins.values().cloned());
    match lines(run, package, llvm, (&profiles, &objects, &sources), &left) {
        Ok(lines) => suite.lines = lines,
        Err(_) if left().is_zero() => {
            return Ok(over("reading the profiles (llvm-profdata, llvm-cov)"));
        }
        Err(why) => return Ok(Suite::blocked(why.to_string())),
    }
    Ok(suite)
}

/// The suite of a run past `[verify] suite_timeout_s`, with what it was doing.
fn over(run: &Run, shown: &str, during: &str) -> Suite {
    Suite::blocked(format!(
        "the instrumented suite of `{shown}` ran past `[verify] suite_timeout_s` ({} s) while {during}",
        run.timeout.as_secs()
    ))
}

/// What a whole-suite run shares between its test executables.
struct SuiteRun<'a> {
    run: &'a Run<'a>,
    package: &'a Package<'a>,
    shown: &'a str,
    /// The library path the executables need ([`library_env`]).
    library: Vec<(String, std::ffi::OsString)>,
    /// The mapped tests of the package, read by cargo's grammar.
    wanted: &'a [(&'a TestId, CargoTest)],
    /// When the suite's time ends.
    deadline: Instant,
}

/// Where one test executable's profiles went, or the suite to report instead (it gave no coverage to
/// trust).
enum Profiled {
    Into(PathBuf),
    Not(Suite),
}

impl SuiteRun<'_> {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Runs one test executable, instrumented: its mapped tests alone, each in a process of its own, as
    /// the tests floor runs them (one test's code cannot write another's result), and the rest together;
    /// every record read into the suite.
    fn target(
        &self,
        n: usize,
        (target, exe): (&super::Target, &Path),
        suite: &mut Suite,
        gathered: &mut Gathered,
    ) -> Result<Profiled, CoverageError> {
        let (run, package, shown) = (self.run, self.package, self.shown);
        let listed = match list(run, package, (target, exe), &self.library, self.left()) {
            Ok(listed) => listed,
            Err(_) if self.left().is_zero() => {
                return Ok(Profiled::Not(over(
                    run,
                    shown,
                    &format!("listing the tests of target `{target}`"),
                )));
            }
            Err(why) => return Ok(Profiled::Not(Suite::broken(why.to_string()))),
        };
        let mapped: BTreeSet<&str> = self
            .wanted
            .iter()
            .filter(|(_, spec)| spec.wants(target) && listed.contains(&spec.path))
            .map(|(_, spec)| spec.path.as_str())
            .collect();
        let rest: BTreeSet<&str> = listed
            .iter()
            .map(String::as_str)
            .filter(|name| !mapped.contains(name))
            .collect();
        let folder = run.launcher.scratch(&format!("profraw-{n}"))?;
        let mut profile = self.library.clone();
        profile.push((
            "LLVM_PROFILE_FILE".to_string(),
            folder.join("%p-%m.profraw").into_os_string(),
        ));
        let mut runs: Vec<(BTreeSet<&str>, bool)> = Vec::new();
        // An executable without tests runs too: its code's lines read uncovered, as Go 1.22's do.
        if !rest.is_empty() || mapped.is_empty() {
            runs.push((rest, true));
        }
        runs.extend(mapped.iter().map(|name| (BTreeSet::from([*name]), false)));
        let none = BTreeSet::new();
        for (names, whole) in &runs {
            let (record, ran) = match launch_executable(
                run,
                package,
                (target, exe),
                Asked {
                    names,
                    whole: *whole,
                    skip: if *whole { &mapped } else { &none },
                    env: profile.clone(),
                    timeout: self.left(),
                },
            ) {
                Ok(ran) => ran,
                Err(why @ LaunchError::Start { .. }) => return Err(why.into()),
                Err(why) => return Ok(Profiled::Not(Suite::broken(why.to_string()))),
            };
            if ran.timed_out {
                let what: Vec<&str> = names.iter().copied().collect();
                return Ok(Profiled::Not(over(
                    run,
                    shown,
                    &if *whole {
                        format!("running target `{target}`")
                    } else {
                        format!("running `{target}/{}`", what.join(", "))
                    },
                )));
            }
            if ran.truncated {
                return Ok(Profiled::Not(Suite::blocked(format!(
                    "the test output of target `{target}` of `{shown}` is over {} MiB, more than aayu reads of a process",
                    super::super::REPORT_CAP >> 20
                ))));
            }
            if let Err(why) = take_record(record, &ran, (target, shown), run.root, suite, gathered)
            {
                return Ok(Profiled::Not(Suite::broken(why.to_string())));
            }
        }
        if !has_profile(&folder) {
            return Ok(Profiled::Not(Suite::blocked(format!(
                "the test executable of target `{target}` of `{shown}` ran and wrote no `.profraw`: it is not instrumented (a `RUSTFLAGS` passed to the sandbox replaces cargo's configured flags)"
            ))));
        }
        Ok(Profiled::Into(folder))
    }
}

/// A run's record into the suite: each test's result and its own events (`Whole`); or why the run gives
/// no coverage to trust — every test that had started and not ended (they run side by side), or what does
/// not add up.
fn take_record(
    record: Record,
    ran: &super::super::Ran,
    (target, shown): (&super::Target, &str),
    root: &Path,
    suite: &mut Suite,
    gathered: &mut Gathered,
) -> Result<(), CoverageError> {
    match record {
        Record::Whole(events) => {
            for (name, list) in events {
                let failed = match libtest_outcome(&list) {
                    Outcome::Failed(why) => Some(why),
                    _ => None,
                };
                suite.tests.insert(format!("{target}/{name}"), failed);
                gathered
                    .seen
                    .entry(name)
                    .or_default()
                    .push((target.clone(), list));
            }
            Ok(())
        }
        Record::Unfinished(events) => {
            let how = exited("its test executable", ran, root);
            let running: Vec<String> = events
                .iter()
                .filter(|(_, list)| !has_result(list))
                .map(|(name, _)| format!("`{target}/{name}`"))
                .collect();
            let shown = shown.to_string();
            Err(match running.as_slice() {
                [] => CoverageError::TargetEnded {
                    target: target.to_string(),
                    shown,
                    how,
                },
                [one] => CoverageError::TestEnded {
                    test: one.clone(),
                    shown,
                    how,
                },
                many => CoverageError::OneOfEnded {
                    tests: many.join(", "),
                    shown,
                    how,
                },
            })
        }
        Record::Forged(what) => Err(CoverageError::Forged {
            target: target.to_string(),
            shown: shown.to_string(),
            what,
        }),
    }
}

impl Suite {
    fn broken(why: String) -> Suite {
        Suite {
            broken: Some(why),
            ..Suite::default()
        }
    }

    fn blocked(why: String) -> Suite {
        Suite {
            blocked: Some(why),
            ..Suite::default()
        }
    }
}

/// Whether a test's events end in a result.
fn has_result(events: &[Value]) -> bool {
    events.iter().any(|e| {
        matches!(
            e.get("event").and_then(Value::as_str),
            Some("ok" | "failed" | "ignored")
        )
    })
}

/// Whether a folder holds a profile file (a regular file, never a link).
fn has_profile(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_type().is_ok_and(|t| t.is_file())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| n.ends_with(".profraw"))
        })
    })
}

/// Every test an executable lists (`--list --format terse`: `name: test`), as the sandbox uid.
fn list(
    run: &Run,
    package: &Package,
    (target, exe): (&super::Target, &Path),
    library: &[(String, std::ffi::OsString)],
    timeout: Duration,
) -> Result<BTreeSet<String>, CoverageError> {
    let shown = shown_dir(package.dir);
    // The listing is instrumented too: its profile goes where nobody reads it.
    let folder = run.launcher.scratch("profraw-list")?;
    let ran = run.launcher.launch(Job {
        what: format!("listing the tests of `{shown}`, target `{target}`"),
        argv: vec![
            exe.display().to_string(),
            "--list".into(),
            "--format".into(),
            "terse".into(),
        ],
        cwd: run.root.join(package.dir),
        env: library
            .iter()
            .cloned()
            .chain([(
                "LLVM_PROFILE_FILE".to_string(),
                folder.join("%p-%m.profraw").into_os_string(),
            )])
            .collect(),
        timeout,
        report: None,
        stdin: Vec::new(),
    })?;
    if ran.truncated {
        return Err(CoverageError::ListTooLong {
            target: target.to_string(),
            shown: shown.to_string(),
            mib: super::super::REPORT_CAP >> 20,
        });
    }
    if ran.code != Some(0) || ran.timed_out {
        return Err(Exited::of(
            &format!("`--list` of the test executable of target `{target}` of `{shown}`"),
            &ran,
            run.root,
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&ran.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_suffix(": test")
                .or_else(|| l.strip_suffix(": benchmark"))
        })
        .map(str::to_string)
        .collect())
}

/// The `--config` arguments that add `-C instrument-coverage` to every crate the build compiles: as
/// `build.rustflags`, or — when the configuration cargo reads (from the repository's root up, and the
/// sandbox's cargo home) sets `target.<triple>.rustflags` or a `target.'cfg(…)'.rustflags` that holds for
/// the target, which makes cargo ignore `build.rustflags` — as `target.<triple>.rustflags`. The files are
/// read as data (`cargo-config2`), never by running cargo as root.
fn instrument_config(
    run: &Run,
    cover: &Cover,
    host: &str,
    timeout: Duration,
) -> Result<Vec<String>, CoverageError> {
    for name in ["config", "config.toml"] {
        let rel = join(".cargo", name);
        let path = run.root.join(&rel);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        // The repository's own file, whole and of a sane size; a link only to another of its files
        // (whose size is the one that counts).
        let inside = std::fs::canonicalize(&path).ok().is_some_and(|real| {
            std::fs::canonicalize(run.root).is_ok_and(|root| real.starts_with(root))
                && std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.len() <= CONFIG_CAP)
        });
        if !inside {
            return Err(CoverageError::ConfigOutside { rel });
        }
    }
    let config = cargo_config2::de::Config::load_with_options(
        run.root,
        cover.cargo_home.map(Path::to_path_buf),
    )
    .map_err(CoverageError::Config)?;
    let targets: Vec<String> = match config.build.target.as_ref() {
        Some(cargo_config2::de::StringOrArray::String(t)) => vec![t.val.clone()],
        Some(cargo_config2::de::StringOrArray::Array(ts)) => {
            ts.iter().map(|t| t.val.clone()).collect()
        }
        None => vec![host.to_string()],
    };
    let mut per_target = false;
    for target in &targets {
        let mut host_cfg = None;
        for (key, table) in &config.target {
            if table.rustflags.is_none() {
                continue;
            }
            if key == target {
                per_target = true;
            } else if let Some(cfg) = Cfg::of_key(key) {
                if host_cfg.is_none() {
                    host_cfg = Some(print_cfg(run, target, timeout)?);
                }
                per_target |= host_cfg.as_ref().is_some_and(|set| cfg.holds(set));
            }
        }
    }
    Ok(if per_target {
        targets
            .iter()
            .flat_map(|t| {
                [
                    "--config".to_string(),
                    format!("target.{}.rustflags={INSTRUMENT}", toml_key(t)),
                ]
            })
            .collect()
    } else {
        vec![
            "--config".to_string(),
            format!("build.rustflags={INSTRUMENT}"),
        ]
    })
}

/// A triple as a quoted TOML key.
fn toml_key(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// `rustc --print cfg [--target <t>]`, as the sandbox uid: the cfg values a `[target.'cfg(…)']` table is
/// decided by.
fn print_cfg(
    run: &Run,
    target: &str,
    timeout: Duration,
) -> Result<BTreeSet<(String, Option<String>)>, CoverageError> {
    let ran = run.launcher.launch(Job {
        what: "rustc --print cfg".to_string(),
        argv: ["rustc", "--print", "cfg", "--target", target]
            .map(String::from)
            .to_vec(),
        cwd: run.root.to_path_buf(),
        env: run.env.clone(),
        timeout,
        report: None,
        stdin: Vec::new(),
    })?;
    if ran.code != Some(0) {
        return Err(Exited::of("`rustc --print cfg`", &ran, run.root).into());
    }
    Ok(printed(&String::from_utf8_lossy(&ran.stdout)))
}

/// Merges the profiles and reads, with `llvm-cov export -format=lcov` over `objects`, the lines of
/// `sources` (the change's Rust files), by repository path; each tool run as the sandbox uid, within
/// what is `left` of the suite's time.
fn lines(
    run: &Run,
    package: &Package,
    llvm: &crate::sandbox::llvm::LlvmTools,
    (profiles, objects, sources): (&[PathBuf], &[PathBuf], &[PathBuf]),
    left: &dyn Fn() -> Duration,
) -> Result<BTreeMap<String, Lines>, CoverageError> {
    let shown = shown_dir(package.dir);
    let merged = run.launcher.scratch("profdata")?.join("merged.profdata");
    let mut argv = vec![
        llvm.profdata.display().to_string(),
        "merge".to_string(),
        "-sparse".to_string(),
    ];
    argv.extend(profiles.iter().map(|p| p.display().to_string()));
    argv.extend(["-o".to_string(), merged.display().to_string()]);
    // Each tool as the sandbox uid (they read what the pull request's code wrote), in what is left, from
    // the folder cargo ran rustc in (the workspace's): a file the build named relative is relative to it.
    let workspace = run.root.join(crate::sandbox::toolchain::cargo_workspace(
        run.root,
        package.dir,
    ));
    let tool =
        |what: String, name: &str, argv: Vec<String>| -> Result<super::super::Ran, CoverageError> {
            let ran = run.launcher.launch(Job {
                what,
                argv,
                cwd: workspace.clone(),
                env: Vec::new(),
                timeout: left(),
                report: None,
                stdin: Vec::new(),
            })?;
            if ran.code != Some(0) {
                return Err(Exited::of(&format!("`{name}`"), &ran, run.root).into());
            }
            Ok(ran)
        };
    tool(
        format!("merging the coverage profiles of `{shown}`"),
        "llvm-profdata merge",
        argv,
    )?;
    let export = |format: &str| {
        let mut argv = vec![
            llvm.cov.display().to_string(),
            "export".to_string(),
            format!("-format={format}"),
            format!("-instr-profile={}", merged.display()),
            // Dependencies' sources (a registry's, a git checkout's, the standard library's): not the
            // repository's, and most of a report's size.
            "-ignore-filename-regex=(/registry/src/[^/]*-[0-9a-f]{16}/|/git/checkouts/[^/]*-[0-9a-f]{16}/|^/rustc/[0-9a-f]{40}/)".to_string(),
        ];
        argv.push(if format == "text" {
            "-summary-only".to_string()
        } else {
            "-skip-functions".to_string()
        });
        for (i, object) in objects.iter().enumerate() {
            if i > 0 {
                argv.push("-object".to_string());
            }
            argv.push(object.display().to_string());
        }
        let ran = tool(
            format!("reading the coverage of `{shown}` (llvm-cov export)"),
            "llvm-cov export",
            argv,
        )?;
        if ran.truncated {
            return Err(CoverageError::ReportTooLong {
                mib: super::super::REPORT_CAP >> 20,
            });
        }
        Ok(ran.stdout)
    };
    // The names the build gave the files (`src/../engine/lib.rs` for a `#[path]` module), from the
    // summary, which is JSON: none may hold a control character (lcov prints a name raw). Then the lines
    // of every file (llvm-cov's own filter misses a name with `..` in it and then prints every file), by
    // those very names, the change's files kept.
    let summary = export("text")?;
    let (names, asked) = compiled_names(&summary, (run.root, &workspace), sources)?;
    if asked.is_empty() {
        return Ok(BTreeMap::new());
    }
    let text = export("lcov")?;
    lcov(&String::from_utf8_lossy(&text), &names, &asked)
}

/// Every name of llvm-cov's JSON summary, and those of the change's files (`sources`, absolute) — a name
/// whose path, `.` and `..` resolved (relative to the folder rustc ran in when it is relative), is one of
/// them — with their repository paths. A name with a control character is refused: lcov prints names
/// raw, so such a name could forge records.
fn compiled_names(
    summary: &[u8],
    (root, workspace): (&Path, &Path),
    sources: &[PathBuf],
) -> Result<(BTreeSet<String>, BTreeMap<String, String>), CoverageError> {
    let parsed: Value = serde_json::from_slice(summary).map_err(CoverageError::Summary)?;
    let roots: Vec<PathBuf> = std::iter::once(root.to_path_buf())
        .chain(std::fs::canonicalize(root).ok())
        .collect();
    let wanted: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| Some(s.strip_prefix(root).ok()?.to_str()?.to_string()))
        .collect();
    let mut names = BTreeSet::new();
    let mut asked = BTreeMap::new();
    for file in parsed
        .pointer("/data/0/files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = file.get("filename").and_then(Value::as_str) else {
            continue;
        };
        if name.chars().any(char::is_control) {
            return Err(CoverageError::ControlCharacter(
                name.escape_debug().to_string(),
            ));
        }
        names.insert(name.to_string());
        // `.` and `..` resolved as text (no link followed).
        let absolute = if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{}/{name}", workspace.display())
        };
        let Some(resolved) = relative_join("", &absolute).map(|p| PathBuf::from(format!("/{p}")))
        else {
            continue;
        };
        if let Some(rel) = roots
            .iter()
            .find_map(|r| resolved.strip_prefix(r).ok())
            .and_then(Path::to_str)
            .filter(|rel| wanted.contains(*rel))
        {
            asked.insert(name.to_string(), rel.to_string());
        }
    }
    Ok((names, asked))
}

/// An lcov report's `DA:` lines of the files `asked` (by the name the build gave each, with its
/// repository path). Every record must name one of the summary's `names`, each at most once: a record of
/// anything else, or a second one of a name, is a report aayu does not read. A line listed twice counts
/// with its largest count.
pub(super) fn lcov(
    text: &str,
    names: &BTreeSet<String>,
    asked: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Lines>, CoverageError> {
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(file) = line.strip_prefix("SF:") {
            if !names.contains(file) {
                return Err(CoverageError::Unsummarised(file.escape_debug().to_string()));
            }
            if !seen.insert(file.to_string()) {
                return Err(CoverageError::Twice(file.escape_debug().to_string()));
            }
            current = asked.get(file).cloned();
            if let Some(rel) = &current {
                files.entry(rel.clone()).or_default();
            }
        } else if let Some(at) = line.strip_prefix("DA:") {
            let Some(path) = &current else {
                continue;
            };
            let mut parts = at.split(',');
            let (Some(Ok(n)), Some(Ok(count))) = (
                parts.next().map(str::parse::<u32>),
                parts.next().map(str::parse::<u64>),
            ) else {
                continue;
            };
            let lines = files.entry(path.clone()).or_default();
            lines.executable.insert(n);
            if count > 0 {
                lines.covered.insert(n);
            }
        } else if line == "end_of_record" {
            current = None;
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcov_lines_are_read_by_repository_path_for_the_files_asked_only() {
        let names: BTreeSet<String> = [
            "/r/src/lib.rs",
            "/r/src/../engine/lib.rs",
            "/r/src/other.rs",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        let asked: BTreeMap<String, String> = [
            ("/r/src/lib.rs", "src/lib.rs"),
            ("/r/src/../engine/lib.rs", "engine/lib.rs"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let text = "SF:/r/src/lib.rs\nFN:1,x\nDA:1,3\nDA:2,0\nDA:2,5\nDA:4,0\nend_of_record\nSF:/r/src/other.rs\nDA:1,1\nend_of_record\nSF:/r/src/../engine/lib.rs\nDA:1,1\nend_of_record\n";
        let files = lcov(text, &names, &asked).expect("read");
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["engine/lib.rs", "src/lib.rs"],
            "only the files asked for"
        );
        let lib = &files["src/lib.rs"];
        assert_eq!(
            lib.executable.iter().copied().collect::<Vec<_>>(),
            [1, 2, 4]
        );
        assert_eq!(
            lib.covered.iter().copied().collect::<Vec<_>>(),
            [1, 2],
            "a line listed twice counts with its largest count"
        );
        // A record of a name the summary does not have (a line break forging one), or a second record of
        // a name, is a report not read.
        let forged = "SF:/r/x\nSF:/r/src/lib.rs\nDA:1,1\nend_of_record\n";
        assert!(
            lcov(forged, &names, &asked).is_err_and(|e| e.to_string().contains("summary does not"))
        );
        let twice =
            "SF:/r/src/lib.rs\nDA:1,0\nend_of_record\nSF:/r/src/lib.rs\nDA:1,1\nend_of_record\n";
        assert!(lcov(twice, &names, &asked).is_err_and(|e| e.to_string().contains("twice")));
    }

    /// The build's names of the change's files are found whatever `..` they hold, relative names from the
    /// folder rustc ran in; any name with a control character refuses the report.
    #[test]
    fn the_compiled_names_of_the_change_s_files_are_read_from_the_summary() {
        let root = Path::new("/r");
        let sources = [root.join("src/lib.rs"), root.join("engine/lib.rs")];
        let summary = |files: &[&str]| {
            let files: Vec<Value> = files
                .iter()
                .map(|f| serde_json::json!({"filename": f}))
                .collect();
            serde_json::to_vec(&serde_json::json!({"data": [{"files": files}]})).expect("json")
        };
        let (names, asked) = compiled_names(
            &summary(&[
                "/r/src/lib.rs",
                "/r/src/../engine/lib.rs",
                "/r/src/other.rs",
            ]),
            (root, root),
            &sources,
        )
        .expect("names");
        assert_eq!(names.len(), 3);
        assert_eq!(
            asked.into_iter().collect::<Vec<_>>(),
            [
                (
                    "/r/src/../engine/lib.rs".to_string(),
                    "engine/lib.rs".to_string()
                ),
                ("/r/src/lib.rs".to_string(), "src/lib.rs".to_string())
            ]
        );
        let (_, asked) =
            compiled_names(&summary(&["src/lib.rs"]), (root, root), &sources).expect("names");
        assert_eq!(
            asked.into_iter().collect::<Vec<_>>(),
            [("src/lib.rs".to_string(), "src/lib.rs".to_string())],
            "a name relative to the folder rustc ran in"
        );
        assert!(
            compiled_names(
                &summary(&["/r/src/x\nSF:/r/src/lib.rs"]),
                (root, root),
                &sources
            )
            .is_err_and(|e| e.to_string().contains("control character"))
        );
    }
}
