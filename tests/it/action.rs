//! `aayu action` end to end, through the real binary with the environment exactly as the runner sets it for
//! a Docker action, real `pull_request` payloads from `@octokit/webhooks-examples`, the fake GitHub and the
//! fake results service: gate → artifact → comment job → status, a second run editing the same comment, a
//! fork, a body that is `null`, and the nightly sweep. Each test is a scenario (`scenario`: the repository,
//! the event, the fakes, the job) and what the job said, frozen whole.

mod approval;
mod scenario;
mod sharded;
mod templates;

pub(crate) use scenario::{Origin, Runner, on_pr, pr_event, publish, runtime_token, workspace};

use crate::common;
use crate::support::fake_github;

use std::path::Path;
use std::process::Command;

use crate::aayu_snapshot;
use crate::common::{TALLY_EVIDENCE, TestRepo, run, tally};
use fake_github::FakePull;
use scenario::{Job, REPO, Scenario, origin, with_ledger, with_ledger_from};
use serde_json::{Value, json};

/// GitHub Enterprise Server: the API under `/api/v3` (`GITHUB_API_URL`) and the server elsewhere
/// (`GITHUB_SERVER_URL`). The gate reads the story through that API and links the run on that server; the
/// comment job reads the pack, comments and sets the status there; nothing goes to github.com.
#[test]
fn github_enterprise_works_for_the_gate_and_the_comment_job() {
    crate::needs!(go);
    let s = Scenario::enterprise(origin()).with_story_on_the_ledger();
    assert!(s.github.url.ends_with("/api/v3"), "{}", s.github.url);
    let event = s.event("opened", Some("Story: #902"));

    let gate = s
        .gate(101, &event)
        .env("GITHUB_SERVER_URL", "https://ghe.example")
        .run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    assert_eq!(gate.result().as_deref(), Some("proven"), "{}", gate.stderr);
    let comment = s
        .comment(101, &event)
        .env("GITHUB_SERVER_URL", "https://ghe.example")
        .run();
    assert_eq!(comment.code, 0, "{}", comment.said());

    let comments = s.github.comments();
    assert_eq!(comments.len(), 1);
    // The run is linked on the Enterprise server.
    insta::assert_snapshot!("ghe_comment", common::redact(&comments[0].body));
    let fake = s.github.state.lock().expect("lock");
    let status = fake.statuses.last().expect("a status");
    assert_eq!(status.state, "success");
    assert_eq!(
        status.target_url.as_deref(),
        Some("https://ghe.example/Codertocat/Hello-World/actions/runs/101")
    );
    assert!(fake.unexpected.is_empty(), "{:?}", fake.unexpected);
    assert!(
        fake.requests.iter().any(|r| r == "GET issue 902"),
        "the story was read through the Enterprise API: {:?}",
        fake.requests
    );
}

