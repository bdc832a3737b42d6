//! `aayu verify --ci`: the full floor set on one change — feature-map, behaviour, tests and red-on-base —
//! then the proof pack, written atomically to `.aayudha/proof/<story>/` also when floors fail.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::commands::{Context, Failure, write_out};
use crate::config::{CONFIG_PATH, Config};
use crate::exit::ExitStatus;
use crate::floors::behaviour::{self, BehaviourReport, Status};
use crate::floors::feature_map::{self, MapReport};
use crate::floors::red_on_base::{self, Verdict};
use crate::floors::test_evidence::{self as tests, Outcome, TestId};
use crate::git::Repo;
use crate::ledger::ready::{self, Snapshot};
use crate::maps::{self, blocks::ArtifactKind};
use crate::pack::{self, Pack};
use crate::registry::CommandId;
use crate::sandbox::Network;
use crate::select::{self, evidence_map};
use crate::settings::VerifyOptions;

/// What every floor reports, besides its own numbers.
fn check(
    floor: &str,
    result: &str,
    value: f64,
    threshold: f64,
    tool: &str,
    detail: String,
    network: &str,
) -> pack::Check {
    pack::Check {
        floor: floor.to_string(),
        result: result.to_string(),
        value,
        threshold,
        tool: tool.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        detail,
        network: network.to_string(),
    }
}

