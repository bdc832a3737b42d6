//! `aayu action` end to end, through the real binary with the environment exactly as the runner sets it for
//! a Docker action, real `pull_request` payloads from `@octokit/webhooks-examples`, the fake GitHub and the
//! fake results service: gate → artifact → comment job → status, a second run editing the same comment, a
//! fork, a body that is `null`, and the nightly sweep.

use crate::common;
use crate::support::fake_github;
use crate::support::fake_results;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{TALLY_EVIDENCE, TestRepo, run, tally};
use base64::Engine as _;
use fake_github::{FakeIssue, FakePull};
use serde_json::{Value, json};

const REPO: &str = "Codertocat/Hello-World";
const GOAL: &str = "1. Blank lines are skipped.";

/// A `pull_request` example payload of `@octokit/webhooks-examples` (`nth` example with this action), kept
/// in `tests/data/webhooks/`.
pub(crate) fn webhook(action: &str, nth: usize) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/data/webhooks/pull_request.{action}.{nth}.json"
    ));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (see tests/data/webhooks/README.md)",
            file.display()
        )
    });
    serde_json::from_str(&text).expect("json")
}

/// A JWT like `ACTIONS_RUNTIME_TOKEN`, whose `scp` names the run's backend ids.
pub(crate) fn runtime_token(run: u64) -> String {
    let e = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    format!(
        "{}.{}.sig",
        e(b"{\"alg\":\"RS256\"}"),
        e(
            format!(r#"{{"scp":"Actions.GenericRead:x Actions.Results:run-{run}:job-2"}}"#)
                .as_bytes()
        )
    )
}

/// A repository on "GitHub": the bare `origin` with `main` (the base), `refs/pull/3/head` (the fix) and the
/// ledger holding story 902's Ready snapshot.
pub(crate) struct Origin {
    _source: TestRepo,
    pub(crate) bare: tempfile::TempDir,
    pub(crate) base: String,
    pub(crate) head: String,
}

fn origin() -> Origin {
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    with_ledger(&source);
    publish(source, base, head)
}

/// Adds the `ledger` branch with story 902's Ready snapshot to a source repository (back on `main`).
fn with_ledger(source: &TestRepo) {
    with_ledger_from(source, "");
}

/// [`with_ledger`], with `more` at the end of the snapshot's JSON line (`, "source": "…"`).
fn with_ledger_from(source: &TestRepo, more: &str) {
    let hash = aayudha::hash::bytes(GOAL.as_bytes());
    source.git(&["switch", "-q", "--orphan", "ledger"]);
    source.write(
        "specs/902/ready.md",
        format!("# Story 902: Blank lines\n\n<!-- aayudha:ready {{\"story\": 902, \"completion_goal_hash\": \"{hash}\", \"labels\": [\"type:bug\"]{more}}} -->\n\n## Completion Goal\n\n{GOAL}\n"),
    );
    source.commit("ready: story 902");
    source.git(&["switch", "-q", "main"]);
}

/// Pushes `base` as `main`, `head` as `refs/pull/3/head` and the ledger branch, when there is one, to a new
/// bare repository.
pub(crate) fn publish(source: TestRepo, base: String, head: String) -> Origin {
    let bare = tempfile::Builder::new()
        .prefix("aayu-origin-")
        .tempdir()
        .expect("temp");
    common::git_command(bare.path())
        .args(["init", "-q", "--bare"])
        .status()
        .expect("git init");
    let url = bare.path().display().to_string();
    source.git(&["push", "-q", &url, &format!("{base}:refs/heads/main")]);
    source.git(&["push", "-q", &url, &format!("{head}:refs/pull/3/head")]);
    if !source.git(&["branch", "--list", "ledger"]).is_empty() {
        source.git(&["push", "-q", &url, "ledger:refs/heads/ledger"]);
    }
    Origin {
        _source: source,
        bare,
        base,
        head,
    }
}

/// The workspace as actions/checkout leaves it under `pull_request_target`: the base, `origin` set.
pub(crate) fn workspace(origin: &Origin) -> TestRepo {
    let ws = TestRepo::new();
    ws.git(&[
        "remote",
        "add",
        "origin",
        &origin.bare.path().display().to_string(),
    ]);
    ws.git(&["fetch", "-q", "origin", "main"]);
    ws.git(&["checkout", "-q", "-B", "main", &origin.base]);
    ws
}

/// The runner's own folders: the event, the file commands, the temp folder, HOME.
pub(crate) struct Runner {
    dir: tempfile::TempDir,
}

impl Runner {
    pub(crate) fn new(event: &Value) -> Runner {
        let dir = tempfile::Builder::new()
            .prefix("aayu-runner-")
            .tempdir()
            .expect("temp");
        for sub in ["workflow", "file_commands", "runner_temp", "home"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(
            dir.path().join("workflow/event.json"),
            serde_json::to_vec_pretty(event).expect("json"),
        )
        .expect("event");
        Runner { dir }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn outputs(&self) -> BTreeMap<String, String> {
        let text =
            std::fs::read_to_string(self.path("file_commands/set_output")).unwrap_or_default();
        let mut outputs = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let (name, delimiter) = line.split_once("<<").expect("heredoc outputs");
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delimiter {
                    break;
                }
                value.push(l);
            }
            outputs.insert(name.to_string(), value.join("\n"));
        }
        outputs
    }

    pub(crate) fn summary(&self) -> String {
        std::fs::read_to_string(self.path("file_commands/step_summary")).unwrap_or_default()
    }
}

/// The commit checked out in a workspace.
pub(crate) fn head_of(ws: &Path) -> String {
    let out = common::git_command(ws)
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `aayu action` as the runner starts the container: every variable it sets, inputs as `INPUT_*` with
/// hyphens kept and `""` for inputs not given, the workspace as the working directory.
fn action(
    ws: &Path,
    runner: &Runner,
    github: &str,
    results: &str,
    run_id: u64,
    event_name: &str,
    inputs: &[(&str, &str)],
) -> Command {
    let mut cmd = common::aayu_in(ws);
    common::with_toolchain(&mut cmd).arg("action");
    let fc = |name: &str| runner.path(&format!("file_commands/{name}"));
    cmd.env("HOME", runner.path("home"))
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", event_name)
        .env("GITHUB_EVENT_PATH", runner.path("workflow/event.json"))
        .env("GITHUB_REPOSITORY", REPO)
        .env("GITHUB_REPOSITORY_OWNER", "Codertocat")
        .env("GITHUB_RUN_ID", run_id.to_string())
        .env("GITHUB_RUN_NUMBER", "7")
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("GITHUB_WORKFLOW", "aayudha merge gate")
        .env(
            "GITHUB_WORKFLOW_REF",
            format!("{REPO}/.github/workflows/aayudha-merge-gate.yml@refs/heads/main"),
        )
        // Under `pull_request_target`, the default branch's head: what the workspace holds (a sweep's
        // workspace too).
        .env("GITHUB_SHA", head_of(ws))
        .env("GITHUB_REF", "refs/heads/main")
        .env("GITHUB_WORKSPACE", ws)
        .env("GITHUB_API_URL", github)
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_GRAPHQL_URL", format!("{github}/graphql"))
        .env("ACTIONS_RUNTIME_URL", format!("{results}/runtime/"))
        .env("ACTIONS_RUNTIME_TOKEN", runtime_token(run_id))
        .env("ACTIONS_RESULTS_URL", format!("{results}/"))
        .env("GITHUB_RETENTION_DAYS", "90")
        .env("GITHUB_OUTPUT", fc("set_output"))
        .env("GITHUB_STEP_SUMMARY", fc("step_summary"))
        .env("GITHUB_ENV", fc("set_env"))
        .env("GITHUB_PATH", fc("add_path"))
        .env("GITHUB_STATE", fc("save_state"))
        .env("RUNNER_TEMP", runner.path("runner_temp"))
        .env("RUNNER_OS", "Linux");
    for name in [
        "MODE",
        "TOKEN",
        "STORY",
        "CONFIG",
        "WORKING_DIRECTORY",
        "RETENTION_DAYS",
        "BOT_LOGIN",
        "GATE_RESULT",
    ] {
        cmd.env(format!("INPUT_{name}"), "");
    }
    cmd.env("INPUT_TOKEN", "ghs_job");
    for (name, value) in inputs {
        cmd.env(format!("INPUT_{name}"), value);
    }
    cmd
}

/// `aayu action` on a `pull_request_target` event, in the workspace, against the fakes.
pub(crate) fn on_pr(
    ws: &TestRepo,
    runner: &Runner,
    github: &fake_github::Server,
    results: &fake_results::Server,
    run_id: u64,
    inputs: &[(&str, &str)],
) -> common::Run {
    run(&mut action(
        ws.root(),
        runner,
        &github.url,
        &results.url,
        run_id,
        "pull_request_target",
        inputs,
    ))
}

/// The pull request event of `action`, for the PR #3 of `origin`, from GitHub's own example.
pub(crate) fn pr_event(action: &str, nth: usize, origin: &Origin, body: Option<&str>) -> Value {
    let mut event = webhook(action, nth);
    let pr = &mut event["pull_request"];
    pr["number"] = json!(3);
    pr["head"]["sha"] = json!(origin.head);
    pr["base"]["sha"] = json!(origin.base);
    if let Some(body) = body {
        pr["body"] = json!(body);
    }
    event["number"] = json!(3);
    event
}

fn github() -> fake_github::Server {
    seeded(fake_github::Server::start())
}

/// The fake with the job's token and story #902.
fn seeded(server: fake_github::Server) -> fake_github::Server {
    let mut fake = server.state.lock().expect("lock");
    fake.repo = REPO.into();
    fake.tokens
        .insert("ghs_job".into(), "github-actions[bot]".into());
    fake.no_user.push("ghs_job".into());
    fake.issues.insert(
        902,
        FakeIssue {
            title: "Blank lines".into(),
            body: Some(format!(
                "Totals break on blank lines.\n\n## Completion Goal\n\n{GOAL}\n"
            )),
            labels: vec!["type:bug".into()],
            state: "open".into(),
        },
    );
    drop(fake);
    server
}

fn seed_ledger(server: &fake_github::Server, origin: &Origin) {
    let mut fake = server.state.lock().expect("lock");
    fake.pulls.insert(3, FakePull::open(&origin.head));
    let snapshot = common::git_command(origin.bare.path())
        .args(["show", "ledger:specs/902/ready.md"])
        .output()
        .expect("git show")
        .stdout;
    fake.files
        .insert(("ledger".into(), "specs/902/ready.md".into()), snapshot);
}

/// GitHub Enterprise Server: the API under `/api/v3` (`GITHUB_API_URL`) and the server elsewhere
/// (`GITHUB_SERVER_URL`). The gate reads the story through that API and links the run on that server; the
/// comment job reads the pack, comments and sets the status there; nothing goes to github.com.
#[test]
fn github_enterprise_works_for_the_gate_and_the_comment_job() {
    crate::needs!(go);
    let origin = origin();
    let ws = workspace(&origin);
    let github = seeded(fake_github::Server::enterprise());
    assert!(github.url.ends_with("/api/v3"), "{}", github.url);
    seed_ledger(&github, &origin);
    let results = fake_results::Server::start(&runtime_token(101));
    let event = pr_event("opened", 0, &origin, Some("Story: #902"));
    let on_ghe = |runner: &Runner, inputs: &[(&str, &str)]| {
        let mut cmd = action(
            ws.root(),
            runner,
            &github.url,
            &results.url,
            101,
            "pull_request_target",
            inputs,
        );
        cmd.env("GITHUB_SERVER_URL", "https://ghe.example");
        run(&mut cmd)
    };
    let runner = Runner::new(&event);
    let gate = on_ghe(&runner, &[]);
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("proven"),
        "{}",
        gate.stderr
    );
    let comment = on_ghe(&Runner::new(&event), &[("MODE", "comment")]);
    assert_eq!(comment.code, 0, "{}\n{}", comment.stdout, comment.stderr);
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]
            .body
            .contains("https://ghe.example/Codertocat/Hello-World/actions/runs/101"),
        "{}",
        comments[0].body
    );
    let fake = github.state.lock().expect("lock");
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
    let origin = origin();
    let ws = workspace(&origin);
    let github = github();
    seed_ledger(&github, &origin);

    // Run 101: `opened`, the story named in the body.
    let results = fake_results::Server::start(&runtime_token(101));
    let runner = Runner::new(&pr_event(
        "opened",
        0,
        &origin,
        Some("Fixes blank lines.\n\nStory: #902\n"),
    ));
    let gate = on_pr(&ws, &runner, &github, &results, 101, &[]);
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    let outputs = runner.outputs();
    assert_eq!(
        outputs.get("result").map(String::as_str),
        Some("proven"),
        "{outputs:?}\n{}\n{}",
        gate.stdout,
        runner.summary()
    );
    assert_eq!(outputs.get("story").map(String::as_str), Some("902"));
    assert_eq!(outputs.get("drift").map(String::as_str), Some("0"));
    let pack_sha = outputs.get("pack-sha256").cloned().expect("pack-sha256");
    assert_eq!(pack_sha.len(), 64);
    let summary = runner.summary();
    assert!(
        summary.contains("### aayudha merge gate — every floor holds"),
        "{summary}"
    );
    assert!(summary.contains("| `red-on-base` | `pass` |"), "{summary}");
    insta::assert_snapshot!("gate_summary", common::redact(&summary));
    {
        let state = results.state.lock().expect("lock");
        assert_eq!(state.artifacts.len(), 1);
        assert_eq!(state.artifacts[0].name, "aayudha-pack");
        assert!(state.artifacts[0].finalized);
        assert!(state.artifacts[0].expires_at.is_some(), "retention set");
    }
    // aayu fetched the head itself and ran it in the workspace.
    assert_eq!(
        ws.git(&["rev-parse", "refs/remotes/pull/3/head"]),
        origin.head
    );
    assert_eq!(ws.git(&["rev-parse", "HEAD"]), origin.head);

    // The pack job of run 101.
    let runner2 = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902")));
    let comment = on_pr(
        &ws,
        &runner2,
        &github,
        &results,
        101,
        &[("MODE", "comment")],
    );
    assert_eq!(comment.code, 0, "{}\n{}", comment.stdout, comment.stderr);
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].login, "github-actions[bot]");
    insta::assert_snapshot!("proof_comment", common::redact(&comments[0].body));
    assert!(
        comments[0].body.contains(&origin.head),
        "{}",
        comments[0].body
    );
    {
        let fake = github.state.lock().expect("lock");
        let status = fake.statuses.last().expect("a status");
        assert_eq!(
            (
                status.sha.as_str(),
                status.state.as_str(),
                status.context.as_str()
            ),
            (origin.head.as_str(), "success", "aayudha/proof")
        );
        assert!(
            status.description.contains("run 101") && status.description.contains(&pack_sha),
            "{}",
            status.description
        );
    }

    // Run 102 (`synchronize`) and its pack job: the same comment is edited.
    let results2 = fake_results::Server::start(&runtime_token(102));
    let runner3 = Runner::new(&pr_event("synchronize", 0, &origin, Some("Story: #902")));
    let gate2 = on_pr(&ws, &runner3, &github, &results2, 102, &[]);
    assert_eq!(gate2.code, 0, "{}", gate2.stderr);
    let runner4 = Runner::new(&pr_event("synchronize", 0, &origin, Some("Story: #902")));
    let comment2 = on_pr(
        &ws,
        &runner4,
        &github,
        &results2,
        102,
        &[("MODE", "comment")],
    );
    assert_eq!(comment2.code, 0, "{}", comment2.stderr);
    let after = github.comments();
    assert_eq!(after.len(), 1, "one comment, edited in place");
    assert_eq!(after[0].id, comments[0].id);
    assert!(after[0].body.contains("run 102"), "{}", after[0].body);

    // Run 101's pack job again, late (a re-run): it overwrites neither run 102's comment nor its status.
    let statuses_before = github.state.lock().expect("lock").statuses.len();
    let late = on_pr(
        &ws,
        &Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902"))),
        &github,
        &results,
        101,
        &[("MODE", "comment")],
    );
    assert_eq!(late.code, 0, "{}", late.stderr);
    assert!(
        late.stderr
            .contains("notice: run 102 already set `aayudha/proof`"),
        "{}",
        late.stderr
    );
    assert_eq!(
        github.state.lock().expect("lock").statuses.len(),
        statuses_before
    );
    assert!(github.comments()[0].body.contains("run 102"));

    // Run 103 was cancelled before it made a pack: its pack job (`if: always()`) still sets the status,
    // on the head the run was for, with the reason, and exits 4.
    let results3 = fake_results::Server::start(&runtime_token(103));
    let cancelled = on_pr(
        &ws,
        &Runner::new(&pr_event("synchronize", 0, &origin, Some("Story: #902"))),
        &github,
        &results3,
        103,
        &[("MODE", "comment"), ("GATE_RESULT", "cancelled")],
    );
    assert_eq!(cancelled.code, 4, "{}", cancelled.stderr);
    {
        let fake = github.state.lock().expect("lock");
        let status = fake.statuses.last().expect("a status");
        assert_eq!(
            (status.sha.as_str(), status.state.as_str()),
            (origin.head.as_str(), "failure")
        );
        assert!(
            status
                .description
                .starts_with("run 103: the gate was cancelled"),
            "{}",
            status.description
        );
    }
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]
            .body
            .contains("the gate was cancelled before it made a pack"),
        "{}",
        comments[0].body
    );
    github.assert_clean();
    results.assert_clean();
    results2.assert_clean();
    results3.assert_clean();
}

