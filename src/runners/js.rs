//! JavaScript and TypeScript: a package folder holding `package.json`, tested with the runner the package
//! names — vitest or jest (a dependency, a `jest` key, a `vitest.config.*`/`jest.config.*` file), else
//! node's built-in runner when its `test` script runs `node --test`; never by running `npm test`. A test
//! id's rest is `<file relative to the package>::<full name>`, the full name being the describe titles and
//! the test's title joined by ` > ` (`src/parse.test.ts::parse > rejects a trailing comma`).
//!
//! Results are read from each runner's structured report, written to a file aayu names — jest's and
//! vitest's JSON reporters (named explicitly), node's through a reporter aayu passes as a module
//! ([`NODE_REPORTER`]) — never from their output. A package with dependencies is installed with `npm ci
//! --ignore-scripts` (the network on, no package code) into a per-run copy of the folder that holds its
//! lock file, its lifecycle scripts then run offline (`npm rebuild`), and the copy is sealed before any test
//! runs; its tests run in that copy. See `docs/proof-packs.md#javascript-and-typescript`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Job, Marker, Outcome, Package, Run, Runner, TestId, TestResult, exited, join};
use crate::sandbox::FetchPlan;
use crate::sandbox::install::{Install, InstallStep};
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, shown_dir};

/// The extensions a test file of this runner has.
const EXTENSIONS: [&str; 8] = ["js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts"];

/// The variable a run's report file is named in.
const REPORT: &str = "AAYU_JS_REPORT";

/// node's test reporter, passed as a `data:` module ([`reporter_url`]): one JSON line per test start
/// and result into the file `$AAYU_JS_REPORT` names, with the test's full name (its describes' names and
/// its own, joined by ` > `), kept from the start events' nesting.
pub const NODE_REPORTER: &str = r#"import fs from "node:fs";
export default async function* aayu(source) {
  const out = process.env.AAYU_JS_REPORT;
  const stack = [];
  for await (const event of source) {
    const d = event.data || {};
    if (event.type === "test:start") {
      stack.length = d.nesting;
      stack.push(d.name);
    }
    if (out && (event.type === "test:pass" || event.type === "test:fail")) {
      const names = stack.slice(0, d.nesting).concat([d.name]);
      const error = d.details && d.details.error;
      fs.appendFileSync(out, JSON.stringify({
        type: event.type, name: d.name, full: names.join(" > "), nesting: d.nesting, file: d.file,
        line: d.line, skip: d.skip === undefined ? null : d.skip, todo: d.todo === undefined ? null : d.todo,
        error: error ? String((error.cause && error.cause.message) || error.message) : null
      }) + "\n");
    }
  }
}
"#;

/// [`NODE_REPORTER`] as a `data:` URL, percent-encoded (a `?` or `#` would end a URL's path).
fn reporter_url() -> String {
    let mut url = String::from("data:text/javascript,");
    for byte in NODE_REPORTER.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

pub struct Js;

/// The test runner a package names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    Vitest,
    Jest,
    Node,
}

impl Framework {
    pub fn name(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest",
            Framework::Jest => "jest",
            Framework::Node => "node:test",
        }
    }

    /// The runner `package.json` (and the config files beside it) names; why none, else.
    pub fn of(root: &Path, dir: &str) -> Result<Framework, String> {
        let manifest = read_manifest(root, dir)?;
        let has_dependency = |name: &str| {
            ["devDependencies", "dependencies"]
                .iter()
                .any(|k| manifest.get(k).and_then(|d| d.get(name)).is_some())
        };
        let has_config = |stem: &str| {
            ["js", "ts", "mjs", "cjs", "mts", "cts", "json"]
                .iter()
                .any(|ext| {
                    crate::safe_fs::is_regular(root, &join(dir, &format!("{stem}.config.{ext}")))
                })
        };
        if has_dependency("vitest") || has_config("vitest") {
            return Ok(Framework::Vitest);
        }
        if has_dependency("jest") || manifest.get("jest").is_some() || has_config("jest") {
            return Ok(Framework::Jest);
        }
        let script = manifest
            .get("scripts")
            .and_then(|s| s.get("test"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if script.split("&&").any(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            words.windows(2).any(|w| w[0] == "node" && w[1] == "--test")
        }) {
            return Ok(Framework::Node);
        }
        Err(format!(
            "`{}` names no test runner aayu reads: vitest or jest as a dependency (or their config file), or a `test` script that runs `node --test`",
            join(dir, "package.json")
        ))
    }
}

