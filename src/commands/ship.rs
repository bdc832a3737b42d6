//! `aayu ship <pr>` (SPEC §6): lands only the pack the base branch's merge gate built on the pull request's
//! exact head, after checking every hash and where the run came from, and a human's approval; then
//! squash-merges, completes the story and deletes the head branch. Every run passed over is listed with its
//! reason; when none qualifies, exit 4 and nothing is written. A repeat after a failure re-verifies the gate's
//! artifact from scratch and completes without duplicating anything.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::json;

use crate::commands::{Context, Failure, short, write_out};
use crate::exit::ExitStatus;
use crate::github::{GitHubError, Pull, RunFilter, WorkflowRun};
use crate::ledger::store::{Author, Existing, Ledger};
use crate::pack::ARTIFACT;
use crate::pack::verify::{self, Stored};
use crate::pack::{self, Pack};
use crate::pack::{AuthorityKind, Store};
use crate::publish::archive::{self, ArchiveError, Limits, Unpacked};
use crate::settings::options::ShipOptions;
use crate::settings::remote::{self, Remote};
use crate::story::ready;

mod provenance;

use provenance::{Attestor, Provenance, Unattested};

/// The artifact the gate's merge job uploads beside its pack: how long each unit took, for the sharded
/// gate's plan job to balance its shards. Not proof: it lands beside the authoritative pack, unlisted.
const TIMINGS_ARTIFACT: &str = "aayudha-timings";

/// The one entry of the timings zip, and its name on the ledger (`proof/<story>/<head>/authoritative/`).
const TIMINGS_FILE: &str = "timings.json";

/// Where the gate's own pack.json and its verified attestation land, under the authoritative folder.
const GATE_DIR: &str = "gate";

/// The attestation's file name in [`GATE_DIR`] (as `gh attestation verify --bundle` reads it).
const BUNDLE_FILE: &str = "attestation.sigstore.json";

/// The most a timings file may hold.
const TIMINGS_MAX_BYTES: u64 = 4 << 20;

/// The run that qualified, and what it proves.
struct Qualified {
    run: WorkflowRun,
    artifact_id: u64,
    unpacked: Unpacked,
    /// The gate's signed attestation of the pack, as far as `[proof] attestation` asks.
    provenance: Provenance,
}

/// The workflow file a run's `path` names: `owner/repo/` prefix and `@ref` suffix removed.
fn run_workflow(path: &str, repo: &str) -> (String, Option<String>) {
    let (file, reference) = match path.split_once('@') {
        Some((f, r)) => (f, Some(r.to_string())),
        None => (path, None),
    };
    let file = file.strip_prefix(&format!("{repo}/")).unwrap_or(file);
    (file.to_string(), reference)
}

/// The gate's artifacts split for landing: data artifacts as ledger files under `dir`, media (by kind or by
/// content) never — for the bucket of `[proof] media` when there is one (`bucket`), else they stay
/// `store: none`.
fn split_artifacts(
    authoritative: &mut Pack,
    unpacked: &Unpacked,
    dir: &str,
    bucket: bool,
) -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>) {
    let (mut files, mut media) = (BTreeMap::new(), BTreeMap::new());
    for a in authoritative.artifacts.iter_mut() {
        let Some(bytes) = unpacked.artifacts.get(&a.path) else {
            continue;
        };
        if a.tombstone.is_some() || !matches!(a.store, Store::Git | Store::None) {
            continue;
        }
        if a.store == Store::None || crate::publish::media::is_media(a, bytes) {
            a.store = Store::None;
            if bucket {
                media.insert(a.path.clone(), bytes.clone());
            }
            continue;
        }
        files.insert(format!("{dir}/artifacts/{}", a.path), bytes.clone());
    }
    (files, media)
}

/// The pack's harness report (`reports/harness.json`, verified with the pack), when it has one.
fn harness_of(q: &Qualified) -> Option<crate::floors::harness::Report> {
    q.unpacked
        .artifacts
        .get("reports/harness.json")
        .and_then(|bytes| serde_json::from_slice(bytes).ok())
}

/// The plan's harness lines: each change the pack shows and who approved them (nothing without any).
fn harness_lines(report: Option<&crate::floors::harness::Report>) -> String {
    let Some(report) = report.filter(|h| !h.changes.is_empty()) else {
        return String::new();
    };
    let mut lines = format!(
        "  harness changed ({}), approved by {}:\n",
        report.changes.len(),
        report
            .waived_by
            .as_deref()
            .unwrap_or("nobody (the floor was advisory)")
    );
    for c in &report.changes {
        lines.push_str(&format!("    {}: {}\n", c.place(), c.what));
    }
    lines
}

/// What a ship will do, said before it does it (and all that `--dry-run` says).
struct Plan<'a> {
    q: &'a Qualified,
    pull: &'a Pull,
    story: u64,
    approver: &'a str,
    dir: &'a str,
    record_path: &'a str,
    files: usize,
    media: usize,
    /// Whether the gate's timings land beside the pack.
    timings: bool,
}

