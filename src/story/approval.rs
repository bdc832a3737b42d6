//! Who approved a pull request's head, as the gate's harness floor and `aayu ship` both decide it: each
//! reviewer's latest review that is not a comment, `APPROVED`, on the exact head commit, by a user with
//! write permission (admin, maintain or write) who is not the pull request's author, not a bot (GitHub's
//! `type: "Bot"`, or a `[bot]` login) and not the author or committer of any of its commits. One rule,
//! read live: an approval given after the gate ran waives once the gate runs again.

use std::collections::{BTreeMap, BTreeSet};

use crate::github::{Client, GitHubError, RepoSlug, Review};

/// The pull request as the rule needs it.
pub struct Asked<'a> {
    pub number: u64,
    /// The commit an approval must be of.
    pub head_sha: &'a str,
    /// Its author's login, when the caller has it (else read from the pull request).
    pub author: Option<&'a str>,
}

/// The reviewers whose latest non-comment review approves `head`, in login order: the candidates
/// before the author, bot, committer and permission checks.
pub fn approving(reviews: &[Review], head: &str) -> Vec<String> {
    let mut latest: BTreeMap<&str, &Review> = BTreeMap::new();
    for r in reviews.iter().filter(|r| r.state != "COMMENTED") {
        latest.insert(&r.user, r);
    }
    latest
        .into_values()
        .filter(|r| r.state == "APPROVED" && r.commit_id == head && !is_bot(r))
        .map(|r| r.user.clone())
        .collect()
}

fn is_bot(review: &Review) -> bool {
    review.bot || review.user.ends_with("[bot]")
}

/// The first approving reviewer who passes every check of the rule, or `None`.
pub fn approver(
    client: &Client,
    repo: &RepoSlug,
    asked: &Asked,
) -> Result<Option<String>, GitHubError> {
    let candidates = approving(&client.reviews(repo, asked.number)?, asked.head_sha);
    if candidates.is_empty() {
        return Ok(None);
    }
    let author = match asked.author {
        Some(author) => author.to_string(),
        None => client.pull(repo, asked.number)?.author,
    };
    let people: BTreeSet<String> = client
        .pull_commit_people(repo, asked.number)?
        .into_iter()
        .collect();
    for user in candidates {
        if user == author || people.contains(&user) {
            continue;
        }
        let permission = client.permission(repo, &user).or_else(|e| match e {
            GitHubError::NotFound { .. } => Ok("none".into()),
            e => Err(e),
        })?;
        if matches!(permission.as_str(), "admin" | "maintain" | "write") {
            return Ok(Some(user));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(user: &str, state: &str, commit: &str) -> Review {
        Review {
            user: user.into(),
            state: state.into(),
            commit_id: commit.into(),
            bot: false,
        }
    }

    #[test]
    fn the_latest_non_comment_review_on_the_head_counts() {
        let reviews = [
            review("ann", "APPROVED", "h"),
            review("ann", "COMMENTED", "h"),
            review("bob", "APPROVED", "h"),
            review("bob", "CHANGES_REQUESTED", "h"),
            review("cy", "APPROVED", "old"),
            review("dependabot[bot]", "APPROVED", "h"),
            Review {
                bot: true,
                ..review("helper", "APPROVED", "h")
            },
        ];
        assert_eq!(approving(&reviews, "h"), ["ann"]);
    }
}
