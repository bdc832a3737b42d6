//! The test runners: one module per stack ([`cargo`], [`go`], [`python`]) behind one small trait, [`Runner`], and
//! one registration in [`RUNNERS`]. Everything that differs between stacks lives here: which marker file
//! claims a package folder (and before which other), how the `<rest>` of a test id is read, how the
//! dependencies are fetched, how a run of named tests — or a package's whole suite — is made and read,
//! which files of a diff are test files (red-on-base puts those on the base), and which tool the
//! preflight needs.
//!
//! A runner never starts a process itself: it is handed a [`Launcher`]. The tests floor gives it the
//! sandbox (the slot uid, offline, limits); the step runner, which already runs inside a check's sandbox
//! as the slot uid, a plain child with the check's environment. So a test named in an evidence map and
//! the same test named in a `test` step are run and read by the same code.
//!
//! `runners` is a stage of its own: `floors` and `steps` import it, it imports neither (nor `commands`).

pub(crate) mod cargo;
pub(crate) mod go;
pub mod harness;
mod id;
pub(crate) mod js;
pub(crate) mod python;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::{Toolchains, package_dir, shown_dir};
use crate::sandbox::{FetchPlan, said};

pub use crate::machine_paths::scrub;
pub use id::TestId;

/// Why a runner cannot do what it is asked ([`Runner`]'s `Err`): each stack's own reasons, and what
/// they share (the toolchain, a launch that gave no result).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Toolchain(#[from] crate::sandbox::toolchain::ToolchainError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Exited(#[from] Exited),
    #[error("no coverage runner for {0} yet")]
    NoCoverage(&'static str),
    #[error(transparent)]
    Cargo(#[from] cargo::CargoError),
    #[error(transparent)]
    CargoId(#[from] cargo::CargoIdError),
    #[error(transparent)]
    Coverage(#[from] cargo::coverage::CoverageError),
    #[error(transparent)]
    Go(#[from] go::GoError),
    #[error(transparent)]
    GoId(#[from] go::GoIdError),
    #[error(transparent)]
    Python(#[from] python::PythonError),
    #[error(transparent)]
    PyId(#[from] python::PyIdError),
    #[error(transparent)]
    Js(#[from] js::JsError),
    #[error(transparent)]
    JsId(#[from] js::JsIdError),
}

/// Why a launcher's process gave no result that can be trusted ([`Launcher`]'s `Err`).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("an empty argv")]
    EmptyArgv,
    #[error("cannot make a folder for the report of `{program}`: {source}")]
    ReportFolder {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run `{command}`: {source}")]
    Start {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(
        "{} of `{command}` survived the kill: its result cannot be trusted",
        crate::sandbox::processes(*count)
    )]
    Survivors { count: usize, command: String },
    #[error("`{command}` went over a limit: {over}")]
    OverLimit { command: String, over: String },
    #[error("no folder `{name}` to write in here")]
    NoScratch { name: String },
}

/// A process whose failure is the error, as [`exited`] says it: `… exited with status 101: <its
/// stderr's first lines>`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Exited(String);

impl Exited {
    pub(crate) fn of(what: &str, ran: &Ran, root: &Path) -> Exited {
        Exited(exited(what, ran, root))
    }
}

/// A whole-suite run's error as the coverage floor says it: the runner's words, every machine path
/// written as [`scrub`] does.
#[derive(Debug, thiserror::Error)]
#[error("{said}")]
pub struct SuiteError {
    said: String,
    #[source]
    source: Box<RunnerError>,
}

/// Every runner, in the order their markers claim a folder: a folder's own markers first, in this order
/// (a folder with a `Cargo.toml` is cargo's even inside a Go module), and only then a `go.mod` above it.
pub static RUNNERS: [&dyn Runner; 4] = [&cargo::Cargo, &go::Go, &python::Python, &js::Js];

/// One stack's way of building, naming, fetching and running tests.
pub trait Runner: Sync {
    /// The runner's name, as the transcript and reasons say it: `cargo`, `go`.
    fn name(&self) -> &'static str;

    /// The stack as prose names it: `cargo`, `Go`.
    fn title(&self) -> &'static str;

    /// The files that claim a package folder for this runner.
    fn marker(&self) -> Marker;

    /// Whether a test id's `<rest>` has this runner's own shape (`tests/test_x.py::…` is pytest's): in a
    /// folder that the markers of two runners claim, such an id goes to this one.
    fn claims_id(&self, _rest: &str) -> bool {
        false
    }

    /// The tool the preflight must find for this runner's work.
    fn tool(&self) -> Tool;

    /// The toolchain the package asks for, as the variables its processes get (`RUSTUP_TOOLCHAIN`), or why
    /// this machine cannot give it.
    fn toolchain(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Vec<(String, OsString)>, RunnerError>;

    /// Whether the package accepts the tool the preflight found, by its version line (`v20.20.2`): a
    /// package that asks for a newer one (`engines.node`) is blocked like a missing toolchain.
    fn accepts_tool(
        &self,
        _root: &Path,
        _package: &Package,
        _version: &str,
    ) -> Result<(), RunnerError> {
        Ok(())
    }

    /// The name a test is found by in the package's source (a drift handle): cargo's last path part
    /// (`store::tests::done` → `done`), Go's function (`TestParse/empty` → `TestParse`).
    fn found_by<'a>(&self, rest: &'a str) -> &'a str;

    /// Whether this runner can read a test id's `<rest>` in this package: a contract error (exit 2) before
    /// anything runs.
    fn check_id(&self, root: &Path, package: &Package, rest: &str) -> Result<(), RunnerError>;

    /// How the package's dependencies are fetched, once per run, with the network; `None` when there is
    /// nothing to fetch.
    fn fetch(
        &self,
        toolchains: &Toolchains,
        root: &Path,
        package: &Package,
    ) -> Result<Option<FetchPlan>, RunnerError>;

    /// Runs exactly these tests of the package (ids of this package), each once, and reads every result.
    fn run_named(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult>;

    /// Runs the canaries [`Runner::canary`] placed (ids of this package), each once: as
    /// [`Runner::run_named`] does, unless the stack can run them more cheaply (Go: in one process, since
    /// each fails at its first statement).
    fn run_canaries(
        &self,
        run: &Run,
        package: &Package,
        tests: &[&TestId],
    ) -> BTreeMap<TestId, TestResult> {
        self.run_named(run, package, tests)
    }

    /// Whether a path of the package (relative to its folder) holds tests only, so that copying it onto
    /// the base cannot bring a fix along ([`harness::is_test_file_in`] finds the package).
    fn is_test_file(&self, path: &str) -> bool;

    /// What the change does to how this stack's tests run ([`harness`]): read as data, never run.
    fn harness(&self, _diff: &harness::Diff) -> Vec<harness::Change> {
        Vec::new()
    }

    /// What the package's installed environment (its install's variables, `env`) loads into every test
    /// process, read as data; `None` when this stack installs none.
    fn installed(&self, _env: &[(String, OsString)]) -> Option<harness::Environment> {
        None
    }

    /// Whether [`Runner::canary`] is built for this stack.
    fn canaries(&self) -> bool {
        false
    }

    /// The canary ([`crate::floors::canary`]): in `run.root`, a per-run copy of the head, a failing
    /// first statement with the run's message is put first in each test's own body (the file is edited
    /// there, read as data, never run). For each test: the test whose run must then fail with that
    /// message (a Go subtest's parent), or why the canary cannot apply to it.
    fn canary(
        &self,
        _run: &Run,
        _package: &Package,
        _tests: &[&TestId],
        _canary: &Canary,
    ) -> BTreeMap<TestId, Result<TestId, String>> {
        BTreeMap::new()
    }

    /// The package's whole test suite, once, instrumented for the coverage floor; `Err` says why it
    /// cannot be (no coverage runner for this stack yet, a tool it needs is missing).
    fn cover_suite(
        &self,
        _run: &Run,
        _package: &Package,
        _cover: &Cover,
    ) -> Result<Suite, RunnerError> {
        Err(RunnerError::NoCoverage(self.title()))
    }

    /// Whether [`Runner::cover_suite`] is built for this stack.
    fn covers(&self) -> bool {
        false
    }

    /// How the coverage floor names this runner's tool: in `tool` (`go test -coverprofile`) and in the
    /// detail (`go coverprofile`).
    fn coverage_words(&self) -> (&'static str, &'static str) {
        ("", "")
    }

    /// Which lines of each repository path of the package are test code, left out of the coverage
    /// floor's changed lines (each language's own rule).
    fn test_code(
        &self,
        _root: &Path,
        _package: &Package,
        paths: &[String],
    ) -> BTreeMap<String, TestCode> {
        paths.iter().map(|p| (p.clone(), TestCode::None)).collect()
    }

    /// Whether a test id's `<rest>` names the test a whole-suite run reported as `name` (or one of its
    /// subtests, or the test it is a subtest of).
    fn names_test(&self, rest: &str, name: &str) -> bool {
        rest == name
    }
}

/// How deep a text's brackets may nest for aayu to parse it with a recursive parser (`syn`, `oxc`).
pub(crate) const PARSE_NESTING: usize = 1024;

/// How deep a text's brackets nest, counted without regard to strings or comments (an over-count only
/// refuses a parse).
pub(crate) fn nesting(text: &str) -> usize {
    let (mut depth, mut most) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                most = most.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    most
}

/// A parse of text a pull request controls, as root: refused when its brackets nest deeper than
/// [`PARSE_NESTING`] (counted without regard to strings or comments: an over-count only refuses), run
/// on a thread of its own with a large stack (and proc-macro2's record of the text freed with it).
pub(crate) fn parse_apart<T: Send + 'static>(
    text: String,
    parse: impl FnOnce(String) -> T + Send + 'static,
) -> Result<T, String> {
    if nesting(&text) > PARSE_NESTING {
        return Err(format!(
            "its brackets nest deeper than {PARSE_NESTING}, which aayu does not parse"
        ));
    }
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || parse(text))
        .map_err(|e| format!("no thread to parse it on: {e}"))?
        .join()
        .map_err(|_| "its parse crashed".to_string())
}

/// What a runner's canary is handed ([`Runner::canary`]).
pub struct Canary<'a> {
    /// The failing first statement's message: this run's own, unknown to the pull request's code.
    pub message: &'a str,
    /// The machine's Python interpreter (never a virtual environment's): pytest's canary finds a test's
    /// body with its `ast`.
    pub python: Option<&'a Path>,
}

/// What the coverage floor hands a whole-suite run.
pub struct Cover<'a> {
    /// The package's tests an evidence map names: read from this run when the runner's record rules
    /// allow it ([`Suite::mapped`]).
    pub mapped: &'a [&'a TestId],
    /// The repository paths of the change's source files (its Go and Rust files): the files whose lines
    /// are asked for, wherever the package's tests ran them.
    pub changed: &'a [String],
    /// The LLVM tools of the package's toolchain (cargo's).
    pub llvm: Option<&'a crate::sandbox::llvm::LlvmTools>,
    /// The cargo home the package's cargo reads its configuration from.
    pub cargo_home: Option<&'a Path>,
}

/// What a file's coverage says of its lines: the executable ones, and the ones a test ran.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lines {
    pub executable: std::collections::BTreeSet<u32>,
    pub covered: std::collections::BTreeSet<u32>,
    /// Lines of a block that ran and of one that did not.
    pub missed: std::collections::BTreeSet<u32>,
}

impl Lines {
    /// Adds another report's lines: a line listed twice counts with its largest count.
    pub fn add(&mut self, other: Lines) {
        self.executable.extend(other.executable);
        self.covered.extend(other.covered);
        self.missed.extend(other.missed);
    }
}

/// Which lines of a file are test code ([`Runner::test_code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestCode {
    None,
    Whole,
    Lines(std::collections::BTreeSet<u32>),
    /// The file could not be read as code: nothing is left out, and this says so.
    Unread(String),
}

/// What an instrumented whole-suite run gave ([`Runner::cover_suite`]).
#[derive(Debug, Clone, Default)]
pub struct Suite {
    /// Each test that ended, by the runner's own name (`TestParse`, `TestParse/empty`,
    /// `calc(lib)/tests::adds`): `None` when it passed (a skip counts as passed: it broke nothing),
    /// else what its failure said (empty when the runner does not say).
    pub tests: BTreeMap<String, Option<String>>,
    /// What the run left out and the floor says (a target without libtest's harness, not run).
    pub notes: Vec<String>,
    /// Why the run gives no coverage to trust, by the change's fault — it did not build, a test ended it
    /// early — with what to look at; `None` when it ran to its end.
    pub broken: Option<String>,
    /// Why the run could not give a number for another reason — it ran past `[verify] suite_timeout_s`,
    /// it was not instrumented, the coverage tools failed.
    pub blocked: Option<String>,
    /// What it ran, by repository path: the package's own files only.
    pub lines: BTreeMap<String, Lines>,
    /// No package to run after all (every file excluded by a build constraint).
    pub nothing: bool,
    /// Why the package's lines are not counted, when they are not (a Go before 1.22 lists no line of a
    /// package without tests).
    pub uncounted: Option<String>,
    /// The mapped tests read from this run, each as the tests floor would have found it.
    pub mapped: BTreeMap<TestId, TestResult>,
}

/// The files that claim a folder (any one of them): in the folder itself, or (`above`) in it or the
/// nearest folder above it inside the tree, as a Go package sits inside its module.
#[derive(Debug, Clone, Copy)]
pub struct Marker {
    pub files: &'static [&'static str],
    pub above: bool,
}

/// A package folder and the runner whose marker claims it.
#[derive(Clone, Copy)]
pub struct Package<'a> {
    pub runner: &'static dyn Runner,
    /// The folder, normalised (`""` is the root).
    pub dir: &'a str,
    /// The folder of the marker: the package's own for cargo, the module's for a Go package.
    pub home: &'a str,
}

/// A package found by [`package`], owning its folders.
#[derive(Clone)]
pub struct Found {
    pub runner: &'static dyn Runner,
    pub dir: String,
    pub home: String,
}

impl Found {
    pub fn package(&self) -> Package<'_> {
        Package {
            runner: self.runner,
            dir: &self.dir,
            home: &self.home,
        }
    }
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} package `{}`",
            self.runner.name(),
            shown_dir(&self.dir)
        )
    }
}

