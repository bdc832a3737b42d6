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

use super::{
    Job, Marker, Outcome, Package, Run, Runner, RunnerError, TestId, TestResult, exited, join,
};
use crate::safe_fs::Refused;
use crate::sandbox::FetchPlan;
use crate::sandbox::install::{Install, InstallStep};
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, shown_dir};

mod canary;
mod harness;

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

/// Why a JavaScript package's tests cannot be read, fetched or run here.
#[derive(Debug, thiserror::Error)]
pub enum JsError {
    #[error(
        "`{manifest}` names no test runner aayu reads: vitest or jest as a dependency (here or in a package above it, a workspace's root), their config file, or a `test` script that runs `node --test`"
    )]
    NoRunner { manifest: String },
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: Refused,
    },
    #[error("`{path}` is not JSON: {source}")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "`{manifest}` asks for Node `{wanted}` (`engines.node`), and this machine's is {have}: use an image with a Node that satisfies it, or widen the range"
    )]
    NodeUnfit {
        manifest: String,
        wanted: String,
        have: UnfitNode,
    },
    #[error(
        "`{file}` is in the package `{member}` (it has its own `package.json`): name it `{member}:{inner}::{full}`"
    )]
    InMember {
        file: String,
        member: String,
        inner: String,
        full: String,
    },
    #[error(
        "`{file}` is yarn 2 or newer's (no `# yarn lockfile v1` line): installing with yarn ≥ 2 is not built yet — its yarn is the repository's own `.yarn/releases` program, which aayu does not run with the network on; map the criterion to a behaviour check with `checks = [...]` meanwhile"
    )]
    Yarn2 { file: String },
    #[error(
        "`{manifest}` has dependencies but no lock file: commit a lock file (`npm install` writes `package-lock.json`; pnpm's `pnpm-lock.yaml` and yarn 1's `yarn.lock` do too): the gate installs exactly what it names"
    )]
    NoLock { manifest: String },
    #[error(transparent)]
    NotPrepared(Box<NotPrepared>),
    #[error(
        "`{file}` has no `packages` (lockfileVersion 1): write it again with npm 7 or newer (`npm install`)"
    )]
    NoPackages { file: String },
    #[error(
        "`{file}`: `{at}` comes from `{shown}`: aayu installs only registry tarballs named with their hash (and folders of this tree), so that no package code runs with the network on — a git or URL dependency is not one; publish it, or map the criterion to a behaviour check with `checks = [...]`"
    )]
    NotRegistry {
        file: String,
        at: String,
        shown: String,
    },
    #[error("`{file}` has no `lockfileVersion`: it is not a pnpm lock file aayu reads")]
    NoLockfileVersion { file: String },
    #[error(
        "`{file}` line {line}: `{text}`: {why}; aayu installs only tarballs named with their hash (and folders of this tree), so that no package code runs with the network on — a git or URL dependency is not one; publish it, or map the criterion to a behaviour check with `checks = [...]`"
    )]
    PnpmRefused {
        file: String,
        line: usize,
        text: String,
        why: &'static str,
    },
    #[error(
        "`{file}` line {line}: `{what}`: aayu installs only registry tarballs named with their hash (and folders of this tree), so that no package code runs with the network on — a git or URL dependency is not one; publish it, or map the criterion to a behaviour check with `checks = [...]`"
    )]
    YarnRefused {
        file: String,
        line: usize,
        what: String,
    },
    #[error(
        "`{file}` line {line}: `{what}` has no `integrity`: aayu installs only registry tarballs named with their hash; write the lock again with yarn 1.10 or newer (`yarn install`)"
    )]
    YarnUnhashed {
        file: String,
        line: usize,
        what: String,
    },
}

/// A lock file whose package manager (pnpm, yarn 1) corepack has not prepared on this machine.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{file}` is {tool}'s, and no {which} is prepared on this machine (looked in {shown}: {have}): the full image carries pnpm and yarn 1; elsewhere run `corepack install -g {install}` (with the COREPACK_HOME aayu sees)"
)]
pub struct NotPrepared {
    file: String,
    tool: &'static str,
    which: String,
    shown: String,
    have: String,
    install: String,
}

/// The version line of a Node that a package's `engines.node` does not accept, as shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`")]
pub struct UnfitNode(String);

/// A JavaScript test id's rest that is not `<test file>::<describe> > <test title>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not `<test file>::<describe> > <test title>` relative to the package folder (`src/parse.test.ts::parse > rejects a trailing comma`)"
)]
pub struct JsIdError(String);

