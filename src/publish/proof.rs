//! The comment job (`aayu proof comment`, the action's `comment` mode, the gate's `pack` job): verifies the pack — this run's `aayudha-pack` artifact, or a
//! folder — against the pull request and its Ready snapshot, keeps the one proof comment on the pull
//! request, and sets the `aayudha/proof` status on its head. Exit 4 when the pack does not verify, 3 when a
//! floor does not hold. It never writes to the ledger, and a read-only token degrades to the job summary.

use std::io::Write as _;

use crate::event::Event;
use crate::exit::ExitStatus;
use crate::failure::Failure;
use crate::git::short;
use crate::github::{Client, GitHubError, NewStatus, RepoSlug, Token};
use crate::log::Log;
use crate::output::markdown::cell;
use crate::pack::ARTIFACT;
use crate::pack::verify::{self, Stored};
use crate::publish::archive::{self, Limits};
use crate::publish::comment::{self, ACTIONS_BOT, Outcome};
use crate::publish::results::Results;
use crate::settings::ProofCommentOptions;
use crate::settings::github::GitHubEnv;

/// How the comment job ended: the verdict's text for the log (when there is a pack to say it of) and the
/// exit status.
pub struct Said {
    pub report: Option<String>,
    pub exit: ExitStatus,
}

/// The comment job's request, its run, and the run's event when there is one (`GITHUB_EVENT_PATH`).
struct Run<'a> {
    options: &'a ProofCommentOptions,
    github: &'a GitHubEnv,
    event: Option<Event>,
}

pub fn comment(
    options: &ProofCommentOptions,
    github: &GitHubEnv,
    log: &mut Log,
) -> Result<Said, Failure> {
    let repo = repository(github)?;
    let token = options.token.clone().ok_or_else(|| {
        Failure::usage("no token: set `GITHUB_TOKEN` (or the action's `token` input)")
    })?;
    let (event, pr) = pull_request(options, github)?;
    let run = Run {
        options,
        github,
        event,
    };
    let client = Client::new(&github.api_url, &Token::new(token)).map_err(Failure::from)?;

    // The pack: read back with every check of the zip reader, whether it comes from a folder or the run.
    // When there is none, the status still says so (and why) on the head before aayu exits.
    let (zip, artifact_id) = match pack_zip(options, github)? {
        Ok(zip) => zip,
        Err((exit, why)) => {
            let _ = writeln!(log, "error: {why}");
            let exit = no_pack_status(log, &run, &client, &repo, pr, exit, &why)?;
            return Ok(Said { report: None, exit });
        }
    };
    let pack_hash = crate::hash::bytes(&zip);
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
    let head = client.pull(&repo, pr).map_err(Failure::from)?.head_sha;
    let (config, _) =
        crate::config::Config::of_default_branch(&client, &repo, options.config_path.as_deref())?;
    let criteria = match &unpacked {
        Some(unpacked) => {
            let against = (&client, &repo, config.ledger.branch.as_str());
            check_pack(against, &head, unpacked, &mut problems)
        }
        None => Vec::new(),
    };
    let verifies = problems.is_empty();
    let holds = pack.is_some_and(|p| p.checks.iter().all(crate::pack::Check::holds));
    let run_url = github.run_id.map(|id| github.run_url_of(repo.as_str(), id));
    // The artifact's own page when its id is known, else the run's page (which lists its artifacts).
    let artifact_url = match (&run_url, artifact_id) {
        (Some(run), Some(id)) => Some(format!("{run}/artifacts/{id}")),
        (Some(run), None) => Some(format!("{run}#artifacts")),
        _ => None,
    };
    // The coverage floor's report, from the artifact whose hash the pack names (read only when the pack
    // verifies: a report that does not match is not shown).
    let coverage: Option<crate::floors::coverage::Report> = unpacked
        .as_ref()
        .filter(|_| verifies)
        .and_then(|u| u.artifacts.get("reports/coverage.json"))
        .and_then(|bytes| serde_json::from_slice(bytes).ok());
    let harness: Option<crate::floors::harness::Report> = unpacked
        .as_ref()
        .filter(|_| verifies)
        .and_then(|u| u.artifacts.get("reports/harness.json"))
        .and_then(|bytes| serde_json::from_slice(bytes).ok());
    let proof = crate::output::summary::Proof {
        pack,
        head: &head,
        verifies,
        holds,
        problems: &problems,
        criteria: &criteria,
        pack_json: &pack_json_hash,
        zip: &pack_hash,
        run_url: run_url.as_deref(),
        artifact_url: artifact_url.as_deref(),
        coverage: coverage.as_ref(),
        harness: harness.as_ref(),
    };
    let text = crate::output::text(|w| crate::output::summary::proof(&proof, w));
    let run_id = github.run_id.unwrap_or(0);
    let body = comment::body(run_id, &head, &text);

    // The comment, then the status; a token that cannot write leaves both in the job summary.
    let target = Target {
        client: &client,
        repo: &repo,
        pr,
        head: &head,
    };
    let proven = verifies && holds;
    let status = (run_id, run_url.as_deref(), pack_json_hash.as_str());
    let degraded = comment_and_status(log, options, &target, &body, proven, status)?;
    summarize(log, github, &degraded, &text);
    // The comment's text names artifact paths and details from the pack: fenced in the job's log.
    let exit = if !verifies {
        ExitStatus::ProofFails
    } else if !holds {
        ExitStatus::FloorFails
    } else {
        ExitStatus::Ok
    };
    Ok(Said {
        report: Some(format!("{text}\n")),
        exit,
    })
}