impl Plan<'_> {
    fn text(&self, config: &crate::config::Config, remote: &Remote) -> String {
        let (q, pull, story) = (self.q, self.pull, self.story);
        let (approver, dir, record_path) = (self.approver, self.dir, self.record_path);
        let provenance = q
            .provenance
            .plan_line()
            .map(|line| format!("  {line}\n"))
            .unwrap_or_default();
        let plan = format!(
            "run {} (attempt {}) proves pull request #{} at {} for story #{story}; pack.json sha256 {}\n{provenance}  approved by {approver}\n{}  land {dir}/ ({} files{}) and {record_path} on `{}`\n  squash-merge #{}, append ## Complete to story #{story}{}\n",
            q.run.id,
            q.run.run_attempt,
            pull.number,
            short(&pull.head_sha),
            q.unpacked.pack_sha256,
            harness_lines(harness_of(q).as_ref()),
            self.files,
            if self.timings {
                format!(", and the gate's {TIMINGS_FILE}")
            } else {
                String::new()
            },
            config.ledger.branch,
            pull.number,
            if pull.head_repo.as_deref() == Some(remote.repo.as_str()) {
                format!(", delete the branch {}", pull.head_ref)
            } else {
                String::new()
            }
        );
        if self.media == 0 {
            plan
        } else {
            format!(
                "{plan}  upload {} to {}\n",
                crate::log::count(self.media, "media file", "media files"),
                config.proof.media
            )
        }
    }
}

/// A merged pull request that aayu shipped: complete what a failure may have left (the story's section,
/// the branch); one that aayu did not ship is refused.
fn already_shipped(
    ctx: &mut Context,
    options: &ShipOptions,
    ledger: &Ledger,
    remote: &Remote,
    pull: &Pull,
    story: u64,
) -> Result<ExitStatus, Failure> {
    let record_path = format!("ship/{story}.json");
    let Some(record) = ledger.read(&record_path).map_err(Failure::from)? else {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!(
                "pull request #{} is merged, but not by aayu ship: no {record_path} on the ledger",
                options.pr
            ),
        ));
    };
    let record: serde_json::Value = serde_json::from_slice(&record)
        .map_err(|e| Failure::unexpected(format!("{record_path} is not JSON")).caused_by(e))?;
    if record["pr"] != json!(options.pr) {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!(
                "{record_path} records pull request {}, not #{}",
                record["pr"], options.pr
            ),
        ));
    }
    let approver = record["approver"].as_str().unwrap_or_default().to_string();
    finish(
        ctx,
        remote,
        pull,
        story,
        &approver,
        &record,
        options.dry_run,
    )?;
    write_out(
        ctx.out,
        &format!(
            "pull request #{} was already shipped; nothing left to do\n",
            options.pr
        ),
    )?;
    Ok(ExitStatus::Ok)
}

/// The story's Ready snapshot on the ledger branch, or why there is none to check a pack against.
fn snapshot_on_ledger(
    ledger: &Ledger,
    story: u64,
    branch: &str,
) -> Result<Result<ready::Snapshot, String>, Failure> {
    let snapshot_path = crate::story::ready_path(story);
    Ok(match ledger.read(&snapshot_path).map_err(Failure::from)? {
        Some(bytes) => ready::parse(
            &String::from_utf8_lossy(&bytes),
            &format!("{branch}:{snapshot_path}"),
        )
        .map_err(|e| e.to_string()),
        None => Err(format!(
            "story #{story} has no Ready snapshot on the `{branch}` branch"
        )),
    }
    .and_then(|s| match s.meta.local_file_refusal() {
        Some(why) => Err(why),
        None => Ok(s),
    }))
}

/// The newest run of the gate workflow that qualifies to ship the pull request; each run passed over is
/// said on stderr with why.
fn first_qualifying(
    ctx: &mut Context,
    gate: &Gate,
    pull: &Pull,
    (pr, story): (u64, u64),
    snapshot: &Result<ready::Snapshot, String>,
) -> Result<Qualified, Failure> {
    let (remote, gate_workflow) = (gate.remote, gate.workflow);
    let runs = remote
        .client
        .workflow_runs(&remote.repo, gate_workflow, &RunFilter::default())
        .map_err(Failure::from)?;
    let mut passed_over = String::new();
    let mut found = Ok(None);
    let (mut unattested, mut failed) = (false, false);
    for run in &runs {
        match gate.qualify(run, pull, story, snapshot) {
            Ok(Ok(q)) => {
                found = Ok(Some(q));
                break;
            }
            Ok(Err(why)) => {
                unattested |= matches!(why, NotQualified::Unattested(_));
                failed |= matches!(why, NotQualified::NotSuccessful { .. });
                // A reason of several lines (one a bundle) names the run on each; what a line quotes from
                // outside never moves the cursor or colours the terminal.
                for line in why.to_string().lines() {
                    let _ = writeln!(
                        passed_over,
                        "run {}: {}",
                        run.id,
                        crate::log::controls_escaped(line)
                    );
                }
            }
            Err(stop) => {
                found = Err(stop);
                break;
            }
        }
    }
    let _ = ctx.err.write_all(passed_over.as_bytes());
    found?.ok_or_else(|| {
        Failure::new(
            ExitStatus::ProofFails,
            format!(
                "no run of {gate_workflow} qualifies to ship pull request #{pr} ({} looked at)",
                crate::log::count(runs.len(), "run", "runs")
            ),
        )
        .with_hint(if unattested {
            "the gate workflow's `attest` job signs the pack: copy it from this release's template (docs/action.md, \"The signing job\") and let the gate run again; where it cannot run (a private repository, GitHub Enterprise Server), set `[proof] attestation = \"off\"`"
        } else if failed {
            "a run whose latest attempt failed (its attest job included) qualifies once \"Re-run failed jobs\" succeeds on it; else let the merge gate run on the pull request's current head"
        } else {
            "let the merge gate run on the pull request's current head (pull_request_target), then ship again"
        })
    })
}