#[test]
fn a_null_body_and_a_fork_verify_the_map_floors_only() {
    crate::needs!(go);
    let origin = origin();
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(201));
    // GitHub's example of a pull request whose body is null; made a fork's.
    let mut event = pr_event("opened", 2, &origin, None);
    assert!(
        event["pull_request"]["body"].is_null(),
        "the example's body is null"
    );
    event["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/Hello-World");
    let runner = Runner::new(&event);
    let gate = on_pr(&ws, &runner, &github, &results, 201, &[]);
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    let outputs = runner.outputs();
    assert_eq!(outputs.get("story").map(String::as_str), Some(""));
    let summary = runner.summary();
    assert!(summary.contains("From a fork"), "{summary}");
    assert!(summary.contains("| `tests` | `skipped` |"), "{summary}");
    assert_eq!(
        github.state.lock().expect("lock").requests.len(),
        0,
        "no story: the gate needs nothing from the API"
    );
    results.assert_clean();
}

#[test]
fn the_story_input_wins_and_a_bad_input_names_itself() {
    crate::needs!(go);
    let origin = origin();
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(301));
    let runner = Runner::new(&pr_event("labeled", 0, &origin, Some("no story here")));
    let bad = on_pr(&ws, &runner, &github, &results, 301, &[("STORY", "nine")]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("the input `story` (INPUT_STORY) is not valid"),
        "{}",
        bad.stderr
    );
    let mode = on_pr(&ws, &runner, &github, &results, 301, &[("MODE", "deploy")]);
    assert_eq!(mode.code, 2);
    assert!(
        mode.stderr.contains("the input `mode` (INPUT_MODE)"),
        "{}",
        mode.stderr
    );
    let good = on_pr(&ws, &runner, &github, &results, 301, &[("STORY", " 902 ")]);
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(
        runner.outputs().get("story").map(String::as_str),
        Some("902")
    );
    let upload = run(&mut action(
        ws.root(),
        &Runner::new(&pr_event("labeled", 0, &origin, None)),
        &github.url,
        &results.url,
        301,
        "push",
        &[],
    ));
    assert_eq!(upload.code, 2, "{}", upload.stderr);
    assert!(
        upload
            .stderr
            .contains("the event `push` has no default mode"),
        "{}",
        upload.stderr
    );
}

