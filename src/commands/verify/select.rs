//! `aayu verify --select`: what the merge gate would run on one change — the gate's own plan
//! ([`crate::gate::plan`]), built from the inputs `--ci` reads — printed as a report or `--json`, with
//! nothing run: no sandbox, no product code, no dependency fetch, no folder made.

use std::io::Write as _;
use std::path::Path;

use super::change::{self, Checkout};
use crate::commands::{Context, Failure, write_json, write_report};
use crate::exit::ExitStatus;
use crate::gate::plan;
use crate::git::{Repo, short};
use crate::settings::VerifyOptions;

/// The change `--select` plans (`--base`, `--head`), or the usage error of a flag it does not take (each
/// with why) or of a missing commit: said before the repository is looked at (exit 2).
pub fn asked(options: &VerifyOptions) -> Result<(&str, &str), Failure> {
    let conflict = [
        (
            options.ci,
            "`--select` prints what `--ci` would run and runs nothing: give one of them",
        ),
        (
            options.map,
            "`--select` plans one change from `--base` to `--head`; `--map` checks the maps alone: run them one after the other",
        ),
        (
            options.check.is_some(),
            "`--select` selects the checks from the change and the evidence map: leave out `--check`",
        ),
        (
            options.maintain.is_some(),
            "`--select` runs nothing, so there is no brief to post: leave out `--maintain`",
        ),
        (
            options.out.is_some(),
            "`--select` writes no run folder and no pack: leave out `--out`",
        ),
        (
            options.jobs.is_some(),
            "`--select` runs no check: leave out `--jobs`",
        ),
    ];
    if let Some((_, why)) = conflict.iter().find(|(given, _)| *given) {
        return Err(Failure::usage(*why));
    }
    match (&options.base, &options.head) {
        (Some(base), Some(head)) => Ok((base, head)),
        _ => Err(Failure::usage(
            "`--select` plans one change: give `--base REV` and `--head REV` (and `--story N`)",
        )
        .with_hint("e.g. `aayu verify --select --base main --head HEAD --story 12`")),
    }
}

/// Plans the change `(base, head)` ([`asked`]) and prints the plan; exit 0, or 2 when a map, the
/// evidence map or a name in it is not valid (as the gate would refuse it).
pub fn run(
    ctx: &mut Context,
    repo: &Repo,
    options: &VerifyOptions,
    start: &Path,
    (base, head): (&str, &str),
) -> Result<ExitStatus, Failure> {
    let (base, head) = change::commits(repo, base, head)?;
    // Unlike the gate, the plan runs nothing of the checkout: it may stand elsewhere, but its maps and
    // package manifests are what the plan reads, so a person is told.
    let elsewhere = match Checkout::of(repo, &head)? {
        Checkout::AtHead => None,
        Checkout::Elsewhere { at } => Some(format!("is at {}", short(&at))),
        Checkout::Changed { shown } => Some(format!(
            "has changes that are not in it ({})",
            shown.join(", ")
        )),
    };
    if let Some(elsewhere) = elsewhere {
        let _ = writeln!(
            ctx.err,
            "notice: `--head` is {}, but the checkout {elsewhere}: the maps and the package layout are read from the checkout",
            short(&head)
        );
    }
    let (config, story) = change::config_and_story(ctx, repo, options, start, (&base, &head))?;
    let planned = plan::plan(&plan::Change {
        repo,
        config: &config,
        base: &base,
        head: &head,
        story: story.as_ref(),
        binding: None,
        force_red_on_base: options.red_on_base,
    })
    .map_err(Failure::from)?;
    crate::gate::checks::refuse_contract_errors(&planned.maps.errors)?;
    let document = planned.document();
    if options.story.is_some() && !planned.touched.without_runner.is_empty() {
        let _ = writeln!(
            ctx.err,
            "notice: the change touches {} packages, which have no coverage runner yet: the gate's coverage floor skips them, and `packages` leaves them out",
            planned.touched.stacks()
        );
    }
    if options.json {
        write_json(ctx.out, &document)?;
    } else {
        let text =
            crate::output::text(|w| crate::output::plain::plan(&document, story.is_some(), w));
        write_report(ctx, &text)?;
    }
    Ok(ExitStatus::Ok)
}
