//! Go: a package inside the module of the nearest `go.mod` at or above it. A test id's rest is
//! `<TestName>[/<subtest>…]`, the name `go test -json` reports; `go test -json -count=1 -vet=off -run
//! '^(…)$'` runs the mapped top-level functions of the package, and each test's (and its subtests') own
//! events are kept, durations removed.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{
    Job, Marker, Outcome, Package, Run, Runner, RunnerError, TestId, TestResult, exited, join,
};
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, go_requires_modules, shown_dir};
use crate::sandbox::{FetchPlan, said};

mod canary;
mod harness;

pub struct Go;

/// Why Go's runner cannot read a package's coverage.
#[derive(Debug, thiserror::Error)]
pub enum GoError {
    #[error("`{shown}`: its module's `go.mod` has no `module` line aayu can read")]
    NoModuleLine { shown: String },
}

/// A Go test id's rest that is not `<TestName>[/<subtest>…]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not `<TestName>[/<subtest>…]` as `go test -json` names it (spaces in a subtest's name are `_`)"
)]
pub struct GoIdError(String);

impl Runner for Go {
    fn name(&self) -> &'static str {
        "go"
    }

    fn title(&self) -> &'static str {
        "Go"
    }

    fn marker(&self) -> Marker {
        Marker {
            files: &["go.mod"],
            above: true,
        }
    }

    fn tool(&self) -> Tool {
        Tool::Go
    }

    fn toolchain(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Vec<(String, OsString)>, RunnerError> {
        toolchains.go_for(root, package.home)?;
        Ok(Vec::new())
    }

    fn found_by<'a>(&self, rest: &'a str) -> &'a str {
        rest.split('/').next().unwrap_or(rest)
    }

    fn check_id(&self, _root: &Path, _package: &Package, rest: &str) -> Result<(), RunnerError> {
        GoTest::parse(rest)?;
        Ok(())
    }

    fn claims_id(&self, rest: &str) -> bool {
        GoTest::parse(rest).is_ok()
    }

    fn fetch(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, RunnerError> {
        let module = package.home;
        let lock = join(module, "go.sum");
        if !go_requires_modules(root, module) {
            // A module that requires nothing has nothing to download (and `go mod download` says "no
            // modules specified" and fails on older Go).
            return Ok(None);
        }
        toolchains.go_for(root, module)?;
        Ok(Some(FetchPlan {
            unit: module.to_string(),
            argv: vec!["go".into(), "mod".into(), "download".into()],
            cwd: Some(module.to_string()),
            env: Vec::new(),
            without_committed_lock: Some(format!(
                "`{}` requires modules, but `{lock}` is not committed: commit go.sum (`go mod tidy`)",
                join(module, "go.mod")
            )),
            lock,
            lends_lock: false,
            offline_first: false,
            install: None,
        }))
    }

    fn run_named(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        named(run, package, tests, false)
    }

    /// All of a package's canaries in one `go test`: each fails at its first statement, so no test's
    /// panic or `os.Exit` can decide another's, and a forgery that frames one frames them all.
    fn run_canaries(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        named(run, package, tests, true)
    }

    /// `go test -json -covermode=set -coverprofile=<file> ./<pkg>`, once, in the module's folder: every
    /// test of the package, its own statements counted (no `-coverpkg`, as `go test -cover`).
    fn cover_suite(
        &self,
        run: &Run,
        package: &Package,
        cover: &super::Cover,
    ) -> Result<super::Suite, RunnerError> {
        let module = package.home;
        let pkg = go_pkg(package);
        let argv = [
            "go",
            "test",
            "-json",
            "-count=1",
            "-vet=off",
            "-covermode=set",
            "-coverprofile=@report@",
            &pkg,
        ]
        .map(String::from)
        .to_vec();
        let mut env = run.env.clone();
        env.push(("GODEBUG".to_string(), "gotestjsonbuildtext=0".into()));
        let ran = run.launcher.launch(Job {
            what: format!(
                "go test -coverprofile `{pkg}` in `{}`",
                shown_dir(package.home)
            ),
            argv,
            cwd: run.root.join(module),
            env,
            timeout: run.timeout,
            report: Some("AAYU_GO_COVERPROFILE"),
            stdin: Vec::new(),
        })?;
        let mut suite = suite_of(&ran, &pkg, run.root);
        if suite.nothing || suite.broken.is_some() || suite.blocked.is_some() {
            return Ok(suite);
        }
        let shown = shown_dir(package.dir);
        let Some(module) = module_path(run.root, package.home) else {
            return Err(GoError::NoModuleLine {
                shown: shown.to_string(),
            }
            .into());
        };
        let profile = ran.report.unwrap_or_default();
        if profile.is_empty() {
            suite.blocked = Some(format!(
                "`go test -coverprofile` of `{shown}` wrote no profile: not instrumented"
            ));
            return Ok(suite);
        }
        suite.lines = profile_lines(&String::from_utf8_lossy(&profile), &module, package.home);
        let (blocked, notes) = line_directives(run.root, package.dir, cover.changed);
        suite.notes.extend(notes);
        if let Some(why) = blocked.or_else(|| profile_outside(run.root, &suite.lines)) {
            suite.blocked = Some(why);
            return Ok(suite);
        }
        // Go before 1.22 lists no line of a package without tests: its lines cannot be counted.
        suite.uncounted = (suite.lines.is_empty() && suite.tests.is_empty()).then(|| {
            "no tests, and this Go lists no line of a package without tests: add tests, or use Go 1.22 or newer, which counts them as uncovered".to_string()
        });
        Ok(suite)
    }

    fn covers(&self) -> bool {
        true
    }

    fn coverage_words(&self) -> (&'static str, &'static str) {
        ("go test -coverprofile", "go coverprofile")
    }

    /// `_test.go` files.
    fn test_code(
        &self,
        _root: &Path,
        _package: &Package,
        paths: &[String],
    ) -> BTreeMap<String, super::TestCode> {
        paths
            .iter()
            .map(|path| {
                let code = if path.ends_with("_test.go") {
                    super::TestCode::Whole
                } else {
                    super::TestCode::None
                };
                (path.clone(), code)
            })
            .collect()
    }

    /// A subtest's result is its function's, and a function's its subtests'.
    fn names_test(&self, rest: &str, name: &str) -> bool {
        rest == name
            || rest.starts_with(&format!("{name}/"))
            || name.starts_with(&format!("{rest}/"))
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
        _package: &Package,
        tests: &[&TestId],
        on: &super::Canary,
    ) -> BTreeMap<TestId, Result<TestId, String>> {
        canary::canary(run.root, tests, on)
    }

    /// `*_test.go` files and anything under a `testdata/` folder.
    fn is_test_file(&self, path: &str) -> bool {
        path.ends_with("_test.go") || path.split('/').any(|p| p == "testdata")
    }
}

