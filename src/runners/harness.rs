//! What a change does to how its tests run — the harness floor's facts, each stack's rules behind
//! [`Runner::harness`]: the files that run in the test process before a test's body or at install
//! (a conftest, the pytest configuration, a build hook, a startup file), read as data from two trees
//! (the merge base's and the head's), never run.
//!
//! A harness file is never a test file for red-on-base: the base runs its own harness
//! ([`is_test_file_in`]), and a test that needs one the base lacks is not run there.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{RUNNERS, Runner, join};

/// A file of a tree, as a harness rule reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Missing,
    /// A link, a submodule or a folder: not followed.
    NotRegular,
    /// Larger than the scan's cap: its size.
    TooLarge(u64),
    Bytes(Vec<u8>),
}

/// A tree the rules read files of (git's objects of one commit): each read is capped.
pub trait Tree {
    fn read(&self, path: &str) -> Read;

    /// The names of the regular files directly in folder `dir` (`""`: the root), sorted.
    fn files_in(&self, _dir: &str) -> Vec<String> {
        Vec::new()
    }

    /// Whether the tree has a regular file at `path`.
    fn has(&self, path: &str) -> bool {
        matches!(self.read(path), Read::Bytes(_) | Read::TooLarge(_))
    }
}

/// A change as the rules see it: the paths it touches, the trees before and after.
pub struct Diff<'a> {
    pub changed: &'a [String],
    pub base: &'a dyn Tree,
    pub head: &'a dyn Tree,
    /// `[verify] harness_scan_bytes`, for the words of a finding past it.
    pub cap: u64,
}

/// What kind of harness change (`reports/harness.json`'s `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A `conftest.py` added, changed or removed.
    Conftest,
    /// A key of the test runner's configuration that changes what is collected or how it runs.
    Config,
    /// Code that runs at install: `setup.py`, the build backend, a build hook.
    Build,
    /// A file the interpreter runs at start-up (`sitecustomize.py`, a `.pth`).
    Startup,
    /// A file that would be imported in place of the test runner or aayu's plugin.
    Shadow,
    /// A plugin of the installed environment that a requirement the change adds or changes brought.
    InstalledPlugin,
    /// An installed file of the test runner or aayu's plugin that does not match its record.
    Overwritten,
    /// A harness file that could not be read (it may hide anything).
    Unreadable,
    /// Code the test process runs before or around every test, in a test file: Go's `TestMain` and
    /// what it calls, an `init()`, a package-level initialiser; a JS setup file.
    Setup,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conftest => "conftest",
            Kind::Config => "config",
            Kind::Build => "build",
            Kind::Startup => "startup",
            Kind::Shadow => "shadow",
            Kind::InstalledPlugin => "installed-plugin",
            Kind::Overwritten => "overwritten",
            Kind::Unreadable => "unreadable",
            Kind::Setup => "setup",
        }
    }
}

/// One harness change: where (the head's file and line; the base's for a removed file), which stack,
/// what kind, and what it is in words.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub file: String,
    pub line: u32,
    pub stack: String,
    pub kind: Kind,
    pub what: String,
}

impl Change {
    pub fn new(file: &str, line: u32, stack: &str, kind: Kind, what: impl Into<String>) -> Change {
        Change {
            file: file.to_string(),
            line: line.max(1),
            stack: stack.to_string(),
            kind,
            what: visible(&what.into()),
        }
    }

    /// `file:line`, as the comment and the criteria name it (a control character of the path escaped:
    /// a pull request's path is data, never a line of its own).
    pub fn place(&self) -> String {
        format!("{}:{}", visible(&self.file), self.line)
    }

    /// Whether the change can touch the tests of the package folder `dir` of the runner `runner` (its
    /// name: `cargo`, `go`, `pytest`, `js`): one of that runner's stack, in that folder, beneath it or
    /// in a folder above it. `None` for the runner: any stack's.
    pub fn applies_to_tests(&self, dir: &str, runner: Option<&str>) -> bool {
        let stack = runner.map(|r| if r == "pytest" { "python" } else { r });
        stack.is_none_or(|s| s == self.stack) && self.applies_to(dir)
    }

