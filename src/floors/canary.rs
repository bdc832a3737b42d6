//! The canary run: after a mapped test passed at the head, it runs once more from a per-run copy of
//! the head in which a failing first statement, with a message of this run's own, is inserted into the
//! test's own body. The run must report that test **failed with that message**; a pass, or a failure
//! with another message, means the record is not the test's (something else in the test process wrote
//! it), and the test's pass is refused. Where the canary cannot apply (the body cannot be found) the
//! pass stands, and the criterion says why. Go's tests only, so far: see
//! `docs/proof-packs.md#the-canary`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::git::Repo;
use crate::runners::{Outcome, TestId, TestResult};

use super::test_evidence;

/// What a test whose canary passed, or failed with another message, gets.
pub const REFUSED: &str = "its record says it passed although its first statement fails: the record is not the test's (the canary run)";

/// The build cache of the canary's copy: its own, beside the head's and the base's.
const TARGET: &str = "canary";

/// A message no code of the pull request can know before the run.
pub fn message() -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("aayu canary {hex}")
}

/// A Go test file with `message` as the failing first statement of the top-level test `name`: after its
/// `func <name>(<t> *testing.T) {` line, `<t>.Fatal("<message>")` (a subtest's parent fails before the
/// subtest runs). `Err`: why it cannot apply.
pub fn go(source: &str, name: &str, message: &str) -> Result<String, String> {
    let pattern = format!(
        r"^func\s+{}\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s+\*[A-Za-z_][A-Za-z0-9_]*\.T\s*\)\s*\{{\s*$",
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

/// The canary of every passed Go test of `results` (the head's, in `root`): results whose canary did
/// not fail with its message are refused ([`REFUSED`]); one the canary cannot apply to keeps its pass,
/// with a note.
pub fn run_go(
    repo: &Repo,
    head: &str,
    run: &test_evidence::Run,
    results: &mut BTreeMap<TestId, TestResult>,
) {
    let passed: Vec<TestId> = results
        .iter()
        .filter(|(id, r)| {
            matches!(r.outcome, Outcome::Passed)
                && crate::runners::package_of(run.root, id).is_some_and(|f| f.runner.name() == "go")
        })
        .map(|(id, _)| id.clone())
        .collect();
    if passed.is_empty() {
        return;
    }
    let note = |results: &mut BTreeMap<TestId, TestResult>, id: &TestId, why: &str| {
        if let Some(r) = results.get_mut(id) {
            let said = format!("canary not applied: {why}");
            r.note = Some(match r.note.take() {
                Some(before) => format!("{before}; {said}"),
                None => said,
            });
        }
    };
    let copy = match copy_of(repo, head) {
        Ok(copy) => copy,
        Err(why) => {
            for id in &passed {
                note(results, id, &why);
            }
            return;
        }
    };
    let message = message();
    // Each top-level test once (a subtest's canary fails its parent).
    let mut parents: BTreeMap<TestId, Vec<TestId>> = BTreeMap::new();
    for id in &passed {
        let name = id.rest.split('/').next().unwrap_or(&id.rest).to_string();
        let parent = TestId {
            package: id.package.clone(),
            rest: name,
        };
        parents.entry(parent).or_default().push(id.clone());
    }
    let mut canaried: Vec<TestId> = Vec::new();
    for (parent, ids) in &parents {
        match insert(copy.path(), parent, &message) {
            Ok(()) => canaried.push(parent.clone()),
            Err(why) => {
                for id in ids {
                    note(results, id, &why);
                }
            }
        }
    }
    if canaried.is_empty() {
        return;
    }
    let on_copy = test_evidence::Run {
        sandbox: run.sandbox,
        root: copy.path(),
        timeout: run.timeout,
        target: Some(TARGET),
        heartbeat: run.heartbeat,
    };
    let ran = test_evidence::run_tests(&on_copy, &canaried, &BTreeMap::new());
    for parent in &canaried {
        let caught = matches!(
            ran.get(parent).map(|r| &r.outcome),
            Some(Outcome::Failed(detail)) if detail.contains(&message)
        );
        let cannot_run = matches!(
            ran.get(parent).map(|r| &r.outcome),
            Some(Outcome::Blocked(_)) | Some(Outcome::NotBuilt(_)) | None
        );
        for id in &parents[parent] {
            if caught {
                continue;
            }
            if cannot_run {
                let why = ran
                    .get(parent)
                    .map(|r| format!("its run {}: {}", r.outcome.words(), r.outcome.detail()))
                    .unwrap_or_else(|| "it did not run".to_string());
                note(results, id, &why);
            } else if let Some(r) = results.get_mut(id) {
                r.outcome = Outcome::Failed(REFUSED.to_string());
            }
        }
    }
}

/// The head's tree in a folder of its own (readable by the sandbox uid), removed when dropped.
fn copy_of(repo: &Repo, head: &str) -> Result<tempfile::TempDir, String> {
    use std::os::unix::fs::PermissionsExt;
    let commit = repo.commit(head).map_err(|e| e.to_string())?.id();
    let folder = tempfile::Builder::new()
        .prefix("aayu-canary-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    repo.export_tree(commit, folder.path())
        .map_err(|e| e.to_string())?;
    Ok(folder)
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
    let mut last = None;
    for name in files {
        let rel = crate::runners::join(&test.package, &name);
        let Ok(bytes) = crate::safe_fs::read(root, &rel, 64 << 20) else {
            continue;
        };
        let source = String::from_utf8_lossy(&bytes);
        match go(&source, &test.rest, message) {
            Ok(changed) => {
                return crate::safe_fs::write(root, &rel, changed.as_bytes())
                    .map_err(|e| e.to_string());
            }
            Err(why) => last = Some(why),
        }
    }
    Err(last.unwrap_or_else(|| "the package has no test file".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_is_the_first_statement_of_the_tests_own_body() {
        let source = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(tt *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\ttt.Fatal(\"no\")\n\t}\n}\n\nfunc TestAddMore(t *testing.T) {}\n";
        let with = go(source, "TestAdd", "aayu canary 1").expect("applies");
        assert_eq!(
            with,
            source.replace(
                "func TestAdd(tt *testing.T) {\n",
                "func TestAdd(tt *testing.T) {\n\ttt.Fatal(\"aayu canary 1\")\n"
            )
        );
        assert!(
            go(source, "TestSub", "m")
                .expect_err("no such test")
                .contains("its body cannot be found")
        );
        let unnamed = "package calc\n\nfunc TestAdd(_ *testing.T) {\n}\n";
        assert!(
            go(unnamed, "TestAdd", "m")
                .expect_err("an unnamed *testing.T")
                .contains("does not name")
        );
        assert_ne!(message(), message());
    }
}
