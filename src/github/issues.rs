//! The issue endpoints of the maintain brief (SPEC §9): list a repository's issues by label, state and
//! creator, create an issue and a label, label an issue, comment on it and close it.

use http::Method;
use serde_json::{Value, json};

use super::repos::issue_of;
use super::{Client, GitHubError, Issue, IssueComment, RepoSlug, percent_encode};

/// Which issues `GET /repos/{o}/{r}/issues` lists: open ones, with every label given, opened by `creator`.
#[derive(Debug, Clone, Default)]
pub struct IssueFilter<'a> {
    pub labels: &'a [&'a str],
    pub creator: Option<&'a str>,
}

impl Client {
    /// `GET /repos/{o}/{r}/issues?state=open…`, every page; pull requests (which the endpoint lists too)
    /// are left out.
    pub fn open_issues(
        &self,
        repo: &RepoSlug,
        filter: &IssueFilter,
    ) -> Result<Vec<Issue>, GitHubError> {
        let mut path = format!("/repos/{repo}/issues?state=open");
        if !filter.labels.is_empty() {
            let labels: Vec<String> = filter.labels.iter().map(|l| percent_encode(l)).collect();
            path.push_str(&format!("&labels={}", labels.join(",")));
        }
        if let Some(creator) = filter.creator {
            path.push_str(&format!("&creator={}", percent_encode(creator)));
        }
        Ok(self
            .list(&path, "the open issues")?
            .iter()
            .map(issue_of)
            .filter(|i| !i.is_pull_request)
            .collect())
    }

    /// `POST /repos/{o}/{r}/issues`.
    pub fn create_issue(
        &self,
        repo: &RepoSlug,
        title: &str,
        body: &str,
        labels: &[&str],
    ) -> Result<Issue, GitHubError> {
        let v = self.json(
            Method::POST,
            &format!("/repos/{repo}/issues"),
            Some(&json!({ "title": title, "body": body, "labels": labels })),
            "the creation of an issue",
        )?;
        Ok(issue_of(&v))
    }

    /// `POST /repos/{o}/{r}/labels`: `true` when created, `false` when the label is there already (GitHub
    /// answers 422 `already_exists`, also when another run created it a moment ago).
    pub fn create_label(
        &self,
        repo: &RepoSlug,
        name: &str,
        color: &str,
        description: &str,
    ) -> Result<bool, GitHubError> {
        let result = self.send(
            Method::POST,
            &format!("/repos/{repo}/labels"),
            Some(&json!({ "name": name, "color": color, "description": description })),
            &format!("the creation of the label `{name}`"),
        );
        match result {
            Ok(_) => Ok(true),
            Err(GitHubError::Unprocessable { message, .. })
                if message.contains("already_exists") =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// `POST /repos/{o}/{r}/issues/{n}/labels`: adds labels, keeping the issue's others.
    pub fn add_labels(
        &self,
        repo: &RepoSlug,
        number: u64,
        labels: &[&str],
    ) -> Result<(), GitHubError> {
        self.send(
            Method::POST,
            &format!("/repos/{repo}/issues/{number}/labels"),
            Some(&json!({ "labels": labels })),
            &format!("the labels of issue #{number}"),
        )?;
        Ok(())
    }

    /// A comment on an issue (its errors name an issue, and their hint `issues: write`).
    pub fn comment_on_issue(
        &self,
        repo: &RepoSlug,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        self.post_comment(repo, number, body, "issue")
    }

    /// Every comment of an issue, oldest first.
    pub fn issue_comments(
        &self,
        repo: &RepoSlug,
        number: u64,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        self.list_comments(repo, number, "issue")
    }

    /// `PATCH /repos/{o}/{r}/issues/{n}` to `closed` with a reason (`completed`, `not_planned`,
    /// `duplicate`).
    pub fn close_issue(
        &self,
        repo: &RepoSlug,
        number: u64,
        reason: &str,
    ) -> Result<(), GitHubError> {
        let change: Value = json!({ "state": "closed", "state_reason": reason });
        self.send(
            Method::PATCH,
            &format!("/repos/{repo}/issues/{number}"),
            Some(&change),
            &format!("closing issue #{number}"),
        )?;
        Ok(())
    }
}
