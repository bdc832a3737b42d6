//! The test-id grammar (SPEC §5, `docs/proof-packs.md#test-ids`): `"<dir>:<rest>"`, where `<dir>` is `.`
//! (the repository root) or a relative path, and `<rest>` belongs to the runner of the package in `<dir>`.
//! The package ends at the first single `:` (a Rust path's `::` and a pytest node id's belong to the test),
//! and `<rest>` is kept whole here: each runner reads it with its own grammar —
//! cargo `[<target>[(<kind>)]/]<test path>`, Go `<TestName>[/<subtest>…]`.

use crate::sandbox::toolchain::{PackageKind, package_dir, shown_dir};

/// A mapped test: the package folder (normalised; `""` is the root, shown as `.`) and the runner's own id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TestId {
    pub package: String,
    pub rest: String,
}

impl TestId {
    pub fn parse(text: &str) -> Result<TestId, String> {
        if text.chars().any(char::is_control) {
            return Err(format!(
                "`{}` holds a control character",
                text.escape_debug()
            ));
        }
        let bytes = text.as_bytes();
        let split = (0..bytes.len()).find(|&i| {
            bytes[i] == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':')
        });
        let Some(at) = split else {
            return Err(format!(
                "`{text}` is not `<package dir>:<test>` (the root is `.`: `.:{text}`)"
            ));
        };
        let (dir, rest) = (&text[..at], &text[at + 1..]);
        if dir.is_empty() {
            return Err(format!(
                "`{text}` names no package dir: write `.:{rest}` for a package at the repository root"
            ));
        }
        if rest.is_empty() {
            return Err(format!("`{text}` names no test after `{dir}:`"));
        }
        let package = package_dir(dir).map_err(|why| format!("`{text}`: {why}"))?;
        Ok(TestId {
            package,
            rest: rest.to_string(),
        })
    }

    /// Whether the runner of the package can read the rest: a contract error (exit 2) before anything runs.
    pub fn check(&self, kind: &PackageKind) -> Result<(), String> {
        match kind {
            PackageKind::Cargo => CargoTest::parse(&self.rest).map(drop),
            PackageKind::Go { .. } => GoTest::parse(&self.rest).map(drop),
        }
        .map_err(|why| format!("`{self}`: {why}"))
    }
}

impl std::fmt::Display for TestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", shown_dir(&self.package), self.rest)
    }
}

/// The kind of a cargo target, as a test id qualifies it: `lib(lib)`, `notes(bin)`, `cli(test)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TargetKind {
    Lib,
    Bin,
    Test,
    Example,
    Bench,
}

impl TargetKind {
    pub fn word(self) -> &'static str {
        match self {
            TargetKind::Lib => "lib",
            TargetKind::Bin => "bin",
            TargetKind::Test => "test",
            TargetKind::Example => "example",
            TargetKind::Bench => "bench",
        }
    }

    fn from_word(word: &str) -> Option<TargetKind> {
        [
            TargetKind::Lib,
            TargetKind::Bin,
            TargetKind::Test,
            TargetKind::Example,
            TargetKind::Bench,
        ]
        .into_iter()
        .find(|k| k.word() == word)
    }

    /// The kind of a target in cargo's JSON messages (`target.kind`: `["lib"]`, `["rlib", "cdylib"]`,
    /// `["proc-macro"]`, `["bin"]`, `["test"]` …); `None` for a build script.
    pub fn of_cargo(kinds: &[&str]) -> Option<TargetKind> {
        let first = kinds.first()?;
        match *first {
            "lib" | "rlib" | "dylib" | "cdylib" | "staticlib" | "proc-macro" => {
                Some(TargetKind::Lib)
            }
            other => TargetKind::from_word(other),
        }
    }
}

/// A cargo target by name and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub name: String,
    pub kind: TargetKind,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name, self.kind.word())
    }
}

/// A cargo test id's rest: `[<target>[(<kind>)]/]<test path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoTest {
    pub target: Option<(String, Option<TargetKind>)>,
    pub path: String,
}