/// Keeps the proof comment, then sets the `aayudha/proof` status on the head (`success` when `proven`;
/// `status`: the run's id and page, the pack.json hash); what a token that cannot write could not do.
fn comment_and_status(
    log: &mut Log,
    options: &ProofCommentOptions,
    target: &Target,
    body: &str,
    proven: bool,
    (run_id, run_url, pack_json_hash): (u64, Option<&str>, &str),
) -> Result<Vec<GitHubError>, Failure> {
    let mut degraded = Vec::new();
    keep_comment(log, options, target, body, &mut degraded)?;
    let state = if proven { "success" } else { "failure" };
    let description: String = format!("run {run_id} pack sha256 {pack_json_hash}")
        .chars()
        .take(140)
        .collect();
    if !target.head.is_empty() {
        let status = NewStatus {
            state,
            context: CONTEXT,
            description: &description,
            target_url: run_url,
        };
        if let Some(e) = set_status(
            log,
            target.client,
            target.repo,
            target.head,
            run_id,
            &status,
        )? {
            degraded.push(e);
        }
    }
    Ok(degraded)
}

/// The repository of the run (`GITHUB_REPOSITORY`).
fn repository(github: &GitHubEnv) -> Result<RepoSlug, Failure> {
    let repo = github.repository.clone().ok_or_else(|| {
        Failure::usage(
            "`GITHUB_REPOSITORY` is not set: `aayu proof comment` runs in GitHub Actions",
        )
        .with_hint("set GITHUB_REPOSITORY=owner/name to run it elsewhere")
    })?;
    RepoSlug::parse(&repo).ok_or_else(|| {
        Failure::usage(format!(
            "`GITHUB_REPOSITORY` is `{repo}`, not a repository: write OWNER/NAME"
        ))
    })
}

/// The same checks as `aayu proof verify` and `aayu ship`, against the pull request's `head` and the
/// story's snapshot on the ledger branch (`against`: the client, the repository, the ledger branch):
/// each failure joins `problems`; the criteria rows when the snapshot reads.
fn check_pack(
    (client, repo, ledger): (&Client, &RepoSlug, &str),
    head: &str,
    unpacked: &archive::Unpacked,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let pack = &unpacked.pack;
    if pack.pr_head_sha != head {
        problems.push(format!(
            "the pack proves {} but the pull request's head is {head}",
            short(&pack.pr_head_sha)
        ));
    }
    let snapshot = (pack.story > 0).then(|| {
        crate::story::snapshot_on_github(client, repo, ledger, pack.story)
            .map_err(|e| e.to_string())
    });
    let read = |a: &crate::pack::Artifact| match unpacked.artifacts.get(&a.path) {
        Some(bytes) => Stored::Bytes(bytes.clone()),
        None => Stored::Missing,
    };
    // The head was compared above, with the pull request's full SHA in the message.
    let outcome = verify::verify(pack, &read, snapshot.as_ref(), &Ok(None));
    problems.extend(outcome.failures.iter().map(verify::Finding::said));
    // The harness floor's notes, from its report when the pack verifies.
    let harness: Option<crate::floors::harness::Report> = outcome
        .failures
        .is_empty()
        .then(|| unpacked.artifacts.get("reports/harness.json"))
        .flatten()
        .and_then(|bytes| serde_json::from_slice(bytes).ok());
    match &snapshot {
        Some(Ok(snapshot)) => criteria_rows(pack, snapshot, harness.as_ref()),
        _ => Vec::new(),
    }
}

/// The pull request: `--pr`, else the event's; and the event when there is one. The event names the pull
/// request unless `--pr` does; then it only gives the head a missing pack is said on, when it can.
fn pull_request(
    options: &ProofCommentOptions,
    github: &GitHubEnv,
) -> Result<(Option<Event>, u64), Failure> {
    let event = match &github.event_path {
        Some(path) if options.pr.is_none() => Some(Event::read(path)?),
        Some(path) => Event::read(path).ok(),
        None => None,
    };
    let pr = match (options.pr, &event) {
        (Some(pr), _) => pr,
        (None, None) => {
            return Err(Failure::usage(
                "no pull request: pass `--pr N`, or run on a pull_request event",
            ));
        }
        (None, Some(event)) => event.pr_number().ok_or_else(|| {
            Failure::usage("the event has no `pull_request.number`: pass `--pr N`")
        })?,
    };
    Ok((event, pr))
}

