//! The coverage floor: the whole test suite of every package the change touches, once, instrumented, in
//! the sandbox, offline; and the share of the change's **changed executable lines** — git's own `+` lines
//! of `base..head`, in files of the head, that the coverage report marks executable, test code left out —
//! that at least one test ran. A suite that does not build, that a test ends early or in which a test no
//! criterion maps fails gives no number (`fail`); a toolchain aayu cannot instrument gives `blocked`,
//! never 0 %. See `docs/proof-packs.md#the-coverage-floor`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::BlockingDate;
use crate::floors::test_evidence::{InSandbox, Run};
use crate::floors::{Floor, FloorResult, Verdict};
use crate::git::Added;
use crate::runners::{self, Found, Lines, TestCode, TestId, TestResult};
use crate::sandbox::preflight::Tool;

const TOOL: &str = "aayudha diff coverage";

/// The files whose added lines the floor reads: the languages it has a coverage runner for.
pub const SOURCES: [&str; 2] = ["*.go", "*.rs"];

/// The largest file whose added lines are read (a larger one is named as not counted).
pub const MAX_FILE: u64 = 4 << 20;

/// The most added lines read in all (the files past it are named as not counted).
pub const MAX_LINES: usize = 1_000_000;

/// The packages a change touches (a file of theirs, or of their tests, added or modified), by runner;
/// and the stacks of those no coverage runner covers yet.
#[derive(Debug, Default)]
pub struct Touched {
    pub packages: Vec<Found>,
    pub without_runner: BTreeSet<&'static str>,
}

impl Touched {
    /// The package folders to fetch dependencies for, as the fetch takes them.
    pub fn fetch(&self) -> Vec<(String, Option<String>)> {
        self.packages
            .iter()
            .map(|p| (p.dir.clone(), None))
            .collect()
    }

    /// The stacks without a coverage runner, as prose lists them (`cargo, Python`).
    pub fn stacks(&self) -> String {
        self.without_runner
            .iter()
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The tools the preflight checks: each runner's, and for cargo the LLVM tools that read its
    /// profiles.
    pub fn needs(&self) -> BTreeSet<Tool> {
        self.packages
            .iter()
            .flat_map(|p| {
                let tool = p.runner.tool();
                std::iter::once(tool).chain((tool == Tool::Cargo).then_some(Tool::Llvm))
            })
            .collect()
    }
}

/// The packages `paths` (the change's, present at the head in `root`) belong to. A Go package is one
/// folder with a `.go` file (the folder of a changed `.go` file, or of a `testdata/` folder its tests
/// read, inside its module); a cargo package is the
/// nearest folder with a `Cargo.toml` of a `[package]` above one of its files — a `.rs` file, its
/// `Cargo.toml` or `Cargo.lock`, or anything under its `src/`, `tests/`, `benches/` or `examples/`; a
/// package of a stack without a coverage runner is named in `without_runner`. Hidden files and folders
/// (`.github/`, `.aayudha/`) belong to no package.
pub fn touched(root: &Path, paths: &[String]) -> Touched {
    let mut touched = Touched::default();
    let mut seen = BTreeSet::new();
    // A folder's cargo package, looked up once (a change's files share folders).
    let mut cargo_of: BTreeMap<String, Option<Found>> = BTreeMap::new();
    for path in paths {
        if path.split('/').any(|part| part.starts_with('.'))
            || !crate::safe_fs::is_regular(root, path)
        {
            continue;
        }
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        // A Go package's files are its `.go` files and what its tests read under `testdata/`.
        let testdata = path
            .split_once("/testdata/")
            .map(|(d, _)| d)
            .or_else(|| path.strip_prefix("testdata/").map(|_| ""));
        let name = path.rsplit('/').next().unwrap_or(path);
        // Each file to its own stack's package, whatever other marker shares the folder (an empty
        // `pytest.ini` beside Go code does not take its coverage away).
        let found = if path.ends_with(".go") {
            runners::package_by(root, dir, Tool::Go)
        } else if let Some(dir) = testdata {
            runners::package_by(root, dir, Tool::Go)
        } else if path.ends_with(".rs") || matches!(name, "Cargo.toml" | "Cargo.lock") {
            // Rust's own files belong to a cargo package, whatever other marker sits nearer.
            cargo_of
                .entry(dir.to_string())
                .or_insert_with(|| cargo_package(root, dir))
                .clone()
        } else {
            own_package(root, dir).filter(|f| f.runner.tool() != Tool::Go)
        };
        let Some(found) = found else {
            continue;
        };
        if found.runner.covers() && !is_package_file(&found, path) {
            continue;
        }
        if !seen.insert((found.dir.clone(), found.runner.name())) {
            continue;
        }
        if !found.runner.covers() {
            touched.without_runner.insert(found.runner.title());
        } else if found.runner.tool() == Tool::Go {
            let has_go = std::fs::read_dir(root.join(&found.dir)).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    e.file_name().to_str().is_some_and(|n| n.ends_with(".go"))
                        && e.file_type().is_ok_and(|t| t.is_file())
                })
            });
            if has_go {
                touched.packages.push(found);
            }
        } else if !crate::sandbox::toolchain::is_virtual_manifest(root, &found.dir) {
            touched.packages.push(found);
        }
    }
    touched
}

