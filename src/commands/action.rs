//! `aayu action`: the Docker action's entrypoint. It reads the runner's environment and the `INPUT_*`
//! variables once, through the CLI's own parser, and runs one mode:
//!
//! - `gate` (`pull_request_target`, `pull_request`): fetch the pull request's head itself, run
//!   `verify --ci` bound to the pull request, upload the pack as `aayudha-pack`, write the outputs and the job
//!   summary; exit 0 once the pack is uploaded (the `pack` job reports failing floors).
//! - `comment`: `aayu proof comment` on this run's artifact.
//! - `sweep` (`schedule`, `workflow_dispatch`): every behaviour check; exit 3 when one fails.
//! - `maintain`: `verify --map --maintain always` with the action's token.
//!
//! The trust setup is [`crate::gate::inputs`], the publishing [`crate::publish::gate`]; this is the order.

use crate::commands::{Context, Failure};
use crate::config::{CONFIG_PATH, Config};
use crate::event::Event;
use crate::exit::ExitStatus;
use crate::floors::behaviour::Status;
use crate::gate::inputs;
use crate::git::Repo;
use crate::github::{Client, RepoSlug, Token};
use crate::output::github::{Annotations, Level};
use crate::publish::job::Job;
use crate::settings::VerifyOptions;
use crate::settings::action::{ActionMode, ActionOptions};
use crate::story::Binding;

mod sharded;

pub fn run(ctx: &mut Context, options: ActionOptions) -> Result<ExitStatus, Failure> {
    crate::sandbox::cleanup::install();
    match options.mode()? {
        ActionMode::Gate => gate(ctx, &options),
        ActionMode::Comment => comment(ctx, &options),
        ActionMode::Sweep => sweep(ctx, &options),
        ActionMode::Maintain => maintain(ctx, &options),
        ActionMode::Plan => sharded::plan(ctx, &options),
        ActionMode::Shard => sharded::shard(ctx, &options),
        ActionMode::Merge => sharded::merge(ctx, &options),
    }
}

/// Makes git2 accept a workspace owned by another uid (the runner's, 1001, while the container is root), as
/// `safe.directory` in the image's system config does for the git program.
fn trust_workspace() {
    crate::git::trust_every_owner();
}

/// The `config` input: a path in the default branch's commit (default `.aayudha/config.toml`).
fn config_input(options: &ActionOptions) -> Result<String, Failure> {
    match &options.config {
        None => Ok(CONFIG_PATH.to_string()),
        Some(path)
            if path.is_absolute()
                || path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_))) =>
        {
            Err(Failure::usage(format!(
                "the input `config` must be a path in the repository, not `{}`",
                path.display()
            ))
            .with_hint("name the file as it is in the default branch, e.g. `.aayudha/gate.toml`"))
        }
        Some(path) => Ok(path.display().to_string()),
    }
}

/// A pull request's gate, set up as every job of the gate sets it up (the single gate job, and a sharded
/// gate's plan, legs and merge): the event read, the base's checkout trusted, the configuration read
/// from the default branch's commit, the pull request's head fetched and checked out, its story and
/// binding resolved, and a temporary folder outside the workspace.
pub(crate) struct PullGate {
    pub repo: Repo,
    pub repository: RepoSlug,
    pub pr: crate::event::PullRequest,
    pub config: Config,
    /// The story's number (the input, else the body's).
    pub number: Option<u64>,
    /// The story's Ready snapshot's Completion Goal hash.
    pub snapshot_hash: Option<String>,
    pub binding: Binding,
    pub notes: Annotations,
    pub temp: tempfile::TempDir,
    /// The API and token the harness floor's waiver is read with, when the gate asks.
    pub approval: Option<(String, String)>,
}

/// Who approved the pull request's head, by the one rule ([`crate::story::approval`]), read when the gate
/// asks (it has a harness change to waive): an approval given after a run waives the floor when the run
/// is re-run. `Err` says why GitHub did not answer (then no approval counts).
fn head_approval(
    api_url: &str,
    token: &str,
    repository: &RepoSlug,
    (number, head_sha): (u64, &str),
) -> Result<Option<String>, String> {
    let asked = crate::story::approval::Asked {
        number,
        head_sha,
        author: None,
    };
    Client::new(api_url, &Token::new(token.to_string()))
        .and_then(|client| crate::story::approval::approver(&client, repository, &asked))
        .map_err(|e| e.to_string())
}