pub fn run(
    ctx: &mut Context,
    repo: &Repo,
    options: &VerifyOptions,
    start: &Path,
    failure_of: fn(crate::git::GitError) -> Failure,
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
    let base_sha = repo.sha(base).map_err(failure_of)?;
    let head_sha = repo.sha(head).map_err(failure_of)?;
    let root = repo.root().to_path_buf();

    // The configuration is never read from a tree the pull request wrote: the base commit's (or a file the
    // caller names), and in the action the commit the workflow came from ("Trust in the gate").
    let config_failure = |e: crate::config::ConfigError| {
        Failure::from_error(ExitStatus::Usage, &e).with_optional_hint(e.hint())
    };
    let (config, config_from) = match (&options.config_commit, &options.config) {
        (Some(rev), file) => {
            let path = file
                .as_ref()
                .map_or_else(|| CONFIG_PATH.to_string(), |f| f.display().to_string());
            let label = format!("{}:{path}", super::short(rev));
            let config = match repo.file_at(rev, &path).map_err(failure_of)? {
                Some(bytes) => Config::from_text(&String::from_utf8_lossy(&bytes), &label)
                    .map_err(config_failure)?,
                None if file.is_none() => Config::defaults(),
                None => {
                    return Err(Failure::usage(format!(
                        "the configuration `{path}` is not in commit {}",
                        super::short(rev)
                    ))
                    .with_hint("the `config` input names a file of the default branch"));
                }
            };
            (config, Some((rev.clone(), path)))
        }
        (None, Some(file)) => (
            Config::load(&root, Some(file), start).map_err(config_failure)?,
            None,
        ),
        (None, None) => {
            let config = match repo.file_at(&base_sha, CONFIG_PATH).map_err(failure_of)? {
                Some(bytes) => Config::from_text(
                    &String::from_utf8_lossy(&bytes),
                    &format!("{}:{CONFIG_PATH}", super::short(&base_sha)),
                )
                .map_err(config_failure)?,
                None => Config::defaults(),
            };
            (config, Some((base_sha.clone(), CONFIG_PATH.to_string())))
        }
    };
    if let Some((rev, path)) = &config_from
        && repo.file_at(rev, path).ok().flatten() != repo.file_at(&head_sha, path).ok().flatten()
    {
        let whose = if options.config_commit.is_some() {
            "the default branch's"
        } else {
            "the base commit's"
        };
        let _ = writeln!(
            ctx.err,
            "notice: this change edits {path}; the gate uses {whose} until it merges"
        );
    }
    let now = ctx.env.now()?;

    // The story: its Ready snapshot and its evidence map at the head.
    let snapshot = match options.story {
        Some(story) => Some(read_snapshot(
            repo,
            story,
            options.ready.as_deref(),
            start,
            &config.ledger.branch,
        )?),
        None => None,
    };
    let evidence = match options.story {
        Some(story) => {
            let file = evidence_map::path(story);
            match repo.file_at(&head_sha, &file).map_err(failure_of)? {
                Some(bytes) => Some(
                    evidence_map::parse(&String::from_utf8_lossy(&bytes), &file)
                        .map_err(Failure::usage)?,
                ),
                None => None,
            }
        }
        None => None,
    };

    // The run folder lives outside the checkout (a pull request may commit `.aayudha/proof` as a link);
    // the finished pack is moved into place at the end.
    let temp_parent = ctx
        .env
        .vars
        .get("RUNNER_TEMP")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let staging = tempfile::Builder::new()
        .prefix("aayu-run-")
        .tempdir_in(&temp_parent)
        .map_err(|e| {
            Failure::unexpected(format!(
                "cannot create the run folder in `{}`",
                temp_parent.display()
            ))
            .caused_by(e)
        })?;
    let out = staging.path();
    let _interrupted = crate::cleanup::dir(out);
    let mut floors = Vec::new();

    // feature-map: no product code runs.
    let map_report = feature_map::check(repo).map_err(failure_of)?;
    write_json(out, "reports/feature-map.json", &map_report)?;
    floors.push(map_floor(&map_report, &config, now));

    // What will run: the behaviour checks the diff and the story's evidence map select, the mapped tests,
    // and for a bug, the same tests on the base.
    let loaded = maps::load_repo(repo).map_err(failure_of)?;
    let timeout = Duration::from_secs(config.verify.check_timeout_s);
    let selected = if loaded.errors.is_empty() {
        select::by_diff(repo, &loaded.maps, &base_sha, &head_sha, options.story).map_err(|e| {
            match e {
                select::SelectError::Git(g) => failure_of(g),
                other => Failure::usage(other.to_string()),
            }
        })?
    } else {
        Vec::new()
    };
    let mut ids = Vec::new();
    if let (Some(snapshot), Some(evidence)) = (&snapshot, &evidence) {
        for criterion in &evidence.criterion {
            for text in &criterion.tests {
                ids.push(TestId::parse(text).map_err(|why| {
                    Failure::usage(format!(
                        "{}: criterion {}: {why}",
                        evidence_map::path(snapshot.meta.story),
                        criterion.id
                    ))
                })?);
            }
        }
    }
    let is_bug = match options
        .binding
        .as_ref()
        .and_then(|b| b.story_labels.as_ref())
    {
        // In the action the story's labels come from the API (SPEC §5).
        Some(labels) => labels.iter().any(|l| l == "type:bug"),
        None => snapshot.as_ref().is_some_and(Snapshot::is_bug),
    };
    let on_base = (evidence.is_some() && (is_bug || options.red_on_base))
        .then(|| red_on_base::prepare(repo, &base_sha, &head_sha));

    // Every dependency is fetched now, before any product code runs, as a sandbox uid; then offline.
    let sandbox = if selected.is_empty() && ids.is_empty() {
        None
    } else {
        let sandbox = super::verify::new_sandbox(ctx, &config, options, &root)?;
        let test_packages: BTreeSet<String> = ids.iter().map(|t| t.package.clone()).collect();
        let mut packages: Vec<(PathBuf, String)> = behaviour::packages(&loaded.maps, &selected)
            .into_iter()
            .chain(test_packages.iter().cloned())
            .map(|p| (root.clone(), p))
            .collect();
        if let Some(base_root) = on_base.as_ref().and_then(red_on_base::Prepared::root) {
            packages.extend(
                test_packages
                    .iter()
                    .map(|p| (base_root.to_path_buf(), p.clone())),
            );
        }
        sandbox.fetch(&packages, ctx.err);
        Some(sandbox)
    };

    // behaviour
    let behaviour_report = if !loaded.errors.is_empty() {
        floors.push(check(
            "behaviour",
            "blocked",
            0.0,
            0.0,
            "aayu behaviour floor",
            "the maps have contract errors: `aayu verify --map` lists them".into(),
            "none",
        ));
        None
    } else if let (false, Some(sandbox)) = (selected.is_empty(), &sandbox) {
        let report = super::verify::run_behaviour(
            ctx,
            &root,
            out,
            &config,
            options,
            &loaded.maps,
            &selected,
            sandbox,
        )?;
        floors.push(behaviour_floor(&report));
        Some(report)
    } else {
        floors.push(check(
            "behaviour",
            "pass",
            0.0,
            0.0,
            "aayu behaviour floor",
            "no behaviour check selected by this change".into(),
            "none",
        ));
        None
    };

    // tests and red-on-base: only for a story
    let mut criteria_lines = Vec::new();
    let mut pack_criteria = Vec::new();
    match (&snapshot, &evidence) {
        (None, _) => {
            for floor in ["tests", "red-on-base"] {
                floors.push(check(
                    floor,
                    "skipped",
                    0.0,
                    0.0,
                    "aayu verify --ci",
                    "no story: only the map floors (feature-map and behaviour) ran".into(),
                    "none",
                ));
            }
        }
        (Some(snapshot), None) => {
            let file = evidence_map::path(snapshot.meta.story);
            floors.push(check(
                "tests",
                "fail",
                0.0,
                snapshot.criteria.len() as f64,
                "aayu test evidence",
                format!(
                    "no evidence map: commit `{file}` naming the tests and checks of each criterion"
                ),
                "none",
            ));
            floors.push(check(
                "red-on-base",
                "skipped",
                0.0,
                0.0,
                "aayu red-on-base",
                "no evidence map".into(),
                "none",
            ));
            pack_criteria = snapshot
                .criteria
                .iter()
                .map(|c| pack::Criterion {
                    id: c.id,
                    evidence: Vec::new(),
                })
                .collect();
        }
        (Some(snapshot), Some(evidence)) => {
            let sandbox = match &sandbox {
                Some(sandbox) => sandbox,
                None => &super::verify::new_sandbox(ctx, &config, options, &root)?,
            };
            let results = tests::run_tests(
                &tests::Run {
                    sandbox,
                    root: &root,
                    timeout,
                    target: None,
                },
                &ids,
            );
            let (floor, criteria, lines) = evidence_floor(
                out,
                snapshot,
                evidence,
                &results,
                behaviour_report.as_ref(),
                sandbox.no_network(),
            )?;
            floors.push(floor);
            pack_criteria = criteria;
            criteria_lines = lines;
            if let Some(prepared) = &on_base {
                let report = red_on_base::run(
                    prepared,
                    evidence,
                    &tests::Run {
                        sandbox,
                        root: &root,
                        timeout,
                        target: None,
                    },
                );
                write_json(out, "reports/red-on-base.json", &report)?;
                for c in &report.criteria {
                    let word = match c.verdict {
                        Verdict::Red => "red",
                        Verdict::Green => "green",
                        Verdict::Inconclusive => "inconclusive",
                    };
                    criteria_lines
                        .push(format!("criterion {}: {word} on base — {}", c.id, c.reason));
                }
                floors.push(red_floor(&report, &config, now, sandbox.no_network()));
            } else {
                floors.push(check(
                    "red-on-base",
                    "skipped",
                    0.0,
                    0.0,
                    "aayu red-on-base",
                    "the story is not labelled type:bug".into(),
                    "none",
                ));
            }
        }
    }

    // The pack.
    let binding = options.binding.as_ref();
    let story = options.story.unwrap_or(0);
    let artifacts = collect_artifacts(
        out,
        behaviour_report.as_ref(),
        !config.proof.media.is_empty(),
    )?;
    let message = repo.message(&head_sha).unwrap_or_default();
    let slug = ctx
        .env
        .vars
        .get("GITHUB_REPOSITORY")
        .cloned()
        .or_else(|| repo.origin_slug())
        .unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let changed = repo.changed_paths(&base_sha, &head_sha).unwrap_or_default();
    let pack = Pack {
        schema_version: pack::SCHEMA_VERSION,
        repo: slug.clone(),
        story,
        pr: binding.map_or(0, |b| b.pr),
        pr_head_sha: head_sha.clone(),
        base_sha: base_sha.clone(),
        checkpoint: trailer(&message, "Aayudha-Checkpoint")
            .filter(|c| {
                c.split_once('/')
                    .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
            })
            .unwrap_or_default(),
        seat: CommandId::Verify.spec().seat.id().to_string(),
        host: if binding.is_some() { "action" } else { "cli" }.to_string(),
        model: trailer(&message, "Aayudha-Model").unwrap_or_default(),
        identity: if ctx.env.github_actions {
            "ci"
        } else {
            "human"
        }
        .to_string(),
        // Only `aayu ship` writes an authoritative pack; the gate's records the run that built it.
        authority: pack::Authority {
            kind: "advisory".into(),
            workflow: binding.map(|b| b.workflow.clone()).unwrap_or_default(),
            run_id: binding.map_or(0, |b| b.run_id),
            writer: if binding.is_some() {
                "aayu action (merge gate)".into()
            } else {
                String::new()
            },
        },
        // The action hashes the story's body as it is now, so a story edited after Ready no longer matches.
        completion_goal_hash: match binding.and_then(|b| b.completion_goal_hash.clone()) {
            Some(hash) if snapshot.is_some() => hash,
            _ => snapshot
                .as_ref()
                .map(|s| s.meta.completion_goal_hash.clone())
                .unwrap_or_default(),
        },
        footprint: footprint(&root, &changed),
        criteria: pack_criteria,
        artifacts,
        checks: floors,
        cost: pack::Cost::default(),
        links: pack::Links {
            issue: if story > 0 {
                format!("{slug}#{story}")
            } else {
                String::new()
            },
            pr: binding.map(|b| b.pr_url.clone()).unwrap_or_default(),
            ready_snapshot: if story > 0 {
                format!("specs/{story}/ready.md")
            } else {
                String::new()
            },
            run: binding.map(|b| b.run_url.clone()).unwrap_or_default(),
        },
        created_at: crate::commands::utc_stamp(now, false),
    };
    let value = serde_json::to_value(&pack)
        .map_err(|e| Failure::unexpected("cannot serialise the pack").caused_by(e))?;
    pack::validate(&value).map_err(|e| {
        Failure::unexpected(format!(
            "the pack this aayu made does not match its own schema (a bug): {e}"
        ))
    })?;
    let dir = match &options.out {
        Some(dir) => start.join(dir),
        // `.aayudha/proof` of the checkout, made without following a link a pull request committed there.
        None => crate::safe_fs::ensure_dir(&root, ".aayudha/proof")
            .map_err(|e| {
                Failure::usage(format!("cannot write the pack: {e}")).with_hint(
                    "`.aayudha/proof` must be a plain folder of the checkout (or give `--out DIR`)",
                )
            })?
            .join(story.to_string()),
    };
    pack::write(&dir, &pack, out).map_err(|e| {
        Failure::unexpected(format!("cannot write the pack to `{}`", dir.display())).caused_by(e)
    })?;
    if !repo.is_ignored(".aayudha/proof/x") {
        let _ = writeln!(
            ctx.err,
            "hint: add `.aayudha/proof/` to .gitignore: local packs are not committed"
        );
    }

    let holds = pack.checks.iter().all(pack::Check::holds);
    let written = if options.json {
        write_out(ctx.out, &crate::output::json::render(&pack))?
    } else {
        super::write_report(ctx, &render_table(&pack, &criteria_lines, &dir))?
    };
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(if holds {
        ExitStatus::Ok
    } else {
        ExitStatus::FloorFails
    })
}

