//! The harness floor: what a change does to how its tests run. Nothing inside a test process can be
//! authenticated — the test, a module it imports, a dependency or a conftest can each write or patch
//! the record aayu reads — so the gate shows every change to the code that runs there before a test's
//! body or at install, and blocks (from `[verify] harness_blocking_from`) until a maintainer who is not
//! the change's author has approved the head.
//!
//! Two sources, one list: each stack's harness files, compared between the merge base and the head
//! from git's objects ([`scan`]: no product code runs, so a sharded gate's merge computes it as it
//! computes weakening), and what the install put into a package's environment ([`Installed`], read as
//! data after the fetch and before the seal, carried in `gate::Executed`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::config::BlockingDate;
use crate::floors::{Floor, FloorResult, Verdict};
use crate::git::{Capped, GitError, Repo};
use crate::runners::harness::{self, Read, Tree};
pub use crate::runners::harness::{Change, Kind};

/// `reports/harness.json` (`schemas/harness.v1.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema_version: u32,
    pub changes: Vec<Change>,
    /// The reviewer whose approval of the head waived the floor.
    pub waived_by: Option<String>,
    /// For the record: every test-runner plugin and executing `.pth` line of each installed
    /// environment, whether the change brought it or not.
    pub installed: Vec<Installed>,
    /// Each evidenced criterion whose mapped tests a change can touch, with the changes' `file:line`.
    pub criteria: std::collections::BTreeMap<u32, Vec<String>>,
    /// Each evidenced criterion, with the files of its tests' packages the pull request changes
    /// (`file:line`, the first changed line): what runs in the process that reports the test's result.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub package_changes: BTreeMap<u32, Vec<String>>,
}

impl Report {
    /// The words after each evidenced criterion: who reported it, and what the pull request changes in
    /// its process's package.
    pub fn reported(places: &[String]) -> String {
        let listed: Vec<String> = places.iter().map(|p| format!("`{p}`")).collect();
        Report::reported_with(places.len(), &listed)
    }

    /// [`Report::reported`] with the places already written as the output wants them.
    pub fn reported_with(count: usize, listed: &[String]) -> String {
        format!(
            "reported by the test's own process; this pull request changes {count} file{} of the test's package: {}",
            if count == 1 { "" } else { "s" },
            listed.join(", ")
        )
    }

    /// The words after an evidenced criterion whose tests a change can touch.
    pub fn note(places: &[String]) -> String {
        format!(
            "harness changed by this pull request: {}",
            places.join(", ")
        )
    }
}

/// What one package's installed environment loads into its test process ([`Report::installed`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Installed {
    /// The package folder (`""`: the root).
    pub package: String,
    /// `pytest11` (an entry point pytest loads) or `pth` (a line run at start-up).
    pub kind: String,
    /// The distribution that installed it (`None`: no `RECORD` lists the file).
    pub distribution: Option<String>,
    /// The entry point (`name = module`) or the `.pth` file and its line.
    pub what: String,
}

/// The install's facts of one package (a sharded gate's legs each give theirs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    pub changes: Vec<Change>,
    pub installed: Vec<Installed>,
}

impl Facts {
    pub fn absorb(&mut self, other: Facts) {
        self.changes.extend(other.changes);
        self.installed.extend(other.installed);
        self.changes.sort();
        self.changes.dedup();
        self.installed.sort();
        self.installed.dedup();
    }
}

/// A commit's files through git's objects, each read with the scan's cap.
struct AtCommit<'r> {
    repo: &'r Repo,
    rev: String,
    cap: u64,
}

impl Tree for AtCommit<'_> {
    fn files_in(&self, dir: &str) -> Vec<String> {
        self.repo.files_in_at(&self.rev, dir)
    }

    fn read(&self, path: &str) -> Read {
        match self.repo.capped_file_at(&self.rev, path, self.cap) {
            Ok(Capped::Missing) | Err(_) => Read::Missing,
            Ok(Capped::NotRegular) => Read::NotRegular,
            Ok(Capped::TooLarge(size)) => Read::TooLarge(size),
            Ok(Capped::Bytes(bytes)) => Read::Bytes(bytes),
        }
    }
}

