//! `aayu proof push` through the real binary: a real local pack from `aayu verify --ci` on the Go example
//! lands as advisory on origin's ledger with its own comment, a repeat duplicates nothing, `proof verify`
//! reads it, and CI or a tampered local pack is refused.

use crate::common;
use crate::support::fake_github;

use crate::common::{TALLY_EVIDENCE, run, tally};
use fake_github::{FakeIssue, FakePull};

const GOAL: &str = "1. Blank lines are skipped.";

#[test]
fn a_local_pack_lands_as_advisory_with_its_own_comment_and_verifies() {
    crate::needs!(go);
    let (repo, base, head) = tally(TALLY_EVIDENCE, "");
    let (origin, url) = common::bare_repo();
    repo.git(&["remote", "add", "origin", &url]);
    repo.git(&["push", "-q", "origin", "main"]);
    repo.write(".gitignore", ".aayudha/proof/\n");
    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "alice".into());
        fake.issues.insert(
            902,
            FakeIssue {
                title: "Blank lines".into(),
                body: Some(format!("## Completion Goal\n\n{GOAL}\n")),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
        fake.pulls.insert(5, FakePull::open(&head));
    }
    let aayu = |args: &[&str]| {
        let mut cmd = common::aayu_in(repo.root());
        common::with_toolchain(&mut cmd)
            .env("GITHUB_TOKEN", "t")
            .env("GITHUB_API_URL", &github.url)
            .env("GH_REPO", "octo/shop")
            .args(args);
        run(&mut cmd)
    };
    let ready = aayu(&["ready", "902"]);
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    repo.git(&["fetch", "-q", "origin", "ledger"]);
    let ci = aayu(&[
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "902",
    ]);
    assert_eq!(ci.code, 0, "{}{}", ci.stdout, ci.stderr);

    crate::aayu_snapshot!("proof_push_advisory", aayu(&["proof", "push", "902"]));
    let listed = common::git_command(origin.path())
        .args([
            "ls-tree",
            "-r",
            "--name-only",
            "ledger",
            &format!("proof/902/{head}/advisory"),
        ])
        .output()
        .expect("ls-tree");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    // Two paths in the list of what landed.
    assert!(
        listed.contains("/pack.json") && listed.contains("/artifacts/evidence/criterion-1.jsonl"),
        "{listed}"
    );
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    insta::assert_snapshot!("proof_push_comment", common::redact(&comments[0].body));
    // The rule, said outright.
    assert!(
        !comments[0].body.contains("<!-- aayudha:proof -->"),
        "never the gate's marker"
    );

    crate::aayu_snapshot!("proof_push_again", aayu(&["proof", "push", "902"]));
    assert_eq!(github.comments().len(), 1, "no second comment");

    let verified = aayu(&["proof", "verify", "902", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&verified.stdout).expect("json");
    assert_eq!(report["authority"], "advisory", "{report:#}");
    assert_eq!(report["verifies"], true, "{report:#}\n{}", verified.stderr);

    // A tampered local pack is refused before anything is written.
    let evidence = repo.path(".aayudha/proof/902/artifacts/evidence/criterion-1.jsonl");
    // The evidence's size follows go's timings in it: the snapshot holds the words, not the number.
    let size = std::fs::metadata(&evidence).expect("evidence").len();
    std::fs::write(&evidence, "forged\n").expect("write");
    let tampered = aayu(&["proof", "push", "902"]);
    insta::assert_snapshot!(
        "proof_push_tampered",
        common::whole(&tampered).replace(&format!(" and {size} bytes"), " and [n] bytes")
    );
    let in_ci = run(common::aayu_in(repo.root())
        .env("CI", "true")
        .args(["proof", "push", "902"]));
    crate::aayu_snapshot!("proof_push_in_ci", in_ci);
    github.assert_clean();
}
