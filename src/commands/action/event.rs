//! The event payload (`GITHUB_EVENT_PATH`): the pull request of a `pull_request` or `pull_request_target`
//! event, and the story its body names.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::commands::Failure;

/// What the gate takes from the event — the head and base from `pull_request.head.sha` and `.base.sha`,
/// never `GITHUB_SHA`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub base_ref: String,
    /// `None` when GitHub sends `null`.
    pub body: Option<String>,
    /// `owner/name` of the head's repository; differs from `base_repo` for a fork, `None` when deleted.
    pub head_repo: Option<String>,
    pub base_repo: String,
    pub html_url: String,
}

impl PullRequest {
    pub fn is_fork(&self) -> bool {
        self.head_repo.as_deref() != Some(self.base_repo.as_str())
    }
}

/// Reads the event payload.
pub fn read(path: &Path) -> Result<Value, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(format!(
            "cannot read the event payload `{}`",
            path.display()
        ))
        .caused_by(e)
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "the event payload `{}` is not JSON (line {}, column {})",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// The pull request of a `pull_request`/`pull_request_target` payload.
pub fn pull_request(event: &Value, path: &Path) -> Result<PullRequest, Failure> {
    let pr = event.get("pull_request").ok_or_else(|| {
        Failure::usage(format!(
            "the event payload `{}` has no `pull_request`",
            path.display()
        ))
        .with_hint("the gate runs on `pull_request_target` (or `pull_request`); set the input `mode` for other events")
    })?;
    let field = |pointer: &str| -> Result<String, Failure> {
        pr.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                Failure::usage(format!(
                    "the event payload `{}` has no `pull_request{}`",
                    path.display(),
                    pointer.replace('/', ".")
                ))
            })
    };
    let sha = |pointer: &str| -> Result<String, Failure> {
        let value = field(pointer)?;
        if value.len() == 40 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(value.to_ascii_lowercase())
        } else {
            Err(Failure::usage(format!(
                "`pull_request{}` in the event payload is not a commit SHA: `{value}`",
                pointer.replace('/', ".")
            )))
        }
    };
    Ok(PullRequest {
        number: pr.get("number").and_then(Value::as_u64).ok_or_else(|| {
            Failure::usage(format!(
                "the event payload `{}` has no `pull_request.number`",
                path.display()
            ))
        })?,
        head_sha: sha("/head/sha")?,
        base_sha: sha("/base/sha")?,
        base_ref: field("/base/ref")?,
        body: pr.get("body").and_then(Value::as_str).map(str::to_string),
        head_repo: pr
            .pointer("/head/repo/full_name")
            .and_then(Value::as_str)
            .map(str::to_string),
        base_repo: field("/base/repo/full_name")?,
        html_url: field("/html_url").unwrap_or_default(),
    })
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
    fn a_payload_without_shas_is_refused_naming_the_field() {
        let event = serde_json::json!({"pull_request": {"number": 3, "head": {"sha": "x"}, "base": {"sha": "1111111111111111111111111111111111111111"}}});
        let e = pull_request(&event, Path::new("event.json")).expect_err("bad sha");
        assert!(e.message.contains("pull_request.head.sha"), "{}", e.message);
    }
}
