//! The action's scenario builder: a repository on "GitHub" (a bare `origin` with `main`, the pull request's
//! head and the ledger), the workspace as actions/checkout leaves it, the fake GitHub seeded with the job's
//! token and story #902, a fake results service per run, and one `aayu action` job — its event, inputs and
//! environment — started exactly as the runner starts the container. `.run()` gives the run and the
//! runner's folders (outputs, job summary); the fakes say what they were sent.

use crate::common;
use crate::support::fake_github;
use crate::support::fake_results;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use crate::common::{TALLY_EVIDENCE, TestRepo, run, tally};
use base64::Engine as _;
use fake_github::{FakeIssue, FakePull};
use serde_json::{Value, json};

pub(crate) const REPO: &str = "Codertocat/Hello-World";
pub(crate) const GOAL: &str = "1. Blank lines are skipped.";

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

impl Origin {
    /// The bare repository's path, as a remote URL.
    pub(crate) fn url(&self) -> String {
        self.bare.path().display().to_string()
    }
}

/// The tally example (the bug on `main`, the fix as pull request #3) with story 902 Ready on the ledger.
pub(crate) fn origin() -> Origin {
    let (source, base, head) = tally(TALLY_EVIDENCE, "");
    with_ledger(&source);
    publish(source, base, head)
}

/// Adds the `ledger` branch with story 902's Ready snapshot to a source repository (back on `main`).
pub(crate) fn with_ledger(source: &TestRepo) {
    with_ledger_from(source, "");
}

/// [`with_ledger`], with `more` at the end of the snapshot's JSON line (`, "source": "…"`).
pub(crate) fn with_ledger_from(source: &TestRepo, more: &str) {
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
    ws.git(&["remote", "add", "origin", &origin.url()]);
    ws.git(&["fetch", "-q", "origin", "main"]);
    ws.git(&["checkout", "-q", "-B", "main", &origin.base]);
    ws
}

/// The runner's own folders: the event, the file commands, the temp folder, HOME.
pub(crate) struct Runner {
    pub(crate) dir: tempfile::TempDir,
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

