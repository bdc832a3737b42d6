//! `aayu ship` through the real binary against the fake GitHub and a local bare `origin`: every refusal of
//! `reference/security.md` ("Binding a run to a pull request head", the zip), the approval rule, the
//! solo bypass, `--dry-run`, a repeat that completes without duplicating anything, and the gate's timings
//! sidecar (landed beside the pack when usable, a notice when not).

use crate::common;
use crate::support::fake_github;

use crate::common::{TestRepo, run};
use fake_github::{FakeIssue, FakePull, FakeRun, FakeStatus};
use serde_json::{Value, json};

const REPO: &str = "octo/shop";
const HEAD: &str = "1111111111111111111111111111111111111111";
const GOAL: &str = "1. Blank lines are skipped.";
const EVIDENCE: &[u8] = b"{\"Action\":\"pass\",\"Test\":\"TestSumSkipsBlankLines\"}\n";
const GATE: &str = ".github/workflows/aayudha-merge-gate.yml";
/// The base commit the gate built on: on `main`, as the fake's comparison says.
const BASE: &str = "2222222222222222222222222222222222222222";

mod attestation;

fn snapshot() -> String {
    format!(
        "# Story 7: Totals\n\n<!-- aayudha:ready {{\"story\": 7, \"completion_goal_hash\": \"{}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{GOAL}\n",
        aayudha::hash::bytes(GOAL.as_bytes())
    )
}

fn pack_json(pr: u64, head: &str, floor: &str) -> Value {
    json!({
        "schema_version": 1, "repo": REPO, "story": 7, "pr": pr, "pr_head_sha": head, "base_sha": BASE,
        "seat": "ai-native-engineer", "host": "action", "identity": "ci",
        "authority": {"kind": "advisory", "workflow": GATE, "run_id": 1, "writer": "aayu action (merge gate)"},
        "completion_goal_hash": aayudha::hash::bytes(GOAL.as_bytes()),
        "criteria": [{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}],
        "artifacts": [{"path": "evidence/criterion-1.jsonl", "kind": "api-trace", "sha256": aayudha::hash::bytes(EVIDENCE), "size": EVIDENCE.len(), "store": "git"}],
        "checks": [{"floor": "tests", "result": floor, "value": 1, "threshold": 1, "tool": "t", "version": "v", "detail": "", "network": "isolated"}],
        "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0}, "links": {}, "created_at": "2026-11-29T10:00:00Z"
    })
}

/// A pack zip as the gate uploads it; `tamper` changes the evidence's bytes, `extra` adds a file the pack
/// does not list.
fn zip(pack: &Value, tamper: bool, extra: bool) -> (Vec<u8>, String) {
    let dir = tempfile::tempdir().expect("temp");
    std::fs::create_dir_all(dir.path().join("artifacts/evidence")).expect("mkdir");
    std::fs::write(
        dir.path().join("artifacts/evidence/criterion-1.jsonl"),
        if tamper {
            b"forged\n".as_slice()
        } else {
            EVIDENCE
        },
    )
    .expect("write");
    if extra {
        std::fs::write(dir.path().join("artifacts/evil.sh"), "rm -rf /\n").expect("write");
    }
    let mut bytes = serde_json::to_vec_pretty(pack).expect("json");
    bytes.push(b'\n');
    let sha = aayudha::hash::bytes(&bytes);
    std::fs::write(dir.path().join("pack.json"), bytes).expect("write");
    let mut out = Vec::new();
    aayudha::publish::archive::build(dir.path(), &mut out).expect("zip");
    (out, sha)
}

struct World {
    clone: TestRepo,
    origin: tempfile::TempDir,
    github: fake_github::Server,
}

/// Origin with `main` and the ledger holding story 7's snapshot; PR #3 at HEAD from `feature`, its body
/// naming story 7; bob (write) approved HEAD.
fn world() -> World {
    world_on(fake_github::Server::start())
}