fn write_json<T: serde::Serialize>(out: &Path, rel: &str, value: &T) -> Result<(), Failure> {
    let path = out.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::unexpected(format!("cannot create `{}`", parent.display())).caused_by(e)
        })?;
    }
    behaviour::write_atomic(&path, crate::output::json::render(value).as_bytes())
        .map_err(|e| Failure::unexpected(format!("cannot write `{}`", path.display())).caused_by(e))
}

fn read_snapshot(
    repo: &Repo,
    story: u64,
    file: Option<&Path>,
    start: &Path,
    branch: &str,
) -> Result<Snapshot, Failure> {
    let (text, label) = match file {
        Some(file) => (
            std::fs::read_to_string(start.join(file)).map_err(|e| {
                Failure::usage(format!(
                    "cannot read the Ready snapshot `{}`",
                    file.display()
                ))
                .caused_by(e)
            })?,
            file.display().to_string(),
        ),
        None => {
            let path = format!("specs/{story}/ready.md");
            let bytes = repo.file_on_branch(branch, &path).ok_or_else(|| {
                Failure::usage(format!("story #{story} has no Ready snapshot: no `{path}` on the `{branch}` branch (local or origin's)"))
                    .with_hint(format!("fetch it (`git fetch origin {branch}`), or pass `--ready FILE`"))
            })?;
            (
                String::from_utf8_lossy(&bytes).into_owned(),
                format!("{branch}:{path}"),
            )
        }
    };
    let snapshot = ready::parse(&text, &label).map_err(Failure::usage)?;
    if snapshot.meta.story != story {
        return Err(Failure::usage(format!(
            "{label} is the Ready snapshot of story #{}, not #{story}",
            snapshot.meta.story
        )));
    }
    Ok(snapshot)
}