/// Which runner claims a package folder (any spelling [`package_dir`] takes) of `root`: the folder's own
/// markers first, in the order of [`RUNNERS`], then a marker above it (a Go module's); looked at without
/// following a link. `None` when none does.
pub fn package(root: &Path, dir: &str) -> Option<Found> {
    claim(root, dir, None, None)
}

/// The package of the runner of `tool` that a folder lies in: as [`package`], but only that runner's
/// markers count (a `.go` file belongs to its Go package whatever `pytest.ini` or `package.json` shares
/// its folder).
pub fn package_by(root: &Path, dir: &str, tool: crate::sandbox::preflight::Tool) -> Option<Found> {
    claim(root, dir, None, Some(tool))
}

/// The runner that runs a test id: as [`package`], except that in a folder the markers of two runners
/// claim, an id of one runner's own shape goes to that runner (`tests/test_x.py::t` to pytest).
pub fn package_of(root: &Path, id: &TestId) -> Option<Found> {
    claim(root, &id.package, Some(&id.rest), None)
}

fn claim(
    root: &Path,
    dir: &str,
    rest: Option<&str>,
    tool: Option<crate::sandbox::preflight::Tool>,
) -> Option<Found> {
    let dir = package_dir(dir).ok()?;
    let has = |at: &str, runner: &dyn Runner| {
        runner
            .marker()
            .files
            .iter()
            .any(|file| crate::safe_fs::is_regular(root, &join(at, file)))
    };
    let found = |runner: &'static dyn Runner, home: String| Found {
        runner,
        dir: dir.clone(),
        home,
    };
    let runners: Vec<&'static dyn Runner> = RUNNERS
        .iter()
        .copied()
        .filter(|r| tool.is_none_or(|t| r.tool() == t))
        .collect();
    // The nearest marker above, of a runner whose package spans folders (a Go module's).
    let above = |wanted: &dyn Fn(&dyn Runner) -> bool| -> Option<Found> {
        let mut at = dir.clone();
        while !at.is_empty() {
            at = at
                .rsplit_once('/')
                .map_or(String::new(), |(p, _)| p.to_string());
            if let Some(runner) = runners
                .iter()
                .find(|r| r.marker().above && has(&at, **r) && wanted(**r))
            {
                return Some(found(*runner, at));
            }
        }
        None
    };
    let own: Vec<&'static dyn Runner> = runners.iter().copied().filter(|r| has(&dir, *r)).collect();
    if let Some(first) = own.first() {
        let Some(rest) = rest else {
            return Some(found(*first, dir.clone()));
        };
        if let Some(chosen) = own.iter().find(|r| r.claims_id(rest)) {
            return Some(found(*chosen, dir.clone()));
        }
        // An id of the module above's own shape (a Go test of a folder an empty `pytest.ini` shares).
        return above(&|r: &dyn Runner| r.claims_id(rest))
            .or_else(|| Some(found(*first, dir.clone())));
    }
    above(&|_: &dyn Runner| true)
}