#[test]
fn a_config_change_in_the_pull_request_is_a_notice_and_does_not_apply() {
    crate::needs!(go);
    let (source, base, _) = tally(TALLY_EVIDENCE, "[verify]\ncheck_timeout_s = 30\n");
    source.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 1\n");
    let head = source.commit("relax the gate");
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(401));
    let runner = Runner::new(&pr_event("opened", 0, &origin, None));
    let gate = on_pr(&ws, &runner, &github, &results, 401, &[]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    assert!(
        gate.stdout.contains("::notice file=.aayudha/config.toml,line=1,title=aayudha configuration::this pull request changes the configuration"),
        "{}",
        gate.stdout
    );
}

#[test]
fn a_sweep_with_a_failing_check_is_red_with_annotations() {
    crate::needs!(perl);
    let repo = common::hostile::hostile(&["passes", "fails", "forges"], "{}");
    let runner = Runner::new(&json!({"schedule": "17 3 * * *"}));
    let out = run(&mut action(
        repo.root(),
        &runner,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        501,
        "schedule",
        &[],
    ));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "::error title=aayudha check hostile.fails failed::the total is 41%2C expected 42"
        ) || out.stdout.contains(
            "::error title=aayudha check hostile.fails failed::the total is 41, expected 42"
        ),
        "{}",
        out.stdout
    );
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("failed")
    );
    let summary = runner.summary();
    assert!(
        summary.contains("### aayudha sweep — 1 of 3 checks fail"),
        "{summary}"
    );
    insta::assert_snapshot!("sweep_summary", common::redact(&summary));
    // The forged command is shown (in the check's group, on stderr as it streams), inside a
    // stop-commands fence: the runner acts on none of it, on either stream.
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
    let out = run(&mut action(
        repo.root(),
        &runner,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        601,
        "workflow_dispatch",
        &[],
    ));
    assert_eq!(
        out.code,
        0,
        "every attack failed, so every check passed:\n{}\n{}",
        out.stdout,
        runner.summary()
    );
    let summary = runner.summary();
    for check in ["secrets", "environ", "docker", "filecmds", "forges"] {
        assert!(
            summary.contains(&format!("| `hostile.{check}` | `passed` |")),
            "{check}: {summary}"
        );
    }
    for name in ["set_env", "add_path", "save_state"] {
        assert_eq!(
            std::fs::read_to_string(runner.path(&format!("file_commands/{name}"))).expect("read"),
            "",
            "{name} was not written"
        );
    }
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("passed"),
        "only aayu's own output, not the forged one"
    );
    assert_eq!(runner.outputs().len(), 1, "{:?}", runner.outputs());
}