impl PullGate {
    /// The gate set up, and the pull request's story (the gate's inputs take it).
    pub fn open(
        ctx: &mut Context,
        options: &ActionOptions,
    ) -> Result<(PullGate, Option<crate::story::Story>), Failure> {
        let github = ctx.github;
        let job = Job::of(github);
        let event_path = github.event_path.clone().ok_or_else(|| {
            Failure::usage(
                "`GITHUB_EVENT_PATH` is not set: the gate reads the pull request from the event",
            )
        })?;
        let pr = Event::read(&event_path)?.pull_request()?;
        let repository = github
            .repository
            .clone()
            .unwrap_or_else(|| pr.base_repo.clone());
        let repository = RepoSlug::parse(&repository).ok_or_else(|| {
            Failure::usage(format!(
                "`{repository}` (GITHUB_REPOSITORY, or the event's base repository) is not OWNER/NAME"
            ))
        })?;
        let root = options.root()?;
        trust_workspace();
        let repo = Repo::discover(&root).map_err(|e| {
            Failure::usage(format!("`{}` is not a git checkout", root.display()))
                .caused_by(e)
                .with_hint("check out the base with actions/checkout before the aayudha step")
        })?;
        inputs::refuse_persisted_credentials(&repo)?;
        // The configuration comes from the commit the workflow came from (`GITHUB_SHA`, the default
        // branch's head), the `config` input being a path in it: neither the pull request nor the branch
        // it targets can relax the gate. It is read once, here; an error in it (file and line) leaves no
        // pack.
        let config_path = config_input(options)?;
        let token = options.token.as_deref();
        let config_sha = inputs::trusted_commit(&repo, github, token)?;
        let config = inputs::config_at(&repo, &config_sha, &config_path, options.config.is_some())
            .map_err(|f| no_pack(ctx, &job, f))?;
        inputs::fetch_pull(&repo, github, token, pr.number, &config.ledger.branch)?;
        for (what, sha) in [("head", &pr.head_sha), ("base", &pr.base_sha)] {
            if repo.sha(sha).is_err() {
                return Err(Failure::unexpected(format!(
                    "the pull request's {what} {sha} is not in the checkout after fetching `refs/pull/{}/head`",
                    pr.number
                ))
                .with_hint("the pull request moved on since this event; the run for its new head verifies it"));
            }
        }

        inputs::check_out(repo.root(), &pr.head_sha)?;
        let mut notes = Annotations::default();
        if inputs::config_changed(&repo, &config_sha, &pr.head_sha, &config_path) {
            notes.add(
                Level::Notice,
                Some((&config_path, 1)),
                "aayudha configuration",
                "this pull request changes the configuration; the gate uses the default branch's until it merges",
            );
        }

        // The story: the input, else the body; its labels and Completion Goal as they are now, its
        // Ready snapshot from the ledger.
        let number = options
            .story
            .or_else(|| pr.body.as_deref().and_then(crate::story::story_in_body));
        let mut binding = Binding {
            pr: pr.number,
            workflow: github.workflow_file(),
            run_id: github.run_id.unwrap_or(0),
            run_url: github.run_url().unwrap_or_default(),
            pr_url: pr.html_url.clone(),
            ..Binding::default()
        };
        let story = match number {
            Some(number) => {
                let token = token.ok_or_else(|| {
                    Failure::usage(
                        "no token: the gate reads the story through the API (input `token`)",
                    )
                })?;
                let client = Client::new(&github.api_url, &Token::new(token.to_string()))
                    .map_err(Failure::from)?;
                inputs::story_now(&client, &repository, number, &mut binding)?;
                let story = inputs::story(
                    &repo,
                    number,
                    None,
                    &root,
                    &config.ledger.branch,
                    &pr.head_sha,
                )
                .map_err(|f| no_pack(ctx, &job, f))?;
                if let Some(why) = story.snapshot.meta.local_file_refusal() {
                    return Err(no_pack(ctx, &job, Failure::usage(why)));
                }
                Some(story)
            }
            None => None,
        };
        let temp = tempfile::Builder::new()
            .prefix("aayudha-")
            .tempdir_in(inputs::temp_folder(github))
            .map_err(|e| Failure::unexpected("cannot create a temporary folder").caused_by(e))?;
        let snapshot_hash = story
            .as_ref()
            .map(|s| s.snapshot.meta.completion_goal_hash.clone());
        let approval = token.map(|t| (github.api_url.clone(), t.to_string()));
        let pull = PullGate {
            repo,
            repository,
            pr,
            config,
            number,
            snapshot_hash,
            binding,
            notes,
            temp,
            approval,
        };
        Ok((pull, story))
    }