fn map_floor(report: &MapReport, config: &Config, now: time::OffsetDateTime) -> pack::Check {
    let tool = "aayu verify --map";
    if !report.errors.is_empty() {
        return check(
            "feature-map",
            "blocked",
            report.errors.len() as f64,
            0.0,
            tool,
            format!("{} contract error(s) in the maps", report.errors.len()),
            "none",
        );
    }
    if report.maps == 0 {
        return check(
            "feature-map",
            "skipped",
            0.0,
            0.0,
            tool,
            "no feature map in the checkout".into(),
            "none",
        );
    }
    let drift = report.drift.len() as f64;
    if report.drift.is_empty() {
        return check(
            "feature-map",
            "pass",
            0.0,
            0.0,
            tool,
            format!("{} maps, {} features in sync", report.maps, report.features),
            "none",
        );
    }
    let rule = config.verify.drift_blocking_from;
    if rule.blocks_at(now) {
        check(
            "feature-map",
            "fail",
            drift,
            0.0,
            tool,
            format!(
                "{} drift (blocking since {})",
                report.drift.len(),
                rule.0.map(|d| d.to_string()).unwrap_or_default()
            ),
            "none",
        )
    } else {
        check(
            "feature-map",
            "pass",
            drift,
            0.0,
            tool,
            format!("{}: {} drift", rule.advisory_detail(), report.drift.len()),
            "none",
        )
    }
}

