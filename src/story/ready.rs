//! The Ready snapshot (SPEC §6): a story's frozen Completion Goal, its hash, its labels.

use serde::Deserialize;

use crate::maps::blocks::ArtifactKind;

/// The metadata line `<!-- aayudha:ready {…} -->`.
#[derive(Debug, Clone, Deserialize)]
pub struct Meta {
    pub story: u64,
    pub completion_goal_hash: String,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Where it was frozen from: `owner/name#131` (the issue), or `file:<path>` (`aayu ready --file`).
    #[serde(default)]
    pub source: Option<String>,
}

impl Meta {
    /// The refusal of a snapshot frozen from a local file, for a story that has a GitHub issue: the gate
    /// in Actions and `aayu ship` go by the issue.
    pub fn local_file_refusal(&self) -> Option<String> {
        let source = self.source.as_deref()?;
        source.starts_with("file:").then(|| {
            format!(
                "story #{}'s Ready snapshot was frozen from a local file (`{source}`): run `aayu ready {}` against the issue",
                self.story, self.story
            )
        })
    }
}

/// One numbered criterion of a Completion Goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    pub id: u32,
    pub text: String,
    /// `(evidence: screenshot)` at the end of its line; `api-trace` without.
    pub evidence: ArtifactKind,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub meta: Meta,
    pub criteria: Vec<Criterion>,
}

/// The Completion Goal of a Markdown body: the `## Completion Goal` section up to the next H2, CRLF as LF,
/// trailing spaces removed from each line, leading and trailing blank lines removed, joined by `\n`.
pub fn completion_goal(body: &str) -> Option<String> {
    let body = body.replace("\r\n", "\n");
    let mut lines = body.lines();
    lines
        .by_ref()
        .find(|l| l.trim_end() == "## Completion Goal")?;
    let section: Vec<&str> = lines
        .take_while(|l| !(l.starts_with("## ") || *l == "##"))
        .map(str::trim_end)
        .collect();
    let start = section.iter().position(|l| !l.is_empty())?;
    let end = section.iter().rposition(|l| !l.is_empty())?;
    Some(section[start..=end].join("\n"))
}

/// SHA-256 of the Completion Goal's UTF-8 bytes, hex.
pub fn goal_hash(goal: &str) -> String {
    crate::hash::bytes(goal.as_bytes())
}

/// A criterion whose `(evidence: …)` names no artifact kind.
#[derive(Debug, thiserror::Error)]
#[error(
    "criterion {id}: `(evidence: {kind})` is not an artifact kind (screenshot, recording, sr-transcript, api-trace, metric, report)"
)]
pub struct UnknownEvidence {
    id: u32,
    kind: String,
}

/// Why a Ready snapshot cannot be trusted, with its file.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{file}: no `<!-- aayudha:ready {{…}} -->` line: not a Ready snapshot")]
    NoMarker { file: String },
    #[error("{file}: the aayudha:ready line: {error}")]
    Meta {
        file: String,
        error: serde_json::Error,
    },
    #[error("{file}: no `## Completion Goal` section")]
    NoGoal { file: String },
    #[error(
        "{file}: the Completion Goal hashes to {hash}, but the snapshot says {said}: the snapshot was edited"
    )]
    Edited {
        file: String,
        hash: String,
        said: String,
    },
    #[error("{file}: {error}")]
    Criterion {
        file: String,
        error: UnknownEvidence,
    },
    #[error("{file}: the Completion Goal has no numbered criteria")]
    NoCriteria { file: String },
}

/// A snapshot that is not one, or was edited, is the user's to fix (exit 2).
impl crate::failure::Diagnose for SnapshotError {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Usage
    }
}