/// The keys of a top-level section of action.yml (`inputs:` or `outputs:`), in order.
fn section_keys(yaml: &str, section: &str) -> Vec<String> {
    yaml.lines()
        .skip_while(|l| *l != format!("{section}:"))
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn action_yml_declares_the_registrys_inputs_and_outputs() {
    let spec = aayudha::registry::CommandId::Action.spec();
    let inputs: Vec<String> = spec
        .inputs
        .iter()
        .map(|i| i.name.replace('-', "_"))
        .collect();
    let outputs: Vec<String> = spec.outputs.iter().map(|o| o.to_string()).collect();
    // The full action and the slim one: the same inputs and outputs, each its own image.
    for (file, image) in [
        ("action.yml", "  using: docker\n  image: Dockerfile\n"),
        ("slim/action.yml", "  image: ../Dockerfile\n"),
    ] {
        let yaml =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).expect(file);
        assert_eq!(section_keys(&yaml, "inputs"), inputs, "{file}");
        assert_eq!(section_keys(&yaml, "outputs"), outputs, "{file}");
        assert!(yaml.contains(image), "{file}: {yaml}");
        assert!(
            yaml.contains("default: ${{ github.token }}"),
            "{file}: the token defaults to the workflow's"
        );
    }
}

#[test]
fn the_workflow_templates_hold_their_contract() {
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect(rel)
    };
    let gate = read("workflows/aayudha-merge-gate.yml");
    for needle in [
        "  pull_request_target:\n",
        "permissions: {}\n",
        "group: aayudha-merge-gate-${{ github.event.pull_request.number }}",
        "  merge-gate:\n    name: aayudha/merge-gate\n",
        "      contents: read # ",
        "      issues: read # ",
        "      pull-requests: read # ",
        "          ref: ${{ github.event.pull_request.base.sha }}\n",
        "          persist-credentials: false\n",
        "          mode: gate\n",
        "  pack:\n    name: aayudha/pack\n    needs: merge-gate\n",
        "    if: ${{ always() }}\n",
        "      pull-requests: write # ",
        "      statuses: write # ",
        "        uses: aayudha/verify/slim@",
        "          mode: comment\n          gate_result: ${{ needs.merge-gate.result }}\n",
        "Why `pull_request_target`",
        "Require the commit status `aayudha/proof`",
        // actions/checkout on Node 24, credentials not kept.
        "actions/checkout@1af3b93b6815bc44a9784bd300feb67ff0d1eeb3 # v6.0.0",
    ] {
        assert!(gate.contains(needle), "the gate template lacks {needle:?}");
    }
    // The story's labels live on the issue: no label triggers; the body names the story.
    assert!(gate.contains("types: [opened, synchronize, reopened, edited, ready_for_review]"));
    assert!(!gate.contains("labeled"), "{gate}");
    // `pull-requests: read` only in the job that reads the pull request.
    assert_eq!(gate.matches("      pull-requests: read # ").count(), 1);
    // The gate is the last step of `merge-gate`, and `pack` checks nothing out.
    let merge_gate =
        &gate[gate.find("  merge-gate:").expect("job")..gate.find("  pack:").expect("job")];
    assert!(
        merge_gate.trim_end().ends_with("mode: gate"),
        "{merge_gate}"
    );
    let pack = &gate[gate.find("  pack:").expect("job")..];
    assert!(!pack.contains("actions/checkout"), "{pack}");
    for text in [
        &gate,
        &read("workflows/aayudha-nightly.yml"),
        &read(".github/workflows/verify-sweep.yml"),
    ] {
        for line in text
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("uses:") || l.starts_with("- uses:"))
        {
            let reference = line
                .split('@')
                .nth(1)
                .expect("pinned")
                .split_whitespace()
                .next()
                .expect("ref");
            // A commit SHA, or an image digest.
            let sha = reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit());
            let digest = reference
                .strip_prefix("sha256:")
                .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(sha || digest, "not pinned by SHA or digest: {line}");
        }
    }
    let nightly = read("workflows/aayudha-nightly.yml");
    let cron = nightly
        .lines()
        .find_map(|l| l.trim().strip_prefix("- cron: "))
        .expect("cron");
    assert_ne!(
        cron.trim_matches('"').split(' ').next(),
        Some("0"),
        "not on the hour"
    );
    assert!(nightly.contains("  workflow_dispatch:"));
    assert!(read(".github/workflows/verify-sweep.yml").contains("  workflow_call:\n    inputs:\n"));
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
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(701));
    let runner = Runner::new(&pr_event("opened", 0, &origin, None));
    let mut child = action(
        ws.root(),
        &runner,
        &github.url,
        &results.url,
        701,
        "pull_request_target",
        &[],
    )
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
    assert!(
        results.state.lock().expect("lock").artifacts.is_empty(),
        "nothing was uploaded"
    );
    assert_eq!(
        runner.outputs().get("result"),
        None,
        "no verdict was written"
    );
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
    let runner = Runner::new(&json!({"schedule": "17 3 * * *"}));
    let out = run(&mut action(
        repo.root(),
        &runner,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        801,
        "schedule",
        &[],
    ));
    assert_eq!(out.code, 3, "{}", out.stdout);
    // The groups stream on stderr as each check ends.
    let groups: Vec<&str> = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("::group::"))
        .collect();
    // A group per check, titled by aayu: `[n/2] shop hostile.passes: passed (0.0 s)`.
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
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(901));
    let runner = Runner::new(&pr_event("opened", 0, &origin, None));
    let gate = on_pr(&ws, &runner, &github, &results, 901, &[]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    assert_eq!(
        runner.outputs().get("drift").map(String::as_str),
        Some("1"),
        "{}",
        gate.stdout
    );
    let annotation = gate
        .stdout
        .lines()
        .find(|l| l.starts_with("::warning file="))
        .unwrap_or_else(|| panic!("a drift annotation: {}", gate.stdout));
    assert!(
        annotation.starts_with(&format!("::warning file={features}/"))
            && annotation.contains(",line="),
        "{annotation}"
    );
    // One title for a drift wherever it is said (`verify --map` says the same).
    assert!(
        annotation.contains(",title=aayudha drift%3A "),
        "{annotation}"
    );
}

