//! `aayu action`: the Docker action's entrypoint. It reads the runner's environment and the `INPUT_*`
//! variables once, through the CLI's own parser, and runs one mode:
//!
//! - `gate` (`pull_request_target`, `pull_request`): fetch the pull request's head itself, run
//!   `verify --ci` bound to the pull request, upload the pack as `aayudha-pack`, write the outputs and the job
//!   summary; exit 0 once the pack is uploaded (the `pack` job reports failing floors).
//! - `comment`: `aayu proof comment` on this run's artifact.
//! - `sweep` (`schedule`, `workflow_dispatch`): every behaviour check; exit 3 when one fails.

mod event;
pub mod files;

pub use event::story_in_body;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use clap::parser::ValueSource;

use crate::commands::{Context, Failure, github_failure, short};
use crate::config::{CONFIG_PATH, Config};
use crate::exit::ExitStatus;
use crate::failure::git_failure;
use crate::floors::behaviour::Status;
use crate::gate::Story;
use crate::git::Repo;
use crate::github::{Client, RepoSlug, Token};
use crate::ledger::ready;
use crate::publish::ARTIFACT;
use crate::publish::archive;
use crate::publish::results::{self, Results};
use crate::registry::CommandId;
use crate::settings::{Binding, Env, ProofCommentOptions, VerifyOptions};

use crate::output::github::{Annotations, Level};

/// What the action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionMode {
    Gate,
    Comment,
    Sweep,
    Maintain,
}

/// The action's inputs and the runner's environment, resolved once.
#[derive(Debug, Clone, Default)]
pub struct ActionOptions {
    pub mode: Option<ActionMode>,
    pub token: Option<String>,
    pub story: Option<u64>,
    pub config: Option<PathBuf>,
    pub working_directory: Option<PathBuf>,
    pub retention_days: Option<u32>,
    pub bot_login: Option<String>,
    pub gate_result: Option<String>,
    pub event_name: String,
    pub event_path: Option<PathBuf>,
    pub repository: Option<String>,
    pub run_id: Option<u64>,
    pub run_attempt: Option<u64>,
    pub workspace: PathBuf,
    pub api_url: String,
    pub server_url: String,
    pub results_url: Option<String>,
    pub runtime_token: Option<String>,
    pub retention_max: Option<u32>,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub workflow_ref: Option<String>,
    pub runner_temp: Option<PathBuf>,
    /// `GITHUB_SHA`: under `pull_request_target`, the default branch's head, where the workflow and the
    /// gate's configuration come from.
    pub sha: Option<String>,
}

/// The action.yml name of a registry input: `working-directory` is declared as `working_directory`.
pub fn input_name(registry_name: &str) -> String {
    registry_name.replace('-', "_")
}

/// The `INPUT_*` variable of an input: upper-cased, spaces as `_`, hyphens kept (as the runner does).
fn input_var(name: &str) -> String {
    format!("INPUT_{}", name.to_uppercase().replace(' ', "_"))
}