/// A package's `package.json`, read without following a link, capped.
fn read_manifest(root: &Path, dir: &str) -> Result<Value, String> {
    let path = join(dir, "package.json");
    let bytes = crate::safe_fs::read(root, &path, 4 << 20)
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("`{path}` is not JSON: {e}"))
}

impl Runner for Js {
    fn name(&self) -> &'static str {
        "js"
    }

    fn title(&self) -> &'static str {
        "JavaScript and TypeScript"
    }

    fn marker(&self) -> Marker {
        Marker {
            files: &["package.json"],
            above: false,
        }
    }

    fn claims_id(&self, rest: &str) -> bool {
        JsTest::parse(rest).is_ok()
    }

    fn tool(&self) -> Tool {
        Tool::Node
    }

    fn toolchain(
        &self,
        _toolchains: &Toolchains,
        _root: &Path,
        _package: &Package,
    ) -> Result<Vec<(String, OsString)>, String> {
        Ok(Vec::new())
    }

    /// The test's own title: `parse > rejects a trailing comma` → `rejects a trailing comma`.
    fn found_by<'a>(&self, rest: &'a str) -> &'a str {
        let name = rest.split_once("::").map_or(rest, |(_, n)| n);
        name.rsplit(" > ").next().unwrap_or(name)
    }

    fn check_id(&self, root: &Path, package: &Package, rest: &str) -> Result<(), String> {
        JsTest::parse(rest)?;
        Framework::of(root, package.dir).map(drop)
    }

    fn fetch(
        &self,
        _toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, String> {
        let manifest = read_manifest(root, package.dir)?;
        let depends = ["dependencies", "devDependencies", "optionalDependencies"]
            .iter()
            .any(|k| {
                manifest
                    .get(k)
                    .and_then(Value::as_object)
                    .is_some_and(|d| !d.is_empty())
            });
        if !depends {
            // Nothing to install: the tests run in the tree as it is.
            return Ok(None);
        }
        let lock = lock_folder(root, package.dir)?;
        registry_only(root, &lock)?;
        Ok(Some(FetchPlan {
            unit: lock.clone(),
            argv: Vec::new(),
            cwd: None,
            env: Vec::new(),
            lock: join(&lock, "package-lock.json"),
            lends_lock: false,
            offline_first: false,
            without_committed_lock: None,
            install: Some(npm_install(&lock)),
        }))
    }

    fn run_named(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        named(run, package, tests)
    }

    fn run_suite(
        &self,
        _run: &Run,
        _package: &Package,
        _instrumented: bool,
    ) -> Result<BTreeMap<TestId, TestResult>, String> {
        Err("a whole-suite run of a JavaScript package is not built yet (it comes with the coverage floor)".to_string())
    }

    /// The runners' own default patterns: jest's `__tests__/` and `*.{spec,test}.[jt]s?(x)`, vitest's
    /// `*.{test,spec}.?(c|m)[jt]s?(x)`, node's `*.test.*` and `test/`; and snapshots (`__snapshots__/`,
    /// `*.snap`).
    fn is_test_file(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let folders: Vec<&str> = path.split('/').rev().skip(1).collect();
        if folders
            .iter()
            .any(|f| matches!(*f, "__tests__" | "__snapshots__" | "test"))
        {
            return true;
        }
        if name.ends_with(".snap") {
            return true;
        }
        let parts: Vec<&str> = name.split('.').collect();
        parts.len() >= 3
            && parts[1..parts.len() - 1]
                .iter()
                .any(|p| *p == "test" || *p == "spec")
    }
}

