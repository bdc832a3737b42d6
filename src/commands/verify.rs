//! `aayu verify`: the map check (`--map`, SPEC §3), the behaviour floor (`--check`, or `--base` and
//! `--head` with `--story`, SPEC §4), and the whole gate with its pack (`--ci`, in [`super::ci`]).

use crate::commands::{Context, Failure, write_out, write_report};
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::floors::behaviour;
use crate::floors::feature_map::{self, MapReport};
use crate::git::Repo;
use crate::maps;
use crate::output::github::{self, Level};
use crate::output::{json, plain};
use crate::sandbox::Sandbox;
use crate::select;
use crate::settings::VerifyOptions;
use std::time::Duration;

mod maintain;

pub fn run(ctx: &mut Context, options: VerifyOptions) -> Result<ExitStatus, Failure> {
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
    let repo = Repo::discover(&start).map_err(crate::failure::git_failure)?;
    if options.ci {
        // The gate reads the base commit's configuration, not the working tree's.
        return crate::commands::ci::run(ctx, &repo, &options, &start);
    }
    // Like git -C, a relative `--config` is taken from the directory aayu runs in.
    let config = Config::load(repo.root(), options.config.as_deref(), &start)
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    let maintain = match options.maintain {
        Some(mode) => Some(maintain::prepare(ctx, &repo, &config, mode, None)?),
        None => None,
    };
    if behaviour {
        return checks(ctx, &repo, &config, &options, &start, maintain.as_ref());
    }
    map(ctx, &repo, &config, options.json, maintain.as_ref())
}

/// `aayu action --mode maintain`: `verify --map --maintain always` with the action's token.
pub(crate) fn map_with_brief(
    ctx: &mut Context,
    repo: &Repo,
    config: &Config,
    token: Option<crate::github::Token>,
) -> Result<ExitStatus, Failure> {
    let maintain = maintain::prepare(ctx, repo, config, crate::maintain::Mode::Always, token)?;
    map(ctx, repo, config, false, Some(&maintain))
}

/// `verify --map`: the report, the annotations in Actions, the brief when asked; exit 2, 3 or 0.
fn map(
    ctx: &mut Context,
    repo: &Repo,
    config: &Config,
    as_json: bool,
    maintain: Option<&maintain::Maintain>,
) -> Result<ExitStatus, Failure> {
    let now = ctx.env.now()?;
    let report = map_check(ctx, repo, config)?;

    let written = if as_json {
        write_out(ctx.out, &json::render(&report))?
    } else {
        write_report(ctx, &plain::map_report(&report))?
    };
    if written && ctx.env.github_actions {
        let blocking = config.verify.drift_blocking_from.blocks_at(now);
        // Annotations go to stderr so that `--json` on stdout stays one clean document; the runner reads
        // workflow commands from both streams.
        for line in annotations(&report, blocking) {
            let _ = ctx.err.command(&line);
        }
    }
    if let Some(maintain) = maintain {
        maintain.post(ctx, repo, "aayu verify --map", Some(&report), None)?;
    }
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(status_of(&report))
}

/// The maps against the working tree, within the scan's bounds, with its heartbeat on stderr.
fn map_check(ctx: &mut Context, repo: &Repo, config: &Config) -> Result<MapReport, Failure> {
    let err = &mut *ctx.err;
    feature_map::check(
        repo,
        config.verify.scan_bounds(),
        &mut |done, total, elapsed| crate::gate::scan_beat(err, done, total, elapsed),
    )
    .map_err(crate::failure::git_failure)
}

/// 2 for contract errors or a scan the map's rules made run out of time, 1 for one that ran out reading
/// files, else 3 for drift, else 0. Stale is never drift.
pub fn status_of(report: &MapReport) -> ExitStatus {
    if let Some(stopped) = &report.scan_stopped {
        if stopped.rules_caused_it {
            ExitStatus::Usage
        } else {
            ExitStatus::Failure
        }
    } else if !report.errors.is_empty() {
        ExitStatus::Usage
    } else if !report.drift.is_empty() {
        ExitStatus::FloorFails
    } else {
        ExitStatus::Ok
    }
}