/// The merge base of `base` and `head`, the commit a change's harness is compared with (`base` itself
/// when the history has none).
pub fn merge_base(repo: &Repo, base: &str, head: &str) -> String {
    match repo.merge_base(base, head) {
        Ok(Some(oid)) => oid.to_string(),
        _ => base.to_string(),
    }
}

/// Every harness file the change from the merge base of `base` to `head` touches, as each stack's rules
/// read it, reading at most `cap` bytes of a file.
pub fn scan(repo: &Repo, base: &str, head: &str, cap: u64) -> Result<Vec<Change>, GitError> {
    let from = merge_base(repo, base, head);
    let changed = repo.changed_paths(&from, head)?;
    let (before, after) = (
        AtCommit {
            repo,
            rev: from,
            cap,
        },
        AtCommit {
            repo,
            rev: head.to_string(),
            cap,
        },
    );
    Ok(harness::changes(&harness::Diff {
        changed: &changed,
        base: &before,
        head: &after,
        cap,
    }))
}

/// Whether red-on-base may put a changed path of `head` on the base: a test file of its own stack in
/// both trees (a marker file the change adds or removes cannot make a file a test file), and not a
/// harness file (the base runs its own harness).
pub fn overlays(repo: &Repo, (base, head): (&str, &str), path: &str, changes: &[Change]) -> bool {
    // Only whether a marker file is there is asked: a cap of 0 reads no file's bytes.
    let tree = |rev: &str| AtCommit {
        repo,
        rev: rev.to_string(),
        cap: 0,
    };
    harness::is_test_file_in(&tree(head), path)
        && harness::is_test_file_in(&tree(base), path)
        && !changes.iter().any(|c| c.file == path)
}

/// Whether a file of a package declares its requirements: a manifest, a lock, or a requirements or
/// constraints file (`requirements*.txt`, `requirements/test.txt`, `constraints.in`, each `-r`
/// include being such a file too).
fn declares_requirements(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let listed = |p: &str| p.contains("requirements") || p.contains("constraints");
    matches!(
        name,
        "pyproject.toml" | "setup.cfg" | "setup.py" | "Pipfile" | "package.json"
    ) || name.ends_with(".lock")
        || (name.starts_with("pylock.") && name.ends_with(".toml"))
        || ((name.ends_with(".txt") || name.ends_with(".in")) && path.split('/').any(listed))
}

/// The distributions the change adds to, or whose version it changes in, the requirements of the
/// repository's packages: each (normalised) name a line of the head has that the merge base's file
/// has not, with where.
fn declared(repo: &Repo, base: &str, head: &str, cap: u64) -> BTreeMap<String, (String, u32)> {
    static WORD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[A-Za-z0-9][A-Za-z0-9._-]*").expect("a valid pattern")
    });
    let from = merge_base(repo, base, head);
    let mut names = BTreeMap::new();
    let Ok(changed) = repo.changed_paths(&from, head) else {
        return names;
    };
    let text = |rev: &str, path: &str| match repo.capped_file_at(rev, path, cap) {
        Ok(Capped::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    // Anywhere in the repository (a name counts only for a distribution this package's environment
    // has installed), and each file a requirements file of the head includes with `-r` or `-c`.
    let included = included_files(repo, head, &changed, cap);
    for path in changed
        .iter()
        .filter(|p| declares_requirements(p) || included.contains(*p))
    {
        let before: BTreeSet<String> = text(&from, path)
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        for (i, line) in text(head, path).lines().enumerate() {
            if before.contains(line.trim()) {
                continue;
            }
            for word in WORD.find_iter(line) {
                let name = normalised(word.as_str());
                names
                    .entry(name)
                    .or_insert_with(|| (path.clone(), i as u32 + 1));
            }
        }
    }
    names
}

/// The files that the head's requirements files in the folders of the changed paths (and above them)
/// include (`-r file`, `-c file`, `--requirement=file`), from the repository's root.
fn included_files(repo: &Repo, head: &str, changed: &[String], cap: u64) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for folder in harness::folders_above(changed) {
        for name in repo.files_in_at(head, folder) {
            let file = crate::runners::join(folder, &name);
            if !declares_requirements(&file) || !(name.ends_with(".txt") || name.ends_with(".in")) {
                continue;
            }
            let Ok(Capped::Bytes(bytes)) = repo.capped_file_at(head, &file, cap) else {
                continue;
            };
            for line in String::from_utf8_lossy(&bytes).lines() {
                let line = line.trim();
                let target = ["-r", "-c", "--requirement", "--constraint"]
                    .iter()
                    .find_map(|flag| line.strip_prefix(flag))
                    .map(|rest| rest.trim_start_matches('=').trim());
                if let Some(target) = target.filter(|t| !t.is_empty()) {
                    let joined = crate::runners::join(folder, target);
                    if let Some(path) = within_tree(&joined) {
                        found.insert(path);
                    }
                }
            }
        }
    }
    found
}