/// The nearest folder at or above `dir` that a runner claims by a marker of its own in it (a Go module's
/// folder, for Go).
fn own_package(root: &Path, dir: &str) -> Option<Found> {
    let mut at = dir.to_string();
    loop {
        if let Some(found) = runners::package(root, &at).filter(|f| f.home == at) {
            return Some(found);
        }
        if at.is_empty() {
            return None;
        }
        at = at
            .rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string());
    }
}

/// The cargo package a Rust file at `dir` belongs to: the nearest folder at or above it with a
/// `Cargo.toml`, other markers passed by; `None` when that manifest is a virtual workspace's (which has
/// no files of its own). A manifest inside another package's `src/` claims nothing: that folder's files
/// are the outer package's modules.
pub(crate) fn cargo_package(root: &Path, dir: &str) -> Option<Found> {
    // Each manifest from the file's folder up: its folder, and whether it has a `[package]`.
    let mut manifests: Vec<(String, bool)> = Vec::new();
    let mut at = dir.to_string();
    loop {
        if crate::safe_fs::is_regular(root, &runners::join(&at, "Cargo.toml")) {
            manifests.push((
                at.clone(),
                !crate::sandbox::toolchain::is_virtual_manifest(root, &at),
            ));
        }
        if at.is_empty() {
            break;
        }
        at = at
            .rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string());
    }
    let inside_src = |inner: &str, outer: &str| {
        let src = runners::join(outer, "src");
        inner == src || inner.starts_with(&format!("{src}/"))
    };
    let (chosen, package) = manifests.iter().enumerate().find_map(|(i, (folder, _))| {
        let claimed = manifests[i + 1..]
            .iter()
            .any(|(outer, package)| *package && inside_src(folder, outer));
        (!claimed).then_some(&manifests[i])
    })?;
    if !package {
        return None;
    }
    runners::package(root, chosen).filter(|f| f.runner.tool() == Tool::Cargo)
}

/// Whether a changed path is one of a covered package's own files: any file of a Go package's folder;
/// for cargo a `.rs` file, the manifest or the lock, or a file under `src/`, `tests/`, `benches/` or
/// `examples/` (a test's fixture).
fn is_package_file(found: &Found, path: &str) -> bool {
    if found.runner.tool() != Tool::Cargo {
        return true;
    }
    let rel = if found.dir.is_empty() {
        path
    } else {
        match path
            .strip_prefix(found.dir.as_str())
            .and_then(|r| r.strip_prefix('/'))
        {
            Some(rel) => rel,
            None => return false,
        }
    };
    let first = rel.split('/').next().unwrap_or(rel);
    rel.ends_with(".rs")
        || matches!(rel, "Cargo.toml" | "Cargo.lock")
        || (rel.contains('/') && matches!(first, "src" | "tests" | "benches" | "examples"))
}

/// `reports/coverage.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Report {
    pub schema_version: u32,
    pub base: String,
    pub head: String,
    pub tool: String,
    pub changed_executable: usize,
    pub covered: usize,
    pub files: Vec<FileReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileReport {
    pub path: String,
    pub changed_executable: Vec<u32>,
    pub uncovered: Vec<u32>,
    pub partial: Vec<u32>,
}