#[test]
fn gate_then_comment_then_a_second_run_edits_the_same_comment() {
    crate::needs!(go);
    let s = Scenario::new(origin()).with_story_on_the_ledger();

    // Run 101: `opened`, the story named in the body.
    let gate = s
        .gate(
            101,
            &s.event("opened", Some("Fixes blank lines.\n\nStory: #902\n")),
        )
        .run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    let outputs = gate.runner.outputs();
    assert_eq!(
        outputs.get("result").map(String::as_str),
        Some("proven"),
        "{outputs:?}\n{}\n{}",
        gate.stdout,
        gate.summary()
    );
    assert_eq!(outputs.get("story").map(String::as_str), Some("902"));
    assert_eq!(outputs.get("drift").map(String::as_str), Some("0"));
    let pack_sha = outputs.get("pack-sha256").cloned().expect("pack-sha256");
    assert_eq!(pack_sha.len(), 64);
    insta::assert_snapshot!("gate_summary", common::redact(&gate.summary()));
    {
        let state = s.results(101).state.lock().expect("lock").artifacts.clone();
        assert_eq!(state.len(), 1);
        assert_eq!(state[0].name, "aayudha-pack");
        assert!(state[0].finalized);
        assert!(state[0].expires_at.is_some(), "retention set");
    }
    // aayu fetched the head itself and ran it in the workspace.
    assert_eq!(
        s.ws.git(&["rev-parse", "refs/remotes/pull/3/head"]),
        s.origin.head
    );
    assert_eq!(s.ws.git(&["rev-parse", "HEAD"]), s.origin.head);

    // The pack job of run 101.
    let opened = s.event("opened", Some("Story: #902"));
    let comment = s.comment(101, &opened).run();
    assert_eq!(comment.code, 0, "{}", comment.said());
    let comments = s.github.comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].login, "github-actions[bot]");
    insta::assert_snapshot!("proof_comment", common::redact(&comments[0].body));
    // The snapshot redacts commit SHAs: the one it names is the pull request's head.
    assert!(
        comments[0].body.contains(&s.origin.head),
        "{}",
        comments[0].body
    );
    {
        let fake = s.github.state.lock().expect("lock");
        let status = fake.statuses.last().expect("a status");
        assert_eq!(
            (
                status.sha.as_str(),
                status.state.as_str(),
                status.context.as_str()
            ),
            (s.origin.head.as_str(), "success", "aayudha/proof")
        );
        insta::assert_snapshot!(
            "proof_status_description",
            common::redact(&status.description)
        );
        // The snapshot redacts hashes: the one the status names is this run's pack's.
        assert!(
            status.description.contains(&pack_sha),
            "{}",
            status.description
        );
    }

    // Run 102 (`synchronize`) and its pack job: the same comment is edited.
    let synchronize = s.event("synchronize", Some("Story: #902"));
    let gate2 = s.gate(102, &synchronize).run();
    assert_eq!(gate2.code, 0, "{}", gate2.stderr);
    let comment2 = s.comment(102, &synchronize).run();
    assert_eq!(comment2.code, 0, "{}", comment2.stderr);
    let after = s.github.comments();
    assert_eq!(after.len(), 1, "one comment, edited in place");
    assert_eq!(after[0].id, comments[0].id);
    insta::assert_snapshot!("proof_comment_edited", common::redact(&after[0].body));

    // Run 101's pack job again, late (a re-run): it overwrites neither run 102's comment nor its status.
    let statuses_before = s.github.state.lock().expect("lock").statuses.len();
    let late = s.comment(101, &opened).run();
    aayu_snapshot!("late_comment_job", late);
    assert_eq!(
        s.github.state.lock().expect("lock").statuses.len(),
        statuses_before
    );
    assert_eq!(s.github.comments()[0].body, after[0].body);

    // Run 103 was cancelled before it made a pack: its pack job (`if: always()`) still sets the status,
    // on the head the run was for, with the reason, and exits 4.
    let cancelled = s
        .comment(103, &synchronize)
        .input("GATE_RESULT", "cancelled")
        .run();
    aayu_snapshot!("cancelled_comment_job", cancelled);
    {
        let fake = s.github.state.lock().expect("lock");
        let status = fake.statuses.last().expect("a status");
        assert_eq!(
            (status.sha.as_str(), status.state.as_str()),
            (s.origin.head.as_str(), "failure")
        );
        insta::assert_snapshot!(
            "cancelled_status_description",
            common::redact(&status.description)
        );
    }
    let comments = s.github.comments();
    assert_eq!(comments.len(), 1);
    insta::assert_snapshot!("cancelled_comment", common::redact(&comments[0].body));
    s.assert_clean();
}

#[test]
fn a_null_body_and_a_fork_verify_the_map_floors_only() {
    crate::needs!(go);
    let s = Scenario::new(origin());
    // GitHub's example of a pull request whose body is null; made a fork's.
    let mut event = pr_event("opened", 2, &s.origin, None);
    assert!(
        event["pull_request"]["body"].is_null(),
        "the example's body is null"
    );
    event["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/Hello-World");
    let gate = s.gate(201, &event).run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    assert_eq!(gate.runner.output("story").as_deref(), Some(""));
    insta::assert_snapshot!("fork_summary", common::redact(&gate.summary()));
    assert_eq!(
        s.github.state.lock().expect("lock").requests.len(),
        0,
        "no story: the gate needs nothing from the API"
    );
    s.assert_clean();
}

