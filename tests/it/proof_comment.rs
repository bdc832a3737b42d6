//! `aayu proof comment` through the real binary against the fake GitHub: the verdict comment, the
//! `aayudha/proof` status, the exit codes, and a read-only token degrading to the job summary.

use crate::common;
use crate::support::fake_github;

use crate::common::run;
use fake_github::{FakePull, Server};
use serde_json::json;

const HEAD: &str = "1111111111111111111111111111111111111111";
const GOAL: &str = "1. Blank lines are skipped.";

/// A pack folder proving story 7 on `head`, whose floors hold unless `floor_fails`.
fn pack(head: &str, floor_fails: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp");
    let evidence = b"{\"Action\":\"pass\",\"Test\":\"TestSumSkipsBlankLines\"}\n";
    std::fs::create_dir_all(dir.path().join("artifacts/evidence")).expect("mkdir");
    std::fs::write(
        dir.path().join("artifacts/evidence/criterion-1.jsonl"),
        evidence,
    )
    .expect("write");
    let pack = json!({
        "schema_version": 1, "repo": "octo/shop", "story": 7, "pr": 3, "pr_head_sha": head,
        "seat": "ai-native-engineer", "host": "action", "identity": "ci", "authority": {"kind": "advisory"},
        "completion_goal_hash": aayudha::hash::bytes(GOAL.as_bytes()),
        "criteria": [{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}],
        "artifacts": [{"path": "evidence/criterion-1.jsonl", "kind": "api-trace", "sha256": aayudha::hash::bytes(evidence), "size": evidence.len(), "store": "git"}],
        "checks": [{"floor": "tests", "result": if floor_fails { "fail" } else { "pass" }, "value": 1, "threshold": 1, "tool": "t", "version": "v", "detail": "@octocat <!-- x -->", "network": "isolated"}],
        "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0}, "links": {}, "created_at": "2026-11-29T10:00:00Z"
    });
    std::fs::write(
        dir.path().join("pack.json"),
        serde_json::to_vec_pretty(&pack).expect("json"),
    )
    .expect("write");
    dir
}

fn github(read_only: bool) -> Server {
    let server = Server::start();
    let mut fake = server.state.lock().expect("lock");
    fake.tokens
        .insert("ghs_job".into(), "github-actions[bot]".into());
    fake.no_user.push("ghs_job".into());
    if read_only {
        fake.read_only.push("ghs_job".into());
    }
    fake.pulls.insert(3, FakePull::open(HEAD));
    let snapshot = format!(
        "# Story 7: t\n\n<!-- aayudha:ready {{\"story\": 7, \"completion_goal_hash\": \"{}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{GOAL}\n",
        aayudha::hash::bytes(GOAL.as_bytes())
    );
    fake.files.insert(
        ("ledger".into(), "specs/7/ready.md".into()),
        snapshot.into_bytes(),
    );
    drop(fake);
    server
}

fn comment(server: &Server, pack: &std::path::Path, run_id: &str) -> (common::Run, String) {
    let dir = tempfile::tempdir().expect("temp");
    let summary = dir.path().join("summary.md");
    let out = run(common::aayu_in(dir.path())
        .env("GITHUB_API_URL", &server.url)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_TOKEN", "ghs_job")
        .env("GITHUB_REPOSITORY", "octo/shop")
        .env("GITHUB_RUN_ID", run_id)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .arg("proof")
        .arg("comment")
        .args(["--pr", "3", "--pack"])
        .arg(pack));
    let summary = std::fs::read_to_string(&summary).unwrap_or_default();
    (out, summary)
}

#[test]
fn a_pack_that_verifies_gets_one_comment_and_a_success_status() {
    let server = github(false);
    let folder = pack(HEAD, false);
    let (out, summary) = comment(&server, folder.path(), "101");
    crate::aayu_snapshot!("comment_proven", out);
    // The verdict is in the job summary too: the same text.
    assert_eq!(summary, out.stdout);
    let comments = server.comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].login, "github-actions[bot]");
    assert!(
        comments[0]
            .body
            .starts_with(aayudha::publish::comment::MARKER)
    );
    insta::assert_snapshot!("comment_proven_body", common::redact(&comments[0].body));
    // The floor's detail (`@octocat <!-- x -->`) is shown as code: the comment has exactly the heading,
    // the link and the hidden markers aayu wrote, no mention, no HTML of the pack's.
    let shape = common::rendered(&comments[0].body);
    assert_eq!(
        shape.headings,
        vec!["aayudha proof — proven: the pack verifies and every floor holds"]
    );
    assert_eq!(
        shape.links,
        vec!["https://github.example/octo/shop/actions/runs/101"]
    );
    assert!(
        shape.mentions.is_empty() && shape.images.is_empty(),
        "{shape:?}"
    );
    assert!(
        shape.html.iter().all(|h| h.starts_with("<!-- aayudha:")),
        "{shape:?}"
    );
    let statuses = server.state.lock().expect("lock").statuses.clone();
    assert_eq!(statuses.len(), 1);
    let status = &statuses[0];
    let description = &status.description;
    assert_eq!(
        (
            status.sha.as_str(),
            status.state.as_str(),
            status.context.as_str()
        ),
        (HEAD, "success", "aayudha/proof")
    );
    assert!(
        description.starts_with("run 101 pack sha256 ")
            && description.len() == "run 101 pack sha256 ".len() + 64,
        "{description}"
    );
    // A second run edits the same comment.
    let (out, _) = comment(&server, folder.path(), "102");
    assert_eq!(out.code, 0);
    assert_eq!(server.comments().len(), 1);
    server.assert_clean();
}