impl Report {
    /// Each run of uncovered changed lines: `(file, first, last)`.
    pub fn uncovered_runs(&self) -> Vec<(&str, u32, u32)> {
        self.files
            .iter()
            .flat_map(|f| {
                runs(&f.uncovered)
                    .into_iter()
                    .map(|(a, b)| (f.path.as_str(), a, b))
            })
            .collect()
    }

    /// The `n` files with the most uncovered changed lines (ties by path), with those counts.
    pub fn most_uncovered(&self, n: usize) -> Vec<&FileReport> {
        let mut files: Vec<&FileReport> = self
            .files
            .iter()
            .filter(|f| !f.uncovered.is_empty())
            .collect();
        files.sort_by(|a, b| {
            b.uncovered
                .len()
                .cmp(&a.uncovered.len())
                .then_with(|| a.path.cmp(&b.path))
        });
        files.truncate(n);
        files
    }
}

/// Consecutive numbers as `(first, last)` runs.
fn runs(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &n in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == n => *end = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// What the floor is given.
pub struct Settings<'a> {
    pub base: &'a str,
    pub head: &'a str,
    pub threshold: u32,
    pub blocking: BlockingDate,
    pub now: time::OffsetDateTime,
    /// The tests the evidence map names: a failing test of the suite that none maps fails the floor.
    pub mapped: &'a [TestId],
}

/// The floor's result and its report (`None` when no number was computed).
pub struct Covered {
    pub floor: FloorResult,
    pub report: Option<Report>,
}

/// The floor on a change without a story.
pub fn skipped(why: &str) -> FloorResult {
    FloorResult::new(Floor::Coverage, Verdict::Skipped, TOOL, why.to_string())
}

/// The floor's `tool` and the words its detail ends with, for the runners whose suites ran: `aayudha diff
/// coverage (go test -coverprofile)` and `go coverprofile`.
fn names(touched: &Touched) -> (String, String) {
    let mut tools: Vec<&str> = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    for found in &touched.packages {
        let (tool, word) = found.runner.coverage_words();
        if !tools.contains(&tool) {
            tools.push(tool);
            words.push(word);
        }
    }
    if tools.is_empty() {
        return (TOOL.to_string(), String::new());
    }
    (format!("{TOOL} ({})", tools.join(", ")), words.join(", "))
}

/// The verdict of a number against the threshold and the blocking date: `pass` at or over it; under it
/// `pass` with the advisory words before the date, `fail` from 00:00 UTC that day.
fn verdict(value: u32, settings: &Settings, counted: String) -> (Verdict, String) {
    if value >= settings.threshold {
        (Verdict::Pass, counted)
    } else if settings.blocking.blocks_at(settings.now) {
        (Verdict::Fail, counted)
    } else {
        (
            Verdict::Pass,
            format!("{}: {counted}", settings.blocking.advisory_detail()),
        )
    }
}

/// What the touched packages' suites gave, by package folder, or why none could run: the part of the
/// floor that runs product code. A sharded gate's legs each run some of the suites and the merge reads
/// them back, so it is data (`Serialize`); [`finish`] computes the floor from it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suites {
    /// Why no suite could run here (a checkout the sandbox cannot reach).
    pub refused: Option<(Verdict, String)>,
    /// Each suite's results, by the package's folder.
    pub tallies: BTreeMap<String, Tally>,
    /// How long each suite took, by the package's folder: never in a report.
    #[serde(skip)]
    pub elapsed: BTreeMap<String, std::time::Duration>,
}

impl Suites {
    /// The mapped tests whose results the suites' own runs gave (the tests floor does not run them
    /// again).
    pub fn mapped(&self) -> BTreeMap<TestId, TestResult> {
        self.tallies
            .values()
            .flat_map(|t| t.mapped.iter().map(|(id, r)| (id.clone(), r.clone())))
            .collect()
    }

    /// Adds another run's suites (a shard's): the first refusal is kept.
    pub fn absorb(&mut self, other: Suites) {
        if self.refused.is_none() {
            self.refused = other.refused;
        }
        self.tallies.extend(other.tallies);
        self.elapsed.extend(other.elapsed);
    }
}

