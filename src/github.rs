//! The GitHub REST client: one `Client` over octocrab, built from `GITHUB_API_URL` and a redacted token,
//! that reads every page, retries what is worth retrying and turns refusals into typed errors with a hint.

use std::time::Duration;

use http::{HeaderMap, Method};
use serde_json::Value;

mod actions;
mod issues;
mod repos;

pub use actions::{Job, RunArtifact, RunFilter, Workflow, WorkflowRun};
pub use issues::IssueFilter;
pub use repos::{
    AttestationItem, Branch, Commit, CommitStatus, Issue, IssueComment, NewStatus, Pull,
    Repository, Review,
};

/// A token whose `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }

    /// The secret itself, for the one place that must send it (git's HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A repository on GitHub, `owner/name`, checked: two parts of letters, digits, `-`, `_` and `.`. Every
/// method of the client takes one, so a path in a URL is never built from an unchecked string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RepoSlug(String);

impl RepoSlug {
    /// `owner/name`, or `None` when it is not one.
    pub fn parse(text: &str) -> Option<RepoSlug> {
        let mut parts = text.split('/');
        let ok = |p: Option<&str>| {
            p.is_some_and(|p| {
                !p.is_empty()
                    && p != "."
                    && p != ".."
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            })
        };
        (ok(parts.next()) && ok(parts.next()) && parts.next().is_none())
            .then(|| RepoSlug(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RepoSlug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What GitHub refused, and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GitHubError {
    #[error("GitHub refused the token (401) for {what}")]
    Unauthorized { what: String },
    #[error("GitHub forbids {what} (403): {message}")]
    Forbidden { what: String, message: String },
    #[error("GitHub has no {what} (404)")]
    NotFound { what: String },
    #[error("GitHub refused {what} as a conflict (409): {message}")]
    Conflict { what: String, message: String },
    #[error("{what} is gone (410): {message}")]
    Gone { what: String, message: String },
    #[error("GitHub could not process {what} (422): {message}")]
    Unprocessable { what: String, message: String },
    #[error("GitHub answered {status} for {what}: {message}")]
    Status {
        what: String,
        status: u16,
        message: String,
    },
    #[error("cannot reach GitHub for {what}: {message}")]
    Transport { what: String, message: String },
    #[error("GitHub's rate limit held {what} back {attempts} times")]
    RateLimited { what: String, attempts: u32 },
}

impl GitHubError {
    /// How to fix it, for the `hint:` line.
    pub fn hint(&self) -> Option<String> {
        match self {
            GitHubError::Unauthorized { .. } => Some("check that the token is set and has not expired".into()),
            GitHubError::Forbidden { what, .. } if what.contains("attestations") => {
                Some("the token cannot read the repository's attestations: a fine-grained token needs the Attestations: read permission (a classic token's `repo` scope has it)".into())
            }
            GitHubError::Forbidden { what, .. } if what.contains("issue") || what.contains("label") => {
                Some("the token cannot write issues: give it `issues: write` (a job's `permissions:`, or a fine-grained token's Issues permission)".into())
            }
            GitHubError::Forbidden { what, .. } if what.contains("comment") || what.contains("pull") => {
                Some("the token cannot write to pull requests: add `pull-requests: write` to the job's permissions".into())
            }
            GitHubError::Forbidden { what, .. } if what.contains("status") => {
                Some("the token cannot set commit statuses: add `statuses: write` to the job's permissions".into())
            }
            GitHubError::Forbidden { what, .. } if what.contains("the ref") => {
                Some("the token cannot change branches: add `contents: write` to the job's permissions".into())
            }
            GitHubError::Forbidden { .. } => Some("check the job's `permissions:` and the token's scopes".into()),
            GitHubError::NotFound { .. } => Some("check the repository, the number, and that the token can see the repository".into()),
            GitHubError::Gone { .. } => Some("an expired artifact cannot be downloaded: run the workflow again".into()),
            GitHubError::RateLimited { .. } => Some("wait and run again; GitHub's secondary rate limit is per token".into()),
            _ => None,
        }
    }

    pub fn is_forbidden(&self) -> bool {
        matches!(self, GitHubError::Forbidden { .. })
    }
}

/// How many times one request is tried, and the longest wait GitHub may ask for between tries.
/// How GitHub's requests are retried.
const RETRY: crate::retry::Policy = crate::retry::NETWORK;

/// The client. Blocking to its callers: it owns a small runtime for octocrab.
pub struct Client {
    octo: octocrab::Octocrab,
    runtime: tokio::runtime::Runtime,
    api: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

/// One answer: status, headers, body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Client {
    /// A client for `api_url` (`GITHUB_API_URL`, default github.com's: `settings::github::DEFAULT_API_URL`).
    pub fn new(api_url: &str, token: &Token) -> Result<Client, GitHubError> {
        let api = api_url.trim_end_matches('/').to_string();
        let transport = |message: String| GitHubError::Transport {
            what: "the client".into(),
            message,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| transport(e.to_string()))?;
        let octo = {
            let _guard = runtime.enter();
            octocrab::Octocrab::builder()
                .base_uri(api.as_str())
                .map_err(|e| transport(e.to_string()))?
                .personal_token(token.0.clone())
                .build()
                .map_err(|e| transport(e.to_string()))?
        };
        Ok(Client { octo, runtime, api })
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.api, path)
        }
    }

    /// Sends one request, retrying 5xx answers, dropped connections and secondary rate limits (403/429
    /// with `retry-after`, or `x-ratelimit-remaining: 0` with `x-ratelimit-reset`) with bounded backoff.
    pub fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Answer, GitHubError> {
        let url = self.url(path);
        let mut limited = 0;
        for attempt in 0..RETRY.attempts {
            let result = self.runtime.block_on(async {
                let response = match method {
                    Method::GET => self.octo._get(url.as_str()).await,
                    Method::POST => self.octo._post(url.as_str(), body).await,
                    Method::PATCH => self.octo._patch(url.as_str(), body).await,
                    Method::PUT => self.octo._put(url.as_str(), body).await,
                    Method::DELETE => self.octo._delete(url.as_str(), body).await,
                    _ => return Err(format!("unsupported method {method}")),
                }
                .map_err(|e| e.to_string())?;
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let text = self
                    .octo
                    .body_to_string(response)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Answer {
                    status,
                    headers,
                    body: text,
                })
            });
            match result {
                Err(_) if RETRY.another_after(attempt) => RETRY.wait(attempt, None),
                Err(message) => {
                    return Err(GitHubError::Transport {
                        what: what.to_string(),
                        message,
                    });
                }
                Ok(answer) => {
                    if let Some(wait) = rate_limit_wait(&answer) {
                        limited += 1;
                        if RETRY.another_after(attempt) {
                            RETRY.wait(attempt, Some(wait));
                            continue;
                        }
                        return Err(GitHubError::RateLimited {
                            what: what.to_string(),
                            attempts: limited,
                        });
                    }
                    if answer.status >= 500 && RETRY.another_after(attempt) {
                        RETRY.wait(attempt, None);
                        continue;
                    }
                    return check(answer, what);
                }
            }
        }
        Err(GitHubError::Transport {
            what: what.to_string(),
            message: "no attempt left".into(),
        })
    }

    /// A JSON answer.
    pub fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Value, GitHubError> {
        let answer = self.send(method, path, body, what)?;
        if answer.body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&answer.body).map_err(|e| GitHubError::Status {
            what: what.to_string(),
            status: answer.status,
            message: format!("not JSON: {e}"),
        })
    }

