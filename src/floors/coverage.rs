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
use crate::runners::{self, Found, TestId};
use crate::sandbox::preflight::Tool;

pub const GO_TOOL: &str = "aayudha diff coverage (go test -coverprofile)";
const TOOL: &str = "aayudha diff coverage";

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
    fn stacks(&self) -> String {
        self.without_runner
            .iter()
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn needs(&self) -> BTreeSet<Tool> {
        self.packages.iter().map(|p| p.runner.tool()).collect()
    }
}

/// The packages `paths` (the change's, present at the head in `root`) belong to. A Go package is one
/// folder with a `.go` file; a folder of another stack is named in `without_runner`.
pub fn touched(root: &Path, paths: &[String]) -> Touched {
    let mut touched = Touched::default();
    let mut seen = BTreeSet::new();
    for path in paths {
        if !crate::safe_fs::is_regular(root, path) {
            continue;
        }
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let Some(found) = runners::package(root, dir) else {
            continue;
        };
        if !seen.insert((found.dir.clone(), found.runner.name())) {
            continue;
        }
        if found.runner.name() == "go" {
            let has_go = std::fs::read_dir(root.join(&found.dir)).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    e.file_name().to_str().is_some_and(|n| n.ends_with(".go"))
                        && e.file_type().is_ok_and(|t| t.is_file())
                })
            });
            if has_go {
                touched.packages.push(found);
            }
        } else {
            touched.without_runner.insert(found.runner.title());
        }
    }
    touched
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

    /// `file:line-line: uncovered`, a line per run of uncovered changed lines, for a person.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for file in &self.files {
            for (start, end) in runs(&file.uncovered) {
                if start == end {
                    out.push(format!("{}:{start}: uncovered", file.path));
                } else {
                    out.push(format!("{}:{start}-{end}: uncovered", file.path));
                }
            }
        }
        out
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

/// What a file's coverage says of its lines: the executable ones, and the ones a test ran.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lines {
    pub executable: BTreeSet<u32>,
    pub covered: BTreeSet<u32>,
    /// Lines of a block that ran and of one that did not.
    pub missed: BTreeSet<u32>,
}