/// Why a run of the gate workflow does not qualify to ship the pull request (said on stderr, one line a run).
#[derive(Debug, thiserror::Error)]
enum NotQualified {
    #[error("another workflow ({file}), not {gate}")]
    OtherWorkflow { file: String, gate: String },
    #[error("the workflow file of {reference}, not of the default branch {default_branch}")]
    NotDefaultBranch {
        reference: String,
        default_branch: String,
    },
    #[error("ran in {ran_in}, not {repo}")]
    OtherRepository { ran_in: String, repo: String },
    #[error(
        "a pull_request run: the pull request's own copy of the gate; only pull_request_target runs count"
    )]
    PullRequestRun,
    #[error("a {event} run; only pull_request_target runs count")]
    OtherEvent { event: String },
    #[error("attempt {attempt} is {status}")]
    NotCompleted { attempt: u64, status: String },
    #[error("attempt {attempt} ended {}", .conclusion.as_deref().unwrap_or("without a conclusion"))]
    NotSuccessful {
        attempt: u64,
        conclusion: Option<String>,
    },
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error("no `{ARTIFACT}` artifact")]
    NoArtifact,
    #[error("{count} artifacts named `{ARTIFACT}`: which one is the gate's cannot be told")]
    ManyArtifacts { count: usize },
    #[error("its `{ARTIFACT}` artifact has expired")]
    Expired,
    #[error("its `{ARTIFACT}` artifact has expired (410)")]
    Gone,
    #[error("its `{ARTIFACT}` artifact does not verify: {0}")]
    Archive(archive::ArchiveError),
    #[error("its pack proves pull request #{pack}, not #{pull}")]
    OtherPull { pack: u64, pull: u64 },
    #[error("its pack names story #{pack}, not #{story}")]
    OtherStory { pack: u64, story: u64 },
    #[error("its pack proves {}, but the pull request's head is {}", short(.pack), short(.head))]
    OtherHead { pack: String, head: String },
    #[error(
        "no `aayudha/proof` status on {} names run {run} and pack sha256 {}",
        short(.head),
        short(.sha256)
    )]
    Unbound {
        head: String,
        run: u64,
        sha256: String,
    },
    #[error(transparent)]
    Unattested(#[from] Unattested),
    #[error("its pack names no base commit (`base_sha`): where it was built cannot be told")]
    NoBase,
    #[error(
        "its pack was built on {}, which is not on `{branch}` ({})",
        short(.base),
        if .status.is_empty() { "not in the repository".to_string() } else { format!("the comparison says {}", .status) }
    )]
    BaseNotOnBranch {
        base: String,
        branch: String,
        status: String,
    },
    #[error("its pack does not verify: {}{}", .first.said(), and_more(*.more))]
    DoesNotVerify { first: verify::Finding, more: usize },
    #[error("the {floor} floor does not hold ({result}){}", detail_after(.detail))]
    FloorFails {
        floor: String,
        result: String,
        detail: String,
    },
}

/// `: <detail>` after a floor's result; nothing when the floor said nothing more.
fn detail_after(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// ` (and 2 more)` after the first of several failures; nothing after the only one.
fn and_more(more: usize) -> String {
    if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    }
}

/// What a run of the gate workflow is checked against: the repository, its attestation rule, the gate
/// workflow and the default branch.
struct Gate<'a> {
    remote: &'a Remote,
    attestor: &'a Attestor,
    workflow: &'a str,
    default_branch: &'a str,
}

