//! The gate: every floor on one change — feature-map, weakening, behaviour, tests, red-on-base — and the proof pack,
//! as one library stage. `aayu verify --ci` renders what it returns; `aayu action` publishes it. Nothing here
//! prints a report or reads back what another stage printed: the floors return typed results, the pack is
//! assembled from them, and progress streams to the [`Log`] as it happens.
//!
//! Order matters for safety (SPEC §4): every dependency of the change — the built-in step runner's
//! packages, the mapped tests' packages, and the same packages in red-on-base's copy of the base — is
//! fetched once, as a sandbox uid, before any product code runs; every later step runs offline.

pub(crate) mod checks;
pub(crate) mod inputs;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::floors::behaviour::{self, BehaviourReport};
use crate::floors::feature_map::{self, MapReport};
use crate::floors::red_on_base;
use crate::floors::test_evidence::{self, TestId};
use crate::floors::weakening;
use crate::floors::{FloorResult, Verdict};
use crate::git::{GitError, Repo};
use crate::log::Log;
use crate::maps;
use crate::pack::{self, Pack};
use crate::sandbox::preflight::Tool;
use crate::sandbox::{FetchTree, Sandbox, SandboxError, SandboxSettings};
use crate::select;
use crate::story::evidence_map;
use crate::story::{Binding, Story};

/// Everything the gate needs, resolved by its caller.
pub struct Inputs<'a> {
    pub repo: &'a Repo,
    /// The configuration — never from a tree the change wrote (the caller read it at the base or the
    /// default branch).
    pub config: &'a Config,
    /// The change, as full SHAs.
    pub base: String,
    pub head: String,
    pub story: Option<Story>,
    /// What the merge gate knows of the pull request and the run (`None` on the CLI).
    pub binding: Option<Binding>,
    /// `--red-on-base`: run it also for a story that is not a bug.
    pub force_red_on_base: bool,
    pub sandbox: SandboxSettings,
    /// This very binary, which a leading `aayu` in a control argv stands for.
    pub aayu: PathBuf,
    /// Where the pack folder is written (replaced whole).
    pub out: PathBuf,
    /// Where the run folder is made: `RUNNER_TEMP` or the temp folder, never the checkout.
    pub temp: PathBuf,
    pub now: time::OffsetDateTime,
    /// `owner/name` of the repository, for the pack and its links.
    pub slug: String,
    /// Inside GitHub Actions (the pack's identity is then `ci`).
    pub actions: bool,
}

/// What the gate found and wrote.
pub struct GateRun {
    pub pack: Pack,
    /// The pack folder (`pack.json` and `artifacts/`).
    pub pack_dir: PathBuf,
    /// The SHA-256 of `pack.json`'s bytes: what the comment, the status and `aayu ship` name.
    pub pack_sha256: String,
    pub floors: Vec<FloorResult>,
    pub map: MapReport,
    pub weakening: weakening::Report,
    #[allow(
        dead_code,
        reason = "part of the stage's typed result; no caller renders it yet"
    )]
    pub behaviour: Option<BehaviourReport>,
    #[allow(
        dead_code,
        reason = "part of the stage's typed result; no caller renders it yet"
    )]
    pub red_on_base: Option<red_on_base::Report>,
    /// A line per criterion for a person: its evidence or why it has none, and its verdict on the base.
    pub criteria_lines: Vec<String>,
    /// The coverage floor's report, when it computed a number.
    pub coverage: Option<crate::floors::coverage::Report>,
}

impl GateRun {
    /// Whether every floor holds.
    pub fn holds(&self) -> bool {
        self.floors.iter().all(|f| f.verdict.holds())
    }
}