fn behaviour_floor(report: &BehaviourReport) -> pack::Check {
    let count = |s: Status| report.checks.iter().filter(|c| c.status == s).count();
    let (failed, blocked) = (count(Status::Failed), count(Status::Blocked));
    let network = if report
        .checks
        .iter()
        .any(|c| c.network == Network::NotIsolated)
    {
        "not-isolated"
    } else if report.checks.iter().any(|c| c.network == Network::Allowed) {
        "allowed"
    } else {
        "isolated"
    };
    let detail = format!(
        "{} checks: {} passed, {failed} failed, {blocked} blocked, {} unreachable",
        report.checks.len(),
        count(Status::Passed),
        count(Status::Unreachable)
    );
    let result = if failed > 0 {
        "fail"
    } else if blocked > 0 {
        "blocked"
    } else {
        "pass"
    };
    check(
        "behaviour",
        result,
        (failed + blocked) as f64,
        0.0,
        "aayu behaviour floor",
        detail,
        network,
    )
}

/// Per criterion: evidence only when every mapped test passed and every mapped check passed with an
/// artifact of the criterion's evidence kind.
fn evidence_floor(
    out: &Path,
    snapshot: &Snapshot,
    evidence: &evidence_map::EvidenceMap,
    results: &BTreeMap<TestId, tests::TestResult>,
    behaviour: Option<&BehaviourReport>,
    network: Network,
) -> Result<(pack::Check, Vec<pack::Criterion>, Vec<String>), Failure> {
    let mut criteria = Vec::new();
    let mut lines = Vec::new();
    let mut evidenced = 0usize;
    // A mapped test this machine cannot run (a toolchain the image lacks) blocks the floor rather than
    // failing it, unless a test really failed.
    let (mut failed_any, mut blocked_any) = (false, false);
    let ready: BTreeMap<u32, &ready::Criterion> =
        snapshot.criteria.iter().map(|c| (c.id, c)).collect();
    for criterion in &snapshot.criteria {
        let Some(mapped) = evidence.criterion.iter().find(|c| c.id == criterion.id) else {
            lines.push(format!(
                "criterion {}: no evidence — the evidence map does not name it",
                criterion.id
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: Vec::new(),
            });
            continue;
        };
        let mut problems = Vec::new();
        let mut events = String::new();
        for text in &mapped.tests {
            let Ok(id) = TestId::parse(text) else {
                continue;
            };
            match results.get(&id).map(|r| (&r.outcome, &r.events)) {
                Some((Outcome::Passed, own)) => {
                    for event in own {
                        events.push_str(event);
                        events.push('\n');
                    }
                }
                Some((outcome, _)) => {
                    failed_any |= matches!(outcome, Outcome::Failed(_));
                    blocked_any |= matches!(outcome, Outcome::Blocked(_));
                    problems.push(format!(
                        "`{id}` {}: {}",
                        outcome_words(outcome),
                        outcome.detail()
                    ))
                }
                None => problems.push(format!("`{id}` did not run")),
            }
        }
        let mut paths = Vec::new();
        for name in &mapped.checks {
            let found = behaviour.and_then(|b| {
                b.checks
                    .iter()
                    .find(|c| format!("{}.{}", c.feature, c.check) == *name)
            });
            match found {
                None => problems.push(format!("check `{name}` did not run")),
                Some(c) if c.status != Status::Passed => problems.push(format!(
                    "check `{name}` {}: {}",
                    c.status.as_str(),
                    c.reason
                )),
                Some(c) => {
                    let own: Vec<&behaviour::Artifact> = c
                        .artifacts
                        .iter()
                        .filter(|a| a.kind == criterion.evidence)
                        .collect();
                    if own.is_empty() {
                        problems.push(format!("check `{name}` produced no `{}` artifact (the criterion's evidence kind)", behaviour::kind_word(criterion.evidence)));
                    }
                    paths.extend(own.iter().map(|a| a.path.clone()));
                }
            }
        }
        if mapped.tests.is_empty() && mapped.checks.is_empty() {
            problems.push("the evidence map names no test or check for it".to_string());
        }
        if problems.is_empty() {
            if !mapped.tests.is_empty() {
                let rel = format!("evidence/criterion-{}.jsonl", criterion.id);
                let path = out.join(&rel);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| Failure::unexpected("cannot write evidence").caused_by(e))?;
                }
                behaviour::write_atomic(&path, events.as_bytes())
                    .map_err(|e| Failure::unexpected("cannot write evidence").caused_by(e))?;
                paths.insert(0, rel);
            }
            evidenced += 1;
            lines.push(format!(
                "criterion {}: evidenced ({})",
                criterion.id,
                paths.join(", ")
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: paths,
            });
        } else {
            lines.push(format!(
                "criterion {}: no evidence — {}",
                criterion.id,
                problems.join("; ")
            ));
            criteria.push(pack::Criterion {
                id: criterion.id,
                evidence: Vec::new(),
            });
        }
    }
    for extra in evidence
        .criterion
        .iter()
        .filter(|c| !ready.contains_key(&c.id))
    {
        lines.push(format!(
            "criterion {}: the evidence map names it, but the Ready snapshot has no such criterion",
            extra.id
        ));
    }
    let total = snapshot.criteria.len();
    let result = if evidenced == total {
        "pass"
    } else if blocked_any && !failed_any {
        "blocked"
    } else {
        "fail"
    };
    let floor = check(
        "tests",
        result,
        evidenced as f64,
        total as f64,
        "aayu test evidence (cargo test, go test -json)",
        format!("{evidenced} of {total} criteria evidenced"),
        network.as_str(),
    );
    Ok((floor, criteria, lines))
}