/// The folder whose lock file installs the package: its own, or the nearest above it inside the tree
/// (an npm workspace's root). No `package-lock.json`: why, with the fix.
fn lock_folder(root: &Path, dir: &str) -> Result<String, String> {
    let mut at = dir.to_string();
    loop {
        for lock in ["package-lock.json", "npm-shrinkwrap.json"] {
            if crate::safe_fs::is_regular(root, &join(&at, lock)) {
                return Ok(at);
            }
        }
        for (lock, tool) in [("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn")] {
            if crate::safe_fs::is_regular(root, &join(&at, lock)) {
                return Err(format!(
                    "`{}` is {tool}'s: installing with {tool} is not built yet (aayu installs npm's `package-lock.json`); map the criterion to a behaviour check with `checks = [...]` meanwhile",
                    join(&at, lock)
                ));
            }
        }
        if at.is_empty() {
            break;
        }
        at = at
            .rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string());
    }
    Err(format!(
        "`{}` has dependencies but no lock file: commit a lock file (`npm install` writes `package-lock.json`): the gate installs exactly what it names",
        join(dir, "package.json")
    ))
}

/// Whether every package the lock names comes from a registry as a tarball with its hash, or is a folder
/// of the lock's own tree (a workspace member, a `file:` folder inside it): a git, `file:` tarball or URL
/// dependency is refused, read as data before anything runs — npm prepares a git dependency by running
/// npm in its clone, with the network on.
fn registry_only(root: &Path, lock: &str) -> Result<(), String> {
    let file = ["package-lock.json", "npm-shrinkwrap.json"]
        .into_iter()
        .map(|name| join(lock, name))
        .find(|path| crate::safe_fs::is_regular(root, path))
        .unwrap_or_else(|| join(lock, "package-lock.json"));
    let bytes = crate::safe_fs::read(root, &file, 64 << 20)
        .map_err(|e| format!("cannot read `{file}`: {e}"))?;
    let parsed: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("`{file}` is not JSON: {e}"))?;
    let Some(packages) = parsed.get("packages").and_then(Value::as_object) else {
        return Err(format!(
            "`{file}` has no `packages` (lockfileVersion 1): write it again with npm 7 or newer (`npm install`)"
        ));
    };
    for (at, entry) in packages {
        if at.is_empty() {
            continue;
        }
        let resolved = entry.get("resolved").and_then(Value::as_str);
        let linked = entry.get("link").and_then(Value::as_bool) == Some(true);
        let inside = |path: &str| {
            !path.starts_with('/') && path.split('/').all(|p| p != ".." && !p.is_empty())
        };
        let fine = if linked {
            resolved.is_some_and(inside)
        } else if !at.contains("node_modules/") {
            // A workspace member's own folder.
            inside(at)
        } else {
            entry.get("integrity").and_then(Value::as_str).is_some()
                && resolved.is_none_or(|r| r.starts_with("https://"))
        };
        if !fine {
            let shown = resolved
                .unwrap_or("(no resolved, no integrity)")
                .escape_debug()
                .to_string();
            return Err(format!(
                "`{file}`: `{}` comes from `{shown}`: aayu installs only registry tarballs named with their hash (and folders of this tree), so that no package code runs with the network on — a git or URL dependency is not one; publish it, or map the criterion to a behaviour check with `checks = [...]`",
                at.escape_debug()
            ));
        }
    }
    Ok(())
}