/// A Go coverage profile (`mode: set`, then `<import path>/<file>.go:<line>.<col>,<line>.<col> <statements>
/// <count>`), by repository path: each file's name is its import path, which is the module's path
/// (`module` in `home`'s `go.mod`) and the file's folder in the module. A block spans its lines; one with
/// no statement marks none.
pub(crate) fn profile_lines(
    text: &str,
    module: &str,
    home: &str,
) -> BTreeMap<String, super::Lines> {
    let mut files: BTreeMap<String, super::Lines> = BTreeMap::new();
    for line in text.lines().skip_while(|l| l.starts_with("mode:")) {
        let mut words = line.rsplitn(3, ' ');
        let (Some(count), Some(statements), Some(place)) =
            (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let (Ok(count), Ok(statements)) = (count.parse::<u64>(), statements.parse::<u64>()) else {
            continue;
        };
        let Some((file, range)) = place.rsplit_once(':') else {
            continue;
        };
        let Some((start, end)) = range.split_once(',') else {
            continue;
        };
        let line_of = |at: &str| at.split('.').next().and_then(|l| l.parse::<u32>().ok());
        let (Some(start), Some(end)) = (line_of(start), line_of(end)) else {
            continue;
        };
        let Some(rel) = file.strip_prefix(module).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        if statements == 0 || end < start {
            continue;
        }
        let path = join(home, rel);
        let lines = files.entry(path).or_default();
        for n in start..=end {
            lines.executable.insert(n);
            if count > 0 {
                lines.covered.insert(n);
            } else {
                lines.missed.insert(n);
            }
        }
    }
    files
}

/// Why a profile is not its files' coverage: a block names a file the checkout does not have, or a line
/// past the file's end (a rewritten profile, or a `//line` directive that moved statements off it).
fn profile_outside(root: &Path, files: &BTreeMap<String, super::Lines>) -> Option<String> {
    for (path, lines) in files {
        let Some(last) = lines.executable.iter().next_back() else {
            continue;
        };
        let shown = crate::runners::harness::visible(path);
        let Ok(bytes) = crate::safe_fs::read(root, path, 64 << 20) else {
            return Some(format!(
                "the coverage profile names `{shown}`, which is not a file of the checkout: it is not this package's coverage"
            ));
        };
        let count = (bytes.iter().filter(|b| **b == b'\n').count()
            + usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))) as u32;
        if *last > count {
            return Some(format!(
                "the coverage profile names line {last} of `{shown}`, which has {count} lines: it is not that file's coverage (a `//line` directive, or a profile the test binary rewrote)"
            ));
        }
    }
    None
}