#[test]
fn the_story_input_wins_and_a_bad_input_names_itself() {
    crate::needs!(go);
    let s = Scenario::new(origin());
    let labeled = s.event("labeled", Some("no story here"));
    let bad = s.gate(301, &labeled).input("STORY", "nine").run();
    aayu_snapshot!("bad_story_input", bad);
    let mode = s.gate(301, &labeled).input("MODE", "deploy").run();
    aayu_snapshot!("bad_mode_input", mode);
    let good = s.gate(301, &labeled).input("STORY", " 902 ").run();
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(good.runner.output("story").as_deref(), Some("902"));
    let upload = s
        .gate(301, &s.event("labeled", None))
        .event_name("push")
        .run();
    aayu_snapshot!("push_has_no_default_mode", upload);
}

#[test]
fn a_config_change_in_the_pull_request_is_a_notice_and_does_not_apply() {
    crate::needs!(go);
    let (source, base, _) = tally(TALLY_EVIDENCE, "[verify]\ncheck_timeout_s = 30\n");
    source.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 1\n");
    let head = source.commit("relax the gate");
    let s = Scenario::new(publish(source, base, head));
    let gate = s.gate(401, &s.event("opened", None)).run();
    // stdout only: stderr is the gate's progress log.
    aayu_snapshot!("config_change_notice", stdout gate);
}

#[test]
fn a_sweep_with_a_failing_check_is_red_with_annotations() {
    crate::needs!(perl);
    let repo = common::hostile::hostile(&["passes", "fails", "forges"], "{}");
    let out = Job::sweep(repo.root(), 501).run();
    assert_eq!(out.code, 3, "{}", out.said());
    aayu_snapshot!("sweep_failing_check", stdout out);
    assert_eq!(out.result().as_deref(), Some("failed"));
    insta::assert_snapshot!("sweep_summary", common::redact(&out.summary()));
    // The forged command is shown (in the check's group, on stderr as it streams), inside a
    // stop-commands fence: the runner acts on none of it, on either stream. (stderr is the progress log,
    // whose order follows the checks' ends: a line of it is looked for.)
    assert!(out.stderr.contains("::set-output name=result::proven"));
    for text in [&out.stdout, &out.stderr] {
        let live = common::live_commands(text);
        assert!(
            live.iter()
                .all(|l| !l.contains("set-output") && !l.contains("add-mask")),
            "{live:?}"
        );
    }
}

#[test]
fn product_code_cannot_reach_the_runners_secrets_socket_or_file_commands() {
    crate::needs!(perl);
    if !common::root_or_skip(
        "product_code_cannot_reach_the_runners_secrets_socket_or_file_commands",
    ) {
        return;
    }
    use std::os::unix::fs::{PermissionsExt, chown};
    let runner = Runner::new(&json!({"schedule": "17 3 * * *"}));
    let open = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    open(runner.dir.path(), 0o755);
    open(&runner.path("file_commands"), 0o755);
    // The runner user (uid 1001, group 1001) owns the file-command files, as on GitHub's hosted runners.
    let commands = [
        "set_output",
        "set_env",
        "add_path",
        "save_state",
        "step_summary",
    ];
    for name in commands {
        let file = runner.path(&format!("file_commands/{name}"));
        std::fs::write(&file, "").expect("create");
        chown(&file, Some(1001), Some(1001)).expect("chown");
        open(&file, 0o644);
    }
    // The docker socket: root, group docker (121), 0660.
    let socket = runner.path("docker.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    chown(&socket, Some(0), Some(121)).expect("chown");
    open(&socket, 0o660);
    let files: Vec<String> = ["set_env", "add_path", "set_output"]
        .iter()
        .map(|n| {
            runner
                .path(&format!("file_commands/{n}"))
                .display()
                .to_string()
        })
        .collect();
    let notes =
        json!({"socket": socket.display().to_string(), "files": files.join(",")}).to_string();
    let repo = common::hostile::hostile(
        &["secrets", "environ", "docker", "filecmds", "forges"],
        &notes,
    );
    let out = Job::sweep(repo.root(), 601)
        .event_name("workflow_dispatch")
        .in_runner(runner)
        .run();
    assert_eq!(
        out.code,
        0,
        "every attack failed, so every check passed:\n{}\n{}",
        out.stdout,
        out.summary()
    );
    insta::assert_snapshot!("attacks_summary", common::redact(&out.summary()));
    for name in ["set_env", "add_path", "save_state"] {
        assert_eq!(
            std::fs::read_to_string(out.runner.path(&format!("file_commands/{name}")))
                .expect("read"),
            "",
            "{name} was not written"
        );
    }
    assert_eq!(
        out.result().as_deref(),
        Some("passed"),
        "only aayu's own output, not the forged one"
    );
    assert_eq!(out.runner.outputs().len(), 1, "{:?}", out.runner.outputs());
}

#[test]
fn a_cancelled_gate_stops_its_checks_and_uploads_nothing() {
    crate::needs!(perl);
    let shared = common::shared_dir();
    let notes = format!(r#"{{"dir": "{}"}}"#, shared.path().display());
    let source = common::hostile::hostile(&["lingers"], &notes);
    source.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 120\n");
    let base = source.commit("the gate's configuration");
    source.write("src/main.rs", "fn main() { println!(\"changed\"); }\n");
    let head = source.commit("change what the hostile feature covers");
    let s = Scenario::new(publish(source, base, head));
    let (mut cmd, runner) = s.gate(701, &s.event("opened", None)).command();
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let pid_file = shared.path().join("child.pid");
    let pid = common::pid_in(&pid_file, std::time::Duration::from_secs(60));
    // The runner cancels a job with SIGINT, then SIGTERM: aayu ends at the first.
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    let killed_at = std::time::Instant::now();
    while common::alive(&pid) && killed_at.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!common::alive(&pid), "the check's child {pid} was killed");
    assert_eq!(s.uploaded(701), 0, "nothing was uploaded");
    assert_eq!(runner.output("result"), None, "no verdict was written");
    let left: Vec<_> = std::fs::read_dir(runner.path("runner_temp"))
        .expect("temp")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the gate's temporary folder was removed: {left:?}"
    );
}