/// The numbered criteria of a Completion Goal.
pub fn criteria(goal: &str) -> Result<Vec<Criterion>, UnknownEvidence> {
    let mut found = Vec::new();
    for line in goal.lines() {
        let Some((number, text)) = line.trim_start().split_once(". ") else {
            continue;
        };
        let Ok(id) = number.parse::<u32>() else {
            continue;
        };
        let text = text.trim();
        let (text, evidence) = match text.rsplit_once("(evidence:") {
            Some((before, kind)) if kind.trim_end().ends_with(')') => {
                let kind = kind.trim_end().trim_end_matches(')').trim();
                let evidence: ArtifactKind = serde_json::from_value(serde_json::Value::String(
                    kind.to_string(),
                ))
                .map_err(|_| UnknownEvidence {
                    id,
                    kind: kind.to_string(),
                })?;
                (before.trim_end(), evidence)
            }
            _ => (text, ArtifactKind::ApiTrace),
        };
        found.push(Criterion {
            id,
            text: text.to_string(),
            evidence,
        });
    }
    Ok(found)
}

/// Parses a Ready snapshot file and checks that its Completion Goal still hashes to what it says.
pub fn parse(text: &str, file: &str) -> Result<Snapshot, SnapshotError> {
    let marker = "<!-- aayudha:ready ";
    let file = || file.to_string();
    let meta_text = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(marker)
                .and_then(|rest| rest.strip_suffix("-->"))
        })
        .ok_or_else(|| SnapshotError::NoMarker { file: file() })?;
    let meta: Meta =
        serde_json::from_str(meta_text.trim()).map_err(|error| SnapshotError::Meta {
            file: file(),
            error,
        })?;
    let goal = completion_goal(text).ok_or_else(|| SnapshotError::NoGoal { file: file() })?;
    let hash = goal_hash(&goal);
    if hash != meta.completion_goal_hash {
        return Err(SnapshotError::Edited {
            file: file(),
            hash,
            said: meta.completion_goal_hash,
        });
    }
    let criteria = criteria(&goal).map_err(|error| SnapshotError::Criterion {
        file: file(),
        error,
    })?;
    if criteria.is_empty() {
        return Err(SnapshotError::NoCriteria { file: file() });
    }
    Ok(Snapshot { meta, criteria })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worked_example_hashes_as_the_spec_says() {
        let body = "Intro\r\n\r\n## Completion Goal\r\n\r\n1. Adding two numbers gives their sum.  \r\n2. Adding zero keeps the number.\r\n3. Multiplication exists.\r\n\r\n## Notes\r\nx\r\n";
        let goal = completion_goal(body).expect("goal");
        assert_eq!(
            goal,
            "1. Adding two numbers gives their sum.\n2. Adding zero keeps the number.\n3. Multiplication exists."
        );
        assert_eq!(
            goal_hash(&goal),
            "8372bf1e543470d0824a6cec997a2e36b9206eca3075ca93c408ed20133a5862"
        );
    }

    #[test]
    fn criteria_carry_their_evidence_kind() {
        let c =
            criteria("1. The page shows the total. (evidence: screenshot)\n2. The API answers.")
                .expect("criteria");
        assert_eq!(
            c[0],
            Criterion {
                id: 1,
                text: "The page shows the total.".into(),
                evidence: ArtifactKind::Screenshot
            }
        );
        assert_eq!(c[1].evidence, ArtifactKind::ApiTrace);
        assert!(criteria("1. x (evidence: photo)").is_err());
    }

    #[test]
    fn an_edited_snapshot_is_refused() {
        let goal = "1. A thing works.";
        let good = format!(
            "# Story 3: t\n\n<!-- aayudha:ready {{\"story\": 3, \"completion_goal_hash\": \"{}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{goal}\n",
            goal_hash(goal)
        );
        let snapshot = parse(&good, "ready.md").expect("valid");
        assert_eq!(snapshot.meta.labels, ["type:bug"]);
        assert!(
            parse(&good.replace("works", "worked"), "ready.md")
                .expect_err("edited")
                .to_string()
                .contains("the snapshot was edited")
        );
    }
}
