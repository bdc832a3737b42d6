//! `aayu verify --ci`: the gate ([`crate::gate`]) on one change — the configuration of its base (or
//! `--config`), the story's Ready snapshot (from the ledger, or `--ready`) — rendered as a table or the
//! pack's JSON. The pack is written to `.aayudha/proof/<story>/` (or `--out`) also when floors fail.

use std::io::Write as _;
use std::path::Path;

use super::change::{self, Checkout};
use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::gate::{self, inputs};
use crate::git::{Repo, short};
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
    let (base, head) = change::commits(repo, base, head)?;
    let root = repo.root().to_path_buf();
    // The gate builds and tests the files of the checkout, and the pack names `--head`: the two must be
    // the same, or the pack would claim for one commit what another's files did.
    match Checkout::of(repo, &head)? {
        Checkout::AtHead => {}
        Checkout::Elsewhere { at } => {
            return Err(Failure::usage(format!(
                "`--head` is {}, but the checkout is at {}: the gate runs the checkout's files",
                short(&head),
                short(&at)
            ))
            .with_hint(format!(
                "check out the head first (`git checkout {}`), or pass `--head HEAD`",
                short(&head)
            )));
        }
        Checkout::Changed { shown } => {
            return Err(Failure::usage(format!(
                "the checkout has changes that are not in `--head` {} ({}): the gate would build and test files no commit holds",
                short(&head),
                shown.join(", ")
            ))
            .with_hint("commit them (and pass the new commit as `--head`), or stash them (`git stash`)"));
        }
    }
    let (config, story) = change::config_and_story(ctx, repo, options, start, (&base, &head))?;
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
    let door = inputs::Door {
        slug: inputs::slug(repo, ctx.github),
        out,
        temp: inputs::temp_folder(ctx.github),
        binding: None,
        force_red_on_base: options.red_on_base,
        harness_approval: None,
        jobs: options.jobs,
        actions: ctx.env.github_actions,
    };
    let inputs = gate::Inputs::new(repo, &config, (base, head), story, ctx.env, door)?;
    let run = gate::run(&inputs, ctx.err)?;
    if options.out.is_none() && !repo.is_ignored(".aayudha/proof/x") {
        let _ = writeln!(
            ctx.err,
            "hint: add `.aayudha/proof/` to .gitignore: local packs are not committed"
        );
    }
    let written = if options.json {
        crate::commands::write_json(ctx.out, &run.pack)?
    } else {
        let table = crate::output::text(|w| crate::output::plain::gate_table(&run, w));
        crate::commands::write_report(ctx, &table)?
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