#[test]
fn the_sweep_groups_each_check_and_fences_what_it_said() {
    crate::needs!(perl);
    let repo = common::hostile::hostile(&["passes", "fails"], "{}");
    let out = Job::sweep(repo.root(), 801).run();
    assert_eq!(out.code, 3, "{}", out.stdout);
    // The groups stream on stderr as each check ends.
    let groups: Vec<&str> = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("::group::"))
        .collect();
    // A group per check, titled by aayu: `[n/2] shop hostile.passes: passed (0.0 s)`. Which check ends
    // first (its `n`) varies from run to run, so the titles are looked for, not frozen in order.
    assert!(
        groups
            .iter()
            .any(|g| g.contains("shop hostile.passes: passed (")),
        "{groups:?}"
    );
    let title = groups
        .iter()
        .find(|g| g.contains("shop hostile.fails: failed ("))
        .unwrap_or_else(|| panic!("{groups:?}"));
    let fails = &out.stderr[out
        .stderr
        .find(&format!("::group::{title}"))
        .expect("group")..];
    let fence = fails
        .lines()
        .nth(1)
        .expect("line")
        .strip_prefix("::stop-commands::")
        .expect("fenced");
    assert_eq!(fails.lines().nth(2), Some("the total is 41, expected 42"));
    assert_eq!(fails.lines().nth(3), Some(format!("::{fence}::").as_str()));
    assert_eq!(fails.lines().nth(4), Some("::endgroup::"));
}

#[test]
fn drift_in_the_pull_request_is_annotated_on_its_line() {
    crate::needs!(perl);
    let source = common::hostile::hostile(&["passes"], "{}");
    let base = source.git(&["rev-parse", "HEAD"]);
    let features = common::skill("", "shop");
    source.write(
        &format!("{features}/extra.md"),
        common::feature_md(
            r#"{"id": "extra", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#,
            &[],
        ),
    );
    let head = source.commit("a feature file the index does not list");
    let s = Scenario::new(publish(source, base, head));
    let gate = s.gate(901, &s.event("opened", None)).run();
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    assert_eq!(
        gate.runner.output("drift").as_deref(),
        Some("1"),
        "{}",
        gate.stdout
    );
    // The drift's annotation, on the feature file's line, with the one title a drift has wherever it is
    // said (`verify --map` says the same).
    aayu_snapshot!("drift_annotation", stdout gate);
}