/// The install of the folder that holds the lock: `npm ci --ignore-scripts` with the network (no package
/// code runs), then the lifecycle scripts offline (`npm rebuild`), in the per-run copy.
fn npm_install(lock: &str) -> Install {
    // The download runs no program a package names: no git (a git dependency is refused anyway), no
    // script shell, no `node-options` — set as variables, which rank above any `.npmrc` npm reads.
    let shut = |network: bool| -> Vec<(String, String)> {
        let mut env = vec![("CI".to_string(), "true".to_string())];
        if network {
            env.extend(
                [
                    ("npm_config_ignore_scripts", "true"),
                    ("npm_config_git", "/bin/false"),
                    ("npm_config_script_shell", "/bin/false"),
                    ("npm_config_node_options", ""),
                ]
                .map(|(k, v)| (k.to_string(), v.to_string())),
            );
        }
        env
    };
    let npm = |what: &str, args: &[&str], network: bool| InstallStep {
        what: what.to_string(),
        argv: std::iter::once("npm")
            .chain(args.iter().copied())
            .chain([
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--cache",
                "@work@/dl",
            ])
            .map(String::from)
            .collect(),
        network,
        cwd: "@copy@".to_string(),
        env: shut(network),
        unless_empty: None,
        explain: Some(explain_npm),
        output: None,
    };
    Install {
        files: Vec::new(),
        copy: Some(lock.to_string()),
        steps: vec![
            npm(
                "installing what the lock file names (npm ci --ignore-scripts)",
                &["ci", "--ignore-scripts"],
                true,
            ),
            npm(
                "running the packages' install scripts (offline)",
                &["rebuild", "--offline"],
                false,
            ),
        ],
        env: vec![("AAYU_JS_COPY".to_string(), "@copy@".to_string())],
        npm_cache: true,
    }
}

/// npm's own error line: `npm error 404 Not Found - GET …`, `npm error code ETARGET` …
fn explain_npm(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("npm error") || l.starts_with("npm ERR!"))
        .filter(|l| !l.contains("A complete log of this run"))
        .collect();
    let not_found = lines
        .iter()
        .find(|l| l.contains(" 404 ") || l.contains("ETARGET"));
    let line = not_found.or_else(|| lines.first())?;
    Some(format!("npm said: {line}"))
}

/// A test id's rest: `<file>::<full name>`, the full name's titles joined by ` > `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsTest {
    pub file: String,
    pub full: String,
}

impl JsTest {
    pub fn parse(rest: &str) -> Result<JsTest, String> {
        let shape = || {
            format!(
                "`{rest}` is not `<test file>::<describe> > <test title>` relative to the package folder (`src/parse.test.ts::parse > rejects a trailing comma`)"
            )
        };
        let (file, full) = rest.split_once("::").ok_or_else(shape)?;
        let plain = !file.starts_with('/')
            && file
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..")
            && file
                .rsplit_once('.')
                .is_some_and(|(_, ext)| EXTENSIONS.contains(&ext));
        if !plain || full.trim().is_empty() || full.split(" > ").any(|t| t.is_empty()) {
            return Err(shape());
        }
        Ok(JsTest {
            file: file.to_string(),
            full: full.to_string(),
        })
    }

    /// The titles, outermost first.
    fn titles(&self) -> Vec<&str> {
        self.full.split(" > ").collect()
    }

    /// jest's and vitest's `-t`: a regular expression over the titles joined by one space, escaped and
    /// anchored.
    fn pattern(&self) -> String {
        format!("^{}$", regex::escape(&self.titles().join(" ")))
    }
}

/// Where the package's tests run: its folder in the per-run copy its install made (the copy is of the
/// lock's folder), else in the tree.
fn workdir(run: &Run, package: &Package) -> PathBuf {
    let copy = run
        .env
        .iter()
        .find(|(k, _)| k == "AAYU_JS_COPY")
        .map(|(_, v)| PathBuf::from(v));
    match (copy, lock_folder(run.root, package.dir)) {
        (Some(copy), Ok(lock)) => {
            let inside = package
                .dir
                .strip_prefix(lock.as_str())
                .map_or("", |r| r.trim_start_matches('/'));
            if inside.is_empty() {
                copy
            } else {
                copy.join(inside)
            }
        }
        _ => run.root.join(package.dir),
    }
}