#[test]
fn ready_gate_comment_ship_and_proof_verify_end_to_end() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    let origin = publish(source, base, head);
    let github = github();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("ghp_alice".into(), "alice".into());
        let mut pull = FakePull::open(&origin.head);
        pull.body = Some("Skips blank lines.\n\nStory: #902\n".into());
        fake.pulls.insert(3, pull);
        fake.refs
            .insert("heads/feature".into(), origin.head.clone());
        fake.reviews.insert(
            3,
            vec![("bob".into(), "APPROVED".into(), origin.head.clone())],
        );
        fake.permissions.insert("bob".into(), "write".into());
    }
    // A person's clone, for `aayu ready` and `aayu ship`.
    let clone = TestRepo::new();
    clone.git(&[
        "remote",
        "add",
        "origin",
        &origin.bare.path().display().to_string(),
    ]);
    clone.git(&["fetch", "-q", "origin"]);
    clone.git(&["checkout", "-q", "-B", "main", &origin.base]);
    let person = |args: &[&str]| {
        run(common::aayu_in(clone.root())
            .env("GITHUB_TOKEN", "ghp_alice")
            .env("GITHUB_API_URL", &github.url)
            .env("GH_REPO", REPO)
            .args(args))
    };
    let ready = person(&["ready", "902"]);
    assert_eq!(ready.code, 0, "{}", ready.stderr);
    let snapshot = common::git_command(origin.bare.path())
        .args(["show", "ledger:specs/902/ready.md"])
        .output()
        .expect("git show")
        .stdout;
    github
        .state
        .lock()
        .expect("lock")
        .files
        .insert(("ledger".into(), "specs/902/ready.md".into()), snapshot);

    // The merge gate and its pack job, run 101.
    let ws = workspace(&origin);
    let results = fake_results::Server::start(&runtime_token(101));
    let event = pr_event("opened", 0, &origin, Some("Story: #902"));
    let gate = on_pr(&ws, &Runner::new(&event), &github, &results, 101, &[]);
    assert_eq!(gate.code, 0, "{}{}", gate.stdout, gate.stderr);
    let comment = on_pr(
        &ws,
        &Runner::new(&event),
        &github,
        &results,
        101,
        &[("MODE", "comment")],
    );
    assert_eq!(comment.code, 0, "{}{}", comment.stdout, comment.stderr);

    // GitHub now lists run 101 of the gate, with the artifact the gate uploaded.
    let zip = {
        let state = results.state.lock().expect("lock");
        state.blobs[&state.artifacts[0].key].clone()
    };
    {
        let mut fake = github.state.lock().expect("lock");
        fake.run_artifacts
            .push((101, 5101, "aayudha-pack".into(), zip, false));
        fake.runs.push(fake_github::FakeRun {
            repository: REPO.into(),
            head_repository: REPO.into(),
            ..fake_github::FakeRun::gate(101, "aayudha-merge-gate.yml")
        });
    }
    let ship = person(&["ship", "3"]);
    assert_eq!(ship.code, 0, "{}{}", ship.stdout, ship.stderr);
    assert!(
        ship.stdout
            .contains("run 101 (attempt 1) proves pull request #3"),
        "{}",
        ship.stdout
    );
    assert_eq!(
        github.state.lock().expect("lock").merged,
        [(3, origin.head.clone())]
    );

    let verified = person(&["proof", "verify", "902", "--json"]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let report: Value = serde_json::from_str(&verified.stdout).expect("json");
    assert_eq!(report["authority"], "authoritative");
    assert_eq!(report["floors_hold"], true);
    github.assert_clean();
    results.assert_clean();
}