#[test]
fn ready_gate_comment_ship_and_proof_verify_end_to_end() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    let s = Scenario::new(publish(source, base, head));
    {
        let mut fake = s.github.state.lock().expect("lock");
        fake.tokens.insert("ghp_alice".into(), "alice".into());
        let mut pull = FakePull::open(&s.origin.head);
        pull.body = Some("Skips blank lines.\n\nStory: #902\n".into());
        fake.pulls.insert(3, pull);
        fake.refs
            .insert("heads/feature".into(), s.origin.head.clone());
        fake.reviews.insert(
            3,
            vec![("bob".into(), "APPROVED".into(), s.origin.head.clone())],
        );
        fake.permissions.insert("bob".into(), "write".into());
    }
    // A person's clone, for `aayu ready` and `aayu ship`.
    let clone = TestRepo::new();
    clone.git(&["remote", "add", "origin", &s.origin.url()]);
    clone.git(&["fetch", "-q", "origin"]);
    clone.git(&["checkout", "-q", "-B", "main", &s.origin.base]);
    let person = |args: &[&str]| {
        run(common::aayu_in(clone.root())
            .env("GITHUB_TOKEN", "ghp_alice")
            .env("GITHUB_API_URL", &s.github.url)
            .env("GH_REPO", REPO)
            .args(args))
    };
    let ready = person(&["ready", "902"]);
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    let snapshot = common::git_command(s.origin.bare.path())
        .args(["show", "ledger:specs/902/ready.md"])
        .output()
        .expect("git show")
        .stdout;
    s.github
        .state
        .lock()
        .expect("lock")
        .files
        .insert(("ledger".into(), "specs/902/ready.md".into()), snapshot);

    // The merge gate and its pack job, run 101.
    let event = s.event("opened", Some("Story: #902"));
    let gate = s.gate(101, &event).run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    let comment = s.comment(101, &event).run();
    assert_eq!(comment.code, 0, "{}", comment.said());

    // GitHub now lists run 101 of the gate, with the artifact the gate uploaded.
    let zip = {
        let results = s.results(101);
        let state = results.state.lock().expect("lock");
        state.blobs[&state.artifacts[0].key].clone()
    };
    {
        let mut fake = s.github.state.lock().expect("lock");
        fake.run_artifacts
            .push((101, 5101, "aayudha-pack".into(), zip, false));
        fake.runs.push(fake_github::FakeRun {
            repository: REPO.into(),
            head_repository: REPO.into(),
            ..fake_github::FakeRun::gate(101, "aayudha-merge-gate.yml")
        });
    }
    let ship = person(&["ship", "3"]);
    aayu_snapshot!("ship_after_the_gate", ship);
    assert_eq!(
        s.github.state.lock().expect("lock").merged,
        [(3, s.origin.head.clone())]
    );

    // The record of a ship after a real gate holds its schema too; the template's gate had no attest job
    // here, so under `check` it records none.
    let record = common::git_command(s.origin.bare.path())
        .args(["show", "ledger:ship/902.json"])
        .output()
        .expect("git show")
        .stdout;
    let record: Value = serde_json::from_slice(&record).expect("the ship record");
    crate::ship::valid_record(&record);
    assert_eq!(record["attestation"], Value::Null);

    let verified = person(&["proof", "verify", "902", "--json"]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let report: Value = serde_json::from_str(&verified.stdout).expect("json");
    assert_eq!(report["authority"], "authoritative");
    assert_eq!(report["floors_hold"], true);
    assert_eq!(report["provenance"], serde_json::json!({"state": "none"}));
    s.assert_clean();
}

#[test]
fn the_base_configs_retention_is_capped_by_the_repositorys_with_a_warning() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "[proof]\nretention_days = 120\n");
    let s = Scenario::new(publish(source, base, head));
    let gate = s
        .gate(1001, &s.event("opened", None))
        .env("AAYUDHA_NOW", "2026-11-29T10:00:00Z")
        .run();
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    // A line of the progress log (the rest is the checks' builds and runs).
    assert!(
        gate.stderr.contains("`[proof] retention_days` is 120, but this repository keeps artifacts at most 90 days: using 90"),
        "{}",
        gate.stderr
    );
    let expires = s.results(1001).state.lock().expect("lock").artifacts[0]
        .expires_at
        .clone();
    assert_eq!(
        expires.as_deref().map(|e| &e[..10]),
        Some("2027-02-27"),
        "90 days on"
    );
}

