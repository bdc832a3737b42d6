//! Python: a package folder holding `pyproject.toml`, `setup.cfg`, `setup.py`, `pytest.ini` or `tox.ini`,
//! tested with pytest. A test id's rest is pytest's node id relative to the package folder, whole
//! (`tests/test_x.py::TestK::test_m[2]`): it is passed to pytest as one argument, never through a shell
//! or `-k`, and read from the events aayu's own plugin writes ([`PLUGIN`]), never from pytest's output:
//! `python -m pytest -p no:cacheprovider -p aayu_pytest --rootdir . -q <node id>…` in the package folder,
//! the plugin loaded first (`-p`) and handed the run's nonce on its standard input.
//!
//! The dependencies are installed without running package code on the network: the requirements are read
//! as data (or, for a package whose requirements only its build backend knows, from that backend run
//! offline as the sandbox uid), downloaded as wheels only into the run's wheelhouse, then installed
//! offline into a fresh virtual environment per tree (the base's is its own), from a per-run copy of
//! the package folder; then sealed read-only. See `docs/proof-packs.md#python`.

mod canary;
mod harness;
mod venv;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{
    Exited, Job, LaunchError, Marker, Outcome, Package, Run, Runner, RunnerError, TestId,
    TestResult, exited, join,
};
use crate::safe_fs::Refused;
use crate::sandbox::FetchPlan;
use crate::sandbox::install::{Install, InstallStep, Output};
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, shown_dir};

/// The pytest aayu installs when a package's test requirements do not bring one (`docs/proof-packs.md`).
pub const PYTEST_PIN: &str = "pytest==9.2.0";

/// Set in a run's variables by [`Runner::run_canaries`] (never passed on): pytest runs with
/// `--runxfail`.
const CANARY_RUN: &str = "AAYU_PYTEST_CANARY_RUN";

/// aayu's pytest plugin (loaded by `-p aayu_pytest`).
pub const PLUGIN: &str = include_str!("python/aayu_pytest.py");

/// The metadata step for a package whose requirements its build backend computes.
const META: &str = include_str!("python/aayu_meta.py");

/// The files that make a folder a Python package, in the order they are read.
const MARKERS: [&str; 5] = [
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pytest.ini",
    "tox.ini",
];

/// The variable the plugin's events file is named in.
const EVENTS: &str = "AAYU_PYTEST_EVENTS";

pub struct Python;

/// Why a Python package's requirements cannot be read, or its tests run.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: Refused,
    },
    #[error("`{path}` is not a pyproject aayu can read: {}", .source.message())]
    Pyproject {
        path: String,
        #[source]
        source: toml::de::Error,
    },
    #[error(transparent)]
    Requirement(#[from] RefusedRequirement),
    #[error("`{file}`: {why}")]
    Group {
        file: String,
        #[source]
        why: GroupError,
    },
    #[error("`{file}` {group}: {why}")]
    Poetry {
        file: String,
        group: String,
        #[source]
        why: PoetryError,
    },
    #[error("`{shown}`: `-r` files include each other")]
    IncludesItself { shown: String },
    #[error("{at}: `-r {other}` is outside the package folder")]
    Outside { at: String, other: String },
    #[error("{at}: `-r {other}` names no file of the package")]
    NoFile { at: String, other: String },
    #[error(
        "{at}: `{line}` installs another local folder: aayu installs only the package itself (from a copy of its folder) and the rest as wheels by name, so that no other package's code is built; publish it as a wheel (to the index or `[verify] python_wheels`), or map the criterion to a behaviour check with `checks = [...]`"
    )]
    Editable { at: String, line: String },
    #[error(
        "{at}: `{line}` is an option, and aayu reads requirements files as data: set the index in aayu's environment (PIP_INDEX_URL), a wheelhouse with `[verify] python_wheels`"
    )]
    Option { at: String, line: String },
    #[error("{at}: {why}")]
    Refused {
        at: String,
        #[source]
        why: RefusedRequirement,
    },
    #[error(
        "the build backend's requirements hold `{line}`, which is an option: aayu downloads requirements by name only"
    )]
    BackendOption { line: String },
    #[error(
        "the Python environment of `{shown}` was not installed (its install is made with the dependencies, before any test)"
    )]
    NotInstalled { shown: String },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(
        "the aayu pytest plugin did not load (check `addopts` in the package's pytest configuration: a plugin that replaces the run, or a module `aayu_pytest` of the package's)"
    )]
    NotLoaded,
    #[error(
        "the pytest events are not this run's plugin's record ({why}): no result of this run is trusted"
    )]
    NotRecord { why: String },
    #[error("{}; pytest said: {said}", PythonError::NotLoaded)]
    NotLoadedSaid { said: Exited },
}

/// A requirement aayu does not download by name (see [`refused_requirement`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{shown}` in `{from}` {what}: aayu installs dependencies only as wheels by name from the index (no package code runs with the network on); publish it to an index or a wheelhouse (`[verify] python_wheels`), or map the criterion to a behaviour check with `checks = [...]`"
)]
pub struct RefusedRequirement {
    shown: String,
    from: String,
    what: &'static str,
}

/// Why a PEP 735 dependency group cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    #[error("dependency group `{0}` includes itself")]
    IncludesItself(String),
    #[error("no dependency group `{0}`")]
    Missing(String),
    #[error("dependency group `{name}` holds {item}")]
    Holds { name: String, item: toml::Value },
}

/// Why a poetry dependency table cannot be read as requirements.
#[derive(Debug, thiserror::Error)]
pub enum PoetryError {
    #[error(
        "`{name}` is a `{source_key}` dependency: aayu installs dependencies only as wheels by name from the index"
    )]
    Source {
        name: String,
        source_key: &'static str,
    },
    #[error("`{name}` is {value}, which aayu cannot read as a dependency")]
    Unreadable { name: String, value: toml::Value },
    #[error("`{name} = \"{constraint}\"` is a version constraint aayu cannot read")]
    Constraint { name: String, constraint: String },
}

/// A pytest id's rest that is not a node id relative to the package folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a pytest node id relative to the package folder (`tests/test_x.py::test_name`, `tests/test_x.py::TestClass::test_name[param]`)"
)]
pub struct PyIdError(String);