/// The `//line` directives of the package's changed `.go` files: one naming a `.go` file (or the file
/// itself) moves statements onto another Go file's lines — the coverage cannot be read (`blocked`); one
/// naming another kind of source (goyacc's `parser.y`) marks generated code, whose lines the profile
/// gives to that source: counted as not measured, with a note.
fn line_directives(root: &Path, dir: &str, changed: &[String]) -> (Option<String>, Vec<String>) {
    let mut notes = Vec::new();
    for path in changed
        .iter()
        .filter(|p| p.ends_with(".go") && p.rsplit_once('/').map_or("", |(d, _)| d) == dir)
    {
        let Ok(bytes) = crate::safe_fs::read(root, path, 64 << 20) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let shown = crate::runners::harness::visible(path);
        let mut generated_from: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let Some(target) = line
                .strip_prefix("//line ")
                .or_else(|| line.strip_prefix("/*line "))
            else {
                continue;
            };
            let target = target.trim_end_matches("*/").trim();
            // `file:line` or `file:line:col`: the file is what precedes the last one or two numbers.
            let mut file = target;
            for _ in 0..2 {
                if let Some((before, after)) = file.rsplit_once(':')
                    && after.chars().all(|c| c.is_ascii_digit())
                    && !after.is_empty()
                {
                    file = before;
                }
            }
            if file.is_empty() {
                continue;
            }
            let name = file.rsplit('/').next().unwrap_or(file);
            if name.ends_with(".go") {
                return (
                    Some(format!(
                        "`{shown}:{}` has a `//line` directive naming `{}`: its statements are counted at another Go file's lines, so its coverage cannot be read",
                        i + 1,
                        crate::runners::harness::visible(target)
                    )),
                    notes,
                );
            }
            generated_from.get_or_insert_with(|| crate::runners::harness::visible(file));
        }
        if let Some(source) = generated_from {
            notes.push(format!(
                "`{shown}` is generated from `{source}` (its `//line` directives): its lines are counted there, not measured here"
            ));
        }
    }
    (None, notes)
}

/// The `module` line of a `go.mod`.
fn module_path(root: &Path, home: &str) -> Option<String> {
    let bytes = crate::safe_fs::read(root, &join(home, "go.mod"), 1 << 20).ok()?;
    String::from_utf8_lossy(&bytes).lines().find_map(|l| {
        let l = l.split("//").next().unwrap_or(l);
        l.trim()
            .strip_prefix("module")
            .filter(|m| m.starts_with([' ', '\t']))
            .map(|m| m.trim().trim_matches(['"', '`']).to_string())
            .filter(|m| !m.is_empty())
    })
}

/// The package as `go test` names it from its module's folder: `.` or `./<folder in the module>`.
fn go_pkg(package: &Package) -> String {
    let rel = if package.home.is_empty() {
        package.dir
    } else {
        package
            .dir
            .strip_prefix(package.home)
            .map_or("", |r| r.trim_start_matches('/'))
    };
    if rel.is_empty() {
        ".".to_string()
    } else {
        format!("./{rel}")
    }
}

