//! `verify --map|--check … --maintain drift|always` and `aayu action --mode maintain` against the fake
//! GitHub: one tracking issue (also when two runs race), drift mode's silence, the mention by who posts,
//! and a brief that cannot be posted.

use std::process::Command;

use crate::common::{self, TestRepo, feature_md, map_readme, run, skill};
use crate::support::fake_github::{FakeIssue, Server};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const LABEL: &str = "aayudha:verify-maintain";
const MARKER: &str = "<!-- aayudha:verify-maintain -->";
/// A person's token (alice) and a workflow's (`GET /user` forbidden, acting as github-actions[bot]).
const PERSON: &str = "ghp_alice";
const WORKFLOW: &str = "ghs_workflow";

const MAP: &str = r#"{"product": "shop", "control": ["tools/shop-control"],
 "surfaces": [{"kind": "command", "files": ["src/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}]}"#;
const FEATURE: &str = r#"{"id": "buy", "layers": ["L02"], "sources": ["src/main.rs"],
 "surfaces": {"command": ["buy"]}, "verified_at": ""}"#;
const CHECK: &str =
    r#"{"id": "buys", "kind": "cli", "evidence": "report", "steps": [{"run": ["shop", "buy"]}]}"#;

/// A product `shop` whose map matches its source: nothing drifts.
fn shop(maintainer: &str) -> TestRepo {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    repo.write("src/main.rs", "fn main() {\n    cmd(\"buy\");\n}\n")
        .write(&format!("{dir}/README.md"), map_readme(MAP, &["buy.md"]))
        .write(&format!("{dir}/buy.md"), feature_md(FEATURE, &[CHECK]))
        .write(
            ".aayudha/config.toml",
            format!("[verify]\nmaintainer = \"{maintainer}\"\n"),
        );
    repo.commit("shop");
    repo
}

/// Adds commands no feature maps: each is drift.
fn drift(repo: &TestRepo, commands: &[&str]) {
    let extra: String = commands
        .iter()
        .map(|c| format!("    cmd(\"{c}\");\n"))
        .collect();
    repo.write(
        "src/main.rs",
        format!("fn main() {{\n    cmd(\"buy\");\n{extra}}}\n"),
    );
}

fn github() -> Server {
    let server = Server::start();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.tokens.insert(PERSON.into(), "alice".into());
        fake.tokens
            .insert(WORKFLOW.into(), "github-actions[bot]".into());
        fake.no_user.push(WORKFLOW.into());
    }
    server
}

/// `aayu` in the repository, talking to the fake as `octo/shop` with `token`.
fn aayu(repo: &TestRepo, github: &Server, token: &str) -> Command {
    let mut cmd = repo.aayu();
    cmd.env("GITHUB_API_URL", &github.url)
        .env("GH_REPO", "octo/shop")
        .env("GITHUB_TOKEN", token);
    cmd
}

fn map_brief(repo: &TestRepo, github: &Server, token: &str, mode: &str) -> common::Run {
    run(aayu(repo, github, token).args(["verify", "--map", "--maintain", mode]))
}

/// The open issues carrying the label, as (number, author).
fn tracking(github: &Server) -> Vec<(u64, String)> {
    let fake = github.state.lock().expect("lock");
    fake.issues
        .iter()
        .filter(|(_, i)| i.state == "open" && i.labels.iter().any(|l| l == LABEL))
        .map(|(n, _)| (*n, fake.issue_authors.get(n).cloned().unwrap_or_default()))
        .collect()
}

fn requests(github: &Server, start: &str) -> usize {
    let fake = github.state.lock().expect("lock");
    fake.requests
        .iter()
        .filter(|r| r.starts_with(start))
        .count()
}

fn briefs(github: &Server, issue: u64) -> Vec<String> {
    github
        .comments_on(issue)
        .into_iter()
        .map(|c| c.body)
        .filter(|b| b.contains("<!-- aayudha:digest "))
        .collect()
}

/// JSON with sorted keys and no whitespace, written here from the contract (not taken from aayu).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", json!(k), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn digest_of(drift: &Value, checks: &Value) -> String {
    let document = canonical(&json!({"drift": drift, "checks": checks}));
    Sha256::digest(document.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_tracking_issue_and_its_label_are_made_once_and_each_brief_is_a_new_comment() {
    let repo = shop("claude-code");
    drift(&repo, &["refund"]);
    let github = github();
    // The run's own exit (drift) and report, then what was posted where.
    crate::aayu_snapshot!(
        "brief_posted_first",
        map_brief(&repo, &github, PERSON, "always")
    );
    crate::aayu_snapshot!(
        "brief_posted_again",
        map_brief(&repo, &github, PERSON, "always")
    );
    assert_eq!(tracking(&github), [(1, "alice".to_string())]);
    {
        let fake = github.state.lock().expect("lock");
        assert_eq!(fake.labels, [LABEL]);
        let issue = &fake.issues[&1];
        assert!(
            issue.body.as_deref().is_some_and(|b| b.starts_with(MARKER)),
            "{issue:?}"
        );
    }
    assert_eq!(requests(&github, "POST label"), 1, "the label is made once");
    assert_eq!(requests(&github, "POST issue"), 1, "the issue is made once");
    let posted = briefs(&github, 1);
    assert_eq!(posted.len(), 2, "always: a new comment each run");

    // The digest is the SHA-256 of the canonical JSON of the report's drift and the failing checks.
    let report: Value =
        serde_json::from_str(&run(repo.aayu().args(["verify", "--map", "--json"])).stdout)
            .expect("json");
    let digest = digest_of(&report["drift"], &json!([]));
    assert!(
        posted[1].ends_with(&format!("<!-- aayudha:digest {digest} -->\n")),
        "{}",
        posted[1]
    );
    insta::assert_snapshot!("maintain_brief_claude", common::redact(&posted[1]));
}

#[test]
fn drift_mode_is_silent_when_clean_and_on_a_repeated_report_and_posts_when_it_changes() {
    let repo = shop("codex");
    let github = github();
    crate::aayu_snapshot!(
        "brief_drift_mode_clean",
        map_brief(&repo, &github, PERSON, "drift")
    );
    assert!(
        github.state.lock().expect("lock").requests.is_empty(),
        "a clean run asks GitHub nothing"
    );

    drift(&repo, &["refund"]);
    crate::aayu_snapshot!(
        "brief_drift_mode_posted",
        map_brief(&repo, &github, PERSON, "drift")
    );
    crate::aayu_snapshot!(
        "brief_drift_mode_repeated",
        map_brief(&repo, &github, PERSON, "drift")
    );
    assert_eq!(briefs(&github, 1).len(), 1);

    // A forged comment with another digest, by someone else, does not count as the newest brief.
    {
        let mut fake = github.state.lock().expect("lock");
        fake.next_id += 1;
        let id = fake.next_id;
        fake.comments.push(crate::support::fake_github::Comment {
            id,
            issue: Some(1),
            login: "mallory".into(),
            body: format!("<!-- aayudha:digest {} -->", "0".repeat(64)),
            minimized: false,
        });
    }
    crate::aayu_snapshot!(
        "brief_drift_mode_forged_digest_ignored",
        map_brief(&repo, &github, PERSON, "drift")
    );

    drift(&repo, &["refund", "resell"]);
    crate::aayu_snapshot!(
        "brief_drift_mode_changed",
        map_brief(&repo, &github, PERSON, "drift")
    );
    let posted = briefs(&github, 1);
    assert_eq!(posted.len(), 3, "two briefs and the forged comment");
    insta::assert_snapshot!("maintain_brief_codex_changed", common::redact(&posted[2]));

    // `always` posts even when nothing is wrong, and says so.
    let repo = shop("codex");
    let always = map_brief(&repo, &github, PERSON, "always");
    assert_eq!(always.code, 0, "{}", always.stderr);
    let last = briefs(&github, 1).pop().expect("a brief");
    insta::assert_snapshot!("maintain_brief_nothing_wrong", common::redact(&last));
}

#[test]
fn two_racing_runs_leave_one_tracking_issue_the_first_created() {
    let repo = shop("claude-code");
    drift(&repo, &["refund"]);
    // Another run creates its tracking issue between this run's search and its creation.
    let github = github();
    github.state.lock().expect("lock").race_issue = Some((
        "bob".into(),
        FakeIssue {
            title: "aayudha: keep the feature maps honest".into(),
            body: Some(format!("{MARKER}\nbob's run")),
            labels: vec![LABEL.into()],
            state: "open".into(),
        },
    ));
    crate::aayu_snapshot!(
        "brief_race_closes_the_duplicate",
        map_brief(&repo, &github, PERSON, "always")
    );
    assert_eq!(tracking(&github), [(1, "bob".to_string())]);
    {
        let fake = github.state.lock().expect("lock");
        assert_eq!(fake.issues[&2].state, "closed");
    }
    let note = github.comments_on(2);
    assert_eq!(note.len(), 1);
    insta::assert_snapshot!("race_duplicate_note", common::redact(&note[0].body));
    assert_eq!(briefs(&github, 1).len(), 1, "the brief is on the winner");
    assert!(briefs(&github, 2).is_empty());

    // Two real processes at once: however they interleave, one tracking issue stays open and the label
    // exists once.
    let github = crate::support::fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert(PERSON.into(), "alice".into());
    }
    let children: Vec<_> = (0..2)
        .map(|_| {
            aayu(&repo, &github, PERSON)
                .args(["verify", "--map", "--maintain", "always"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("aayu starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("aayu ends");
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let open = tracking(&github);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].0, 1, "the first created wins");
    assert_eq!(github.state.lock().expect("lock").labels, [LABEL]);
    assert_eq!(briefs(&github, 1).len(), 2, "both briefs on the winner");
}

#[test]
fn the_brief_mentions_the_maintainer_with_a_persons_token_and_nobody_from_actions() {
    for (maintainer, name) in [
        ("claude-code", "claude_code"),
        ("codex", "codex"),
        ("cursor", "cursor"),
        ("amp", "amp"),
        ("", "none"),
    ] {
        let repo = shop(maintainer);
        drift(&repo, &["refund"]);
        let github = github();
        let out = map_brief(&repo, &github, PERSON, "drift");
        assert_eq!(out.code, 3, "{maintainer}: {}", out.stderr);
        let brief = briefs(&github, 1).pop().expect("a brief");
        insta::assert_snapshot!(
            format!("maintain_brief_mention_{name}"),
            common::redact(&brief)
        );
        if maintainer == "amp" || maintainer.is_empty() {
            // The rule, said outright: no `@` at all, so no mention whatever the wording.
            assert!(!brief.contains('@'), "no mention: {brief}");
        }
    }

    // In GitHub Actions, `aayu action --mode maintain`: a record with no mention, said in the summary.
    let repo = shop("claude-code");
    drift(&repo, &["refund"]);
    let github = github();
    let summary = repo.path(".git/summary.md");
    let out = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", repo.root())
        .env("GITHUB_REPOSITORY", "octo/shop")
        .env("GITHUB_API_URL", &github.url)
        .env("GITHUB_EVENT_NAME", "schedule")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("INPUT_MODE", "maintain")
        .env("INPUT_TOKEN", WORKFLOW)
        .arg("action"));
    assert_eq!(out.code, 3, "the map run's exit: {}", out.stderr);
    let brief = briefs(&github, 1).pop().expect("a brief");
    insta::assert_snapshot!("maintain_brief_from_actions", common::redact(&brief));
    // The rule, said outright: the maintainer is not mentioned.
    assert!(!brief.contains("@claude"), "{brief}");
    assert_eq!(tracking(&github), [(1, "github-actions[bot]".to_string())]);
    let summary = std::fs::read_to_string(&summary).expect("the job summary");
    insta::assert_snapshot!("maintain_summary_from_actions", common::redact(&summary));
    // The action's token order is the input, then GITHUB_TOKEN: a person's GH_TOKEN in the job is not
    // taken, and nothing is posted.
    let posted = github.state.lock().expect("lock").comments.len();
    let no_token = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", repo.root())
        .env("GITHUB_REPOSITORY", "octo/shop")
        .env("GITHUB_API_URL", &github.url)
        .env("GITHUB_EVENT_NAME", "schedule")
        .env("INPUT_MODE", "maintain")
        .env("INPUT_TOKEN", "")
        .env("GH_TOKEN", PERSON)
        .arg("action"));
    crate::aayu_snapshot!("maintain_action_without_a_token", no_token);
    assert_eq!(github.state.lock().expect("lock").comments.len(), posted);
    // The workflow token's own briefs are what drift mode compares with.
    let again = run(aayu(&repo, &github, WORKFLOW)
        .env("GITHUB_ACTIONS", "true")
        .args(["verify", "--map", "--maintain", "drift"]));
    crate::aayu_snapshot!("brief_workflow_token_same_digest", again);
}

#[test]
fn a_brief_that_cannot_be_posted_exits_1_with_the_hint_and_the_report_is_written() {
    let repo = shop("claude-code");
    drift(&repo, &["refund"]);
    let github = github();
    github
        .state
        .lock()
        .expect("lock")
        .read_only
        .push(PERSON.into());
    let out = run(aayu(&repo, &github, PERSON).args([
        "verify",
        "--map",
        "--json",
        "--maintain",
        "always",
    ]));
    let report: Value = serde_json::from_str(&out.stdout).expect("the report, whole");
    assert_eq!(report["drift"][0]["kind"], "unmapped-surface");
    // Exit 1 after the report is written, with GitHub's hint (the stdout part is the JSON above).
    crate::aayu_snapshot!(
        "brief_not_posted",
        crate::common::Run {
            stdout: String::new(),
            ..out
        }
    );
}

#[test]
fn a_check_run_briefs_its_failing_checks_with_their_reasons() {
    crate::needs!(perl);
    let repo = common::hostile::hostile(&["fails", "passes", "silent"], "{}");
    let github = github();
    let out = run(aayu(&repo, &github, PERSON).args([
        "verify",
        "--check",
        "hostile",
        "--json",
        "--out",
        "run",
        "--maintain",
        "drift",
    ]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("the report");
    let brief = briefs(&github, 1).pop().expect("a brief");
    // The failing and the blocked check with their reasons; the passing one not at all.
    insta::assert_snapshot!("maintain_brief_failing_checks", common::redact(&brief));
    let checks: Vec<Value> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] == "failed" || c["status"] == "blocked")
        .map(|c| json!({"feature": c["feature"], "check": c["check"], "status": c["status"], "reason": c["reason"]}))
        .collect();
    assert_eq!(checks.len(), 2);
    let digest = digest_of(&json!([]), &json!(checks));
    // The snapshot redacts hashes: the digest it ends with is this one.
    assert!(
        brief.contains(&format!("<!-- aayudha:digest {digest} -->")),
        "{brief}"
    );
}

#[test]
fn maintain_is_refused_where_it_cannot_work_before_anything_runs() {
    let repo = shop("claude-code");
    let github = github();
    let ci = run(aayu(&repo, &github, PERSON).args(["verify", "--ci", "--maintain", "drift"]));
    crate::aayu_snapshot!("maintain_with_ci", ci);
    let mode =
        run(aayu(&repo, &github, PERSON).args(["verify", "--map", "--maintain", "sometimes"]));
    crate::aayu_snapshot!("maintain_unknown_mode", mode);
    let no_token = run(repo
        .aayu()
        .env("GH_REPO", "octo/shop")
        .env("PATH", "/nonexistent")
        .args(["verify", "--map", "--maintain", "always"]));
    // Nothing ran: stdout is empty.
    crate::aayu_snapshot!("maintain_without_a_token", no_token);
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nmaintainer = \"copilot\"\n",
    );
    let unknown = map_brief(&repo, &github, PERSON, "always");
    crate::aayu_snapshot!("maintain_unknown_maintainer", unknown);
    assert!(github.state.lock().expect("lock").requests.is_empty());
}

#[test]
fn a_tracking_issue_that_lost_its_label_is_found_by_its_marker_and_labelled_again() {
    let repo = shop("cursor");
    drift(&repo, &["refund"]);
    let github = github();
    {
        let mut fake = github.state.lock().expect("lock");
        // Someone else's issue quoting the marker is not it: only the token's user's own are searched.
        for (number, author) in [(4, "mallory"), (5, "alice")] {
            fake.issues.insert(
                number,
                FakeIssue {
                    title: "aayudha: keep the feature maps honest".into(),
                    body: Some(format!("{MARKER}\nthe label was taken off")),
                    labels: vec!["chore".into()],
                    state: "open".into(),
                },
            );
            fake.issue_authors.insert(number, author.into());
        }
        fake.labels = vec!["chore".into(), LABEL.into()];
    }
    crate::aayu_snapshot!(
        "brief_found_by_marker",
        map_brief(&repo, &github, PERSON, "always")
    );
    assert_eq!(tracking(&github), [(5, "alice".to_string())]);
    assert_eq!(requests(&github, "POST issue"), 0);
    assert_eq!(
        github.state.lock().expect("lock").issues[&5].labels,
        ["chore", LABEL]
    );
    assert!(briefs(&github, 4).is_empty());
}

/// The local commands' token order (`docs/github.md`): `GITHUB_TOKEN`, then `GH_TOKEN`, then `gh auth
/// token` — which is never asked inside GitHub Actions.
#[test]
fn a_local_command_asks_gh_for_a_token_but_never_inside_actions() {
    use std::os::unix::fs::PermissionsExt;
    let repo = shop("claude-code");
    drift(&repo, &["sell"]);
    let github = github();
    let bin = tempfile::tempdir().expect("temp");
    let gh = bin.path().join("gh");
    std::fs::write(
        &gh,
        format!("#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo {PERSON}\n"),
    )
    .expect("write gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let brief = |vars: &[(&str, &str)]| {
        let mut cmd = repo.aayu();
        cmd.env("GITHUB_API_URL", &github.url)
            .env("GH_REPO", "octo/shop")
            .env("PATH", &path);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        run(cmd.args(["verify", "--map", "--maintain", "always"]))
    };
    crate::aayu_snapshot!("brief_token_from_gh", brief(&[]));
    crate::aayu_snapshot!(
        "brief_no_gh_inside_actions",
        brief(&[("GITHUB_ACTIONS", "true")])
    );
    // GITHUB_TOKEN before GH_TOKEN: an unknown GH_TOKEN would be refused by GitHub, the brief not posted.
    crate::aayu_snapshot!(
        "brief_github_token_before_gh_token",
        brief(&[("GITHUB_TOKEN", WORKFLOW), ("GH_TOKEN", "ghp_unknown")])
    );
    assert_eq!(tracking(&github)[0].1, "alice");
    let fake = github.state.lock().expect("lock");
    assert!(fake.unexpected.is_empty(), "{:?}", fake.unexpected);
}