    /// Whether the change can touch the tests of the package folder `dir` (`""`: the root): a file in
    /// that folder, beneath it, or in a folder above it (a root `conftest.py` runs for every package).
    pub fn applies_to(&self, dir: &str) -> bool {
        let dir = dir.trim_start_matches("./").trim_end_matches('/');
        let dir = if dir == "." { "" } else { dir };
        let folder = self.file.rsplit_once('/').map_or("", |(d, _)| d);
        let within = |outer: &str, inner: &str| {
            outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}/"))
        };
        within(folder, dir) || within(dir, folder)
    }
}

/// What a package's installed environment loads into every test process, read as data after the
/// install ([`Runner::installed`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub loads: Vec<Load>,
    /// Each installed distribution's (normalised) name, with the names it requires.
    pub requires: std::collections::BTreeMap<String, Vec<String>>,
    /// Installed files of the test runner or aayu's plugin that are not what their record says.
    pub overwritten: Vec<String>,
    /// The distributions installed from a folder of the checkout (the pull request's own files): what
    /// they load, the pull request decides.
    pub local: BTreeSet<String>,
}

/// One thing the environment loads: a test-runner plugin (`pytest11`) or a start-up line (`pth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    /// The distribution whose record lists it (`None`: none does).
    pub distribution: Option<String>,
    pub kind: String,
    pub what: String,
}

