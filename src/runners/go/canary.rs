//! Go's canary ([`crate::floors::canary`]): `<t>.Fatal("<message>")` after a top-level test's
//! `func TestX(t *testing.T) {` line; a subtest's canary is its parent's (the parent fails before the
//! subtest runs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::super::{Canary, TestId, join};

/// A Go test file with `message` as the failing first statement of the top-level test `name`: after its
/// `func <name>(<t> *testing.T) {` line, `<t>.Fatal("<message>")`. `Err`: why it cannot apply.
pub fn place(source: &str, name: &str, message: &str) -> Result<String, String> {
    let pattern = format!(
        r"^func\s+{}\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s+\*[A-Za-z_][A-Za-z0-9_]*\.T\s*\)\s*\{{\s*(//.*)?$",
        regex::escape(name)
    );
    let head = regex::Regex::new(&pattern).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(source.len() + 80);
    let mut done = false;
    for line in source.split_inclusive('\n') {
        out.push_str(line);
        if done {
            continue;
        }
        if let Some(captures) = head.captures(line.trim_end_matches(['\n', '\r'])) {
            let t = &captures[1];
            if t == "_" {
                return Err(format!("`{name}` does not name its `*testing.T`"));
            }
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("\t{t}.Fatal({message:?})\n"));
            done = true;
        }
    }
    if done {
        Ok(out)
    } else {
        Err(format!(
            "no line `func {name}(t *testing.T) {{` in the package's test files: its body cannot be found"
        ))
    }
}

/// Each test's canary in the copy at `root`: each top-level test once, in the one `_test.go` file of
/// its package that declares it.
pub(super) fn canary(
    root: &Path,
    tests: &[&TestId],
    canary: &Canary,
) -> BTreeMap<TestId, Result<TestId, String>> {
    let mut placed: BTreeMap<TestId, Result<(), String>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for id in tests {
        let name = id.rest.split('/').next().unwrap_or(&id.rest).to_string();
        let parent = TestId {
            package: id.package.clone(),
            rest: name,
        };
        let done = placed
            .entry(parent.clone())
            .or_insert_with(|| insert(root, &parent, canary.message));
        out.insert((*id).clone(), done.clone().map(|()| parent));
    }
    out
}

/// The canary inserted into the one `_test.go` file of the package that declares `test`.
fn insert(root: &Path, test: &TestId, message: &str) -> Result<(), String> {
    let dir = root.join(&test.package);
    let mut files: BTreeSet<String> = BTreeSet::new();
    for entry in std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with("_test.go") && entry.file_type().is_ok_and(|t| t.is_file()) {
            files.insert(name);
        }
    }
    // Every file that declares it (`x_unix_test.go` and `x_other_test.go` behind build tags): the one
    // the build takes fails.
    let (mut placed, mut last) = (false, None);
    for name in files {
        let rel = join(&test.package, &name);
        let Ok(bytes) = crate::safe_fs::read(root, &rel, 64 << 20) else {
            continue;
        };
        let source = String::from_utf8_lossy(&bytes);
        match place(&source, &test.rest, message) {
            Ok(changed) => {
                crate::safe_fs::write(root, &rel, changed.as_bytes()).map_err(|e| e.to_string())?;
                placed = true;
            }
            Err(why) => last = Some(why),
        }
    }
    if placed {
        return Ok(());
    }
    Err(last.unwrap_or_else(|| "the package has no test file".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_is_the_first_statement_of_the_tests_own_body() {
        let source = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(tt *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\ttt.Fatal(\"no\")\n\t}\n}\n\nfunc TestAddMore(t *testing.T) {}\n";
        let with = place(source, "TestAdd", "aayu canary 1").expect("applies");
        assert_eq!(
            with,
            source.replace(
                "func TestAdd(tt *testing.T) {\n",
                "func TestAdd(tt *testing.T) {\n\ttt.Fatal(\"aayu canary 1\")\n"
            )
        );
        assert!(
            place(source, "TestSub", "m")
                .expect_err("no such test")
                .contains("its body cannot be found")
        );
        let commented = "package calc\n\nfunc TestAdd(t *testing.T) { //nolint:paralleltest\n}\n";
        assert!(
            place(commented, "TestAdd", "m")
                .expect("a comment after the brace")
                .contains("//nolint:paralleltest\n\tt.Fatal(\"m\")\n")
        );
        let unnamed = "package calc\n\nfunc TestAdd(_ *testing.T) {\n}\n";
        assert!(
            place(unnamed, "TestAdd", "m")
                .expect_err("an unnamed *testing.T")
                .contains("does not name")
        );
    }

    #[test]
    fn a_subtests_canary_is_its_parents_placed_once() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("calc")).expect("dir");
        let source = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tt.Run(\"one\", func(t *testing.T) {})\n}\n";
        std::fs::write(dir.path().join("calc/calc_test.go"), source).expect("write");
        let id = |rest: &str| TestId {
            package: "calc".to_string(),
            rest: rest.to_string(),
        };
        let (one, two, gone) = (id("TestAdd/one"), id("TestAdd/two"), id("TestGone"));
        let said = canary(
            dir.path(),
            &[&one, &two, &gone],
            &Canary {
                message: "aayu canary 2",
                python: None,
            },
        );
        assert_eq!(said[&one], Ok(id("TestAdd")));
        assert_eq!(said[&two], Ok(id("TestAdd")));
        assert!(
            said[&gone]
                .as_ref()
                .is_err_and(|w| w.contains("cannot be found"))
        );
        let written = std::fs::read_to_string(dir.path().join("calc/calc_test.go")).expect("read");
        assert_eq!(written.matches("aayu canary 2").count(), 1, "{written}");
    }
}
