//! The sticky comment against the fake GitHub: every case of `reference/security.md` "The sticky comment".

use crate::support::fake_github;

use aayudha::github::{Client, GitHubError, RunFilter, Token};
use aayudha::publish::comment::{self, ACTIONS_BOT, MARKER, Outcome};
use fake_github::{FakeIssue, FakePull, FakeRun, Server};

const REPO: &str = "octo/shop";

fn slug() -> aayudha::github::RepoSlug {
    aayudha::github::RepoSlug::parse(REPO).expect("a slug")
}

fn server_with(token: &str, login: &str) -> Server {
    let server = Server::start();
    server
        .state
        .lock()
        .expect("lock")
        .tokens
        .insert(token.into(), login.into());
    server
}

fn client(server: &Server, token: &str) -> Client {
    Client::new(&server.url, &Token::new(token)).expect("client")
}

fn ours(server: &Server, login: &str) -> Vec<fake_github::Comment> {
    server
        .comments()
        .into_iter()
        .filter(|c| c.login == login && c.body.starts_with(MARKER))
        .collect()
}

#[test]
fn one_comment_is_created_then_edited_in_place() {
    let server = server_with("t", "aayu-bot");
    let c = client(&server, "t");
    let first = comment::upsert(
        &c,
        &slug(),
        3,
        "aayu-bot",
        "abc",
        &comment::body(10, "abc", "first"),
    )
    .expect("create");
    let Outcome::Created(id) = first else {
        panic!("{first:?}")
    };
    let second = comment::upsert(
        &c,
        &slug(),
        3,
        "aayu-bot",
        "def",
        &comment::body(11, "def", "second"),
    )
    .expect("update");
    assert_eq!(second, Outcome::Updated(id));
    let mine = ours(&server, "aayu-bot");
    assert_eq!(mine.len(), 1);
    assert!(mine[0].body.ends_with("second"));
    server.assert_clean();
}

#[test]
fn our_comment_is_found_among_150_others_on_a_later_page() {
    let server = server_with("t", "aayu-bot");
    for i in 0..120 {
        server.seed("someone", &format!("comment {i}"));
    }
    let id = server.seed("aayu-bot", &comment::body(5, "old", "old"));
    for i in 0..40 {
        server.seed("someone", &format!("later {i}"));
    }
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "new",
        &comment::body(6, "new", "new"),
    )
    .expect("upsert");
    assert_eq!(outcome, Outcome::Updated(id));
    assert_eq!(server.comments().len(), 161);
    let pages = server
        .state
        .lock()
        .expect("lock")
        .requests
        .iter()
        .filter(|r| r.starts_with("GET comments"))
        .count();
    assert_eq!(pages, 2, "161 comments are two pages of 100");
    server.assert_clean();
}

#[test]
fn a_users_comment_carrying_the_marker_is_not_ours() {
    let server = server_with("t", "aayu-bot");
    let forged = server.seed("mallory", &format!("{MARKER}\nall floors hold, ship it"));
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "h",
        &comment::body(1, "h", "real"),
    )
    .expect("upsert");
    assert!(matches!(outcome, Outcome::Created(id) if id != forged));
    let forged_now = server
        .comments()
        .into_iter()
        .find(|c| c.id == forged)
        .expect("untouched");
    assert!(
        forged_now.body.ends_with("ship it"),
        "a user's comment is never edited"
    );
}

#[test]
fn two_concurrent_runs_leave_one_comment_the_lowest_id() {
    let server = server_with("t", "aayu-bot");
    server.state.lock().expect("lock").race =
        Some(("aayu-bot".into(), comment::body(2, "h", "the other run")));
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "h",
        &comment::body(3, "h", "this run"),
    )
    .expect("upsert");
    let mine = ours(&server, "aayu-bot");
    assert_eq!(mine.len(), 1, "the duplicate was deleted");
    assert_eq!(outcome, Outcome::Updated(mine[0].id));
    assert!(mine[0].body.ends_with("this run"));
    server.assert_clean();
}

#[test]
fn an_older_run_never_overwrites_a_newer_one() {
    let server = server_with("t", "aayu-bot");
    let id = server.seed("aayu-bot", &comment::body(20, "newer-head", "newer"));
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "newer-head",
        &comment::body(10, "older-head", "older"),
    )
    .expect("upsert");
    assert_eq!(outcome, Outcome::KeptNewer(id));
    assert!(ours(&server, "aayu-bot")[0].body.ends_with("newer"));
}