impl Framework {
    pub fn name(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest",
            Framework::Jest => "jest",
            Framework::Node => "node:test",
        }
    }

    /// The runner `package.json` (and the config files beside it) names; why none, else.
    pub fn of(root: &Path, dir: &str) -> Result<Framework, JsError> {
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
        // A workspace member whose runner the workspace's root names (hoisted): the nearest package
        // above it inside the tree that has vitest or jest as a dependency.
        let mut at = dir.to_string();
        while !at.is_empty() {
            at = at
                .rsplit_once('/')
                .map_or(String::new(), |(p, _)| p.to_string());
            if !crate::safe_fs::is_regular(root, &join(&at, "package.json")) {
                continue;
            }
            let Ok(above) = read_manifest(root, &at) else {
                continue;
            };
            let names = |name: &str| {
                ["devDependencies", "dependencies"]
                    .iter()
                    .any(|k| above.get(k).and_then(|d| d.get(name)).is_some())
            };
            if names("vitest") {
                return Ok(Framework::Vitest);
            }
            if names("jest") {
                return Ok(Framework::Jest);
            }
        }
        Err(JsError::NoRunner {
            manifest: join(dir, "package.json"),
        })
    }
}

/// Whether node's version line (`v20.20.2`) satisfies the npm range `wanted`; `Err` holds the version as
/// shown. A range or a version line that cannot be read fits (npm itself only warns).
fn node_fits(wanted: &str, version: &str) -> Result<(), UnfitNode> {
    let shown = version.trim();
    let (Ok(range), Ok(have)) = (
        wanted.parse::<nodejs_semver::Range>(),
        shown
            .trim_start_matches('v')
            .parse::<nodejs_semver::Version>(),
    ) else {
        return Ok(());
    };
    if range.satisfies(&have) {
        Ok(())
    } else {
        Err(UnfitNode(shown.to_string()))
    }
}