impl Gate<'_> {
    /// Why a run does not qualify (`Ok(Err(_))`), or what it proves: where it ran, its artifact, the
    /// pack's binding to the pull request and the story, the status naming both, the gate's signed
    /// attestation, the pack's base on the branch it lands on, and the pack's own verification. `Err`
    /// when a check could not be made (GitHub failed): ship stops rather than pass a run over or let one
    /// through.
    fn qualify(
        &self,
        run: &WorkflowRun,
        pull: &Pull,
        story: u64,
        snapshot: &Result<ready::Snapshot, String>,
    ) -> Result<Result<Qualified, NotQualified>, Failure> {
        let remote = self.remote;
        let checked = || -> Result<(u64, Unpacked), NotQualified> {
            check_origin(remote, run, self.workflow, self.default_branch)?;
            let (artifact_id, unpacked) = gate_artifact(remote, run)?;
            check_binding(&unpacked.pack, pull, story)?;
            check_status(remote, run, pull, &unpacked)?;
            Ok((artifact_id, unpacked))
        };
        let (artifact_id, unpacked) = match checked() {
            Ok(found) => found,
            Err(why) => return Ok(Err(why)),
        };
        let provenance = match self.attestor.check(remote, run, &unpacked.pack_sha256)? {
            Ok(provenance) => provenance,
            Err(why) => return Ok(Err(why.into())),
        };
        if let Err(why) = check_base(remote, &unpacked.pack, pull)? {
            return Ok(Err(why));
        }
        if let Err(why) = check_verifies(&unpacked, pull, snapshot) {
            return Ok(Err(why));
        }
        Ok(Ok(Qualified {
            run: run.clone(),
            artifact_id,
            unpacked,
            provenance,
        }))
    }
}

/// The pack's base commit is on the branch ship merges into (`compare/{base_sha}...{base_ref}` answers
/// `ahead` or `identical`): a pack the gate built while the pull request targeted another branch is
/// refused. A 404 (the commit is not in the repository) refuses the run; any other failure stops ship.
fn check_base(
    remote: &Remote,
    pack: &Pack,
    pull: &Pull,
) -> Result<Result<(), NotQualified>, Failure> {
    if pack.base_sha.is_empty() {
        return Ok(Err(NotQualified::NoBase));
    }
    let status = match remote
        .client
        .compare_status(&remote.repo, &pack.base_sha, &pull.base_ref)
    {
        Ok(status) => status,
        Err(GitHubError::NotFound { .. }) => String::new(),
        Err(e) => return Err(Failure::from(e)),
    };
    Ok(match status.as_str() {
        "ahead" | "identical" => Ok(()),
        _ => Err(NotQualified::BaseNotOnBranch {
            base: pack.base_sha.clone(),
            branch: pull.base_ref.clone(),
            status,
        }),
    })
}

/// The run is the default branch's gate workflow, in this repository, on `pull_request_target`, and
/// completed successfully.
fn check_origin(
    remote: &Remote,
    run: &WorkflowRun,
    gate_workflow: &str,
    default_branch: &str,
) -> Result<(), NotQualified> {
    let (file, reference) = run_workflow(&run.path, remote.repo.as_str());
    if file != gate_workflow {
        return Err(NotQualified::OtherWorkflow {
            file,
            gate: gate_workflow.to_string(),
        });
    }
    let on_default = match &reference {
        Some(r) => *r == format!("refs/heads/{default_branch}"),
        None => run.head_branch == default_branch,
    };
    if !on_default {
        return Err(NotQualified::NotDefaultBranch {
            reference: reference.unwrap_or_else(|| run.head_branch.clone()),
            default_branch: default_branch.to_string(),
        });
    }
    if run.repository != remote.repo.as_str() {
        return Err(NotQualified::OtherRepository {
            ran_in: run.repository.clone(),
            repo: remote.repo.to_string(),
        });
    }
    match run.event.as_str() {
        "pull_request_target" => {}
        "pull_request" => return Err(NotQualified::PullRequestRun),
        other => {
            return Err(NotQualified::OtherEvent {
                event: other.to_string(),
            });
        }
    }
    if run.status != "completed" {
        return Err(NotQualified::NotCompleted {
            attempt: run.run_attempt,
            status: run.status.clone(),
        });
    }
    if run.conclusion.as_deref() != Some("success") {
        return Err(NotQualified::NotSuccessful {
            attempt: run.run_attempt,
            conclusion: run.conclusion.clone(),
        });
    }
    Ok(())
}

/// The run's one gate artifact, downloaded and unpacked (its hashes checked), with its id.
fn gate_artifact(remote: &Remote, run: &WorkflowRun) -> Result<(u64, Unpacked), NotQualified> {
    let artifacts = remote
        .client
        .run_artifacts(&remote.repo, run.id, ARTIFACT)?;
    let artifact = match artifacts.as_slice() {
        [] => return Err(NotQualified::NoArtifact),
        [one] => one.clone(),
        more => return Err(NotQualified::ManyArtifacts { count: more.len() }),
    };
    if artifact.expired {
        return Err(NotQualified::Expired);
    }
    let limits = Limits::default();
    let zip = match remote
        .client
        .artifact_zip(&remote.repo, artifact.id, limits.total_bytes)
    {
        Ok(zip) => zip,
        Err(GitHubError::Gone { .. }) => return Err(NotQualified::Gone),
        Err(e) => return Err(e.into()),
    };
    let unpacked = archive::read(&zip, limits).map_err(NotQualified::Archive)?;
    Ok((artifact.id, unpacked))
}