/// Why the gate could not make a pack.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Git(#[from] GitError),
    /// The change's evidence map, or a name in it, is not valid: the user's to fix (exit 2).
    #[error("{0}")]
    Contract(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Behaviour(#[from] behaviour::BehaviourError),
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the pack this aayu made does not match its own schema (a bug): {0}")]
    Schema(String),
}

/// A gate that made no pack, as a failure: the user's to fix (exit 2) or not (exit 1).
impl From<GateError> for crate::failure::Failure {
    fn from(e: GateError) -> Self {
        use crate::exit::ExitStatus;
        use crate::failure::Failure;
        match e {
            GateError::Git(g) => crate::failure::git_failure(g),
            GateError::Contract(message) => Failure::usage(message),
            GateError::Sandbox(s @ SandboxError::ForbiddenId { .. }) => {
                Failure::from_error(ExitStatus::Usage, &s).with_hint(
                    "set `[verify] sandbox_uids` in the default branch's .aayudha/config.toml to a range of unused ids at or above 1000, e.g. [61000, 61063]",
                )
            }
            GateError::Behaviour(b @ behaviour::BehaviourError::Target(_)) => {
                Failure::from_error(ExitStatus::Usage, &b)
            }
            other => Failure::from_error(ExitStatus::Failure, &other),
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> GateError {
    let what = what.into();
    move |source| GateError::Io { what, source }
}

/// Runs every floor on the change and writes the pack (also when floors fail).
pub fn run(inputs: &Inputs, progress: &mut Log) -> Result<GateRun, GateError> {
    let repo = inputs.repo;
    let root = repo.root().to_path_buf();
    let config = inputs.config;
    let (base, head) = (&inputs.base, &inputs.head);
    let evidence = inputs.story.as_ref().and_then(|s| s.evidence.as_ref());

    // The run folder lives outside the checkout (a pull request may commit `.aayudha/proof` as a link);
    // the finished pack is moved into place at the end.
    let staging = tempfile::Builder::new()
        .prefix("aayu-run-")
        .tempdir_in(&inputs.temp)
        .map_err(io(format!(
            "create the run folder in `{}`",
            inputs.temp.display()
        )))?;
    let out = staging.path();
    let _interrupted = crate::sandbox::cleanup::dir(out);
    let mut floors = Vec::new();

    // feature-map: no product code runs.
    let map = in_group(progress, "aayudha feature-map floor", |log| {
        Ok(feature_map::check(
            repo,
            crate::floors::scan::Bounds::of(&config.verify),
            &mut |done, total, elapsed| crate::log::scan_beat(log, done, total, elapsed),
        )?)
    })?;
    write_json(out, "reports/feature-map.json", &map)?;
    floors.push(feature_map::floor(
        &map,
        config.verify.drift_blocking_from,
        inputs.now,
    ));

    // weakening: the maps at the base and the head, from git's objects; no product code runs.
    let story_labels: Vec<String> =
        match inputs.binding.as_ref().and_then(|b| b.story_labels.clone()) {
            // In the action the story's labels come from the API (SPEC §5).
            Some(labels) => labels,
            None => inputs
                .story
                .as_ref()
                .map(|s| s.snapshot.meta.labels.clone())
                .unwrap_or_default(),
        };
    let weakened = in_group(progress, "aayudha weakening floor", |_| {
        Ok(weakening::compare(repo, base, head)?)
    })?;
    write_json(out, "reports/weakening.json", &weakened)?;
    floors.push(weakening::floor(
        &weakened,
        config.verify.weakening_blocking_from,
        inputs.now,
        story_labels.iter().any(|l| l == weakening::WAIVER),
    ));

    // What will run: the behaviour checks the diff and the story's evidence map select, the mapped tests,
    // and for a bug, the same tests on the base.
    let loaded = maps::load_repo(repo)?;
    let selected = if loaded.errors.is_empty() {
        select::by_diff(
            repo,
            &loaded.maps,
            base,
            head,
            inputs.story.as_ref().map(|s| s.number),
        )
        .map_err(|e| match e {
            select::SelectError::Git(g) => GateError::Git(g),
            other => GateError::Contract(other.to_string()),
        })?
    } else {
        Vec::new()
    };
    let mut ids = Vec::new();
    if let (Some(story), Some(evidence)) = (&inputs.story, &evidence) {
        for criterion in &evidence.criterion {
            for text in &criterion.tests {
                let contract = |why: String| {
                    GateError::Contract(format!(
                        "{}: criterion {}: {why}",
                        evidence_map::path(story.number),
                        criterion.id
                    ))
                };
                let id = TestId::parse(text).map_err(contract)?;
                // The runner of the package reads the rest of the id: a doc test, a malformed target
                // qualifier or Go name is refused before anything runs.
                if let Some(found) = crate::runners::package_of(&root, &id) {
                    id.check(&root, &found.package()).map_err(contract)?;
                }
                ids.push(id);
            }
        }
    }
    // coverage: the packages the change touches, for a story.
    let touched = match &inputs.story {
        Some(_) => crate::floors::coverage::touched(&root, &repo.changed_paths(base, head)?),
        None => crate::floors::coverage::Touched::default(),
    };
    let is_bug = story_labels.iter().any(|l| l == "type:bug");
    let on_base = (evidence.is_some() && (is_bug || inputs.force_red_on_base))
        .then(|| red_on_base::prepare(repo, base, head));

    // Every dependency is fetched now, before any product code runs, as a sandbox uid; then offline.
    let sandbox = if selected.is_empty() && ids.is_empty() && touched.packages.is_empty() {
        None
    } else {
        let sandbox = Sandbox::new(&inputs.sandbox)?;
        let test_packages: BTreeSet<(String, Option<String>)> = ids
            .iter()
            .map(|t| (t.package.clone(), Some(t.rest.clone())))
            .chain(touched.fetch())
            .collect();
        let seed = behaviour::seed_package(&loaded.maps, &selected, &root, &config.verify.seed);
        // Whether each lock file is committed is read from git: the checkout's index, the base's commit.
        let mut trees = vec![FetchTree::new(
            &root,
            crate::runners::fetch_packages(
                sandbox.toolchains(),
                &root,
                behaviour::packages(&loaded.maps, &selected)
                    .into_iter()
                    .chain(seed.map(|dir| (dir, None)))
                    .chain(test_packages.iter().cloned()),
            ),
            |lock| repo.is_tracked(lock),
        )];
        if let Some(prepared) = &on_base
            && let Some(base_root) = prepared.root()
        {
            let packages = crate::runners::fetch_packages(
                sandbox.toolchains(),
                base_root,
                test_packages.iter().cloned(),
            );
            let mut base_tree = FetchTree::new(base_root, packages, |lock| {
                repo.id_at(prepared.base(), lock).is_some()
            });
            base_tree.lock_from = Some(root.clone());
            trees.push(base_tree);
        }
        // Before any floor: are the tools there, and do they run as the sandbox uid?
        let needs: BTreeSet<Tool> = behaviour::needs(&loaded.maps, &selected, &root)
            .into_iter()
            .chain(test_evidence::needs(&root, &ids))
            .chain(touched.needs())
            .collect();
        // In Actions every tool's version goes in the (folded) group; locally only what is blocked.
        let checked = in_group(progress, "aayudha preflight", |log| {
            let all = log.actions();
            for line in sandbox.preflight(&root, &needs) {
                if all || line.contains(": blocked: ") {
                    let _ = writeln!(log, "{line}");
                }
            }
            Ok(())
        });
        checked?;
        if trees.iter().any(|t| !t.packages.is_empty()) {
            let _ = progress.command("::group::aayudha: fetching dependencies");
            sandbox.fetch(&trees, progress);
            let _ = progress.command("::endgroup::");
        }
        Some(sandbox)
    };

    // behaviour
    let behaviour = match (&sandbox, selected.is_empty() || !loaded.errors.is_empty()) {
        (Some(sandbox), false) => {
            let options = behaviour::Options {
                root: root.clone(),
                out: out.to_path_buf(),
                jobs: inputs.sandbox.jobs,
                timeout: Duration::from_secs(config.verify.check_timeout_s),
                base_url: config.verify.base_url.clone(),
                seed: config.verify.seed.clone(),
                production: config.verify.production.clone(),
                targets: config.verify.targets.clone(),
                require_isolation: config.verify.require_isolation,
                aayu: inputs.aayu.clone(),
            };
            let report = behaviour::run(&loaded.maps, &selected, &options, sandbox, progress)?;
            floors.push(behaviour::floor(&report));
            Some(report)
        }
        _ => {
            floors.push(behaviour::floor_without_checks(!loaded.errors.is_empty()));
            None
        }
    };

    // coverage (first in the pack's checks): the touched packages' whole suites, run before the tests
    // floor, which reads the mapped tests of those packages from these runs.
    let mut coverage_report = None;
    let mut suites_ran = BTreeMap::new();
    let coverage = match (&inputs.story, &sandbox) {
        (None, _) => crate::floors::coverage::skipped(
            "no story: only the map floors (feature-map and behaviour) ran",
        ),
        (Some(_), None) => {
            crate::floors::coverage::skipped("no package with tests is touched by the change")
        }
        (Some(_), Some(sandbox)) => {
            let mut phases = crate::timing::Phases::start();
            let added = repo.added_lines(
                (base, head),
                &crate::floors::coverage::SOURCES,
                crate::floors::coverage::MAX_FILE,
                crate::floors::coverage::MAX_LINES,
            )?;
            let covered = in_group(
                progress,
                "aayudha coverage floor: the touched packages' whole suites",
                |log| {
                    let log = RefCell::new(log);
                    let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                    Ok(crate::floors::coverage::run(
                        &test_evidence::Run {
                            sandbox,
                            root: &root,
                            timeout: Duration::from_secs(config.verify.suite_timeout_s),
                            target: None,
                            heartbeat: Some(&heartbeat),
                        },
                        &touched,
                        &added,
                        &crate::floors::coverage::Settings {
                            base,
                            head,
                            threshold: config.verify.coverage_threshold,
                            blocking: config.verify.coverage_blocking_from,
                            now: inputs.now,
                            mapped: &ids,
                        },
                    ))
                },
            )?;
            if let Some(report) = &covered.report {
                write_json(out, "reports/coverage.json", report)?;
            }
            coverage_report = covered.report;
            suites_ran = covered.mapped;
            phases.end("coverage floor (the touched packages' suites, instrumented)");
            covered.floor
        }
    };
    // tests and red-on-base: only for a story
    let timeout = Duration::from_secs(config.verify.check_timeout_s);
    let mut criteria_lines = Vec::new();
    let mut criteria = Vec::new();
    let mut red = None;
    match (&inputs.story, &evidence) {
        (None, _) => {
            for floor in [crate::floors::Floor::Tests, crate::floors::Floor::RedOnBase] {
                floors.push(FloorResult::new(
                    floor,
                    Verdict::Skipped,
                    "aayu verify --ci",
                    "no story: only the map floors (feature-map and behaviour) ran".into(),
                ));
            }
        }
        (Some(story), None) => {
            let evidenced = test_evidence::floor_without_map(&story.snapshot);
            floors.push(evidenced.floor);
            floors.push(red_on_base::skipped("no evidence map"));
            criteria = evidenced.criteria;
        }
        (Some(story), Some(evidence)) => {
            let fresh;
            let sandbox = match &sandbox {
                Some(sandbox) => sandbox,
                None => {
                    fresh = Sandbox::new(&inputs.sandbox)?;
                    &fresh
                }
            };
            let results = in_group(progress, "aayudha tests floor: the mapped tests", |log| {
                let log = RefCell::new(log);
                let heartbeat = |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                Ok(test_evidence::run_tests(
                    &test_evidence::Run {
                        sandbox,
                        root: &root,
                        timeout,
                        target: None,
                        heartbeat: Some(&heartbeat),
                    },
                    &ids,
                    &suites_ran,
                ))
            })?;
            // Two targets holding an unqualified test is the evidence map's to fix (exit 2), not a result.
            if let Some((id, why)) = results.iter().find_map(|(id, r)| match &r.outcome {
                test_evidence::Outcome::Ambiguous(why) => Some((id, why.clone())),
                _ => None,
            }) {
                let criterion = evidence
                    .criterion
                    .iter()
                    .find(|c| c.tests.iter().any(|t| TestId::parse(t).as_ref() == Ok(id)))
                    .map_or(0, |c| c.id);
                return Err(GateError::Contract(format!(
                    "{}: criterion {criterion}: {why}",
                    evidence_map::path(story.number)
                )));
            }
            let mut evidenced = test_evidence::floor(
                out,
                &story.snapshot,
                evidence,
                &results,
                behaviour.as_ref(),
                sandbox.no_network(),
            )
            .map_err(io("write the evidence"))?;
            for resolved in sandbox.resolved_locks(&root) {
                evidenced.floor.detail =
                    format!("{}; {}", evidenced.floor.detail, resolved.sentence());
            }
            floors.push(evidenced.floor);
            criteria = evidenced.criteria;
            criteria_lines = evidenced.lines;
            match &on_base {
                Some(prepared) => {
                    let report = in_group(
                        progress,
                        "aayudha red-on-base floor: the mapped tests on the base",
                        |log| {
                            let log = RefCell::new(log);
                            let heartbeat =
                                |what: &str, elapsed: Duration| beat(&log, what, elapsed);
                            Ok(red_on_base::run(
                                prepared,
                                evidence,
                                &test_evidence::Run {
                                    sandbox,
                                    root: &root,
                                    timeout,
                                    target: None,
                                    heartbeat: Some(&heartbeat),
                                },
                                &results,
                            ))
                        },
                    )?;
                    write_json(out, "reports/red-on-base.json", &report)?;
                    criteria_lines.extend(report.lines());
                    floors.push(red_on_base::floor(
                        &report,
                        config.verify.red_on_base_blocking_from,
                        inputs.now,
                        sandbox.no_network(),
                    ));
                    red = Some(report);
                }
                None => floors.push(red_on_base::skipped("the story is not labelled type:bug")),
            }
        }
    }
    if let Some(report) = &coverage_report {
        criteria_lines.extend(report.lines());
    }
    floors.insert(0, coverage);
    if let Some(sandbox) = &sandbox {
        let mut phases = crate::timing::Phases::start();
        phases.report(
            "product code (fetches, builds, tests, checks)",
            sandbox.product_time(),
        );
    }
    drop(sandbox);

    // The pack.
    let artifacts =
        pack::build::artifacts(out, behaviour.as_ref()).map_err(io("hash the run folder"))?;
    let pack = pack::build::assemble(pack::build::Parts {
        repo,
        slug: &inputs.slug,
        story: inputs.story.as_ref(),
        binding: inputs.binding.as_ref(),
        base,
        head,
        actions: inputs.actions,
        criteria,
        artifacts,
        checks: floors.iter().map(pack::build::check).collect(),
        now: inputs.now,
    });
    let value = serde_json::to_value(&pack).map_err(|e| GateError::Schema(e.to_string()))?;
    pack::validate(&value).map_err(GateError::Schema)?;
    pack::write(&inputs.out, &pack, out)
        .map_err(io(format!("write the pack to `{}`", inputs.out.display())))?;
    let (pack_sha256, _) = crate::hash::file(&inputs.out.join("pack.json"))
        .map_err(io("read the pack back to hash it"))?;
    Ok(GateRun {
        pack,
        pack_dir: inputs.out.clone(),
        pack_sha256,
        floors,
        map,
        weakening: weakened,
        behaviour,
        red_on_base: red,
        criteria_lines,
        coverage: coverage_report,
    })
}

/// Runs one floor's work inside a `::group::` of the log (in Actions), so that what it reports while it
/// runs — heartbeats — is folded under it; outside Actions only what it reports is shown.
fn in_group<T>(
    log: &mut Log,
    title: &str,
    work: impl FnOnce(&mut Log) -> Result<T, GateError>,
) -> Result<T, GateError> {
    let _ = log.command(&format!("::group::{}", crate::log::escape_data(title)));
    let result = work(log);
    let _ = log.command("::endgroup::");
    result
}

/// A line from aayu itself, at least every ~10 s, while a long build or test runs: what, and for how
/// long.
fn beat(log: &RefCell<&mut Log>, what: &str, elapsed: Duration) {
    let _ = writeln!(
        log.borrow_mut(),
        "… {what}: still running after {} s",
        elapsed.as_secs()
    );
}

fn write_json<T: serde::Serialize>(out: &Path, rel: &str, value: &T) -> Result<(), GateError> {
    let path = out.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(format!("create `{}`", parent.display())))?;
    }
    crate::safe_fs::write_json(&path, value).map_err(io(format!("write `{}`", path.display())))
}

/// The sandbox settings of a run: the environment read at start-up, `[verify] env`, `sandbox_uids` and
/// `memory_limit_mb`, the repository (whose owner and group are never sandbox ids), and how many checks
/// may run at once.
pub fn sandbox_settings(
    env: &crate::settings::Env,
    config: &Config,
    jobs: Option<usize>,
    root: &Path,
) -> SandboxSettings {
    SandboxSettings {
        process_env: env.vars.clone(),
        extra_names: config.verify.env.clone(),
        uids: config.verify.sandbox_uids,
        jobs: jobs.unwrap_or(env.cores).max(1),
        workspace: Some(root.to_path_buf()),
        memory_limit_mb: config.verify.memory_limit_mb,
        chromium: Some(config.verify.chromium.clone()).filter(|c| !c.is_empty()),
        python: Some(config.verify.python.clone()).filter(|c| !c.is_empty()),
        python_wheels: Some(config.verify.python_wheels.clone())
            .filter(|c| !c.is_empty())
            .map(|c| root.join(c)),
        build_cache: crate::sandbox::build_cache::BuildCache::PerRun,
        llvm_tools: Some(config.verify.llvm_tools.clone())
            .filter(|c| !c.is_empty())
            .map(PathBuf::from),
    }
}