    /// The gate's inputs, bound to the pull request, its pack written outside the workspace.
    pub fn inputs<'g>(
        &'g self,
        story: Option<crate::story::Story>,
        env: &crate::settings::Env,
    ) -> Result<crate::gate::Inputs<'g>, Failure> {
        let door = inputs::Door {
            slug: self.repository.to_string(),
            out: self.temp.path().join("pack"),
            temp: self.temp.path().to_path_buf(),
            binding: Some(self.binding.clone()),
            force_red_on_base: false,
            harness_approval: self.approval.as_ref().map(|(api, token)| {
                let read = move || {
                    head_approval(
                        api,
                        token,
                        &self.repository,
                        (self.pr.number, &self.pr.head_sha),
                    )
                };
                Box::new(read) as crate::gate::Approval<'g>
            }),
            jobs: None,
            actions: true,
        };
        let base_head = (self.pr.base_sha.clone(), self.pr.head_sha.clone());
        crate::gate::Inputs::new(&self.repo, &self.config, base_head, story, env, door)
    }

    /// What publishing the pack needs.
    pub fn publish<'g>(
        &self,
        ctx: &Context<'g>,
        options: &ActionOptions,
    ) -> Result<crate::publish::gate::Publish<'g>, Failure> {
        Ok(crate::publish::gate::Publish {
            github: ctx.github,
            retention_days: options
                .retention_days
                .unwrap_or(self.config.proof.retention_days),
            story: self.number,
            snapshot_hash: self.snapshot_hash.clone(),
            fork: self.pr.is_fork(),
            notes: self.notes.clone(),
            now: ctx.env.now()?,
            merge: false,
        })
    }
}

/// A gate that made no pack: the `result` output says so and the job summary says why.
fn no_pack(ctx: &mut Context, job: &Job, failure: Failure) -> Failure {
    job.output(ctx.err, "result", "no-pack");
    let summary = crate::output::text(|w| crate::output::summary::no_pack(&failure.message, w));
    job.summary(ctx.err, &summary);
    failure
}