/// A package's `package.json`, read without following a link, capped.
fn read_manifest(root: &Path, dir: &str) -> Result<Value, JsError> {
    let path = join(dir, "package.json");
    let bytes = crate::safe_fs::read(root, &path, 4 << 20).map_err(|source| JsError::Read {
        path: path.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| JsError::NotJson { path, source })
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
    ) -> Result<Vec<(String, OsString)>, RunnerError> {
        Ok(Vec::new())
    }

    /// The test's own title: `parse > rejects a trailing comma` → `rejects a trailing comma`.
    fn found_by<'a>(&self, rest: &'a str) -> &'a str {
        let name = rest.split_once("::").map_or(rest, |(_, n)| n);
        name.rsplit(" > ").next().unwrap_or(name)
    }

    /// `engines.node` (an npm range) against the machine's Node: one it does not satisfy blocks, with
    /// both named. A range aayu cannot read is left to npm, which only warns about it.
    fn accepts_tool(
        &self,
        root: &Path,
        package: &Package,
        version: &str,
    ) -> Result<(), RunnerError> {
        let manifest = read_manifest(root, package.dir)?;
        let Some(wanted) = manifest
            .get("engines")
            .and_then(|e| e.get("node"))
            .and_then(Value::as_str)
        else {
            return Ok(());
        };
        node_fits(wanted, version).map_err(|have| {
            JsError::NodeUnfit {
                manifest: join(package.dir, "package.json"),
                wanted: wanted.escape_debug().to_string(),
                have,
            }
            .into()
        })
    }

    fn check_id(&self, root: &Path, package: &Package, rest: &str) -> Result<(), RunnerError> {
        let spec = JsTest::parse(rest)?;
        // A file of a package below this one (a workspace member) is that package's test.
        let parts: Vec<&str> = spec.file.split('/').collect();
        for n in (1..parts.len()).rev() {
            let inner = parts[..n].join("/");
            let member = join(package.dir, &inner);
            if crate::safe_fs::is_regular(root, &join(&member, "package.json")) {
                return Err(JsError::InMember {
                    file: join(package.dir, &spec.file),
                    member,
                    inner: parts[n..].join("/"),
                    full: spec.full,
                }
                .into());
            }
        }
        Framework::of(root, package.dir)?;
        Ok(())
    }

    fn fetch(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, RunnerError> {
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
        let install = match lock.manager {
            Manager::Npm => {
                registry_only(root, &lock.folder)?;
                npm_install(&lock.folder)
            }
            Manager::Pnpm => {
                pnpm_registry_only(root, &lock.file)?;
                let (version, program) = prepared(toolchains, root, &lock, &manifest)?;
                pnpm_install(&lock.folder, &version, &program)
            }
            Manager::Yarn => {
                yarn_registry_only(root, &lock.file)?;
                let (version, program) = prepared(toolchains, root, &lock, &manifest)?;
                yarn_install(&lock.folder, &version, &program)
            }
        };
        Ok(Some(FetchPlan {
            unit: lock.folder.clone(),
            argv: Vec::new(),
            cwd: None,
            env: Vec::new(),
            lock: lock.file,
            lends_lock: false,
            offline_first: false,
            without_committed_lock: None,
            install: Some(install),
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
        let copy = run
            .env
            .iter()
            .find(|(k, _)| k == "AAYU_JS_COPY")
            .map(|(_, v)| PathBuf::from(v));
        let lock = lock_folder(run.root, package.dir).map(|l| l.folder);
        match (&copy, &lock) {
            (Some(copy), Ok(lock)) => {
                canary::canary(run.root, package, tests, on, Some((copy, lock)))
            }
            (Some(_), Err(e)) => tests
                .iter()
                .map(|id| ((*id).clone(), Err(e.to_string())))
                .collect(),
            (None, _) => canary::canary(run.root, package, tests, on, None),
        }
    }

    /// In the canary's copy itself (its `node_modules` linked to the install's), not in the install's
    /// copy of the head.
    fn run_canaries(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        let in_copy = Run {
            root: run.root,
            launcher: run.launcher,
            timeout: run.timeout,
            env: run
                .env
                .iter()
                .filter(|(k, _)| k != "AAYU_JS_COPY")
                .cloned()
                .collect(),
        };
        named(&in_copy, package, tests)
    }

    /// The runners' own default patterns: jest's `__tests__/` and `*.{spec,test}.[jt]s?(x)`, vitest's
    fn harness(&self, diff: &super::harness::Diff) -> Vec<super::harness::Change> {
        harness::changes(diff)
    }

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

/// The package manager a lock file is written by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Manager {
    Npm,
    Pnpm,
    Yarn,
}

impl Manager {
    fn name(self) -> &'static str {
        match self {
            Manager::Npm => "npm",
            Manager::Pnpm => "pnpm",
            Manager::Yarn => "yarn",
        }
    }
}

/// The lock file that installs a package: the folder that holds it (the package's own, or a workspace
/// root above it), the file, and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lock {
    folder: String,
    file: String,
    manager: Manager,
}

/// The lock file that installs the package: in its own folder, or the nearest above it inside the tree
/// (an npm, pnpm or yarn workspace's root). None: why, with the fix. A yarn ≥ 2 lock (`__metadata:`) is
/// refused: its yarn is the repository's own program.
fn lock_folder(root: &Path, dir: &str) -> Result<Lock, JsError> {
    let mut at = dir.to_string();
    loop {
        for (name, manager) in [
            ("package-lock.json", Manager::Npm),
            ("npm-shrinkwrap.json", Manager::Npm),
            ("pnpm-lock.yaml", Manager::Pnpm),
            ("yarn.lock", Manager::Yarn),
        ] {
            let file = join(&at, name);
            if !crate::safe_fs::is_regular(root, &file) {
                continue;
            }
            if manager == Manager::Yarn {
                let head = crate::safe_fs::read(root, &file, 64 << 20).unwrap_or_default();
                if !String::from_utf8_lossy(&head).contains("# yarn lockfile v1") {
                    return Err(JsError::Yarn2 { file });
                }
            }
            return Ok(Lock {
                folder: at,
                file,
                manager,
            });
        }
        if at.is_empty() {
            break;
        }
        at = at
            .rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string());
    }
    Err(JsError::NoLock {
        manifest: join(dir, "package.json"),
    })
}