    /// The output `name`, when the job set it.
    pub(crate) fn output(&self, name: &str) -> Option<String> {
        self.outputs().remove(name)
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
        "GATE_REASON",
        "SHARDS",
        "SHARD",
        "PLAN_DIGEST",
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

/// The fake with the job's token and story #902.
pub(crate) fn seeded(server: fake_github::Server) -> fake_github::Server {
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

/// Pull request #3 of an origin on the fake GitHub: the workspace checked out at its base, the fake seeded
/// with the job's token and story #902, and a fake results service for each run, started when a job of
/// that run first asks for it.
pub(crate) struct Scenario {
    pub(crate) origin: Origin,
    pub(crate) ws: TestRepo,
    pub(crate) github: fake_github::Server,
    results: RefCell<BTreeMap<u64, Rc<fake_results::Server>>>,
}

impl Scenario {
    pub(crate) fn new(origin: Origin) -> Scenario {
        Scenario::on(origin, fake_github::Server::start())
    }

    /// On GitHub Enterprise Server: the API under `/api/v3`.
    pub(crate) fn enterprise(origin: Origin) -> Scenario {
        Scenario::on(origin, fake_github::Server::enterprise())
    }

    fn on(origin: Origin, server: fake_github::Server) -> Scenario {
        // The base is `main`'s head: what ship asks of the pack's base.
        server
            .state
            .lock()
            .expect("lock")
            .compares
            .insert(format!("{}...main", origin.base), "identical".into());
        Scenario {
            ws: workspace(&origin),
            github: seeded(server),
            origin,
            results: RefCell::new(BTreeMap::new()),
        }
    }

    /// The pull request open on GitHub, and story 902's Ready snapshot readable on its ledger branch.
    pub(crate) fn with_story_on_the_ledger(self) -> Scenario {
        let mut fake = self.github.state.lock().expect("lock");
        fake.pulls.insert(3, FakePull::open(&self.origin.head));
        let snapshot = common::git_command(self.origin.bare.path())
            .args(["show", "ledger:specs/902/ready.md"])
            .output()
            .expect("git show")
            .stdout;
        fake.files
            .insert(("ledger".into(), "specs/902/ready.md".into()), snapshot);
        drop(fake);
        self
    }

    /// GitHub's `pull_request` example of `action` (its first), made pull request #3, with this body.
    pub(crate) fn event(&self, action: &str, body: Option<&str>) -> Value {
        pr_event(action, 0, &self.origin, body)
    }

    /// The fake results service of run `run_id`.
    pub(crate) fn results(&self, run_id: u64) -> Rc<fake_results::Server> {
        self.results
            .borrow_mut()
            .entry(run_id)
            .or_insert_with(|| Rc::new(fake_results::Server::start(&runtime_token(run_id))))
            .clone()
    }

    /// The merge gate (`mode` left to the event) of run `run_id`, on `event`.
    pub(crate) fn gate(&self, run_id: u64, event: &Value) -> Job {
        Job::new(
            self.ws.root(),
            &self.github.url,
            &self.results(run_id).url,
            run_id,
            event.clone(),
        )
        .event_name("pull_request_target")
    }

    /// A job of run `run_id` on `event` in another workspace (another runner's checkout of the base):
    /// a sharded gate's plan, legs and merge each run on a runner of their own.
    pub(crate) fn gate_in(&self, ws: &Path, run_id: u64, event: &Value) -> Job {
        Job::new(
            ws,
            &self.github.url,
            &self.results(run_id).url,
            run_id,
            event.clone(),
        )
        .event_name("pull_request_target")
    }

    /// A new workspace: the base checked out as actions/checkout leaves it.
    pub(crate) fn new_workspace(&self) -> TestRepo {
        workspace(&self.origin)
    }

    /// The bytes of run `run_id`'s artifact `name` (its zip), when it was uploaded.
    pub(crate) fn artifact(&self, run_id: u64, name: &str) -> Option<Vec<u8>> {
        let results = self.results(run_id);
        let fake = results.state.lock().expect("lock");
        let artifact = fake
            .artifacts
            .iter()
            .find(|a| a.name == name && a.finalized)?;
        fake.blobs.get(&artifact.key).cloned()
    }

    /// The names of run `run_id`'s artifacts.
    pub(crate) fn artifact_names(&self, run_id: u64) -> Vec<String> {
        self.results(run_id)
            .state
            .lock()
            .expect("lock")
            .artifacts
            .iter()
            .map(|a| a.name.clone())
            .collect()
    }

    /// The pack job of run `run_id` (`mode: comment`), on `event`.
    pub(crate) fn comment(&self, run_id: u64, event: &Value) -> Job {
        self.gate(run_id, event).input("MODE", "comment")
    }

    /// Whether run `run_id` uploaded a pack (its artifacts' count).
    pub(crate) fn uploaded(&self, run_id: u64) -> usize {
        self.results(run_id)
            .state
            .lock()
            .expect("lock")
            .artifacts
            .len()
    }

    /// Neither GitHub nor any results service got a request it did not expect.
    pub(crate) fn assert_clean(&self) {
        self.github.assert_clean();
        for results in self.results.borrow().values() {
            results.assert_clean();
        }
    }
}

/// One `aayu action` job, as the runner starts it: built by [`Scenario::gate`], [`Scenario::comment`] or
/// [`Job::sweep`], then given inputs and environment.
pub(crate) struct Job {
    ws: PathBuf,
    github: String,
    results: String,
    run_id: u64,
    event_name: String,
    event: Value,
    inputs: Vec<(String, String)>,
    env: Vec<(String, Option<OsString>)>,
    runner: Option<Runner>,
}

/// Nothing listens there: a sweep needs neither GitHub nor the results service.
const NOWHERE: &str = "http://127.0.0.1:9";

impl Job {
    fn new(ws: &Path, github: &str, results: &str, run_id: u64, event: Value) -> Job {
        Job {
            ws: ws.to_path_buf(),
            github: github.to_string(),
            results: results.to_string(),
            run_id,
            event_name: String::new(),
            event,
            inputs: Vec::new(),
            env: Vec::new(),
            runner: None,
        }
    }

    /// The nightly sweep (`schedule`) of the repository at `ws`, run `run_id`.
    pub(crate) fn sweep(ws: &Path, run_id: u64) -> Job {
        Job::new(
            ws,
            NOWHERE,
            NOWHERE,
            run_id,
            json!({"schedule": "17 3 * * *"}),
        )
        .event_name("schedule")
    }

    pub(crate) fn event_name(mut self, name: &str) -> Job {
        self.event_name = name.to_string();
        self
    }

    /// The input `name` (`INPUT_<name>`).
    pub(crate) fn input(mut self, name: &str, value: &str) -> Job {
        self.inputs.push((name.to_string(), value.to_string()));
        self
    }

    /// A variable set over the runner's.
    pub(crate) fn env(mut self, name: &str, value: impl Into<OsString>) -> Job {
        self.env.push((name.to_string(), Some(value.into())));
        self
    }

    /// A variable of the runner's taken away.
    pub(crate) fn env_remove(mut self, name: &str) -> Job {
        self.env.push((name.to_string(), None));
        self
    }

    /// Runs in these runner folders (prepared by the test) instead of fresh ones for the job's event.
    pub(crate) fn in_runner(mut self, runner: Runner) -> Job {
        self.runner = Some(runner);
        self
    }

    /// The command, not started, and the runner folders it writes to.
    pub(crate) fn command(self) -> (Command, Runner) {
        let runner = self.runner.unwrap_or_else(|| Runner::new(&self.event));
        let inputs: Vec<(&str, &str)> = self
            .inputs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let mut cmd = action(
            &self.ws,
            &runner,
            &self.github,
            &self.results,
            self.run_id,
            &self.event_name,
            &inputs,
        );
        for (name, value) in &self.env {
            match value {
                Some(value) => cmd.env(name, value),
                None => cmd.env_remove(name),
            };
        }
        (cmd, runner)
    }

    pub(crate) fn run(self) -> Done {
        let (mut cmd, runner) = self.command();
        Done {
            run: run(&mut cmd),
            runner,
        }
    }
}

/// A finished job: what it said and exited with, and the runner folders it wrote.
pub(crate) struct Done {
    pub(crate) run: common::Run,
    pub(crate) runner: Runner,
}

impl Done {
    /// The `result` output.
    pub(crate) fn result(&self) -> Option<String> {
        self.runner.output("result")
    }

    pub(crate) fn summary(&self) -> String {
        self.runner.summary()
    }

    /// stdout then stderr, for a failure message.
    pub(crate) fn said(&self) -> String {
        format!("{}\n{}", self.run.stdout, self.run.stderr)
    }
}

impl std::ops::Deref for Done {
    type Target = common::Run;

    fn deref(&self) -> &common::Run {
        &self.run
    }
}