#[test]
fn the_base_configs_retention_is_capped_by_the_repositorys_with_a_warning() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "[proof]\nretention_days = 120\n");
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(1001));
    let runner = Runner::new(&pr_event("opened", 0, &origin, None));
    let mut cmd = action(
        ws.root(),
        &runner,
        &github.url,
        &results.url,
        1001,
        "pull_request_target",
        &[],
    );
    let gate = run(cmd.env("AAYUDHA_NOW", "2026-11-29T10:00:00Z"));
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    assert!(
        gate.stderr.contains("`[proof] retention_days` is 120, but this repository keeps artifacts at most 90 days: using 90"),
        "{}",
        gate.stderr
    );
    let expires = results.state.lock().expect("lock").artifacts[0]
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
    let origin = origin();
    let ws = workspace(&origin);
    let github = github();
    seed_ledger(&github, &origin);
    github
        .state
        .lock()
        .expect("lock")
        .issues
        .get_mut(&902)
        .expect("902")
        .body =
        Some("## Completion Goal\n\n1. Blank lines are skipped.\n2. And something new.\n".into());
    let results = fake_results::Server::start(&runtime_token(1101));
    let event = pr_event("synchronize", 0, &origin, Some("Story: #902"));
    let runner = Runner::new(&event);
    let gate = on_pr(&ws, &runner, &github, &results, 1101, &[]);
    assert_eq!(gate.code, 0, "the pack is uploaded: {}", gate.stderr);
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("not-proven")
    );
    assert!(
        gate.stdout.contains("::error title=aayudha%3A the story changed after Ready::story #902's Completion Goal is not the one frozen"),
        "{}",
        gate.stdout
    );
    let comment = on_pr(
        &ws,
        &Runner::new(&event),
        &github,
        &results,
        1101,
        &[("MODE", "comment")],
    );
    assert_eq!(comment.code, 4, "{}{}", comment.stdout, comment.stderr);
    assert!(
        github.comments()[0].body.contains("not proven"),
        "{}",
        github.comments()[0].body
    );
}

