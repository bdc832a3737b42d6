//! The merge gate's pack, published: zipped, uploaded as the run's `aayudha-pack` artifact, and said — the
//! step's outputs (`result`, `pack-sha256`, `story`, `drift`), the annotations (drift, weakenings,
//! uncovered lines, failing floors) and the job summary — from a [`GateRun`].

use std::io::Write;
use std::path::Path;

use crate::failure::Failure;
use crate::gate::GateRun;
use crate::log::Log;
use crate::output::github::{Annotations, Level};
use crate::pack::ARTIFACT;
use crate::publish::archive;
use crate::publish::job::Job;
use crate::publish::results::{self, Results};
use crate::settings::github::GitHubEnv;

/// What publishing a gate run needs besides the run.
pub struct Publish<'a> {
    pub github: &'a GitHubEnv,
    /// The retention asked for (the `retention-days` input, else `[proof] retention_days`).
    pub retention_days: u32,
    /// The story the pull request is for, and its snapshot's Completion Goal hash.
    pub story: Option<u64>,
    pub snapshot_hash: Option<String>,
    /// The head is a fork's.
    pub fork: bool,
    /// Annotations said before the run (the configuration notice).
    pub notes: Annotations,
    pub now: time::OffsetDateTime,
    /// A sharded gate's merge: `result` is `passed` or `failed` (its `reason` names the failing floors).
    pub merge: bool,
}

/// Zips and uploads the pack folder of `run` (the zip made in `temp`), then writes the outputs, the
/// annotations (to `out`) and the summary. The pack is uploaded, or nothing is said as if it were.
pub fn gate(
    run: &GateRun,
    publish: Publish,
    temp: &Path,
    out: &mut dyn Write,
    log: &mut Log,
) -> Result<(), Failure> {
    let github = publish.github;
    let job = Job::of(github);
    let mut notes = publish.notes;
    let pack = &run.pack;
    // The artifact.
    let zip_path = temp.join("aayudha-pack.zip");
    let zip_file = std::fs::File::create(&zip_path)
        .map_err(|e| Failure::unexpected("cannot create the pack zip").caused_by(e))?;
    archive::build(&run.pack_dir, std::io::BufWriter::new(zip_file))
        .map_err(|e| Failure::unexpected("cannot zip the pack").caused_by(e))?;
    let (Some(results_url), Some(runtime_token)) = (&github.results_url, &github.runtime_token)
    else {
        job.output(log, "result", "no-pack");
        return Err(Failure::usage("ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are not set: the pack cannot be uploaded")
            .with_hint("the gate runs as a step of a GitHub Actions job"));
    };
    let requested = publish.retention_days;
    let (days, warning) = results::retention(requested, github.retention_max);
    if let Some(warning) = warning {
        let _ = writeln!(log, "warning: {warning}");
    }
    let now = publish.now;
    if crate::sandbox::cleanup::interrupted() {
        return Err(Failure::unexpected("interrupted: nothing was uploaded"));
    }
    let uploaded = Results::new(results_url, runtime_token)
        .and_then(|r| r.upload(ARTIFACT, &zip_path, Some(days), now))
        .map_err(|e| {
            Failure::unexpected(format!("cannot upload the `{ARTIFACT}` artifact")).caused_by(e)
        })?;

    // Outputs, annotations, the summary.
    crate::output::github::annotations(run, &mut notes);
    // The story edited after Ready: the pack cannot verify against its snapshot, whatever the floors say.
    let goal_changed = publish
        .snapshot_hash
        .as_ref()
        .is_some_and(|h| *h != pack.completion_goal_hash);
    if goal_changed {
        notes.add(
            Level::Error,
            None,
            "aayudha: the story changed after Ready",
            &format!(
                "story #{}'s Completion Goal is not the one frozen in its Ready snapshot: agree on it, then run `aayu ready {} --refreeze`",
                publish.story.unwrap_or(0),
                publish.story.unwrap_or(0)
            ),
        );
    }
    let _ = out.write_all(notes.lines.as_bytes());
    let result = if goal_changed {
        "not-proven"
    } else if run.holds() {
        "proven"
    } else {
        "floors-fail"
    };
    if publish.merge {
        let failing: Vec<&str> = pack
            .checks
            .iter()
            .filter(|c| !c.holds())
            .map(|c| c.floor.as_str())
            .collect();
        let (word, reason) = match (result, failing.is_empty()) {
            ("proven", _) => ("passed", String::new()),
            ("not-proven", _) => ("failed", "the story changed after Ready".to_string()),
            (_, true) => ("failed", "a floor fails".to_string()),
            (_, false) => ("failed", format!("floors fail: {}", failing.join(", "))),
        };
        job.output(log, "result", word);
        job.output(log, "reason", &reason);
    } else {
        job.output(log, "result", result);
    }
    job.output(log, "pack-sha256", &run.pack_sha256);
    job.output(
        log,
        "story",
        &publish.story.map(|s| s.to_string()).unwrap_or_default(),
    );
    job.output(log, "drift", &run.map.drift.len().to_string());
    let artifact_url = match (&github.repository, github.run_id) {
        (Some(repo), Some(id)) => Some(format!(
            "{}/{repo}/actions/runs/{id}/artifacts/{}",
            github.server_url.trim_end_matches('/'),
            uploaded.artifact_id
        )),
        _ => None,
    };
    let named = format!(
        "run {} attempt {}, artifact {}",
        github.run_id.unwrap_or(0),
        github.run_attempt.unwrap_or(1),
        uploaded.artifact_id
    );
    let summary = crate::output::summary::Gate {
        pack,
        pack_sha256: &run.pack_sha256,
        run: &named,
        artifact_url: artifact_url.as_deref(),
        fork: publish.fork,
        overflow: &notes.overflow,
        coverage: run.coverage.as_ref(),
        harness: Some(&run.harness),
    };
    job.summary(
        log,
        &crate::output::text(|w| crate::output::summary::gate(&summary, w)),
    );
    let _ = out.write_all(
        format!(
            "aayudha merge gate: {result}; pack.json sha256 {}; uploaded as `{ARTIFACT}` ({} bytes)\n",
            run.pack_sha256, uploaded.size
        )
        .as_bytes(),
    );
    Ok(())
}