/// The pack's zip and the artifact's id: from `--pack DIR` (zipped here), else this run's `aayudha-pack`
/// artifact. `Ok(Err((exit, why)))` when the run has no pack: the status still says why.
fn pack_zip(options: &ProofCommentOptions, github: &GitHubEnv) -> Result<Zip, Failure> {
    if let Some(dir) = &options.pack {
        let mut bytes = Vec::new();
        archive::build(dir, &mut bytes).map_err(|e| {
            Failure::usage(format!("cannot read the pack folder `{}`", dir.display())).caused_by(e)
        })?;
        return Ok(Ok((bytes, None)));
    }
    let (Some(url), Some(runtime)) = (&github.results_url, &github.runtime_token) else {
        return Err(Failure::usage(
            "without `--pack DIR` the pack is this run's artifact, which needs ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN",
        ));
    };
    Ok(match Results::new(url, runtime) {
        Err(e) => Err((
            ExitStatus::Failure,
            format!("the results service cannot be reached: {e}"),
        )),
        Ok(results) => match results.download_with_id(ARTIFACT) {
            Ok((bytes, id)) => Ok((bytes, id)),
            Err(e) => Err((
                ExitStatus::ProofFails,
                no_pack(
                    options.gate_result.as_deref(),
                    options.gate_reason.as_deref(),
                    &e.to_string(),
                ),
            )),
        },
    })
}

/// The comment's criteria table rows: each Ready criterion, its evidence in the pack or none, its text.
fn criteria_rows(
    pack: &crate::pack::Pack,
    snapshot: &crate::story::ready::Snapshot,
    harness: Option<&crate::floors::harness::Report>,
) -> Vec<String> {
    snapshot
        .criteria
        .iter()
        .map(|criterion| {
            let evidence = pack
                .criteria
                .iter()
                .find(|c| c.id == criterion.id)
                .map(|c| c.evidence.clone())
                .unwrap_or_default();
            let said = if evidence.is_empty() {
                "no evidence".to_string()
            } else {
                let cells: Vec<String> = evidence.iter().map(|e| cell(e)).collect();
                let noted = harness
                    .and_then(|h| h.criteria.get(&criterion.id))
                    .map(|places| {
                        format!("; {}", cell(&crate::floors::harness::Report::note(places)))
                    })
                    .unwrap_or_default();
                // Each place a code span of its own (a pull request's path is data).
                let reported = harness
                    .and_then(|h| h.package_changes.get(&criterion.id))
                    .map(|places| {
                        let spans: Vec<String> = places.iter().map(|p| cell(p)).collect();
                        format!(
                            "; {}",
                            crate::floors::harness::Report::reported_with(places.len(), &spans)
                        )
                    })
                    .unwrap_or_default();
                let noted = format!("{noted}{reported}");
                format!("evidenced: {}{noted}", cells.join(", "))
            };
            format!("| {} | {said} | {} |", criterion.id, cell(&criterion.text))
        })
        .collect()
}

/// A pack's zip and its artifact id, or why the run has none (and the exit that says so).
type Zip = Result<(Vec<u8>, Option<u64>), (ExitStatus, String)>;

/// Where the comment and the status go.
struct Target<'a> {
    client: &'a Client,
    repo: &'a RepoSlug,
    pr: u64,
    head: &'a str,
}

/// Keeps the one proof comment as the token's identity (`--bot-login`, else `GET /user`, else the
/// Actions bot); a refusal to write is kept in `degraded` for the job summary.
fn keep_comment(
    log: &mut Log,
    options: &ProofCommentOptions,
    target: &Target,
    body: &str,
    degraded: &mut Vec<GitHubError>,
) -> Result<(), Failure> {
    let me = match &options.bot_login {
        Some(login) => login.clone(),
        None => target
            .client
            .login()
            .map_err(Failure::from)?
            .unwrap_or_else(|| ACTIONS_BOT.to_string()),
    };
    let (client, repo) = (target.client, target.repo);
    match comment::upsert(client, repo, target.pr, &me, target.head, body) {
        Ok(Outcome::KeptNewer(id)) => {
            let _ = writeln!(
                log,
                "notice: comment {id} records a newer run; left as it is"
            );
        }
        Ok(_) => {}
        Err(e @ GitHubError::Forbidden { .. }) => degraded.push(e),
        Err(e) => return Err(Failure::from(e)),
    }
    Ok(())
}

