//! The story a change is for: its number, its frozen Completion Goal (the Ready snapshot on the ledger
//! branch, `ready.rs`), the evidence map at the change's head (`evidence_map.rs`), and what the merge gate
//! knows of the pull request and the run ([`Binding`]). Every place that names a story's snapshot builds its
//! path with [`ready_path`].

pub(crate) mod approval;
pub(crate) mod evidence_map;
pub(crate) mod ready;

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::failure::Failure;
use crate::git::Repo;
use evidence_map::EvidenceMap;
use ready::Snapshot;

/// A story, its frozen Completion Goal and, when the change has one, its evidence map.
pub struct Story {
    pub number: u64,
    pub snapshot: Snapshot,
    /// `.aayudha/evidence/<story>.toml` at the change's head; `None` when the change has none.
    pub evidence: Option<EvidenceMap>,
}

/// The pack's binding to a pull request and a run, filled in by the merge gate from the event and the API —
/// never from anything the pull request's code wrote.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    pub pr: u64,
    /// The story's labels now (the API), which decide red-on-base in the action.
    pub story_labels: Option<Vec<String>>,
    /// The hash of the story's Completion Goal now (the API).
    pub completion_goal_hash: Option<String>,
    /// The gate's workflow file (`.github/workflows/…`) and run.
    pub workflow: String,
    pub run_id: u64,
    pub run_url: String,
    pub pr_url: String,
}

/// The Ready snapshot of a story on the ledger branch.
pub fn ready_path(story: u64) -> String {
    format!("specs/{story}/ready.md")
}

impl Story {
    /// The story with its snapshot and the evidence map at `head` (a map that does not parse is the
    /// user's to fix: its file and line, exit 2).
    pub fn at(repo: &Repo, number: u64, snapshot: Snapshot, head: &str) -> Result<Story, Failure> {
        let file = evidence_map::path(number);
        let evidence = match repo.file_at(head, &file).map_err(Failure::from)? {
            Some(bytes) => Some(evidence_map::parse(
                &String::from_utf8_lossy(&bytes),
                &file,
            )?),
            None => None,
        };
        Ok(Story {
            number,
            snapshot,
            evidence,
        })
    }
}

/// A story's Ready snapshot: from `file` (`--ready`, relative to `start`) or from `specs/<story>/ready.md`
/// on the ledger branch (local or origin's); it must be the snapshot of `story`.
pub fn read_snapshot(
    repo: &Repo,
    story: u64,
    file: Option<&Path>,
    start: &Path,
    branch: &str,
) -> Result<Snapshot, Failure> {
    let (text, label) = match file {
        Some(file) => (
            std::fs::read_to_string(start.join(file)).map_err(|e| {
                Failure::usage(format!(
                    "cannot read the Ready snapshot `{}`",
                    file.display()
                ))
                .caused_by(e)
            })?,
            file.display().to_string(),
        ),
        None => {
            let path = ready_path(story);
            let bytes = repo.file_on_branch(branch, &path).ok_or_else(|| {
                Failure::usage(format!("story #{story} has no Ready snapshot: no `{path}` on the `{branch}` branch (local or origin's)"))
                    .with_hint(format!("fetch it (`git fetch origin {branch}`), or pass `--ready FILE`"))
            })?;
            (
                String::from_utf8_lossy(&bytes).into_owned(),
                format!("{branch}:{path}"),
            )
        }
    };
    let snapshot = ready::parse(&text, &label)?;
    if snapshot.meta.story != story {
        return Err(Failure::usage(format!(
            "{label} is the Ready snapshot of story #{}, not #{story}",
            snapshot.meta.story
        )));
    }
    Ok(snapshot)
}

/// Why a story's Ready snapshot on GitHub cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotOnGitHubError {
    #[error("story #{story} has no Ready snapshot on the `{ledger}` branch: {error}")]
    Missing {
        story: u64,
        ledger: String,
        error: crate::github::GitHubError,
    },
    #[error(transparent)]
    Snapshot(#[from] ready::SnapshotError),
}

/// A story's Ready snapshot on the ledger branch of a repository on GitHub (the contents API).
pub fn snapshot_on_github(
    client: &crate::github::Client,
    repo: &crate::github::RepoSlug,
    ledger: &str,
    story: u64,
) -> Result<Snapshot, SnapshotOnGitHubError> {
    let path = ready_path(story);
    let bytes =
        client
            .file(repo, &path, ledger)
            .map_err(|error| SnapshotOnGitHubError::Missing {
                story,
                ledger: ledger.to_string(),
                error,
            })?;
    Ok(ready::parse(
        &String::from_utf8_lossy(&bytes),
        &format!("{ledger}:{path}"),
    )?)
}

static STORY_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?im)^\s*story:\s*#(\d+)\b").expect("a valid pattern"));

/// GitHub's closing keywords, for an issue of the same repository (`Fixes #12`, `closes: #12`).
static CLOSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:close|closes|closed|fix|fixes|fixed|resolve|resolves|resolved):?\s+#(\d+)\b",
    )
    .expect("a valid pattern")
});

/// The story a pull request body names: a `Story: #N` line first, else the first closing keyword.
pub fn story_in_body(body: &str) -> Option<u64> {
    STORY_LINE
        .captures(body)
        .or_else(|| CLOSING.captures(body))
        .and_then(|c| c[1].parse().ok())
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_story_line_wins_over_a_closing_keyword() {
        assert_eq!(story_in_body("Fixes #12\n\nStory: #131\n"), Some(131));
        assert_eq!(story_in_body("This fixes #12 for good."), Some(12));
        assert_eq!(story_in_body("Resolves: #7"), Some(7));
        assert_eq!(story_in_body("see #12, prefix #3"), None);
        assert_eq!(story_in_body("Story: 12"), None);
        assert_eq!(story_in_body("Fixes #0"), None);
    }

    #[test]
    fn a_ready_path_is_under_specs() {
        assert_eq!(ready_path(131), "specs/131/ready.md");
    }
}
