//! The one tracking issue the briefs go to, and the posting of a brief on it.
//!
//! The issue is found by its label (and its marker), else among the open issues the token's user opened
//! (by its marker; the label is then put back); when there is none, the label and the issue are created.
//! Two runs may both find none and both create one: after creating, the open tracking issues are listed
//! again and the one created first (the lowest number) wins; every other gets a comment naming the winner
//! and is closed as a duplicate. Every run that finds more than one settles them the same way.

use super::{ISSUE_MARKER, LABEL, digest_in};
use crate::github::{Client, GitHubError, Issue, IssueFilter, RepoSlug};
use crate::settings::MaintainMode as Mode;

const TITLE: &str = "aayudha: keep the feature maps honest";
const LABEL_COLOR: &str = "5319e7";
const LABEL_DESCRIPTION: &str = "The one issue aayudha posts its maintain briefs on";

/// Where the briefs go, and as whom.
pub struct Tracker<'a> {
    pub client: &'a Client,
    pub repo: &'a RepoSlug,
    /// The login the token acts as (`github-actions[bot]` for a workflow's token), when known.
    pub me: Option<String>,
}

/// What happened to a brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Posted as a new comment.
    Posted {
        issue: u64,
        issue_url: String,
        comment_url: String,
        /// The tracking issue was created by this run.
        created: bool,
        /// Duplicate tracking issues this run closed.
        closed: Vec<u64>,
    },
    /// Nothing posted (`--maintain drift`), and why.
    Silent { why: String },
}

/// The tracking issue found or made, and what settling it did.
struct Found {
    issue: Issue,
    created: bool,
    closed: Vec<u64>,
}

impl Tracker<'_> {
    /// Posts `body` (a rendered brief ending with `digest`) by `mode`; `clean` says the report holds
    /// nothing to act on.
    pub fn post(
        &self,
        body: &str,
        digest: &str,
        mode: Mode,
        clean: bool,
    ) -> Result<Outcome, GitHubError> {
        if mode == Mode::Drift && clean {
            return Ok(Outcome::Silent {
                why: "nothing drifted and no check failed or was blocked".into(),
            });
        }
        let found = self.find_or_create()?;
        let number = found.issue.number;
        if mode == Mode::Drift
            && let Some(newest) = self.newest_digest(number)?
            && newest == digest
        {
            return Ok(Outcome::Silent {
                why: format!(
                    "the newest brief on #{number} carries the same digest (nothing changed since)"
                ),
            });
        }
        let comment = self.client.comment_on_issue(self.repo, number, body)?;
        Ok(Outcome::Posted {
            issue: number,
            issue_url: found.issue.html_url,
            comment_url: comment.html_url,
            created: found.created,
            closed: found.closed,
        })
    }

    /// The open issues that carry the label and the marker, oldest first.
    fn labelled(&self) -> Result<Vec<Issue>, GitHubError> {
        let mut found: Vec<Issue> = self
            .client
            .open_issues(
                self.repo,
                &IssueFilter {
                    labels: &[LABEL],
                    creator: None,
                },
            )?
            .into_iter()
            .filter(carries_marker)
            .collect();
        found.sort_by_key(|i| i.number);
        Ok(found)
    }

    fn find_or_create(&self) -> Result<Found, GitHubError> {
        let labelled = self.labelled()?;
        if !labelled.is_empty() {
            return self.settle(labelled, None);
        }
        // The label may have been taken off: the issues this user opened, by their marker.
        if let Some(me) = &self.me {
            let mut mine: Vec<Issue> = self
                .client
                .open_issues(
                    self.repo,
                    &IssueFilter {
                        labels: &[],
                        creator: Some(me),
                    },
                )?
                .into_iter()
                .filter(carries_marker)
                .collect();
            mine.sort_by_key(|i| i.number);
            if let Some(first) = mine.first() {
                self.client
                    .create_label(self.repo, LABEL, LABEL_COLOR, LABEL_DESCRIPTION)?;
                self.client.add_labels(self.repo, first.number, &[LABEL])?;
                return self.settle(mine, None);
            }
        }
        self.client
            .create_label(self.repo, LABEL, LABEL_COLOR, LABEL_DESCRIPTION)?;
        let ours = self
            .client
            .create_issue(self.repo, TITLE, &issue_body(), &[LABEL])?;
        // Another run may have created one at the same time: list again, and let the first one win.
        let ours_number = ours.number;
        let mut all = self.labelled()?;
        if !all.iter().any(|i| i.number == ours.number) {
            all.push(ours);
            all.sort_by_key(|i| i.number);
        }
        self.settle(all, Some(ours_number))
    }

    /// The first issue (lowest number) wins; every other is told so and closed as a duplicate. `ours` is
    /// the issue this run created, if it did.
    fn settle(&self, issues: Vec<Issue>, ours: Option<u64>) -> Result<Found, GitHubError> {
        let mut issues = issues.into_iter();
        let Some(winner) = issues.next() else {
            return Err(GitHubError::NotFound {
                what: "the tracking issue".into(),
            });
        };
        let mut closed = Vec::new();
        for duplicate in issues {
            self.client.comment_on_issue(
                self.repo,
                duplicate.number,
                &format!(
                    "Duplicate of #{}: aayudha keeps one tracking issue for its maintain briefs (two runs created one at the same time, and the first one wins).",
                    winner.number
                ),
            )?;
            self.client
                .close_issue(self.repo, duplicate.number, "duplicate")?;
            closed.push(duplicate.number);
        }
        Ok(Found {
            created: ours == Some(winner.number),
            issue: winner,
            closed,
        })
    }

    /// The digest of the newest brief on the issue that this token's user posted (a workflow token's when
    /// the user is unknown: any bot's). A brief by someone else — a forged one, or another loop's record —
    /// does not silence this one.
    fn newest_digest(&self, number: u64) -> Result<Option<String>, GitHubError> {
        let comments = self.client.issue_comments(self.repo, number)?;
        let trusted = |login: &str| match &self.me {
            Some(me) => login == me,
            None => login.ends_with("[bot]"),
        };
        Ok(comments
            .iter()
            .rev()
            .filter(|c| trusted(&c.login))
            .find_map(|c| digest_in(&c.body).map(str::to_string)))
    }
}

fn carries_marker(issue: &Issue) -> bool {
    issue
        .body
        .as_deref()
        .is_some_and(|b| b.contains(ISSUE_MARKER))
}

fn issue_body() -> String {
    format!(
        "{ISSUE_MARKER}\n\
         aayudha posts its **maintain briefs** here, each as a new comment (GitHub notifies a mention only in a new comment): \
         what drifted between the feature maps and the source, which behaviour checks fail or are blocked, which features are stale, \
         what the maintainer may edit and the rules it keeps.\n\n\
         They come from `aayu verify --map --maintain drift|always` and `aayu verify --check … --maintain drift|always`. \
         With a person's token the brief mentions the agent app set in `[verify] maintainer`; from GitHub Actions it is a record with no mention.\n\n\
         Keep this issue open: aayudha finds it by its label `{LABEL}` and the marker above, and creates another when there is none.\n"
    )
}