/// A whole-suite run's tests, from go's JSON events, and whether it ran to its end: a package that did not
/// build, a test that started and never ended (a panic, an `os.Exit`), or a run past its time gives no
/// coverage to trust.
fn suite_of(ran: &super::Ran, pkg: &str, root: &Path) -> super::Suite {
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let mut tests: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut started: Vec<String> = Vec::new();
    let mut ended_package = false;
    let mut package_failed = false;
    let mut build_failed = false;
    let mut output: Vec<String> = Vec::new();
    for line in stdout.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let action = event.get("Action").and_then(Value::as_str).unwrap_or("");
        if event.get("FailedBuild").is_some() || action == "build-fail" {
            build_failed = true;
        }
        match event.get("Test").and_then(Value::as_str) {
            Some(test) => match action {
                "run" => started.push(test.to_string()),
                "pass" | "skip" => {
                    tests.insert(test.to_string(), None);
                }
                "fail" => {
                    tests.insert(test.to_string(), Some(String::new()));
                }
                _ => {}
            },
            None => {
                if matches!(action, "pass" | "fail" | "skip") {
                    ended_package = true;
                    package_failed = action == "fail";
                }
                if action == "output"
                    && let Some(text) = event.get("Output").and_then(Value::as_str)
                {
                    output.push(text.trim_end().to_string());
                }
            }
        }
    }
    let unended = started.iter().find(|t| !tests.contains_key(*t));
    let said = said(&ran.stderr, root);
    let all_output = format!(
        "{}\n{}",
        output.join("\n"),
        String::from_utf8_lossy(&ran.stderr)
    );
    // A folder whose every file a build constraint excludes (`//go:build ignore` generators) is no
    // package: nothing to run, nothing to count.
    if all_output.contains("build constraints exclude all Go files") {
        return super::Suite {
            nothing: true,
            ..super::Suite::default()
        };
    }
    if ran.timed_out {
        return super::Suite {
            blocked: Some(format!(
                "`go test {pkg}` ran past `[verify] suite_timeout_s`"
            )),
            ..super::Suite::default()
        };
    }
    let profile = ran.report.clone().unwrap_or_default();
    // A profile of no block: the test binary ended before writing it (a panic, an `os.Exit`).
    let no_blocks = !String::from_utf8_lossy(&profile)
        .lines()
        .any(|l| !l.starts_with("mode:") && !l.trim().is_empty());
    let failed: Vec<&String> = tests
        .iter()
        .filter(|(_, failed)| failed.is_some())
        .map(|(t, _)| t)
        .collect();
    let has_tests = !started.is_empty();
    let broken = if build_failed || (!ended_package && tests.is_empty()) {
        Some(format!(
            "`go test {pkg}` did not build: {}",
            if said.is_empty() {
                output.join(" | ")
            } else {
                said
            }
        ))
    } else if let Some(test) = unended {
        Some(format!(
            "`{test}` ended the run of `go test {pkg}` before it finished (a panic or an exit): no coverage from a partial profile"
        ))
    } else if !ended_package {
        Some(format!(
            "`go test {pkg}` ended before it reported its package's result"
        ))
    } else if package_failed && failed.is_empty() {
        Some(format!(
            "`go test {pkg}` failed with every test passing (a `TestMain` that exits non-zero after `m.Run()`?): {}",
            if said.is_empty() {
                output.join(" | ")
            } else {
                said
            }
        ))
    } else if package_failed && no_blocks && has_tests {
        Some(format!(
            "`go test {pkg}` failed ({}) and wrote no coverage: a panic or an exit ended the test binary before its profile was written — fix the failing test",
            failed
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        None
    };
    super::Suite {
        tests,
        broken,
        ..super::Suite::default()
    }
}

/// What a `go test` user reads first of a failed test: its own `file.go:12: …` lines (`t.Errorf`,
/// `t.Fatal`), or a panic's `panic: …` line with the first frame inside the repository (written relative
/// to it); else "the test failed".
fn go_failure<'a>(output: impl Iterator<Item = &'a str>, module: &Path, root: &Path) -> String {
    let lines: Vec<&str> = output
        .flat_map(str::lines)
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let own: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| {
            l.split_once(": ").is_some_and(|(at, _)| {
                at.rsplit_once(':').is_some_and(|(file, line)| {
                    file.ends_with(".go")
                        && !line.is_empty()
                        && line.chars().all(|c| c.is_ascii_digit())
                })
            })
        })
        .collect();
    if let Some(at) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("panic: "))
    {
        let panic = lines[at].trim().trim_end_matches(" [recovered]");
        let inside = |l: &&str| {
            let frame = l.trim();
            let path = frame.split(':').next().unwrap_or("");
            Path::new(path).starts_with(module) || Path::new(path).starts_with(root)
        };
        let frame = lines[at..]
            .iter()
            .find(|l| l.starts_with('\t') && inside(l))
            .map(|l| {
                let frame = l.trim();
                let frame = frame.split(" +0x").next().unwrap_or(frame);
                let rel = Path::new(frame)
                    .strip_prefix(root)
                    .map_or_else(|_| frame.to_string(), |p| p.display().to_string());
                format!(" (at {rel})")
            })
            .unwrap_or_default();
        return format!("{panic}{frame}");
    }
    if !own.is_empty() {
        return own.join("; ");
    }
    "the test failed".to_string()
}

/// [`go_failure`] of a test's output lines, for the runners' snapshot.
#[cfg(test)]
pub(super) fn failure_of(output: &[&str], module: &Path, root: &Path) -> String {
    go_failure(output.iter().copied(), module, root)
}