impl CargoTest {
    pub fn parse(rest: &str) -> Result<CargoTest, String> {
        // libtest names a doc test `src/lib.rs - foo (line 12)`.
        if rest.contains(" - ") && rest.ends_with(')') && rest.contains("(line ") {
            return Err(
                "doc tests are not evidence: move the example into a `#[test]`".to_string(),
            );
        }
        let Some((prefix, path)) = rest.split_once('/') else {
            return CargoTest::path_only(rest);
        };
        let grammar =
            "is not `[<target>[(<kind>)]/]<test path>` (kinds: lib, bin, test, example, bench)";
        let (name, kind) = match prefix.split_once('(') {
            Some((name, kind)) => {
                let kind = kind
                    .strip_suffix(')')
                    .and_then(TargetKind::from_word)
                    .ok_or_else(|| format!("`{rest}` {grammar}"))?;
                (name, Some(kind))
            }
            None => (prefix, None),
        };
        let target_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !target_name {
            return Err(format!("`{rest}` {grammar}"));
        }
        let mut test = CargoTest::path_only(path).map_err(|_| format!("`{rest}` {grammar}"))?;
        test.target = Some((name.to_string(), kind));
        Ok(test)
    }

    fn path_only(path: &str) -> Result<CargoTest, String> {
        // A leading `-` would reach libtest as one of its options (`--include-ignored`).
        if path.is_empty()
            || path.starts_with('-')
            || path.contains('/')
            || path.chars().any(char::is_whitespace)
        {
            return Err(format!(
                "`{path}` is not a test path as libtest prints it (`tests::name`)"
            ));
        }
        Ok(CargoTest {
            target: None,
            path: path.to_string(),
        })
    }

    /// Whether a target is one this id may mean.
    pub fn wants(&self, target: &Target) -> bool {
        match &self.target {
            None => true,
            Some((name, kind)) => *name == target.name && kind.is_none_or(|k| k == target.kind),
        }
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
    pub fn parse(rest: &str) -> Result<GoTest, String> {
        let function = rest.split('/').next().unwrap_or_default();
        let identifier = function
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && function.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier || rest.split('/').any(str::is_empty) || rest.contains(' ') {
            return Err(format!(
                "`{rest}` is not `<TestName>[/<subtest>…]` as `go test -json` names it (spaces in a subtest's name are `_`)"
            ));
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
    fn the_package_ends_at_the_first_single_colon_and_the_root_is_a_dot() {
        let t = TestId::parse("examples/notes:store::tests::done").expect("id");
        assert_eq!(
            (t.package.as_str(), t.rest.as_str()),
            ("examples/notes", "store::tests::done")
        );
        let t = TestId::parse(".:offset_adds_to_skip").expect("root");
        assert_eq!(
            (t.package.as_str(), t.to_string().as_str()),
            ("", ".:offset_adds_to_skip")
        );
        for same in ["./lib:x", "lib/:x", "./lib/:x"] {
            assert_eq!(TestId::parse(same).expect(same).to_string(), "lib:x");
        }
        let t = TestId::parse("lib:tests/test_x.py::TestK::test_m[2]").expect("pytest");
        assert_eq!(t.rest, "tests/test_x.py::TestK::test_m[2]");
        let refused = TestId::parse(":offset").expect_err("no dir");
        assert!(refused.contains("`.:offset`"), "{refused}");
        assert!(TestId::parse("no-colon").is_err());
        assert!(TestId::parse("../up:x").is_err());
        assert!(TestId::parse("/abs:x").is_err());
        assert!(TestId::parse("a:").is_err());
        assert!(TestId::parse("a:x\ny").is_err());
    }

    #[test]
    fn cargo_ids_name_a_target_by_name_and_kind() {
        let t = CargoTest::parse("cli/adds_note").expect("target");
        assert_eq!(t.target, Some(("cli".into(), None)));
        assert_eq!(t.path, "adds_note");
        let t = CargoTest::parse("lib(test)/x").expect("kind");
        assert_eq!(t.target, Some(("lib".into(), Some(TargetKind::Test))));
        let t = CargoTest::parse("my-crate(bin)/tests::offset").expect("bin");
        assert!(t.wants(&Target {
            name: "my-crate".into(),
            kind: TargetKind::Bin
        }));
        assert!(!t.wants(&Target {
            name: "my-crate".into(),
            kind: TargetKind::Lib
        }));
        assert!(CargoTest::parse("x(widget)/t").is_err());
        assert!(CargoTest::parse("a::b/t").is_err());
        assert!(CargoTest::parse("--include-ignored").is_err());
        let doc = CargoTest::parse("src/lib.rs - foo (line 12)").expect_err("doc");
        assert!(doc.starts_with("doc tests are not evidence"), "{doc}");
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
}