fn annotations(report: &MapReport, blocking: bool) -> Vec<String> {
    let level = if blocking {
        Level::Error
    } else {
        Level::Warning
    };
    let drift = report.drift.iter().map(|d| {
        github::annotation(
            level,
            Some((&d.file, d.line)),
            &format!("drift: {}", d.kind.as_str()),
            &d.detail,
        )
    });
    let errors = report.errors.iter().map(|e| {
        github::annotation(
            Level::Error,
            Some((&e.file, e.line)),
            "feature map contract error",
            &e.message,
        )
    });
    drift.chain(errors).collect()
}

/// `verify --check …` or `verify --base … --head …`: select, run, report; exit 3 when the floor fails.
fn checks(
    ctx: &mut Context,
    repo: &Repo,
    config: &Config,
    options: &VerifyOptions,
    start: &std::path::Path,
    maintain: Option<&maintain::Maintain>,
) -> Result<ExitStatus, Failure> {
    let ran = run_checks(ctx, repo, config, options, start)?;
    let written = match &ran {
        None => write_out(ctx.out, "no behaviour check selected\n")?,
        Some((report, _)) if options.json => write_out(ctx.out, &json::render(report))?,
        Some((report, out)) => write_report(ctx, &plain::behaviour_report(report, out))?,
    };
    if let Some(maintain) = maintain {
        // The brief also says what drifted: the map check runs no product code and takes a moment.
        let map = map_check(ctx, repo, config)?;
        let run = format!(
            "aayu verify --check {}",
            options.check.as_deref().unwrap_or("all")
        );
        let empty = behaviour::BehaviourReport {
            schema_version: 1,
            checks: Vec::new(),
        };
        let report = ran.as_ref().map_or(&empty, |(r, _)| r);
        maintain.post(ctx, repo, &run, Some(&map), Some(report))?;
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

/// Selects the checks (`--check`, or the diff of `--base`/`--head`), fetches their dependencies and runs
/// them into the run folder; `None` when nothing is selected. Also the nightly sweep's run.
pub(crate) fn run_checks(
    ctx: &mut Context,
    repo: &Repo,
    config: &Config,
    options: &VerifyOptions,
    start: &std::path::Path,
) -> Result<Option<(behaviour::BehaviourReport, std::path::PathBuf)>, Failure> {
    let mut phases = crate::timing::Phases::start();
    let loaded = maps::load_repo(repo).map_err(crate::failure::git_failure)?;
    if let Some(first) = loaded.errors.first() {
        let mut failure =
            Failure::usage(format!("{}:{}: {}", first.file, first.line, first.message));
        for more in loaded.errors.iter().skip(1) {
            failure
                .causes
                .push(format!("{}:{}: {}", more.file, more.line, more.message));
        }
        return Err(
            failure.with_hint("fix the maps first: `aayu verify --map` lists every contract error")
        );
    }
    let selected = match (&options.check, &options.base, &options.head) {
        (Some(arg), None, None) => {
            if options.story.is_some() {
                return Err(Failure::usage("`--story` selects through a diff: use it with `--base` and `--head`, not with `--check`"));
            }
            select::explicit(&loaded.maps, arg)
        }
        (None, Some(base), Some(head)) => select::by_diff(repo, &loaded.maps, base, head, options.story),
        (None, _, _) => return Err(Failure::usage("`--base` and `--head` go together: give both commits of the change")),
        (Some(_), _, _) => return Err(Failure::usage("`--check` chooses the checks itself: leave out `--base` and `--head`")),
    }
    .map_err(|e| match e {
        select::SelectError::Git(g) => crate::failure::git_failure(g),
        unknown @ select::SelectError::Unknown { .. } => Failure::usage(unknown.to_string())
            .with_hint("`--check all` runs every check, `--check <feature>` every check of a feature"),
        other => Failure::usage(other.to_string()),
    })?;
    if selected.is_empty() {
        return Ok(None);
    }
    phases.end("checks: maps and selection");
    let now = ctx.env.now()?;
    let out = match &options.out {
        Some(dir) => start.join(dir),
        // In the checkout, created without following a link a pull request may have committed there.
        None => {
            let rel = format!(".aayudha/runs/{}", crate::clock::utc_stamp(now, true));
            crate::safe_fs::ensure_dir(repo.root(), &rel).map_err(|e| {
                Failure::usage(format!("cannot create the run folder: {e}")).with_hint(
                    "`.aayudha/runs` must be a plain folder of the checkout (or give `--out DIR`)",
                )
            })?
        }
    };
    let sandbox = new_sandbox(ctx, config, options, repo.root())?;
    phases.end("checks: sandbox");
    let seed = behaviour::seed_package(&loaded.maps, &selected, repo.root(), &config.verify.seed);
    let tree = crate::sandbox::FetchTree::new(
        repo.root(),
        crate::runners::fetch_packages(
            sandbox.toolchains(),
            repo.root(),
            behaviour::packages(&loaded.maps, &selected)
                .into_iter()
                .chain(seed.map(|dir| (dir, None))),
        ),
        |lock| repo.is_tracked(lock),
    );
    // Before any check: are the tools there, and do they run as the sandbox uid? Checked once, now, so
    // that no check waits on it (and no tool's trial run shares a slot with a running check).
    let needs = behaviour::needs(&loaded.maps, &selected, repo.root());
    for line in sandbox.preflight(repo.root(), &needs) {
        if line.contains(": blocked: ") {
            let _ = std::io::Write::write_fmt(ctx.err, format_args!("{line}\n"));
        }
    }
    phases.end("checks: preflight");
    sandbox.fetch(&[tree], ctx.err);
    phases.end("checks: fetch");
    let report = run_behaviour(
        ctx,
        repo.root(),
        &out,
        config,
        options,
        &loaded.maps,
        &selected,
        &sandbox,
    )?;
    phases.end("checks: run");
    Ok(Some((report, out)))
}

/// The sandbox of a run; a refused uid range is the configuration's fault (exit 2).
pub(crate) fn new_sandbox(
    ctx: &Context,
    config: &Config,
    options: &VerifyOptions,
    root: &std::path::Path,
) -> Result<Sandbox, Failure> {
    let mut settings = crate::gate::sandbox_settings(ctx.env, config, options.jobs, root);
    // A local run builds the developer's own code: its target folders are kept between runs. Never in
    // Actions, where a pull request's build scripts would write what the next run builds on.
    if !ctx.env.github_actions {
        settings.build_cache = crate::sandbox::build_cache::BuildCache::Kept {
            repo: root.to_path_buf(),
        };
    }
    Sandbox::new(&settings).map_err(|e| super::ci::gate_failure(e.into()))
}

/// Runs selected behaviour checks into the run folder `out`; a refused target is a usage error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_behaviour(
    ctx: &mut Context,
    root: &std::path::Path,
    out: &std::path::Path,
    config: &Config,
    options: &VerifyOptions,
    maps: &[maps::Map],
    selected: &[select::Selected],
    sandbox: &Sandbox,
) -> Result<behaviour::BehaviourReport, Failure> {
    let run_options = behaviour::Options {
        root: root.to_path_buf(),
        out: out.to_path_buf(),
        jobs: options.jobs.unwrap_or(ctx.env.cores).max(1),
        timeout: Duration::from_secs(config.verify.check_timeout_s),
        base_url: config.verify.base_url.clone(),
        seed: config.verify.seed.clone(),
        production: config.verify.production.clone(),
        targets: config.verify.targets.clone(),
        require_isolation: config.verify.require_isolation,
        aayu: ctx.env.exe.clone().unwrap_or_else(|| "aayu".into()),
    };
    behaviour::run(maps, selected, &run_options, sandbox, ctx.err).map_err(|e| {
        let status = match e {
            behaviour::BehaviourError::Target(_) => ExitStatus::Usage,
            _ => ExitStatus::Failure,
        };
        Failure::from_error(status, &e)
    })
}