/// The package's `_test.go` files, by name, as repository paths and text (read without following a
/// link, capped).
fn test_files(root: &Path, package: &Package) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(package.dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with("_test.go"))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let path = join(package.dir, &name);
            let bytes = crate::safe_fs::read(root, &path, 8 << 20).ok()?;
            Some((path, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

/// A package's own `TestMain`: the file that declares it, and whether its body runs the tests.
struct TestMain {
    file: String,
    param: String,
    runs: bool,
}

/// The package's `TestMain`, read as code (comments and strings blanked), whatever its parameter's type
/// is spelled as (`*testing.M`, or an aliased import's `*t.M`).
fn test_main(root: &Path, package: &Package) -> Option<TestMain> {
    static MAIN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"func\s+TestMain\s*\(\s*(\w+)").expect("the TestMain pattern")
    });
    test_files(root, package)
        .into_iter()
        .find_map(|(file, text)| {
            let text = code_only(&text);
            let found = MAIN.captures(&text)?;
            let param = found.get(1).map_or("m", |m| m.as_str()).to_string();
            let at = found.get(0).map_or(0, |m| m.end());
            // The function's body: from its first `{` to the brace that closes it (a brace or a `.Run()` in a
            // comment or a string counts for nothing: they are blanked).
            let body_start = text[at..].find('{').map_or(text.len(), |i| at + i);
            let mut depth = 0usize;
            let mut end = text.len();
            for (i, c) in text[body_start..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = body_start + i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            // `m.Run()`, or `m` handed on to what runs it (`os.Exit(run(m))`, `goleak.VerifyTestMain(m)`).
            let runs = regex::Regex::new(&format!(
                r"\b{0}\s*\.\s*Run\s*\(|[(,]\s*{0}\s*[,)]",
                regex::escape(&param)
            ))
            .is_ok_and(|re| re.is_match(&text[body_start..end]));
            Some(TestMain { file, param, runs })
        })
}

