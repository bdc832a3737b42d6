//! `aayu verify --ci`: the gate ([`crate::gate`]) on one change — the configuration of its base (or
//! `--config`), the story's Ready snapshot (from the ledger, or `--ready`) — rendered as a table or the
//! pack's JSON. The pack is written to `.aayudha/proof/<story>/` (or `--out`) also when floors fail.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::commands::{Context, Failure, write_out};
use crate::config::{CONFIG_PATH, Config};
use crate::exit::ExitStatus;
use crate::failure::git_failure;
use crate::gate::{self, GateError, Story};
use crate::git::Repo;
use crate::ledger::ready::{self, Snapshot};
use crate::settings::VerifyOptions;

pub fn run(
    ctx: &mut Context,
    repo: &Repo,
    options: &VerifyOptions,
    start: &Path,
) -> Result<ExitStatus, Failure> {
    let (Some(base), Some(head)) = (&options.base, &options.head) else {
        return Err(Failure::usage("`--ci` verifies one change: give `--base REV` and `--head REV` (and `--story N`)")
            .with_hint("the merge gate passes the pull request's base and head; locally, e.g. `--base main --head HEAD`"));
    };
    if options.check.is_some() {
        return Err(Failure::usage(
            "`--ci` selects the checks from the change and the evidence map: leave out `--check`",
        ));
    }
    let base = repo.sha(base).map_err(git_failure)?;
    let head = repo.sha(head).map_err(git_failure)?;
    let root = repo.root().to_path_buf();
    // The gate builds and tests the files of the checkout, and the pack names `--head`: the two must be
    // the same, or the pack would claim for one commit what another's files did.
    let checked_out = repo.sha("HEAD").map_err(git_failure)?;
    if checked_out != head {
        return Err(Failure::usage(format!(
            "`--head` is {}, but the checkout is at {}: the gate runs the checkout's files",
            super::short(&head),
            super::short(&checked_out)
        ))
        .with_hint(format!(
            "check out the head first (`git checkout {}`), or pass `--head HEAD`",
            super::short(&head)
        )));
    }
    let changed = repo.changed_tracked(4).map_err(git_failure)?;
    if !changed.is_empty() {
        let shown: Vec<String> = changed
            .iter()
            .map(|p| format!("`{}`", p.escape_debug()))
            .collect();
        return Err(Failure::usage(format!(
            "the checkout has changes that are not in `--head` {} ({}): the gate would build and test files no commit holds",
            super::short(&head),
            shown.join(", ")
        ))
        .with_hint("commit them (and pass the new commit as `--head`), or stash them (`git stash`)"));
    }

    // The configuration is never read from a tree the change wrote: the base commit's, or a file the user
    // names ("Trust in the gate").
    let config = match &options.config {
        Some(file) => Config::load(&root, Some(file), start),
        None => match repo.file_at(&base, CONFIG_PATH).map_err(git_failure)? {
            Some(bytes) => Config::from_text(
                &String::from_utf8_lossy(&bytes),
                &format!("{}:{CONFIG_PATH}", super::short(&base)),
            ),
            None => Ok(Config::defaults()),
        },
    }
    .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    if options.config.is_none()
        && repo.file_at(&base, CONFIG_PATH).ok().flatten()
            != repo.file_at(&head, CONFIG_PATH).ok().flatten()
    {
        let _ = writeln!(
            ctx.err,
            "notice: this change edits {CONFIG_PATH}; the gate uses the base commit's until it merges"
        );
    }
    let now = ctx.env.now()?;
    let story = match options.story {
        Some(number) => Some(Story {
            number,
            snapshot: read_snapshot(
                repo,
                number,
                options.ready.as_deref(),
                start,
                &config.ledger.branch,
            )?,
        }),
        None => None,
    };
    let story_number = story.as_ref().map_or(0, |s| s.number);
    let out = match &options.out {
        Some(dir) => start.join(dir),
        // `.aayudha/proof` of the checkout, made without following a link a pull request committed there.
        None => crate::safe_fs::ensure_dir(&root, ".aayudha/proof")
            .map_err(|e| {
                Failure::usage(format!("cannot write the pack: {e}")).with_hint(
                    "`.aayudha/proof` must be a plain folder of the checkout (or give `--out DIR`)",
                )
            })?
            .join(story_number.to_string()),
    };
    let slug = ctx
        .env
        .vars
        .get("GITHUB_REPOSITORY")
        .cloned()
        .unwrap_or_else(|| {
            let server = ctx.env.vars.get("GITHUB_SERVER_URL").and_then(|u| {
                u.split_once("://")
                    .map(|(_, rest)| rest.split(['/', ':']).next().unwrap_or(rest).to_string())
            });
            repo.pack_name(server.as_deref())
        });
    let inputs = gate::Inputs {
        repo,
        config: &config,
        base,
        head,
        story,
        binding: None,
        force_red_on_base: options.red_on_base,
        sandbox: gate::sandbox_settings(ctx.env, &config, options.jobs, &root),
        aayu: ctx.env.exe.clone().unwrap_or_else(|| "aayu".into()),
        out: out.clone(),
        temp: temp_folder(ctx),
        now,
        slug,
        actions: ctx.env.github_actions,
    };
    let run = gate::run(&inputs, ctx.err).map_err(gate_failure)?;
    if options.out.is_none() && !repo.is_ignored(".aayudha/proof/x") {
        let _ = writeln!(
            ctx.err,
            "hint: add `.aayudha/proof/` to .gitignore: local packs are not committed"
        );
    }
    let written = if options.json {
        write_out(ctx.out, &crate::output::json::render(&run.pack))?
    } else {
        super::write_report(
            ctx,
            &crate::output::plain::gate_table(
                &run.pack,
                &run.weakening.weakenings,
                &run.criteria_lines,
                &run.pack_dir,
                &run.pack_sha256,
            ),
        )?
    };
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(if run.holds() {
        ExitStatus::Ok
    } else {
        ExitStatus::FloorFails
    })
}