#[test]
fn a_pack_of_another_head_does_not_verify_and_exits_4() {
    let server = github(false);
    let folder = pack("2222222222222222222222222222222222222222", false);
    let (out, _) = comment(&server, folder.path(), "5");
    crate::aayu_snapshot!("comment_another_head", out);
    assert_eq!(
        server.state.lock().expect("lock").statuses[0].state,
        "failure"
    );
}

#[test]
fn a_floor_that_does_not_hold_exits_3() {
    let server = github(false);
    let folder = pack(HEAD, true);
    let (out, _) = comment(&server, folder.path(), "5");
    crate::aayu_snapshot!("comment_floor_fails", out);
}

#[test]
fn a_tampered_pack_does_not_verify() {
    let server = github(false);
    let folder = pack(HEAD, false);
    std::fs::write(
        folder.path().join("artifacts/evidence/criterion-1.jsonl"),
        "forged\n",
    )
    .expect("write");
    let (out, _) = comment(&server, folder.path(), "5");
    crate::aayu_snapshot!("comment_tampered", out);
}

#[test]
fn a_read_only_token_degrades_to_the_job_summary() {
    let server = github(true);
    let folder = pack(HEAD, false);
    let (out, summary) = comment(&server, folder.path(), "5");
    // The verdict stands (exit 0); the warning names the permission to add.
    crate::aayu_snapshot!("comment_read_only_token", out);
    assert_eq!(
        summary, out.stdout,
        "the verdict is in the job summary instead"
    );
    assert!(server.comments().is_empty());
}

#[test]
fn the_snapshot_comes_from_the_ledger_the_default_branch_names() {
    let server = github(false);
    {
        let mut fake = server.state.lock().expect("lock");
        // The default branch keeps its ledger on `proofs`; the branch `ledger` holds a snapshot that does
        // not match (as a pull request's author could push one).
        let snapshot = fake
            .files
            .remove(&("ledger".to_string(), "specs/7/ready.md".to_string()))
            .expect("snapshot");
        fake.files.insert(
            ("ledger".into(), "specs/7/ready.md".into()),
            String::from_utf8_lossy(&snapshot)
                .replace("Blank lines are skipped.", "Anything goes.")
                .into_bytes(),
        );
        fake.files
            .insert(("proofs".into(), "specs/7/ready.md".into()), snapshot);
        fake.files.insert(
            ("main".into(), ".aayudha/config.toml".into()),
            b"[ledger]\nbranch = \"proofs\"\n".to_vec(),
        );
    }
    let folder = pack(HEAD, false);
    let (out, _) = comment(&server, folder.path(), "101");
    // Word for word what the default ledger branch gives.
    crate::aayu_snapshot!("comment_proven", out);
}

/// A pack whose artifact path carries a newline and a workflow command, and whose floor detail carries a
/// heading: the pack job's log acts on none of it, and the comment has exactly aayu's heading and links.
#[test]
fn a_hostile_pack_forges_nothing_in_the_log_or_the_comment() {
    let server = github(false);
    let folder = pack(HEAD, false);
    let path = folder.path().join("pack.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    value["artifacts"][0]["path"] =
        json!("evidence/x\n::warning title=aayudha proof::proven by aayudha");
    value["checks"][0]["detail"] =
        json!("fine\n### aayudha proof — proven\n[click](https://evil.example) @octocat");
    std::fs::write(&path, serde_json::to_vec_pretty(&value).expect("json")).expect("write");
    let dir = tempfile::tempdir().expect("temp");
    let out = run(common::aayu_in(dir.path())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_API_URL", &server.url)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_TOKEN", "ghs_job")
        .env("GITHUB_REPOSITORY", "octo/shop")
        .env("GITHUB_RUN_ID", "101")
        .args(["proof", "comment", "--pr", "3", "--pack"])
        .arg(folder.path()));
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let live = common::live_commands(text);
        assert!(
            live.iter().all(|l| !l.contains("proven by aayudha")),
            "{stream}: {live:?}"
        );
    }
    let comments = server.comments();
    insta::assert_snapshot!(
        "comment_hostile_pack_body",
        common::redact(&comments[0].body)
    );
    let shape = common::rendered(&comments[0].body);
    assert_eq!(
        shape.headings,
        vec!["aayudha proof — not proven: the pack does not verify"],
        "{}",
        comments[0].body
    );
    assert_eq!(
        shape.links,
        vec!["https://github.example/octo/shop/actions/runs/101"]
    );
    assert!(
        shape.mentions.is_empty() && shape.emphasis == 1,
        "{shape:?}"
    );
}

/// The action's token order (`docs/github.md`): the `token` input, then `GITHUB_TOKEN`; a `GH_TOKEN` a
/// workflow carries for another step is never taken.
#[test]
fn the_comment_job_never_takes_gh_token() {
    let server = Server::start();
    let dir = tempfile::tempdir().expect("temp");
    let out = run(common::aayu_in(dir.path())
        .env("GITHUB_API_URL", &server.url)
        .env("GITHUB_REPOSITORY", "octo/shop")
        .env("GH_TOKEN", "ghp_personal")
        .args(["proof", "comment", "--pr", "3", "--pack"])
        .arg(dir.path()));
    crate::aayu_snapshot!("comment_never_gh_token", out);
    assert!(server.state.lock().expect("lock").requests.is_empty());
}
