//! The behaviour checks of `aayu verify --check …` / `--base … --head …` and of the nightly sweep: the
//! checks selected, their dependencies fetched once as a sandbox uid, each check run in the sandbox into
//! the run folder.

use std::io::Write as _;

use super::GateError;
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::failure::Failure;
use crate::floors::behaviour;
use crate::git::Repo;
use crate::log::Log;
use crate::maps;
use crate::sandbox::Sandbox;
use crate::select;
use crate::settings::{Env, VerifyOptions};

/// Selects the checks (`--check`, or the diff of `--base`/`--head`), fetches their dependencies and runs
/// them into the run folder; `None` when nothing is selected. Also the nightly sweep's run.
pub fn run(
    env: &Env,
    log: &mut Log,
    repo: &Repo,
    config: &Config,
    options: &VerifyOptions,
    start: &std::path::Path,
) -> Result<Option<(behaviour::BehaviourReport, std::path::PathBuf)>, Failure> {
    let mut phases = crate::timing::Phases::start();
    let loaded = maps::load_repo(repo).map_err(Failure::from)?;
    refuse_contract_errors(&loaded.errors)?;
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
    .map_err(Failure::from)?;
    if selected.is_empty() {
        return Ok(None);
    }
    phases.end("checks: maps and selection");
    let now = env.now()?;
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
    let sandbox = new_sandbox(env, config, options, repo.root())?;
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
            let _ = writeln!(log, "{line}");
        }
    }
    phases.end("checks: preflight");
    sandbox.fetch(&[tree], log);
    phases.end("checks: fetch");
    let report = run_behaviour(
        env,
        log,
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

/// No check is selected from maps with contract errors: the first is the message (its file and line), the
/// others its causes (exit 2).
pub fn refuse_contract_errors(errors: &[maps::ContractError]) -> Result<(), Failure> {
    let Some(first) = errors.first() else {
        return Ok(());
    };
    let mut failure = Failure::usage(format!("{}:{}: {}", first.file, first.line, first.message));
    for more in errors.iter().skip(1) {
        failure
            .causes
            .push(format!("{}:{}: {}", more.file, more.line, more.message));
    }
    Err(failure.with_hint("fix the maps first: `aayu verify --map` lists every contract error"))
}

/// The sandbox of a run; a refused uid range is the configuration's fault (exit 2).
pub fn new_sandbox(
    env: &Env,
    config: &Config,
    options: &VerifyOptions,
    root: &std::path::Path,
) -> Result<Sandbox, Failure> {
    let mut settings = super::sandbox_settings(env, config, options.jobs, root);
    // A local run builds the developer's own code: its target folders are kept between runs. Never in
    // Actions, where a pull request's build scripts would write what the next run builds on.
    if !env.github_actions {
        settings.build_cache = crate::sandbox::build_cache::BuildCache::Kept {
            repo: root.to_path_buf(),
        };
    }
    Sandbox::new(&settings).map_err(|e| GateError::from(e).into())
}

/// Runs selected behaviour checks into the run folder `out`; a refused target is a usage error.
#[allow(clippy::too_many_arguments)]
pub fn run_behaviour(
    env: &Env,
    log: &mut Log,
    root: &std::path::Path,
    out: &std::path::Path,
    config: &Config,
    options: &VerifyOptions,
    maps: &[maps::Map],
    selected: &[select::Selected],
    sandbox: &Sandbox,
) -> Result<behaviour::BehaviourReport, Failure> {
    let run_options = behaviour::Options::of(
        &config.verify,
        (root, out),
        options.jobs.unwrap_or(env.cores).max(1),
        env.exe.clone().unwrap_or_else(|| "aayu".into()),
    );
    behaviour::run(maps, selected, &run_options, sandbox, log).map_err(|e| {
        let status = match e {
            behaviour::BehaviourError::Target(_) => ExitStatus::Usage,
            _ => ExitStatus::Failure,
        };
        Failure::from_error(status, &e)
    })
}