fn outcome_words(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed(_) => "failed",
        Outcome::NotBuilt(_) => "did not build",
        Outcome::NotFound(_) => "was not found",
        Outcome::NotRun(_) => "did not run",
        Outcome::Blocked(_) => "cannot run here",
    }
}

fn red_floor(
    report: &red_on_base::Report,
    config: &Config,
    now: time::OffsetDateTime,
    network: Network,
) -> pack::Check {
    let green = report.green();
    let tool = "aayu red-on-base";
    let inconclusive = report
        .criteria
        .iter()
        .filter(|c| c.verdict == Verdict::Inconclusive)
        .count();
    if green.is_empty() {
        let detail = format!(
            "{} red, {inconclusive} inconclusive on base {}",
            report
                .criteria
                .iter()
                .filter(|c| c.verdict == Verdict::Red)
                .count(),
            &report.base.get(..12).unwrap_or(&report.base)
        );
        return check(
            "red-on-base",
            "pass",
            0.0,
            0.0,
            tool,
            detail,
            network.as_str(),
        );
    }
    let list = green
        .iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let rule = config.verify.red_on_base_blocking_from;
    if rule.blocks_at(now) {
        check(
            "red-on-base",
            "fail",
            green.len() as f64,
            0.0,
            tool,
            format!("green on base: criteria {list} (their tests do not show the fix)"),
            network.as_str(),
        )
    } else {
        check(
            "red-on-base",
            "skipped",
            green.len() as f64,
            0.0,
            tool,
            format!("{}: green on base: criteria {list}", rule.advisory_detail()),
            network.as_str(),
        )
    }
}