impl ActionOptions {
    /// Flags given on the command line win; otherwise each input comes from its `INPUT_*` variable (`""` is
    /// "not given", values trimmed) and is parsed by the same clap definition as the flag.
    pub fn resolve(m: &ArgMatches, env: &Env) -> Result<ActionOptions, Failure> {
        let var = |name: &str| {
            env.vars
                .get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut argv: Vec<std::ffi::OsString> = vec!["aayu".into(), "action".into()];
        let mut sources: Vec<(String, String)> = Vec::new();
        for input in CommandId::Action.spec().inputs {
            if m.value_source(input.name) == Some(ValueSource::CommandLine) {
                if let Some(raw) = m.get_raw(input.name) {
                    for value in raw {
                        argv.push(format!("--{}", input.name).into());
                        argv.push(value.to_os_string());
                    }
                }
                continue;
            }
            let declared = input_var(&input_name(input.name));
            let hyphened = input_var(input.name);
            if let Some((variable, value)) = var(&declared)
                .map(|v| (declared.clone(), v))
                .or_else(|| var(&hyphened).map(|v| (hyphened.clone(), v)))
            {
                // Parse each input alone, so that an error names the input it comes from.
                let alone = crate::registry::clap::build().try_get_matches_from([
                    "aayu".into(),
                    "action".into(),
                    format!("--{}", input.name).into(),
                    std::ffi::OsString::from(&value),
                ]);
                if let Err(e) = alone {
                    let why = e
                        .to_string()
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .trim_start_matches("error: ")
                        .to_string();
                    return Err(Failure::usage(format!(
                        "the input `{}` ({variable}) is not valid: {why}",
                        input_name(input.name)
                    ))
                    .with_hint("fix the `with:` of the aayudha step in the workflow"));
                }
                argv.push(format!("--{}", input.name).into());
                argv.push(value.clone().into());
                sources.push((input.name.to_string(), variable));
            }
        }
        let matches = crate::registry::clap::build()
            .try_get_matches_from(argv)
            .map_err(|e| Failure::usage(e.to_string().trim().to_string()))?;
        let m = matches.subcommand_matches("action").ok_or_else(|| {
            Failure::unexpected("the action's inputs did not parse as `aayu action`")
        })?;
        let mode = match m.get_one::<String>("mode").map(String::as_str) {
            Some("gate") => Some(ActionMode::Gate),
            Some("comment") => Some(ActionMode::Comment),
            Some("sweep") => Some(ActionMode::Sweep),
            Some("maintain") => Some(ActionMode::Maintain),
            _ => None,
        };
        let workspace = var("GITHUB_WORKSPACE")
            .map(PathBuf::from)
            .or_else(|| env.cwd.clone())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(ActionOptions {
            mode,
            token: m
                .get_one::<String>("token")
                .cloned()
                .or_else(|| var("GITHUB_TOKEN")),
            story: m.get_one::<u64>("story").copied(),
            config: m.get_one::<PathBuf>("config").cloned(),
            working_directory: m.get_one::<PathBuf>("working-directory").cloned(),
            retention_days: m
                .get_one::<u64>("retention-days")
                .map(|&d| u32::try_from(d).unwrap_or(u32::MAX)),
            bot_login: m.get_one::<String>("bot-login").cloned(),
            gate_result: m.get_one::<String>("gate-result").cloned(),
            event_name: var("GITHUB_EVENT_NAME").unwrap_or_default(),
            event_path: var("GITHUB_EVENT_PATH").map(PathBuf::from),
            repository: var("GITHUB_REPOSITORY"),
            run_id: var("GITHUB_RUN_ID").and_then(|v| v.parse().ok()),
            run_attempt: var("GITHUB_RUN_ATTEMPT").and_then(|v| v.parse().ok()),
            workspace,
            api_url: var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
            server_url: var("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into()),
            results_url: var("ACTIONS_RESULTS_URL"),
            runtime_token: var("ACTIONS_RUNTIME_TOKEN"),
            retention_max: var("GITHUB_RETENTION_DAYS").and_then(|v| v.parse().ok()),
            step_summary: var("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: var("GITHUB_OUTPUT").map(PathBuf::from),
            workflow_ref: var("GITHUB_WORKFLOW_REF"),
            runner_temp: var("RUNNER_TEMP").map(PathBuf::from),
            sha: var("GITHUB_SHA"),
        })
    }

    /// The mode: the input, else from the event.
    fn mode(&self) -> Result<ActionMode, Failure> {
        if let Some(mode) = self.mode {
            return Ok(mode);
        }
        match self.event_name.as_str() {
            "pull_request_target" | "pull_request" => Ok(ActionMode::Gate),
            "schedule" | "workflow_dispatch" => Ok(ActionMode::Sweep),
            "" => Err(Failure::usage(
                "no mode: `GITHUB_EVENT_NAME` is not set and the input `mode` is not given",
            )
            .with_hint(
                "set `mode: gate`, `comment`, `sweep` or `maintain`; locally, `aayu action --mode sweep`",
            )),
            other => Err(
                Failure::usage(format!("the event `{other}` has no default mode"))
                    .with_hint("set the input `mode` to `gate`, `comment`, `sweep` or `maintain`"),
            ),
        }
    }

    /// The repository's folder: the workspace, or `working_directory` inside it.
    fn root(&self) -> Result<PathBuf, Failure> {
        let root = match &self.working_directory {
            Some(dir)
                if dir.is_absolute()
                    || dir
                        .components()
                        .any(|c| c == std::path::Component::ParentDir) =>
            {
                return Err(Failure::usage(format!(
                    "the input `working_directory` must be a folder inside the workspace, not `{}`",
                    dir.display()
                )));
            }
            Some(dir) => self.workspace.join(dir),
            None => self.workspace.clone(),
        };
        if !root.is_dir() {
            return Err(Failure::usage(format!(
                "the repository folder `{}` does not exist",
                root.display()
            ))
            .with_hint(
                "check out the repository first (actions/checkout), and check `working_directory`",
            ));
        }
        Ok(root)
    }

    fn run_url(&self) -> String {
        match (&self.repository, self.run_id) {
            (Some(repo), Some(id)) => format!("{}/{repo}/actions/runs/{id}", self.server_url),
            _ => String::new(),
        }
    }

    /// The workflow file of this run: `GITHUB_WORKFLOW_REF` is `owner/repo/.github/workflows/f.yml@ref`.
    fn workflow_file(&self) -> String {
        let Some(reference) = &self.workflow_ref else {
            return String::new();
        };
        let path = reference.split('@').next().unwrap_or(reference);
        match path.find(".github/workflows/") {
            Some(i) => path[i..].to_string(),
            None => path.to_string(),
        }
    }
}

pub fn run(ctx: &mut Context, options: ActionOptions) -> Result<ExitStatus, Failure> {
    crate::cleanup::install();
    match options.mode()? {
        ActionMode::Gate => gate(ctx, &options),
        ActionMode::Comment => comment(ctx, &options),
        ActionMode::Sweep => sweep(ctx, &options),
        ActionMode::Maintain => maintain(ctx, &options),
    }
}

fn say(ctx: &mut Context, text: &str) {
    let _ = ctx.out.write_all(text.as_bytes());
}

fn output(ctx: &mut Context, options: &ActionOptions, name: &str, value: &str) {
    if let Some(file) = &options.output
        && let Err(e) = files::set_output(file, name, value)
    {
        let _ = writeln!(
            ctx.err,
            "warning: cannot write the output `{name}` to `{}`: {e}",
            file.display()
        );
    }
}

fn summary(ctx: &mut Context, options: &ActionOptions, text: &str) {
    if let Some(file) = &options.step_summary
        && let Err(e) = files::append_summary(file, text)
    {
        let _ = writeln!(
            ctx.err,
            "warning: cannot write the job summary `{}`: {e}",
            file.display()
        );
    }
}

/// Makes git2 accept a workspace owned by another uid (the runner's, 1001, while the container is root), as
/// `safe.directory` in the image's system config does for the git program.
fn trust_workspace() {
    crate::git::trust_every_owner();
}

/// Fetches `refs/pull/<n>/head` and the ledger branch with the token, before any product code runs.
fn fetch(repo: &Repo, options: &ActionOptions, pr: u64, ledger: &str) -> Result<(), Failure> {
    let root = repo.root();
    let network = crate::git::Network {
        server_url: options.server_url.clone(),
        token: options.token.clone(),
    };
    let git = |refspec: &str| -> Result<std::process::Output, Failure> {
        crate::git::git_program(
            root,
            &network,
            &["fetch", "--no-tags", "--quiet", "origin", refspec],
        )
        .map_err(|e| {
            Failure::unexpected("cannot run git to fetch the pull request's head")
                .caused_by(e)
                .with_hint("the image needs git (the action's Dockerfile installs it)")
        })
    };
    let head = git(&format!("+refs/pull/{pr}/head:refs/remotes/pull/{pr}/head"))?;
    if !head.status.success() {
        return Err(Failure::unexpected(format!(
            "cannot fetch `refs/pull/{pr}/head` from origin: {}",
            String::from_utf8_lossy(&head.stderr).trim()
        ))
        .with_hint("check out the repository with actions/checkout (its `origin` is the repository) and give the job `contents: read`"));
    }
    // The ledger may not exist yet (no story is Ready): that is not an error here.
    let _ = git(&format!(
        "+refs/heads/{ledger}:refs/remotes/origin/{ledger}"
    ))?;
    Ok(())
}

/// The commit the gate's configuration comes from (`GITHUB_SHA`), fetched when the checkout lacks it (a
/// shallow checkout of the pull request's base, say).
fn config_commit(repo: &Repo, options: &ActionOptions) -> Result<String, Failure> {
    let sha = options.sha.clone().ok_or_else(|| {
        Failure::usage("`GITHUB_SHA` is not set: the gate reads its configuration at the commit the workflow came from")
            .with_hint("run the gate as a step of a `pull_request_target` workflow")
    })?;
    if repo.sha(&sha).is_err() {
        let network = crate::git::Network {
            server_url: options.server_url.clone(),
            token: options.token.clone(),
        };
        let _ = crate::git::git_program(
            repo.root(),
            &network,
            &["fetch", "--no-tags", "--quiet", "origin", &sha],
        );
    }
    repo.sha(&sha).map_err(|_| {
        Failure::unexpected(format!(
            "the workflow's commit {sha} (`GITHUB_SHA`), whose configuration the gate reads, is not in the checkout and could not be fetched"
        ))
        .with_hint("check out with `fetch-depth: 0`, or give the job `contents: read`")
    })
}

/// Refuses to run product code in a checkout whose git configuration holds a credential: product code can
/// read `.git/config` (and a file it includes), so a token `actions/checkout` persisted there would be its.
fn refuse_persisted_credentials(repo: &Repo) -> Result<(), Failure> {
    let found = repo.persisted_credentials();
    if found.is_empty() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "the checkout's git configuration holds a credential ({}): product code would be able to read it, so none runs",
        found.join(", ")
    ))
    .with_hint("set `persist-credentials: false` on actions/checkout (the workflow templates do)"))
}