/// A relative path with `.` and `..` resolved, or `None` when it is absolute or leaves the tree.
fn within_tree(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// A distribution name as Python's packaging compares them: lower case, runs of `-`, `_`, `.` one `-`.
fn normalised(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out.trim_matches('-').to_string()
}

/// The installed environment of the package folder `dir` as the floor reads it: everything it loads
/// (for the record), a load that a requirement the change adds or changes brought (directly or through
/// what it requires) as a change `installed-plugin`, and each overwritten file as `overwritten`.
pub fn facts(
    repo: &Repo,
    (base, head): (&str, &str),
    dir: &str,
    env: &crate::runners::harness::Environment,
    cap: u64,
) -> Facts {
    let declared = declared(repo, base, head, cap);
    // Each installed distribution the change brought, with the declaration that brought it.
    let mut brought: BTreeMap<String, (String, u32, String)> = BTreeMap::new();
    let mut queue: Vec<(String, (String, u32, String))> = declared
        .iter()
        .filter(|(name, _)| env.requires.contains_key(*name))
        .map(|(name, (file, line))| (name.clone(), (file.clone(), *line, name.clone())))
        .collect();
    while let Some((name, origin)) = queue.pop() {
        if brought.contains_key(&name) {
            continue;
        }
        for next in env.requires.get(&name).into_iter().flatten() {
            queue.push((next.clone(), origin.clone()));
        }
        brought.insert(name, origin);
    }
    // The package's own manifests at the merge base: a load of its own install that they name was
    // there before the change.
    let from = merge_base(repo, base, head);
    let base_manifests: String = ["pyproject.toml", "setup.cfg", "setup.py"]
        .iter()
        .filter_map(
            |m| match repo.capped_file_at(&from, &crate::runners::join(dir, m), cap) {
                Ok(Capped::Bytes(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
                _ => None,
            },
        )
        .collect::<Vec<_>>()
        .join("\n");
    let marker = marker_of(repo, dir);
    let mut facts = Facts::default();
    for load in &env.loads {
        facts.installed.push(Installed {
            package: dir.to_string(),
            kind: load.kind.clone(),
            distribution: load.distribution.clone(),
            what: load.what.clone(),
        });
        let how = if load.kind == "pth" {
            "start-up line"
        } else {
            "pytest plugin"
        };
        let Some(distribution) = load.distribution.as_deref() else {
            facts.changes.push(Change::new(
                &marker,
                1,
                "python",
                Kind::InstalledPlugin,
                format!(
                    "a {how} `{}` loads into every test process, and no install's record lists its file: something wrote it at install",
                    load.what
                ),
            ));
            continue;
        };
        if env.local.contains(distribution) {
            let needle = load_needle(load);
            if is_editable_finder(load) || (!needle.is_empty() && names(&base_manifests, needle)) {
                continue;
            }
            facts.changes.push(Change::new(
                &marker,
                1,
                "python",
                Kind::InstalledPlugin,
                format!(
                    "the package's own install (`{distribution}`, from the pull request's files) loads into every test process a {how} `{}` its manifests at the merge base do not name",
                    load.what
                ),
            ));
            continue;
        }
        let Some((file, line, root)) = brought.get(distribution) else {
            continue;
        };
        let via = if root == distribution {
            String::new()
        } else {
            format!(", required by `{root}`")
        };
        facts.changes.push(Change::new(
            file,
            *line,
            "python",
            Kind::InstalledPlugin,
            format!(
                "`{distribution}`{via} loads into every test process: {how} `{}`",
                load.what
            ),
        ));
    }
    for what in &env.overwritten {
        facts.changes.push(Change::new(
            &marker,
            1,
            "python",
            Kind::Overwritten,
            format!("installed: {what}: the install changed the test runner"),
        ));
    }
    facts.changes.sort();
    facts.installed.sort();
    facts
}

/// The package's own marker file, where a fact of its install is said (it has no line of the change).
fn marker_of(repo: &Repo, dir: &str) -> String {
    [
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "pytest.ini",
        "tox.ini",
    ]
    .iter()
    .map(|m| crate::runners::join(dir, m))
    .find(|m| crate::safe_fs::is_regular(repo.root(), m))
    .unwrap_or_else(|| crate::runners::join(dir, "pyproject.toml"))
}

/// The start-up line an editable install writes for the package itself — setuptools'
/// `import __editable___<name>_finder`, hatchling's `import _editable_impl_<name>`, scikit-build-core's
/// `import _<name>_editable`, meson-python's `import _<name>_editable_loader`: the backend's, not the
/// package's.
fn is_editable_finder(load: &crate::runners::harness::Load) -> bool {
    static ALONE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^import (_editable_impl_\w+|_\w+_editable(_loader)?)$")
            .expect("a valid pattern")
    });
    static FINDER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^import (__editable___\w+_finder); (__editable___\w+_finder)\.install\([^;()]*\)$",
        )
        .expect("a valid pattern")
    });
    let Some((_, line)) = load.what.split_once(": ") else {
        return false;
    };
    // The whole line: anything after the finder's own call would run too.
    let setuptools = FINDER.captures(line).is_some_and(|c| c[1] == c[2]);
    load.kind == "pth" && (setuptools || ALONE.is_match(line))
}