impl Runner for Python {
    fn name(&self) -> &'static str {
        "pytest"
    }

    fn title(&self) -> &'static str {
        "Python"
    }

    fn marker(&self) -> Marker {
        Marker {
            files: &MARKERS,
            above: false,
        }
    }

    fn claims_id(&self, rest: &str) -> bool {
        PyTest::parse(rest).is_ok()
    }

    fn tool(&self) -> Tool {
        Tool::Python
    }

    fn toolchain(
        &self,
        _toolchains: &Toolchains,
        _root: &Path,
        _package: &Package,
    ) -> Result<Vec<(String, OsString)>, RunnerError> {
        Ok(Vec::new())
    }

    /// The test function's name: `tests/test_x.py::TestK::test_m[2]` → `test_m`.
    fn found_by<'a>(&self, rest: &'a str) -> &'a str {
        let base = rest.split('[').next().unwrap_or(rest);
        base.rsplit("::").next().unwrap_or(base)
    }

    fn check_id(&self, _root: &Path, _package: &Package, rest: &str) -> Result<(), RunnerError> {
        PyTest::parse(rest)?;
        Ok(())
    }

    fn fetch(
        &self,
        _toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, RunnerError> {
        let recipe = Recipe::read(root, package.dir)?;
        Ok(Some(FetchPlan {
            unit: package.dir.to_string(),
            argv: Vec::new(),
            cwd: None,
            env: Vec::new(),
            lock: join(package.dir, recipe.source),
            lends_lock: false,
            offline_first: false,
            without_committed_lock: None,
            install: Some(recipe.install(package.dir)),
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

    /// `test_*.py`, `*_test.py`, `conftest.py`, and anything under a `tests/` or `test/` folder (their
    /// data files too).
    fn harness(&self, diff: &super::harness::Diff) -> Vec<super::harness::Change> {
        harness::changes(diff)
    }

    fn installed(&self, env: &[(String, OsString)]) -> Option<super::harness::Environment> {
        venv::inspect(env, PLUGIN)
    }

    fn canaries(&self) -> bool {
        true
    }

    /// With `--runxfail`: a test marked `xfail` (on any condition, through a parameter, by a
    /// `pytestmark`) gets its canary too, and must fail with it.
    fn run_canaries(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        let mut env = run.env.clone();
        env.push((CANARY_RUN.to_string(), "1".into()));
        let canary = Run {
            root: run.root,
            launcher: run.launcher,
            timeout: run.timeout,
            env,
        };
        named(&canary, package, tests)
    }

    fn canary(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
        on: &super::Canary,
    ) -> BTreeMap<TestId, Result<TestId, String>> {
        canary::canary(run, package, tests, on)
    }

    fn is_test_file(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let in_tests = path
            .split('/')
            .rev()
            .skip(1)
            .any(|part| part == "tests" || part == "test");
        (name.starts_with("test_") && name.ends_with(".py"))
            || name.ends_with("_test.py")
            || name == "conftest.py"
            || in_tests
    }
}

/// A pytest node id: `<file>.py::<name>[::<name>…][<parameters>]`, split at `::` only before the first
/// `[` (a parameter may hold `::`, `[`, quotes and `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyTest {
    pub file: String,
    pub names: Vec<String>,
    pub parameters: Option<String>,
}

impl PyTest {
    pub fn parse(rest: &str) -> Result<PyTest, PyIdError> {
        let shape = || PyIdError(rest.to_string());
        let (base, parameters) = match rest.find('[') {
            Some(at) => (&rest[..at], Some(&rest[at..])),
            None => (rest, None),
        };
        if parameters.is_some_and(|p| !p.ends_with(']') || p.len() < 2) {
            return Err(shape());
        }
        let mut parts = base.split("::");
        let file = parts.next().unwrap_or_default();
        let names: Vec<String> = parts.map(str::to_string).collect();
        let plain_file = file.ends_with(".py")
            && !file.starts_with('/')
            && file
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        let identifiers = !names.is_empty()
            && names.iter().all(|n| {
                n.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && n.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        if !plain_file || !identifiers {
            return Err(shape());
        }
        Ok(PyTest {
            file: file.to_string(),
            names,
            parameters: parameters.map(str::to_string),
        })
    }
}

/// How a package's requirements are known, and what its install runs.
struct Recipe {
    /// The file the requirements are read from (for the fetch's lock field): `pyproject.toml`, …
    source: &'static str,
    /// Whether the package itself is installed (it has a build: `pyproject.toml` with a build system or
    /// a project, `setup.py`, `setup.cfg`).
    installable: bool,
    /// Its build requirements (`[build-system] requires`, or setuptools for a `setup.py`).
    build: Vec<String>,
    /// Every requirement to download and install, when the package writes them as data; `None` when its
    /// build backend must say (a `dynamic` list, or only `setup.py`/`setup.cfg`).
    requirements: Option<Vec<String>>,
    /// The test requirements read from a requirements file or a dependency group, for the backend's
    /// list when it has no test extra.
    more: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Pyproject {
    #[serde(rename = "build-system")]
    build_system: Option<BuildSystem>,
    project: Option<Project>,
    #[serde(rename = "dependency-groups", default)]
    dependency_groups: BTreeMap<String, Vec<toml::Value>>,
    #[serde(default)]
    tool: toml::Table,
}

#[derive(Debug, Default, Deserialize)]
struct BuildSystem {
    #[serde(default)]
    requires: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Project {
    name: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
    #[serde(rename = "optional-dependencies", default)]
    optional_dependencies: BTreeMap<String, toml::Spanned<Vec<String>>>,
    #[serde(default)]
    dynamic: Vec<String>,
}

/// The extras a test run installs, by name, the first declared of them.
const TEST_EXTRAS: [&str; 3] = ["test", "tests", "testing"];

/// The requirements files a test run installs when the package declares no test extra, the first there.
const REQUIREMENTS: [&str; 8] = [
    "requirements-test.txt",
    "requirements-tests.txt",
    "test-requirements.txt",
    "requirements/test*.txt",
    "tests/requirements.txt",
    "requirements-dev.txt",
    "dev-requirements.txt",
    "requirements.txt",
];

/// A requirement's name, normalised (PEP 503): `Foo_Bar.baz` → `foo-bar-baz`.
fn normalised(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The name a requirement line starts with.
fn requirement_name(line: &str) -> &str {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(line.len());
    &line[..end]
}

/// The extras a requirement asks for: `pkg[a, b]>=1` → `a`, `b`.
fn requirement_extras(line: &str) -> Vec<String> {
    let rest = &line[requirement_name(line).len()..];
    let rest = rest.trim_start();
    match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((inside, _)) => inside
            .split(',')
            .map(|e| normalised(e.trim()))
            .filter(|e| !e.is_empty())
            .collect(),
        None => Vec::new(),
    }
}

/// A requirement as aayu passes it to pip: a PEP 508 name, extras, version clauses and a marker, and
/// nothing else — no option, URL, path, `@` direct reference, `$` variable, `#` comment, backslash or
/// control character, so that pip reads exactly one requirement by name from it.
static REQUIREMENT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    let name = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?";
    let version = r"(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_]+";
    regex::Regex::new(&format!(
        r#"^{name}\s*(?:\[\s*{name}(?:\s*,\s*{name})*\s*\])?\s*(?:\(?\s*{version}(?:\s*,\s*{version})*\s*\)?)?\s*(?:;\s*[A-Za-z0-9_ .'"<>=!~(),*+]*)?$"#
    ))
    .expect("the requirement pattern")
});

/// Why a requirement cannot be downloaded as a wheel by name: an option, a URL, a `git+` source, a
/// local path, or any text that is not a plain requirement ([`REQUIREMENT`]).
fn refused_requirement(line: &str, from: &str) -> Option<RefusedRequirement> {
    let shown = line.escape_debug().to_string().replace('`', "'");
    // Any word pip would read as an option (`--no-binary`, after a marker too).
    let option = line.split_whitespace().any(|word| word.starts_with('-'));
    let url = line.contains("://") || line.contains('@') || line.trim_start().starts_with("git+");
    let path = line.starts_with('.') || line.starts_with('/');
    let what = if option {
        "carries a pip option, and aayu reads requirements as data (a name, extras, versions, markers)"
    } else if path {
        "is a local path"
    } else if url {
        "is a URL or VCS requirement"
    } else if !REQUIREMENT.is_match(line) {
        "is not a plain requirement (a name, extras, versions and a marker, on one line)"
    } else {
        return None;
    };
    Some(RefusedRequirement {
        shown,
        from: from.to_string(),
        what,
    })
}

impl Recipe {
    fn read(root: &Path, dir: &str) -> Result<Recipe, PythonError> {
        let has = |name: &str| crate::safe_fs::is_regular(root, &join(dir, name));
        let pyproject = read_pyproject(root, dir)?;
        let legacy = has("setup.py") || has("setup.cfg");
        let project = pyproject.as_ref().and_then(|p| p.project.as_ref());
        let system = pyproject.as_ref().and_then(|p| p.build_system.as_ref());
        let installable = legacy || project.is_some() || system.is_some();
        let build = build_requirements(system, installable, &pyproject, dir)?;
        let more = test_requirements(root, dir, pyproject.as_ref())?;
        let dynamic = project.is_some_and(|p| {
            p.dynamic
                .iter()
                .any(|d| d == "dependencies" || d == "optional-dependencies")
        });
        let own_data = project.is_some() && !dynamic;
        let requirements = if own_data || !installable {
            Some(project_requirements(project, &more, dir)?)
        } else {
            None
        };
        let source = if pyproject.is_some() {
            "pyproject.toml"
        } else if has("setup.py") {
            "setup.py"
        } else if has("setup.cfg") {
            "setup.cfg"
        } else if has("pytest.ini") {
            "pytest.ini"
        } else {
            "tox.ini"
        };
        Ok(Recipe {
            source,
            installable,
            build,
            requirements,
            more,
        })
    }

    /// The install: download the build requirements (wheels only, with the network), ask the backend for
    /// the rest when it must (offline), download those, then make the venv and install offline.
    fn install(&self, dir: &str) -> Install {
        // A version read from git metadata (setuptools-scm, hatch-vcs): the copy has no `.git`.
        let scm = vec![(
            "SETUPTOOLS_SCM_PRETEND_VERSION".to_string(),
            "0.0.0".to_string(),
        )];
        let lines = |list: &[String]| -> String { list.iter().map(|l| format!("{l}\n")).collect() };
        let mut files = vec![
            ("build.txt".to_string(), lines(&self.build)),
            ("more.txt".to_string(), lines(&self.more)),
            ("plugin/aayu_pytest.py".to_string(), PLUGIN.to_string()),
        ];
        let mut steps = Vec::new();
        if self.installable {
            steps.push(download("downloading the build requirements", "build.txt"));
        }
        match &self.requirements {
            Some(requirements) => {
                files.push(("requirements.txt".to_string(), lines(requirements)));
            }
            None => {
                // The backend's own list: from a venv of the build requirements (and what the step reads
                // them with), offline, in the copy.
                files.push((
                    "meta.txt".to_string(),
                    "packaging\ntomli; python_version < \"3.11\"\n".to_string(),
                ));
                files.push(("aayu_meta.py".to_string(), META.to_string()));
                steps.extend(backend_requirements(&scm));
            }
        }
        steps.push(download(
            "downloading the test requirements",
            "requirements.txt",
        ));
        steps.push(venv("@venv@"));
        steps.push(InstallStep {
            what: "installing the package and its test requirements (offline)".to_string(),
            argv: offline_pip("@venv@", "requirements.txt", self.installable),
            network: false,
            cwd: "@work@".to_string(),
            env: scm,
            unless_empty: None,
            explain: Some(explain_pip),
            output: None,
        });
        Install {
            files,
            copy: self.installable.then(|| dir.to_string()),
            steps,
            env: vec![
                ("AAYU_PYTHON".to_string(), "@venv@/bin/python".to_string()),
                (
                    "AAYU_PYTEST_PLUGIN".to_string(),
                    "@work@/plugin".to_string(),
                ),
                ("VIRTUAL_ENV".to_string(), "@venv@".to_string()),
            ],
            npm_cache: false,
            vite_temp: false,
        }
    }
}

/// A download of the requirements in `@work@/<file>` (wheels only, with the network), skipped when the
/// file is empty.
fn download(what: &str, file: &str) -> InstallStep {
    InstallStep {
        what: what.to_string(),
        argv: [
            "@python@",
            "-I",
            "-m",
            "pip",
            "download",
            "--only-binary=:all:",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "--dest",
            "@work@/dl",
            "--find-links",
            "@wheels@",
            "--find-links",
            "@work@/dl",
            "-r",
        ]
        .into_iter()
        .map(String::from)
        .chain([format!("@work@/{file}")])
        .collect(),
        network: true,
        cwd: "@work@".to_string(),
        env: Vec::new(),
        unless_empty: Some(file.to_string()),
        explain: Some(explain_pip),
        output: None,
    }
}

/// pip of the interpreter, installing offline into the venv `venv` the requirements of `@work@/<file>`
/// (and the copy of the package, editable, when `package`).
fn offline_pip(venv: &str, file: &str, package: bool) -> Vec<String> {
    let mut argv: Vec<String> = [
        "@python@",
        "-I",
        "-m",
        "pip",
        "--python",
        &format!("{venv}/bin/python"),
        "install",
        "--no-index",
        "--find-links",
        "@wheels@",
        "--find-links",
        "@work@/dl",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "-r",
        &format!("@work@/{file}"),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    if package {
        argv.extend(["-e".to_string(), "@copy@".to_string()]);
    }
    argv
}

/// The steps that ask the package's build backend for its requirements: a venv of the build
/// requirements (and what the step reads them with), offline; then the backend, in the copy, writes the
/// list root reads as data.
fn backend_requirements(scm: &[(String, String)]) -> Vec<InstallStep> {
    let mut steps = Vec::new();
    steps.push(download(
        "downloading what reads the build's metadata",
        "meta.txt",
    ));
    steps.push(venv("@work@/build-env"));
    let mut argv = offline_pip("@work@/build-env", "build.txt", false);
    argv.extend([
        "-r".to_string(),
        "@work@/meta.txt".to_string(),
        "--only-binary=:all:".to_string(),
    ]);
    steps.push(InstallStep {
        what: "installing the build requirements (offline)".to_string(),
        argv,
        network: false,
        cwd: "@work@".to_string(),
        env: Vec::new(),
        unless_empty: None,
        explain: Some(explain_pip),
        output: None,
    });
    steps.push(InstallStep {
        what: "asking the package's build backend for its requirements (offline)".to_string(),
        argv: [
            "@work@/build-env/bin/python",
            "@work@/aayu_meta.py",
            "@copy@",
            "@work@",
            "@work@/out",
            PYTEST_PIN,
        ]
        .map(String::from)
        .to_vec(),
        network: false,
        cwd: "@copy@".to_string(),
        env: scm.to_vec(),
        unless_empty: None,
        explain: None,
        // Package code wrote it: read as data by root, every line a requirement by name,
        // before the download that has the network reads it.
        output: Some(Output {
            from: "out/requirements.txt".to_string(),
            to: "requirements.txt".to_string(),
            check: |text| checked_requirements(text).map_err(Into::into),
        }),
    });
    steps
}

/// The package's `pyproject.toml`, read as data, when it has one.
fn read_pyproject(root: &Path, dir: &str) -> Result<Option<Pyproject>, PythonError> {
    let path = join(dir, "pyproject.toml");
    if !crate::safe_fs::is_regular(root, &path) {
        return Ok(None);
    }
    let text = crate::safe_fs::read(root, &path, 4 << 20)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|source| PythonError::Read {
            path: path.clone(),
            source,
        })?;
    toml::from_str(&text)
        .map(Some)
        .map_err(|source| PythonError::Pyproject { path, source })
}

/// The build requirements: `[build-system] requires`, or setuptools for an installable package that
/// names none (with `wheel` beside setuptools); each one a requirement by name.
fn build_requirements(
    system: Option<&BuildSystem>,
    installable: bool,
    pyproject: &Option<Pyproject>,
    dir: &str,
) -> Result<Vec<String>, PythonError> {
    let mut build: Vec<String> = match system {
        Some(system) => system.requires.clone(),
        None if installable => vec!["setuptools>=40.8.0".to_string()],
        None => Vec::new(),
    };
    if build
        .iter()
        .any(|r| normalised(requirement_name(r)) == "setuptools")
        && !build
            .iter()
            .any(|r| normalised(requirement_name(r)) == "wheel")
    {
        // Older setuptools asks for `wheel` to build an editable install.
        build.push("wheel".to_string());
    }
    let build_file = if pyproject.is_some() {
        "pyproject.toml"
    } else {
        "setup.py"
    };
    for line in &build {
        if let Some(why) = refused_requirement(line, &join(dir, build_file)) {
            return Err(why.into());
        }
    }
    Ok(build)
}

/// The test requirements beside the project's: a dependency group, else poetry's test group, else a
/// requirements file; each one a requirement by name.
fn test_requirements(
    root: &Path,
    dir: &str,
    pyproject: Option<&Pyproject>,
) -> Result<Vec<String>, PythonError> {
    let groups = pyproject
        .map(|p| &p.dependency_groups)
        .filter(|g| !g.is_empty());
    let group = groups.and_then(|groups| {
        ["test", "tests", "dev"]
            .into_iter()
            .find(|name| groups.contains_key(*name))
            .map(|name| (name, groups))
    });
    let poetry = pyproject
        .and_then(|p| p.tool.get("poetry"))
        .and_then(toml::Value::as_table);
    let poetry_group = poetry.and_then(poetry_test_group);
    let more: Vec<String> = match (group, poetry_group) {
        (Some((name, groups)), _) => {
            let mut out = Vec::new();
            expand_group(groups, name, &mut out, 0).map_err(|why| PythonError::Group {
                file: join(dir, "pyproject.toml"),
                why,
            })?;
            out
        }
        (None, Some((name, table))) => {
            poetry_requirements(table).map_err(|why| PythonError::Poetry {
                file: join(dir, "pyproject.toml"),
                group: name,
                why,
            })?
        }
        (None, None) => match REQUIREMENTS
            .iter()
            .find_map(|pattern| requirements_file(root, dir, pattern))
        {
            Some(file) => read_requirements(root, dir, &file, 0)?,
            None => Vec::new(),
        },
    };
    for line in &more {
        if let Some(why) = refused_requirement(line, &join(dir, "pyproject.toml")) {
            return Err(why.into());
        }
    }
    Ok(more)
}

/// Every requirement of a project that writes them as data: its dependencies and its test extra's (the
/// project's own extras a list names taken in too), else the test requirements `more`; pytest when none
/// names it.
fn project_requirements(
    project: Option<&Project>,
    more: &[String],
    dir: &str,
) -> Result<Vec<String>, PythonError> {
    let mut lines: Vec<String> = Vec::new();
    let project = project.cloned().unwrap_or_default();
    let own = project.name.as_deref().map(normalised);
    let extra = project
        .optional_dependencies
        .iter()
        .filter(|(name, _)| TEST_EXTRAS.contains(&normalised(name).as_str()))
        .min_by_key(|(_, list)| list.span().start)
        .map(|(name, _)| name.clone());
    let mut wanted: BTreeSet<String> = extra.iter().map(|e| normalised(e)).collect();
    // The project's own extras a list names (`test = ["me[yaml]"]`) are taken in too.
    loop {
        let before = wanted.len();
        let chosen = wanted.clone();
        let lists = std::iter::once(&project.dependencies).chain(
            project
                .optional_dependencies
                .iter()
                .filter(|(name, _)| chosen.contains(&normalised(name)))
                .map(|(_, list)| list.get_ref()),
        );
        lines.clear();
        for list in lists {
            for line in list {
                if own.as_deref() == Some(normalised(requirement_name(line)).as_str()) {
                    wanted.extend(requirement_extras(line));
                } else if !lines.contains(line) {
                    lines.push(line.clone());
                }
            }
        }
        if wanted.len() == before {
            break;
        }
    }
    for line in &lines {
        if let Some(why) = refused_requirement(line, &join(dir, "pyproject.toml")) {
            return Err(why.into());
        }
    }
    if extra.is_none() {
        for line in more {
            if !lines.contains(line) {
                lines.push(line.clone());
            }
        }
    }
    if !lines
        .iter()
        .any(|l| normalised(requirement_name(l)) == "pytest")
    {
        lines.push(PYTEST_PIN.to_string());
    }
    Ok(lines)
}

/// A fresh virtual environment without pip of its own (the interpreter's pip installs into it).
fn venv(at: &str) -> InstallStep {
    InstallStep {
        what: "making a virtual environment (offline)".to_string(),
        argv: ["@python@", "-I", "-m", "venv", "--without-pip", at]
            .map(String::from)
            .to_vec(),
        network: false,
        cwd: "@work@".to_string(),
        env: Vec::new(),
        unless_empty: None,
        explain: None,
        output: None,
    }
}

/// The requirements the backend's metadata step wrote (package code ran in it): every line must be a
/// requirement by name, as a requirements file's are; the text root writes for the download.
fn checked_requirements(text: &str) -> Result<String, PythonError> {
    let mut out = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with('-') {
            return Err(PythonError::BackendOption {
                line: line.to_string(),
            });
        }
        if let Some(why) = refused_requirement(line, "the build backend's metadata") {
            return Err(why.into());
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// What pip says when a requirement has no wheel to download: the requirement, named.
fn explain_pip(stderr: &str) -> Option<String> {
    let line = stderr.lines().find_map(|l| {
        l.trim()
            .strip_prefix("ERROR: No matching distribution found for ")
    })?;
    let requirement = line.trim();
    Some(format!(
        "`{requirement}` has no wheel for this interpreter (pip: No matching distribution found for {requirement}): aayu installs dependencies as wheels only, so that no package code runs with the network on; publish a wheel of it (to the index or a wheelhouse, `[verify] python_wheels`), or map the criterion to a behaviour check with `checks = [...]`"
    ))
}

/// Poetry's test dependencies: the first of its groups `test`, `tests`, `dev`
/// (`[tool.poetry.group.<name>.dependencies]`), else the older `[tool.poetry.dev-dependencies]`; with how
/// the file names it.
fn poetry_test_group(poetry: &toml::Table) -> Option<(String, &toml::Table)> {
    let groups = poetry.get("group").and_then(toml::Value::as_table);
    for name in ["test", "tests", "dev"] {
        if let Some(table) = groups
            .and_then(|g| g.get(name))
            .and_then(|g| g.get("dependencies"))
            .and_then(toml::Value::as_table)
        {
            return Some((format!("[tool.poetry.group.{name}.dependencies]"), table));
        }
    }
    poetry
        .get("dev-dependencies")
        .and_then(toml::Value::as_table)
        .map(|t| ("[tool.poetry.dev-dependencies]".to_string(), t))
}

/// A poetry dependency table as requirement lines: `pytest = "^7.2"` → `pytest>=7.2,<8`, `{version,
/// extras, markers}` read; a `path`, `git` or `url` dependency refused (it would be built).
fn poetry_requirements(table: &toml::Table) -> Result<Vec<String>, PoetryError> {
    let mut out = Vec::new();
    for (name, value) in table {
        if name == "python" {
            continue;
        }
        let (constraint, extras, markers) = match value {
            toml::Value::String(c) => (c.clone(), Vec::new(), None),
            toml::Value::Table(t) => {
                if let Some(source) = ["path", "git", "url", "file"]
                    .iter()
                    .find(|k| t.contains_key(**k))
                {
                    return Err(PoetryError::Source {
                        name: name.clone(),
                        source_key: source,
                    });
                }
                let extras = t
                    .get("extras")
                    .and_then(toml::Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|e| e.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                (
                    t.get("version")
                        .and_then(toml::Value::as_str)
                        .unwrap_or("*")
                        .to_string(),
                    extras,
                    t.get("markers")
                        .and_then(toml::Value::as_str)
                        .map(str::to_string),
                )
            }
            other => {
                return Err(PoetryError::Unreadable {
                    name: name.clone(),
                    value: other.clone(),
                });
            }
        };
        let spec = poetry_constraint(&constraint).ok_or_else(|| PoetryError::Constraint {
            name: name.clone(),
            constraint: constraint.clone(),
        })?;
        let mut line = name.clone();
        if !extras.is_empty() {
            line.push_str(&format!("[{}]", extras.join(",")));
        }
        line.push_str(&spec);
        if let Some(markers) = markers {
            line.push_str(&format!("; {markers}"));
        }
        out.push(line);
    }
    Ok(out)
}

/// A poetry version constraint in PEP 440: `*` → nothing, `^1.2` → `>=1.2,<2`, `^0.3.1` → `>=0.3.1,<0.4`,
/// `~1.2` → `>=1.2,<1.3`, `1.2.3` → `==1.2.3`, PEP 440 clauses as they are; `None` for what it cannot read
/// (`||`).
fn poetry_constraint(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text == "*" {
        return Some(String::new());
    }
    if text.contains("||") {
        return None;
    }
    let numbers = |v: &str| -> Option<Vec<u64>> { v.split('.').map(|p| p.parse().ok()).collect() };
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(".");
    if let Some(v) = text.strip_prefix('^') {
        let parts = numbers(v.trim())?;
        let at = parts
            .iter()
            .position(|n| *n != 0)
            .unwrap_or(parts.len().saturating_sub(1));
        let mut upper: Vec<u64> = parts[..=at.min(parts.len() - 1)].to_vec();
        *upper.last_mut()? += 1;
        return Some(format!(">={},<{}", v.trim(), join(&upper)));
    }
    if let Some(v) = text.strip_prefix('~').filter(|v| !v.starts_with('=')) {
        let parts = numbers(v.trim())?;
        let keep = if parts.len() == 1 { 1 } else { 2 };
        let mut upper: Vec<u64> = parts[..keep].to_vec();
        *upper.last_mut()? += 1;
        return Some(format!(">={},<{}", v.trim(), join(&upper)));
    }
    if text.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return Some(format!("=={text}"));
    }
    // PEP 440 clauses, comma- or space-separated.
    Some(
        text.split([',', ' '])
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// The requirements of a PEP 735 dependency group, its `include-group`s expanded.
fn expand_group(
    groups: &BTreeMap<String, Vec<toml::Value>>,
    name: &str,
    out: &mut Vec<String>,
    depth: usize,
) -> Result<(), GroupError> {
    if depth > 16 {
        return Err(GroupError::IncludesItself(name.to_string()));
    }
    let Some(list) = groups.get(name) else {
        return Err(GroupError::Missing(name.to_string()));
    };
    for item in list {
        match item {
            toml::Value::String(line) => {
                if !out.contains(line) {
                    out.push(line.clone());
                }
            }
            toml::Value::Table(t) => match t.get("include-group").and_then(toml::Value::as_str) {
                Some(other) => expand_group(groups, other, out, depth + 1)?,
                None => {
                    return Err(GroupError::Holds {
                        name: name.to_string(),
                        item: item.clone(),
                    });
                }
            },
            other => {
                return Err(GroupError::Holds {
                    name: name.to_string(),
                    item: other.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The first file a pattern of [`REQUIREMENTS`] names in the package (`requirements/test*.txt`, by name).
fn requirements_file(root: &Path, dir: &str, pattern: &str) -> Option<String> {
    match pattern.split_once('*') {
        None => crate::safe_fs::is_regular(root, &join(dir, pattern)).then(|| pattern.to_string()),
        Some((prefix, suffix)) => {
            let (folder, start) = prefix.rsplit_once('/').unwrap_or(("", prefix));
            let mut names: Vec<String> = std::fs::read_dir(root.join(dir).join(folder))
                .ok()?
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(start) && n.ends_with(suffix))
                .collect();
            names.sort();
            names
                .into_iter()
                .map(|n| join(folder, &n))
                .find(|rel| crate::safe_fs::is_regular(root, &join(dir, rel)))
        }
    }
}

/// A requirements file's requirements, read as data: comments and the package itself (`-e .`, `.`)
/// dropped, an `-r` to a file of the package read in; an `-r` out of the package, or any other option,
/// refused.
fn read_requirements(
    root: &Path,
    dir: &str,
    file: &str,
    depth: usize,
) -> Result<Vec<String>, PythonError> {
    let shown = join(dir, file);
    if depth > 8 {
        return Err(PythonError::IncludesItself { shown });
    }
    let bytes =
        crate::safe_fs::read(root, &shown, 1 << 20).map_err(|source| PythonError::Read {
            path: shown.clone(),
            source,
        })?;
    let text = String::from_utf8_lossy(&bytes).replace("\\\n", " ");
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = match raw.find(" #") {
            Some(at) => &raw[..at],
            None if raw.trim_start().starts_with('#') => "",
            None => raw,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("`{shown}` line {}", n + 1);
        if matches!(
            line,
            "." | "./" | "-e ." | "-e ./" | "--editable ." | "--editable=."
        ) {
            continue;
        }
        if let Some(other) = line
            .strip_prefix("-r ")
            .or_else(|| line.strip_prefix("--requirement "))
            .or_else(|| line.strip_prefix("--requirement="))
            .map(str::trim)
        {
            let base = file.rsplit_once('/').map_or("", |(d, _)| d);
            let joined =
                crate::sandbox::toolchain::package_dir(&join(base, other)).map_err(|_| {
                    PythonError::Outside {
                        at: at.clone(),
                        other: other.to_string(),
                    }
                })?;
            if !crate::safe_fs::is_regular(root, &join(dir, &joined)) {
                return Err(PythonError::NoFile {
                    at,
                    other: other.to_string(),
                });
            }
            out.extend(read_requirements(root, dir, &joined, depth + 1)?);
            continue;
        }
        if line.starts_with("-e ") || line.starts_with("--editable") {
            return Err(PythonError::Editable {
                at,
                line: line.to_string(),
            });
        }
        if line.starts_with('-') {
            return Err(PythonError::Option {
                at,
                line: line.to_string(),
            });
        }
        if let Some(why) = refused_requirement(line, &shown) {
            return Err(PythonError::Refused { at, why });
        }
        if !out.iter().any(|l| l == line) {
            out.push(line.to_string());
        }
    }
    Ok(out)
}

/// A run of pytest in the package folder for these node ids (none: the whole suite), with aayu's plugin
/// and its events file.
fn pytest(run: &Run, package: &Package, ids: &[&str]) -> Result<super::Ran, PythonError> {
    let var = |name: &str| {
        run.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let (Some(python), Some(plugin)) = (var("AAYU_PYTHON"), var("AAYU_PYTEST_PLUGIN")) else {
        return Err(PythonError::NotInstalled {
            shown: shown_dir(package.dir).to_string(),
        });
    };
    let nonce = nonce();
    let mut argv: Vec<String> = vec![
        python.to_string_lossy().into_owned(),
        "-m".into(),
        "pytest".into(),
        "-p".into(),
        "no:cacheprovider".into(),
        // Loaded first, before any conftest or entry-point plugin: after the package's `addopts`, so a
        // `-p no:aayu_pytest` there cannot keep it out (that `addopts` is a harness change anyway).
        "-p".into(),
        "aayu_pytest".into(),
        "--rootdir".into(),
        ".".into(),
        "-q".into(),
    ];
    // A canary's run: an `xfail` mark is not what decides it (its first statement fails).
    if var(CANARY_RUN).is_some() {
        argv.push("--runxfail".into());
    }
    argv.extend(ids.iter().map(|id| id.to_string()));
    let mut env: Vec<(String, OsString)> = run
        .env
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "AAYU_PYTHON" | "AAYU_PYTEST_PLUGIN" | CANARY_RUN
            )
        })
        .cloned()
        .collect();
    // Byte code from the install is not read (no record holds its hash): every module compiles from its
    // checked source, the cache prefix being a folder under the sealed plugin folder that cannot exist.
    let no_cache = Path::new(&plugin).join(".no-pycache").into_os_string();
    env.extend([
        ("PYTHONPATH".to_string(), plugin),
        ("PYTHONPYCACHEPREFIX".to_string(), no_cache),
        ("PYTHONDONTWRITEBYTECODE".to_string(), "1".into()),
        ("PYTHONHASHSEED".to_string(), "0".into()),
    ]);
    // The nonce goes on standard input, which the plugin reads and closes on import: never in the
    // environment the tests (and their conftests) can read.
    let ran = run.launcher.launch(Job {
        what: format!("pytest in `{}`", shown_dir(package.dir)),
        argv,
        cwd: run.root.join(package.dir),
        env,
        timeout: run.timeout,
        report: Some(EVENTS),
        stdin: format!("{nonce}\n").into_bytes(),
    })?;
    Ok(super::Ran {
        report: ran.report.map(|r| {
            let mut marked = format!("{nonce}\n").into_bytes();
            marked.extend(r);
            marked
        }),
        ..ran
    })
}

/// A fresh nonce for a run's events.
fn nonce() -> String {
    let mut bytes = [0u8; 16];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The plugin's events of one run, by node id.
struct Events {
    tests: BTreeMap<String, Vec<Value>>,
    /// Collection errors: the collector's node id and its text.
    collect_errors: Vec<(String, String)>,
    /// Why no pass of this run is trusted although its events add up so far: pytest did not finish its
    /// session (a test ended the process), or it exited with another status than its events say.
    unfinished: Option<String>,
}

/// Why a run's passes are not trusted when pytest did not finish its session.
const UNFINISHED: &str = "pytest did not finish its session (a crash, `os._exit` or a killed process): no pass of this run is trusted";

/// The keys of each event the plugin writes, exactly: a line of another shape is not the plugin's.
const SHAPES: [(&str, &[&str]); 4] = [
    ("SessionStart", &["$report_type", "nonce", "pytest_version"]),
    (
        "TestReport",
        &[
            "$report_type",
            "nodeid",
            "location",
            "keywords",
            "when",
            "outcome",
            "longrepr",
            "wasxfail",
            "duration",
            "start",
            "stop",
        ],
    ),
    (
        "CollectReport",
        &["$report_type", "nodeid", "outcome", "longrepr"],
    ),
    ("SessionFinish", &["$report_type", "exitstatus", "nonce"]),
];

/// An event's type when the line has exactly the shape the plugin writes.
fn shaped(event: &Value) -> Option<&'static str> {
    let object = event.as_object()?;
    let kind = object.get("$report_type")?.as_str()?;
    let (name, keys) = SHAPES.iter().find(|(name, _)| *name == kind)?;
    (object.len() == keys.len() && keys.iter().all(|k| object.contains_key(*k))).then_some(*name)
}

impl Events {
    /// Reads the events file of a run in the package folder `dir` of `root`: `Err` when it is not this
    /// run's plugin's (no file, no nonce) or does not add up (a line not in the plugin's shape, a second
    /// session, a node id that names no file of the package).
    fn read(ran: &super::Ran, root: &Path, dir: &str) -> Result<Events, PythonError> {
        let report = ran.report.as_deref().ok_or(PythonError::NotLoaded)?;
        let text = String::from_utf8_lossy(report);
        let mut lines = text.lines();
        let nonce = lines.next().unwrap_or_default();
        let first: Option<Value> = lines.next().and_then(|l| serde_json::from_str(l).ok());
        let started = first.as_ref().is_some_and(|f| {
            shaped(f) == Some("SessionStart")
                && f.get("nonce").and_then(Value::as_str) == Some(nonce)
        });
        if !started {
            return Err(PythonError::NotLoaded);
        }
        let refused = |why: String| PythonError::NotRecord { why };
        let mut events = Events {
            tests: BTreeMap::new(),
            collect_errors: Vec::new(),
            unfinished: None,
        };
        let mut finished: Option<i64> = None;
        for (i, line) in lines.enumerate() {
            let at = i + 2;
            let mut event = serde_json::from_str::<Value>(line)
                .ok()
                .filter(|e| shaped(e).is_some())
                .ok_or_else(|| refused(format!("line {at} is not in the plugin's format")))?;
            if finished.is_some() {
                return Err(refused(format!("line {at} follows the session's end")));
            }
            match shaped(&event) {
                Some("TestReport") => {
                    // The node id's file (its location may lie elsewhere: a Hypothesis state
                    // machine's test case is defined in Hypothesis's own module).
                    let file = event
                        .get("nodeid")
                        .and_then(Value::as_str)
                        .and_then(|id| id.split("::").next())
                        .unwrap_or_default();
                    if !crate::safe_fs::is_regular(root, &join(dir, file)) {
                        return Err(refused(format!(
                            "line {at} names `{file}`, which is not a file of the package"
                        )));
                    }
                    if let Some(object) = event.as_object_mut() {
                        for timing in ["duration", "start", "stop", "keywords"] {
                            object.shift_remove(timing);
                        }
                        if object.get("wasxfail").is_some_and(Value::is_null) {
                            object.shift_remove("wasxfail");
                        }
                    }
                    let id = event
                        .get("nodeid")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    events.tests.entry(id).or_default().push(event);
                }
                Some("CollectReport") => {
                    let id = event
                        .get("nodeid")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let text = event
                        .get("longrepr")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    events
                        .collect_errors
                        .push((id.to_string(), text.to_string()));
                }
                Some("SessionFinish") => {
                    if event.get("nonce").and_then(Value::as_str) != Some(nonce) {
                        return Err(refused(format!("line {at} ends another run's session")));
                    }
                    finished = Some(
                        event
                            .get("exitstatus")
                            .and_then(Value::as_i64)
                            .unwrap_or(-1),
                    );
                }
                _ => return Err(refused(format!("line {at} starts a second session"))),
            }
        }
        events.unfinished = match (finished, ran.code) {
            (Some(said), Some(code)) if said == i64::from(code) => None,
            (Some(said), code) => Some(format!(
                "the events say pytest ended with status {said}, but it {}: they are not this run's record",
                code.map_or("was killed".to_string(), |c| format!(
                    "exited with status {c}"
                ))
            )),
            (None, _) => Some(UNFINISHED.to_string()),
        };
        Ok(events)
    }

    /// One node id's result, read from its own phases.
    fn result_of(&self, id: &str, ran: &super::Ran, root: &Path) -> TestResult {
        let own = self.tests.get(id).cloned().unwrap_or_default();
        let phase = |when: &str| -> Vec<&Value> {
            own.iter()
                .filter(|e| e.get("when").and_then(Value::as_str) == Some(when))
                .collect()
        };
        let outcome_of = |e: &Value| {
            e.get("outcome")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (setup, call, teardown) = (phase("setup"), phase("call"), phase("teardown"));
        let events: Vec<String> = own.iter().map(Value::to_string).collect();
        let outcome = if own.is_empty() {
            self.missing(id, ran, root)
        } else if setup.len() > 1 || call.len() > 1 || teardown.len() > 1 {
            Outcome::NotRun(format!(
                "the events do not match pytest's record (`{id}` has more than one event of a phase): they are not a test result"
            ))
        } else if let Some(failed) = call.iter().find(|e| outcome_of(e) == "failed") {
            Outcome::Failed(failure(
                failed.get("longrepr").and_then(Value::as_str).unwrap_or(""),
            ))
        } else if let Some(errored) = own.iter().find(|e| outcome_of(e) == "failed") {
            // An error in a fixture (`fixture 'mocker' not found`, a setup that raised) is not the test
            // failing: nothing ran that shows the bug or its fix.
            let when = errored
                .get("when")
                .and_then(Value::as_str)
                .unwrap_or("setup");
            Outcome::NotRun(format!(
                "the test errored in {when}: {}",
                failure(
                    errored
                        .get("longrepr")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )
            ))
        } else if own.iter().any(|e| outcome_of(e) == "skipped") {
            let why = own
                .iter()
                .find(|e| outcome_of(e) == "skipped")
                .and_then(|e| e.get("longrepr").and_then(Value::as_str))
                .unwrap_or("")
                .to_string();
            Outcome::NotRun(if why.is_empty() {
                "the test was skipped".to_string()
            } else {
                format!("the test was skipped: {why}")
            })
        } else if call.len() == 1 && teardown.len() == 1 {
            match &self.unfinished {
                Some(why) => Outcome::NotRun(why.clone()),
                None => Outcome::Passed,
            }
        } else {
            Outcome::NotRun(
                "the test started but gave no result (a crash, `os._exit` or a killed process)"
                    .to_string(),
            )
        };
        TestResult {
            outcome,
            events,
            pinned: None,
            note: None,
        }
    }

    /// Why a node id has no events: a collection error (not built), pytest's `not found`, or no result.
    fn missing(&self, id: &str, ran: &super::Ran, root: &Path) -> Outcome {
        let output = format!(
            "{}\n{}",
            String::from_utf8_lossy(&ran.stdout),
            String::from_utf8_lossy(&ran.stderr)
        );
        let file = id.split("::").next().unwrap_or(id);
        let no_file = output
            .lines()
            .any(|l| l.starts_with("ERROR: file or directory not found: ") && l.ends_with(file));
        let not_found = no_file
            || output.lines().any(|l| {
                l.starts_with("ERROR: not found: ")
                    && (l.contains(&format!("/{id}")) || l.ends_with(id))
            });
        if let Some((_, text)) = self.collect_errors.iter().find(|(node, _)| {
            node == file || node.is_empty() || id.starts_with(&format!("{node}::"))
        }) {
            return Outcome::NotBuilt(format!(
                "`{file}` could not be collected: {}",
                failure(text)
            ));
        }
        if not_found || ran.code == Some(5) {
            // The caller says which test (`<package>:<id>` was not found): this says what pytest found.
            return Outcome::NotFound(if no_file {
                format!("pytest found no file `{file}`")
            } else {
                "pytest found no such test".to_string()
            });
        }
        if ran.code == Some(4) {
            let line = output
                .lines()
                .find(|l| l.starts_with("ERROR: ") || l.contains("error: "))
                .unwrap_or("")
                .trim()
                .to_string();
            return Outcome::Blocked(format!("pytest refused the run (exit 4): {line}"));
        }
        if ran.code == Some(2) && !self.collect_errors.is_empty() {
            return Outcome::NotBuilt(format!(
                "pytest stopped at a collection error: {}",
                failure(&self.collect_errors[0].1)
            ));
        }
        Outcome::NotRun(exited("pytest", ran, root))
    }
}

/// What a pytest user reads first of a failure: its `E …` lines and the traceback's last line (where it
/// failed, `tests/test_x.py:12: AssertionError`).
fn failure(longrepr: &str) -> String {
    let lines: Vec<&str> = longrepr.lines().map(str::trim_end).collect();
    let said: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("E ").map(str::trim))
        .filter(|l| !l.is_empty())
        .take(8)
        .collect();
    let last = lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim())
        .unwrap_or("");
    match (said.is_empty(), last.is_empty()) {
        (true, true) => "the test failed".to_string(),
        (true, false) => last.to_string(),
        (false, _) if said.contains(&last) || last.starts_with("E ") => said.join("; "),
        (false, _) => format!("{} ({last})", said.join("; ")),
    }
}

fn named(run: &Run, package: &Package, tests: &[&TestId]) -> BTreeMap<TestId, TestResult> {
    let (wanted, mut results) = super::read_ids(tests, PyTest::parse);
    let asked: Vec<&TestId> = wanted.iter().map(|(t, _)| *t).collect();
    if asked.is_empty() {
        return results;
    }
    // One pytest for the lot. An id pytest cannot find, or a file that cannot be collected, stops the
    // whole run (exit 4, or 2): each id that got no events of its own then runs alone, so that its result
    // is its own.
    let batch = run_batch(run, package, &asked);
    let stopped = batch
        .as_ref()
        .is_ok_and(|(code, _)| matches!(code, Some(2 | 4)));
    for (test, result) in match batch {
        Ok((_, results)) => results,
        Err(why) => super::all(&asked, Outcome::NotRun(why.to_string())),
    } {
        // A pass in a run that did not finish (a sibling ended the process) is not trusted: the test
        // runs alone, so that its result is its own.
        let cut_short = matches!(&result.outcome, Outcome::NotRun(why) if why == UNFINISHED);
        let alone = asked.len() > 1 && (stopped && result.events.is_empty() || cut_short);
        let result = if alone {
            match run_batch(run, package, &[&test]) {
                Ok((_, mut one)) => one.remove(&test).unwrap_or(result),
                Err(why) => TestResult::of(Outcome::NotRun(why.to_string())),
            }
        } else {
            result
        };
        results.insert(test, result);
    }
    results
}

/// One pytest of these ids: its exit code and each id's result.
fn run_batch(
    run: &Run,
    package: &Package,
    tests: &[&TestId],
) -> Result<(Option<i32>, BTreeMap<TestId, TestResult>), PythonError> {
    let ids: Vec<&str> = tests.iter().map(|t| t.rest.as_str()).collect();
    let ran = pytest(run, package, &ids)?;
    let events = Events::read(&ran, run.root, package.dir).map_err(|why| match why {
        PythonError::NotLoaded if ran.code == Some(4) => PythonError::NotLoadedSaid {
            said: Exited::of("pytest", &ran, run.root),
        },
        why => why,
    })?;
    Ok((
        ran.code,
        tests
            .iter()
            .map(|t| ((*t).clone(), events.result_of(&t.rest, &ran, run.root)))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(nonce: &str, nodeid: &str, location: &str) -> super::super::Ran {
        let test = serde_json::json!({
            "$report_type": "TestReport", "nodeid": nodeid, "location": [location, 1, "x"],
            "keywords": {}, "when": "call", "outcome": "passed", "longrepr": null, "wasxfail": null,
            "duration": 0.1, "start": 0.0, "stop": 0.1,
        });
        let lines = [
            nonce.to_string(),
            serde_json::json!({"$report_type": "SessionStart", "nonce": nonce, "pytest_version": "9.2.0"})
                .to_string(),
            test.to_string(),
            serde_json::json!({"$report_type": "SessionFinish", "nonce": nonce, "exitstatus": 0})
                .to_string(),
        ];
        super::super::Ran {
            code: Some(0),
            signal: None,
            timed_out: false,
            stdout: Vec::new(),
            stderr: Vec::new(),
            report: Some(lines.join("\n").into_bytes()),
            truncated: false,
        }
    }

    #[test]
    fn a_record_names_files_of_the_package_by_node_id_wherever_the_location_lies() {
        let root = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(root.path().join("pkg/tests")).expect("dirs");
        std::fs::write(root.path().join("pkg/tests/test_m.py"), "").expect("write");
        // A Hypothesis state machine's test case: its location is Hypothesis's own module.
        let outside = record(
            "n1",
            "tests/test_m.py::TestMachine::runTest",
            "../venv/lib/python3.11/site-packages/hypothesis/stateful.py",
        );
        let events = Events::read(&outside, root.path(), "pkg").expect("read");
        assert!(
            events
                .tests
                .contains_key("tests/test_m.py::TestMachine::runTest")
        );
        // A node id of no file of the package is not this run's.
        let forged = record("n2", "tests/test_gone.py::test", "tests/test_m.py");
        match Events::read(&forged, root.path(), "pkg") {
            Err(PythonError::NotRecord { why }) => {
                assert!(why.contains("`tests/test_gone.py`"), "{why}")
            }
            other => panic!("{:?}", other.map(|e| e.tests.len())),
        }
    }

    #[test]
    fn a_node_id_splits_at_colons_only_before_its_parameters() {
        let t = PyTest::parse("tests/test_x.py::TestK::test_m[a::b/c'[d]").expect("param");
        assert_eq!(t.file, "tests/test_x.py");
        assert_eq!(t.names, ["TestK", "test_m"]);
        assert_eq!(t.parameters.as_deref(), Some("[a::b/c'[d]"));
        assert_eq!(
            Python.found_by("tests/test_x.py::TestK::test_m[2]"),
            "test_m"
        );
        for bad in [
            "tests/test_x.py",
            "test_invalid",
            "../x.py::t",
            "/abs/x.py::t",
            "x.py::",
            "x.py::t[",
            "x.py::a b",
            "x.rs::t",
        ] {
            assert!(PyTest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn python_test_files() {
        for yes in [
            "tests/test_parser.py",
            "lib/test_x.py",
            "pkg/x_test.py",
            "conftest.py",
            "tests/data/in.json",
            "lib/test/fixtures/a.txt",
        ] {
            assert!(Python.is_test_file(yes), "{yes}");
        }
        for no in ["src/parser.py", "testing.py", "tests", "src/contest.py"] {
            assert!(!Python.is_test_file(no), "{no}");
        }
    }

    #[test]
    fn requirements_are_read_as_data() {
        let dir = tempfile::tempdir().expect("dir");
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, text).expect("write");
        };
        write(
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"My_Pkg\"\nversion = \"1\"\ndependencies = [\"attrs>=22\"]\n[project.optional-dependencies]\ntests = [\"my-pkg[yaml]\", \"pytest>=7\"]\nyaml = [\"pyyaml\"]\ndev = [\"tox\"]\n",
        );
        let recipe = Recipe::read(dir.path(), "").expect("recipe");
        assert_eq!(
            recipe.requirements.as_deref(),
            Some(&["attrs>=22", "pytest>=7", "pyyaml"].map(String::from)[..])
        );
        assert_eq!(recipe.build, ["setuptools>=61", "wheel"]);
        assert!(recipe.installable);
        // Only setup.py: the backend says (offline).
        let legacy = tempfile::tempdir().expect("dir");
        std::fs::write(legacy.path().join("setup.py"), "").expect("setup.py");
        std::fs::write(
            legacy.path().join("requirements-dev.txt"),
            "# tools\n-e .\nrequests==2.31 # pinned\n-r requirements.txt\n",
        )
        .expect("dev");
        std::fs::write(legacy.path().join("requirements.txt"), "idna\n").expect("req");
        let recipe = Recipe::read(legacy.path(), "").expect("legacy");
        assert!(recipe.requirements.is_none());
        assert_eq!(recipe.more, ["requests==2.31", "idna"]);
        for (line, said) in [
            ("git+https://github.com/x/y", "a URL or VCS requirement"),
            ("y @ https://x/y.whl", "a URL or VCS requirement"),
            ("../other", "a local path"),
            ("--index-url https://evil/", "is an option"),
            ("-r ../../outside.txt", "outside the package folder"),
        ] {
            std::fs::write(
                legacy.path().join("requirements-dev.txt"),
                format!("{line}\n"),
            )
            .expect("dev");
            let why = Recipe::read(legacy.path(), "")
                .err()
                .expect(line)
                .to_string();
            assert!(
                why.contains(said) && why.contains("requirements-dev.txt"),
                "{line}: {why}"
            );
        }
    }

    #[test]
    fn poetry_constraints_in_pep_440() {
        for (poetry, pep) in [
            ("*", ""),
            ("^7.2", ">=7.2,<8"),
            ("^0.3.1", ">=0.3.1,<0.4"),
            ("^0.0.3", ">=0.0.3,<0.0.4"),
            ("~1.2", ">=1.2,<1.3"),
            ("~1.2.3", ">=1.2.3,<1.3"),
            ("1.2.3", "==1.2.3"),
            (">=1.0, <2", ">=1.0,<2"),
        ] {
            assert_eq!(poetry_constraint(poetry).as_deref(), Some(pep), "{poetry}");
        }
        assert_eq!(poetry_constraint("^1 || ^2"), None);
        let table: toml::Table = toml::from_str(
            "pytest = \"^7.0\"\npytest-mock = {version = \"*\", extras = [\"x\"]}\npython = \"^3.8\"\n",
        )
        .expect("toml");
        assert_eq!(
            poetry_requirements(&table).expect("lines"),
            ["pytest>=7.0,<8", "pytest-mock[x]"]
        );
        let path: toml::Table = toml::from_str("mine = {path = \"../mine\"}\n").expect("toml");
        assert!(
            poetry_requirements(&path).is_err_and(|e| e.to_string().contains("`path` dependency"))
        );
    }

    #[test]
    fn only_plain_requirements_pass() {
        for ok in [
            "attrs",
            "attrs>=22",
            "pytest >= 7, <9",
            "My_Pkg[yaml, toml]==1.0.*",
            "tomli>=2; python_version < \"3.11\"",
            "colorama; sys_platform == 'win32' and extra == \"dev\"",
            "foo (>=1.0)",
        ] {
            assert_eq!(refused_requirement(ok, "x"), None, "{ok}");
        }
        for (bad, said) in [
            ("--only-binary=:none:", "carries a pip option"),
            (
                "evil; python_version > \"3\" --no-binary=evil",
                "carries a pip option",
            ),
            ("idna\ncopy/", "is not a plain requirement"),
            ("foo==${PIP_INDEX_URL}", "is not a plain requirement"),
            ("foo @ https://x/foo.whl", "is a URL or VCS requirement"),
            ("foo@file:///tmp/x", "is a URL or VCS requirement"),
            ("git+https://x/y", "is a URL or VCS requirement"),
            ("./local", "is a local path"),
            ("foo # a comment", "is not a plain requirement"),
            ("foo \\", "is not a plain requirement"),
            ("@copy@", "is a URL or VCS requirement"),
        ] {
            let why = refused_requirement(bad, "pyproject.toml")
                .map(|why| why.to_string())
                .unwrap_or_default();
            assert!(why.contains(said), "{bad:?}: {why}");
        }
    }

    #[test]
    fn a_failure_is_its_e_lines_and_where() {
        let longrepr = "def test_x():\n>       assert parse('\\\\q') == 'x'\nE       AssertionError: assert 'q' == 'x'\nE         - x\nE         + q\n\ntests/test_parser.py:7: AssertionError";
        assert_eq!(
            failure(longrepr),
            "AssertionError: assert 'q' == 'x'; - x; + q (tests/test_parser.py:7: AssertionError)"
        );
        assert_eq!(failure(""), "the test failed");
        let pip = "ERROR: Could not find a version that satisfies the requirement sdistonly==1.0 (from versions: none)\nERROR: No matching distribution found for sdistonly==1.0\n";
        assert!(explain_pip(pip).is_some_and(|s| s.starts_with("`sdistonly==1.0` has no wheel")));
    }
}