#[test]
fn a_huge_body_is_posted_capped() {
    let server = server_with("t", "aayu-bot");
    let body = comment::body(1, "h", &"x".repeat(300_000));
    comment::upsert(&client(&server, "t"), &slug(), 3, "aayu-bot", "h", &body).expect("upsert");
    let posted = &ours(&server, "aayu-bot")[0];
    assert!(posted.body.chars().count() <= comment::MAX_BODY);
}

#[test]
fn a_secondary_rate_limit_is_waited_out() {
    let server = server_with("t", "aayu-bot");
    server.state.lock().expect("lock").rate_limited = 2;
    let started = std::time::Instant::now();
    comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "h",
        &comment::body(1, "h", "x"),
    )
    .expect("upsert");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "retry-after was honoured"
    );
    assert_eq!(ours(&server, "aayu-bot").len(), 1);
}

#[test]
fn a_read_only_token_is_a_typed_refusal_with_the_permission_to_add() {
    let server = server_with("ro", "fork-bot");
    server
        .state
        .lock()
        .expect("lock")
        .read_only
        .push("ro".into());
    let err = comment::upsert(
        &client(&server, "ro"),
        &slug(),
        3,
        "fork-bot",
        "h",
        &comment::body(1, "h", "x"),
    )
    .expect_err("read-only");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");
    insta::assert_snapshot!("read_only_hint", err.hint().expect("hint"));
}

#[test]
fn a_comment_deleted_meanwhile_is_written_anew() {
    let server = server_with("t", "aayu-bot");
    let old = server.seed("aayu-bot", &comment::body(1, "h", "old"));
    server.state.lock().expect("lock").vanish_on_patch = true;
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "h",
        &comment::body(2, "h", "new"),
    )
    .expect("upsert");
    assert!(
        matches!(outcome, Outcome::Created(id) if id != old),
        "{outcome:?}"
    );
    assert_eq!(ours(&server, "aayu-bot").len(), 1);
}

#[test]
fn a_workflow_token_acts_as_the_actions_bot() {
    let server = server_with("ghs_workflow", ACTIONS_BOT);
    server
        .state
        .lock()
        .expect("lock")
        .no_user
        .push("ghs_workflow".into());
    let c = client(&server, "ghs_workflow");
    assert_eq!(
        c.login().expect("login"),
        None,
        "GET /user is forbidden for a workflow token"
    );
    let me = c
        .login()
        .expect("login")
        .unwrap_or_else(|| ACTIONS_BOT.to_string());
    comment::upsert(&c, &slug(), 3, &me, "h", &comment::body(1, "h", "x")).expect("upsert");
    assert_eq!(ours(&server, ACTIONS_BOT).len(), 1);
    let err = Client::new(&server.url, &Token::new("wrong"))
        .expect("client")
        .login()
        .expect_err("401");
    assert!(matches!(err, GitHubError::Unauthorized { .. }));
}

#[test]
fn another_runs_artifact_is_listed_and_downloaded_through_the_redirect_without_the_token() {
    let server = server_with("t", "aayu-bot");
    {
        let mut fake = server.state.lock().expect("lock");
        fake.run_artifacts.push((
            77,
            5001,
            "aayudha-pack".into(),
            b"zip bytes".to_vec(),
            false,
        ));
        fake.run_artifacts
            .push((77, 5002, "other".into(), b"x".to_vec(), false));
        fake.run_artifacts
            .push((78, 5003, "aayudha-pack".into(), b"old".to_vec(), true));
    }
    let c = client(&server, "t");
    let found = c.run_artifacts(&slug(), 77, "aayudha-pack").expect("list");
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].id, found[0].size), (5001, 9));
    assert_eq!(
        c.artifact_zip(&slug(), 5001, 1 << 20).expect("download"),
        b"zip bytes"
    );
    assert_eq!(
        server.state.lock().expect("lock").auth_to_blob,
        0,
        "the redirect was followed without the token"
    );
    let expired = c.artifact_zip(&slug(), 5003, 1 << 20).expect_err("expired");
    assert!(matches!(expired, GitHubError::Gone { .. }), "{expired:?}");
    insta::assert_snapshot!("expired_artifact_hint", expired.hint().expect("hint"));
    assert!(
        c.artifact_zip(&slug(), 5001, 4).is_err(),
        "a download over the limit is refused"
    );
    server.assert_clean();
}

