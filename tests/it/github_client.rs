//! `github::Client` against the fake GitHub: every endpoint of SPEC §9 read into what aayu needs, every list
//! through all its pages, retries of what is worth retrying, and typed refusals with their hints.

use crate::support::fake_github;

use aayudha::github::{Client, GitHubError, NewStatus, RunFilter, Token};
use fake_github::{FakeIssue, FakePull, FakeRun, Server};

const REPO: &str = "octo/shop";

fn slug() -> aayudha::github::RepoSlug {
    aayudha::github::RepoSlug::parse(REPO).expect("a slug")
}

fn server() -> Server {
    let server = Server::start();
    server
        .state
        .lock()
        .expect("lock")
        .tokens
        .insert("t".into(), "aayu-bot".into());
    server
}

fn client(server: &Server) -> Client {
    Client::new(&server.url, &Token::new("t")).expect("client")
}

fn sha(c: char) -> String {
    c.to_string().repeat(40)
}

#[test]
fn the_repository_and_a_story_are_read_and_the_story_is_edited() {
    let server = server();
    server.state.lock().expect("lock").issues.insert(
        131,
        FakeIssue {
            title: "Fix totals".into(),
            body: Some("## Completion Goal\n\n1. Sums add up.".into()),
            labels: (0..120).map(|i| format!("label-{i:03}")).collect(),
            state: "open".into(),
        },
    );
    let c = client(&server);
    let repo = c.repository(&slug()).expect("repository");
    assert_eq!(
        (repo.full_name.as_str(), repo.default_branch.as_str()),
        (REPO, "main")
    );
    let issue = c.issue(&slug(), 131).expect("issue");
    assert_eq!(issue.title, "Fix totals");
    assert!(!issue.is_pull_request);
    assert_eq!(
        c.issue_labels(&slug(), 131).expect("labels").len(),
        120,
        "labels on page 2 are read too"
    );
    let edited = c
        .update_issue(
            &slug(),
            131,
            Some("done"),
            Some(&["type:bug".to_string(), "complete".to_string()]),
        )
        .expect("edit");
    assert_eq!(edited.body.as_deref(), Some("done"));
    assert_eq!(
        c.issue(&slug(), 131).expect("issue").labels,
        ["type:bug", "complete"]
    );
    assert!(matches!(
        c.repository(&aayudha::github::RepoSlug::parse("someone/else").expect("slug"))
            .expect_err("404"),
        GitHubError::NotFound { .. }
    ));
    server.assert_clean();
}

#[test]
fn pull_requests_their_commits_reviews_and_permissions() {
    let server = server();
    {
        let mut fake = server.state.lock().expect("lock");
        let mut pull = FakePull::open(&sha('a'));
        pull.commits = (0..130).map(|i| format!("{i:040}")).collect();
        fake.pulls.insert(3, pull);
        let mut fork = FakePull::open(&sha('b'));
        fork.head_repo = None;
        fork.head_ref = "patch-1".into();
        fake.pulls.insert(4, fork);
        fake.reviews
            .insert(3, vec![("alice".into(), "APPROVED".into(), sha('a'))]);
        fake.permissions.insert("alice".into(), "maintain".into());
    }
    let c = client(&server);
    let pull = c.pull(&slug(), 3).expect("pull");
    assert_eq!(
        (pull.head_sha.as_str(), pull.head_repo.as_deref()),
        (sha('a').as_str(), Some(REPO))
    );
    assert_eq!(
        c.pull(&slug(), 4).expect("fork").head_repo,
        None,
        "a deleted fork"
    );
    assert_eq!(c.pull_commits(&slug(), 3).expect("commits").len(), 130);
    let open = c.pulls(&slug(), "open", None).expect("pulls");
    assert_eq!(open.len(), 2);
    let mine = c
        .pulls(&slug(), "open", Some("octo:feature"))
        .expect("filtered");
    assert_eq!(mine.iter().map(|p| p.number).collect::<Vec<_>>(), [3]);
    assert_eq!(c.reviews(&slug(), 3).expect("reviews")[0].user, "alice");
    assert_eq!(
        c.permission(&slug(), "alice").expect("permission"),
        "maintain",
        "the finer role, not the folded `write`"
    );
    assert!(matches!(
        c.permission(&slug(), "mallory")
            .expect_err("not a collaborator"),
        GitHubError::NotFound { .. }
    ));
    server.assert_clean();
}