/// The packages of `wanted` that a runner claims — each a folder (any spelling), with the id whose runner
/// is meant when there is one ([`package_of`]) — each with its runner's fetch plan: one per folder and
/// runner; a package with nothing to fetch is left out.
pub fn fetch_packages(
    toolchains: &Toolchains,
    root: &Path,
    wanted: impl IntoIterator<Item = (String, Option<String>)>,
) -> Vec<crate::sandbox::FetchPackage> {
    let mut seen = std::collections::BTreeSet::new();
    let mut packages = Vec::new();
    for (dir, rest) in wanted {
        let Some(found) = claim(root, &dir, rest.as_deref(), None) else {
            continue;
        };
        if !seen.insert((found.dir.clone(), found.runner.name())) {
            continue;
        }
        let plan = match found.runner.fetch(toolchains, root, &found.package()) {
            Ok(None) => continue,
            Ok(Some(plan)) => Ok(plan),
            // The sandbox holds a plan's error as the warning and the blocked reason it gives.
            Err(why) => Err(why.to_string()),
        };
        packages.push(crate::sandbox::FetchPackage {
            tool: found.runner.tool(),
            dir: found.dir,
            plan,
        });
    }
    packages
}

/// Runs exactly these tests of the package by its runner, and writes every machine path in what it
/// returns (details and events) as [`scrub`] does: what a floor, a report or a transcript says of a test
/// never holds this machine's folders.
pub fn run_named(run: &Run, package: &Package, tests: &[&TestId]) -> BTreeMap<TestId, TestResult> {
    scrubbed(package.runner.run_named(run, package, tests), run.root)
}