#[test]
fn a_story_edited_after_ready_is_not_proven_by_the_gate_nor_the_comment_job() {
    crate::needs!(go);
    let s = Scenario::new(origin()).with_story_on_the_ledger();
    s.github
        .state
        .lock()
        .expect("lock")
        .issues
        .get_mut(&902)
        .expect("902")
        .body =
        Some("## Completion Goal\n\n1. Blank lines are skipped.\n2. And something new.\n".into());
    let event = s.event("synchronize", Some("Story: #902"));
    let gate = s.gate(1101, &event).run();
    assert_eq!(gate.code, 0, "the pack is uploaded: {}", gate.stderr);
    assert_eq!(gate.result().as_deref(), Some("not-proven"));
    aayu_snapshot!("story_changed_after_ready", stdout gate);
    let comment = s.comment(1101, &event).run();
    assert_eq!(comment.code, 4, "{}", comment.said());
    insta::assert_snapshot!(
        "story_changed_comment",
        common::redact(&s.github.comments()[0].body)
    );
}

/// A snapshot frozen from a local file (`aayu ready --file`) proves nothing in the action for a story that
/// is a GitHub issue: no pack, and the fix.
#[test]
fn the_gate_refuses_a_snapshot_frozen_from_a_local_file_for_a_story_with_an_issue() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    with_ledger_from(&source, r#", "source": "file:stories/902.md""#);
    let s = Scenario::new(publish(source, base, head)).with_story_on_the_ledger();
    let gate = s.gate(1201, &s.event("opened", Some("Story: #902"))).run();
    aayu_snapshot!("ready_from_a_local_file", gate);
    assert_eq!(s.uploaded(1201), 0, "no pack is uploaded");
}

/// The gate's configuration: the `config` input names a file of the default branch's commit
/// (`GITHUB_SHA`), never the pull request's copy of it.
#[test]
fn the_config_input_is_read_at_the_default_branch_not_the_pull_requests_copy() {
    crate::needs!(go);
    let (source, _, _) = tally(TALLY_EVIDENCE, "");
    // Rebuild base and head with a gate config on the base that the pull request rewrites.
    source.write(".aayudha/gate.toml", "[ledger]\nbranch = \"ledger\"\n");
    let base = source.commit("the gate's own config");
    source.write(".aayudha/gate.toml", "[ledger]\nbranch = \"nowhere\"\n");
    let head = source.commit("point the gate at another ledger");
    with_ledger(&source);
    let s = Scenario::new(publish(source, base, head)).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902\n"));
    let gate = s
        .gate(601, &event)
        .input("CONFIG", ".aayudha/gate.toml")
        .run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    // The story's snapshot was found on `ledger`, the default branch's choice (the pull request's copy
    // names a branch that does not exist: reading it would leave no pack at all).
    aayu_snapshot!("config_input_changed_by_the_pull_request", stdout gate);
    assert_eq!(
        gate.result().as_deref(),
        Some("proven"),
        "{}",
        gate.summary()
    );
    // The progress log says nothing of a missing snapshot either.
    assert!(
        !gate.stderr.contains("no Ready snapshot"),
        "{}",
        gate.stderr
    );
    assert_eq!(s.uploaded(601), 1);

    // A path out of the repository is refused, naming the input.
    let gate = s
        .gate(602, &event)
        .input("CONFIG", "../../etc/aayu.toml")
        .run();
    aayu_snapshot!("config_input_out_of_the_repository", gate);
}

/// A pull request into another branch gains nothing from that branch's weaker configuration: the gate
/// reads the default branch's (`GITHUB_SHA`).
#[test]
fn a_weaker_config_on_the_target_branch_is_not_used() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    with_ledger(&source);
    // `release`, pushed by the pull request's author, points the gate at a ledger of their own.
    source.git(&["switch", "-q", "-c", "release", &base]);
    source.write(".aayudha/config.toml", "[ledger]\nbranch = \"mine\"\n");
    let release = source.commit("a weaker gate");
    source.git(&["switch", "-q", "main"]);
    let url_source = source.root().to_path_buf();
    let s = Scenario::new(publish(source, base.clone(), head)).with_story_on_the_ledger();
    common::git_command(&url_source)
        .args(["push", "-q", &s.origin.url(), "release:refs/heads/release"])
        .status()
        .expect("push");
    s.ws.git(&["fetch", "-q", "origin", "release"]);
    s.ws.git(&["checkout", "-q", &release]);
    let mut event = s.event("opened", Some("Story: #902\n"));
    event["pull_request"]["base"]["sha"] = json!(release);
    event["pull_request"]["base"]["ref"] = json!("release");
    // The workflow (and so GITHUB_SHA) comes from the default branch, `main` at `base`.
    let gate = s.gate(611, &event).env("GITHUB_SHA", &base).run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    assert_eq!(
        gate.result().as_deref(),
        Some("proven"),
        "{}\n{}",
        gate.stdout,
        gate.summary()
    );
}