/// Runs each of `touched`'s suites, instrumented, in the sandbox (none when the change or the checkout
/// is refused).
pub fn run_suites(run: &Run, touched: &Touched, change: &Added, settings: &Settings) -> Suites {
    if refused_by_data(touched, change).is_some() {
        return Suites::default();
    }
    if let Some(why) = run.sandbox.reach_problem(run.root) {
        return Suites {
            refused: Some((Verdict::Blocked, why)),
            ..Suites::default()
        };
    }
    let launcher = InSandbox { run };
    let changed: Vec<String> = change.lines.keys().cloned().collect();
    let mut suites = Suites::default();
    for found in &touched.packages {
        let started = std::time::Instant::now();
        let mut tally = Tally::default();
        tally.cover(run, &launcher, found, &changed, settings);
        suites.tallies.insert(found.dir.clone(), tally);
        suites.elapsed.insert(found.dir.clone(), started.elapsed());
    }
    suites
}

/// Where the floor is judged: the head's checkout (its test code is read, its folder scrubbed from the
/// words) and the network the suites ran with (`None`: no suite ran).
pub struct Judged<'a> {
    pub root: &'a Path,
    pub network: Option<crate::sandbox::Network>,
}

/// The floor from the suites' results: every touched package's, in `touched`'s order.
pub fn finish(
    judged: &Judged,
    touched: &Touched,
    change: &Added,
    settings: &Settings,
    suites: Suites,
) -> Covered {
    let (tool, words) = names(touched);
    if let Some((verdict, why)) = refused_by_data(touched, change).or(suites.refused) {
        return no_number(judged, settings, &tool, verdict, why, Tally::default());
    }
    let mut tallies = suites.tallies;
    let mut tally = Tally::default();
    for found in &touched.packages {
        if let Some(one) = tallies.remove(&found.dir) {
            tally.absorb(one);
        }
    }
    if let Some((verdict, why)) = tally.without_number() {
        return no_number(judged, settings, &tool, verdict, why, tally);
    }
    let root = judged.root;
    let test_code = test_code(root, &tally.files, &change.lines);
    let report = compare(&tally.files, &change.lines, &test_code, settings, &tool);
    let counted = counted(&report, &words, &tally, change, touched, &test_code);
    let counted = runners::scrub(&counted, root);
    let (n, m) = (report.covered, report.changed_executable);
    let mut floor = if let Some(value) = (n * 100).checked_div(m) {
        let value = u32::try_from(value).unwrap_or(100);
        let (verdict, detail) = verdict(value, settings, counted);
        FloorResult::new(Floor::Coverage, verdict, tool.clone(), detail)
            .numbers(f64::from(value), f64::from(settings.threshold))
    } else {
        let why = match counted.split_once("; ") {
            Some((_, rest)) => format!("no changed executable line counted; {rest}"),
            None => "no changed executable line".to_string(),
        };
        FloorResult::new(Floor::Coverage, Verdict::Skipped, tool.clone(), why)
            .numbers(0.0, f64::from(settings.threshold))
    };
    floor.network = judged.network;
    floor.version = Some(tally.versions.join("; "));
    Covered {
        floor,
        report: Some(report),
    }
}

/// Why no suite runs at all, read from the change alone: no touched package with tests, a changed path
/// aayu refuses.
fn refused_by_data(touched: &Touched, change: &Added) -> Option<(Verdict, String)> {
    if touched.packages.is_empty() {
        let why = if touched.without_runner.is_empty() {
            "no package with tests is touched by the change".to_string()
        } else {
            format!("no coverage runner for {} yet", touched.stacks())
        };
        return Some((Verdict::Skipped, why));
    }
    // A path is data: one with a control character is refused (its lines could not be told apart in
    // the tools' reports), never left out of the count.
    change
        .lines
        .keys()
        .chain(&change.left_out)
        .find(|p| p.chars().any(char::is_control))
        .map(|path| {
            (
                Verdict::Blocked,
                format!(
                    "`{}` has a control character in its name: aayu refuses such a path, and cannot count its lines — rename it",
                    path.escape_debug()
                ),
            )
        })
}