/// Where a run folder is made: `RUNNER_TEMP` inside Actions, else the temp folder.
pub(crate) fn temp_folder(ctx: &Context) -> PathBuf {
    ctx.env
        .vars
        .get("RUNNER_TEMP")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// A gate that made no pack, as a failure: the user's to fix (exit 2) or not (exit 1).
pub(crate) fn gate_failure(e: GateError) -> Failure {
    match e {
        GateError::Git(g) => git_failure(g),
        GateError::Contract(message) => Failure::usage(message),
        GateError::Sandbox(s @ crate::sandbox::SandboxError::ForbiddenId { .. }) => {
            Failure::from_error(ExitStatus::Usage, &s).with_hint(
                "set `[verify] sandbox_uids` in the default branch's .aayudha/config.toml to a range of unused ids at or above 1000, e.g. [61000, 61063]",
            )
        }
        GateError::Behaviour(b @ crate::floors::behaviour::BehaviourError::Target(_)) => {
            Failure::from_error(ExitStatus::Usage, &b)
        }
        other => Failure::from_error(ExitStatus::Failure, &other),
    }
}

pub(crate) fn read_snapshot(
    repo: &Repo,
    story: u64,
    file: Option<&Path>,
    start: &Path,
    branch: &str,
) -> Result<Snapshot, Failure> {
    let (text, label) = match file {
        Some(file) => (
            std::fs::read_to_string(start.join(file)).map_err(|e| {
                Failure::usage(format!(
                    "cannot read the Ready snapshot `{}`",
                    file.display()
                ))
                .caused_by(e)
            })?,
            file.display().to_string(),
        ),
        None => {
            let path = format!("specs/{story}/ready.md");
            let bytes = repo.file_on_branch(branch, &path).ok_or_else(|| {
                Failure::usage(format!("story #{story} has no Ready snapshot: no `{path}` on the `{branch}` branch (local or origin's)"))
                    .with_hint(format!("fetch it (`git fetch origin {branch}`), or pass `--ready FILE`"))
            })?;
            (
                String::from_utf8_lossy(&bytes).into_owned(),
                format!("{branch}:{path}"),
            )
        }
    };
    let snapshot = ready::parse(&text, &label).map_err(Failure::usage)?;
    if snapshot.meta.story != story {
        return Err(Failure::usage(format!(
            "{label} is the Ready snapshot of story #{}, not #{story}",
            snapshot.meta.story
        )));
    }
    Ok(snapshot)
}
