//! The event payload (`GITHUB_EVENT_PATH`), parsed once, typed: the pull request of a `pull_request` or
//! `pull_request_target` event, for the gate (which needs all of it) and the comment job (which needs its
//! number and head). A field of the wrong JSON type is read as absent, so the error names the field.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use crate::failure::Failure;

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

/// A read event payload.
#[derive(Debug, Clone)]
pub struct Event {
    path: PathBuf,
    pull_request: Option<Pull>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Payload {
    #[serde(default, deserialize_with = "lenient")]
    pull_request: Option<Pull>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Pull {
    #[serde(default, deserialize_with = "lenient")]
    number: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    head: Option<Side>,
    #[serde(default, deserialize_with = "lenient")]
    base: Option<Side>,
    #[serde(default, deserialize_with = "lenient")]
    body: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    html_url: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Side {
    #[serde(default, deserialize_with = "lenient")]
    sha: Option<String>,
    #[serde(rename = "ref", default, deserialize_with = "lenient")]
    reference: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    repo: Option<Repository>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Repository {
    #[serde(default, deserialize_with = "lenient")]
    full_name: Option<String>,
}

/// A field of the wrong type (or `null`) is absent.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

impl Event {
    /// Reads and parses the payload.
    pub fn read(path: &Path) -> Result<Event, Failure> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read the event payload `{}`",
                path.display()
            ))
            .caused_by(e)
        })?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Failure::usage(format!(
                "the event payload `{}` is not JSON (line {}, column {})",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        // JSON that is not an object has no pull request: the errors then name the field.
        let payload: Payload = serde_json::from_value(value).unwrap_or_default();
        Ok(Event {
            path: path.to_path_buf(),
            pull_request: payload.pull_request,
        })
    }

    /// The number of the event's pull request, when it has one.
    pub fn pr_number(&self) -> Option<u64> {
        self.pull_request.as_ref()?.number
    }

    /// The head SHA of the event's pull request, when it is a full SHA.
    pub fn head_sha(&self) -> Option<String> {
        let sha = self.pull_request.as_ref()?.head.as_ref()?.sha.as_ref()?;
        crate::git::is_full_sha(sha).then(|| sha.to_ascii_lowercase())
    }

    /// The pull request, whole: every field the gate needs, or an error naming the one missing.
    pub fn pull_request(&self) -> Result<PullRequest, Failure> {
        let path = self.path.display();
        let pr = self.pull_request.as_ref().ok_or_else(|| {
            Failure::usage(format!("the event payload `{path}` has no `pull_request`"))
                .with_hint("the gate runs on `pull_request_target` (or `pull_request`); set the input `mode` for other events")
        })?;
        let missing = |field: &str| {
            Failure::usage(format!(
                "the event payload `{path}` has no `pull_request.{field}`"
            ))
        };
        let sha = |side: Option<&Side>, field: &str| -> Result<String, Failure> {
            let value = side
                .and_then(|s| s.sha.clone())
                .ok_or_else(|| missing(field))?;
            if crate::git::is_full_sha(&value) {
                Ok(value.to_ascii_lowercase())
            } else {
                Err(Failure::usage(format!(
                    "`pull_request.{field}` in the event payload is not a commit SHA: `{value}`"
                )))
            }
        };
        let (head, base) = (pr.head.as_ref(), pr.base.as_ref());
        Ok(PullRequest {
            number: pr.number.ok_or_else(|| missing("number"))?,
            head_sha: sha(head, "head.sha")?,
            base_sha: sha(base, "base.sha")?,
            base_ref: base
                .and_then(|b| b.reference.clone())
                .ok_or_else(|| missing("base.ref"))?,
            body: pr.body.clone(),
            head_repo: head.and_then(|h| h.repo.as_ref()?.full_name.clone()),
            base_repo: base
                .and_then(|b| b.repo.as_ref()?.full_name.clone())
                .ok_or_else(|| missing("base.repo.full_name"))?,
            html_url: pr.html_url.clone().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: serde_json::Value) -> Event {
        let dir = tempfile::tempdir().expect("temp");
        let path = dir.path().join("event.json");
        std::fs::write(&path, json.to_string()).expect("write");
        Event::read(&path).expect("parses")
    }

    #[test]
    fn a_payload_without_shas_is_refused_naming_the_field() {
        let e = event(
            serde_json::json!({"pull_request": {"number": 3, "head": {"sha": "x"}, "base": {"sha": "1111111111111111111111111111111111111111"}}}),
        );
        let err = e.pull_request().expect_err("bad sha");
        assert!(
            err.message.contains("pull_request.head.sha"),
            "{}",
            err.message
        );
        assert_eq!(e.pr_number(), Some(3));
        assert_eq!(e.head_sha(), None);
    }

    #[test]
    fn a_field_of_the_wrong_type_is_missing_by_name() {
        let e = event(serde_json::json!({"pull_request": {"number": "3", "head": {"sha": 7}}}));
        let err = e.pull_request().expect_err("no number");
        assert!(
            err.message.ends_with("has no `pull_request.number`"),
            "{}",
            err.message
        );
        assert_eq!(e.pr_number(), None);
    }

    #[test]
    fn json_that_is_no_object_has_no_pull_request() {
        let e = event(serde_json::json!([1, 2]));
        let err = e.pull_request().expect_err("no pull request");
        assert!(
            err.message.ends_with("has no `pull_request`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_whole_pull_request_reads() {
        let sha = "A".repeat(40);
        let e = event(
            serde_json::json!({"pull_request": {"number": 9, "body": null,
            "head": {"sha": sha, "repo": {"full_name": "o/fork"}},
            "base": {"sha": "b".repeat(40), "ref": "main", "repo": {"full_name": "o/r"}}}}),
        );
        let pr = e.pull_request().expect("whole");
        assert_eq!(pr.head_sha, "a".repeat(40));
        assert!(pr.is_fork());
        assert_eq!(pr.body, None);
        assert_eq!(e.head_sha().as_deref(), Some(pr.head_sha.as_str()));
    }
}