/// A result without a number: it still names the threshold, and — once product code ran — the
/// toolchain and the network it ran with.
fn no_number(
    judged: &Judged,
    settings: &Settings,
    tool: &str,
    verdict: Verdict,
    detail: String,
    tally: Tally,
) -> Covered {
    let mut floor = FloorResult::new(
        Floor::Coverage,
        verdict,
        tool.to_string(),
        runners::scrub(&detail, judged.root),
    )
    .numbers(0.0, f64::from(settings.threshold));
    if !tally.versions.is_empty() {
        floor.version = Some(tally.versions.join("; "));
    }
    if tally.ran {
        floor.network = judged.network;
    }
    Covered {
        floor,
        report: None,
    }
}

/// What the touched packages' suites gave, package by package.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tally {
    #[serde(with = "crate::runners::by_id")]
    mapped: BTreeMap<TestId, TestResult>,
    /// The toolchains they ran with, as the floor names them.
    versions: Vec<String>,
    files: BTreeMap<String, Lines>,
    /// Tests of a suite that failed and that no criterion maps.
    failing: Vec<String>,
    broken: Vec<String>,
    blocked: Vec<String>,
    /// Packages whose lines are not counted, with why.
    untested: Vec<String>,
    notes: Vec<String>,
    /// Whether product code ran.
    ran: bool,
}

impl Tally {
    /// Adds another package's tally, as if its suite had run after these.
    fn absorb(&mut self, other: Tally) {
        self.mapped.extend(other.mapped);
        for version in other.versions {
            if !self.versions.contains(&version) {
                self.versions.push(version);
            }
        }
        for (path, lines) in other.files {
            self.files.entry(path).or_default().add(lines);
        }
        self.failing.extend(other.failing);
        self.broken.extend(other.broken);
        self.blocked.extend(other.blocked);
        self.untested.extend(other.untested);
        self.notes.extend(other.notes);
        self.ran |= other.ran;
    }

    /// Runs one touched package's suite, instrumented, and adds what it gave.
    fn cover(
        &mut self,
        run: &Run,
        launcher: &InSandbox,
        found: &Found,
        changed: &[String],
        settings: &Settings,
    ) {
        let package = found.package();
        let shown = crate::sandbox::toolchain::shown_dir(package.dir);
        let Prepared { env, version, llvm } = match prepare(run, &package) {
            Ok(prepared) => prepared,
            Err(why) => {
                self.blocked.push(format!("`{shown}`: {why}"));
                return;
            }
        };
        if !self.versions.contains(&version) {
            self.versions.push(version);
        }
        let ids: Vec<&TestId> = settings
            .mapped
            .iter()
            .filter(|id| {
                runners::package_of(run.root, id)
                    .is_some_and(|f| f.dir == found.dir && f.runner.name() == found.runner.name())
            })
            .collect();
        let on = runners::Run {
            root: run.root,
            launcher,
            timeout: run.timeout,
            env,
        };
        let cover = runners::Cover {
            mapped: &ids,
            changed,
            llvm: llvm.as_ref(),
            cargo_home: run.sandbox.env_value("CARGO_HOME").map(Path::new),
        };
        self.ran = true;
        match runners::cover_suite(&on, &package, &cover) {
            Ok(suite) => self.add(suite, &package, &ids, shown),
            Err(why) => self.blocked.push(format!("`{shown}`: {why}")),
        }
    }

    /// A suite's results: the mapped tests, why it gives no coverage, its failing tests no criterion
    /// maps, its lines.
    fn add(
        &mut self,
        suite: runners::Suite,
        package: &runners::Package,
        ids: &[&TestId],
        shown: &str,
    ) {
        self.mapped.extend(suite.mapped);
        if let Some(why) = suite.broken {
            self.broken.push(why);
            return;
        }
        if let Some(why) = suite.blocked {
            self.blocked.push(why);
            return;
        }
        if suite.nothing {
            // No package after all (every file excluded by a build constraint): nothing to count.
            return;
        }
        self.notes.extend(suite.notes);
        for (name, failed) in &suite.tests {
            let Some(why) = failed else {
                continue;
            };
            if !ids
                .iter()
                .any(|id| package.runner.names_test(&id.rest, name))
            {
                self.failing.push(if why.is_empty() {
                    format!("`{name}` in `{shown}`")
                } else {
                    format!("`{name}` in `{shown}` ({why})")
                });
            }
        }
        if let Some(why) = suite.uncounted {
            self.untested.push(format!("`{shown}` ({why})"));
        }
        for (path, lines) in suite.lines {
            self.files.entry(path).or_default().add(lines);
        }
    }