/// A snapshot frozen from a local file (`aayu ready --file`) proves nothing in the action for a story that
/// is a GitHub issue: no pack, and the fix.
#[test]
fn the_gate_refuses_a_snapshot_frozen_from_a_local_file_for_a_story_with_an_issue() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    with_ledger_from(&source, r#", "source": "file:stories/902.md""#);
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    seed_ledger(&github, &origin);
    let results = fake_results::Server::start(&runtime_token(1201));
    let event = pr_event("opened", 0, &origin, Some("Story: #902"));
    let runner = Runner::new(&event);
    let gate = on_pr(&ws, &runner, &github, &results, 1201, &[]);
    let said = format!("{}{}", gate.stdout, gate.stderr);
    assert_eq!(gate.code, 2, "{said}");
    assert!(
        said.contains("story #902's Ready snapshot was frozen from a local file (`file:stories/902.md`): run `aayu ready 902` against the issue"),
        "{said}"
    );
    assert!(
        results.state.lock().expect("lock").artifacts.is_empty(),
        "no pack is uploaded"
    );
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
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    seed_ledger(&github, &origin);
    let results = fake_results::Server::start(&runtime_token(601));
    let runner = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902\n")));
    let gate = on_pr(
        &ws,
        &runner,
        &github,
        &results,
        601,
        &[("CONFIG", ".aayudha/gate.toml")],
    );
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    assert!(
        gate.stdout.contains("::notice file=.aayudha/gate.toml,line=1,title=aayudha configuration::this pull request changes the configuration; the gate uses the default branch's"),
        "{}",
        gate.stdout
    );
    // The story's snapshot was found on `ledger`, the default branch's choice (the pull request's copy
    // names a branch that does not exist: reading it would leave no pack at all).
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("proven"),
        "{}",
        runner.summary()
    );
    assert!(
        !gate.stdout.contains("no Ready snapshot") && !gate.stderr.contains("no Ready snapshot"),
        "{}\n{}",
        gate.stdout,
        gate.stderr
    );
    assert_eq!(results.state.lock().expect("lock").artifacts.len(), 1);

    // A path out of the repository is refused, naming the input.
    let runner = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902\n")));
    let gate = on_pr(
        &ws,
        &runner,
        &github,
        &results,
        602,
        &[("CONFIG", "../../etc/aayu.toml")],
    );
    assert_eq!(gate.code, 2, "{}", gate.stderr);
    assert!(
        gate.stderr
            .contains("the input `config` must be a path in the repository"),
        "{}",
        gate.stderr
    );
}

