//! The one comment aayu keeps on a pull request (`reference/security.md`, "The sticky comment"): found by
//! its hidden marker **and** its author being the token's own identity, across every page; edited in
//! place; duplicates from a race deleted, the lowest id kept; never overwritten by an older run.

use http::Method;
use serde_json::{Value, json};

use crate::github::{Client, GitHubError};

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

/// User-controlled text made harmless in a comment: it cannot close an HTML comment or @-mention anyone.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('@', "&#64;")
}

/// The run a comment records, from its hidden line.
fn recorded_run(body: &str) -> Option<u64> {
    body.lines()
        .find_map(|l| l.strip_prefix("<!-- aayudha:run "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Creates or updates the proof comment of pull request `pr` in `repo` as `me` (the token's login; a
/// workflow token's is `github-actions[bot]`). A comment of a newer run is never overwritten.
pub fn upsert(
    client: &Client,
    repo: &str,
    pr: u64,
    me: &str,
    run_id: u64,
    body: &str,
) -> Result<Outcome, GitHubError> {
    let path = format!("/repos/{repo}/issues/{pr}/comments");
    let ours = |client: &Client| -> Result<Vec<(u64, String)>, GitHubError> {
        let mut found: Vec<(u64, String)> = client
            .list(&path, &format!("the comments of pull request #{pr}"))?
            .into_iter()
            .filter(|c| c.pointer("/user/login").and_then(Value::as_str) == Some(me))
            .filter_map(|c| {
                let text = c.get("body").and_then(Value::as_str)?.to_string();
                text.starts_with(MARKER)
                    .then_some((c.get("id")?.as_u64()?, text))
            })
            .collect();
        found.sort();
        Ok(found)
    };
    let what = format!("a comment on pull request #{pr}");
    let mut existing = ours(client)?;
    let outcome = match existing.first().cloned() {
        None => {
            let created = client.json(Method::POST, &path, Some(&json!({"body": body})), &what)?;
            let id = created
                .get("id")
                .and_then(Value::as_u64)
                .unwrap_or_default();
            // Another run may have created one at the same moment: keep the lowest id, delete the rest.
            existing = ours(client)?;
            match existing.first() {
                Some((lowest, _)) if *lowest != id => {
                    client.json(
                        Method::PATCH,
                        &format!("/repos/{repo}/issues/comments/{lowest}"),
                        Some(&json!({"body": body})),
                        &what,
                    )?;
                    Outcome::Updated(*lowest)
                }
                _ => Outcome::Created(id),
            }
        }
        Some((id, text)) => {
            if recorded_run(&text).is_some_and(|theirs| theirs > run_id) {
                Outcome::KeptNewer(id)
            } else {
                match client.json(
                    Method::PATCH,
                    &format!("/repos/{repo}/issues/comments/{id}"),
                    Some(&json!({"body": body})),
                    &what,
                ) {
                    Ok(_) => Outcome::Updated(id),
                    // Deleted between the list and the edit: write a new one.
                    Err(GitHubError::NotFound { .. }) => {
                        let created = client.json(
                            Method::POST,
                            &path,
                            Some(&json!({"body": body})),
                            &what,
                        )?;
                        existing.retain(|(other, _)| *other != id);
                        Outcome::Created(
                            created
                                .get("id")
                                .and_then(Value::as_u64)
                                .unwrap_or_default(),
                        )
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
        match client.send(
            Method::DELETE,
            &format!("/repos/{repo}/issues/comments/{id}"),
            None,
            &what,
        ) {
            Ok(_) | Err(GitHubError::NotFound { .. }) => {}
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
        assert_eq!(recorded_run(&body), Some(7));
    }

    #[test]
    fn user_text_cannot_close_the_marker_or_mention() {
        let evil = "--> <!-- aayudha:proof --> @octocat";
        let safe = escape(evil);
        assert!(
            !safe.contains("-->") && !safe.contains("<!--") && !safe.contains('@'),
            "{safe}"
        );
    }
}