    /// Why the suites give no number: a broken suite (its unmapped failing tests make it one) fails the
    /// floor, a suite that could not run blocks it.
    fn without_number(&mut self) -> Option<(Verdict, String)> {
        if !self.failing.is_empty() {
            let them = if self.failing.len() == 1 {
                "it"
            } else {
                "them"
            };
            self.broken.push(format!(
                "{} of the suite failed and no criterion maps {them}: a broken suite has no coverage to report — fix {them}, or map {them} to the criterion it tests",
                self.failing.join(", "),
            ));
        }
        if !self.broken.is_empty() {
            let mut all = std::mem::take(&mut self.broken);
            all.append(&mut self.blocked);
            return Some((Verdict::Fail, all.join("; ")));
        }
        if !self.blocked.is_empty() {
            return Some((Verdict::Blocked, self.blocked.join("; ")));
        }
        None
    }
}

/// The counted lines in words, with everything the number leaves out said beside it.
fn counted(
    report: &Report,
    words: &str,
    tally: &Tally,
    change: &Added,
    touched: &Touched,
    test_code: &BTreeMap<String, TestCode>,
) -> String {
    let (n, m) = (report.covered, report.changed_executable);
    let mut counted = format!("{n} of {m} changed executable lines covered ({words})");
    if !tally.untested.is_empty() {
        counted = format!("{counted}; not counted: {}", tally.untested.join(", "));
    }
    for note in &tally.notes {
        counted = format!("{counted}; {note}");
    }
    if !change.left_out.is_empty() {
        let named: Vec<String> = change
            .left_out
            .iter()
            .map(|p| format!("`{}`", p.escape_debug()))
            .collect();
        counted = format!(
            "{counted}; not counted: {} (over {} MiB, not text, or past {MAX_LINES} added lines in all)",
            named.join(", "),
            MAX_FILE >> 20
        );
    }
    for code in test_code.values() {
        if let TestCode::Unread(why) = code {
            counted = format!("{counted}; {why}");
        }
    }
    if !touched.without_runner.is_empty() {
        // Said, never silently left out: what the number does not count.
        counted = format!(
            "{counted}; not counted: the touched {} packages (no coverage runner for them yet)",
            touched.stacks()
        );
    }
    counted
}