/// A token that actions/checkout persisted in the checkout's git config would be readable by product code:
/// the gate runs none and says how to fix the workflow.
#[test]
fn a_persisted_credential_stops_the_gate_before_any_product_code() {
    crate::needs!(go);
    let s = Scenario::new(origin());
    s.ws.git(&[
        "config",
        "http.https://github.com/.extraheader",
        "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==",
    ]);
    let event = s.event("opened", Some("Story: #902\n"));
    let gate = s.gate(621, &event).run();
    aayu_snapshot!("persisted_credential", gate);
    // Said outright, whatever the snapshot holds: the secret is in neither stream.
    assert!(!gate.stderr.contains("ghs_secret") && !gate.stdout.contains("eC1hY2Nlc3M"));
    assert_eq!(s.uploaded(621), 0);
    // checkout v6 keeps it in a file the config includes: the same refusal.
    s.ws.git(&["config", "--unset", "http.https://github.com/.extraheader"]);
    s.ws.git(&[
        "config",
        "includeIf.gitdir:/github/workspace/.git.path",
        "/github/runner_temp/git-credentials-0d1f.config",
    ]);
    let gate = s.gate(622, &event).run();
    aayu_snapshot!("persisted_credential_included", gate);
}

/// An evidence map entry carrying a newline and a workflow command: the gate makes no pack (the contract
/// error names the entry, escaped), the runner acts on no command of it, and the job summary shows the
/// message as code under aayu's own heading.
#[test]
fn an_injected_evidence_entry_forges_nothing_in_the_log_or_the_summary() {
    crate::needs!(go);
    let (source, base, _) = tally(TALLY_EVIDENCE, "");
    source.write(
        ".aayudha/evidence/902.toml",
        "[[criterion]]\nid = 1\ntests = [\"nocolon\\n::error title=aayudha::MARK-forged\\n### aayudha merge gate — proven\"]\n",
    );
    let head = source.commit("an evidence map with a newline");
    with_ledger(&source);
    let s = Scenario::new(publish(source, base, head)).with_story_on_the_ledger();
    let gate = s.gate(701, &s.event("opened", Some("Story: #902\n"))).run();
    for (stream, text) in [("stdout", &gate.stdout), ("stderr", &gate.stderr)] {
        let live = common::live_commands(text);
        assert!(
            live.iter().all(|l| !l.contains("MARK")),
            "{stream}: {live:?}\n{text}"
        );
    }
    aayu_snapshot!("injected_evidence_entry", gate);
    let summary = gate.summary();
    insta::assert_snapshot!("no_pack_summary", common::redact(&summary));
    let shape = common::rendered(&summary);
    assert_eq!(
        shape.headings,
        vec!["aayudha merge gate — no pack"],
        "{summary}"
    );
    assert!(
        shape.links.is_empty() && shape.html.is_empty() && shape.mentions.is_empty(),
        "{shape:?}"
    );
    assert_eq!(gate.result().as_deref(), Some("no-pack"));
}

#[test]
fn a_sweep_without_the_toolchain_says_blocked_not_failed_and_names_the_image() {
    let repo = TestRepo::new();
    common::copy_tree(&common::example("notes"), &repo, "examples/notes");
    repo.commit("notes");
    // The slim image: git and the system's programs, no cargo.
    let out = Job::sweep(repo.root(), 502)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env_remove("RUSTUP_HOME")
        .env_remove("CARGO_HOME")
        .run();
    assert_eq!(out.code, 3, "{}", out.said());
    assert_eq!(out.result().as_deref(), Some("blocked"));
    insta::assert_snapshot!("blocked_sweep_summary", common::redact(&out.summary()));
}