/// Why the gate run's timings do not land with its pack: said as a notice, and ship goes on without them
/// (they are not proof).
#[derive(Debug, thiserror::Error)]
enum NoTimings {
    #[error("it has no `{TIMINGS_ARTIFACT}` artifact")]
    NoArtifact,
    #[error(
        "{count} artifacts are named `{TIMINGS_ARTIFACT}`: which one is the gate's cannot be told"
    )]
    ManyArtifacts { count: usize },
    #[error("its `{TIMINGS_ARTIFACT}` artifact has expired")]
    Expired,
    #[error("its `{TIMINGS_ARTIFACT}` artifact cannot be had: {0}")]
    GitHub(#[from] GitHubError),
    #[error("its `{TIMINGS_ARTIFACT}` artifact is refused: {0}")]
    Archive(#[from] ArchiveError),
    #[error("its `{TIMINGS_ARTIFACT}` zip holds `{0}`; it may hold `{TIMINGS_FILE}` only")]
    OtherEntry(String),
    #[error("its `{TIMINGS_ARTIFACT}` zip has no `{TIMINGS_FILE}`")]
    NoFile,
    #[error("its `{TIMINGS_FILE}` {0}")]
    Invalid(String),
}

/// The bytes of the run's `aayudha-timings` artifact when it is there, one, a zip of `timings.json` alone
/// and a timings document; else a `notice:` saying why, and `None`: timings are not proof, and their
/// absence never stops a ship.
fn gate_timings(ctx: &mut Context, remote: &Remote, run: &WorkflowRun) -> Option<Vec<u8>> {
    match timings_of(remote, run) {
        Ok(bytes) => Some(bytes),
        Err(why) => {
            let _ = writeln!(
                ctx.err,
                "notice: run {}'s timings do not land with the pack: {why}",
                run.id
            );
            None
        }
    }
}

/// The run's one timings artifact, downloaded and read in memory with tight limits, and checked.
fn timings_of(remote: &Remote, run: &WorkflowRun) -> Result<Vec<u8>, NoTimings> {
    let artifacts = remote
        .client
        .run_artifacts(&remote.repo, run.id, TIMINGS_ARTIFACT)?;
    let artifact = match artifacts.as_slice() {
        [] => return Err(NoTimings::NoArtifact),
        [one] => one,
        more => return Err(NoTimings::ManyArtifacts { count: more.len() }),
    };
    if artifact.expired {
        return Err(NoTimings::Expired);
    }
    let limits = Limits {
        // More than one is refused below, by name; a few are read so that the notice can name one.
        entries: 8,
        entry_bytes: TIMINGS_MAX_BYTES,
        total_bytes: TIMINGS_MAX_BYTES,
    };
    // The zip's own headers on top of its one entry, stored or deflated.
    let download_limit = TIMINGS_MAX_BYTES + (64 << 10);
    let zip = match remote
        .client
        .artifact_zip(&remote.repo, artifact.id, download_limit)
    {
        Ok(zip) => zip,
        Err(GitHubError::Gone { .. }) => return Err(NoTimings::Expired),
        Err(e) => return Err(e.into()),
    };
    let mut entries = archive::entries(&zip, limits)?;
    let bytes = entries.remove(TIMINGS_FILE);
    if let Some(other) = entries.into_keys().next() {
        return Err(NoTimings::OtherEntry(other));
    }
    let bytes = bytes.ok_or(NoTimings::NoFile)?;
    valid_timings(&bytes).map_err(NoTimings::Invalid)?;
    Ok(bytes)
}

/// Whether `timings.json`'s bytes are a timings document, or what is wrong with them (after "its
/// `timings.json`"): at most 4 MiB, a JSON object with `schema_version` 1 and a `units` list. Only as much
/// as ship needs to land it; the sharded gate's parser reads the units.
fn valid_timings(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 > TIMINGS_MAX_BYTES {
        return Err(format!(
            "holds {} bytes, over the limit of {TIMINGS_MAX_BYTES}",
            bytes.len()
        ));
    }
    crate::shard::timings::Timings::parse(bytes)
        .map(|_| ())
        .map_err(|e| format!("does not read: {e}"))
}

/// The pack proves this pull request, at its head, for this story.
fn check_binding(pack: &Pack, pull: &Pull, story: u64) -> Result<(), NotQualified> {
    if pack.pr != pull.number {
        return Err(NotQualified::OtherPull {
            pack: pack.pr,
            pull: pull.number,
        });
    }
    if pack.story != story {
        return Err(NotQualified::OtherStory {
            pack: pack.story,
            story,
        });
    }
    if pack.pr_head_sha != pull.head_sha {
        return Err(NotQualified::OtherHead {
            pack: pack.pr_head_sha.clone(),
            head: pull.head_sha.clone(),
        });
    }
    Ok(())
}

/// The privileged `pack` job binds the run to the head with a status naming both.
fn check_status(
    remote: &Remote,
    run: &WorkflowRun,
    pull: &Pull,
    unpacked: &Unpacked,
) -> Result<(), NotQualified> {
    let statuses = remote.client.statuses(&remote.repo, &pull.head_sha)?;
    let bound = statuses.iter().any(|s| {
        s.context == "aayudha/proof"
            && s.description.as_deref().is_some_and(|d| {
                d.contains(&format!("run {} ", run.id)) && d.contains(&unpacked.pack_sha256)
            })
    });
    if !bound {
        return Err(NotQualified::Unbound {
            head: pull.head_sha.clone(),
            run: run.id,
            sha256: unpacked.pack_sha256.clone(),
        });
    }
    Ok(())
}

/// The pack verifies against its artifacts, the story's snapshot and the head, and every floor holds.
fn check_verifies(
    unpacked: &Unpacked,
    pull: &Pull,
    snapshot: &Result<ready::Snapshot, String>,
) -> Result<(), NotQualified> {
    let pack = &unpacked.pack;
    let read = |a: &pack::Artifact| -> Stored {
        match unpacked.artifacts.get(&a.path) {
            Some(bytes) => Stored::Bytes(bytes.clone()),
            None => Stored::Missing,
        }
    };
    let outcome = verify::verify(
        pack,
        &read,
        Some(snapshot),
        &Ok(Some(pull.head_sha.clone())),
    );
    if let Some(first) = outcome.failures.first() {
        return Err(NotQualified::DoesNotVerify {
            first: first.clone(),
            more: outcome.failures.len() - 1,
        });
    }
    if let Some(c) = pack.checks.iter().find(|c| !c.holds()) {
        return Err(NotQualified::FloorFails {
            floor: c.floor.clone(),
            result: c.result.to_string(),
            detail: c.detail.clone(),
        });
    }
    Ok(())
}

/// The approving reviewer, by the library's one rule ([`crate::story::approval`]).
fn approver(remote: &Remote, pull: &Pull) -> Result<Option<String>, Failure> {
    let asked = crate::story::approval::Asked {
        number: pull.number,
        head_sha: &pull.head_sha,
        author: Some(&pull.author),
    };
    crate::story::approval::approver(&remote.client, &remote.repo, &asked).map_err(Failure::from)
}

pub fn run(ctx: &mut Context, options: ShipOptions) -> Result<ExitStatus, Failure> {
    let repo = super::repo(ctx)?;
    if ctx.env.in_ci() {
        return Err(
            Failure::usage("`aayu ship` is a person's decision: it does not run in CI")
                .with_hint("run it on your machine once the merge gate has proven the head"),
        );
    }
    let remote = remote::resolve(
        options.repo.as_deref(),
        ctx.env,
        ctx.github,
        repo.origin_slug(),
    )?;
    // The default branch's configuration on GitHub, never the working tree's: a shipper with the pull
    // request checked out would otherwise go by its `[gate] workflow` and `[ledger] branch`.
    let (config, _) = crate::config::Config::of_default_branch(&remote.client, &remote.repo, None)?;
    let pull = remote
        .client
        .pull(&remote.repo, options.pr)
        .map_err(Failure::from)?;
    let story = pull
        .body
        .as_deref()
        .and_then(crate::story::story_in_body)
        .ok_or_else(|| {
            Failure::usage(format!("pull request #{} names no story", options.pr)).with_hint(
                "add a `Story: #N` line (or `Fixes #N`) to its body, and let the gate run",
            )
        })?;
    let ledger = Ledger::open(repo.root(), &config.ledger.branch, remote.network.clone())
        .map_err(Failure::from)?;
    ledger.fetch().map_err(Failure::from)?;
    let record_path = format!("ship/{story}.json");
    if pull.merged {
        // Shipped before: complete what a failure may have left (the story's section, the branch).
        return already_shipped(ctx, &options, &ledger, &remote, &pull, story);
    }
    if pull.state != "open" {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!("pull request #{} is closed", options.pr),
        ));
    }
    let repository = remote
        .client
        .repository(&remote.repo)
        .map_err(Failure::from)?;
    let snapshot = snapshot_on_ledger(&ledger, story, &config.ledger.branch)?;

    // The trusted root and what the gate's own signature must say, read once for every run.
    let attestor = Attestor::new(&config, &remote, &repository)?;

    // Every run of the gate workflow, newest first, with no server-side filter: the first that qualifies.
    let gate = Gate {
        remote: &remote,
        attestor: &attestor,
        workflow: &config.gate.workflow,
        default_branch: &repository.default_branch,
    };
    let q = first_qualifying(ctx, &gate, &pull, (options.pr, story), &snapshot)?;

    // A person's approval.
    let (login, id, approver) = approval(&remote, &pull, &q, options.solo_bypass)?;

    // The same run's timings, beside the pack when they are usable; never a reason not to ship.
    let timings = gate_timings(ctx, &remote, &q.run);

    // What lands: the gate's pack as authoritative, its data artifacts, the ship record.
    let writer = format!("{login} (aayu ship)");
    let mut landing = landing(&config, &q, &pull, story, &approver, &writer, &record_path)?;
    landing.timings = timings;
    let plan = Plan {
        q: &q,
        pull: &pull,
        story,
        approver: &approver,
        dir: &landing.dir,
        record_path: &record_path,
        files: landing.files.len(),
        media: landing.media.len(),
        timings: landing.timings.is_some(),
    }
    .text(&config, &remote);
    if options.dry_run {
        write_out(ctx.out, &format!("dry run — nothing written:\n{plan}"))?;
        return Ok(ExitStatus::Ok);
    }
    let record = landing.record.clone();
    let author = ledger.author(&login, id);
    let merged = land(ctx, &config, &ledger, &remote, &pull, landing, &author)?;
    let pull = Pull {
        merged: true,
        ..pull
    };
    finish(ctx, &remote, &pull, story, &approver, &record, false)?;
    write_out(
        ctx.out,
        &format!("{plan}shipped: merge commit {}\n", short(&merged)),
    )?;
    Ok(ExitStatus::Ok)
}