fn gate(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let job = Job::of(ctx.github);
    let (pull, story) = PullGate::open(ctx, options)?;
    let _interrupted = crate::sandbox::cleanup::dir(pull.temp.path());
    // The gate's progress streams to the log as it happens.
    let inputs = pull.inputs(story, ctx.env)?;
    let run = crate::gate::run(&inputs, ctx.err);
    if crate::sandbox::cleanup::interrupted() {
        // The signal thread is ending the process (128 + the signal): write no verdict.
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let run = run.map_err(|e| no_pack(ctx, &job, e.into()))?;
    let publish = pull.publish(ctx, options)?;
    crate::publish::gate::gate(&run, publish, pull.temp.path(), ctx.out, ctx.err)?;
    // The pack is uploaded: the `pack` job reports the verdict.
    Ok(ExitStatus::Ok)
}

/// `aayu proof comment` on this run's artifact, with the action's inputs.
fn comment(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let proof = crate::settings::ProofCommentOptions {
        pr: None,
        pack: None,
        bot_login: options.bot_login.clone(),
        token: options.token.clone(),
        config_path: options.config.as_ref().map(|p| p.display().to_string()),
        gate_result: options.gate_result.clone(),
        gate_reason: options.gate_reason.clone(),
    };
    super::publish_proof(ctx, &proof)
}

/// The sweep's title: how many checks failed and how many were blocked, each said as what it is.
fn sweep_verdict(failed: usize, blocked: usize, total: usize) -> String {
    let were = |n: usize| if n == 1 { "was" } else { "were" };
    match (failed, blocked) {
        (0, 0) => "every check passes".to_string(),
        (_, 0) => format!("{failed} of {total} checks fail"),
        (0, _) => format!(
            "{blocked} of {total} checks {} blocked (they could not run here; none failed)",
            were(blocked)
        ),
        _ => format!(
            "{failed} of {total} checks fail and {blocked} {} blocked",
            were(blocked)
        ),
    }
}

fn sweep(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let root = options.root()?;
    trust_workspace();
    let repo = Repo::discover(&root).map_err(Failure::from)?;
    inputs::refuse_persisted_credentials(&repo)?;
    let job = Job::of(ctx.github);
    let verify = VerifyOptions {
        check: Some("all".into()),
        config: options.config.clone(),
        ..VerifyOptions::default()
    };
    // The sweep runs on the default branch's checkout (a schedule or a dispatch): its configuration is the
    // working tree's.
    let config =
        Config::load(repo.root(), options.config.as_deref(), &root).map_err(Failure::from)?;
    let ran = crate::gate::checks::run(ctx.env, ctx.err, &repo, &config, &verify, &root)?;
    let checks = ran.map(|(report, _)| report.checks).unwrap_or_default();
    let mut notes = Annotations::default();
    for c in &checks {
        let name = format!("{}.{}", c.feature, c.check);
        match c.status {
            Status::Failed | Status::Blocked => notes.add(
                Level::Error,
                None,
                &format!("aayudha check {name} {}", c.status.as_str()),
                &c.reason,
            ),
            Status::Unreachable => notes.add(
                Level::Warning,
                None,
                &format!("aayudha check {name} unreachable"),
                &c.reason,
            ),
            Status::Passed => {}
        }
    }
    let _ = ctx.out.write_all(notes.lines.as_bytes());
    // A blocked check did not run here (a tool missing, a control tool that broke): it is said apart from
    // a failed one, never counted as one.
    let count = |status: Status| checks.iter().filter(|c| c.status == status).count();
    let (failed, blocked) = (count(Status::Failed), count(Status::Blocked));
    let verdict = sweep_verdict(failed, blocked, checks.len());
    let summary = crate::output::text(|w| {
        crate::output::summary::sweep(&verdict, &checks, &notes.overflow, w)
    });
    job.summary(ctx.err, &summary);
    let result = match (failed, blocked) {
        (0, 0) => "passed",
        (0, _) => "blocked",
        _ => "failed",
    };
    job.output(ctx.err, "result", result);
    let _ = writeln!(ctx.out, "aayudha sweep: {verdict}");
    Ok(if failed + blocked == 0 {
        ExitStatus::Ok
    } else {
        ExitStatus::FloorFails
    })
}

/// The weekly maintain record: `verify --map --maintain always` on the default branch's checkout, with the
/// action's token. A record with no mention (an Actions run wakes no agent app); the job summary says so.
fn maintain(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let root = options.root()?;
    trust_workspace();
    let repo = Repo::discover(&root).map_err(Failure::from)?;
    inputs::refuse_persisted_credentials(&repo)?;
    // A schedule or a dispatch runs on the default branch: its configuration is the working tree's.
    let config =
        Config::load(repo.root(), options.config.as_deref(), &root).map_err(Failure::from)?;
    // The action's token (the input, else `GITHUB_TOKEN`), never the local order's `GH_TOKEN` or `gh`.
    let token = options.token.clone().map(Token::new).ok_or_else(|| {
        Failure::usage("no token: the maintain brief is posted with the action's token (input `token`, or `GITHUB_TOKEN`)")
    })?;
    let maintain = crate::maintain::post::Maintain::prepare(
        ctx.env,
        ctx.github,
        &repo,
        &config,
        crate::settings::MaintainMode::Always,
        Some(token),
    )?;
    super::map_run(ctx, &repo, &config, false, Some(&maintain))
}