/// A pull request into another branch gains nothing from that branch's weaker configuration: the gate
/// reads the default branch's (`GITHUB_SHA`).
#[test]
fn a_weaker_config_on_the_target_branch_is_not_used() {
    crate::needs!(go);
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    let hash = aayudha::hash::bytes(GOAL.as_bytes());
    source.git(&["switch", "-q", "--orphan", "ledger"]);
    source.write(
        "specs/902/ready.md",
        format!("# Story 902: Blank lines\n\n<!-- aayudha:ready {{\"story\": 902, \"completion_goal_hash\": \"{hash}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{GOAL}\n"),
    );
    source.commit("ready: story 902");
    // `release`, pushed by the pull request's author, points the gate at a ledger of their own.
    source.git(&["switch", "-q", "-c", "release", &base]);
    source.write(".aayudha/config.toml", "[ledger]\nbranch = \"mine\"\n");
    let release = source.commit("a weaker gate");
    source.git(&["switch", "-q", "main"]);
    let url_source = source.root().to_path_buf();
    let origin = publish(source, base.clone(), head);
    common::git_command(&url_source)
        .args([
            "push",
            "-q",
            &origin.bare.path().display().to_string(),
            "release:refs/heads/release",
        ])
        .status()
        .expect("push");
    let ws = workspace(&origin);
    ws.git(&["fetch", "-q", "origin", "release"]);
    ws.git(&["checkout", "-q", &release]);
    let github = github();
    seed_ledger(&github, &origin);
    let results = fake_results::Server::start(&runtime_token(611));
    let mut event = pr_event("opened", 0, &origin, Some("Story: #902\n"));
    event["pull_request"]["base"]["sha"] = json!(release);
    event["pull_request"]["base"]["ref"] = json!("release");
    let runner = Runner::new(&event);
    let mut cmd = action(
        ws.root(),
        &runner,
        &github.url,
        &results.url,
        611,
        "pull_request_target",
        &[],
    );
    // The workflow (and so GITHUB_SHA) comes from the default branch, `main` at `base`.
    let gate = run(cmd.env("GITHUB_SHA", &base));
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("proven"),
        "{}\n{}",
        gate.stdout,
        runner.summary()
    );
}

/// A token that actions/checkout persisted in the checkout's git config would be readable by product code:
/// the gate runs none and says how to fix the workflow.
#[test]
fn a_persisted_credential_stops_the_gate_before_any_product_code() {
    crate::needs!(go);
    let origin = origin();
    let ws = workspace(&origin);
    ws.git(&[
        "config",
        "http.https://github.com/.extraheader",
        "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==",
    ]);
    let github = github();
    let results = fake_results::Server::start(&runtime_token(621));
    let runner = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902\n")));
    let gate = on_pr(&ws, &runner, &github, &results, 621, &[]);
    assert_eq!(gate.code, 2, "{}\n{}", gate.stdout, gate.stderr);
    assert!(
        gate.stderr.contains("the checkout's git configuration holds a credential (http.https://github.com/.extraheader)")
            && gate.stderr.contains("set `persist-credentials: false` on actions/checkout"),
        "{}",
        gate.stderr
    );
    assert!(!gate.stderr.contains("ghs_secret") && !gate.stdout.contains("eC1hY2Nlc3M"));
    assert!(results.state.lock().expect("lock").artifacts.is_empty());
    // checkout v6 keeps it in a file the config includes: the same refusal.
    ws.git(&["config", "--unset", "http.https://github.com/.extraheader"]);
    ws.git(&[
        "config",
        "includeIf.gitdir:/github/workspace/.git.path",
        "/github/runner_temp/git-credentials-0d1f.config",
    ]);
    let gate = on_pr(&ws, &runner, &github, &results, 622, &[]);
    assert_eq!(gate.code, 2, "{}", gate.stderr);
    assert!(
        gate.stderr
            .contains("includeif.gitdir:/github/workspace/.git.path"),
        "{}",
        gate.stderr
    );
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
    let origin = publish(source, base, head);
    let ws = workspace(&origin);
    let github = github();
    seed_ledger(&github, &origin);
    let results = fake_results::Server::start(&runtime_token(701));
    let runner = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #902\n")));
    let gate = on_pr(&ws, &runner, &github, &results, 701, &[]);
    assert_eq!(gate.code, 2, "{}\n{}", gate.stdout, gate.stderr);
    for (stream, text) in [("stdout", &gate.stdout), ("stderr", &gate.stderr)] {
        let live = common::live_commands(text);
        assert!(
            live.iter().all(|l| !l.contains("MARK")),
            "{stream}: {live:?}\n{text}"
        );
    }
    assert!(
        gate.stderr.contains(
            "holds a control character: a test or check name is one line of printable text"
        ),
        "{}",
        gate.stderr
    );
    let summary = runner.summary();
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
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("no-pack")
    );
}

#[test]
fn a_sweep_without_the_toolchain_says_blocked_not_failed_and_names_the_image() {
    let repo = TestRepo::new();
    common::copy_tree(&common::example("notes"), &repo, "examples/notes");
    repo.commit("notes");
    let runner = Runner::new(&json!({"schedule": "17 3 * * *"}));
    // The slim image: git and the system's programs, no cargo.
    let out = run(action(
        repo.root(),
        &runner,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        502,
        "schedule",
        &[],
    )
    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
    .env_remove("RUSTUP_HOME")
    .env_remove("CARGO_HOME"));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        runner.outputs().get("result").map(String::as_str),
        Some("blocked")
    );
    let summary = runner.summary();
    assert!(
        summary.contains(
            "### aayudha sweep — 6 of 6 checks were blocked (they could not run here; none failed)"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("`cargo` is not in this image: run the gate with the full image"),
        "{summary}"
    );
    assert!(!summary.contains("system-wide"), "{summary}");
}