/// The program of a package's runner: `node_modules/.bin/<name>` in its folder or the nearest above it
/// (a workspace hoists them).
fn bin(workdir: &Path, top: &Path, name: &str) -> Option<PathBuf> {
    workdir
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .map(|d| d.join("node_modules/.bin").join(name))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

fn named(run: &Run, package: &Package, tests: &[&TestId]) -> BTreeMap<TestId, TestResult> {
    let (wanted, mut results) = super::read_ids(tests, JsTest::parse);
    if wanted.is_empty() {
        return results;
    }
    let framework = match Framework::of(run.root, package.dir) {
        Ok(f) => f,
        Err(why) => {
            let all: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
            results.extend(super::all(&all, Outcome::NotRun(why)));
            return results;
        }
    };
    let dir = workdir(run, package);
    // The top of the install's copy, else of the tree: a runner's program is never found above it.
    let top = run
        .env
        .iter()
        .find(|(k, _)| k == "AAYU_JS_COPY")
        .map_or_else(|| run.root.to_path_buf(), |(_, v)| PathBuf::from(v));
    // One process per test (a test that ends the process decides nothing about another's); node runs
    // the test's whole file and the test is read by its full name.
    for (test, spec) in &wanted {
        let argv: Vec<String> = match framework {
            Framework::Node => vec![
                "node".into(),
                "--test".into(),
                format!("--test-reporter={}", reporter_url()),
                "--test-reporter-destination=/dev/null".into(),
                spec.file.clone(),
            ],
            Framework::Jest | Framework::Vitest => {
                let Some(program) = bin(
                    &dir,
                    &top,
                    if framework == Framework::Jest {
                        "jest"
                    } else {
                        "vitest"
                    },
                ) else {
                    results.insert(
                        (*test).clone(),
                        TestResult::of(Outcome::NotRun(format!(
                            "`{}` has no `node_modules/.bin/{}`: its install did not bring {}",
                            shown_dir(package.dir),
                            framework.name(),
                            framework.name()
                        ))),
                    );
                    continue;
                };
                let program = program.display().to_string();
                if framework == Framework::Jest {
                    vec![
                        program,
                        "--ci".into(),
                        "--json".into(),
                        "--outputFile=@report@".into(),
                        "--watchman=false".into(),
                        "--runTestsByPath".into(),
                        spec.file.clone(),
                        "-t".into(),
                        spec.pattern(),
                    ]
                } else {
                    vec![
                        program,
                        "run".into(),
                        spec.file.clone(),
                        "-t".into(),
                        spec.pattern(),
                        "--reporter=json".into(),
                        "--outputFile=@report@".into(),
                    ]
                }
            }
        };
        let mut env = run.env.clone();
        env.retain(|(k, _)| k != "AAYU_JS_COPY");
        env.push(("CI".to_string(), "true".into()));
        env.push(("FORCE_COLOR".to_string(), "0".into()));
        let ran = match run.launcher.launch(Job {
            what: format!(
                "{} `{}` in `{}`",
                framework.name(),
                spec.file,
                shown_dir(package.dir)
            ),
            argv,
            cwd: dir.clone(),
            env,
            timeout: run.timeout,
            report: Some(REPORT),
        }) {
            Ok(ran) => ran,
            Err(why) => {
                results.insert((*test).clone(), TestResult::of(Outcome::NotRun(why)));
                continue;
            }
        };
        let file = dir.join(&spec.file);
        let result = match framework {
            Framework::Node => node_result(spec, &file, &ran, run.root),
            _ => json_result(framework, spec, &file, &ran, run.root),
        };
        results.insert((*test).clone(), result);
    }
    results
}

/// A node:test result from aayu's reporter's lines: the test's own pass or fail, by file and full name.
fn node_result(spec: &JsTest, file: &Path, ran: &super::Ran, root: &Path) -> TestResult {
    let text = String::from_utf8_lossy(ran.report.as_deref().unwrap_or_default()).into_owned();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let in_file = |e: &Value| {
        e.get("file")
            .and_then(Value::as_str)
            .is_some_and(|f| Path::new(f) == file)
    };
    let own: Vec<Value> = events
        .iter()
        .filter(|e| in_file(e) && e.get("full").and_then(Value::as_str) == Some(spec.full.as_str()))
        .map(|e| {
            let mut e = e.clone();
            if let Some(o) = e.as_object_mut() {
                // The file as the id names it, never this machine's path.
                o.insert("file".into(), Value::String(spec.file.clone()));
            }
            e
        })
        .collect();
    let outcome = if ran.report.is_none() {
        Outcome::NotRun(exited(
            "node --test (its reporter wrote nothing)",
            ran,
            root,
        ))
    } else if own.len() > 1 {
        Outcome::NotRun(format!(
            "the events do not match node's record ({} results for `{}`): they are not a test result",
            own.len(),
            spec.full
        ))
    } else if let Some(event) = own.first() {
        let skipped = !event.get("skip").is_none_or(Value::is_null)
            || !event.get("todo").is_none_or(Value::is_null);
        match event.get("type").and_then(Value::as_str) {
            _ if skipped => Outcome::NotRun("the test was skipped".to_string()),
            Some("test:pass") => Outcome::Passed,
            _ => Outcome::Failed(
                event
                    .get("error")
                    .and_then(Value::as_str)
                    .map_or("the test failed".to_string(), |m| first_lines(m, 4)),
            ),
        }
    } else if let Some(load) = events.iter().find(|e| {
        e.get("nesting").and_then(Value::as_i64) == Some(0)
            && e.get("type").and_then(Value::as_str) == Some("test:fail")
            && e.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.ends_with(&spec.file))
    }) {
        Outcome::NotRun(format!(
            "`{}` failed to load: {}",
            spec.file,
            load.get("error")
                .and_then(Value::as_str)
                .map_or("", |m| m.lines().next().unwrap_or(""))
        ))
    } else {
        Outcome::NotFound(format!(
            "node --test found no test `{}` in `{}`",
            spec.full, spec.file
        ))
    };
    TestResult {
        outcome,
        events: own.iter().map(Value::to_string).collect(),
        pinned: None,
        note: Some("node:test".to_string()),
    }
}

