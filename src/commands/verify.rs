//! `aayu verify`: the map check (`--map`, SPEC §3), the behaviour floor (`--check`, or `--base` and
//! `--head` with `--story`, SPEC §4), the whole gate with its pack (`--ci`, in [`ci`]), and what the gate
//! would run on a change, with nothing run (`--select`, in [`select`]).

mod change;
mod ci;
mod select;

use crate::commands::{Context, Failure, write_json, write_out, write_report};
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::floors::behaviour;
use crate::git::Repo;
use crate::maintain::post::Maintain;
use crate::output::{plain, text};
use crate::settings::VerifyOptions;

pub fn run(ctx: &mut Context, options: VerifyOptions) -> Result<ExitStatus, Failure> {
    if options.select {
        // The plan alone: nothing of the rest combines with it, and nothing runs.
        let change = select::asked(&options)?;
        let start = super::start_dir(ctx);
        let repo = Repo::discover(&start).map_err(Failure::from)?;
        return select::run(ctx, &repo, &options, &start, change);
    }
    let behaviour = options.check.is_some() || options.base.is_some() || options.head.is_some();
    if options.ci && options.map {
        return Err(Failure::usage(
            "`--ci` already runs the feature-map floor: leave out `--map`",
        ));
    }
    if options.map && behaviour {
        return Err(Failure::usage("`--map` checks the maps only; it does not combine with `--check`, `--base` or `--head`")
            .with_hint("run them one after the other"));
    }
    if !options.map && !behaviour && !options.ci {
        return Err(Failure::usage("say what to verify: `--map`, `--check <feature>[.<check>]|all`, or `--base REV --head REV`")
            .with_hint("`aayu verify --map` checks the feature maps against the source"));
    }
    if options.maintain.is_some()
        && (options.ci || options.base.is_some() || options.head.is_some())
    {
        return Err(Failure::usage(
            "`--maintain` goes with `--map` or `--check`: the brief is about the maps and the checks, not about one change",
        )
        .with_hint("`aayu verify --map --maintain drift`, or `aayu verify --check all --maintain drift`"));
    }
    let start = super::start_dir(ctx);
    let repo = Repo::discover(&start).map_err(Failure::from)?;
    if options.ci {
        // The gate reads the base commit's configuration, not the working tree's.
        return ci::run(ctx, &repo, &options, &start);
    }
    // Like git -C, a relative `--config` is taken from the directory aayu runs in.
    let config =
        Config::load(repo.root(), options.config.as_deref(), &start).map_err(Failure::from)?;
    let maintain = match options.maintain {
        Some(mode) => Some(Maintain::prepare(
            ctx.env, ctx.github, &repo, &config, mode, None,
        )?),
        None => None,
    };
    if behaviour {
        return checks(ctx, &repo, &config, &options, &start, maintain.as_ref());
    }
    super::map_run(ctx, &repo, &config, options.json, maintain.as_ref())
}

/// `verify --check …` or `verify --base … --head …`: select, run, report; exit 3 when the floor fails.
fn checks(
    ctx: &mut Context,
    repo: &Repo,
    config: &Config,
    options: &VerifyOptions,
    start: &std::path::Path,
    maintain: Option<&Maintain>,
) -> Result<ExitStatus, Failure> {
    let ran = crate::gate::checks::run(ctx.env, ctx.err, repo, config, options, start)?;
    let written = match &ran {
        // With `--json` an empty report, so that a script (or an MCP client) reads one JSON document.
        None if options.json => write_json(
            ctx.out,
            &behaviour::BehaviourReport {
                schema_version: 1,
                checks: Vec::new(),
                elapsed: Default::default(),
            },
        )?,
        None => write_out(ctx.out, "no behaviour check selected\n")?,
        Some((report, _)) if options.json => write_json(ctx.out, report)?,
        Some((report, out)) => {
            write_report(ctx, &text(|w| plain::behaviour_report(report, out, w)))?
        }
    };
    if let Some(maintain) = maintain {
        // The brief also says what drifted: the map check runs no product code and takes a moment.
        let map = super::map_check(ctx, repo, config)?;
        let run = format!(
            "aayu verify --check {}",
            options.check.as_deref().unwrap_or("all")
        );
        let empty = behaviour::BehaviourReport {
            schema_version: 1,
            checks: Vec::new(),
            elapsed: Default::default(),
        };
        let report = ran.as_ref().map_or(&empty, |(r, _)| r);
        maintain.post(ctx.err, repo, &run, Some(&map), Some(report))?;
    }
    let Some((report, _)) = ran else {
        return Ok(ExitStatus::Ok);
    };
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(if report.holds() {
        ExitStatus::Ok
    } else {
        ExitStatus::FloorFails
    })
}