/// Every file of the run folder, hashed (streamed), with its kind and store.
fn collect_artifacts(
    out: &Path,
    behaviour: Option<&BehaviourReport>,
    bucket: bool,
) -> Result<Vec<pack::Artifact>, Failure> {
    let kinds: BTreeMap<&str, ArtifactKind> = behaviour
        .into_iter()
        .flat_map(|b| {
            b.checks
                .iter()
                .flat_map(|c| c.artifacts.iter().map(|a| (a.path.as_str(), a.kind)))
        })
        .collect();
    let files = pack::files_under(out)
        .map_err(|e| Failure::unexpected("cannot read the run folder").caused_by(e))?;
    let mut artifacts = Vec::new();
    for rel in files {
        let (sha256, size) = pack::hash_file(&out.join(&rel))
            .map_err(|e| Failure::unexpected(format!("cannot hash `{rel}`")).caused_by(e))?;
        let kind = if rel.starts_with("reports/") {
            ArtifactKind::Report
        } else if rel.starts_with("evidence/") {
            ArtifactKind::ApiTrace
        } else {
            kinds
                .get(rel.as_str())
                .copied()
                .unwrap_or(ArtifactKind::Report)
        };
        let store = if pack::is_media(kind) {
            if bucket { "bucket" } else { "none" }
        } else {
            "git"
        };
        artifacts.push(pack::Artifact {
            path: rel,
            kind,
            sha256,
            size,
            store: store.to_string(),
            object: String::new(),
            tombstone: None,
        });
    }
    Ok(artifacts)
}

/// A commit trailer's value (`Aayudha-Checkpoint: 2/3`).
fn trailer(message: &str, key: &str) -> Option<String> {
    message
        .lines()
        .rev()
        .find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
        .filter(|v| !v.is_empty())
}

/// The layers whose path globs in `LAYERS.md` match a changed path. A layer row names its id (`L01`…`L09`)
/// and its globs in backticks.
fn footprint(root: &Path, changed: &[String]) -> Vec<String> {
    let Ok(bytes) = crate::safe_fs::read(root, "LAYERS.md", 1 << 20) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut layers = BTreeSet::new();
    for line in text.lines() {
        let Some(id) = line.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| {
            w.len() == 3 && w.starts_with("L0") && w[2..].chars().all(|c| c.is_ascii_digit())
        }) else {
            continue;
        };
        let globs: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        for glob in globs {
            if let Ok(g) = crate::maps::glob::compile(glob) {
                let matcher = g.compile_matcher();
                if changed.iter().any(|p| matcher.is_match(p)) {
                    layers.insert(id.to_string());
                }
            }
        }
    }
    layers.into_iter().collect()
}

fn render_table(pack: &Pack, criteria: &[String], dir: &Path) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<12} {:<8} {:>6} {:>9}  detail",
        "floor", "result", "value", "threshold"
    );
    for c in &pack.checks {
        let _ = writeln!(
            text,
            "{:<12} {:<8} {:>6} {:>9}  {}",
            c.floor, c.result, c.value, c.threshold, c.detail
        );
    }
    for line in criteria {
        let _ = writeln!(text, "{line}");
    }
    let pack_file: PathBuf = dir.join("pack.json");
    let hash = pack::hash_file(&pack_file)
        .map(|(h, _)| h)
        .unwrap_or_default();
    let _ = writeln!(text, "pack: {} (sha256 {hash})", pack_file.display());
    text
}