/// The pnpm or yarn 1 that corepack prepared on this machine (`$COREPACK_HOME/v1/<tool>/<version>`),
/// run by node from there: never a shim in the checkout's folder, which would read its
/// `packageManager` and download what that names. The version `packageManager` names when prepared,
/// else the newest prepared one of its major (yarn: of 1), else the newest; none: blocked with the fix.
fn prepared(
    toolchains: &Toolchains,
    root: &Path,
    lock: &Lock,
    manifest: &Value,
) -> Result<(String, PathBuf), JsError> {
    let tool = lock.manager.name();
    let program = if lock.manager == Manager::Pnpm {
        "bin/pnpm.cjs"
    } else {
        "bin/yarn.js"
    };
    // `packageManager` of the package, else of the lock's folder: `pnpm@10.24.0+sha512.…`.
    let named = manifest
        .get("packageManager")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            read_manifest(root, &lock.folder)
                .ok()?
                .get("packageManager")?
                .as_str()
                .map(str::to_string)
        })
        .and_then(|field| {
            let (name, version) = field.split_once('@')?;
            (name == tool).then(|| version.split('+').next().unwrap_or(version).to_string())
        })
        .and_then(|v| v.parse::<nodejs_semver::Version>().ok());
    let home = toolchains.corepack_home.clone();
    let folder = home.as_ref().map(|h| h.join("v1").join(tool));
    let inside_tree = |p: &Path| {
        std::fs::canonicalize(p)
            .is_ok_and(|p| std::fs::canonicalize(root).is_ok_and(|r| p.starts_with(r)))
    };
    let mut found: Vec<(nodejs_semver::Version, PathBuf)> = folder
        .as_ref()
        .filter(|f| !inside_tree(f))
        .and_then(|f| std::fs::read_dir(f).ok())
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: nodejs_semver::Version = entry.file_name().to_str()?.parse().ok()?;
            let file = entry.path().join(program);
            let regular = std::fs::symlink_metadata(&file).ok()?.file_type().is_file();
            (regular && (lock.manager != Manager::Yarn || version.major() == 1))
                .then_some((version, file))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let pick = match &named {
        Some(want) => found
            .iter()
            .find(|(v, _)| v == want)
            .or_else(|| found.iter().rev().find(|(v, _)| v.major() == want.major())),
        None => found.last(),
    };
    if let Some((version, file)) = pick {
        return Ok((version.to_string(), file.clone()));
    }
    let shown = folder.as_ref().map_or_else(
        || "(no COREPACK_HOME, no HOME)".to_string(),
        |f| format!("`{}`", f.display()),
    );
    let have = if found.is_empty() {
        "none".to_string()
    } else {
        found
            .iter()
            .map(|(v, _)| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (which, install) = match (&named, lock.manager) {
        (Some(v), _) => (format!("{tool} {v}"), format!("{tool}@{v}")),
        (None, Manager::Yarn) => ("yarn 1".to_string(), "yarn@1".to_string()),
        (None, _) => (tool.to_string(), tool.to_string()),
    };
    Err(JsError::NotPrepared(Box::new(NotPrepared {
        file: lock.file.clone(),
        tool,
        which,
        shown,
        have,
        install,
    })))
}

/// Whether every package the lock names comes from a registry as a tarball with its hash, or is a folder
/// of the lock's own tree (a workspace member, a `file:` folder inside it): a git, `file:` tarball or URL
/// dependency is refused, read as data before anything runs — npm prepares a git dependency by running
/// npm in its clone, with the network on.
fn registry_only(root: &Path, lock: &str) -> Result<(), JsError> {
    let file = ["package-lock.json", "npm-shrinkwrap.json"]
        .into_iter()
        .map(|name| join(lock, name))
        .find(|path| crate::safe_fs::is_regular(root, path))
        .unwrap_or_else(|| join(lock, "package-lock.json"));
    let bytes = crate::safe_fs::read(root, &file, 64 << 20).map_err(|source| JsError::Read {
        path: file.clone(),
        source,
    })?;
    let parsed: Value = serde_json::from_slice(&bytes).map_err(|source| JsError::NotJson {
        path: file.clone(),
        source,
    })?;
    let Some(packages) = parsed.get("packages").and_then(Value::as_object) else {
        return Err(JsError::NoPackages { file });
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
            return Err(JsError::NotRegistry {
                file,
                at: at.escape_debug().to_string(),
                shown,
            });
        }
    }
    Ok(())
}

