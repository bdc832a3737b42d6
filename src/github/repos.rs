//! The repository endpoints aayu uses (SPEC §9): the repository, issues and their comments, pull requests,
//! permissions, commit statuses, contents, refs, branches and commits — each read into the few fields aayu
//! needs, every list through all its pages.

use super::RepoSlug;
use base64::Engine as _;
use http::Method;
use serde_json::{Value, json};

use super::{Client, GitHubError, maybe, number, percent_encode, text};

/// A repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    pub full_name: String,
    pub default_branch: String,
    pub private: bool,
    /// The repository's numeric id, and its owner's: what a Sigstore certificate of its workflows
    /// records (a fork running the same file has others).
    pub id: u64,
    pub owner_id: u64,
    /// `https://github.com/<owner>/<name>` (another origin on GitHub Enterprise Server).
    pub html_url: String,
}

/// The longest a `bundle_url` download may take, from connecting to the last byte.
const BUNDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The most pages of attestations read for one subject (anyone with `attestations: write` can add more;
/// one that verifies is enough).
const ATTESTATION_PAGES: usize = 3;

/// An attestation of a subject, as `GET /repos/{o}/{r}/attestations/{digest}` lists it: its Sigstore
/// bundle inline, or the address to fetch it from (without the token).
#[derive(Debug, Clone, PartialEq)]
pub enum AttestationItem {
    Bundle(Value),
    Url(String),
}

/// A story: an issue's title, body and labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    /// `None` when the issue has no body (GitHub sends `null`).
    pub body: Option<String>,
    pub labels: Vec<String>,
    pub state: String,
    /// A pull request is an issue too; this says which it is.
    pub is_pull_request: bool,
    /// Who opened it.
    pub author: String,
    pub html_url: String,
}

/// A comment on an issue or a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    pub login: String,
    pub body: String,
    pub html_url: String,
    /// Hidden ("minimized") by someone on GitHub.
    pub minimized: bool,
}

/// What aayu needs of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub head_ref: String,
    pub base_ref: String,
    /// `owner/name` of the head's repository; differs from the base's for a fork (`None` when deleted).
    pub head_repo: Option<String>,
    pub author: String,
    pub state: String,
    pub merged: bool,
    pub body: Option<String>,
}

/// A review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub user: String,
    pub state: String,
    pub commit_id: String,
    /// GitHub says the reviewer is a bot (`user.type`).
    pub bot: bool,
}

/// A commit status as GitHub reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitStatus {
    pub state: String,
    pub context: String,
    pub description: Option<String>,
    pub target_url: Option<String>,
    /// Who set it; `None` when GitHub does not say.
    pub creator: Option<String>,
}

/// A commit status to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStatus<'a> {
    /// `error`, `failure`, `pending` or `success`.
    pub state: &'a str,
    pub context: &'a str,
    /// Cut to GitHub's 140 characters.
    pub description: &'a str,
    pub target_url: Option<&'a str>,
}

/// A branch and the commit it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub name: String,
    pub sha: String,
    pub protected: bool,
}

/// A commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    pub message: String,
    pub parents: Vec<String>,
}

/// Percent-encodes each segment of a path, keeping its slashes (refs, branch names and file paths).
fn encode_path(path: &str) -> String {
    path.split('/')
        .map(percent_encode)
        .collect::<Vec<_>>()
        .join("/")
}

pub(super) fn issue_of(v: &Value) -> Issue {
    Issue {
        number: number(v, "/number"),
        title: text(v, "/title"),
        body: maybe(v, "/body"),
        labels: v
            .get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| {
                // A label is an object, or (in older answers) a bare name.
                l.get("name")
                    .and_then(Value::as_str)
                    .or_else(|| l.as_str())
                    .map(str::to_string)
            })
            .collect(),
        state: text(v, "/state"),
        is_pull_request: v.get("pull_request").is_some_and(|p| !p.is_null()),
        author: text(v, "/user/login"),
        html_url: text(v, "/html_url"),
    }
}

fn comment_of(v: &Value) -> IssueComment {
    IssueComment {
        id: number(v, "/id"),
        login: text(v, "/user/login"),
        body: text(v, "/body"),
        html_url: text(v, "/html_url"),
        minimized: v.get("minimized").is_some_and(|m| !m.is_null()),
    }
}

