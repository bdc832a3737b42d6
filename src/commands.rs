//! One module per command. Each takes a [`Context`] and plain options and returns an [`ExitStatus`].

pub(crate) mod action;
pub(crate) mod clean;
pub(crate) mod control;
pub(crate) mod doctor;
pub(crate) mod generate;
pub(crate) mod init;
pub(crate) mod install;
pub(crate) mod mcp;
pub(crate) mod proof_comment;
pub(crate) mod proof_push;
pub(crate) mod proof_verify;
pub(crate) mod ready;

pub(crate) mod ship;
pub(crate) mod verify;

use std::io::Write;

use crate::exit::ExitStatus;
pub(crate) use crate::failure::Failure;
use crate::settings::github::GitHubEnv;
use crate::settings::{Env, Global};

/// What every command gets: its output streams, the environment read at start-up, the shared options.
/// stderr is a [`Log`](crate::log::Log): inside GitHub Actions whatever is written to it is
/// fenced data, and aayu's own workflow commands go through its `command`.
pub struct Context<'a> {
    pub input: &'a mut dyn std::io::Read,
    pub out: &'a mut dyn Write,
    pub err: &'a mut crate::log::Log,
    pub env: &'a Env,
    /// Where GitHub is and what the runner says of this run, read once from `env`.
    pub github: &'a GitHubEnv,
    pub global: &'a Global,
}

/// Where the command starts: `-C DIR` (relative to the working directory), else the working directory.
pub(crate) fn start_dir(ctx: &Context) -> std::path::PathBuf {
    match (&ctx.global.directory, &ctx.env.cwd) {
        (Some(dir), Some(cwd)) => cwd.join(dir),
        (Some(dir), None) => dir.clone(),
        (None, Some(cwd)) => cwd.clone(),
        (None, None) => ".".into(),
    }
}

/// The repository the command runs in (found from [`start_dir`]).
pub(crate) fn repo(ctx: &Context) -> Result<crate::git::Repo, Failure> {
    crate::git::Repo::discover(&start_dir(ctx))
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e))
}

/// The repository the command runs in (found from [`start_dir`]) and its configuration, for the commands
/// that work on a checkout (`ready`, `proof verify`, `proof push`).
pub(crate) fn repo_and_config(
    ctx: &Context,
) -> Result<(crate::git::Repo, crate::config::Config), Failure> {
    let start = start_dir(ctx);
    let repo = repo(ctx)?;
    let config = crate::config::Config::load(repo.root(), None, &start).map_err(Failure::from)?;
    Ok((repo, config))
}

pub(crate) use crate::git::short;

/// Writes a readable report to stdout, fenced inside GitHub Actions (it names paths, ids and reasons that
/// come from the pull request); a closed pipe ends the command quietly with success. JSON needs no fence:
/// no line of it can start with `::`.
pub(crate) fn write_report(ctx: &mut Context, text: &str) -> Result<bool, Failure> {
    if ctx.env.github_actions && !text.is_empty() {
        let fenced = crate::log::fenced(text)
            .map_err(|e| Failure::unexpected("cannot fence the report").caused_by(e))?;
        write_out(ctx.out, &fenced)
    } else {
        write_out(ctx.out, text)
    }
}

/// Writes to stdout; a closed pipe (`aayu … | head`) ends the command quietly with success.
pub(crate) fn write_out(out: &mut dyn Write, text: &str) -> Result<bool, Failure> {
    written(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// Writes a `--json` document to stdout, as [`write_out`] does a text.
pub(crate) fn write_json<T: serde::Serialize>(
    out: &mut dyn Write,
    document: &T,
) -> Result<bool, Failure> {
    // Buffered: the serializer writes a token at a time, and stdout would pass each line on by itself.
    let mut buffered = std::io::BufWriter::new(&mut *out);
    let result =
        crate::output::json::write(&mut buffered, document).and_then(|()| buffered.flush());
    drop(buffered);
    written(result.and_then(|()| out.flush()))
}

/// Whether a write to stdout reached it: a closed pipe is not an error.
fn written(result: std::io::Result<()>) -> Result<bool, Failure> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure::unexpected("cannot write to standard output").caused_by(e)),
    }
}

/// `verify --map` (and the action's `maintain` mode): the report, the annotations in Actions, the brief when asked; exit 2, 3 or 0.
pub(crate) fn map_run(
    ctx: &mut Context,
    repo: &crate::git::Repo,
    config: &crate::config::Config,
    as_json: bool,
    maintain: Option<&crate::maintain::post::Maintain>,
) -> Result<ExitStatus, Failure> {
    let now = ctx.env.now()?;
    let report = map_check(ctx, repo, config)?;

    let written = if as_json {
        write_json(ctx.out, &report)?
    } else {
        let text = crate::output::text(|w| crate::output::plain::map_report(&report, w));
        write_report(ctx, &text)?
    };
    if written && ctx.env.github_actions {
        let blocking = config.verify.drift_blocking_from.blocks_at(now);
        // Annotations go to stderr so that `--json` on stdout stays one clean document; the runner reads
        // workflow commands from both streams.
        let mut notes = crate::output::github::Annotations::uncapped();
        crate::output::github::map_annotations(&report, blocking, &mut notes);
        for line in notes.lines.lines() {
            let _ = ctx.err.command(line);
        }
    }
    if let Some(maintain) = maintain {
        maintain.post(ctx.err, repo, "aayu verify --map", Some(&report), None)?;
    }
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(report.exit_status())
}

/// The maps against the working tree, within the scan's bounds, with its heartbeat on stderr.
pub(crate) fn map_check(
    ctx: &mut Context,
    repo: &crate::git::Repo,
    config: &crate::config::Config,
) -> Result<crate::floors::feature_map::MapReport, Failure> {
    let err = &mut *ctx.err;
    crate::floors::feature_map::check(
        repo,
        crate::floors::scan::Bounds::of(&config.verify),
        &mut |done, total, elapsed| crate::log::scan_beat(err, done, total, elapsed),
    )
    .map_err(Failure::from)
}

/// The comment job (`aayu proof comment`, and the action's `comment` mode): the pack verified, the comment
/// and the status kept, the verdict written to stdout (fenced: it names the pack's paths and details).
pub(crate) fn publish_proof(
    ctx: &mut Context,
    options: &crate::settings::ProofCommentOptions,
) -> Result<ExitStatus, Failure> {
    let said = crate::publish::proof::comment(options, ctx.github, ctx.err)?;
    match said.report {
        Some(report) if !write_report(ctx, &report)? => Ok(ExitStatus::Ok),
        _ => Ok(said.exit),
    }
}
