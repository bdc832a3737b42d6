//! `aayu proof comment` (the gate's `pack` job): verifies the pack — this run's `aayudha-pack` artifact, or a
//! folder — against the pull request and its Ready snapshot, keeps the one proof comment on the pull
//! request, and sets the `aayudha/proof` status on its head. Exit 4 when the pack does not verify, 3 when a
//! floor does not hold. It never writes to the ledger, and a read-only token degrades to the job summary.

use std::io::Write as _;

use serde_json::Value;

use crate::commands::{Context, Failure, github_failure, short};
use crate::exit::ExitStatus;
use crate::github::{Client, GitHubError, NewStatus, RepoSlug, Token};
use crate::ledger::ready;
use crate::ledger::verify::{self, Stored};
use crate::output::markdown::cell;
use crate::publish::ARTIFACT;
use crate::publish::archive::{self, Limits};
use crate::publish::comment::{self, ACTIONS_BOT, Outcome};
use crate::publish::results::Results;
use crate::settings::ProofCommentOptions;

pub fn run(ctx: &mut Context, options: ProofCommentOptions) -> Result<ExitStatus, Failure> {
    let repo = options.repository.clone().ok_or_else(|| {
        Failure::usage(
            "`GITHUB_REPOSITORY` is not set: `aayu proof comment` runs in GitHub Actions",
        )
        .with_hint("set GITHUB_REPOSITORY=owner/name to run it elsewhere")
    })?;
    let repo = RepoSlug::parse(&repo).ok_or_else(|| {
        Failure::usage(format!(
            "`GITHUB_REPOSITORY` is `{repo}`, not a repository: write OWNER/NAME"
        ))
    })?;
    let token = options.token.clone().ok_or_else(|| {
        Failure::usage("no token: set `GITHUB_TOKEN` (or the action's `token` input)")
    })?;
    let pr = match options.pr {
        Some(pr) => pr,
        None => pr_of_event(&options)?,
    };
    let client = Client::new(&options.api_url, &Token::new(token)).map_err(github_failure)?;

    // The pack: read back with every check of the zip reader, whether it comes from a folder or the run.
    let zip = match &options.pack {
        Some(dir) => {
            let mut bytes = Vec::new();
            archive::build(dir, &mut bytes).map_err(|e| {
                Failure::usage(format!("cannot read the pack folder `{}`", dir.display()))
                    .caused_by(e)
            })?;
            bytes
        }
        None => {
            let (Some(url), Some(runtime)) = (&options.results_url, &options.runtime_token) else {
                return Err(Failure::usage(
                    "without `--pack DIR` the pack is this run's artifact, which needs ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN",
                ));
            };
            let results = Results::new(url, runtime).map_err(|e| {
                Failure::unexpected("cannot reach the results service").caused_by(e)
            })?;
            results.download(ARTIFACT).map_err(|e| {
                Failure::new(
                    ExitStatus::ProofFails,
                    format!("the `{ARTIFACT}` artifact of this run could not be read"),
                )
                .caused_by(e)
            })?
        }
    };
    let pack_hash = crate::pack::hash_bytes(&zip);
    let (unpacked, mut problems) = match archive::read(&zip, Limits::default()) {
        Ok(unpacked) => (Some(unpacked), Vec::new()),
        Err(e) => (None, vec![e.to_string()]),
    };
    let pack_json_hash = unpacked
        .as_ref()
        .map(|u| u.pack_sha256.clone())
        .unwrap_or_default();
    let pack = unpacked.as_ref().map(|u| &u.pack);

    // The pull request's head and the story's Ready snapshot, from the ledger through the contents API; the
    // ledger's name from the default branch's configuration, never from the pull request.
    let head = client.pull(&repo, pr).map_err(github_failure)?.head_sha;
    let (config, _) = super::default_branch_config(&client, &repo, options.config_path.as_deref())?;
    let ledger = config.ledger.branch;
    let mut criteria_lines = Vec::new();
    if let (Some(unpacked), Some(pack)) = (&unpacked, pack) {
        if pack.pr_head_sha != head {
            problems.push(format!(
                "the pack proves {} but the pull request's head is {head}",
                short(&pack.pr_head_sha)
            ));
        }
        // The same checks as `aayu proof verify` and `aayu ship`, against the snapshot on the ledger.
        let snapshot = (pack.story > 0).then(|| snapshot(&client, &repo, &ledger, pack.story));
        let read = |a: &crate::pack::Artifact| match unpacked.artifacts.get(&a.path) {
            Some(bytes) => Stored::Bytes(bytes.clone()),
            None => Stored::Missing,
        };
        // The head was compared above, with the pull request's full SHA in the message.
        let outcome = verify::verify(pack, &read, snapshot.as_ref(), &Ok(None));
        problems.extend(
            outcome
                .failures
                .iter()
                .map(|f| format!("{} {}: {}", f.check, f.subject, f.detail)),
        );
        if let Some(Ok(snapshot)) = &snapshot {
            for criterion in &snapshot.criteria {
                let evidence = pack
                    .criteria
                    .iter()
                    .find(|c| c.id == criterion.id)
                    .map(|c| c.evidence.clone())
                    .unwrap_or_default();
                let said = if evidence.is_empty() {
                    "no evidence".to_string()
                } else {
                    format!(
                        "evidenced: {}",
                        evidence
                            .iter()
                            .map(|e| cell(e))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                criteria_lines.push(format!(
                    "| {} | {said} | {} |",
                    criterion.id,
                    cell(&criterion.text)
                ));
            }
        }
    }
    let verifies = problems.is_empty();
    let holds = pack.is_some_and(|p| p.checks.iter().all(crate::pack::Check::holds));
    let run_url = options.run_id.map(|id| {
        format!(
            "{}/{repo}/actions/runs/{id}",
            options.server_url.trim_end_matches('/')
        )
    });
    let text = crate::output::summary::proof(&crate::output::summary::Proof {
        pack,
        head: &head,
        verifies,
        holds,
        problems: &problems,
        criteria: &criteria_lines,
        pack_json: &pack_json_hash,
        zip: &pack_hash,
        run_url: run_url.as_deref(),
    });
    let run_id = options.run_id.unwrap_or(0);
    let body = comment::body(run_id, &head, &text);

    // The comment, then the status; a token that cannot write leaves both in the job summary.
    let me = match &options.bot_login {
        Some(login) => login.clone(),
        None => client
            .login()
            .map_err(github_failure)?
            .unwrap_or_else(|| ACTIONS_BOT.to_string()),
    };
    let mut degraded = Vec::new();
    match comment::upsert(&client, &repo, pr, &me, &head, &body) {
        Ok(Outcome::KeptNewer(id)) => {
            let _ = writeln!(
                ctx.err,
                "notice: comment {id} records a newer run; left as it is"
            );
        }
        Ok(_) => {}
        Err(e @ GitHubError::Forbidden { .. }) => degraded.push(e),
        Err(e) => return Err(github_failure(e)),
    }
    let state = if verifies && holds {
        "success"
    } else {
        "failure"
    };
    let description: String = format!("run {run_id} pack sha256 {pack_json_hash}")
        .chars()
        .take(140)
        .collect();
    if !head.is_empty() {
        let status = NewStatus {
            state,
            context: "aayudha/proof",
            description: &description,
            target_url: run_url.as_deref(),
        };
        match client.create_status(&repo, &head, &status) {
            Ok(_) => {}
            Err(e @ GitHubError::Forbidden { .. }) => degraded.push(e),
            Err(e) => return Err(github_failure(e)),
        }
    }
    for e in &degraded {
        let hint = e.hint().unwrap_or_default();
        let _ = writeln!(
            ctx.err,
            "warning: {e}; the verdict is in the job summary instead ({hint})"
        );
    }
    if let Some(summary) = &options.step_summary {
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(summary)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{text}\n").as_bytes()));
    }
    // The comment's text names artifact paths and details from the pack: fenced in the job's log.
    if !super::write_report(ctx, &format!("{text}\n"))? {
        return Ok(ExitStatus::Ok);
    }
    Ok(if !verifies {
        ExitStatus::ProofFails
    } else if !holds {
        ExitStatus::FloorFails
    } else {
        ExitStatus::Ok
    })
}

/// The pull request of the event (`pull_request.number` in `GITHUB_EVENT_PATH`).
fn pr_of_event(options: &ProofCommentOptions) -> Result<u64, Failure> {
    let path = options.event_path.as_ref().ok_or_else(|| {
        Failure::usage("no pull request: pass `--pr N`, or run on a pull_request event")
    })?;
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(format!(
            "cannot read the event payload `{}`",
            path.display()
        ))
        .caused_by(e)
    })?;
    let event: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "the event payload `{}` is not JSON",
            path.display()
        ))
        .caused_by(e)
    })?;
    event
        .pointer("/pull_request/number")
        .and_then(Value::as_u64)
        .ok_or_else(|| Failure::usage("the event has no `pull_request.number`: pass `--pr N`"))
}

/// The story's Ready snapshot on the ledger branch (`[ledger] branch` of the default branch's
/// configuration), through the contents API.
fn snapshot(
    client: &Client,
    repo: &RepoSlug,
    ledger: &str,
    story: u64,
) -> Result<ready::Snapshot, String> {
    let path = format!("specs/{story}/ready.md");
    let bytes = client.file(repo, &path, ledger).map_err(|e| {
        format!("story #{story} has no Ready snapshot on the `{ledger}` branch: {e}")
    })?;
    ready::parse(
        &String::from_utf8_lossy(&bytes),
        &format!("{ledger}:{path}"),
    )
}