fn pull_of(v: &Value) -> Pull {
    Pull {
        number: number(v, "/number"),
        head_sha: text(v, "/head/sha"),
        base_sha: text(v, "/base/sha"),
        head_ref: text(v, "/head/ref"),
        base_ref: text(v, "/base/ref"),
        head_repo: maybe(v, "/head/repo/full_name"),
        author: text(v, "/user/login"),
        state: text(v, "/state"),
        merged: v.get("merged").and_then(Value::as_bool).unwrap_or(false)
            || v.get("merged_at").is_some_and(|m| !m.is_null()),
        body: maybe(v, "/body"),
    }
}

fn status_of(v: &Value) -> CommitStatus {
    CommitStatus {
        state: text(v, "/state"),
        context: text(v, "/context"),
        description: maybe(v, "/description"),
        target_url: maybe(v, "/target_url"),
        creator: maybe(v, "/creator/login"),
    }
}

fn commit_of(v: &Value) -> Commit {
    Commit {
        sha: text(v, "/sha"),
        message: text(v, "/commit/message"),
        parents: v
            .get("parents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| text(p, "/sha"))
            .collect(),
    }
}

impl Client {
    /// The status contexts the default branch requires: from its rules (`GET /rules/branches/{b}`, which
    /// a read token may see) and, when the token may (admin), its branch protection (`GET
    /// /branches/{b}/protection`). With whether the protection could be read: without it (no admin
    /// access, or no protection — GitHub answers 404 to both) the list may be incomplete.
    pub fn required_status_contexts(
        &self,
        repo: &RepoSlug,
        branch: &str,
    ) -> Result<(Vec<String>, bool), GitHubError> {
        let branch_path = encode_path(branch);
        let mut contexts = Vec::new();
        let mut protection_read = false;
        match self.json(
            Method::GET,
            &format!("/repos/{repo}/rules/branches/{branch_path}"),
            None,
            &format!("the rules of branch {branch}"),
        ) {
            Ok(rules) => {
                for rule in rules.as_array().into_iter().flatten() {
                    if rule["type"] == "required_status_checks" {
                        for check in rule["parameters"]["required_status_checks"]
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            if let Some(context) = check["context"].as_str() {
                                contexts.push(context.to_string());
                            }
                        }
                    }
                }
            }
            Err(GitHubError::NotFound { .. } | GitHubError::Forbidden { .. }) => {}
            Err(e) => return Err(e),
        }
        match self.json(
            Method::GET,
            &format!("/repos/{repo}/branches/{branch_path}/protection"),
            None,
            &format!("the protection of branch {branch}"),
        ) {
            Ok(protection) => {
                protection_read = true;
                let required = &protection["required_status_checks"];
                for context in required["contexts"].as_array().into_iter().flatten() {
                    if let Some(context) = context.as_str() {
                        contexts.push(context.to_string());
                    }
                }
                for check in required["checks"].as_array().into_iter().flatten() {
                    if let Some(context) = check["context"].as_str() {
                        contexts.push(context.to_string());
                    }
                }
            }
            // Not protected (404), or no admin access (403/404): the rules alone.
            Err(GitHubError::NotFound { .. } | GitHubError::Forbidden { .. }) => {}
            Err(e) => return Err(e),
        }
        Ok((contexts, protection_read))
    }

    /// `GET /repos/{o}/{r}`.
    pub fn repository(&self, repo: &RepoSlug) -> Result<Repository, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}"),
            None,
            &format!("the repository {repo}"),
        )?;
        Ok(Repository {
            full_name: text(&v, "/full_name"),
            default_branch: text(&v, "/default_branch"),
            private: v.get("private").and_then(Value::as_bool).unwrap_or(false),
            id: number(&v, "/id"),
            owner_id: number(&v, "/owner/id"),
            html_url: text(&v, "/html_url"),
        })
    }

    /// `GET /repos/{o}/{r}/compare/{base}...{head}`: its `status` (`ahead`, `identical`, `behind`,
    /// `diverged`).
    pub fn compare_status(
        &self,
        repo: &RepoSlug,
        base: &str,
        head: &str,
    ) -> Result<String, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!(
                "/repos/{repo}/compare/{}...{}",
                encode_path(base),
                encode_path(head)
            ),
            None,
            &format!("the comparison of {base} and {head}"),
        )?;
        Ok(text(&v, "/status"))
    }

    /// The attestations of the subject `sha256:<digest>`: at most three pages of 100 (followed by
    /// `Link: rel="next"`, as the API pages by cursor). No attestation (404, or none listed) is an empty
    /// list; any other failure is an error, never "none".
    pub fn attestations(
        &self,
        repo: &RepoSlug,
        digest: &str,
    ) -> Result<Vec<AttestationItem>, GitHubError> {
        let what = format!("the attestations of sha256:{digest}");
        let mut next = Some(format!(
            "/repos/{repo}/attestations/sha256:{digest}?per_page=100"
        ));
        let mut items = Vec::new();
        for index in 0..ATTESTATION_PAGES {
            let Some(page) = next.take() else { break };
            let answer = match self.send(Method::GET, &page, None, &what) {
                Ok(answer) => answer,
                // None at all; a later page that is gone is an error, never "none".
                Err(GitHubError::NotFound { .. }) if index == 0 => return Ok(Vec::new()),
                Err(e) => return Err(e),
            };
            let v: Value = serde_json::from_str(&answer.body).map_err(|e| GitHubError::Status {
                what: what.clone(),
                status: answer.status,
                message: format!("not JSON: {e}"),
            })?;
            let unreadable = |message: &str| GitHubError::Status {
                what: what.clone(),
                status: answer.status,
                message: message.to_string(),
            };
            let listed = v
                .get("attestations")
                .and_then(Value::as_array)
                .ok_or_else(|| unreadable("no `attestations` list"))?;
            for item in listed {
                match (
                    item.get("bundle"),
                    item.get("bundle_url").and_then(Value::as_str),
                ) {
                    (Some(bundle), _) if !bundle.is_null() => {
                        items.push(AttestationItem::Bundle(bundle.clone()))
                    }
                    (_, Some(url)) => items.push(AttestationItem::Url(url.to_string())),
                    _ => {
                        return Err(unreadable(
                            "an attestation with neither `bundle` nor `bundle_url`",
                        ));
                    }
                }
            }
            next = self.next_page(&answer, &what)?;
        }
        Ok(items)
    }

    /// Whether aayu fetches a `bundle_url` at all: HTTPS, or plain HTTP to a loopback address when the API
    /// is itself there (a local test server).
    pub fn may_fetch_bundle(&self, url: &str) -> bool {
        url.starts_with("https://") || (is_loopback_http(url) && self.api_is_loopback_http())
    }

    /// The body of an attestation's `bundle_url`, at most `limit + 1` bytes (so that the caller can tell an
    /// oversized body), fetched **without** the Authorization header: the address is on GitHub's blob store,
    /// not the API. Only an address [`Client::may_fetch_bundle`] allows, redirects HTTPS too; a minute at
    /// most. Any answer but 2xx is an error.
    pub fn attestation_bundle(&self, url: &str, limit: u64) -> Result<Vec<u8>, GitHubError> {
        let what = "an attestation's bundle_url";
        if !self.may_fetch_bundle(url) {
            return Err(GitHubError::Status {
                what: what.to_string(),
                status: 0,
                message: format!(
                    "`{}` is not an HTTPS address",
                    crate::log::controls_escaped(url)
                ),
            });
        }
        let https = url.starts_with("https://");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .https_only(https)
            .max_redirects(if https { 3 } else { 0 })
            .timeout_global(Some(BUNDLE_TIMEOUT))
            .build()
            .into();
        let (status, bytes) = super::download(&agent, url, what, limit)?;
        if !(200..300).contains(&status) {
            return Err(GitHubError::Status {
                what: what.to_string(),
                status,
                message: "the bundle's address refused the download".into(),
            });
        }
        Ok(bytes)
    }

    /// `GET /repos/{o}/{r}/issues/{n}`.
    pub fn issue(&self, repo: &RepoSlug, number: u64) -> Result<Issue, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/issues/{number}"),
            None,
            &format!("issue #{number}"),
        )?;
        Ok(issue_of(&v))
    }

    /// `PATCH /repos/{o}/{r}/issues/{n}`: a new body and/or a new set of labels; what is `None` is kept.
    pub fn update_issue(
        &self,
        repo: &RepoSlug,
        number: u64,
        body: Option<&str>,
        labels: Option<&[String]>,
    ) -> Result<Issue, GitHubError> {
        let mut change = json!({});
        if let Some(body) = body {
            change["body"] = json!(body);
        }
        if let Some(labels) = labels {
            change["labels"] = json!(labels);
        }
        let v = self.json(
            Method::PATCH,
            &format!("/repos/{repo}/issues/{number}"),
            Some(&change),
            &format!("an edit of issue #{number}"),
        )?;
        Ok(issue_of(&v))
    }

    /// `GET /repos/{o}/{r}/issues/{n}/labels`, every page.
    pub fn issue_labels(&self, repo: &RepoSlug, number: u64) -> Result<Vec<String>, GitHubError> {
        Ok(self
            .list(
                &format!("/repos/{repo}/issues/{number}/labels"),
                &format!("the labels of issue #{number}"),
            )?
            .iter()
            .map(|l| text(l, "/name"))
            .collect())
    }

    /// Every comment of an issue or pull request, oldest first (all pages).
    pub fn comments(&self, repo: &RepoSlug, number: u64) -> Result<Vec<IssueComment>, GitHubError> {
        self.list_comments(repo, number, "pull request")
    }

    /// Every comment of `number` (`on` names what it is in errors), oldest first.
    pub(super) fn list_comments(
        &self,
        repo: &RepoSlug,
        number: u64,
        on: &str,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        Ok(self
            .list(
                &format!("/repos/{repo}/issues/{number}/comments"),
                &format!("the comments of {on} #{number}"),
            )?
            .iter()
            .map(comment_of)
            .collect())
    }

    pub fn comment(&self, repo: &RepoSlug, id: u64) -> Result<IssueComment, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/issues/comments/{id}"),
            None,
            &format!("comment {id}"),
        )?;
        Ok(comment_of(&v))
    }

    pub fn create_comment(
        &self,
        repo: &RepoSlug,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        self.post_comment(repo, number, body, "pull request")
    }

    /// `POST /repos/{o}/{r}/issues/{n}/comments`; `on` names what `n` is in errors (`pull request`,
    /// `issue`), which decides the permission a refusal's hint names.
    pub(super) fn post_comment(
        &self,
        repo: &RepoSlug,
        number: u64,
        body: &str,
        on: &str,
    ) -> Result<IssueComment, GitHubError> {
        let v = self.json(
            Method::POST,
            &format!("/repos/{repo}/issues/{number}/comments"),
            Some(&json!({ "body": body })),
            &format!("a comment on {on} #{number}"),
        )?;
        Ok(comment_of(&v))
    }

    pub fn update_comment(
        &self,
        repo: &RepoSlug,
        id: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        let v = self.json(
            Method::PATCH,
            &format!("/repos/{repo}/issues/comments/{id}"),
            Some(&json!({ "body": body })),
            &format!("an edit of comment {id} on a pull request"),
        )?;
        Ok(comment_of(&v))
    }

    pub fn delete_comment(&self, repo: &RepoSlug, id: u64) -> Result<(), GitHubError> {
        self.send(
            Method::DELETE,
            &format!("/repos/{repo}/issues/comments/{id}"),
            None,
            &format!("the deletion of comment {id} on a pull request"),
        )?;
        Ok(())
    }

    /// `GET /repos/{o}/{r}/pulls/{n}`.
    pub fn pull(&self, repo: &RepoSlug, number: u64) -> Result<Pull, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/pulls/{number}"),
            None,
            &format!("pull request #{number}"),
        )?;
        Ok(pull_of(&v))
    }

    /// `GET /repos/{o}/{r}/pulls?state=…[&head=owner:branch]`, every page.
    pub fn pulls(
        &self,
        repo: &RepoSlug,
        state: &str,
        head: Option<&str>,
    ) -> Result<Vec<Pull>, GitHubError> {
        let mut path = format!("/repos/{repo}/pulls?state={}", percent_encode(state));
        if let Some(head) = head {
            path.push_str(&format!("&head={}", percent_encode(head)));
        }
        Ok(self
            .list(&path, &format!("the pull requests of {repo}"))?
            .iter()
            .map(pull_of)
            .collect())
    }

    /// The SHAs of a pull request's commits, oldest first (GitHub lists at most 250).
    pub fn pull_commits(&self, repo: &RepoSlug, number: u64) -> Result<Vec<String>, GitHubError> {
        Ok(self
            .list(
                &format!("/repos/{repo}/pulls/{number}/commits"),
                &format!("the commits of pull request #{number}"),
            )?
            .iter()
            .map(|c| text(c, "/sha"))
            .collect())
    }

    /// The logins of every commit's author and committer of a pull request (all pages; a commit git
    /// cannot match to an account has none).
    pub fn pull_commit_people(
        &self,
        repo: &RepoSlug,
        number: u64,
    ) -> Result<Vec<String>, GitHubError> {
        let mut people: Vec<String> = self
            .list(
                &format!("/repos/{repo}/pulls/{number}/commits"),
                &format!("the commits of pull request #{number}"),
            )?
            .iter()
            .flat_map(|c| [maybe(c, "/author/login"), maybe(c, "/committer/login")])
            .flatten()
            .filter(|login| !login.is_empty())
            .collect();
        people.sort();
        people.dedup();
        Ok(people)
    }

    /// Every review of a pull request (all pages).
    pub fn reviews(&self, repo: &RepoSlug, number: u64) -> Result<Vec<Review>, GitHubError> {
        Ok(self
            .list(
                &format!("/repos/{repo}/pulls/{number}/reviews"),
                &format!("the reviews of pull request #{number}"),
            )?
            .iter()
            .map(|r| Review {
                user: text(r, "/user/login"),
                state: text(r, "/state"),
                commit_id: text(r, "/commit_id"),
                bot: text(r, "/user/type") == "Bot",
            })
            .collect())
    }

    /// Squash-merges a pull request, only if its head is still `sha`; answers the merge commit's SHA.
    pub fn squash_merge(
        &self,
        repo: &RepoSlug,
        number: u64,
        sha: &str,
    ) -> Result<String, GitHubError> {
        let body = json!({"sha": sha, "merge_method": "squash"});
        let v = self.json(
            Method::PUT,
            &format!("/repos/{repo}/pulls/{number}/merge"),
            Some(&body),
            &format!("the merge of pull request #{number}"),
        )?;
        Ok(text(&v, "/sha"))
    }

    /// A user's permission on the repository: `admin`, `maintain`, `write`, `triage`, `read` or `none`.
    pub fn permission(&self, repo: &RepoSlug, user: &str) -> Result<String, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!(
                "/repos/{repo}/collaborators/{}/permission",
                percent_encode(user)
            ),
            None,
            &format!("{user}'s permission"),
        )?;
        // `role_name` is finer (`maintain`, `triage`); `permission` folds them into admin/write/read.
        Ok(maybe(&v, "/role_name")
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| text(&v, "/permission")))
    }

    /// `POST /repos/{o}/{r}/statuses/{sha}`.
    pub fn create_status(
        &self,
        repo: &RepoSlug,
        sha: &str,
        status: &NewStatus<'_>,
    ) -> Result<CommitStatus, GitHubError> {
        let mut body = json!({
            "state": status.state,
            "context": status.context,
            "description": status.description.chars().take(140).collect::<String>(),
        });
        if let Some(url) = status.target_url {
            body["target_url"] = json!(url);
        }
        let v = self.json(
            Method::POST,
            &format!("/repos/{repo}/statuses/{sha}"),
            Some(&body),
            &format!("the {} status", status.context),
        )?;
        Ok(status_of(&v))
    }

    /// Every status set on a commit, newest first (all pages).
    pub fn statuses(
        &self,
        repo: &RepoSlug,
        reference: &str,
    ) -> Result<Vec<CommitStatus>, GitHubError> {
        Ok(self
            .list(
                &format!("/repos/{repo}/commits/{}/statuses", encode_path(reference)),
                &format!("the statuses of {reference}"),
            )?
            .iter()
            .map(status_of)
            .collect())
    }

    /// The combined state of a commit and the latest status of each context (all pages).
    pub fn combined_status(
        &self,
        repo: &RepoSlug,
        reference: &str,
    ) -> Result<(String, Vec<CommitStatus>), GitHubError> {
        let pages = self.list(
            &format!("/repos/{repo}/commits/{}/status", encode_path(reference)),
            &format!("the combined status of {reference}"),
        )?;
        let state = pages.first().map(|p| text(p, "/state")).unwrap_or_default();
        let statuses = pages
            .iter()
            .flat_map(|p| p.get("statuses").and_then(Value::as_array).cloned())
            .flatten()
            .map(|s| status_of(&s))
            .collect();
        Ok((state, statuses))
    }

    /// A file's bytes at a ref, through the contents API (files up to GitHub's 1 MB limit of it).
    pub fn file(
        &self,
        repo: &RepoSlug,
        path: &str,
        reference: &str,
    ) -> Result<Vec<u8>, GitHubError> {
        let what = format!("{reference}:{path}");
        let v = self.json(
            Method::GET,
            &format!(
                "/repos/{repo}/contents/{}?ref={}",
                encode_path(path),
                percent_encode(reference)
            ),
            None,
            &what,
        )?;
        if v.get("type").and_then(Value::as_str) != Some("file") {
            return Err(GitHubError::Status {
                what,
                status: 200,
                message: "not a file".into(),
            });
        }
        let content: String = text(&v, "/content")
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(content)
            .map_err(|e| GitHubError::Status {
                what,
                status: 200,
                message: format!("the content is not base64: {e}"),
            })
    }

    /// The SHA a ref (`heads/ledger`, `tags/v1`) points at.
    pub fn git_ref(&self, repo: &RepoSlug, reference: &str) -> Result<String, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/git/ref/{}", encode_path(reference)),
            None,
            &format!("the ref {reference}"),
        )?;
        Ok(text(&v, "/object/sha"))
    }

    /// Deletes a ref (`heads/aayudha/tmp`).
    pub fn delete_ref(&self, repo: &RepoSlug, reference: &str) -> Result<(), GitHubError> {
        self.send(
            Method::DELETE,
            &format!("/repos/{repo}/git/refs/{}", encode_path(reference)),
            None,
            &format!("the deletion of the ref {reference}"),
        )?;
        Ok(())
    }

    /// `GET /repos/{o}/{r}/branches/{b}`.
    pub fn branch(&self, repo: &RepoSlug, branch: &str) -> Result<Branch, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/branches/{}", encode_path(branch)),
            None,
            &format!("the branch {branch}"),
        )?;
        Ok(Branch {
            name: text(&v, "/name"),
            sha: text(&v, "/commit/sha"),
            protected: v.get("protected").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// `GET /repos/{o}/{r}/commits/{ref}`.
    pub fn commit(&self, repo: &RepoSlug, reference: &str) -> Result<Commit, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/commits/{}", encode_path(reference)),
            None,
            &format!("the commit {reference}"),
        )?;
        Ok(commit_of(&v))
    }
}