/// What every step of a JS install gets: `CI=true`; and the download runs no program a package names —
/// no git (a git dependency is refused anyway), no script shell, no `node-options` — set as variables,
/// which rank above any project config a package manager reads (npm's and pnpm's `npm_config_*`).
fn shut(network: bool) -> Vec<(String, String)> {
    let mut env = vec![("CI".to_string(), "true".to_string())];
    if network {
        env.extend(
            [
                // git itself refuses every transport (a command-line setting, which no repository's
                // config outranks): pnpm and yarn clone a git dependency with the `git` on PATH, and a
                // cloned dependency's `prepare` — or a `commit` read as a git option — would run with
                // the network on. The lock scans refuse git dependencies; this holds if one slips past.
                ("GIT_CONFIG_NOSYSTEM", "1"),
                ("GIT_CONFIG_GLOBAL", "/dev/null"),
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "protocol.allow"),
                ("GIT_CONFIG_VALUE_0", "never"),
                ("npm_config_ignore_scripts", "true"),
                ("npm_config_git", "/bin/false"),
                ("npm_config_script_shell", "/bin/false"),
                ("npm_config_node_options", ""),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
    }
    env
}

/// One step of a JS install, in the per-run copy.
fn js_step(what: &str, argv: Vec<String>, network: bool, env: &[(&str, &str)]) -> InstallStep {
    let mut all = shut(network);
    all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    InstallStep {
        what: what.to_string(),
        argv,
        network,
        cwd: "@copy@".to_string(),
        env: all,
        unless_empty: None,
        explain: Some(explain_js),
        output: None,
    }
}

fn js_args(program: &[&str], args: &[&str]) -> Vec<String> {
    program
        .iter()
        .chain(args)
        .map(|a| (*a).to_string())
        .collect()
}

/// The install of the folder that holds the lock: `npm ci --ignore-scripts` with the network (no package
/// code runs), then the lifecycle scripts offline (`npm rebuild`), in the per-run copy.
fn npm_install(lock: &str) -> Install {
    let tail = [
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--cache",
        "@work@/dl",
    ];
    let npm = |args: &[&str]| js_args(&["npm"], &[args, &tail[..]].concat());
    Install {
        files: Vec::new(),
        copy: Some(lock.to_string()),
        steps: vec![
            js_step(
                "installing what the lock file names (npm ci --ignore-scripts)",
                npm(&["ci", "--ignore-scripts"]),
                true,
                &[],
            ),
            js_step(
                "running the packages' install scripts (offline)",
                npm(&["rebuild", "--offline"]),
                false,
                &[],
            ),
        ],
        env: vec![("AAYU_JS_COPY".to_string(), "@copy@".to_string())],
        npm_cache: true,
        vite_temp: true,
    }
}

/// pnpm's install of a lock's folder, by the prepared pnpm at `program`: `install --frozen-lockfile
/// --ignore-scripts --ignore-pnpmfile` with the network (no `.pnpmfile.cjs` hook, no lifecycle script, no
/// switch to the version `packageManager` names), the store in the install's own folder; then
/// `rebuild` offline (the builds pnpm's own rules allow).
fn pnpm_install(lock: &str, version: &str, program: &Path) -> Install {
    let program = program.display().to_string();
    let tail = [
        "--store-dir=@work@/dl/store",
        "--config.cache-dir=@work@/dl/cache",
        "--config.manage-package-manager-versions=false",
        "--config.package-manager-strict=false",
        "--config.confirm-modules-purge=false",
        "--config.update-notifier=false",
        "--reporter=append-only",
    ];
    let pnpm = |args: &[&str]| js_args(&["node", program.as_str()], &[args, &tail[..]].concat());
    Install {
        files: Vec::new(),
        copy: Some(lock.to_string()),
        steps: vec![
            js_step(
                &format!(
                    "installing what the lock file names (pnpm {version} install --frozen-lockfile --ignore-scripts)"
                ),
                pnpm(&[
                    "install",
                    "--frozen-lockfile",
                    "--ignore-scripts",
                    "--ignore-pnpmfile",
                ]),
                true,
                &[],
            ),
            js_step(
                &format!("running the packages' install scripts (pnpm {version} rebuild, offline)"),
                pnpm(&["rebuild"]),
                false,
                &[("npm_config_offline", "true")],
            ),
        ],
        env: vec![("AAYU_JS_COPY".to_string(), "@copy@".to_string())],
        npm_cache: false,
        vite_temp: true,
    }
}

/// yarn 1's install of a lock's folder, by the prepared yarn at `program`: `install --frozen-lockfile
/// --ignore-scripts --no-default-rc` with the network (no `.yarnrc`, so no `yarn-path` program; the
/// cache in the install's own folder); then the lifecycle scripts offline (`npm rebuild`, which reads
/// the `node_modules` yarn 1 wrote).
fn yarn_install(lock: &str, version: &str, program: &Path) -> Install {
    let program = program.display().to_string();
    Install {
        files: Vec::new(),
        copy: Some(lock.to_string()),
        steps: vec![
            js_step(
                &format!(
                    "installing what the lock file names (yarn {version} install --frozen-lockfile --ignore-scripts)"
                ),
                js_args(
                    &["node", program.as_str()],
                    &[
                        "install",
                        "--frozen-lockfile",
                        "--ignore-scripts",
                        "--no-default-rc",
                        "--non-interactive",
                        "--no-progress",
                        "--cache-folder",
                        "@work@/dl/yarn",
                    ],
                ),
                true,
                &[("YARN_IGNORE_PATH", "1")],
            ),
            js_step(
                "running the packages' install scripts (npm rebuild, offline)",
                js_args(
                    &["npm"],
                    &[
                        "rebuild",
                        "--offline",
                        "--no-audit",
                        "--no-fund",
                        "--no-update-notifier",
                        "--cache",
                        "@work@/dl/npm",
                    ],
                ),
                false,
                &[],
            ),
        ],
        env: vec![("AAYU_JS_COPY".to_string(), "@copy@".to_string())],
        npm_cache: false,
        vite_temp: true,
    }
}

/// Whether every package `pnpm-lock.yaml` names resolves to a tarball with its hash or a folder of the
/// tree, read as data before anything runs. Conservatively, by line, in the shapes pnpm writes: each
/// `resolution:` is a one-line flow map of `integrity` (and an `https://` `tarball`), or of `directory`
/// inside the tree with `type: directory`; and no line uses what pnpm never writes but YAML reads —
/// anchors, aliases, tags, complex keys, escapes in double quotes, a quoted `resolution` key, a git
/// `repo`/`commit` anywhere. Anything else is refused naming its line. (git is also shut for the
/// install: see [`shut`].)
fn pnpm_registry_only(root: &Path, file: &str) -> Result<(), JsError> {
    let bytes = crate::safe_fs::read(root, file, 64 << 20).map_err(|source| JsError::Read {
        path: file.to_string(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.lines().any(|l| l.starts_with("lockfileVersion:")) {
        return Err(JsError::NoLockfileVersion {
            file: file.to_string(),
        });
    }
    let inside =
        |path: &str| !path.starts_with('/') && path.split('/').all(|p| p != ".." && !p.is_empty());
    let refused = |n: usize, line: &str, why: &'static str| {
        Err(JsError::PnpmRefused {
            file: file.to_string(),
            line: n + 1,
            text: line.trim().escape_debug().to_string(),
            why,
        })
    };
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let yaml_only = trimmed.starts_with(['?', '&', '*', '!', '{', '['])
            || trimmed.starts_with("- &")
            || trimmed.starts_with("- *")
            || [": &", ": *", ": !", " !!"]
                .iter()
                .any(|t| line.contains(t))
            || (line.contains('"') && line.contains('\\'))
            || line.contains('\t');
        if yaml_only {
            return refused(n, line, "a YAML form pnpm does not write");
        }
        let Some(rest) = trimmed.strip_prefix("resolution:") else {
            if line.contains("resolution")
                || ["commit:", "repo:", "type: git", "tarball:"]
                    .iter()
                    .any(|k| line.contains(k))
            {
                return refused(n, line, "a resolution outside pnpm's own shape");
            }
            continue;
        };
        let rest = rest.trim();
        let fields: Option<Vec<(&str, &str)>> = rest
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .filter(|body| !body.contains(['{', '}', '[', ']', '&', '*', '!']))
            .map(|body| {
                body.split(',')
                    .map(|kv| {
                        kv.split_once(':').map_or(("", ""), |(k, v)| {
                            (k.trim(), v.trim().trim_matches(['\'', '"']))
                        })
                    })
                    .collect()
            });
        let fine = fields.is_some_and(|mut f| {
            f.sort();
            let keys: Vec<&str> = f.iter().map(|(k, _)| *k).collect();
            let value = |k: &str| f.iter().find(|(key, _)| *key == k).map_or("", |(_, v)| *v);
            match keys.as_slice() {
                ["integrity"] => value("integrity").starts_with("sha"),
                ["integrity", "tarball"] => {
                    value("integrity").starts_with("sha")
                        && value("tarball").starts_with("https://")
                }
                ["directory", "type"] => value("type") == "directory" && inside(value("directory")),
                _ => false,
            }
        });
        if !fine {
            return refused(
                n,
                line,
                "not a tarball with its hash or a folder of the tree",
            );
        }
    }
    Ok(())
}

/// The same for yarn 1's `yarn.lock`: an entry with `resolved` names an `https://` tarball and has an
/// `integrity`; one without names only `file:`/`link:` folders inside the tree.
fn yarn_registry_only(root: &Path, file: &str) -> Result<(), JsError> {
    let bytes = crate::safe_fs::read(root, file, 64 << 20).map_err(|source| JsError::Read {
        path: file.to_string(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let inside = |path: &str| {
        let path = path.trim_start_matches("./");
        !path.starts_with('/')
            && !path.ends_with(".tgz")
            && !path.ends_with(".tar.gz")
            && path.split('/').all(|p| p != ".." && !p.is_empty())
    };
    let refuse = |n: usize, what: &str| {
        Err(JsError::YarnRefused {
            file: file.to_string(),
            line: n,
            what: what.escape_debug().to_string(),
        })
    };
    let unhashed = |n: usize, what: &str| {
        Err(JsError::YarnUnhashed {
            file: file.to_string(),
            line: n,
            what: what.escape_debug().to_string(),
        })
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let header = lines[i];
        if header.is_empty() || header.starts_with('#') || header.starts_with(' ') {
            i += 1;
            continue;
        }
        let at = i + 1;
        let mut resolved = None;
        let mut integrity = false;
        i += 1;
        while i < lines.len() && lines[i].starts_with(' ') {
            let field = lines[i].trim();
            if let Some(v) = field.strip_prefix("resolved") {
                resolved = Some(v.trim_start_matches(':').trim().trim_matches('"'));
            }
            integrity |= field.starts_with("integrity");
            i += 1;
        }
        // yarn picks how to fetch from each key's spec, not from `resolved`: a key is a registry range
        // (or an `npm:` alias of one) or a folder of the tree, never a git or URL spec.
        let keys = header.trim_end_matches(':');
        let folder = |spec: &str| {
            spec.strip_prefix("file:")
                .or_else(|| spec.strip_prefix("link:"))
                .is_some_and(inside)
        };
        let registry = |spec: &str| {
            let spec = spec.strip_prefix("npm:").map_or(spec, |alias| {
                alias
                    .get(1..)
                    .and_then(|a| a.split_once('@'))
                    .map_or("", |(_, range)| range)
            });
            !spec.contains([':', '/', '#', '\\', '"'])
        };
        let specs: Vec<Option<&str>> = keys
            .split(',')
            .map(|key| {
                let key = key.trim().trim_matches('"');
                key.get(1..).and_then(|k| k.split_once('@')).map(|(_, s)| s)
            })
            .collect();
        if keys.contains('\'')
            || specs
                .iter()
                .any(|s| s.is_none_or(|s| !registry(s) && !folder(s)))
        {
            return refuse(at, keys);
        }
        match resolved {
            Some(url) if url.starts_with("https://") && integrity => {}
            Some(url) if url.starts_with("https://") && !url.contains("codeload.") => {
                return unhashed(at, header.trim_end_matches(':'));
            }
            Some(url) => return refuse(at, url),
            None => {
                if !specs.iter().flatten().all(|s| folder(s)) {
                    return refuse(at, keys);
                }
            }
        }
    }
    Ok(())
}

/// The package manager's own error line: npm's `npm error 404 Not Found - GET …` or `npm error code
/// ETARGET`, pnpm's `ERR_PNPM_…`, yarn's `error …`.
fn explain_js(stderr: &str) -> Option<String> {
    explain_npm(stderr).or_else(|| {
        let line = stderr.lines().map(str::trim).find(|l| {
            l.contains("ERR_PNPM_") || l.starts_with("error ") || l.starts_with("Error:")
        })?;
        Some(format!("it said: {line}"))
    })
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
    pub fn parse(rest: &str) -> Result<JsTest, JsIdError> {
        let shape = || JsIdError(rest.to_string());
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
                .strip_prefix(lock.folder.as_str())
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
            results.extend(super::all(&all, Outcome::NotRun(why.to_string())));
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
            stdin: Vec::new(),
        }) {
            Ok(ran) => ran,
            Err(why) => {
                results.insert(
                    (*test).clone(),
                    TestResult::of(Outcome::NotRun(why.to_string())),
                );
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
                    Outcome::NotRun(if message.contains("obsolete") {
                        format!("a snapshot is obsolete: {}", first_lines(message, 2))
                    } else {
                        format!(
                            "a snapshot is missing (with CI=true {} writes none): run the test once on your machine, review the snapshot it writes and commit it: {}",
                            framework.name(),
                            first_lines(message, 2)
                        )
                    })
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
    fn engines_node_is_an_npm_range_over_the_machines_version() {
        assert_eq!(node_fits(">=18", "v20.20.2"), Ok(()));
        assert_eq!(node_fits("^20.19.0 || >=22", "v20.20.2"), Ok(()));
        assert_eq!(node_fits(">=18.0.0 <21", "v20.20.2"), Ok(()));
        assert_eq!(
            node_fits(">=22", "v20.20.2").map_err(|e| e.to_string()),
            Err("`v20.20.2`".to_string())
        );
        assert_eq!(
            node_fits("^18", "v20.20.2").map_err(|e| e.to_string()),
            Err("`v20.20.2`".to_string())
        );
        // What aayu cannot read is npm's to warn about.
        assert_eq!(node_fits("lts/*", "v20.20.2"), Ok(()));
        assert_eq!(node_fits(">=99", "node: unknown"), Ok(()));
    }

    #[test]
    fn a_pnpm_or_yarn_lock_with_anything_but_hashed_tarballs_and_tree_folders_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let pnpm = |body: &str| {
            std::fs::write(
                dir.path().join("pnpm-lock.yaml"),
                format!("lockfileVersion: '9.0'\n\npackages:\n\n{body}"),
            )
            .expect("write");
            pnpm_registry_only(dir.path(), "pnpm-lock.yaml").map_err(|e| e.to_string())
        };
        assert_eq!(
            pnpm("  a@1.0.0:\n    resolution: {integrity: sha512-AAAA==}\n"),
            Ok(())
        );
        assert_eq!(
            pnpm("  a@file:lib:\n    resolution: {directory: lib, type: directory}\n"),
            Ok(())
        );
        for hostile in [
            "  x@1:\n    resolution: {commit: abc, repo: https://h/x, type: git}\n",
            // What YAML reads as four keys, a line scan splitting on \", \" as one.
            "  x@1:\n    resolution: {integrity: sha512-AAAA,commit: --upload-pack=touch,repo: file://github.com/x,type: git}\n",
            // A quoted key, an alias, an escape: forms pnpm never writes.
            "  x@1:\n    'resolution': {commit: abc, repo: https://h/x, type: git}\n",
            "  x@1:\n    resolution: *a\n",
            "  x@1:\n    \"resolutio\\x6e\": {commit: a}\n",
            "  x@1:\n    resolution: {directory: ../outside, type: directory}\n",
            "  x@1:\n    resolution:\n      tarball: https://h/x.tgz\n",
        ] {
            assert!(pnpm(hostile).is_err(), "{hostile}");
        }
        let yarn = |body: &str| {
            std::fs::write(
                dir.path().join("yarn.lock"),
                format!("# yarn lockfile v1\n\n\n{body}"),
            )
            .expect("write");
            yarn_registry_only(dir.path(), "yarn.lock").map_err(|e| e.to_string())
        };
        assert_eq!(
            yarn(
                "left-pad@1.3.0, \"@s/x@^1 || ^2\":\n  version \"1.3.0\"\n  resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#5b\"\n  integrity sha512-AA==\n"
            ),
            Ok(())
        );
        assert_eq!(yarn("\"lib@file:./lib\":\n  version \"1.0.0\"\n"), Ok(()));
        for hostile in [
            // yarn fetches by the key's spec: a git key with a registry-looking `resolved` is git.
            "\"evil@git+https://git.example/evil.git\":\n  version \"1.0.0\"\n  resolved \"https://git.example/evil.git#0a\"\n  integrity sha512-AA==\n",
            "evil@user/repo:\n  version \"1.0.0\"\n  resolved \"https://codeload.github.com/user/repo/tar.gz/0a\"\n  integrity sha512-AA==\n",
            "x@1.0.0:\n  version \"1.0.0\"\n  resolved: \"git+ssh://git@h/x.git#0a\"\n  integrity sha512-AA==\n",
            "x@1.0.0:\n  version \"1.0.0\"\n  resolved \"https://registry.yarnpkg.com/x/-/x-1.0.0.tgz\"\n",
            "\"lib@file:../outside\":\n  version \"1.0.0\"\n",
        ] {
            assert!(yarn(hostile).is_err(), "{hostile}");
        }
        // Should one slip past, git itself refuses every transport in the networked step.
        let shut = shut(true);
        for (k, v) in [
            ("GIT_CONFIG_KEY_0", "protocol.allow"),
            ("GIT_CONFIG_VALUE_0", "never"),
        ] {
            assert!(shut.contains(&(k.to_string(), v.to_string())), "{shut:?}");
        }
        assert!(
            !super::shut(false)
                .iter()
                .any(|(k, _)| k.starts_with("GIT_"))
        );
    }

    #[test]
    fn the_runner_is_the_one_the_package_names() {
        let dir = tempfile::tempdir().expect("dir");
        let of = |manifest: &str| {
            std::fs::write(dir.path().join("package.json"), manifest).expect("write");
            Framework::of(dir.path(), "")
        };
        assert_eq!(
            of(r#"{"devDependencies": {"vitest": "^3"}}"#).ok(),
            Some(Framework::Vitest)
        );
        assert_eq!(of(r#"{"jest": {}}"#).ok(), Some(Framework::Jest));
        assert_eq!(
            of(r#"{"scripts": {"test": "eslint . && node --test"}}"#).ok(),
            Some(Framework::Node)
        );
        assert!(
            of(r#"{"scripts": {"test": "mocha"}}"#)
                .is_err_and(|e| e.to_string().contains("names no test runner"))
        );
        // A workspace member whose runner is hoisted to the workspace's root.
        std::fs::create_dir_all(dir.path().join("packages/cli")).expect("member");
        std::fs::write(
            dir.path().join("packages/cli/package.json"),
            r#"{"name": "cli", "scripts": {"test": "vitest run"}}"#,
        )
        .expect("write");
        assert!(Framework::of(dir.path(), "packages/cli").is_err());
        of(r#"{"workspaces": ["packages/*"], "devDependencies": {"vitest": "^3"}}"#)
            .expect("the root");
        assert_eq!(
            Framework::of(dir.path(), "packages/cli").ok(),
            Some(Framework::Vitest)
        );
        // An id of the root package that names a member's file is pointed to the member.
        let package = Package {
            runner: &Js,
            dir: "",
            home: "",
        };
        assert_eq!(
            Js.check_id(dir.path(), &package, "packages/cli/src/a.test.ts::a > b")
                .map_err(|e| e.to_string()),
            Err("`packages/cli/src/a.test.ts` is in the package `packages/cli` (it has its own `package.json`): name it `packages/cli:src/a.test.ts::a > b`".to_string())
        );
        assert_eq!(
            Js.check_id(dir.path(), &package, "src/a.test.ts::a > b")
                .map_err(|e| e.to_string()),
            Ok(())
        );
    }
}
