//! The test-id grammar (SPEC §5, `docs/proof-packs.md#test-ids`): `"<dir>:<rest>"`, where `<dir>` is `.`
//! (the repository root) or a relative path, and `<rest>` belongs to the runner of the package in `<dir>`.
//! The package ends at the first single `:` (a Rust path's `::` and a pytest node id's belong to the test),
//! and `<rest>` is kept whole here: each runner reads it with its own grammar —
//! cargo `[<target>[(<kind>)]/]<test path>`, Go `<TestName>[/<subtest>…]`.

use crate::sandbox::toolchain::{NotAPackageDir, package_dir, shown_dir};

/// Why a text is not a test id (`<package dir>:<test>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("`{0}` holds a control character")]
    ControlCharacter(String),
    #[error("`{text}` is not `<package dir>:<test>` (the root is `.`: `.:{text}`)")]
    NoColon { text: String },
    #[error("`{text}` names no package dir: write `.:{rest}` for a package at the repository root")]
    NoPackage { text: String, rest: String },
    #[error("`{text}` names no test after `{dir}:`")]
    NoTest { text: String, dir: String },
    #[error("`{text}`: {why}")]
    PackageDir {
        text: String,
        #[source]
        why: NotAPackageDir,
    },
}

/// A test id the runner of its package cannot read (a contract error).
#[derive(Debug, thiserror::Error)]
#[error("`{id}`: {why}")]
pub struct UnreadableId {
    id: String,
    #[source]
    why: Box<super::RunnerError>,
}

/// A mapped test: the package folder (normalised; `""` is the root, shown as `.`) and the runner's own id.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(deny_unknown_fields)]
pub struct TestId {
    pub package: String,
    pub rest: String,
}

impl TestId {
    pub fn parse(text: &str) -> Result<TestId, IdError> {
        if text.chars().any(char::is_control) {
            return Err(IdError::ControlCharacter(text.escape_debug().to_string()));
        }
        let bytes = text.as_bytes();
        let split = (0..bytes.len()).find(|&i| {
            bytes[i] == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':')
        });
        let Some(at) = split else {
            return Err(IdError::NoColon {
                text: text.to_string(),
            });
        };
        let (dir, rest) = (&text[..at], &text[at + 1..]);
        if dir.is_empty() {
            return Err(IdError::NoPackage {
                text: text.to_string(),
                rest: rest.to_string(),
            });
        }
        if rest.is_empty() {
            return Err(IdError::NoTest {
                text: text.to_string(),
                dir: dir.to_string(),
            });
        }
        let package = package_dir(dir).map_err(|why| IdError::PackageDir {
            text: text.to_string(),
            why,
        })?;
        Ok(TestId {
            package,
            rest: rest.to_string(),
        })
    }

    /// Whether the runner of the package can read the rest: a contract error (exit 2) before anything runs.
    pub fn check(
        &self,
        root: &std::path::Path,
        package: &super::Package,
    ) -> Result<(), UnreadableId> {
        package
            .runner
            .check_id(root, package, &self.rest)
            .map_err(|why| UnreadableId {
                id: self.to_string(),
                why: Box::new(why),
            })
    }
}

impl std::fmt::Display for TestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", shown_dir(&self.package), self.rest)
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
        assert!(refused.to_string().contains("`.:offset`"), "{refused}");
        assert!(TestId::parse("no-colon").is_err());
        assert!(TestId::parse("../up:x").is_err());
        assert!(TestId::parse("/abs:x").is_err());
        assert!(TestId::parse("a:").is_err());
        assert!(TestId::parse("a:x\ny").is_err());
    }
}