/// A Go coverage profile (`mode: set`, then `<import path>/<file>.go:<line>.<col>,<line>.<col> <statements>
/// <count>`), by repository path: each file's name is its import path, which is the module's path
/// (`module` in `home`'s `go.mod`) and the file's folder in the module. A block spans its lines; one with
/// no statement marks none.
pub fn go_profile(text: &str, module: &str, home: &str) -> BTreeMap<String, Lines> {
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
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
        let path = runners::join(home, rel);
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

/// Whether a repository path is test code, left out of the changed lines: Go's `_test.go` files.
fn is_test_code(path: &str) -> bool {
    path.ends_with("_test.go")
}

/// The `module` line of a `go.mod`.
fn module_path(root: &Path, home: &str) -> Option<String> {
    let bytes = crate::safe_fs::read(root, &runners::join(home, "go.mod"), 1 << 20).ok()?;
    String::from_utf8_lossy(&bytes).lines().find_map(|l| {
        let l = l.split("//").next().unwrap_or(l);
        l.trim()
            .strip_prefix("module")
            .filter(|m| m.starts_with([' ', '\t']))
            .map(|m| m.trim().trim_matches(['"', '`']).to_string())
            .filter(|m| !m.is_empty())
    })
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

/// The floor's result, its report (`None` when no number was computed) and the lines for a person.
pub struct Covered {
    pub floor: FloorResult,
    pub report: Option<Report>,
}

/// The floor on a change without a story.
pub fn skipped(why: &str) -> FloorResult {
    FloorResult::new(Floor::Coverage, Verdict::Skipped, TOOL, why.to_string())
}

/// Runs the touched packages' suites and computes the number over the change's `added` lines.
pub fn run(
    run: &Run,
    touched: &Touched,
    added: &BTreeMap<String, BTreeSet<u32>>,
    settings: &Settings,
) -> Covered {
    let no_number = |verdict, tool, detail: String| Covered {
        floor: FloorResult::new(Floor::Coverage, verdict, tool, detail),
        report: None,
    };
    if touched.packages.is_empty() {
        let why = if touched.without_runner.is_empty() {
            "no package with tests is touched by the change".to_string()
        } else {
            format!("no coverage runner for {} yet", touched.stacks())
        };
        return no_number(Verdict::Skipped, TOOL, why);
    }
    if let Some(why) = run.sandbox.reach_problem(run.root) {
        return no_number(Verdict::Blocked, GO_TOOL, why);
    }
    let version = match run.sandbox.tool(Tool::Go) {
        Ok(line) => line
            .split_whitespace()
            .find(|w| w.starts_with("go1"))
            .unwrap_or(&line)
            .to_string(),
        Err(why) => return no_number(Verdict::Blocked, GO_TOOL, why),
    };
    let launcher = InSandbox { run };
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
    let mut failing: Vec<String> = Vec::new();
    let mut untested: Vec<String> = Vec::new();
    for found in &touched.packages {
        let package = found.package();
        let shown = crate::sandbox::toolchain::shown_dir(package.dir);
        let env = match crate::floors::test_evidence::package_env(run, &package) {
            Ok(env) => env,
            Err(why) => return no_number(Verdict::Blocked, GO_TOOL, format!("`{shown}`: {why}")),
        };
        let on = runners::Run {
            root: run.root,
            launcher: &launcher,
            timeout: run.timeout,
            env,
        };
        let suite = match package.runner.cover_suite(&on, &package) {
            Ok(suite) => suite,
            Err(why) => return no_number(Verdict::Blocked, GO_TOOL, format!("`{shown}`: {why}")),
        };
        if let Some(why) = suite.broken {
            return no_number(Verdict::Fail, GO_TOOL, why);
        }
        if suite.tests.is_empty() && suite.profile.is_empty() {
            // No package after all (every file excluded by a build constraint): nothing to count.
            continue;
        }
        for (name, passed) in &suite.tests {
            if *passed {
                continue;
            }
            let mapped = settings.mapped.iter().any(|id| {
                id.package == package.dir
                    && (id.rest == *name
                        || id.rest.starts_with(&format!("{name}/"))
                        || name.starts_with(&format!("{}/", id.rest)))
            });
            if !mapped {
                failing.push(format!("`{name}` in `{shown}`"));
            }
        }
        let Some(module) = module_path(run.root, package.home) else {
            return no_number(
                Verdict::Blocked,
                GO_TOOL,
                format!("`{shown}`: its module's `go.mod` has no `module` line aayu can read"),
            );
        };
        if suite.profile.is_empty() {
            return no_number(
                Verdict::Blocked,
                GO_TOOL,
                format!("`go test -coverprofile` of `{shown}` wrote no profile: not instrumented"),
            );
        }
        let lines_of = go_profile(
            &String::from_utf8_lossy(&suite.profile),
            &module,
            package.home,
        );
        if lines_of.is_empty() && suite.tests.is_empty() && !suite.profile.is_empty() {
            // Go before 1.22 lists no line of a package without tests: its lines cannot be counted.
            untested.push(format!("`{shown}`"));
        }
        for (path, lines) in lines_of {
            let into = files.entry(path).or_default();
            into.executable.extend(lines.executable);
            into.covered.extend(lines.covered);
            into.missed.extend(lines.missed);
        }
    }
    if !failing.is_empty() {
        return no_number(
            Verdict::Fail,
            GO_TOOL,
            format!(
                "{} of the suite failed and no criterion maps {}: a broken suite has no coverage to report — fix {}, or map {} to the criterion it tests",
                failing.join(", "),
                if failing.len() == 1 { "it" } else { "them" },
                if failing.len() == 1 { "it" } else { "them" },
                if failing.len() == 1 { "it" } else { "them" }
            ),
        );
    }
    let report = compare(&files, added, settings);
    let (n, m) = (report.covered, report.changed_executable);
    let mut counted = format!("{n} of {m} changed executable lines covered (go coverprofile)");
    if !untested.is_empty() {
        counted = format!(
            "{counted}; not counted: {} (no tests, and this Go lists no line of a package without tests: add tests, or use Go 1.22 or newer, which counts them as uncovered)",
            untested.join(", ")
        );
    }
    if !touched.without_runner.is_empty() {
        // Said, never silently left out: what the number does not count.
        counted = format!(
            "{counted}; not counted: the touched {} packages (no coverage runner for them yet)",
            touched.stacks()
        );
    }
    let mut floor = if let Some(value) = (n * 100).checked_div(m) {
        let value = u32::try_from(value).unwrap_or(100);
        let (verdict, detail) = if value >= settings.threshold {
            (Verdict::Pass, counted)
        } else if settings.blocking.blocks_at(settings.now) {
            (Verdict::Fail, counted)
        } else {
            (
                Verdict::Pass,
                format!("{}: {counted}", settings.blocking.advisory_detail()),
            )
        };
        FloorResult::new(Floor::Coverage, verdict, GO_TOOL, detail)
            .numbers(f64::from(value), f64::from(settings.threshold))
    } else {
        let why = match counted.split_once("; ") {
            Some((_, rest)) => format!("no changed executable line counted; {rest}"),
            None => "no changed executable line".to_string(),
        };
        FloorResult::new(Floor::Coverage, Verdict::Skipped, GO_TOOL, why)
    };
    floor.network = Some(run.sandbox.no_network());
    floor.version = Some(version);
    Covered {
        floor,
        report: Some(report),
    }
}

/// The change's changed executable lines against what the suites ran.
fn compare(
    files: &BTreeMap<String, Lines>,
    added: &BTreeMap<String, BTreeSet<u32>>,
    settings: &Settings,
) -> Report {
    let mut report = Report {
        schema_version: 1,
        base: settings.base.to_string(),
        head: settings.head.to_string(),
        tool: GO_TOOL.to_string(),
        changed_executable: 0,
        covered: 0,
        files: Vec::new(),
    };
    for (path, changed) in added {
        if is_test_code(path) {
            continue;
        }
        let Some(lines) = files.get(path) else {
            continue;
        };
        let executable: Vec<u32> = changed
            .iter()
            .copied()
            .filter(|n| lines.executable.contains(n))
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

    #[test]
    fn a_go_profile_is_read_by_repository_path_and_a_block_spans_its_lines() {
        let profile = "mode: set\nexample.com/m/calc/calc.go:3.24,5.2 1 1\nexample.com/m/calc/calc.go:7.26,8.12 1 0\nexample.com/m/calc/calc.go:8.12,10.3 1 1\nexample.com/m/calc/calc.go:12.1,12.9 0 0\nother.org/x/y.go:1.1,2.2 1 1\n";
        let files = go_profile(profile, "example.com/m", "svc");
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
    fn uncovered_lines_are_told_as_runs() {
        assert_eq!(runs(&[3, 4, 5, 9, 11, 12]), [(3, 5), (9, 9), (11, 12)]);
    }
}
