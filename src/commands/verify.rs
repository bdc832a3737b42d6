//! `aayu verify`: for now the map check (`--map`, SPEC §3). The behaviour floor, `--ci` and the pack land
//! with their own issues; asking for them exits 2 and says so.

use crate::commands::{Context, Failure, write_out};
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::floors::feature_map::{self, MapReport};
use crate::git::{GitError, Repo};
use crate::output::github::{self, Level};
use crate::output::{json, plain};
use crate::settings::VerifyOptions;

pub fn run(ctx: &mut Context, options: VerifyOptions) -> Result<ExitStatus, Failure> {
    if let Some(flag) = options.unbuilt.first() {
        return Err(Failure::usage(format!("`aayu verify --{flag}` is not built yet"))
            .with_hint("it lands with the behaviour floor and the proof pack; `aayu verify --map` works today"));
    }
    if !options.map {
        return Err(Failure::usage(
            "`aayu verify` without `--map` runs the behaviour floor, which is not built yet",
        )
        .with_hint("run `aayu verify --map` to check the feature maps against the source"));
    }
    let start = match (&ctx.global.directory, &ctx.env.cwd) {
        (Some(dir), Some(cwd)) => cwd.join(dir),
        (Some(dir), None) => dir.clone(),
        (None, Some(cwd)) => cwd.clone(),
        (None, None) => ".".into(),
    };
    let repo = Repo::discover(&start).map_err(git_failure)?;
    // Like git -C, a relative `--config` is taken from the directory aayu runs in.
    let config = Config::load(repo.root(), options.config.as_deref(), &start)
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint()))?;
    let now = ctx.env.now()?;
    let report = feature_map::check(&repo).map_err(git_failure)?;

    let rendered = if options.json {
        json::render(&report)
    } else {
        plain::map_report(&report)
    };
    if !write_out(ctx.out, &rendered)? {
        return Ok(ExitStatus::Ok);
    }
    if ctx.env.github_actions {
        let blocking = config.verify.drift_blocking_from.blocks_at(now);
        // Annotations go to stderr so that `--json` on stdout stays one clean document; the runner reads
        // workflow commands from both streams.
        let _ = ctx.err.write_all(annotations(&report, blocking).as_bytes());
    }
    Ok(status_of(&report))
}

/// 2 for contract errors, else 3 for drift, else 0. Stale is never drift.
pub fn status_of(report: &MapReport) -> ExitStatus {
    if !report.errors.is_empty() {
        ExitStatus::Usage
    } else if !report.drift.is_empty() {
        ExitStatus::FloorFails
    } else {
        ExitStatus::Ok
    }
}

fn annotations(report: &MapReport, blocking: bool) -> String {
    let level = if blocking {
        Level::Error
    } else {
        Level::Warning
    };
    let mut text = String::new();
    for d in &report.drift {
        text.push_str(&github::annotation(
            level,
            &d.file,
            d.line,
            &format!("drift: {}", d.kind.as_str()),
            &d.detail,
        ));
    }
    for e in &report.errors {
        text.push_str(&github::annotation(
            Level::Error,
            &e.file,
            e.line,
            "feature map contract error",
            &e.message,
        ));
    }
    text
}

fn git_failure(e: GitError) -> Failure {
    let (status, hint) = match &e {
        GitError::NotARepository { .. } => (
            ExitStatus::Usage,
            Some("run aayu inside a git repository, or pass `-C DIR`"),
        ),
        GitError::Bare { .. } => (
            ExitStatus::Usage,
            Some("run aayu in a checkout with a working tree"),
        ),
        GitError::List { .. } => (ExitStatus::Failure, None),
    };
    Failure::from_error(status, &e).with_optional_hint(hint)
}