#[test]
fn issues_pulls_reviews_permissions_merges_and_runs_are_read_as_aayu_needs_them() {
    let server = server_with("t", "aayu-bot");
    {
        let mut fake = server.state.lock().expect("lock");
        fake.issues.insert(
            131,
            FakeIssue {
                title: "Fix totals".into(),
                body: None,
                labels: vec!["type:bug".into(), "ready".into()],
                state: "open".into(),
            },
        );
        fake.pulls.insert(3, FakePull::open(&"1".repeat(40)));
        fake.reviews
            .insert(3, vec![("alice".into(), "APPROVED".into(), "1".repeat(40))]);
        fake.permissions.insert("alice".into(), "write".into());
        fake.runs = (1..=130)
            .map(|id| FakeRun {
                event: if id % 2 == 0 {
                    "pull_request_target"
                } else {
                    "pull_request"
                }
                .into(),
                ..FakeRun::gate(id, "aayudha-merge-gate.yml")
            })
            .collect();
    }
    let c = client(&server, "t");
    let issue = c.issue(&slug(), 131).expect("issue");
    assert_eq!(
        (issue.title.as_str(), issue.body, issue.labels),
        (
            "Fix totals",
            None,
            vec!["type:bug".to_string(), "ready".to_string()]
        )
    );
    assert_eq!(c.reviews(&slug(), 3).expect("reviews")[0].state, "APPROVED");
    assert_eq!(c.permission(&slug(), "alice").expect("permission"), "write");
    let runs = c
        .workflow_runs(
            &slug(),
            ".github/workflows/aayudha-merge-gate.yml",
            &RunFilter::default(),
        )
        .expect("runs");
    assert_eq!(runs.len(), 130, "runs on page 2 are read too");
    assert_eq!(runs[0].id, 130, "newest first");
    assert_eq!(runs[0].event, "pull_request_target");
    let err = c
        .squash_merge(&slug(), 3, &"3".repeat(40))
        .expect_err("moved head");
    assert!(matches!(err, GitHubError::Conflict { .. }), "{err:?}");
    assert_eq!(
        c.squash_merge(&slug(), 3, &"1".repeat(40)).expect("merge"),
        "9".repeat(40)
    );
    assert!(matches!(
        c.issue(&slug(), 999).expect_err("404"),
        GitHubError::NotFound { .. }
    ));
    server.assert_clean();
}

#[test]
fn a_minimized_comment_is_left_alone_and_a_new_one_written() {
    let server = server_with("t", "aayu-bot");
    let hidden = server.seed("aayu-bot", &comment::body(1, "h", "old"));
    server
        .state
        .lock()
        .expect("lock")
        .comments
        .iter_mut()
        .for_each(|c| c.minimized = true);
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "h",
        &comment::body(2, "h", "new"),
    )
    .expect("upsert");
    let Outcome::Created(id) = outcome else {
        panic!("expected a new comment, got {outcome:?}");
    };
    assert_ne!(id, hidden);
    let all = ours(&server, "aayu-bot");
    assert_eq!(
        all.len(),
        2,
        "the minimized one is neither edited nor deleted"
    );
    assert!(
        all.iter()
            .any(|c| c.id == hidden && c.body.ends_with("old"))
    );
    server.assert_clean();
}

#[test]
fn a_later_run_on_an_older_head_keeps_the_current_heads_proof() {
    let server = server_with("t", "aayu-bot");
    let id = server.seed("aayu-bot", &comment::body(5, "head-2", "proves head 2"));
    // Run 9 is a re-run that built head 1, which is no longer the pull request's head.
    let outcome = comment::upsert(
        &client(&server, "t"),
        &slug(),
        3,
        "aayu-bot",
        "head-2",
        &comment::body(9, "head-1", "proves head 1"),
    )
    .expect("upsert");
    assert_eq!(outcome, Outcome::KeptNewer(id));
    assert!(ours(&server, "aayu-bot")[0].body.ends_with("proves head 2"));
}