/// Why a package's suite cannot run here ([`prepare`]): a blocked reason.
#[derive(Debug, thiserror::Error)]
enum Unprepared {
    #[error(transparent)]
    Package(#[from] crate::floors::test_evidence::Unrunnable),
    /// The preflight's reason its runner's tool is missing.
    #[error("{0}")]
    Tool(String),
    #[error(transparent)]
    Llvm(#[from] std::sync::Arc<crate::sandbox::llvm::LlvmError>),
    #[error(transparent)]
    Folder(#[from] crate::sandbox::SandboxError),
}

/// A package ready to run its suite ([`prepare`]).
struct Prepared {
    env: Vec<(String, std::ffi::OsString)>,
    version: String,
    llvm: Option<crate::sandbox::llvm::LlvmTools>,
}

/// What a package's suite needs before it runs: its processes' variables (for cargo, with the
/// instrumented build's own target folder, so that the plain builds of the checks, of the mapped tests
/// outside the touched packages and of the base keep theirs), the toolchain's version as the floor names
/// it, and for cargo the LLVM tools; or why it cannot run.
fn prepare(run: &Run, package: &runners::Package) -> Result<Prepared, Unprepared> {
    let mut env = crate::floors::test_evidence::package_env(run, package)?;
    if package.runner.tool() != Tool::Cargo {
        let line = run
            .sandbox
            .tool(package.runner.tool())
            .map_err(Unprepared::Tool)?;
        let version = line
            .split_whitespace()
            .find(|w| w.starts_with("go1"))
            .unwrap_or(&line)
            .to_string();
        return Ok(Prepared {
            env,
            version,
            llvm: None,
        });
    }
    let llvm = run.sandbox.llvm_tools(&env)?;
    let dir = run.sandbox.named_target_dir(0, "coverage")?;
    env.push(("CARGO_TARGET_DIR".to_string(), dir.into_os_string()));
    Ok(Prepared {
        env,
        version: llvm.version.clone(),
        llvm: Some(llvm),
    })
}

/// Which lines of the change's files that the suites report are test code: each file asked of the
/// runner of the package it belongs to (a Rust file's cargo package, a Go file's Go package).
fn test_code(
    root: &Path,
    files: &BTreeMap<String, Lines>,
    added: &BTreeMap<String, BTreeSet<u32>>,
) -> BTreeMap<String, TestCode> {
    let mut by_package: BTreeMap<(String, &'static str), (Found, Vec<String>)> = BTreeMap::new();
    for path in files.keys().filter(|p| added.contains_key(*p)) {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let owner = if path.ends_with(".rs") {
            cargo_package(root, dir)
        } else {
            runners::package(root, dir)
        };
        if let Some(owner) = owner {
            by_package
                .entry((owner.dir.clone(), owner.runner.name()))
                .or_insert_with(|| (owner, Vec::new()))
                .1
                .push(path.clone());
        }
    }
    by_package
        .into_values()
        .flat_map(|(owner, paths)| owner.runner.test_code(root, &owner.package(), &paths))
        .collect()
}

/// The change's changed executable lines against what the suites ran, test code left out.
fn compare(
    files: &BTreeMap<String, Lines>,
    added: &BTreeMap<String, BTreeSet<u32>>,
    test_code: &BTreeMap<String, TestCode>,
    settings: &Settings,
    tool: &str,
) -> Report {
    let mut report = Report {
        schema_version: 1,
        base: settings.base.to_string(),
        head: settings.head.to_string(),
        tool: tool.to_string(),
        changed_executable: 0,
        covered: 0,
        files: Vec::new(),
    };
    for (path, changed) in added {
        let Some(lines) = files.get(path) else {
            continue;
        };
        let left_out = |n: &u32| match test_code.get(path) {
            Some(TestCode::Whole) => true,
            Some(TestCode::Lines(lines)) => lines.contains(n),
            _ => false,
        };
        let executable: Vec<u32> = changed
            .iter()
            .copied()
            .filter(|n| lines.executable.contains(n) && !left_out(n))
            .collect();
        if executable.is_empty() {
            continue;
        }
        let uncovered: Vec<u32> = executable
            .iter()
            .copied()
            .filter(|n| !lines.covered.contains(n))
            .collect();
        let partial: Vec<u32> = executable
            .iter()
            .copied()
            .filter(|n| lines.covered.contains(n) && lines.missed.contains(n))
            .collect();
        report.changed_executable += executable.len();
        report.covered += executable.len() - uncovered.len();
        report.files.push(FileReport {
            path: path.clone(),
            changed_executable: executable,
            uncovered,
            partial,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under the threshold the floor is advisory until the blocking day, and fails from its first second
    /// (UTC); at or over the threshold it passes whatever the date.
    #[test]
    fn under_the_threshold_it_fails_from_00_00_utc_of_the_blocking_day() {
        let day = time::macros::date!(2026 - 12 - 10);
        let settings = |now: time::OffsetDateTime| Settings {
            base: "b",
            head: "h",
            threshold: 90,
            blocking: BlockingDate(Some(day)),
            now,
            mapped: &[],
        };
        let eve = time::macros::datetime!(2026-12-09 23:59:59 UTC);
        let midnight = time::macros::datetime!(2026-12-10 00:00:00 UTC);
        let (verdict_eve, detail) = verdict(89, &settings(eve), "89 of 100".into());
        assert_eq!(verdict_eve, Verdict::Pass);
        assert_eq!(detail, "advisory until 2026-12-10: 89 of 100");
        let (verdict_midnight, detail) = verdict(89, &settings(midnight), "89 of 100".into());
        assert_eq!(verdict_midnight, Verdict::Fail);
        assert_eq!(detail, "89 of 100");
        // 00:30 in UTC+01:00 is still the eve in UTC.
        let east = time::macros::datetime!(2026-12-10 00:30:00 +01:00);
        assert_eq!(verdict(89, &settings(east), String::new()).0, Verdict::Pass);
        assert_eq!(
            verdict(90, &settings(midnight), String::new()).0,
            Verdict::Pass
        );
        let none = Settings {
            blocking: BlockingDate(None),
            ..settings(midnight)
        };
        assert_eq!(
            verdict(0, &none, "0 of 3".into()),
            (
                Verdict::Pass,
                "advisory (no blocking date set): 0 of 3".to_string()
            )
        );
    }

    /// A cargo package is touched through its own files, found from a file's folder up to the nearest
    /// `Cargo.toml`; a root crate's README, hidden folders and a virtual workspace touch nothing; a Go
    /// file's package is its folder; a Python package is named as having no coverage runner.
    #[test]
    fn the_touched_packages_are_the_nearest_package_of_each_changed_file() {
        let dir = crate::runners::tests::tree(&[
            ("Cargo.toml", "[package]\nname = \"app\"\n"),
            ("src/cli/args.rs", ""),
            ("README.md", ""),
            (".aayudha/evidence/7.toml", ""),
            ("tests/fixtures/in.txt", ""),
            ("tools/ws/Cargo.toml", "[workspace]\nmembers = [\"a\"]\n"),
            ("tools/ws/notes.rs", ""),
            ("tools/ws/a/Cargo.toml", "[package]\nname = \"a\"\n"),
            ("tools/ws/a/src/lib.rs", ""),
            ("tools/ws/a/docs/guide.md", ""),
            ("svc/go.mod", "module example.com/svc\n"),
            ("svc/api/api.go", "package api\n"),
            ("svc/api/README.md", ""),
            ("svc/api/testdata/in.json", ""),
            ("py/pyproject.toml", ""),
            ("py/src/pkg/mod.py", ""),
            // A manifest inside the root crate's `src/`, and a Python marker beside Rust files: neither
            // takes the root crate's modules from it.
            (
                "src/engine/Cargo.toml",
                "[package]\nname = \"decoy\"\n[workspace]\n",
            ),
            ("src/engine/mod.rs", ""),
            ("src/cli/pyproject.toml", ""),
        ]);
        let root = dir.path();
        let of = |paths: &[&str]| {
            let t = touched(
                root,
                &paths.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            );
            let found: Vec<String> = t.packages.iter().map(|p| format!("{p:?}")).collect();
            (found, t.without_runner.into_iter().collect::<Vec<_>>())
        };
        assert_eq!(
            of(&["src/cli/args.rs"]).0,
            ["cargo package `.`"],
            "a file deep in a root crate"
        );
        assert_eq!(of(&["tests/fixtures/in.txt"]).0, ["cargo package `.`"]);
        for nothing in [
            "README.md",
            ".aayudha/evidence/7.toml",
            "tools/ws/notes.rs",
            "tools/ws/a/docs/guide.md",
        ] {
            assert_eq!(of(&[nothing]), (vec![], vec![]), "{nothing}");
        }
        assert_eq!(
            of(&[
                "tools/ws/a/src/lib.rs",
                "svc/api/api.go",
                "py/src/pkg/mod.py"
            ]),
            (
                vec![
                    "cargo package `tools/ws/a`".to_string(),
                    "go package `svc/api`".to_string()
                ],
                vec!["Python"]
            )
        );
        assert_eq!(
            of(&["src/engine/mod.rs", "src/cli/args.rs"]),
            (vec!["cargo package `.`".to_string()], vec![])
        );
        // A Go package's files are its `.go` files and its tests' `testdata/`.
        assert_eq!(of(&["svc/api/README.md"]), (vec![], vec![]));
        assert_eq!(
            of(&["svc/api/testdata/in.json"]).0,
            ["go package `svc/api`"]
        );
    }

    #[test]
    fn uncovered_lines_are_told_as_runs() {
        assert_eq!(runs(&[3, 4, 5, 9, 11, 12]), [(3, 5), (9, 9), (11, 12)]);
    }
}