/// Whether `url` is plain HTTP to `127.0.0.1`, `localhost` or `[::1]` (any port): nobody on the network
/// can change what such an address answers.
pub(crate) fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_may_be_plain_http() {
        for yes in [
            "http://127.0.0.1:8080/b",
            "http://localhost/b",
            "http://[::1]:1/b",
        ] {
            assert!(is_loopback_http(yes), "{yes}");
        }
        for no in [
            "http://127.0.0.1@evil.test/b",
            "http://127.0.0.1.evil.test/b",
            "http://evil.test/127.0.0.1",
            "https://127.0.0.1/b",
            "ftp://localhost/b",
        ] {
            assert!(!is_loopback_http(no), "{no}");
        }
    }

    #[test]
    fn paths_keep_their_slashes_and_encode_the_rest() {
        assert_eq!(
            encode_path("heads/feature/a b#1"),
            "heads/feature/a%20b%231"
        );
    }

    #[test]
    fn a_pull_request_is_told_apart_from_an_issue() {
        let issue = issue_of(
            &json!({"number": 1, "title": "t", "body": null, "labels": ["bare", {"name": "x"}], "state": "open"}),
        );
        assert!(!issue.is_pull_request);
        assert_eq!(issue.labels, ["bare", "x"]);
        assert!(issue_of(&json!({"pull_request": {"url": "u"}})).is_pull_request);
    }
}