/// What the ship record's `approver` says after the login when nobody else approved: `alice (--solo-bypass)`.
const SOLO_BYPASS: &str = " (--solo-bypass)";

/// The token's user (login and id) and who approved the head: a reviewer with write access, or the user
/// with `--solo-bypass` (recorded); exit 4 when nobody did.
fn approval(
    remote: &Remote,
    pull: &Pull,
    q: &Qualified,
    solo_bypass: bool,
) -> Result<(String, u64, String), Failure> {
    let (login, id) = remote
        .client
        .user()
        .map_err(Failure::from)?
        .ok_or_else(|| {
            Failure::usage("the token has no user: `aayu ship` needs a person's token")
        })?;
    let approver = match approver(remote, pull)? {
        Some(who) => who,
        None if solo_bypass => format!("{login}{SOLO_BYPASS}"),
        None => {
            return Err(Failure::new(
                ExitStatus::ProofFails,
                format!(
                    "run {} proves the head, but nobody with write access other than {} approved {}",
                    q.run.id,
                    pull.author,
                    short(&pull.head_sha)
                ),
            )
            .with_hint("ask a reviewer to approve the head; alone on the repository, `--solo-bypass` (recorded)"));
        }
    };
    Ok((login, id, approver))
}

/// What a ship lands on the ledger branch and in the bucket.
struct Landing {
    /// The gate's pack as the authoritative one.
    authoritative: Pack,
    /// `proof/<story>/<head>/authoritative`.
    dir: String,
    /// The ledger files: the data artifacts and the ship record (the pack is added once media are up).
    files: BTreeMap<String, Vec<u8>>,
    /// The media for the bucket of `[proof] media`.
    media: BTreeMap<String, Vec<u8>>,
    /// The gate run's `timings.json`, landed beside the pack (not proof: pack.json does not list it).
    timings: Option<Vec<u8>>,
    /// The ship record.
    record: serde_json::Value,
    /// The ledger commit's message.
    message: String,
}