/// The canaries of the package's tests, by its runner ([`Runner::run_canaries`]), scrubbed as
/// [`run_named`]'s.
pub fn run_canaries(
    run: &Run,
    package: &Package,
    tests: &[&TestId],
) -> BTreeMap<TestId, TestResult> {
    scrubbed(package.runner.run_canaries(run, package, tests), run.root)
}

/// The package's whole suite, instrumented, by its runner ([`Runner::cover_suite`]), with every machine
/// path in what it says written as [`scrub`] does, as [`run_named`]'s.
pub fn cover_suite(run: &Run, package: &Package, cover: &Cover) -> Result<Suite, SuiteError> {
    let mut suite = package
        .runner
        .cover_suite(run, package, cover)
        .map_err(|source| SuiteError {
            said: scrub(&source.to_string(), run.root),
            source: Box::new(source),
        })?;
    suite.broken = suite.broken.map(|why| scrub(&why, run.root));
    suite.blocked = suite.blocked.map(|why| scrub(&why, run.root));
    suite.mapped = scrubbed(std::mem::take(&mut suite.mapped), run.root);
    Ok(suite)
}

fn scrubbed(results: BTreeMap<TestId, TestResult>, root: &Path) -> BTreeMap<TestId, TestResult> {
    results
        .into_iter()
        .map(|(id, mut result)| {
            result.outcome = match result.outcome {
                Outcome::Passed => Outcome::Passed,
                Outcome::Failed(d) => Outcome::Failed(scrub(&d, root)),
                Outcome::NotBuilt(d) => Outcome::NotBuilt(scrub(&d, root)),
                Outcome::NotFound(d) => Outcome::NotFound(scrub(&d, root)),
                Outcome::NotRun(d) => Outcome::NotRun(scrub(&d, root)),
                Outcome::Blocked(d) => Outcome::Blocked(scrub(&d, root)),
                Outcome::Ambiguous(d) => Outcome::Ambiguous(scrub(&d, root)),
            };
            result.events = result.events.iter().map(|e| scrub(e, root)).collect();
            (id, result)
        })
        .collect()
}

/// What no runner claims, in words: the markers there are, and what to map instead.
pub fn unclaimed(dir: &str) -> String {
    let markers: Vec<String> = RUNNERS
        .iter()
        .map(|r| {
            let m = r.marker();
            let files = m.files.join(", ");
            if m.above {
                format!("{} at or above it for {}", files, r.title())
            } else {
                format!("{} for {}", files, r.title())
            }
        })
        .collect();
    format!(
        "no test runner aayu knows in `{}` (it looks for {}): map the criterion to a behaviour check with `checks = [...]` instead",
        shown_dir(dir),
        markers.join("; ")
    )
}

/// What happened to one test.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
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
    /// The word `reports/red-on-base.json` and the step runner's transcript use.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::NotBuilt(_) => "not-built",
            Outcome::NotFound(_) | Outcome::Ambiguous(_) => "not-found",
            Outcome::NotRun(_) | Outcome::Blocked(_) => "not-run",
        }
    }

    /// The outcome as a reason says it: `failed`, `did not build`, `was not found` …
    pub fn words(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "failed",
            Outcome::NotBuilt(_) => "did not build",
            Outcome::NotFound(_) => "was not found",
            Outcome::Ambiguous(_) => "is ambiguous",
            Outcome::NotRun(_) => "did not run",
            Outcome::Blocked(_) => "cannot run here",
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestResult {
    pub outcome: Outcome,
    pub events: Vec<String>,
    /// The `<rest>` that names this very test where the run found it (a cargo id qualified with the one
    /// target that held it), when the id was less precise: red-on-base runs that test on the base, never
    /// another target's of the same path.
    pub pinned: Option<String>,
    /// What the evidence's line says beside the result (a Go package's own `TestMain`).
    pub note: Option<String>,
}

impl TestResult {
    pub fn of(outcome: Outcome) -> TestResult {
        TestResult {
            outcome,
            events: Vec::new(),
            pinned: None,
            note: None,
        }
    }
}

/// One process a runner asks for.
pub struct Job {
    /// What it is, for the log's heartbeat: `building the tests of `x``.
    pub what: String,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Variables for this process, beside the launcher's own.
    pub env: Vec<(String, OsString)>,
    pub timeout: Duration,
    /// A variable to name a file by: the launcher makes a folder the process can write, puts the path of
    /// a file in it in this variable (and in place of `@report@` in the argv), and hands back what the
    /// process wrote there (a runner's structured events, never read from its output).
    pub report: Option<&'static str>,
    /// What the process reads on its standard input, then its end (empty: nothing, at once). A secret
    /// for the runner's own plugin comes this way, never in the environment a test can read.
    pub stdin: Vec<u8>,
}

/// How a launched process ended.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// What the process wrote to the file of [`Job::report`] (`None`: no such file).
    pub report: Option<Vec<u8>>,
    /// Whether its stdout went past what the launcher keeps ([`REPORT_CAP`] in the sandbox).
    pub truncated: bool,
}

/// The most of a report file a launcher reads.
pub const REPORT_CAP: u64 = 64 << 20;