/// Go source with its comments and the insides of its string and rune literals blanked (lengths kept).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                    out.push(' ');
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                out.push(' ');
                let mut last = ' ';
                for c in chars.by_ref() {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' | '\'' | '`' => {
                out.push(c);
                let mut escaped = false;
                for inner in chars.by_ref() {
                    if inner == c && !(escaped && c != '`') {
                        out.push(c);
                        break;
                    }
                    escaped = inner == '\\' && !escaped;
                    out.push(if inner == '\n' { '\n' } else { ' ' });
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The tests, each top-level function in a `go test` of its own, or all of them in one (`together`).
fn named(
    run: &Run,
    package: &Package,
    tests: &[&TestId],
    together: bool,
) -> BTreeMap<TestId, TestResult> {
    let (wanted, mut results) = super::read_ids(tests, GoTest::parse);
    if wanted.is_empty() {
        return results;
    }
    // Each top-level function runs in a `go test` of its own: one test's panic or `os.Exit` decides
    // nothing about another's, and Go before 1.20 cannot frame a test's output (`--- PASS: TestOther`
    // printed by a test reads as TestOther's result), so a line about another test is a test the run did
    // not ask for.
    let asked: BTreeSet<&str> = wanted
        .iter()
        .map(|(_, spec)| spec.function.as_str())
        .collect();
    if asked.len() > 1 && !together {
        for function in asked {
            let own: Vec<&TestId> = wanted
                .iter()
                .filter(|(_, spec)| spec.function == function)
                .map(|(t, _)| *t)
                .collect();
            results.extend(named(run, package, &own, false));
        }
        return results;
    }
    let ids: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
    // A package's own `TestMain` decides how its tests run: the evidence's line says it is there.
    let main = test_main(run.root, package);
    if let Some(TestMain {
        file,
        param,
        runs: false,
    }) = &main
    {
        let why = format!(
            "`{file}` has a `TestMain` that never calls `{param}.Run()` (nor hands `{param}` on): its output is not a test result"
        );
        results.extend(super::all(&ids, Outcome::NotRun(why)));
        return results;
    }
    let test_main = main.map(|m| format!("`{}` has its own `TestMain`", m.file));
    let pkg = go_pkg(package);
    let ran = match launch_functions(run, package, &wanted, &pkg) {
        Ok(ran) => ran,
        Err(e) => {
            results.extend(super::all(&ids, Outcome::NotRun(e.to_string())));
            return results;
        }
    };
    let record = Record::read(&ran, &asked);
    if let Some(name) = &record.stranger {
        results.extend(super::all(
            &ids,
            Outcome::NotRun(format!(
                "the test output does not match go test's record (an event of `{name}`, which was not asked for): its events are not a test result"
            )),
        ));
        return results;
    }
    for (test, spec) in &wanted {
        results.insert(
            (*test).clone(),
            TestResult {
                outcome: record.outcome(spec, &ran, run, package, &pkg),
                events: record.kept(spec),
                pinned: None,
                note: test_main.clone(),
            },
        );
    }
    results
}

/// One `go test -json -run '^(…)$'` of the wanted top-level functions, from the module's folder.
fn launch_functions(
    run: &Run,
    package: &Package,
    wanted: &[(&TestId, GoTest)],
    pkg: &str,
) -> Result<super::Ran, super::LaunchError> {
    // The top-level functions run whole: a subtest's own result and events are read from their run (a
    // second `-run` level would also filter the subtests of a function that is mapped whole).
    let functions: BTreeSet<String> = wanted
        .iter()
        .map(|(_, spec)| regex::escape(&spec.function))
        .collect();
    let pattern = format!(
        "^({})$",
        functions.iter().cloned().collect::<Vec<_>>().join("|")
    );
    let argv = [
        "go", "test", "-json", "-count=1", "-vet=off", "-run", &pattern, pkg,
    ]
    .map(String::from)
    .to_vec();
    let mut env = run.env.clone();
    env.push(("GODEBUG".to_string(), "gotestjsonbuildtext=0".into()));
    run.launcher.launch(Job {
        what: format!("go test `{pkg}` in `{}`", shown_dir(package.home)),
        argv,
        cwd: run.root.join(package.home),
        env,
        timeout: run.timeout.max(Duration::from_secs(600)),
        report: None,
        stdin: Vec::new(),
    })
}

/// What `go test -json` reported of a run: each test's events (timing removed), and what the package's
/// own events said.
struct Record {
    events: BTreeMap<String, Vec<Value>>,
    build_failed: bool,
    /// Whether go ran the package at all: it ends with a package-level result (pass, fail or skip).
    package_ran: bool,
    /// Whether the package's own last word was `pass`.
    package_passed: bool,
    /// An event of a test this run did not ask for: a test printed it.
    stranger: Option<String>,
}

impl Record {
    fn read(ran: &super::Ran, asked: &BTreeSet<&str>) -> Record {
        let stdout = String::from_utf8_lossy(&ran.stdout);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        let mut record = Record {
            events: BTreeMap::new(),
            build_failed: stdout.contains("[build failed]") || stderr.contains("[build failed]"),
            package_ran: false,
            package_passed: false,
            stranger: None,
        };
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
                record.package_ran = true;
                record.package_passed = event.get("Action").and_then(Value::as_str) == Some("pass");
            }
            if event.get("FailedBuild").is_some()
                || event.get("Action").and_then(Value::as_str) == Some("build-fail")
            {
                record.build_failed = true;
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
            if !asked
                .iter()
                .any(|f| test == *f || test.starts_with(&format!("{f}/")))
            {
                record.stranger.get_or_insert_with(|| test.clone());
            }
            record.events.entry(test).or_default().push(event);
        }
        record
    }

    /// The events of a test and of its subtests, in order.
    fn own<'a>(&'a self, spec: &'a GoTest) -> impl Iterator<Item = &'a Value> + 'a {
        let nested = format!("{}/", spec.name);
        self.events
            .iter()
            .filter(move |(name, _)| **name == spec.name || name.starts_with(&nested))
            .flat_map(|(_, list)| list.iter())
    }

    /// The test's own events, and its subtests', as the evidence keeps them.
    fn kept(&self, spec: &GoTest) -> Vec<String> {
        self.own(spec).map(Value::to_string).collect()
    }

    /// One test's outcome, read from its own events and the package's.
    fn outcome(
        &self,
        spec: &GoTest,
        ran: &super::Ran,
        run: &Run,
        package: &Package,
        pkg: &str,
    ) -> Outcome {
        let own = self.events.get(&spec.name).cloned().unwrap_or_default();
        let verdicts: Vec<&str> = own
            .iter()
            .filter_map(|e| {
                e.get("Action")
                    .and_then(Value::as_str)
                    .filter(|a| matches!(*a, "pass" | "fail" | "skip"))
            })
            .collect();
        // The test's own output and its subtests', in order: what a failure is read from.
        let output = self
            .own(spec)
            .filter_map(|e| e.get("Output").and_then(Value::as_str));
        match verdicts.last().copied() {
            // The testing package's record of one test: one result, and a package that passed and exited
            // 0 — a `--- PASS` printed after a failure, or before an `os.Exit`, is not one.
            _ if verdicts.len() > 1 => Outcome::NotRun(format!(
                "the test output does not match go test's record ({} results for `{}`): its events are not a test result",
                verdicts.len(),
                spec.name
            )),
            // (A subtest's pass stands while a sibling subtest fails the package.)
            Some("pass")
                if spec.name == spec.function && (!self.package_passed || ran.code != Some(0)) =>
            {
                Outcome::NotRun(format!(
                    "the test output does not match go test's record (`{}` passed, but the package did not): its events are not a test result",
                    spec.name
                ))
            }
            Some("pass") => Outcome::Passed,
            Some("fail") => {
                Outcome::Failed(go_failure(output, &run.root.join(package.home), run.root))
            }
            Some(_) => Outcome::NotRun("the test was skipped".to_string()),
            None if self.build_failed => Outcome::NotBuilt(format!(
                "`{pkg}` did not build: {}",
                said(&ran.stderr, run.root)
            )),
            None if !own.is_empty() => Outcome::NotRun(
                "the test started but gave no result (a crash or os.Exit)".to_string(),
            ),
            None if self.package_ran => Outcome::NotFound(format!(
                "no test `{}` in `{}`",
                spec.name,
                shown_dir(package.dir)
            )),
            // go stopped before it ran the package (go.mod, a missing module offline…): its own words.
            None => Outcome::NotBuilt(exited(&format!("`go test {pkg}`"), ran, run.root)),
        }
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

/// A Go test id's rest: `<TestName>[/<subtest>…]`, the name `go test -json` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTest {
    /// The top-level test function.
    pub function: String,
    /// The whole name, subtests included (`TestParse/empty`).
    pub name: String,
}

impl GoTest {
    pub fn parse(rest: &str) -> Result<GoTest, GoIdError> {
        let function = rest.split('/').next().unwrap_or_default();
        let identifier = function
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && function.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier || rest.split('/').any(str::is_empty) || rest.contains(' ') {
            return Err(GoIdError(rest.to_string()));
        }
        Ok(GoTest {
            function: function.to_string(),
            name: rest.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_past_its_file_and_a_line_directive_to_a_go_file_are_refused() {
        let root = tempfile::tempdir().expect("dir");
        let write = |path: &str, text: &str| {
            let at = root.path().join(path);
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        };
        write(
            "calc/calc.go",
            "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
        );
        write(
            "calc/moved.go",
            "package calc\n\n//line calc.go:9000\nfunc Sub(a, b int) int { return a - b }\n",
        );
        write(
            "calc/parser.go",
            "// Code generated by goyacc. DO NOT EDIT.\npackage calc\n\n//line parser.y:12\nfunc parse() {}\n",
        );
        let mut files = BTreeMap::new();
        let lines = |n: &[u32]| super::super::Lines {
            executable: n.iter().copied().collect(),
            ..Default::default()
        };
        files.insert("calc/calc.go".to_string(), lines(&[3, 4]));
        assert_eq!(profile_outside(root.path(), &files), None);
        files.insert("calc/calc.go".to_string(), lines(&[4, 9000]));
        assert!(
            profile_outside(root.path(), &files)
                .is_some_and(|w| w.contains("line 9000 of `calc/calc.go`, which has 5 lines")),
            "{:?}",
            profile_outside(root.path(), &files)
        );
        files.insert("calc/gone.go".to_string(), lines(&[1]));
        files.remove("calc/calc.go");
        assert!(profile_outside(root.path(), &files).is_some_and(|w| w.contains("`calc/gone.go`")));

        let changed = ["calc/parser.go".to_string()];
        let (blocked, notes) = line_directives(root.path(), "calc", &changed);
        assert_eq!(blocked, None);
        assert_eq!(
            notes,
            [
                "`calc/parser.go` is generated from `parser.y` (its `//line` directives): its lines are counted there, not measured here"
            ]
        );
        let changed = ["calc/moved.go".to_string(), "calc/parser.go".to_string()];
        let (blocked, _) = line_directives(root.path(), "calc", &changed);
        assert_eq!(
            blocked.as_deref(),
            Some(
                "`calc/moved.go:3` has a `//line` directive naming `calc.go:9000`: its statements are counted at another Go file's lines, so its coverage cannot be read"
            )
        );
    }

    #[test]
    fn a_go_profile_is_read_by_repository_path_and_a_block_spans_its_lines() {
        let profile = "mode: set\nexample.com/m/calc/calc.go:3.24,5.2 1 1\nexample.com/m/calc/calc.go:7.26,8.12 1 0\nexample.com/m/calc/calc.go:8.12,10.3 1 1\nexample.com/m/calc/calc.go:12.1,12.9 0 0\nother.org/x/y.go:1.1,2.2 1 1\n";
        let files = profile_lines(profile, "example.com/m", "svc");
        let calc = &files["svc/calc/calc.go"];
        assert_eq!(
            calc.executable.iter().copied().collect::<Vec<_>>(),
            [3, 4, 5, 7, 8, 9, 10]
        );
        assert_eq!(
            calc.covered.iter().copied().collect::<Vec<_>>(),
            [3, 4, 5, 8, 9, 10]
        );
        // Line 8 holds the end of a block that did not run and the start of one that did.
        assert!(calc.missed.contains(&8) && calc.covered.contains(&8));
        assert_eq!(
            files.len(),
            1,
            "a file outside the module is not the repository's"
        );
    }

    #[test]
    fn the_module_path_is_read_without_its_comment() {
        let dir = tempfile::tempdir().expect("dir");
        for (text, want) in [
            (
                "module example.com/shop // the shop\n",
                Some("example.com/shop"),
            ),
            (
                "// module not.this\nmodule \"example.com/q\"\n",
                Some("example.com/q"),
            ),
            ("modulex y\n", None),
        ] {
            std::fs::write(dir.path().join("go.mod"), text).expect("write");
            assert_eq!(module_path(dir.path(), "").as_deref(), want, "{text}");
        }
    }

    #[test]
    fn go_ids_may_name_a_subtest() {
        let t = GoTest::parse("TestParse/empty").expect("sub");
        assert_eq!(
            (t.function.as_str(), t.name.as_str()),
            ("TestParse", "TestParse/empty")
        );
        assert!(GoTest::parse("TestParse//x").is_err());
        assert!(GoTest::parse("Test(x)").is_err());
        assert!(GoTest::parse("TestA|TestB").is_err());
    }

    #[test]
    fn a_test_main_runs_the_tests_when_it_calls_run_or_hands_m_on() {
        let dir = tempfile::tempdir().expect("dir");
        let case = |main: &str| {
            std::fs::write(
                dir.path().join("x_test.go"),
                format!("package x\n\nimport (\"os\"; \"testing\")\n\n{main}\n"),
            )
            .expect("write");
            let package = Package {
                runner: &Go,
                dir: "",
                home: "",
            };
            match test_main(dir.path(), &package) {
                Some(TestMain {
                    runs: false, file, ..
                }) => (Some(file), None),
                Some(TestMain { file, .. }) => (None, Some(file)),
                None => (None, None),
            }
        };
        // Running the tests: the evidence's line names the file.
        assert_eq!(
            case("func TestMain(m *testing.M) { os.Exit(m.Run()) }"),
            (None, Some("x_test.go".to_string()))
        );
        assert!(
            case("func TestMain(t *testing.M) {\n\tsetup()\n\tos.Exit(run(t))\n}")
                .0
                .is_none()
        );
        assert!(
            case("func TestMain (m *testing.M) { fmt.Println(\"--- PASS: TestA\"); os.Exit(0) }")
                .0
                .is_some()
        );
        assert!(
            case(
                "func TestMain(m *testing.M) {\n\t// m.Run()\n\ts := \"m.Run() }\"\n\tos.Exit(0)\n}"
            )
            .0
            .is_some()
        );
        assert_eq!(
            case("// func TestMain(m *testing.M) { m.Run() }\nfunc TestA(t *testing.T) {}"),
            (None, None)
        );
        // An aliased `testing` import does not hide it.
        assert!(case("func TestMain(m *tt.M) { os.Exit(0) }").0.is_some());
    }

    #[test]
    fn a_go_failure_is_its_own_lines_or_its_panic() {
        let root = Path::new("/work/repo");
        let errorf = [
            "=== RUN   TestAdd\n",
            "    calc_test.go:12: Add(2, 2) = 0, want 4\n",
            "--- FAIL: TestAdd (0.00s)\n",
        ];
        assert_eq!(
            go_failure(errorf.into_iter(), root, root),
            "calc_test.go:12: Add(2, 2) = 0, want 4"
        );
        let panic = [
            "=== RUN   TestDiv\n",
            "--- FAIL: TestDiv (0.00s)\n",
            "panic: runtime error: integer divide by zero [recovered]\n",
            "\tpanic: runtime error: integer divide by zero\n",
            "\n",
            "goroutine 7 [running]:\n",
            "testing.tRunner.func1.2({0x51c2a0, 0x5f2f40})\n",
            "\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e\n",
            "example.com/calc.Div(...)\n",
            "\t/work/repo/calc/calc.go:7\n",
            "example.com/calc.TestDiv(0x0?)\n",
            "\t/work/repo/calc/calc_test.go:20 +0x1d\n",
        ];
        assert_eq!(
            go_failure(panic.into_iter(), &root.join("calc"), root),
            "panic: runtime error: integer divide by zero (at calc/calc.go:7)"
        );
        assert_eq!(
            go_failure(["--- FAIL: TestX (0.00s)\n"].into_iter(), root, root),
            "the test failed"
        );
    }

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
}