/// Whether a manifest's text names `needle` as a whole word (a module path or a file name: not inside
/// a longer name, as the project's own name is inside `myapp.plugin`).
fn names(text: &str, needle: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-';
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// What a manifest names when it declares a load: an entry point's target module (`name = module`),
/// a start-up file's name.
fn load_needle(load: &crate::runners::harness::Load) -> &str {
    if load.kind == "pth" {
        load.what
            .split_once(": ")
            .map_or(load.what.as_str(), |(file, _)| file)
    } else {
        load.what
            .split_once('=')
            .map_or(load.what.as_str(), |(_, target)| target)
            .split(':')
            .next()
            .unwrap_or_default()
            .trim()
    }
}

/// The report of a gate run: the scan's changes and the install's, sorted, each once.
pub fn report(scanned: Vec<Change>, facts: &Facts, waived_by: Option<String>) -> Report {
    let mut changes = scanned;
    changes.extend(facts.changes.iter().cloned());
    changes.sort();
    changes.dedup();
    Report {
        schema_version: 1,
        changes,
        waived_by,
        installed: facts.installed.clone(),
        criteria: Default::default(),
        package_changes: Default::default(),
    }
}

/// The coverage floor, `blocked`, when a touched Go package's harness changed (a `TestMain` can write
/// the coverage profile itself, after the tests): its coverage is the test binary's own. `None`: no
/// such change, or the floor did not count (it was skipped, or fails or blocks already).
pub fn coverage_blocked(
    report: &Report,
    touched: &crate::floors::coverage::Touched,
    floor: &FloorResult,
) -> Option<FloorResult> {
    if !matches!(floor.verdict, Verdict::Pass) {
        return None;
    }
    let dirs: Vec<&str> = touched
        .packages
        .iter()
        .filter(|p| p.runner.tool() == crate::sandbox::preflight::Tool::Go)
        .map(|p| p.dir.as_str())
        .filter(|dir| {
            report
                .changes
                .iter()
                .any(|c| c.stack == "go" && c.applies_to(dir))
        })
        .collect();
    let first = dirs.first()?;
    let mut blocked = floor.clone();
    blocked.verdict = Verdict::Blocked;
    blocked.detail = format!(
        "the harness of `{}` changed: its coverage is the test binary's own (a maintainer's approval of the head waives the harness floor, and this with it)",
        crate::sandbox::toolchain::shown_dir(first)
    );
    Some(blocked)
}

/// The files of the package folder `dir` (of runner `runner`: a Go package is one folder, another
/// stack's holds its folders beneath) that the change from the merge base to `head` adds or edits,
/// each as `file:line` at its first changed line, sorted.
pub fn package_changes(
    repo: &Repo,
    (base, head): (&str, &str),
    dir: &str,
    runner: Option<&str>,
    cap: u64,
) -> Vec<String> {
    let from = merge_base(repo, base, head);
    let Ok(changed) = repo.changed_paths(&from, head) else {
        return Vec::new();
    };
    let text = |rev: &str, path: &str| match repo.capped_file_at(rev, path, cap) {
        Ok(Capped::Bytes(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    };
    let dir = dir.trim_start_matches("./").trim_end_matches('/');
    let dir = if dir == "." { "" } else { dir };
    let tree = AtCommit {
        repo,
        rev: head.to_string(),
        cap: 0,
    };
    // The folder a file's package is: the nearest at or above it with a runner's marker (a nested
    // package's files are its own, not the outer one's).
    let owner = |folder: &str| -> String {
        let mut at = folder;
        loop {
            let marked = crate::runners::RUNNERS.iter().any(|r| {
                r.marker()
                    .files
                    .iter()
                    .any(|m| tree.has(&crate::runners::join(at, m)))
            });
            if marked || at.is_empty() {
                return at.to_string();
            }
            at = at.rsplit_once('/').map_or("", |(d, _)| d);
        }
    };
    changed
        .iter()
        .filter(|path| {
            let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
            let within = dir.is_empty() || path.starts_with(&format!("{dir}/"));
            let own = if runner == Some("go") {
                folder == dir
            } else {
                owner(folder) == dir
            };
            within && own && !path.split('/').any(|p| p.starts_with('.'))
        })
        .filter_map(|path| {
            let after = text(head, path)?;
            let line =
                text(&from, path).map_or(1, |before| harness::first_difference(&before, &after));
            Some(format!("{}:{line}", harness::visible(path)))
        })
        .collect()
}

/// The harness changes that can touch the tests of package folder `dir` of runner `runner` (`None`:
/// of any stack).
pub fn affecting<'a>(report: &'a Report, dir: &str, runner: Option<&str>) -> Vec<&'a Change> {
    report
        .changes
        .iter()
        .filter(|c| c.applies_to_tests(dir, runner))
        .collect()
}

/// The floor: `pass` with no change; with some, advisory before the date, `fail` from it, `waived` by
/// an approval of the head ([`Report::waived_by`]).
/// `unread`: why the reviews could not be read (then no approval counts, and the detail says so).
pub fn floor(
    report: &Report,
    rule: BlockingDate,
    now: time::OffsetDateTime,
    unread: Option<&str>,
) -> FloorResult {
    let tool = "aayu verify --ci (harness)";
    let n = report.changes.len();
    let result = |verdict, detail| {
        FloorResult::new(Floor::Harness, verdict, tool, detail).numbers(n as f64, 0.0)
    };
    if n == 0 {
        return result(
            Verdict::Pass,
            "no change to how the tests run (conftest, test configuration, build hooks, start-up files, installed plugins)".into(),
        );
    }
    let mut count = format!("{n} harness change{}", if n == 1 { "" } else { "s" });
    if let Some(why) = unread {
        count.push_str(&format!(
            " (the reviews could not be read, so no approval counts: {why})"
        ));
    }
    let waiver = report
        .waived_by
        .as_ref()
        .map(|login| format!("waived by {login}'s approval of the head"));
    let (verdict, detail) = super::dated(
        rule,
        now,
        &count,
        waiver,
        "a maintainer who is not the author approves the head, then re-runs the merge gate",
    );
    result(verdict, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_names_a_load_by_a_whole_word_and_editable_finders_are_the_backends() {
        assert!(names("ep = \"myapp.plugin\"\n", "myapp.plugin"));
        assert!(!names(
            "name = \"myapp\"\nep = \"myapp.plugin\"",
            "myapp.plugin.x"
        ));
        assert!(!names(
            "name = \"myapp-cli\"\nx = \"myapp.plugin\"",
            "myapp"
        ));
        let pth = |line: &str| crate::runners::harness::Load {
            distribution: Some("x".into()),
            kind: "pth".into(),
            what: format!("x.pth: {line}"),
        };
        for yes in [
            "import __editable___calc_0_1_0_finder; __editable___calc_0_1_0_finder.install('/x')",
            "import _editable_impl_calc",
            "import _calc_editable",
            "import _calc_editable_loader",
        ] {
            assert!(is_editable_finder(&pth(yes)), "{yes}");
        }
        for no in [
            "import evil",
            "import _calc_editable_x; evil()",
            "import os",
        ] {
            assert!(!is_editable_finder(&pth(no)), "{no}");
        }
    }

    #[test]
    fn requirements_are_declared_in_manifests_locks_and_listed_files() {
        for yes in [
            "pyproject.toml",
            "svc/setup.cfg",
            "uv.lock",
            "pylock.toml",
            "requirements.txt",
            "requirements-dev.in",
            "requirements/test.txt",
            "ci/constraints.txt",
        ] {
            assert!(declares_requirements(yes), "{yes}");
        }
        for no in ["README.md", "docs/notes.txt", "requirements/README.md"] {
            assert!(!declares_requirements(no), "{no}");
        }
        assert_eq!(
            within_tree("svc/./../deps.lst").as_deref(),
            Some("deps.lst")
        );
        assert_eq!(within_tree("../x"), None);
        assert_eq!(within_tree("/etc/x"), None);
    }

    #[test]
    fn the_floor_passes_advises_fails_and_is_waived() {
        let now = time::macros::datetime!(2026-12-07 12:00 UTC);
        let none = report(Vec::new(), &Facts::default(), None);
        assert_eq!(
            floor(&none, BlockingDate::default(), now, None).verdict,
            Verdict::Pass
        );
        let one = report(
            vec![Change::new("conftest.py", 1, "python", Kind::Conftest, "x")],
            &Facts::default(),
            None,
        );
        let advisory = floor(
            &one,
            BlockingDate(Some(time::macros::date!(2027 - 01 - 01))),
            now,
            None,
        );
        assert_eq!(advisory.verdict, Verdict::Pass);
        assert_eq!(
            advisory.detail,
            "advisory until 2027-01-01: 1 harness change"
        );
        let date = BlockingDate(Some(time::macros::date!(2026 - 12 - 07)));
        assert_eq!(floor(&one, date, now, None).verdict, Verdict::Fail);
        let waived = Report {
            waived_by: Some("mona".into()),
            ..one
        };
        let w = floor(&waived, date, now, None);
        assert_eq!((w.verdict, w.value), (Verdict::Waived, 1.0));
        assert!(
            w.detail.contains("waived by mona's approval"),
            "{}",
            w.detail
        );
    }
}