#[test]
fn statuses_are_set_listed_newest_first_and_combined() {
    let server = server();
    server
        .state
        .lock()
        .expect("lock")
        .refs
        .insert("heads/feature".into(), sha('a'));
    let c = client(&server);
    let set = |state, context, description: &str| {
        c.create_status(
            &slug(),
            &sha('a'),
            &NewStatus {
                state,
                context,
                description,
                target_url: Some("https://github.com/octo/shop/actions/runs/9"),
            },
        )
        .expect("status")
    };
    set("pending", "aayudha/proof", "running");
    set("success", "aayudha/proof", &"d".repeat(300));
    let ci = set("failure", "ci", "red");
    assert_eq!(ci.creator.as_deref(), Some("aayu-bot"));
    let all = c.statuses(&slug(), &sha('a')).expect("statuses");
    assert_eq!(
        all.iter().map(|s| s.state.as_str()).collect::<Vec<_>>(),
        ["failure", "success", "pending"],
        "newest first"
    );
    assert_eq!(
        all[1].description.as_deref().map(str::len),
        Some(140),
        "the description is cut to GitHub's limit"
    );
    let (state, latest) = c.combined_status(&slug(), "feature").expect("combined");
    assert_eq!(state, "failure");
    assert_eq!(latest.len(), 2, "the latest of each context");
    server.assert_clean();
}

#[test]
fn files_refs_branches_and_commits() {
    let server = server();
    let big: Vec<u8> = (0..5000u32).flat_map(|i| i.to_le_bytes()).collect();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.files
            .insert(("ledger".into(), "proof/7/a b.json".into()), big.clone());
        fake.refs.insert("heads/main".into(), sha('1'));
        fake.refs.insert("heads/feature/x".into(), sha('2'));
        fake.commits
            .insert(sha('2'), ("Fix totals".into(), vec![sha('1')]));
    }
    let c = client(&server);
    assert_eq!(
        c.file(&slug(), "proof/7/a b.json", "ledger").expect("file"),
        big,
        "base64 wrapped at 60 columns is decoded"
    );
    assert!(matches!(
        c.file(&slug(), "proof/7/a b.json", "main")
            .expect_err("absent"),
        GitHubError::NotFound { .. }
    ));
    assert_eq!(
        c.git_ref(&slug(), "heads/feature/x").expect("ref"),
        sha('2')
    );
    let branch = c.branch(&slug(), "feature/x").expect("branch");
    assert_eq!((branch.sha, branch.protected), (sha('2'), false));
    assert!(c.branch(&slug(), "main").expect("main").protected);
    let commit = c.commit(&slug(), "feature/x").expect("commit");
    assert_eq!(
        (commit.message.as_str(), commit.parents),
        ("Fix totals", vec![sha('1')])
    );
    c.delete_ref(&slug(), "heads/feature/x").expect("delete");
    assert!(matches!(
        c.git_ref(&slug(), "heads/feature/x").expect_err("gone"),
        GitHubError::NotFound { .. }
    ));
    assert!(matches!(
        c.delete_ref(&slug(), "heads/feature/x").expect_err("twice"),
        GitHubError::Unprocessable { .. }
    ));
    server.assert_clean();
}

#[test]
fn workflows_runs_attempts_jobs_and_artifacts() {
    let server = server();
    {
        let mut fake = server.state.lock().expect("lock");
        let mut retried = FakeRun::gate(40, "aayudha-merge-gate.yml");
        retried.run_attempt = 2;
        retried.earlier_attempts = vec![("completed".into(), Some("failure".into()))];
        fake.runs.push(retried);
        fake.runs.push(FakeRun {
            event: "pull_request".into(),
            head_branch: "feature".into(),
            ..FakeRun::gate(41, "aayudha-merge-gate.yml")
        });
        fake.runs.push(FakeRun::gate(50, "aayudha-nightly.yml"));
        fake.run_artifacts
            .push((40, 7001, "aayudha-pack".into(), b"zip".to_vec(), false));
    }
    let c = client(&server);
    let workflows = c.workflows(&slug()).expect("workflows");
    assert_eq!(
        workflows
            .iter()
            .map(|w| w.path.as_str())
            .collect::<Vec<_>>(),
        [
            ".github/workflows/aayudha-merge-gate.yml",
            ".github/workflows/aayudha-nightly.yml"
        ]
    );
    let all = c
        .workflow_runs(&slug(), "aayudha-merge-gate.yml", &RunFilter::default())
        .expect("runs");
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), [41, 40]);
    let filtered = c
        .workflow_runs(
            &slug(),
            ".github/workflows/aayudha-merge-gate.yml",
            &RunFilter {
                event: Some("pull_request_target"),
                branch: Some("main"),
            },
        )
        .expect("filtered");
    assert_eq!(filtered.iter().map(|r| r.id).collect::<Vec<_>>(), [40]);
    let run = c.run(&slug(), 40).expect("run");
    assert_eq!(
        (run.run_attempt, run.conclusion.as_deref()),
        (2, Some("success"))
    );
    let first = c.run_attempt(&slug(), 40, 1).expect("attempt 1");
    assert_eq!(first.conclusion.as_deref(), Some("failure"));
    assert!(matches!(
        c.run_attempt(&slug(), 40, 3).expect_err("no attempt 3"),
        GitHubError::NotFound { .. }
    ));
    let jobs = c.run_jobs(&slug(), 40).expect("jobs");
    assert_eq!(
        jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(),
        ["merge-gate", "pack"]
    );
    let artifact = c.artifact(&slug(), 7001).expect("artifact");
    assert_eq!((artifact.run_id, artifact.size), (Some(40), 3));
    server.assert_clean();
}