    /// Every item of a list endpoint: `per_page=100`, following `Link: <…>; rel="next"`.
    pub fn list(&self, path: &str, what: &str) -> Result<Vec<Value>, GitHubError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut next = Some(format!("{path}{sep}per_page=100"));
        let mut items = Vec::new();
        let mut pages = 0;
        while let Some(page) = next.take() {
            pages += 1;
            if pages > 1000 {
                return Err(GitHubError::Status {
                    what: what.to_string(),
                    status: 200,
                    message: "more than 1000 pages".into(),
                });
            }
            let answer = self.send(Method::GET, &page, None, what)?;
            let value: Value =
                serde_json::from_str(&answer.body).map_err(|e| GitHubError::Status {
                    what: what.to_string(),
                    status: answer.status,
                    message: format!("not JSON: {e}"),
                })?;
            match value {
                Value::Array(list) => items.extend(list),
                other => items.push(other),
            }
            next = self.next_page(&answer, what)?;
        }
        Ok(items)
    }

    /// The answer's `Link: rel="next"`, when there is one. It must be under the API's own address: the
    /// token goes with every page, and never to another host.
    pub(crate) fn next_page(
        &self,
        answer: &Answer,
        what: &str,
    ) -> Result<Option<String>, GitHubError> {
        let Some(link) = answer
            .headers
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(next_link)
        else {
            return Ok(None);
        };
        if link.starts_with(&format!("{}/", self.api)) {
            Ok(Some(link))
        } else {
            Err(GitHubError::Status {
                what: what.to_string(),
                status: answer.status,
                message: format!(
                    "the next page is at `{}`, outside {}",
                    crate::log::controls_escaped(&link),
                    self.api
                ),
            })
        }
    }

    /// Whether the API itself is plain HTTP on a loopback address (a local test server).
    pub(crate) fn api_is_loopback_http(&self) -> bool {
        repos::is_loopback_http(&self.api)
    }

    /// Every item of a list endpoint whose pages wrap the items in an object
    /// (`{"total_count": …, "<key>": […]}`, as the Actions endpoints do).
    pub fn list_in(&self, path: &str, key: &str, what: &str) -> Result<Vec<Value>, GitHubError> {
        Ok(self
            .list(path, what)?
            .into_iter()
            .flat_map(|mut page| match page.get_mut(key).map(Value::take) {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            })
            .collect())
    }

    /// The token's user (login and id), or `None` when `GET /user` is forbidden (a workflow token).
    pub fn user(&self) -> Result<Option<(String, u64)>, GitHubError> {
        match self.json(Method::GET, "/user", None, "the token's user") {
            Ok(user) => Ok(Some((text(&user, "/login"), number(&user, "/id")))),
            Err(GitHubError::Forbidden { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The login the token acts as, or `None` when `GET /user` is forbidden (a workflow token, which acts
    /// as `github-actions[bot]`).
    pub fn login(&self) -> Result<Option<String>, GitHubError> {
        match self.json(Method::GET, "/user", None, "the token's user") {
            Ok(user) => Ok(user
                .get("login")
                .and_then(Value::as_str)
                .map(str::to_string)),
            Err(GitHubError::Forbidden { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The string at `pointer`, or empty.
fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The string at `pointer`, or `None` when absent or null.
fn maybe(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn number(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_default()
}

/// Percent-encodes a path segment or query value (RFC 3986 unreserved characters stay as they are).
pub(crate) fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A GET outside the API with `agent` (built without the token): the answer's status and at most
/// `limit + 1` bytes of its body, so that the caller can tell an oversized one.
fn download(
    agent: &ureq::Agent,
    url: &str,
    what: &str,
    limit: u64,
) -> Result<(u16, Vec<u8>), GitHubError> {
    let transport = |message: String| GitHubError::Transport {
        what: what.to_string(),
        message,
    };
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| transport(e.to_string()))?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(response.body_mut().as_reader(), limit + 1),
        &mut bytes,
    )
    .map_err(|e| transport(e.to_string()))?;
    Ok((status, bytes))
}

/// Maps an answer's status to a typed error.
fn check(answer: Answer, what: &str) -> Result<Answer, GitHubError> {
    let parsed = serde_json::from_str::<Value>(&answer.body).ok();
    let mut message = parsed
        .as_ref()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| answer.body.chars().take(200).collect());
    // A 422's `errors` say what failed validation: `{"resource": "Label", "field": "name", "code":
    // "already_exists"}`.
    let details: Vec<String> = parsed
        .as_ref()
        .and_then(|v| v.get("errors").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .map(|e| {
            ["resource", "field", "code", "message"]
                .iter()
                .filter_map(|k| e.get(*k).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|d| !d.is_empty())
        .collect();
    if !details.is_empty() {
        message = format!("{message} ({})", details.join("; "));
    }
    let what = what.to_string();
    match answer.status {
        200..=399 => Ok(answer),
        401 => Err(GitHubError::Unauthorized { what }),
        403 => Err(GitHubError::Forbidden { what, message }),
        404 => Err(GitHubError::NotFound { what }),
        409 => Err(GitHubError::Conflict { what, message }),
        410 => Err(GitHubError::Gone { what, message }),
        422 => Err(GitHubError::Unprocessable { what, message }),
        status => Err(GitHubError::Status {
            what,
            status,
            message,
        }),
    }
}

/// How long a rate-limited answer asks to wait, or `None` when it is not rate-limited.
fn rate_limit_wait(answer: &Answer) -> Option<Duration> {
    if answer.status != 403 && answer.status != 429 {
        return None;
    }
    let header = |name: &str| {
        answer
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(seconds) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if header("x-ratelimit-remaining") == Some("0") {
        let reset = header("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok())?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        return Some(Duration::from_secs(reset.saturating_sub(now).max(1)));
    }
    if answer.status == 429 || answer.body.contains("secondary rate limit") {
        return Some(Duration::from_secs(60));
    }
    None
}

/// The `rel="next"` URL of a `Link` header.
pub(crate) fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

/// A GitHub refusal: exit 1, with the hint of what to grant or fix.
impl crate::failure::Diagnose for GitHubError {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Failure
    }

    fn hint(&self) -> Option<String> {
        GitHubError::hint(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slug_is_two_plain_parts() {
        assert_eq!(
            RepoSlug::parse("octo/shop.rs").map(|s| s.to_string()),
            Some("octo/shop.rs".to_string())
        );
        for bad in [
            "octo",
            "octo/",
            "/shop",
            "a/b/c",
            "../shop",
            "octo/..",
            "oc to/shop",
            "o/s?x",
        ] {
            assert_eq!(RepoSlug::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_next_page_comes_from_the_link_header() {
        let link = r#"<https://ghe.example/api/v3/repositories/1/issues/2/comments?per_page=100&page=2>; rel="next", <https://ghe.example/api/v3/repositories/1/issues/2/comments?per_page=100&page=3>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://ghe.example/api/v3/repositories/1/issues/2/comments?per_page=100&page=2")
        );
        assert_eq!(next_link(r#"<https://x/y?page=1>; rel="prev""#), None);
    }

    #[test]
    fn a_token_never_shows() {
        assert_eq!(
            format!("{:?}", Token::new("ghs_secret")),
            "Token(<redacted>)"
        );
    }

    #[test]
    fn forbidden_writes_say_which_permission_is_missing() {
        let e = GitHubError::Forbidden {
            what: "a comment on pull request #3".into(),
            message: "Resource not accessible by integration".into(),
        };
        assert!(e.hint().expect("hint").contains("pull-requests: write"));
    }
}