/// [`world`] against the given GitHub.
fn world_on(github: fake_github::Server) -> World {
    let (origin, url) = common::bare_repo();
    let scratch = TestRepo::new();
    scratch.write("specs/7/ready.md", snapshot());
    scratch.commit("ready");
    scratch.git(&["push", "-q", &url, "HEAD:refs/heads/ledger"]);
    let clone = TestRepo::new();
    clone.write("README.md", "x\n");
    clone.commit("main");
    clone.git(&["remote", "add", "origin", &url]);
    clone.git(&["push", "-q", "origin", "main"]);
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "alice".into());
        let mut pull = FakePull::open(HEAD);
        pull.body = Some("Fixes the totals.\n\nStory: #7\n".into());
        fake.pulls.insert(3, pull);
        fake.issues.insert(
            7,
            FakeIssue {
                title: "Totals".into(),
                body: Some(format!("## Completion Goal\n\n{GOAL}\n")),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
        fake.reviews
            .insert(3, vec![("bob".into(), "APPROVED".into(), HEAD.into())]);
        fake.permissions.insert("bob".into(), "write".into());
        fake.refs.insert("heads/feature".into(), HEAD.into());
        fake.compares
            .insert(format!("{BASE}...main"), "ahead".into());
    }
    World {
        clone,
        origin,
        github,
    }
}

/// A gate run with its artifact and the `aayudha/proof` status binding it to HEAD.
fn gate_run(w: &World, run: FakeRun, artifact: (Vec<u8>, String), expired: bool) {
    let mut fake = w.github.state.lock().expect("lock");
    let id = run.id;
    fake.run_artifacts
        .push((id, 9000 + id, "aayudha-pack".into(), artifact.0, expired));
    fake.statuses.push(FakeStatus {
        sha: HEAD.into(),
        state: "success".into(),
        context: "aayudha/proof".into(),
        description: format!("run {id} pack sha256 {}", artifact.1),
        target_url: None,
        creator: "github-actions[bot]".into(),
    });
    fake.runs.push(run);
}

/// Runs `aayu ship`; whatever ship record is on origin's ledger afterwards must hold its schema.
fn ship(w: &World, args: &[&str]) -> common::Run {
    let out = run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GH_REPO", REPO)
        .arg("ship")
        .args(args));
    if let Some(record) = on_origin(w, "ship/7.json") {
        valid_record(&serde_json::from_str(&record).expect("the ship record is JSON"));
    }
    out
}

/// The ship record holds `schemas/ship.v1.json`.
pub(crate) fn valid_record(record: &Value) {
    valid_against(include_str!("../../schemas/ship.v1.json"), record);
}

/// `document` holds the JSON schema `schema` (its text): every error, with where, in the panic.
pub(crate) fn valid_against(schema: &str, document: &Value) {
    let schema: Value = serde_json::from_str(schema).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?} in {document:#}");
}