/// Text with each control character escaped (`\n` as `\u{a}`), and each character that reorders or
/// hides text (bidirectional overrides and isolates, zero-width characters, line and paragraph
/// separators): one line, read as it is stored, whatever it held.
pub fn visible(text: &str) -> String {
    let hides = |c: char| {
        matches!(
            c,
            '\u{61c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
    };
    text.chars()
        .map(|c| {
            if c.is_control() || hides(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Every runner's harness changes of a change, sorted, each once.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut all: BTreeSet<Change> = BTreeSet::new();
    for runner in RUNNERS {
        all.extend(runner.harness(diff));
    }
    all.into_iter().collect()
}

/// A file's text as a rule reads it: `Ok(None)` when the tree does not have it, `Err` the finding
/// when it cannot be read as text (it may hide anything).
pub fn text(tree: &dyn Tree, file: &str, stack: &str, cap: u64) -> Result<Option<String>, Change> {
    let unreadable = |what: String| Change::new(file, 1, stack, Kind::Unreadable, what);
    match tree.read(file) {
        Read::Missing => Ok(None),
        Read::NotRegular => Err(unreadable(
            "a link (or not a regular file): not followed, it may point at anything".into(),
        )),
        Read::TooLarge(size) => Err(unreadable(format!(
            "{size} bytes, more than `[verify] harness_scan_bytes` ({cap}): not read, it may hide anything"
        ))),
        Read::Bytes(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
            unreadable(format!(
                "not valid UTF-8 (at byte {}): not read, it may hide anything",
                e.utf8_error().valid_up_to()
            ))
        }),
    }
}

/// The head's line (1-based) of the first line that differs between two texts: where a reader starts.
pub fn first_difference(base: &str, head: &str) -> u32 {
    let (b, h): (Vec<&str>, Vec<&str>) = (base.lines().collect(), head.lines().collect());
    let same = b.iter().zip(&h).take_while(|(x, y)| x == y).count();
    (same.min(h.len().saturating_sub(1)) + 1) as u32
}

/// A whole file added, changed or removed, as a change: where the head's first changed line is.
pub fn whole_file(
    path: &str,
    (base, head): (Option<&str>, Option<&str>),
    stack: &str,
    kind: Kind,
    what: &str,
) -> Change {
    let (line, how) = match (base, head) {
        (None, _) => (1, "added"),
        (Some(_), None) => (1, "removed"),
        (Some(b), Some(h)) => (first_difference(b, h), "changed"),
    };
    Change::new(path, line, stack, kind, format!("{what} ({how})"))
}

/// A file's two parses (`parse`; an empty document for a missing file, `T::default()`), or the
/// `unreadable` finding that one does not parse as `format` — `hides`: what may then be anything.
pub fn parsed_pair<T: Default>(
    path: &str,
    (base, head): (Option<&str>, Option<&str>),
    (stack, format, hides): (&str, &str, &str),
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(T, T), Change> {
    let read = |text: Option<&str>| text.map_or_else(|| Ok(T::default()), &parse);
    match (read(base), read(head)) {
        (Ok(b), Ok(h)) => Ok((b, h)),
        (_, Err(why)) | (Err(why), _) => Err(Change::new(
            path,
            1,
            stack,
            Kind::Unreadable,
            format!("does not parse as {format} ({why}): {hides} may be anything"),
        )),
    }
}

/// A TOML document, or why not (for [`parsed_pair`]).
pub fn toml_table(text: &str) -> Result<toml::Table, String> {
    text.parse::<toml::Table>()
        .map_err(|e| e.message().to_string())
}

/// Every folder at or above a changed path (`""`, the root, included): where the configuration that
/// applies to a changed file lies.
pub fn folders_above(changed: &[String]) -> BTreeSet<&str> {
    let mut folders: BTreeSet<&str> = BTreeSet::new();
    for path in changed {
        let mut dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        while folders.insert(dir) && !dir.is_empty() {
            dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        }
    }
    folders
}

/// The 1-based line of the first line of `text` that `matches`, or 1.
pub fn line_of(text: &str, matches: impl Fn(&str) -> bool) -> u32 {
    text.lines().position(matches).map_or(1, |i| i as u32 + 1)
}

/// Whether red-on-base may put a changed path on the base: a test file of the stack of its own package
/// (the nearest folder with a runner's marker, found in `tree`), by that runner's rule for the path
/// relative to the package folder. A path no runner claims is not a test file.
pub fn is_test_file_in(tree: &dyn Tree, path: &str) -> bool {
    let mut dir = path.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    loop {
        let here: Vec<&'static dyn Runner> = RUNNERS
            .iter()
            .copied()
            .filter(|r| r.marker().files.iter().any(|f| tree.has(&join(&dir, f))))
            .collect();
        if !here.is_empty() {
            let rest = if dir.is_empty() {
                path
            } else {
                &path[dir.len() + 1..]
            };
            return here.iter().any(|r| r.is_test_file(rest));
        }
        if dir.is_empty() {
            return false;
        }
        dir = dir
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string());
    }
}

/// A tree of texts for the rules' unit tests, and a scan of a change between two of them.
#[cfg(test)]
pub(crate) mod test_tree {
    use super::*;
    use std::collections::BTreeMap;

    pub(crate) struct Files(pub BTreeMap<String, String>);

    impl Tree for Files {
        fn read(&self, path: &str) -> Read {
            match self.0.get(path) {
                Some(t) => Read::Bytes(t.clone().into_bytes()),
                None => Read::Missing,
            }
        }

        fn files_in(&self, dir: &str) -> Vec<String> {
            self.0
                .keys()
                .filter_map(|p| {
                    let (folder, name) = p.rsplit_once('/').unwrap_or(("", p));
                    (folder == dir).then(|| name.to_string())
                })
                .collect()
        }
    }

    /// `rules` over the change from `base` to `head`, each change as `file:line kind what`.
    pub(crate) fn scan(
        rules: fn(&Diff) -> Vec<Change>,
        base: &[(&str, &str)],
        head: &[(&str, &str)],
    ) -> Vec<String> {
        let tree = |files: &[(&str, &str)]| {
            Files(
                files
                    .iter()
                    .map(|(p, t)| (p.to_string(), t.to_string()))
                    .collect(),
            )
        };
        let (b, h) = (tree(base), tree(head));
        let mut changed: Vec<String> = b.0.keys().chain(h.0.keys()).cloned().collect();
        changed.sort();
        changed.dedup();
        changed.retain(|p| b.0.get(p) != h.0.get(p));
        let mut found: Vec<String> = rules(&Diff {
            changed: &changed,
            base: &b,
            head: &h,
            cap: 1 << 20,
        })
        .iter()
        .map(|c| format!("{}:{} {} {}", c.file, c.line, c.kind.as_str(), c.what))
        .collect();
        found.sort();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A tree of (path, text).
    pub(crate) struct Files(pub BTreeMap<String, Vec<u8>>);

    impl Files {
        pub(crate) fn of(files: &[(&str, &str)]) -> Files {
            Files(
                files
                    .iter()
                    .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
                    .collect(),
            )
        }
    }

    impl Tree for Files {
        fn read(&self, path: &str) -> Read {
            match self.0.get(path) {
                Some(bytes) => Read::Bytes(bytes.clone()),
                None => Read::Missing,
            }
        }
    }

    #[test]
    fn test_files_are_decided_by_their_own_stack() {
        let tree = Files::of(&[
            ("Cargo.toml", ""),
            ("crates/a/Cargo.toml", ""),
            ("svc/go.mod", ""),
            ("py/pyproject.toml", ""),
            ("web/package.json", ""),
        ]);
        for yes in [
            "crates/a/tests/cli.rs",
            "src/store/tests.rs",
            "tests/it.rs",
            "svc/pkg/x_test.go",
            "svc/pkg/testdata/in.txt",
            "py/tests/test_x.py",
            "py/pkg/test_y.py",
            "web/src/a.test.ts",
        ] {
            assert!(is_test_file_in(&tree, yes), "{yes}");
        }
        for no in [
            "src/tests/x.rs",
            "src/lib.rs",
            "svc/internal/test/helper.go",
            "svc/main.go",
            "src/testing.rs",
            "tests",
            // The root's Cargo.toml claims it, and cargo's rule says no.
            "elsewhere/tests/x.py",
        ] {
            assert!(!is_test_file_in(&tree, no), "{no}");
        }
        assert!(!is_test_file_in(&Files::of(&[]), "tests/test_x.py"));
    }

    #[test]
    fn a_change_applies_to_its_folder_beneath_and_above() {
        let c = |file: &str| Change::new(file, 1, "python", Kind::Conftest, "x");
        assert!(c("conftest.py").applies_to("pkg"));
        assert!(c("pkg/conftest.py").applies_to("pkg"));
        assert!(c("pkg/tests/conftest.py").applies_to("pkg"));
        assert!(c("pkg/conftest.py").applies_to(""));
        assert!(c("tests/conftest.py").applies_to("."));
        assert!(!c("other/conftest.py").applies_to("pkg"));
        assert!(!c("pkg2/conftest.py").applies_to("pkg"));
        // Only to the tests of its own stack.
        assert!(c("conftest.py").applies_to_tests("", Some("pytest")));
        assert!(!c("conftest.py").applies_to_tests("", Some("cargo")));
        assert!(c("conftest.py").applies_to_tests("", None));
    }

    #[test]
    fn controls_and_characters_that_reorder_text_are_escaped() {
        assert_eq!(visible("a\nb"), "a\\u{a}b");
        assert_eq!(
            visible("conftest\u{202e}yp.py \u{2066}x\u{2069}\u{200b}"),
            "conftest\\u{202e}yp.py \\u{2066}x\\u{2069}\\u{200b}"
        );
        assert_eq!(visible("naïve ünïcode"), "naïve ünïcode");
    }

    #[test]
    fn the_first_differing_line_is_the_heads() {
        assert_eq!(first_difference("a\nb\nc\n", "a\nB\nc\n"), 2);
        assert_eq!(first_difference("a\nb\n", "a\nb\nc\n"), 3);
        assert_eq!(first_difference("a\nb\nc\n", "a\nb\n"), 2);
        assert_eq!(first_difference("", ""), 1);
    }
}