/// A jest or vitest result from its JSON report (jest's shape, which vitest's `json` reporter writes):
/// exactly one test of the file whose `ancestorTitles` and `title` are the id's titles.
fn json_result(
    framework: Framework,
    spec: &JsTest,
    path: &Path,
    ran: &super::Ran,
    root: &Path,
) -> TestResult {
    let name = framework.name();
    let Some(report) = ran
        .report
        .as_deref()
        .and_then(|r| serde_json::from_slice::<Value>(r).ok())
    else {
        return TestResult::of(Outcome::NotRun(exited(
            &format!("{name} (it wrote no JSON report)"),
            ran,
            root,
        )));
    };
    let titles = spec.titles();
    let files: Vec<&Value> = report
        .get("testResults")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let file = files.iter().find(|f| {
        f.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| Path::new(n) == path)
    });
    let Some(file) = file else {
        return TestResult::of(Outcome::NotFound(format!(
            "{name} ran no file `{}`",
            spec.file
        )));
    };
    let matching: Vec<Value> = file
        .get("assertionResults")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| {
            let mut own: Vec<&str> = a
                .get("ancestorTitles")
                .and_then(Value::as_array)
                .map(|t| t.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            own.push(a.get("title").and_then(Value::as_str).unwrap_or_default());
            own == titles
        })
        .map(|a| {
            let mut a = a.clone();
            if let Some(o) = a.as_object_mut() {
                for timing in ["duration", "startAt", "perfStats"] {
                    o.shift_remove(timing);
                }
            }
            a
        })
        .collect();
    let status = |a: &Value| {
        a.get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let outcome = match matching.as_slice() {
        [] => {
            let message = file.get("message").and_then(Value::as_str).unwrap_or("");
            if file.get("status").and_then(Value::as_str) == Some("failed")
                && !message.trim().is_empty()
            {
                Outcome::NotRun(format!(
                    "`{}` failed to load: {}",
                    spec.file,
                    first_lines(message, 3)
                ))
            } else {
                Outcome::NotFound(format!(
                    "{name} found no test `{}` in `{}`",
                    spec.full, spec.file
                ))
            }
        }
        [one] => match status(one).as_str() {
            "passed" => Outcome::Passed,
            "failed" => {
                let message = one
                    .get("failureMessages")
                    .and_then(Value::as_array)
                    .and_then(|m| m.first())
                    .and_then(Value::as_str)
                    .unwrap_or("the test failed");
                if message.contains("snapshot")
                    && (message.contains("not written")
                        || message.contains("obsolete")
                        || message.contains("missing"))
                {
                    Outcome::NotRun(format!(
                        "a snapshot is missing or obsolete: {}",
                        first_lines(message, 2)
                    ))
                } else {
                    Outcome::Failed(first_lines(message, 4))
                }
            }
            other => Outcome::NotRun(format!(
                "the test was {}",
                if other.is_empty() { "not run" } else { other }
            )),
        },
        more => Outcome::Ambiguous(format!(
            "{} tests of `{}` are named `{}`: their titles must differ",
            more.len(),
            spec.file,
            spec.full
        )),
    };
    TestResult {
        outcome,
        events: matching.iter().map(Value::to_string).collect(),
        pinned: None,
        note: Some(name.to_string()),
    }
}