fn on_origin(w: &World, path: &str) -> Option<String> {
    let out = common::git_command(w.origin.path())
        .args(["show", &format!("ledger:{path}")])
        .output()
        .expect("git show");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ledger_commits(w: &World) -> usize {
    let out = common::git_command(w.origin.path())
        .args(["rev-list", "--count", "ledger"])
        .output()
        .expect("rev-list");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("count")
}

#[test]
fn every_run_that_does_not_qualify_is_passed_over_with_its_reason_and_nothing_is_written() {
    let w = world();
    let good = || zip(&pack_json(3, HEAD, "pass"), false, false);
    let gate = |id| FakeRun::gate(id, "aayudha-merge-gate.yml");
    gate_run(
        &w,
        FakeRun {
            event: "pull_request".into(),
            ..gate(10)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        FakeRun {
            event: "workflow_dispatch".into(),
            ..gate(11)
        },
        good(),
        false,
    );
    // Another repository's workflow file of the same name (a reusable workflow called from elsewhere).
    gate_run(
        &w,
        FakeRun {
            path: format!("mallory/shop/{GATE}@refs/heads/main"),
            ..gate(12)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        FakeRun {
            repository: "mallory/shop".into(),
            ..gate(13)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        FakeRun {
            conclusion: Some("failure".into()),
            ..gate(14)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        FakeRun {
            status: "in_progress".into(),
            conclusion: None,
            ..gate(15)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        gate(16),
        zip(&pack_json(3, &"2".repeat(40), "pass"), false, false),
        false,
    );
    gate_run(
        &w,
        gate(17),
        zip(&pack_json(4, HEAD, "pass"), false, false),
        false,
    );
    gate_run(&w, gate(18), good(), true);
    gate_run(&w, gate(19), good(), false);
    w.github.state.lock().expect("lock").run_artifacts.push((
        19,
        9999,
        "aayudha-pack".into(),
        good().0,
        false,
    ));
    gate_run(
        &w,
        gate(20),
        zip(&pack_json(3, HEAD, "pass"), true, false),
        false,
    );
    gate_run(
        &w,
        gate(21),
        zip(&pack_json(3, HEAD, "pass"), false, true),
        false,
    );
    gate_run(
        &w,
        FakeRun {
            path: format!("{GATE}@refs/heads/feature"),
            ..gate(22)
        },
        good(),
        false,
    );
    gate_run(
        &w,
        gate(23),
        zip(&pack_json(3, HEAD, "fail"), false, false),
        false,
    );
    // A good artifact whose binding status names another run.
    {
        let (bytes, sha) = good();
        let mut fake = w.github.state.lock().expect("lock");
        fake.run_artifacts
            .push((24, 9024, "aayudha-pack".into(), bytes, false));
        fake.statuses.push(FakeStatus {
            sha: HEAD.into(),
            state: "success".into(),
            context: "aayudha/proof".into(),
            description: format!("run 999 pack sha256 {sha}"),
            target_url: None,
            creator: "github-actions[bot]".into(),
        });
        fake.runs.push(gate(24));
    }
    let before = ledger_commits(&w);
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    let expected = [
        (
            "24",
            "no `aayudha/proof` status on 111111111111 names run 24",
        ),
        ("23", "the tests floor does not hold (fail)"),
        ("22", "not of the default branch main"),
        ("21", "does not verify"),
        ("20", "does not verify"),
        ("19", "2 artifacts named `aayudha-pack`"),
        ("18", "has expired"),
        ("17", "proves pull request #4, not #3"),
        (
            "16",
            "its pack proves 222222222222, but the pull request's head is 111111111111",
        ),
        ("15", "is in_progress"),
        ("14", "ended failure"),
        ("13", "ran in mallory/shop, not octo/shop"),
        (
            "12",
            "another workflow (mallory/shop/.github/workflows/aayudha-merge-gate.yml)",
        ),
        ("11", "a workflow_dispatch run"),
        ("10", "a pull_request run"),
    ];
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("run "))
        .collect();
    assert_eq!(lines.len(), expected.len(), "{}", out.stderr);
    for ((id, why), line) in expected.iter().zip(&lines) {
        // Which reason is whose, said beside the fixture that makes it; the whole text is the snapshot below.
        assert!(
            line.starts_with(&format!("run {id}: ")) && line.contains(why),
            "expected run {id}: …{why}…, got {line}"
        );
    }
    crate::aayu_snapshot!("ship_nothing_qualifies", out);
    let fake = w.github.state.lock().expect("lock");
    assert!(fake.merged.is_empty(), "nothing merged");
    drop(fake);
    assert_eq!(ledger_commits(&w), before, "nothing landed");
    w.github.assert_clean();
}

#[test]
fn a_qualifying_run_ships_and_a_repeat_duplicates_nothing() {
    let w = world();
    let (bytes, sha) = zip(&pack_json(3, HEAD, "pass"), false, false);
    // GitHub may write the path with the repository in front: `octo/shop/.github/workflows/…@ref`.
    gate_run(
        &w,
        FakeRun {
            path: format!("{REPO}/{GATE}@refs/heads/main"),
            ..FakeRun::gate(40, "aayudha-merge-gate.yml")
        },
        (bytes, sha.clone()),
        false,
    );
    // A newer run of the pull request's own copy is passed over.
    gate_run(
        &w,
        FakeRun {
            event: "pull_request".into(),
            ..FakeRun::gate(41, "aayudha-merge-gate.yml")
        },
        zip(&pack_json(3, HEAD, "pass"), false, false),
        false,
    );

    crate::aayu_snapshot!("ship_dry_run", ship(&w, &["3", "--dry-run"]));
    assert!(w.github.state.lock().expect("lock").merged.is_empty());
    assert_eq!(on_origin(&w, "ship/7.json"), None);

    crate::aayu_snapshot!("ship_lands", ship(&w, &["3"]));
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("ship record")).expect("json");
    assert_eq!(record["gate_run"], 40);
    assert_eq!(record["artifact"], 9040);
    assert_eq!(record["pack_sha256"], sha);
    assert_eq!(record["approver"], "bob");
    assert_eq!(record["writer"], "alice (aayu ship)");
    let landed: Value = serde_json::from_str(
        &on_origin(&w, &format!("proof/7/{HEAD}/authoritative/pack.json")).expect("pack"),
    )
    .expect("json");
    assert_eq!(
        landed["authority"],
        json!({"kind": "authoritative", "workflow": GATE, "run_id": 40, "writer": "alice (aayu ship)"})
    );
    assert_eq!(
        on_origin(
            &w,
            &format!("proof/7/{HEAD}/authoritative/artifacts/evidence/criterion-1.jsonl")
        )
        .expect("evidence")
        .as_bytes(),
        EVIDENCE
    );
    {
        let fake = w.github.state.lock().expect("lock");
        assert_eq!(fake.merged, [(3, HEAD.to_string())]);
        let body = fake.issues[&7].body.clone().expect("body");
        insta::assert_snapshot!("ship_story_complete", common::redact(&body));
        // The snapshot redacts hashes: the pack it names is the one shipped.
        assert!(body.contains(&sha), "{body}");
        assert!(
            !fake.refs.contains_key("heads/feature"),
            "the head branch is deleted"
        );
    }
    // The landed pack verifies.
    let verified = run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GH_REPO", REPO)
        .args(["proof", "verify", "7"]));
    crate::aayu_snapshot!("ship_landed_verifies", verified);

    // A repeat: nothing new anywhere.
    let commits = ledger_commits(&w);
    crate::aayu_snapshot!("ship_repeat", ship(&w, &["3"]));
    assert_eq!(ledger_commits(&w), commits);
    let fake = w.github.state.lock().expect("lock");
    assert_eq!(fake.merged.len(), 1);
    assert_eq!(
        fake.issues[&7]
            .body
            .as_deref()
            .expect("body")
            .matches("## Complete")
            .count(),
        1
    );
    drop(fake);
    w.github.assert_clean();
}

/// GitHub Enterprise Server (the API under `/api/v3`): ship finds the run, downloads the artifact through
/// the signed redirect and lands the pack, asking nothing of github.com.
#[test]
fn ship_works_against_github_enterprise() {
    let w = world_on(fake_github::Server::enterprise());
    assert!(w.github.url.ends_with("/api/v3"), "{}", w.github.url);
    let (bytes, sha) = zip(&pack_json(3, HEAD, "pass"), false, false);
    gate_run(
        &w,
        FakeRun::gate(40, "aayudha-merge-gate.yml"),
        (bytes, sha.clone()),
        false,
    );
    let out = run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GITHUB_SERVER_URL", "https://ghe.example")
        .env("GH_REPO", REPO)
        .args(["ship", "3"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("ship record")).expect("json");
    assert_eq!(record["pack_sha256"], sha);
    let fake = w.github.state.lock().expect("lock");
    assert!(fake.unexpected.is_empty(), "{:?}", fake.unexpected);
    assert_eq!(fake.merged.len(), 1, "merged through the Enterprise API");
}

#[test]
fn approval_must_come_from_someone_else_with_write_access_or_a_recorded_solo_bypass() {
    let w = world();
    gate_run(
        &w,
        FakeRun::gate(50, "aayudha-merge-gate.yml"),
        zip(&pack_json(3, HEAD, "pass"), false, false),
        false,
    );
    {
        let mut fake = w.github.state.lock().expect("lock");
        fake.reviews.insert(
            3,
            vec![
                ("octocat".into(), "APPROVED".into(), HEAD.into()),
                ("carol".into(), "APPROVED".into(), HEAD.into()),
                ("dave".into(), "APPROVED".into(), "0".repeat(40)),
                ("bob".into(), "APPROVED".into(), HEAD.into()),
                ("bob".into(), "CHANGES_REQUESTED".into(), HEAD.into()),
            ],
        );
        fake.permissions.insert("carol".into(), "read".into());
        fake.permissions.insert("dave".into(), "admin".into());
    }
    crate::aayu_snapshot!("ship_no_other_approver", ship(&w, &["3"]));
    assert!(w.github.state.lock().expect("lock").merged.is_empty());

    crate::aayu_snapshot!("ship_solo_bypass", ship(&w, &["3", "--solo-bypass"]));
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("record")).expect("json");
    assert_eq!(record["solo_bypass"], true);
    assert_eq!(record["approver"], "alice (--solo-bypass)");
    // Recorded on the pull request.
    let comments: Vec<String> = w
        .github
        .comments_on(3)
        .into_iter()
        .map(|c| common::redact(&c.body))
        .collect();
    insta::assert_snapshot!("ship_solo_bypass_comments", comments.join("\n-----\n"));
}

#[test]
fn ship_refuses_to_run_in_ci_and_needs_a_story() {
    let w = world();
    let ci = run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_API_URL", &w.github.url)
        .args(["ship", "3", "--repo", REPO]));
    crate::aayu_snapshot!("ship_refused_in_ci", ci);
    w.github
        .state
        .lock()
        .expect("lock")
        .pulls
        .get_mut(&3)
        .expect("pr")
        .body = None;
    crate::aayu_snapshot!("ship_no_story", ship(&w, &["3"]));
}

#[test]
fn a_merge_that_fails_after_landing_is_completed_by_the_next_ship_without_duplicates() {
    let w = world();
    gate_run(
        &w,
        FakeRun::gate(60, "aayudha-merge-gate.yml"),
        zip(&pack_json(3, HEAD, "pass"), false, false),
        false,
    );
    w.github.state.lock().expect("lock").refuse_merge = Some(405);
    crate::aayu_snapshot!("ship_merge_refused", ship(&w, &["3"]));
    assert!(
        on_origin(&w, "ship/7.json").is_some(),
        "landed before the merge was refused"
    );
    let commits = ledger_commits(&w);
    let body_before = w.github.state.lock().expect("lock").issues[&7].body.clone();
    // The story as it was, but for whatever else it says: no `## Complete` yet.
    assert!(
        !body_before
            .as_deref()
            .unwrap_or_default()
            .contains("## Complete"),
        "no Complete before the merge"
    );

    let second = ship(&w, &["3"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_eq!(
        ledger_commits(&w),
        commits,
        "the same pack and record: no second commit"
    );
    let fake = w.github.state.lock().expect("lock");
    assert_eq!(fake.merged, [(3, HEAD.to_string())]);
    assert_eq!(
        fake.issues[&7]
            .body
            .as_deref()
            .expect("body")
            .matches("## Complete")
            .count(),
        1
    );
}

/// A zip made by hand: pack.json, then the given entries (a `None` body is a symbolic link to /etc/passwd).
fn raw_zip(pack: &Value, entries: &[(&str, Option<&[u8]>)]) -> (Vec<u8>, String) {
    use std::io::Write as _;
    use zip::write::SimpleFileOptions;
    let mut manifest = serde_json::to_vec_pretty(pack).expect("json");
    manifest.push(b'\n');
    let sha = aayudha::hash::bytes(&manifest);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("pack.json", SimpleFileOptions::default())
        .expect("start");
    zip.write_all(&manifest).expect("write");
    for (name, body) in entries {
        match body {
            Some(bytes) => {
                zip.start_file(*name, SimpleFileOptions::default())
                    .expect("start");
                zip.write_all(bytes).expect("write");
            }
            None => zip
                .add_symlink(*name, "/etc/passwd", SimpleFileOptions::default())
                .expect("link"),
        }
    }
    (zip.finish().expect("finish").into_inner(), sha)
}

#[test]
fn hostile_artifact_zips_are_passed_over_with_what_is_wrong() {
    let w = world();
    let pack = pack_json(3, HEAD, "pass");
    let evidence = ("artifacts/evidence/criterion-1.jsonl", Some(EVIDENCE));
    let gate = |id| FakeRun::gate(id, "aayudha-merge-gate.yml");
    gate_run(&w, gate(70), raw_zip(&pack, &[]), false);
    gate_run(
        &w,
        gate(71),
        raw_zip(&pack, &[evidence, ("artifacts/../../escape", Some(b"x"))]),
        false,
    );
    gate_run(
        &w,
        gate(72),
        raw_zip(&pack, &[evidence, ("artifacts/link", None)]),
        false,
    );
    // Two names that are one file on a case-insensitive file system.
    gate_run(
        &w,
        gate(73),
        raw_zip(
            &pack,
            &[
                evidence,
                ("artifacts/evidence/CRITERION-1.jsonl", Some(EVIDENCE)),
            ],
        ),
        false,
    );
    // Runs 73 to 70, each refused for its archive: colliding names, a symbolic link, `..`, and evidence
    // that is not what pack.json says.
    crate::aayu_snapshot!("ship_bad_archives", ship(&w, &["3"]));
    assert!(w.github.state.lock().expect("lock").merged.is_empty());
}

#[test]
fn ship_goes_by_the_default_branchs_config_not_the_working_trees() {
    let w = world();
    // The shipper has the pull request checked out, whose config points ship at another workflow and would
    // land the ledger's commits on `main`.
    w.clone.write(
        ".aayudha/config.toml",
        "[gate]\nworkflow = \".github/workflows/evil.yml\"\n\n[ledger]\nbranch = \"main\"\n",
    );
    // The default branch (on GitHub) names the ledger branch `ledger` explicitly.
    w.github.state.lock().expect("lock").files.insert(
        ("main".into(), ".aayudha/config.toml".into()),
        b"[ledger]\nbranch = \"ledger\"\n".to_vec(),
    );
    gate_run(
        &w,
        FakeRun::gate(50, "aayudha-merge-gate.yml"),
        zip(&pack_json(3, HEAD, "pass"), false, false),
        false,
    );
    let main_before = common::git_command(w.origin.path())
        .args(["rev-parse", "main"])
        .output()
        .expect("rev-parse")
        .stdout;
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        on_origin(&w, "ship/7.json").is_some(),
        "landed on the ledger"
    );
    let main_after = common::git_command(w.origin.path())
        .args(["rev-parse", "main"])
        .output()
        .expect("rev-parse")
        .stdout;
    assert_eq!(main_before, main_after, "nothing was pushed to main");

    // A broken config on the default branch is named as such, with its branch.
    let w = world();
    w.github.state.lock().expect("lock").files.insert(
        ("main".into(), ".aayudha/config.toml".into()),
        b"[ledger]\nbrnch = \"x\"\n".to_vec(),
    );
    crate::aayu_snapshot!("ship_broken_default_config", ship(&w, &["3"]));
}

/// The authoritative pack on origin's ledger.
fn landed_pack(w: &World) -> Value {
    serde_json::from_str(
        &on_origin(w, &format!("proof/7/{HEAD}/authoritative/pack.json")).expect("pack"),
    )
    .expect("json")
}

/// The artifact of `pack` at `path`.
fn listed<'a>(pack: &'a Value, path: &str) -> &'a Value {
    pack["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .find(|a| a["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not listed"))
}

/// A gate zip with media: a screenshot (`store: none`) and a PNG its pack calls a `git` report.
fn media_zip() -> (Vec<u8>, String) {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01";
    let mut pack = pack_json(3, HEAD, "pass");
    let sha = aayudha::hash::bytes(PNG);
    for (path, kind, store) in [
        ("behaviour/page.shows/shot.png", "screenshot", "none"),
        ("behaviour/page.shows/graph.json", "report", "git"),
    ] {
        pack["artifacts"].as_array_mut().expect("list").push(json!({
            "path": path, "kind": kind, "sha256": sha, "size": PNG.len(), "store": store
        }));
    }
    let dir = tempfile::tempdir().expect("temp");
    std::fs::create_dir_all(dir.path().join("artifacts/evidence")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("artifacts/behaviour/page.shows")).expect("mkdir");
    std::fs::write(
        dir.path().join("artifacts/evidence/criterion-1.jsonl"),
        EVIDENCE,
    )
    .expect("w");
    for name in ["shot.png", "graph.json"] {
        std::fs::write(
            dir.path().join("artifacts/behaviour/page.shows").join(name),
            PNG,
        )
        .expect("w");
    }
    let mut bytes = serde_json::to_vec_pretty(&pack).expect("json");
    bytes.push(b'\n');
    let sha = aayudha::hash::bytes(&bytes);
    std::fs::write(dir.path().join("pack.json"), bytes).expect("write");
    let mut out = Vec::new();
    aayudha::publish::archive::build(dir.path(), &mut out).expect("zip");
    (out, sha)
}

#[test]
fn ship_uploads_media_to_the_bucket_and_never_lands_them_in_git() {
    let Some(program) = crate::support::moto::program() else {
        return;
    };
    let moto = crate::support::moto::Moto::start(&program, None);
    moto.create_bucket("media");
    let w = world();
    w.github.state.lock().expect("lock").files.insert(
        ("main".into(), ".aayudha/config.toml".into()),
        b"[proof]\nmedia = \"s3://media/ship\"\nretention_days = 14\n".to_vec(),
    );
    gate_run(
        &w,
        FakeRun::gate(60, "aayudha-merge-gate.yml"),
        media_zip(),
        false,
    );
    let ship_with = |args: &[&str]| {
        run(common::aayu_in(w.clone.root())
            .env("GITHUB_TOKEN", "t")
            .env("GITHUB_API_URL", &w.github.url)
            .env("GH_REPO", REPO)
            .env("AWS_ENDPOINT_URL", &moto.url)
            .env("AWS_ACCESS_KEY_ID", "AKIATEST")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .arg("ship")
            .args(args))
    };
    crate::aayu_snapshot!("ship_media_dry_run", ship_with(&["3", "--dry-run"]));
    let (status, _) = moto.request("GET", "/media/ship/7", "", &[]);
    assert_eq!(status, 404, "a dry run uploads nothing");

    crate::aayu_snapshot!("ship_media", ship_with(&["3"]));
    let landed = landed_pack(&w);
    for name in ["shot.png", "graph.json"] {
        let path = format!("behaviour/page.shows/{name}");
        let a = listed(&landed, &path);
        assert_eq!(a["store"], "bucket", "{a}");
        assert_eq!(a["object"], format!("s3://media/ship/7/{HEAD}/{path}"));
        assert_eq!(
            on_origin(
                &w,
                &format!("proof/7/{HEAD}/authoritative/artifacts/{path}")
            ),
            None,
            "{name} is not in git"
        );
        let (status, body) = moto.send("GET", &format!("/media/ship/7/{HEAD}/{path}"), "", &[]);
        assert_eq!(
            (status, body.len() as u64),
            (200, a["size"].as_u64().expect("size"))
        );
    }
    assert!(
        on_origin(
            &w,
            &format!("proof/7/{HEAD}/authoritative/artifacts/evidence/criterion-1.jsonl")
        )
        .is_some()
    );
}

#[test]
fn without_a_bucket_ship_keeps_every_media_file_off_the_ledger_as_none() {
    let w = world();
    gate_run(
        &w,
        FakeRun::gate(61, "aayudha-merge-gate.yml"),
        media_zip(),
        false,
    );
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let landed = landed_pack(&w);
    for name in ["shot.png", "graph.json"] {
        let path = format!("behaviour/page.shows/{name}");
        let a = listed(&landed, &path);
        assert_eq!(a["store"], "none", "never `bucket` without an upload: {a}");
        assert!(a.get("object").is_none(), "{a}");
        assert_eq!(
            on_origin(
                &w,
                &format!("proof/7/{HEAD}/authoritative/artifacts/{path}")
            ),
            None,
            "a PNG the pack called a git report is kept off the ledger too"
        );
    }
}

/// A zip of `entries`, as `aayudha-timings` is (a `None` body is a symbolic link to /etc/passwd).
fn timings_zip(entries: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
    use std::io::Write as _;
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, body) in entries {
        match body {
            Some(bytes) => {
                zip.start_file(*name, options).expect("start");
                zip.write_all(bytes).expect("write");
            }
            None => zip
                .add_symlink(*name, "/etc/passwd", options)
                .expect("link"),
        }
    }
    zip.finish().expect("finish").into_inner()
}

/// The gate run's one timings artifact, a zip of `entries`, replacing any it had.
fn timings_artifact(w: &World, run: u64, entries: &[(&str, Option<&[u8]>)], expired: bool) {
    set_timings(w, run, vec![timings_zip(entries)], expired);
}

/// The run's `aayudha-timings` artifacts, replacing any it had: one a zip (several: GitHub lists them all).
fn set_timings(w: &World, run: u64, zips: Vec<Vec<u8>>, expired: bool) {
    let mut fake = w.github.state.lock().expect("lock");
    fake.run_artifacts
        .retain(|a| !(a.0 == run && a.2 == "aayudha-timings"));
    for (i, bytes) in zips.into_iter().enumerate() {
        fake.run_artifacts.push((
            run,
            8000 + run * 10 + i as u64,
            "aayudha-timings".into(),
            bytes,
            expired,
        ));
    }
}

const TIMINGS: &[u8] = b"{\"schema_version\": 1, \"units\": [{\"id\": \"tests:.\", \"ms\": 1200}, {\"id\": \"check:shop/cart.adds\", \"ms\": 300}]}\n";

#[test]
fn the_gate_runs_timings_land_beside_the_pack_unlisted_in_the_same_commit_and_verify() {
    let w = world();
    let (bytes, sha) = zip(&pack_json(3, HEAD, "pass"), false, false);
    gate_run(
        &w,
        FakeRun::gate(40, "aayudha-merge-gate.yml"),
        (bytes, sha.clone()),
        false,
    );
    timings_artifact(&w, 40, &[("timings.json", Some(TIMINGS))], false);
    // Another run's timings are not this run's.
    timings_artifact(&w, 39, &[("timings.json", Some(b"{}"))], false);

    let dry = ship(&w, &["3", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    assert!(
        dry.stdout
            .contains("(3 files, and the gate's timings.json)"),
        "the dry run says the timings land: {}",
        dry.stdout
    );
    assert!(!dry.stderr.contains("notice:"), "{}", dry.stderr);

    let before = ledger_commits(&w);
    let out = ship(&w, &["3"]);
    crate::aayu_snapshot!("ship_lands_timings", out);
    assert_eq!(ledger_commits(&w), before + 1, "one ledger commit");
    let dir = format!("proof/7/{HEAD}/authoritative");
    assert_eq!(
        on_origin(&w, &format!("{dir}/timings.json"))
            .expect("timings")
            .as_bytes(),
        TIMINGS,
        "the artifact's bytes, as they were"
    );
    // The same commit as the pack.
    let last_change = |path: &str| {
        let out = common::git_command(w.origin.path())
            .args(["log", "-1", "--format=%H", "ledger", "--", path])
            .output()
            .expect("git log");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        last_change(&format!("{dir}/timings.json")),
        last_change(&format!("{dir}/pack.json"))
    );
    // Not proof: the pack does not list it, and the record names the gate's pack as it was.
    let landed = landed_pack(&w);
    let text = landed.to_string();
    assert!(!text.contains("timings"), "{text}");
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("record")).expect("json");
    assert_eq!(record["pack_sha256"], sha);

    // `proof verify` passes over the sidecar: the landed pack verifies.
    let verified = run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GH_REPO", REPO)
        .args(["proof", "verify", "7", "--json"]));
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let report: Value = serde_json::from_str(&verified.stdout).expect("json");
    assert_eq!(report["verifies"], true, "{report}");
    assert_eq!(report["authority"], "authoritative");
    assert_eq!(
        report["artifacts_checked"], 1,
        "the sidecar is not an artifact"
    );
    w.github.assert_clean();
}

#[test]
fn timings_that_cannot_be_used_are_one_notice_each_and_never_stop_a_ship() {
    let w = world();
    gate_run(
        &w,
        FakeRun::gate(40, "aayudha-merge-gate.yml"),
        zip(&pack_json(3, HEAD, "pass"), false, false),
        false,
    );
    let valid: &[(&str, Option<&[u8]>)] = &[("timings.json", Some(TIMINGS))];
    let oversized = {
        let mut big = b"{\"schema_version\": 1, \"units\": []}".to_vec();
        big.resize((4 << 20) + 1, b' ');
        big
    };
    let zip_of = |entries: &[(&str, Option<&[u8]>)]| vec![timings_zip(entries)];
    // Each case: its name, the run's `aayudha-timings` artifacts (zips), and whether they expired.
    let cases: Vec<(&str, Vec<Vec<u8>>, bool)> = vec![
        ("none", Vec::new(), false),
        ("expired", zip_of(valid), true),
        ("two", [zip_of(valid), zip_of(valid)].concat(), false),
        ("not a zip", vec![b"not a zip".to_vec()], false),
        (
            "another entry too",
            zip_of(&[("timings.json", Some(TIMINGS)), ("run.sh", Some(b"x"))]),
            false,
        ),
        (
            "another name",
            zip_of(&[("times.json", Some(TIMINGS))]),
            false,
        ),
        ("a link", zip_of(&[("timings.json", None)]), false),
        (
            "over 4 MiB",
            zip_of(&[("timings.json", Some(&oversized))]),
            false,
        ),
        ("not JSON", zip_of(&[("timings.json", Some(b"{"))]), false),
        (
            "schema 2",
            zip_of(&[(
                "timings.json",
                Some(b"{\"schema_version\": 2, \"units\": []}"),
            )]),
            false,
        ),
        (
            "no units",
            zip_of(&[("timings.json", Some(b"{\"schema_version\": 1}"))]),
            false,
        ),
    ];
    let mut said = Vec::new();
    for (case, zips, expired) in cases {
        set_timings(&w, 40, zips, expired);
        let out = ship(&w, &["3", "--dry-run"]);
        assert_eq!(out.code, 0, "{case}: {}{}", out.stdout, out.stderr);
        let notices: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("notice:"))
            .collect();
        assert_eq!(notices.len(), 1, "{case}: {}", out.stderr);
        assert!(
            out.stdout.contains("(3 files)"),
            "{case}: no timings in the plan: {}",
            out.stdout
        );
        said.push(format!("{case}: {}", notices[0]));
    }
    insta::assert_snapshot!("ship_timings_notices", common::redact(&said.join("\n")));

    // A ship with unusable timings lands the pack all the same, without them.
    timings_artifact(&w, 40, &[("timings.json", Some(b"{"))], false);
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("notice: run 40's timings"),
        "{}",
        out.stderr
    );
    assert!(on_origin(&w, &format!("proof/7/{HEAD}/authoritative/pack.json")).is_some());
    assert_eq!(
        on_origin(&w, &format!("proof/7/{HEAD}/authoritative/timings.json")),
        None
    );
    assert_eq!(w.github.state.lock().expect("lock").merged.len(), 1);
    w.github.assert_clean();
}
