//! One module per command. Each takes a [`Context`] and plain options and returns an [`ExitStatus`].

pub(crate) mod action;
pub(crate) mod ci;
pub(crate) mod clean;
pub(crate) mod control;
pub(crate) mod doctor;
pub(crate) mod generate;
pub(crate) mod init;
pub(crate) mod install;
pub(crate) mod media;
pub(crate) mod proof_comment;
pub(crate) mod proof_push;
pub(crate) mod proof_verify;
pub(crate) mod ready;

pub(crate) mod ship;
pub(crate) mod verify;

use std::io::Write;

use crate::exit::ExitStatus;
pub(crate) use crate::failure::{Failure, github_failure, ledger_failure};
use crate::settings::{Env, Global};

/// What every command gets: its output streams, the environment read at start-up, the shared options.
/// stderr is a [`Log`](crate::output::github::Log): inside GitHub Actions whatever is written to it is
/// fenced data, and aayu's own workflow commands go through its `command`.
pub struct Context<'a> {
    pub input: &'a mut dyn std::io::Read,
    pub out: &'a mut dyn Write,
    pub err: &'a mut crate::output::github::Log,
    pub env: &'a Env,
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
    let config = crate::config::Config::load(repo.root(), None, &start)
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    Ok((repo, config))
}

/// The configuration of the repository's default branch on GitHub (through the contents API): what the
/// comment job and `aayu ship` go by, whatever a working tree or a pull request says ("Trust in the gate").
/// `path` is the file in that branch (`.aayudha/config.toml` unless the workflow names another); a missing
/// file means the defaults. Returns the configuration and the branch's name.
pub(crate) fn default_branch_config(
    client: &crate::github::Client,
    repo: &crate::github::RepoSlug,
    path: Option<&str>,
) -> Result<(crate::config::Config, String), Failure> {
    use crate::config::{CONFIG_PATH, Config};
    let branch = client
        .repository(repo)
        .map_err(github_failure)?
        .default_branch;
    let path = path.unwrap_or(CONFIG_PATH);
    let config = match client.file(repo, path, &branch) {
        Ok(bytes) => Config::from_text(
            &String::from_utf8_lossy(&bytes),
            &format!("{branch}:{path}"),
        )
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?,
        Err(crate::github::GitHubError::NotFound { .. }) if path == CONFIG_PATH => {
            Config::defaults()
        }
        Err(e) => return Err(github_failure(e)),
    };
    Ok((config, branch))
}

/// The first 12 characters of a SHA (or the whole string when shorter), for people to read.
pub(crate) fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Writes a readable report to stdout, fenced inside GitHub Actions (it names paths, ids and reasons that
/// come from the pull request); a closed pipe ends the command quietly with success. JSON needs no fence:
/// no line of it can start with `::`.
pub(crate) fn write_report(ctx: &mut Context, text: &str) -> Result<bool, Failure> {
    if ctx.env.github_actions && !text.is_empty() {
        let fenced = crate::output::github::fenced(text)
            .map_err(|e| Failure::unexpected("cannot fence the report").caused_by(e))?;
        write_out(ctx.out, &fenced)
    } else {
        write_out(ctx.out, text)
    }
}

/// Writes to stdout; a closed pipe (`aayu … | head`) ends the command quietly with success.
pub(crate) fn write_out(out: &mut dyn Write, text: &str) -> Result<bool, Failure> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Failure::unexpected("cannot write to standard output").caused_by(e)),
    }
}