/// An argv with `@report@` replaced by the report file's path (see [`Job::report`]).
pub fn with_report(argv: &[String], file: &Path) -> Vec<String> {
    let path = file.display().to_string();
    argv.iter().map(|a| a.replace("@report@", &path)).collect()
}

/// A report file a process wrote (see [`Job::report`]): the file itself, never a link in its place,
/// capped; `None` when there is none.
pub fn read_report(file: &Path) -> Option<Vec<u8>> {
    let dir = file.parent()?;
    let name = file.file_name()?.to_str()?;
    crate::safe_fs::read(dir, name, REPORT_CAP).ok()
}

/// What starts a runner's processes: the sandbox, or a plain child inside a check's sandbox. `Err` is why
/// the process gave no result that can be trusted (it could not start, it went over a limit, a process
/// of it survived the kill).
/// Runs `command` to its end with its output captured, `stdin` written to its standard input and then
/// closed (nothing: `/dev/null`), as a plain launcher does.
pub fn output_with_stdin(
    command: &mut std::process::Command,
    stdin: &[u8],
) -> std::io::Result<std::process::Output> {
    use std::io::Write as _;
    use std::process::Stdio;
    if stdin.is_empty() {
        return command.stdin(Stdio::null()).output();
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pipe = child.stdin.take();
    let bytes = stdin.to_vec();
    // A thread writes while the output is read: a child that does not read cannot block the wait.
    let feeder = std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let _ = pipe.write_all(&bytes);
        }
    });
    let output = child.wait_with_output();
    let _ = feeder.join();
    output
}

pub trait Launcher {
    fn launch(&self, job: Job) -> Result<Ran, LaunchError>;

    /// A fresh, empty folder named `name` that the processes it launches may write and read (the coverage
    /// floor's profiles), kept until the run ends; `Err` when this launcher has none.
    fn scratch(&self, name: &str) -> Result<PathBuf, LaunchError> {
        Err(LaunchError::NoScratch {
            name: name.to_string(),
        })
    }
}

/// A run of tests in one tree.
pub struct Run<'a> {
    /// The checkout the tests run in (the repository, or red-on-base's copy of the base).
    pub root: &'a Path,
    pub launcher: &'a dyn Launcher,
    /// How long one test executable (or `go test`) may run; builds get at least 600 s.
    pub timeout: Duration,
    /// Variables every process of the run gets (the toolchain, a build cache of its own).
    pub env: Vec<(String, OsString)>,
}

/// How a process ended, for a reason: `… exited with status 101: <its stderr's first lines>`.
pub(crate) fn exited(what: &str, ran: &Ran, root: &Path) -> String {
    let status = match (ran.timed_out, ran.code, ran.signal) {
        (true, _, _) => "ran past its time limit".to_string(),
        (_, Some(code), _) => format!("exited with status {code}"),
        (_, None, Some(signal)) => format!("was killed by signal {signal}"),
        _ => "ended".to_string(),
    };
    let said = said(&ran.stderr, root);
    if said.is_empty() {
        format!("{what} {status}")
    } else {
        format!("{what} {status}: {said}")
    }
}

