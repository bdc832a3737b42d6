//! The one comment aayu keeps on a pull request (`reference/security.md`, "The sticky comment"): found by
//! its hidden marker **and** its author being the token's own identity, across every page; edited in
//! place; duplicates from a race deleted, the lowest id kept; never overwritten by an older run.

use crate::github::{Client, GitHubError, RepoSlug};

/// The hidden marker every proof comment starts with.
pub const MARKER: &str = "<!-- aayudha:proof -->";

/// GitHub's limit on a comment body.
pub const MAX_BODY: usize = 65_536;

/// The identity a workflow token comments as.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// What happened to the comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created(u64),
    Updated(u64),
    /// A newer run's comment is there; it was left alone.
    KeptNewer(u64),
}

/// The body of a comment: the marker, a hidden record of the run, and the text, capped at GitHub's limit
/// with the marker kept.
pub fn body(run_id: u64, head: &str, text: &str) -> String {
    let head_line = format!("{MARKER}\n<!-- aayudha:run {run_id} {head} -->\n");
    let room = MAX_BODY.saturating_sub(head_line.len() + 200);
    let text = if text.chars().count() > room {
        let cut: String = text.chars().take(room).collect();
        format!(
            "{cut}\n\n… (cut at {MAX_BODY} characters: the job summary and the artifact hold everything)"
        )
    } else {
        text.to_string()
    };
    format!("{head_line}{text}")
}

/// The run and head a comment records, from its hidden line.
fn recorded(body: &str) -> Option<(u64, &str)> {
    let mut parts = body
        .lines()
        .find_map(|l| l.strip_prefix("<!-- aayudha:run "))?
        .split_whitespace();
    let run = parts.next()?.parse().ok()?;
    Some((run, parts.next().unwrap_or_default()))
}

/// Whether the comment `theirs` must be kept rather than overwritten by `ours`: it records a newer run, or
/// it proves the pull request's current head and ours does not.
fn keeps_over(theirs: &str, ours: &str, current_head: &str) -> bool {
    let Some((their_run, their_head)) = recorded(theirs) else {
        return false;
    };
    let (our_run, our_head) = recorded(ours).unwrap_or((0, ""));
    their_run > our_run || (their_head == current_head && our_head != current_head)
}

/// Creates or updates the proof comment of pull request `pr` in `repo` as `me` (the token's login; a
/// workflow token's is `github-actions[bot]`) with `body` (made by [`body`]). A comment of a newer run, or
/// one proving the pull request's `current_head` when `body` does not, is never overwritten; a minimized
/// one is left alone and a new one written.
pub fn upsert(
    client: &Client,
    repo: &RepoSlug,
    pr: u64,
    me: &str,
    current_head: &str,
    body: &str,
) -> Result<Outcome, GitHubError> {
    let ours = |client: &Client| -> Result<Vec<(u64, String)>, GitHubError> {
        let mut found: Vec<(u64, String)> = client
            .comments(repo, pr)?
            .into_iter()
            .filter(|c| c.login == me && !c.minimized && c.body.starts_with(MARKER))
            .map(|c| (c.id, c.body))
            .collect();
        found.sort();
        Ok(found)
    };
    let mut existing = ours(client)?;
    let outcome = match existing.first().cloned() {
        None => {
            let id = client.create_comment(repo, pr, body)?.id;
            // Another run may have created one at the same moment: keep the lowest id, delete the rest.
            existing = ours(client)?;
            match existing.first() {
                Some((lowest, _)) if *lowest != id => {
                    client.update_comment(repo, *lowest, body)?;
                    Outcome::Updated(*lowest)
                }
                _ => Outcome::Created(id),
            }
        }
        Some((id, text)) => {
            if keeps_over(&text, body, current_head) {
                Outcome::KeptNewer(id)
            } else {
                match client.update_comment(repo, id, body) {
                    Ok(_) => Outcome::Updated(id),
                    // Deleted between the list and the edit: write a new one.
                    Err(GitHubError::NotFound { .. }) => {
                        existing.retain(|(other, _)| *other != id);
                        Outcome::Created(client.create_comment(repo, pr, body)?.id)
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    };
    let keep = match outcome {
        Outcome::Created(id) | Outcome::Updated(id) | Outcome::KeptNewer(id) => id,
    };
    for (id, _) in existing.iter().filter(|(id, _)| *id != keep) {
        match client.delete_comment(repo, *id) {
            Ok(()) | Err(GitHubError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_body_is_capped_with_the_marker_kept() {
        let text = "x".repeat(200_000);
        let body = body(7, "abc", &text);
        assert!(body.chars().count() <= MAX_BODY);
        assert!(body.starts_with(MARKER));
        assert!(body.ends_with("the job summary and the artifact hold everything)"));
        assert_eq!(recorded(&body), Some((7, "abc")));
    }

    #[test]
    fn a_newer_run_or_the_current_head_is_kept() {
        let newer = body(20, "h2", "");
        assert!(keeps_over(&newer, &body(10, "h1", ""), "h2"));
        assert!(
            keeps_over(&body(5, "h2", ""), &body(10, "h1", ""), "h2"),
            "the current head's proof stays even against a later run on an older head"
        );
        assert!(!keeps_over(&body(5, "h1", ""), &body(10, "h2", ""), "h2"));
        assert!(!keeps_over("no record", &body(10, "h2", ""), "h2"));
    }
}
