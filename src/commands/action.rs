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

pub fn run(ctx: &mut Context, options: ActionOptions) -> Result<ExitStatus, Failure> {
    crate::sandbox::cleanup::install();
    match options.mode()? {
        ActionMode::Gate => gate(ctx, &options),
        ActionMode::Comment => comment(ctx, &options),
        ActionMode::Sweep => sweep(ctx, &options),
        ActionMode::Maintain => maintain(ctx, &options),
        ActionMode::Plan | ActionMode::Shard | ActionMode::Merge => Err(Failure::usage(
            "the sharded gate (modes plan, shard and merge) is not built yet",
        )),
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

fn gate(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
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
    // The configuration comes from the commit the workflow came from (`GITHUB_SHA`, the default branch's
    // head), the `config` input being a path in it: neither the pull request nor the branch it targets can
    // relax the gate. It is read once, here; an error in it (file and line) leaves no pack.
    let config_path = config_input(options)?;
    let token = options.token.as_deref();
    let config_sha = inputs::trusted_commit(&repo, github, token)?;
    let no_pack = |ctx: &mut Context, failure: Failure| {
        job.output(ctx.err, "result", "no-pack");
        let summary = crate::output::text(|w| crate::output::summary::no_pack(&failure.message, w));
        job.summary(ctx.err, &summary);
        failure
    };
    let config = inputs::config_at(&repo, &config_sha, &config_path, options.config.is_some())
        .map_err(|f| no_pack(ctx, f))?;
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

    // The story: the input, else the body; its labels and Completion Goal as they are now, its Ready
    // snapshot from the ledger.
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
                Failure::usage("no token: the gate reads the story through the API (input `token`)")
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
            .map_err(|f| no_pack(ctx, f))?;
            if let Some(why) = story.snapshot.meta.local_file_refusal() {
                return Err(no_pack(ctx, Failure::usage(why)));
            }
            Some(story)
        }
        None => None,
    };
    let snapshot_hash = story
        .as_ref()
        .map(|s| s.snapshot.meta.completion_goal_hash.clone());

    // The gate, bound to the pull request, its pack written outside the workspace; its progress streams to
    // the log as it happens.
    let temp = tempfile::Builder::new()
        .prefix("aayudha-")
        .tempdir_in(inputs::temp_folder(github))
        .map_err(|e| Failure::unexpected("cannot create a temporary folder").caused_by(e))?;
    let _interrupted = crate::sandbox::cleanup::dir(temp.path());
    let door = inputs::Door {
        slug: repository.to_string(),
        out: temp.path().join("pack"),
        temp: temp.path().to_path_buf(),
        binding: Some(binding),
        force_red_on_base: false,
        jobs: None,
        actions: true,
    };
    let base_head = (pr.base_sha.clone(), pr.head_sha.clone());
    let inputs = crate::gate::Inputs::new(&repo, &config, base_head, story, ctx.env, door)?;
    let run = crate::gate::run(&inputs, ctx.err);
    if crate::sandbox::cleanup::interrupted() {
        // The signal thread is ending the process (128 + the signal): write no verdict.
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let run = run.map_err(|e| no_pack(ctx, e.into()))?;
    let publish = crate::publish::gate::Publish {
        github,
        retention_days: options
            .retention_days
            .unwrap_or(config.proof.retention_days),
        story: number,
        snapshot_hash,
        fork: pr.is_fork(),
        notes,
        now: ctx.env.now()?,
    };
    crate::publish::gate::gate(&run, publish, temp.path(), ctx.out, ctx.err)?;
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
