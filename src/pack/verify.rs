//! Verifying a pack (SPEC §6 "aayu proof verify"; also the comment job and `aayu ship`): every stored artifact's bytes against its
//! sha256 and size, no path listed twice or escaping the pack, every evidence path naming an artifact,
//! every Ready criterion evidenced and none outside the snapshot, the Completion Goal hash, and the pull
//! request's head. Each failure names the artifact path, criterion id or field. Floors are reported, not
//! integrity.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::pack::{self, Pack};
use crate::story::ready::Snapshot;

/// One check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was checked: `artifact-hash`, `artifact-size`, `artifact-missing`, `duplicate-path`,
    /// `escaping-path`, `evidence-without-artifact`, `criterion-without-evidence`,
    /// `criterion-outside-ready`, `ready-snapshot`, `completion-goal-hash`, `pr-head`, `pack`.
    pub check: String,
    /// The artifact path, `criterion N` or the field it concerns.
    pub subject: String,
    pub detail: String,
}

impl Finding {
    /// The finding as a line says it: `artifact-hash evidence/x.jsonl: …`; a finding about the pack field
    /// its check is named after (`completion-goal-hash` on `completion_goal_hash`) names the field once.
    pub fn said(&self) -> String {
        if self.subject.replace('_', "-").starts_with(&self.check) {
            format!("{}: {}", self.subject, self.detail)
        } else {
            format!("{} {}: {}", self.check, self.subject, self.detail)
        }
    }
}

fn finding(check: &str, subject: impl Into<String>, detail: impl Into<String>) -> Finding {
    Finding {
        check: check.to_string(),
        subject: subject.into(),
        detail: detail.into(),
    }
}

/// How an artifact's bytes were found.
pub enum Stored {
    Bytes(Vec<u8>),
    /// Not on the ledger at all.
    Missing,
    /// Kept elsewhere and not readable here (an LFS object without `git lfs`, a bucket object without its
    /// credential); the detail says why.
    Elsewhere(String),
}

/// What the checks found, and the counts SPEC §6 reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub failures: Vec<Finding>,
    pub artifacts_checked: usize,
    pub artifacts_not_stored: usize,
    /// Said, not failed on: e.g. no pull request to compare the head with.
    pub notes: Vec<String>,
}

/// Checks a pack against its stored artifacts, its story's Ready snapshot and the pull request's head.
/// `snapshot` is `None` when the pack names no story (nothing to compare with); `pr_head` is `Ok(None)`
/// when there is no pull request to compare with.
pub fn verify(
    pack: &Pack,
    read: &dyn Fn(&pack::Artifact) -> Stored,
    snapshot: Option<&Result<Snapshot, String>>,
    pr_head: &Result<Option<String>, String>,
) -> Outcome {
    let mut out = Outcome::default();
    let mut seen = BTreeSet::new();
    for a in &pack.artifacts {
        if !pack::safe_path(&a.path) {
            out.failures.push(finding(
                "escaping-path",
                &a.path,
                "the path is absolute, or has `..`, `.` or an empty part",
            ));
            continue;
        }
        if !seen.insert(a.path.as_str()) {
            out.failures.push(finding(
                "duplicate-path",
                &a.path,
                "listed twice in pack.json",
            ));
            continue;
        }
        if a.tombstone.is_some() || a.store == pack::Store::None {
            out.artifacts_not_stored += 1;
            continue;
        }
        match read(a) {
            Stored::Missing => out.failures.push(finding(
                "artifact-missing",
                &a.path,
                format!(
                    "pack.json lists it (sha256 {}, {} bytes) but the ledger has no bytes for it",
                    a.sha256, a.size
                ),
            )),
            Stored::Elsewhere(why) => {
                out.artifacts_not_stored += 1;
                out.notes.push(format!("{}: {why}", a.path));
            }
            Stored::Bytes(bytes) => {
                out.artifacts_checked += 1;
                let actual = crate::hash::bytes(&bytes);
                if actual != a.sha256 {
                    out.failures.push(finding(
                        "artifact-hash",
                        &a.path,
                        format!("sha256 expected {}, actual {actual}", a.sha256),
                    ));
                }
                if bytes.len() as u64 != a.size {
                    out.failures.push(finding(
                        "artifact-size",
                        &a.path,
                        format!("size expected {}, actual {}", a.size, bytes.len()),
                    ));
                }
            }
        }
    }
    for c in &pack.criteria {
        for e in &c.evidence {
            if !seen.contains(e.as_str()) {
                out.failures.push(finding(
                    "evidence-without-artifact",
                    format!("criterion {}", c.id),
                    format!("evidence `{e}` names no artifact of the pack"),
                ));
            }
        }
    }
    match snapshot {
        None => {}
        Some(Err(why)) => out
            .failures
            .push(finding("ready-snapshot", "ready.md", why.clone())),
        Some(Ok(snapshot)) => {
            let ready: BTreeSet<u32> = snapshot.criteria.iter().map(|c| c.id).collect();
            for id in &ready {
                let evidenced = pack
                    .criteria
                    .iter()
                    .any(|c| c.id == *id && !c.evidence.is_empty());
                if !evidenced {
                    out.failures.push(finding(
                        "criterion-without-evidence",
                        format!("criterion {id}"),
                        "a Ready criterion with no evidence in the pack",
                    ));
                }
            }
            for c in pack.criteria.iter().filter(|c| !ready.contains(&c.id)) {
                out.failures.push(finding(
                    "criterion-outside-ready",
                    format!("criterion {}", c.id),
                    "the pack claims a criterion the Ready snapshot does not have",
                ));
            }
            if snapshot.meta.completion_goal_hash != pack.completion_goal_hash {
                out.failures.push(finding(
                    "completion-goal-hash",
                    "completion_goal_hash",
                    format!(
                        "the pack says {}, the Ready snapshot {}",
                        pack.completion_goal_hash, snapshot.meta.completion_goal_hash
                    ),
                ));
            }
        }
    }
    match pr_head {
        Ok(Some(head)) if *head != pack.pr_head_sha => out.failures.push(finding(
            "pr-head",
            "pr_head_sha",
            format!(
                "the pack proves {}, but pull request #{}'s head is now {head}",
                pack.pr_head_sha, pack.pr
            ),
        )),
        Ok(Some(_)) => {}
        Ok(None) => out
            .notes
            .push("the pack names no pull request: pr_head_sha was not compared".into()),
        Err(why) => out.failures.push(finding(
            "pr-head",
            "pr_head_sha",
            format!("cannot compare with the pull request's head: {why}"),
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_about_the_field_its_check_is_named_after_names_it_once() {
        let field = finding(
            "completion-goal-hash",
            "completion_goal_hash",
            "the pack says a",
        );
        assert_eq!(field.said(), "completion_goal_hash: the pack says a");
        let head = finding("pr-head", "pr_head_sha", "the pack proves b");
        assert_eq!(head.said(), "pr_head_sha: the pack proves b");
        let artifact = finding("artifact-hash", "evidence/x.jsonl", "expected c");
        assert_eq!(
            artifact.said(),
            "artifact-hash evidence/x.jsonl: expected c"
        );
    }
}