/// Each id read by its runner's grammar (checked before the run in the gate; here for any other caller):
/// the ones it reads, and a `not-found` result for each it cannot.
pub(crate) fn read_ids<'a, T, E: std::fmt::Display>(
    tests: &[&'a TestId],
    parse: fn(&str) -> Result<T, E>,
) -> (Vec<(&'a TestId, T)>, BTreeMap<TestId, TestResult>) {
    let mut wanted = Vec::new();
    let mut refused = BTreeMap::new();
    for test in tests {
        match parse(&test.rest) {
            Ok(spec) => wanted.push((*test, spec)),
            Err(why) => {
                refused.insert(
                    (*test).clone(),
                    TestResult::of(Outcome::NotFound(why.to_string())),
                );
            }
        }
    }
    (wanted, refused)
}

/// The same outcome for every test.
pub fn all(tests: &[&TestId], outcome: Outcome) -> BTreeMap<TestId, TestResult> {
    tests
        .iter()
        .map(|t| ((*t).clone(), TestResult::of(outcome.clone())))
        .collect()
}

/// `a` joined with `b` as a repository path (`""` is the root).
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_first_marker_in_order_claims_a_folder() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("go.mod"), "module m\n").expect("go.mod");
        std::fs::create_dir_all(dir.path().join("tool/sub")).expect("dirs");
        std::fs::write(
            dir.path().join("tool/Cargo.toml"),
            "[package]\nname = \"t\"\n",
        )
        .expect("Cargo.toml");
        let found = |d: &str| package(dir.path(), d).map(|p| (p.runner.name(), p.home));
        assert_eq!(found("./tool/"), Some(("cargo", "tool".to_string())));
        assert_eq!(found("tool/sub"), Some(("go", String::new())));
        assert_eq!(found("."), Some(("go", String::new())));
        assert!(package(dir.path(), "../x").is_none());
        // A folder's own Python marker claims it before the Go module above it.
        std::fs::create_dir_all(dir.path().join("py")).expect("py");
        std::fs::write(dir.path().join("py/pytest.ini"), "[pytest]\n").expect("ini");
        assert_eq!(found("py"), Some(("pytest", "py".to_string())));
        // In a folder of two runners, an id of pytest's shape is pytest's, any other the first's.
        std::fs::write(dir.path().join("tool/pyproject.toml"), "").expect("pyproject");
        let of = |rest: &str| {
            let id = TestId {
                package: "tool".to_string(),
                rest: rest.to_string(),
            };
            package_of(dir.path(), &id).map(|p| p.runner.name())
        };
        assert_eq!(of("tests/test_x.py::test_a[p::q]"), Some("pytest"));
        assert_eq!(of("tests::adds"), Some("cargo"));
        assert_eq!(of("x.py"), Some("cargo"));
        assert_eq!(found("tool"), Some(("cargo", "tool".to_string())));
        insta::assert_snapshot!("unclaimed", unclaimed("lib"));
    }

    /// A plain child, as the step runner launches.
    struct Plain;

    impl Launcher for Plain {
        fn launch(&self, job: Job) -> Result<Ran, LaunchError> {
            let folder = tempfile::tempdir().map_err(|source| LaunchError::ReportFolder {
                program: job.argv[0].clone(),
                source,
            })?;
            let file = folder.path().join("report");
            let mut command = std::process::Command::new(&job.argv[0]);
            command
                .args(with_report(&job.argv[1..], &file))
                .current_dir(&job.cwd)
                .envs(job.env.iter().map(|(k, v)| (k, v)));
            if let Some(var) = job.report {
                command.env(var, &file);
            }
            let out = output_with_stdin(&mut command, &job.stdin).map_err(|source| {
                LaunchError::Start {
                    command: job.argv.join(" "),
                    source,
                }
            })?;
            use std::os::unix::process::ExitStatusExt;
            Ok(Ran {
                code: out.status.code(),
                signal: out.status.signal(),
                timed_out: false,
                stdout: out.stdout,
                stderr: out.stderr,
                report: read_report(&file),
                truncated: false,
            })
        }
    }

    /// A run in `root` by plain children, with build caches of its own under it.
    fn plain_run(root: &Path) -> Run<'_> {
        let home = root.join("home");
        Run {
            root,
            launcher: &Plain,
            timeout: Duration::from_secs(300),
            env: vec![
                ("CARGO_TARGET_DIR".into(), root.join("target").into()),
                ("GOCACHE".into(), home.join("cache").into()),
                ("GOPATH".into(), home.join("path").into()),
                ("GOTOOLCHAIN".into(), "local".into()),
            ],
        }
    }

    /// A temporary folder holding `files` (path, text).
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    fn ids(package: &str, rests: &[&str]) -> Vec<TestId> {
        rests
            .iter()
            .map(|r| TestId {
                package: package.to_string(),
                rest: (*r).to_string(),
            })
            .collect()
    }

    /// The cargo runner reads named tests with a plain launcher: the same code the tests floor runs in the
    /// sandbox and a `test` step runs in a check.
    #[test]
    fn cargo_runs_named_tests() {
        let dir = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
            ),
            (
                "src/lib.rs",
                "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(2 + 2, 4); }\n    #[test]\n    fn breaks() { assert_eq!(1, 2, \"one is not two\"); }\n}\n",
            ),
        ]);
        let found = package(dir.path(), ".").expect("cargo");
        let run = Run {
            root: dir.path(),
            launcher: &Plain,
            timeout: Duration::from_secs(300),
            env: vec![("CARGO_TARGET_DIR".into(), dir.path().join("target").into())],
        };
        let wanted = ids(
            "",
            &[
                "tests::adds",
                "tests::breaks",
                "adds",
                "calc(lib)/tests::adds",
            ],
        );
        let refs: Vec<&TestId> = wanted.iter().collect();
        let results = found.runner.run_named(&run, &found.package(), &refs);
        let outcome = |i: usize| &results[&wanted[i]].outcome;
        assert_eq!(*outcome(0), Outcome::Passed);
        assert!(
            matches!(outcome(1), Outcome::Failed(d) if d == "assertion `left == right` failed: one is not two; left: 1; right: 2 (at src/lib.rs:6:19)"),
            "{:?}",
            outcome(1)
        );
        assert!(
            matches!(outcome(2), Outcome::NotFound(d) if d.contains("`tests::adds`")),
            "{:?}",
            outcome(2)
        );
        assert_eq!(*outcome(3), Outcome::Passed);
        // An id without a target names, on the base, the target that held it.
        assert_eq!(
            results[&wanted[0]].pinned.as_deref(),
            Some("calc(lib)/tests::adds")
        );
        assert_eq!(results[&wanted[3]].pinned, None);
    }

    #[test]
    fn go_runs_named_tests() {
        if std::process::Command::new("go")
            .arg("version")
            .output()
            .is_err()
        {
            panic!("go is not installed: scripts/test installs golang-go");
        }
        let dir = tree(&[
            ("go.mod", "module example.com/m\n\ngo 1.19\n"),
            (
                "pkg/calc_test.go",
                "package pkg\n\nimport \"testing\"\n\nfunc TestAdds(t *testing.T) {\n\tt.Run(\"zero\", func(t *testing.T) {})\n}\n\nfunc TestBreaks(t *testing.T) { t.Fatal(\"one is not two\") }\n",
            ),
        ]);
        let found = package(dir.path(), "pkg").expect("go");
        let home = dir.path().join("home");
        let run = Run {
            root: dir.path(),
            launcher: &Plain,
            timeout: Duration::from_secs(300),
            env: vec![
                ("GOFLAGS".into(), "-mod=mod".into()),
                ("GOCACHE".into(), home.join("cache").into()),
                ("GOPATH".into(), home.join("path").into()),
                ("GOTOOLCHAIN".into(), "local".into()),
            ],
        };
        let wanted = ids("pkg", &["TestAdds/zero", "TestBreaks", "TestNone"]);
        let refs: Vec<&TestId> = wanted.iter().collect();
        let results = found.runner.run_named(&run, &found.package(), &refs);
        let outcome = |i: usize| &results[&wanted[i]].outcome;
        assert_eq!(*outcome(0), Outcome::Passed);
        assert!(
            matches!(outcome(1), Outcome::Failed(d) if d.contains("one is not two")),
            "{:?}",
            outcome(1)
        );
        assert!(
            matches!(outcome(2), Outcome::NotFound(_)),
            "{:?}",
            outcome(2)
        );
    }

    /// One test's early end (an abort, a panic) decides nothing about another's: the tests that did not
    /// run run again alone.
    #[test]
    fn a_test_that_ends_the_binary_leaves_its_siblings_their_own_verdicts() {
        let dir = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"ends\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
            ),
            (
                "src/lib.rs",
                "#[cfg(test)]\nmod tests {\n    #[test]\n    fn a_aborts() { std::process::abort(); }\n    #[test]\n    fn b_passes() {}\n}\n",
            ),
            ("tests/cli.rs", "#[test]\nfn cli_ok() {}\n"),
            ("go/go.mod", "module example.com/ends\n\ngo 1.19\n"),
            (
                "go/ends_test.go",
                "package ends\n\nimport \"testing\"\n\nfunc TestAPanics(t *testing.T) { panic(\"boom\") }\n\nfunc TestBPasses(t *testing.T) {}\n",
            ),
        ]);
        let run = plain_run(dir.path());
        let rust = ids("", &["tests::a_aborts", "tests::b_passes", "cli_ok"]);
        let found = package(dir.path(), ".").expect("cargo");
        let refs: Vec<&TestId> = rust.iter().collect();
        let results = found.runner.run_named(&run, &found.package(), &refs);
        assert_eq!(results[&rust[1]].outcome, Outcome::Passed, "{results:?}");
        // Another target's crash says nothing about a test found in this one.
        assert_eq!(results[&rust[2]].outcome, Outcome::Passed, "{results:?}");
        assert!(
            matches!(&results[&rust[0]].outcome, Outcome::NotRun(d) if d.contains("gave no whole result") && d.contains("signal 6")),
            "{results:?}"
        );
        let go = ids("go", &["TestAPanics", "TestBPasses"]);
        let found = package(dir.path(), "go").expect("go");
        let refs: Vec<&TestId> = go.iter().collect();
        let results = found.runner.run_named(&run, &found.package(), &refs);
        assert_eq!(results[&go[1]].outcome, Outcome::Passed, "{results:?}");
        assert!(
            matches!(&results[&go[0]].outcome, Outcome::Failed(_)),
            "{results:?}"
        );
    }

    /// Evidence is the harness's record: a `harness = false` target printing libtest's lines, a test that
    /// writes a forged line or a whole forged frame to fd 1, a Go test printing another test's `--- PASS`
    /// and a `TestMain` that never runs the tests are each refused, with the reason.
    #[test]
    fn lines_a_test_prints_in_the_harness_s_form_are_not_its_record() {
        let fd1 = |text: &str| {
            format!(
                "{{ use std::io::Write; use std::os::fd::FromRawFd; let mut out = unsafe {{ std::fs::File::from_raw_fd(1) }}; out.write_all({text:?}.as_bytes()).unwrap(); std::mem::forget(out); }}"
            )
        };
        let sibling_ok = "{\"type\":\"test\",\"name\":\"tests::honest\",\"event\":\"ok\"}\n";
        let frame = "{\"type\":\"test\",\"name\":\"tests::honest\",\"event\":\"ok\"}\n{\"type\":\"suite\",\"event\":\"ok\",\"passed\":2,\"failed\":0,\"ignored\":0,\"measured\":0,\"filtered_out\":0}\n";
        let own_ok = "{\"type\":\"test\",\"name\":\"tests::own\",\"event\":\"ok\"}\n";
        let lib = format!(
            "#[cfg(test)]\nmod tests {{\n    #[test]\n    fn honest() {{}}\n    #[test]\n    fn sibling() {{ {} }}\n    #[test]\n    fn framed() {{ {} std::process::exit(0); }}\n    #[test]\n    fn own() {{ {} panic!(\"it fails\"); }}\n}}\n",
            fd1(sibling_ok),
            fd1(frame),
            fd1(own_ok),
        );
        let forged_main = format!(
            "fn main() {{ print!(\"{{}}\", {:?}); }}\n",
            "{\"type\":\"suite\",\"event\":\"started\",\"test_count\":1}\n{\"type\":\"test\",\"event\":\"started\",\"name\":\"adds\"}\n{\"type\":\"test\",\"name\":\"adds\",\"event\":\"ok\"}\n{\"type\":\"suite\",\"event\":\"ok\",\"passed\":1,\"failed\":0,\"ignored\":0,\"measured\":0,\"filtered_out\":0}\n"
        );
        let dir = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"forge\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n\n[[test]]\nname = \"forged\"\nharness = false\n",
            ),
            ("src/lib.rs", lib.as_str()),
            ("tests/forged.rs", forged_main.as_str()),
            ("go/go.mod", "module example.com/forge\n\ngo 1.19\n"),
            (
                "go/forge_test.go",
                "package forge\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestLiar(t *testing.T) { fmt.Println(\"--- PASS: TestOther (0.00s)\"); fmt.Println(\"\\x16--- PASS: TestOther (0.00s)\") }\n\nfunc TestOther(t *testing.T) { t.Fatal(\"the real one fails\") }\n",
            ),
            ("late/go.mod", "module example.com/late\n\ngo 1.19\n"),
            (
                "late/late_test.go",
                "package late\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { m.Run(); fmt.Println(\"--- PASS: TestAdds (0.00s)\"); fmt.Println(\"\\x16--- PASS: TestAdds (0.00s)\"); os.Exit(0) }\n\nfunc TestAdds(t *testing.T) { t.Fatal(\"it fails\") }\n",
            ),
            ("main/go.mod", "module example.com/main\n\ngo 1.19\n"),
            (
                "main/main_test.go",
                "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { fmt.Println(\"--- PASS: TestAdds\"); os.Exit(0) }\n\nfunc TestAdds(t *testing.T) { t.Fatal(\"never run\") }\n",
            ),
        ]);
        let run = plain_run(dir.path());
        let outcomes = |dir_: &str, rests: &[&str]| {
            let wanted = ids(dir_, rests);
            let found = package(dir.path(), dir_).expect("package");
            let refs: Vec<&TestId> = wanted.iter().collect();
            let results = found.runner.run_named(&run, &found.package(), &refs);
            wanted
                .iter()
                .map(|id| results[id].outcome.clone())
                .collect::<Vec<_>>()
        };
        let rust = outcomes(
            "",
            &[
                "tests::honest",
                "tests::sibling",
                "tests::framed",
                "tests::own",
                "forged(test)/adds",
                "adds",
            ],
        );
        assert_eq!(rust[0], Outcome::Passed, "{rust:?}");
        for (i, why) in [
            (1, "an event of `tests::honest`, which was not asked for"),
            (2, "an event of `tests::honest`, which was not asked for"),
            (3, "`tests::own` has 1 `started` and 2 result events"),
        ] {
            assert!(
                matches!(&rust[i], Outcome::NotRun(d) if d.contains("does not match libtest's record") && d.contains(why)),
                "{i}: {:?}",
                rust[i]
            );
        }
        for i in [4, 5] {
            assert!(
                matches!(&rust[i], Outcome::NotRun(d) if d.contains("`forged(test)` has `harness = false`")),
                "{i}: {:?}",
                rust[i]
            );
        }
        let go = outcomes("go", &["TestLiar", "TestOther"]);
        assert!(
            matches!(&go[0], Outcome::NotRun(d) if d.contains("an event of `TestOther`, which was not asked for")),
            "{go:?}"
        );
        assert!(matches!(&go[1], Outcome::Failed(_)), "{go:?}");
        let late = outcomes("late", &["TestAdds"]);
        assert!(
            matches!(&late[0], Outcome::NotRun(d) if d.contains("2 results for `TestAdds`")),
            "{late:?}"
        );
        let main = outcomes("main", &["TestAdds"]);
        assert!(
            matches!(&main[0], Outcome::NotRun(d) if d.contains("`main/main_test.go` has a `TestMain` that never calls `m.Run()`")),
            "{main:?}"
        );
    }

    /// A checkout under a folder with a space in its name is written relative too, whole.
    #[test]
    fn a_root_with_a_space_is_written_relative() {
        let root = Path::new("/home/me/My Projects/app");
        let said = scrub(
            "panicked at /home/me/My Projects/app/src/lib.rs:3:1: in /home/me/My Projects/app (\"/home/me/My Projects/app/x.go:1\") /home/me/My Projects/app2/y",
            root,
        );
        assert_eq!(
            said,
            "panicked at src/lib.rs:3:1: in . (\"x.go:1\") /home/me/My Projects/app2/y"
        );
        assert_eq!(scrub(&said, root), said, "scrubbing twice changes nothing");
    }

    #[test]
    fn machine_paths_are_written_the_same_on_every_machine() {
        let root = Path::new("/tmp/aayu-red-on-base-x1");
        let said = scrub(
            "thread 'a' panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/assert_cmd-1.0.1/src/assert.rs:342:17: at /tmp/aayu-red-on-base-x1/src/lib.rs:3:1 in /tmp/aayu-red-on-base-x1, /usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e, /home/u/go/pkg/mod/github.com/x/y@v1.2.3/z.go:4 and /var/tmp/aayudha-target/debug/deps/calc-0a1b and /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:75",
            root,
        );
        assert_eq!(scrub(&said, root), said, "scrubbing twice changes nothing");
        for kept in [
            "https://github.com/golang/go/src/x",
            "foo/tmp/bar",
            "a <tmp>/…/x",
        ] {
            assert_eq!(scrub(kept, root), kept);
        }
        assert_eq!(
            scrub(
                "at /opt/hostedtoolcache/go/1.19.13/x64/src/testing/testing.go:1 and /root/.rustup/toolchains/stable/lib",
                root
            ),
            "at <goroot>/src/testing/testing.go:1 and <rustup-home>/toolchains/stable/lib"
        );
        assert_eq!(
            said,
            "thread 'a' panicked at <cargo-home>/registry/src/index.crates.io-1949cf8c6b5b557f/assert_cmd-1.0.1/src/assert.rs:342:17: at src/lib.rs:3:1 in ., <goroot>/src/testing/testing.go:1396 +0x24e, <gomodcache>/github.com/x/y@v1.2.3/z.go:4 and <tmp>/…/calc-0a1b and /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:75"
        );
    }

    /// What people read of a failure, each as its runner writes it (snapshot): a Go `t.Errorf`, a Go
    /// panic, a Rust `assert_eq!`, a panic inside a dependency of a cargo home, and none of them holding a
    /// path of this machine.
    #[test]
    fn failure_details_as_people_read_them() {
        let root = Path::new("/tmp/aayu-red-on-base-q7");
        let go_errorf = go::failure_of(
            &[
                "=== RUN   TestAdd\n",
                "    calc_test.go:12: Add(2, 2) = 0, want 4\n",
                "--- FAIL: TestAdd (0.00s)\n",
            ],
            &root.join("calc"),
            root,
        );
        let go_panic = go::failure_of(
            &[
                "--- FAIL: TestDiv (0.00s)\n",
                "panic: runtime error: integer divide by zero [recovered]\n",
                "goroutine 7 [running]:\n",
                "\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e\n",
                "example.com/calc.Div(...)\n",
                "\t/tmp/aayu-red-on-base-q7/calc/calc.go:7\n",
            ],
            &root.join("calc"),
            root,
        );
        let rust_assert = cargo::failure_of(
            "thread 'tests::adds' (4242) panicked at src/lib.rs:15:9:\nassertion `left == right` failed: one and one\n  left: 2\n right: 3\nnote: run with `RUST_BACKTRACE=1`\n",
        );
        let dependency = scrub(
            &cargo::failure_of(
                "thread 'cli' panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/assert_cmd-1.0.1/src/assert.rs:342:17:\nUnexpected failure.\ncode=2\nstderr=```error: no such note```\n",
            ),
            root,
        );
        let text = [go_errorf, go_panic, rust_assert, dependency].join("\n");
        for machine in ["/tmp/", "/root/", "/usr/lib/go"] {
            assert!(!text.contains(machine), "{text}");
        }
        insta::assert_snapshot!("failure_details", text);
    }
}

/// (De)serialises a map of results keyed by test id as a list of `[id, result]` pairs (a JSON object's
/// keys are strings): a sharded gate's legs record their results this way for the merge.
pub mod by_id {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::{TestId, TestResult};

    pub fn serialize<S: Serializer>(
        map: &BTreeMap<TestId, TestResult>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<TestId, TestResult>, D::Error> {
        Ok(Vec::<(TestId, TestResult)>::deserialize(d)?
            .into_iter()
            .collect())
    }
}