#[test]
fn server_errors_and_dropped_connections_are_retried() {
    let server = server();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.fail_next = vec![502, 503];
        fake.reset_next = 1;
    }
    let c = client(&server);
    assert_eq!(
        c.repository(&slug()).expect("after retries").full_name,
        REPO
    );
    assert_eq!(
        server.state.lock().expect("lock").requests.len(),
        4,
        "a reset, two server errors, then the answer"
    );
    server.state.lock().expect("lock").fail_next = vec![500; 10];
    let err = c.repository(&slug()).expect_err("gives up");
    assert!(
        matches!(err, GitHubError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(
        server.state.lock().expect("lock").fail_next.len(),
        5,
        "bounded: five tries"
    );
    server.assert_clean();
}

#[test]
fn refusals_are_typed_with_a_hint() {
    let server = server();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.tokens.insert("ro".into(), "reader".into());
        fake.read_only.push("ro".into());
        fake.pulls.insert(3, FakePull::open(&sha('a')));
        fake.issues.insert(7, FakeIssue::default());
    }
    let reader = Client::new(&server.url, &Token::new("ro")).expect("client");
    let err = reader
        .create_status(
            &slug(),
            &sha('a'),
            &NewStatus {
                state: "success",
                context: "aayudha/proof",
                description: "x",
                target_url: None,
            },
        )
        .expect_err("read-only");
    insta::assert_snapshot!("statuses_read_only_hint", err.hint().expect("hint"));
    let err = reader
        .update_issue(&slug(), 7, Some("x"), None)
        .expect_err("read-only");
    insta::assert_snapshot!("issues_read_only_hint", err.hint().expect("hint"));
    let err = reader
        .squash_merge(&slug(), 3, &sha('a'))
        .expect_err("read-only");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");
    let stranger = Client::new(&server.url, &Token::new("nope")).expect("client");
    let err = stranger.pull(&slug(), 3).expect_err("401");
    assert!(matches!(err, GitHubError::Unauthorized { .. }));
    insta::assert_snapshot!("unauthorized_hint", err.hint().expect("hint"));
    let c = client(&server);
    let err = c.squash_merge(&slug(), 3, &sha('b')).expect_err("moved");
    assert!(matches!(err, GitHubError::Conflict { .. }), "{err:?}");
    c.squash_merge(&slug(), 3, &sha('a')).expect("merge");
    assert!(c.pull(&slug(), 3).expect("pull").merged);
    server.assert_clean();
}

/// What issue 41's ship reads of the repository and of its attestations: the record's ids and address, a
/// comparison's status, and every attestation of a digest in either of the API's two shapes, three pages
/// at most, with "none" only for an empty list or a 404.
#[test]
fn the_repository_record_a_comparison_and_the_attestations_of_a_digest_are_read() {
    use aayudha::github::AttestationItem;
    use serde_json::json;
    let server = server();
    let digest = "ab".repeat(32);
    {
        let mut fake = server.state.lock().expect("lock");
        fake.compares
            .insert(format!("{}...main", sha('b')), "ahead".into());
        // 320 items over four pages of 100: the first inline, the others by address; the fourth page
        // (item 301 on) is never asked for.
        let items = (0..320)
            .map(|i| {
                if i == 0 {
                    json!({"bundle": {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}, "repository_id": 1})
                } else {
                    json!({"bundle": null, "bundle_url": format!("https://example.test/b/{i}")})
                }
            })
            .collect();
        fake.attestations.insert(format!("sha256:{digest}"), items);
    }
    let c = client(&server);
    let repo = c.repository(&slug()).expect("repository");
    assert!(repo.id > 0 && repo.owner_id > 0, "{repo:?}");
    assert_eq!(repo.html_url, format!("https://github.com/{REPO}"));
    assert_eq!(
        c.compare_status(&slug(), &sha('b'), "main")
            .expect("compare"),
        "ahead"
    );
    assert!(matches!(
        c.compare_status(&slug(), &sha('c'), "main")
            .expect_err("404"),
        GitHubError::NotFound { .. }
    ));
    let found = c.attestations(&slug(), &digest).expect("attestations");
    assert_eq!(found.len(), 300, "three pages of 100, no more");
    assert!(
        matches!(&found[0], AttestationItem::Bundle(b) if b["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json")
    );
    assert_eq!(
        found[1],
        AttestationItem::Url("https://example.test/b/1".into())
    );
    // None for a digest GitHub has no attestation of (404).
    assert_eq!(
        c.attestations(&slug(), &"cd".repeat(32)).expect("none"),
        Vec::new()
    );
    server.assert_clean();
}