/// What lands: the gate's pack as authoritative, its data artifacts, the ship record.
fn landing(
    config: &crate::config::Config,
    q: &Qualified,
    pull: &Pull,
    story: u64,
    approver: &str,
    writer: &str,
    record_path: &str,
) -> Result<Landing, Failure> {
    let mut authoritative: Pack = q.unpacked.pack.clone();
    authoritative.authority = pack::Authority {
        kind: AuthorityKind::Authoritative,
        workflow: config.gate.workflow.clone(),
        run_id: q.run.id,
        writer: writer.to_string(),
    };
    let dir = format!("proof/{story}/{}/authoritative", pull.head_sha);
    let bucket = !config.proof.media.trim().is_empty();
    let (mut files, media) = split_artifacts(&mut authoritative, &q.unpacked, &dir, bucket);
    let record = json!({
        "schema_version": 1,
        "story": story,
        "pr": pull.number,
        "head": pull.head_sha,
        "gate_run": q.run.id,
        "gate_run_attempt": q.run.run_attempt,
        "artifact": q.artifact_id,
        "pack_sha256": q.unpacked.pack_sha256,
        "approver": approver,
        "solo_bypass": approver.ends_with(SOLO_BYPASS),
        "writer": writer,
        "harness": harness_of(q).map(|h| json!({
            "changes": h.changes,
            "approved_by": h.waived_by,
        })),
        "attestation": q.provenance.record(),
    });
    let mut record_bytes = serde_json::to_vec_pretty(&record)
        .map_err(|e| Failure::unexpected("cannot write the ship record").caused_by(e))?;
    record_bytes.push(b'\n');
    files.insert(record_path.to_string(), record_bytes);
    // The gate's own bytes, unchanged, beside the pack ship rewrites: what the attestation signs.
    files.insert(
        format!("{dir}/{GATE_DIR}/pack.json"),
        q.unpacked.pack_bytes.clone(),
    );
    if let Provenance::Verified { bundle, .. } = &q.provenance {
        files.insert(format!("{dir}/{GATE_DIR}/{BUNDLE_FILE}"), bundle.clone());
    }
    let message = format!(
        "ship: story #{story}, pull request #{} at {} (run {})",
        pull.number,
        short(&pull.head_sha),
        q.run.id
    );
    Ok(Landing {
        authoritative,
        dir,
        files,
        media,
        timings: None,
        record,
        message,
    })
}