/// Puts the pull request's head in the working tree (detached), where `verify --ci` runs it; the gate is
/// the job's last step, so nothing trusted runs in this tree afterwards.
fn check_out(root: &Path, sha: &str) -> Result<(), Failure> {
    let output = crate::git::git_program(
        root,
        &crate::git::Network::default(),
        &["checkout", "--quiet", "--force", "--detach", sha],
    )
    .map_err(|e| Failure::unexpected("cannot run git to check out the head").caused_by(e))?;
    if !output.status.success() {
        return Err(Failure::unexpected(format!(
            "cannot check out the pull request's head {sha}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
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
    let event_path = options.event_path.clone().ok_or_else(|| {
        Failure::usage(
            "`GITHUB_EVENT_PATH` is not set: the gate reads the pull request from the event",
        )
    })?;
    let payload = event::read(&event_path)?;
    let pr = event::pull_request(&payload, &event_path)?;
    let repository = options
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
    refuse_persisted_credentials(&repo)?;
    // The configuration comes from the commit the workflow came from (`GITHUB_SHA`, the default branch's
    // head), the `config` input being a path in it: neither the pull request nor the branch it targets can
    // relax the gate. It is read once, here; an error in it (file and line) leaves no pack.
    let config_path = config_input(options)?;
    let config_sha = config_commit(&repo, options)?;
    let no_pack = |ctx: &mut Context, failure: Failure| {
        output(ctx, options, "result", "no-pack");
        summary(
            ctx,
            options,
            &crate::output::summary::no_pack(&failure.message),
        );
        failure
    };
    let config = match repo
        .file_at(&config_sha, &config_path)
        .map_err(git_failure)?
    {
        Some(bytes) => Config::from_text(
            &String::from_utf8_lossy(&bytes),
            &format!("{}:{config_path}", short(&config_sha)),
        )
        .map_err(|e| {
            no_pack(
                ctx,
                Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()),
            )
        })?,
        None if options.config.is_none() => Config::defaults(),
        None => {
            return Err(no_pack(
                ctx,
                Failure::usage(format!(
                    "the configuration `{config_path}` is not in the default branch's commit {}",
                    short(&config_sha)
                ))
                .with_hint("the `config` input names a file of the default branch"),
            ));
        }
    };
    fetch(&repo, options, pr.number, &config.ledger.branch)?;
    for (what, sha) in [("head", &pr.head_sha), ("base", &pr.base_sha)] {
        if repo.sha(sha).is_err() {
            return Err(Failure::unexpected(format!(
                "the pull request's {what} {sha} is not in the checkout after fetching `refs/pull/{}/head`",
                pr.number
            ))
            .with_hint("the pull request moved on since this event; the run for its new head verifies it"));
        }
    }

    check_out(repo.root(), &pr.head_sha)?;
    let mut notes = Annotations::default();
    if repo.file_at(&config_sha, &config_path).ok().flatten()
        != repo.file_at(&pr.head_sha, &config_path).ok().flatten()
    {
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
        .or_else(|| pr.body.as_deref().and_then(event::story_in_body));
    let mut binding = Binding {
        pr: pr.number,
        workflow: options.workflow_file(),
        run_id: options.run_id.unwrap_or(0),
        run_url: options.run_url(),
        pr_url: pr.html_url.clone(),
        ..Binding::default()
    };
    let story = match number {
        Some(number) => {
            let token = options.token.clone().ok_or_else(|| {
                Failure::usage("no token: the gate reads the story through the API (input `token`)")
            })?;
            let client =
                Client::new(&options.api_url, &Token::new(token)).map_err(github_failure)?;
            let issue = client.issue(&repository, number).map_err(github_failure)?;
            binding.story_labels = Some(issue.labels);
            // A story whose body lost its Completion Goal hashes to nothing, which no snapshot matches.
            binding.completion_goal_hash = Some(
                issue
                    .body
                    .as_deref()
                    .and_then(ready::completion_goal)
                    .map(|goal| ready::goal_hash(&goal))
                    .unwrap_or_default(),
            );
            let snapshot =
                super::ci::read_snapshot(&repo, number, None, &root, &config.ledger.branch)
                    .map_err(|f| no_pack(ctx, f))?;
            if let Some(why) = snapshot.meta.local_file_refusal() {
                return Err(no_pack(ctx, Failure::usage(why)));
            }
            Some(Story { number, snapshot })
        }
        None => None,
    };
    let snapshot_hash = story
        .as_ref()
        .map(|s| s.snapshot.meta.completion_goal_hash.clone());

    // The gate, bound to the pull request, its pack written outside the workspace; its progress streams to
    // the log as it happens.
    let temp = match &options.runner_temp {
        Some(dir) => tempfile::Builder::new().prefix("aayudha-").tempdir_in(dir),
        None => tempfile::Builder::new().prefix("aayudha-").tempdir(),
    }
    .map_err(|e| Failure::unexpected("cannot create a temporary folder").caused_by(e))?;
    let _interrupted = crate::cleanup::dir(temp.path());
    let pack_dir = temp.path().join("pack");
    let inputs = crate::gate::Inputs {
        repo: &repo,
        config: &config,
        base: pr.base_sha.clone(),
        head: pr.head_sha.clone(),
        story,
        binding: Some(binding),
        force_red_on_base: false,
        sandbox: crate::gate::sandbox_settings(ctx.env, &config, None, repo.root()),
        aayu: ctx.env.exe.clone().unwrap_or_else(|| "aayu".into()),
        out: pack_dir.clone(),
        temp: temp.path().to_path_buf(),
        now: ctx.env.now()?,
        slug: repository.to_string(),
        actions: true,
    };
    let run = crate::gate::run(&inputs, ctx.err);
    if crate::cleanup::interrupted() {
        // The signal thread is ending the process (128 + the signal): write no verdict.
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let run = run.map_err(|e| no_pack(ctx, super::ci::gate_failure(e)))?;
    let pack = &run.pack;

    // The artifact.
    let zip_path = temp.path().join("aayudha-pack.zip");
    let zip_file = std::fs::File::create(&zip_path)
        .map_err(|e| Failure::unexpected("cannot create the pack zip").caused_by(e))?;
    archive::build(&pack_dir, std::io::BufWriter::new(zip_file))
        .map_err(|e| Failure::unexpected("cannot zip the pack").caused_by(e))?;
    let (Some(results_url), Some(runtime_token)) = (&options.results_url, &options.runtime_token)
    else {
        output(ctx, options, "result", "no-pack");
        return Err(Failure::usage("ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are not set: the pack cannot be uploaded")
            .with_hint("the gate runs as a step of a GitHub Actions job"));
    };
    let requested = options
        .retention_days
        .unwrap_or(config.proof.retention_days);
    let (days, warning) = results::retention(requested, options.retention_max);
    if let Some(warning) = warning {
        let _ = writeln!(ctx.err, "warning: {warning}");
    }
    let now = ctx.env.now()?;
    if crate::cleanup::interrupted() {
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let uploaded = Results::new(results_url, runtime_token)
        .and_then(|r| r.upload(ARTIFACT, &zip_path, Some(days), now))
        .map_err(|e| {
            Failure::unexpected(format!("cannot upload the `{ARTIFACT}` artifact")).caused_by(e)
        })?;

    // Outputs, annotations, the summary.
    // Drift is an error once the feature-map floor blocks on it, a warning while it is advisory.
    let drift_level = match run
        .floors
        .iter()
        .find(|f| f.floor == crate::floors::Floor::FeatureMap)
    {
        Some(f) if !f.verdict.holds() => Level::Error,
        _ => Level::Warning,
    };
    for d in &run.map.drift {
        notes.add(
            drift_level,
            Some((d.file.as_str(), d.line)),
            "aayudha drift",
            &format!("{}: {}", d.kind.as_str(), d.detail),
        );
    }
    // Weakenings: an error once the floor fails on them, a warning while advisory or waived.
    let weakening_level = match run
        .floors
        .iter()
        .find(|f| f.floor == crate::floors::Floor::Weakening)
    {
        Some(f) if !f.verdict.holds() => Level::Error,
        _ => Level::Warning,
    };
    for w in &run.weakening.weakenings {
        notes.add(
            weakening_level,
            Some((w.file.as_str(), w.line)),
            "aayudha weakening",
            &format!("{}: {}", w.kind.as_str(), w.detail),
        );
    }
    // Uncovered changed lines: warnings, as ranges.
    if let Some(report) = &run.coverage {
        for (file, first, last) in report.uncovered_runs() {
            notes.add_lines(
                Level::Warning,
                Some((file, first as usize, last as usize)),
                "aayudha coverage",
                "changed executable lines no test ran",
            );
        }
    }
    for floor in run.floors.iter().filter(|f| !f.verdict.holds()) {
        notes.add(
            Level::Error,
            None,
            &format!(
                "aayudha {} floor: {}",
                floor.floor.as_str(),
                floor.verdict.as_str()
            ),
            &floor.detail,
        );
    }
    // The story edited after Ready: the pack cannot verify against its snapshot, whatever the floors say.
    let goal_changed = snapshot_hash
        .as_ref()
        .is_some_and(|h| *h != pack.completion_goal_hash);
    if goal_changed {
        notes.add(
            Level::Error,
            None,
            "aayudha: the story changed after Ready",
            &format!(
                "story #{}'s Completion Goal is not the one frozen in its Ready snapshot: agree on it, then run `aayu ready {} --refreeze`",
                number.unwrap_or(0),
                number.unwrap_or(0)
            ),
        );
    }
    say(ctx, &notes.lines);
    let result = if goal_changed {
        "not-proven"
    } else if run.holds() {
        "proven"
    } else {
        "floors-fail"
    };
    output(ctx, options, "result", result);
    output(ctx, options, "pack-sha256", &run.pack_sha256);
    output(
        ctx,
        options,
        "story",
        &number.map(|s| s.to_string()).unwrap_or_default(),
    );
    output(ctx, options, "drift", &run.map.drift.len().to_string());
    let artifact_url = match (&options.repository, options.run_id) {
        (Some(repo), Some(id)) => Some(format!(
            "{}/{repo}/actions/runs/{id}/artifacts/{}",
            options.server_url.trim_end_matches('/'),
            uploaded.artifact_id
        )),
        _ => None,
    };
    summary(
        ctx,
        options,
        &crate::output::summary::gate(
            pack,
            &run.pack_sha256,
            &format!(
                "run {} attempt {}, artifact {}",
                options.run_id.unwrap_or(0),
                options.run_attempt.unwrap_or(1),
                uploaded.artifact_id
            ),
            artifact_url.as_deref(),
            pr.is_fork(),
            &notes.overflow,
            run.coverage.as_ref(),
        ),
    );
    say(
        ctx,
        &format!(
            "aayudha merge gate: {result}; pack.json sha256 {}; uploaded as `{ARTIFACT}` ({} bytes)\n",
            run.pack_sha256, uploaded.size
        ),
    );
    // The pack is uploaded: the `pack` job reports the verdict.
    Ok(ExitStatus::Ok)
}

fn comment(ctx: &mut Context, options: &ActionOptions) -> Result<ExitStatus, Failure> {
    let proof = ProofCommentOptions {
        pr: None,
        pack: None,
        bot_login: options.bot_login.clone(),
        api_url: options.api_url.clone(),
        server_url: options.server_url.clone(),
        token: options.token.clone(),
        repository: options.repository.clone(),
        run_id: options.run_id,
        results_url: options.results_url.clone(),
        runtime_token: options.runtime_token.clone(),
        step_summary: options.step_summary.clone(),
        event_path: options.event_path.clone(),
        config_path: options.config.as_ref().map(|p| p.display().to_string()),
        gate_result: options.gate_result.clone(),
    };
    super::proof_comment::run(ctx, proof)
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
    let repo = Repo::discover(&root).map_err(git_failure)?;
    refuse_persisted_credentials(&repo)?;
    let verify = VerifyOptions {
        check: Some("all".into()),
        config: options.config.clone(),
        ..VerifyOptions::default()
    };
    // The sweep runs on the default branch's checkout (a schedule or a dispatch): its configuration is the
    // working tree's.
    let config = Config::load(repo.root(), options.config.as_deref(), &root)
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    let ran = super::verify::run_checks(ctx, &repo, &config, &verify, &root)?;
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
    say(ctx, &notes.lines);
    // A blocked check did not run here (a tool missing, a control tool that broke): it is said apart from
    // a failed one, never counted as one.
    let count = |status: Status| checks.iter().filter(|c| c.status == status).count();
    let (failed, blocked) = (count(Status::Failed), count(Status::Blocked));
    let verdict = sweep_verdict(failed, blocked, checks.len());
    summary(
        ctx,
        options,
        &crate::output::summary::sweep(&verdict, &checks, &notes.overflow),
    );
    let result = match (failed, blocked) {
        (0, 0) => "passed",
        (0, _) => "blocked",
        _ => "failed",
    };
    output(ctx, options, "result", result);
    say(ctx, &format!("aayudha sweep: {verdict}\n"));
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
    let repo = Repo::discover(&root).map_err(git_failure)?;
    refuse_persisted_credentials(&repo)?;
    // A schedule or a dispatch runs on the default branch: its configuration is the working tree's.
    let config = Config::load(repo.root(), options.config.as_deref(), &root)
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    super::verify::map_with_brief(ctx, &repo, &config, options.token.clone().map(Token::new))
}