/// The first `n` lines of a message that say something (an `Error:` line, an assertion's diff), colour
/// codes removed.
fn first_lines(text: &str, n: usize) -> String {
    let plain = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .map(|re| re.replace_all(text, "").into_owned())
        .unwrap_or_else(|_| text.to_string());
    plain
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("at "))
        .take(n)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_js_id_is_its_file_and_its_titles() {
        let t =
            JsTest::parse("src/parse.test.ts::parse > rejects a trailing comma (x)").expect("id");
        assert_eq!(t.file, "src/parse.test.ts");
        assert_eq!(t.titles(), ["parse", "rejects a trailing comma (x)"]);
        assert_eq!(t.pattern(), r"^parse rejects a trailing comma \(x\)$");
        assert_eq!(Js.found_by("a.test.js::outer > inner"), "inner");
        for bad in [
            "src/parse.ts",
            "x.py::t",
            "../a.test.js::t",
            "a.test.js::",
            "a.test.js::a >  > b",
        ] {
            assert!(JsTest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn js_test_files_by_the_runners_patterns() {
        for yes in [
            "src/parse.test.ts",
            "src/x.spec.jsx",
            "lib/__tests__/a.js",
            "test/helpers.js",
            "src/__snapshots__/a.test.ts.snap",
            "a.test.mjs",
        ] {
            assert!(Js.is_test_file(yes), "{yes}");
        }
        for no in ["src/parse.ts", "src/testing.js", "contest.js", "test.js"] {
            assert!(!Js.is_test_file(no), "{no}");
        }
    }

    #[test]
    fn the_runner_is_the_one_the_package_names() {
        let dir = tempfile::tempdir().expect("dir");
        let of = |manifest: &str| {
            std::fs::write(dir.path().join("package.json"), manifest).expect("write");
            Framework::of(dir.path(), "")
        };
        assert_eq!(
            of(r#"{"devDependencies": {"vitest": "^3"}}"#),
            Ok(Framework::Vitest)
        );
        assert_eq!(of(r#"{"jest": {}}"#), Ok(Framework::Jest));
        assert_eq!(
            of(r#"{"scripts": {"test": "eslint . && node --test"}}"#),
            Ok(Framework::Node)
        );
        assert!(
            of(r#"{"scripts": {"test": "mocha"}}"#)
                .is_err_and(|e| e.contains("names no test runner"))
        );
    }
}