/// Says what a token could not write (the verdict is in the job summary instead) and appends the text to
/// the step summary, kept under GitHub's 1 MiB.
fn summarize(log: &mut Log, github: &GitHubEnv, degraded: &[GitHubError], text: &str) {
    for e in degraded {
        let hint = e.hint().unwrap_or_default();
        let _ = writeln!(
            log,
            "warning: {e}; the verdict is in the job summary instead ({hint})"
        );
    }
    crate::publish::job::Job::of(github).summary(log, &format!("{text}\n"));
}

/// The `aayudha/proof` context.
const CONTEXT: &str = "aayudha/proof";

/// Why there is no pack to verify, from the merge-gate job's result when the workflow passes it; a
/// sharded gate's merge names what went wrong itself (`reason`), and that is said first.
fn no_pack(gate_result: Option<&str>, reason: Option<&str>, cause: &str) -> String {
    if let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) {
        // One line of the merge's own words, as data: no control character reaches the status.
        let reason: String = reason
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(200)
            .collect();
        return format!("the gate is blocked: {reason}");
    }
    match gate_result {
        Some("cancelled") => {
            "the gate was cancelled before it made a pack (a newer push, or a person): this head has no proof".to_string()
        }
        Some("failure") => {
            "the gate failed before it made a pack: its job's log says why".to_string()
        }
        Some("skipped") => "the gate did not run: this head has no proof".to_string(),
        _ => format!("the gate produced no pack ({cause})"),
    }
}

/// Sets `status` on `head` unless a newer run (a larger run id, in the description aayu writes) already
/// set `aayudha/proof` there: an older run finishing late never overwrites a newer verdict. `Ok(Some(e))`
/// when the token may not set statuses (the verdict then stays in the job summary).
fn set_status(
    log: &mut Log,
    client: &Client,
    repo: &RepoSlug,
    head: &str,
    run_id: u64,
    status: &NewStatus,
) -> Result<Option<GitHubError>, Failure> {
    let newer = match client.statuses(repo, head) {
        Ok(statuses) => statuses
            .iter()
            .filter(|s| s.context == CONTEXT)
            .filter_map(|s| run_of(s.description.as_deref()?))
            .filter(|&run| run > run_id)
            .max(),
        Err(e @ GitHubError::Forbidden { .. }) => return Ok(Some(e)),
        Err(e) => return Err(Failure::from(e)),
    };
    if let Some(newer) = newer {
        let _ = writeln!(
            log,
            "notice: run {newer} already set `{CONTEXT}` on {}; left as it is",
            short(head)
        );
        return Ok(None);
    }
    match client.create_status(repo, head, status) {
        Ok(_) => Ok(None),
        Err(e @ GitHubError::Forbidden { .. }) => Ok(Some(e)),
        Err(e) => Err(Failure::from(e)),
    }
}

/// The run id in a status description aayu wrote (`run 123 …`).
fn run_of(description: &str) -> Option<u64> {
    description
        .strip_prefix("run ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// No pack: the one comment and a `failure` status saying why, on the head this run was for (the event's,
/// else the pull request's), then `exit`.
fn no_pack_status(
    log: &mut Log,
    run: &Run,
    client: &Client,
    repo: &RepoSlug,
    pr: u64,
    exit: ExitStatus,
    why: &str,
) -> Result<ExitStatus, Failure> {
    let (options, github) = (run.options, run.github);
    // The head this run was for: the event's, else the pull request's now.
    let head = match run.event.as_ref().and_then(Event::head_sha) {
        Some(head) => head,
        None => client.pull(repo, pr).map_err(Failure::from)?.head_sha,
    };
    let run_id = github.run_id.unwrap_or(0);
    let run_url = github.run_id.map(|id| github.run_url_of(repo.as_str(), id));
    let problems = [why.to_string()];
    let proof = crate::output::summary::Proof {
        pack: None,
        head: &head,
        verifies: false,
        holds: false,
        problems: &problems,
        criteria: &[],
        pack_json: "",
        zip: "",
        run_url: run_url.as_deref(),
        artifact_url: None,
        coverage: None,
        harness: None,
    };
    let text = crate::output::text(|w| crate::output::summary::proof(&proof, w));
    let mut degraded = Vec::new();
    let target = Target {
        client,
        repo,
        pr,
        head: &head,
    };
    let body = comment::body(run_id, &head, &text);
    keep_comment(log, options, &target, &body, &mut degraded)?;
    let description: String = format!("run {run_id}: {why}").chars().take(140).collect();
    let status = NewStatus {
        state: "failure",
        context: CONTEXT,
        description: &description,
        target_url: run_url.as_deref(),
    };
    if let Some(e) = set_status(log, client, repo, &head, run_id, &status)? {
        degraded.push(e);
    }
    summarize(log, github, &degraded, &text);
    Ok(exit)
}