/// Lands it: the media first (the landed pack says `bucket` only for what the bucket holds), then the
/// pack, the files and the gate's timings on the ledger branch in one commit, then the squash merge; its
/// merge commit.
fn land(
    ctx: &mut Context,
    config: &crate::config::Config,
    ledger: &Ledger,
    remote: &Remote,
    pull: &Pull,
    landing: Landing,
    author: &Author,
) -> Result<String, Failure> {
    let Landing {
        mut authoritative,
        dir,
        mut files,
        media,
        timings,
        message,
        ..
    } = landing;
    crate::publish::media::upload(
        ctx.env,
        ctx.err,
        &config.proof.media,
        config.proof.retention_days,
        &mut authoritative,
        &media,
    )?;
    let mut pack_json = serde_json::to_vec_pretty(&authoritative)
        .map_err(|e| Failure::unexpected("cannot write the pack").caused_by(e))?;
    pack_json.push(b'\n');
    files.insert(format!("{dir}/pack.json"), pack_json);
    if let Some(timings) = timings {
        files.insert(format!("{dir}/{TIMINGS_FILE}"), timings);
    }
    ledger
        .write(&files, Existing::Replace, &message, author)
        .map_err(Failure::from)?;
    remote
        .client
        .squash_merge(&remote.repo, pull.number, &pull.head_sha)
        .map_err(Failure::from)
}

/// After the merge: the story's `## Complete` section (once) and the head branch deleted (not a fork's).
fn finish(
    ctx: &mut Context,
    remote: &Remote,
    pull: &Pull,
    story: u64,
    approver: &str,
    record: &serde_json::Value,
    dry_run: bool,
) -> Result<(), Failure> {
    if dry_run {
        return Ok(());
    }
    let issue = remote
        .client
        .issue(&remote.repo, story)
        .map_err(Failure::from)?;
    let body = issue.body.unwrap_or_default();
    let marker = format!("<!-- aayudha:complete pr {} -->", pull.number);
    if !body.contains(&marker) {
        let section = format!(
            "\n\n## Complete\n\n{marker}\nShipped by pull request #{} at `{}`, approved by {}, on the merge gate's run {} (pack.json sha256 `{}`); the authoritative pack is on the ledger under `proof/{story}/{}/authoritative/`.\n",
            pull.number,
            pull.head_sha,
            match approver.strip_suffix(SOLO_BYPASS) {
                Some(login) =>
                    format!("{} (`--solo-bypass`)", crate::output::markdown::code(login)),
                None => crate::output::markdown::code(approver),
            },
            record["gate_run"],
            record["pack_sha256"].as_str().unwrap_or_default(),
            pull.head_sha
        );
        remote
            .client
            .update_issue(
                &remote.repo,
                story,
                Some(&format!("{}{section}", body.trim_end())),
                None,
            )
            .map_err(Failure::from)?;
    }
    if record["solo_bypass"] == json!(true) {
        let note = format!(
            "<!-- aayudha:solo-bypass -->\nShipped with `--solo-bypass` by {} (no second person approved).",
            crate::output::markdown::code(approver.strip_suffix(SOLO_BYPASS).unwrap_or(approver))
        );
        let already = remote
            .client
            .comments(&remote.repo, pull.number)
            .map_err(Failure::from)?
            .iter()
            .any(|c| c.body.starts_with("<!-- aayudha:solo-bypass -->"));
        if !already {
            remote
                .client
                .create_comment(&remote.repo, pull.number, &note)
                .map_err(Failure::from)?;
        }
    }
    if pull.head_repo.as_deref() == Some(remote.repo.as_str()) {
        match remote
            .client
            .delete_ref(&remote.repo, &format!("heads/{}", pull.head_ref))
        {
            Ok(()) => {}
            // Already deleted (a repeat), or GitHub deleted it on merge.
            Err(GitHubError::Unprocessable { .. }) | Err(GitHubError::NotFound { .. }) => {}
            Err(e) => {
                let _ = writeln!(
                    ctx.err,
                    "warning: the branch {} was not deleted: {e}",
                    pull.head_ref
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::floors::harness::Report;
    use crate::floors::harness::{Change, Kind};

    #[test]
    fn the_plan_names_each_harness_change_and_who_approved_it() {
        let mut report = Report {
            schema_version: 1,
            changes: vec![
                Change::new(
                    "tests/conftest.py",
                    3,
                    "python",
                    Kind::Conftest,
                    "a conftest (changed)",
                ),
                Change::new(
                    "odd\nname.pth",
                    1,
                    "python",
                    Kind::Startup,
                    "a .pth file (added)",
                ),
            ],
            ..Report::default()
        };
        assert_eq!(super::harness_lines(None), "");
        assert_eq!(super::harness_lines(Some(&Report::default())), "");
        let advisory = super::harness_lines(Some(&report));
        report.waived_by = Some("hubot".into());
        let approved = super::harness_lines(Some(&report));
        insta::assert_snapshot!("ship_harness_lines", format!("{advisory}{approved}"));
    }
}
