//! The canary run: after a mapped test passed at the head, it runs once more from a per-run copy of
//! the head in which a failing first statement, with a message of this run's own, is inserted into the
//! test's own body. The run must report that test **failed with that message**; a pass, or a failure
//! with another message, means the record is not the test's (something else in the test process wrote
//! it), and the test's pass is refused. Where the canary cannot apply (the body cannot be found) the
//! pass stands, and the criterion says why. Each stack's runner places its own canary
//! ([`runners::Runner::canary`]): Go's and pytest's so far; see `docs/proof-packs.md#the-canary`.

use std::collections::BTreeMap;

use crate::git::Repo;
use crate::runners::{self, Outcome, TestId, TestResult};

use super::test_evidence;

/// What a test whose canary passed, or failed with another message, gets.
pub const REFUSED: &str = "its record says it passed although its first statement fails: the record is not the test's (the canary run)";

/// A message no code of the pull request can know before the run.
pub fn message() -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("aayu canary {hex}")
}

/// The canary of every passed test of `results` (the head's, in `run.root`) whose stack has one: results
/// whose canary did not fail with its message are refused ([`REFUSED`]); one the canary cannot apply
/// to keeps its pass, with a note.
pub fn run(
    repo: &Repo,
    head: &str,
    run: &test_evidence::Run,
    results: &mut BTreeMap<TestId, TestResult>,
) {
    let passed: Vec<TestId> = results
        .iter()
        .filter(|(id, r)| {
            matches!(r.outcome, Outcome::Passed)
                && runners::package_of(run.root, id).is_some_and(|f| f.runner.canaries())
        })
        .map(|(id, _)| id.clone())
        .collect();
    if passed.is_empty() {
        return;
    }
    let note = |results: &mut BTreeMap<TestId, TestResult>, id: &TestId, why: &str| {
        if let Some(r) = results.get_mut(id) {
            // A temporary folder's path is this machine's.
            let said = runners::scrub(&format!("canary not applied: {why}"), repo.root());
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
    // The copy's test files alone differ from the head's: its fetch and installs are the head's.
    run.sandbox.share_fetch(run.root, copy.path());
    let on_copy = test_evidence::Run {
        sandbox: run.sandbox,
        root: copy.path(),
        timeout: run.timeout,
        // The head's build folder: the copy's builds are incremental ones of the head's (its
        // dependencies already built), one per package.
        target: None,
        heartbeat: run.heartbeat,
        canaries: true,
    };
    let message = message();
    let python = run.sandbox.locate(crate::sandbox::preflight::Tool::Python);
    let canary = runners::Canary {
        message: &message,
        python: python.as_ref().map(|(_, path)| path.as_path()),
    };
    // Each test's canary, placed by its package's runner: the test whose run must fail with it.
    let placed = test_evidence::canaries(&on_copy, &passed, &canary);
    let mut runs: BTreeMap<TestId, Vec<TestId>> = BTreeMap::new();
    for id in &passed {
        match placed.get(id) {
            Some(Ok(runs_as)) => runs.entry(runs_as.clone()).or_default().push(id.clone()),
            Some(Err(why)) => note(results, id, why),
            None => note(results, id, "its runner placed none"),
        }
    }
    if runs.is_empty() {
        return;
    }
    let canaried: Vec<TestId> = runs.keys().cloned().collect();
    let ran = test_evidence::run_tests(&on_copy, &canaried, &BTreeMap::new());
    for (runs_as, ids) in &runs {
        let outcome = ran.get(runs_as).map(|r| &r.outcome);
        let caught = matches!(outcome, Some(Outcome::Failed(detail)) if detail.contains(&message));
        let cannot_run = matches!(
            outcome,
            Some(Outcome::Blocked(_))
                | Some(Outcome::NotBuilt(_))
                | Some(Outcome::NotRun(_))
                | None
        );
        for id in ids {
            if caught {
                continue;
            }
            if cannot_run {
                let why = ran
                    .get(runs_as)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_has_a_message_of_its_own() {
        let (one, two) = (message(), message());
        assert_ne!(one, two);
        assert!(one.starts_with("aayu canary ") && one.len() == "aayu canary ".len() + 24);
    }
}
