//! The behaviour floor (SPEC §4): each selected check goes to its map's control tool in the sandbox, one
//! JSON request on stdin, one JSON result on stdout; artifacts are checked, copied and hashed into the run
//! folder, and `reports/behaviour.json` says what happened, with no timings.

pub(crate) mod app;

use std::collections::{BTreeSet, VecDeque};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::log::Log;
use crate::maps::Map;
use crate::maps::blocks::{ArtifactKind, CheckKind};
use crate::sandbox::preflight::{Tool, closed_folder};
use crate::sandbox::{self, Network, Sandbox};
use crate::select::Selected;

/// A check's status in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    Unreachable,
    Blocked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Unreachable => "unreachable",
            Status::Blocked => "blocked",
        }
    }
}

/// An artifact of a check, copied into the run folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// `/`-separated, relative to the run folder: `behaviour/<feature>.<check>/<path>`.
    pub path: String,
    pub kind: ArtifactKind,
    pub sha256: String,
    pub size: u64,
}

/// One check's line in `reports/behaviour.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckResult {
    pub product: String,
    pub feature: String,
    pub check: String,
    pub kind: CheckKind,
    pub selected_because: Vec<String>,
    pub network: Network,
    pub status: Status,
    pub reason: String,
    pub artifacts: Vec<Artifact>,
}

/// `reports/behaviour.json`.
#[derive(Debug, Clone, Serialize)]
pub struct BehaviourReport {
    pub schema_version: u32,
    pub checks: Vec<CheckResult>,
    /// How long each check took, by `<product>/<feature>.<check>`: never in the report (packs carry no
    /// timings), only in a sharded gate's timings sidecar.
    #[serde(skip)]
    pub elapsed: std::collections::BTreeMap<String, Duration>,
}

impl BehaviourReport {
    /// The floor holds when no check failed or was blocked.
    pub fn holds(&self) -> bool {
        !self
            .checks
            .iter()
            .any(|c| matches!(c.status, Status::Failed | Status::Blocked))
    }
}

/// What the run needs besides the maps and the selection.
pub struct Options {
    pub root: PathBuf,
    /// The run folder: `reports/` and `behaviour/` are written here.
    pub out: PathBuf,
    /// How many checks were asked to run at once (`--jobs`).
    pub jobs: usize,
    pub timeout: Duration,
    pub base_url: String,
    pub seed: Vec<String>,
    pub production: Vec<String>,
    pub targets: Vec<String>,
    pub require_isolation: bool,
    /// This very binary, which a leading `aayu` in a control argv stands for.
    pub aayu: PathBuf,
}

impl Options {
    /// The run's options from the configuration's `[verify]`: checks of `root` into the run folder `out`,
    /// `jobs` at once, `aayu` standing for this binary.
    pub fn of(
        verify: &crate::config::Verify,
        (root, out): (&std::path::Path, &std::path::Path),
        jobs: usize,
        aayu: PathBuf,
    ) -> Options {
        Options {
            root: root.to_path_buf(),
            out: out.to_path_buf(),
            jobs,
            timeout: Duration::from_secs(verify.check_timeout_s),
            base_url: verify.base_url.clone(),
            seed: verify.seed.clone(),
            production: verify.production.clone(),
            targets: verify.targets.clone(),
            require_isolation: verify.require_isolation,
            aayu,
        }
    }
}

/// Why the floor could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum BehaviourError {
    #[error("interrupted: no report is written for a run that did not finish")]
    Interrupted,
    #[error(transparent)]
    Target(#[from] app::TargetError),
    #[error("cannot write `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The result a control tool prints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolResult {
    status: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    artifacts: Vec<ToolArtifact>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolArtifact {
    path: String,
    kind: ArtifactKind,
}

/// Runs the selected checks in `sandbox` (whose dependencies [`packages`] names were fetched already) and
/// writes `reports/behaviour.json`; progress goes to `progress`.
pub fn run(
    maps: &[Map],
    selected: &[Selected],
    options: &Options,
    sandbox: &Sandbox,
    progress: &mut Log,
) -> Result<BehaviourReport, BehaviourError> {
    let needs_app = selected
        .iter()
        .any(|s| check_of(maps, s).kind.needs_network());
    if needs_app {
        app::check_target(&options.base_url, &options.production, &options.targets)?;
    }
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BehaviourError::Write { path, source }
    };
    let scratch = options.out.join(".out");
    for dir in [
        options.out.join("reports"),
        options.out.join("behaviour"),
        scratch.clone(),
    ] {
        std::fs::create_dir_all(&dir).map_err(write_err(&dir))?;
    }
    // The slot uids traverse the run folder to their own `out` folders, and read nothing else in it.
    for dir in [&options.out, &scratch] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
            .map_err(write_err(dir))?;
    }
    let progress = Mutex::new(progress);
    if options.jobs > 1 && sandbox.slots() == 1 && !sandbox.separate_uids() && selected.len() > 1 {
        let _ = writeln!(
            progress.lock().map_err(|_| BehaviourError::Interrupted)?,
            "note: checks run one at a time: without root every check runs as your uid, so only one at a time can be told apart and cleaned up"
        );
    }

    // Two phases: the cli and lib checks first, with no app running (a check without network must not be
    // handed a socket of a running app); then the app of the ui and api checks, started once and stopped
    // at the end whatever happens, and those checks.
    let (offline, online): (Vec<usize>, Vec<usize>) =
        (0..selected.len()).partition(|&n| !check_of(maps, &selected[n]).kind.needs_network());
    prebuild(maps, selected, options, sandbox);
    let total = selected.len();
    let mut results: Vec<Timed> = Vec::with_capacity(total);
    let mut done = 0usize;
    run_phase(
        &Phase {
            maps,
            selected,
            options,
            sandbox,
            spare: &BTreeSet::new(),
            app_down: None,
            total,
        },
        &offline,
        &mut done,
        &mut results,
        &progress,
    );
    if !online.is_empty() {
        let mut seed = None;
        let mut app_down: Option<AppDown> = None;
        if !options.seed.is_empty() {
            match start_seed(sandbox, options) {
                Ok(child) => seed = Some(child),
                Err(source) => {
                    app_down = Some(AppDown::SeedDidNotStart {
                        seed: options.seed.join(" "),
                        source,
                    })
                }
            }
        }
        if app_down.is_none() {
            let beat = |elapsed: Duration| {
                if let Ok(mut log) = progress.lock() {
                    let _ = writeln!(
                        log,
                        "… waiting for the app at {}: {} s",
                        options.base_url,
                        elapsed.as_secs()
                    );
                }
            };
            app_down = wait_for_app(seed.as_mut(), options, &beat).err();
        }
        let spare: BTreeSet<i32> = seed.as_ref().map(|s: &SeedApp| s.pid).into_iter().collect();
        run_phase(
            &Phase {
                maps,
                selected,
                options,
                sandbox,
                spare: &spare,
                app_down: app_down.as_ref(),
                total,
            },
            &online,
            &mut done,
            &mut results,
            &progress,
        );
        if let Some(seed) = seed {
            seed.stop(sandbox);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    if crate::sandbox::cleanup::interrupted() {
        return Err(BehaviourError::Interrupted);
    }
    let elapsed = results
        .iter()
        .map(|(c, took)| (format!("{}/{}.{}", c.product, c.feature, c.check), *took))
        .collect();
    let mut checks: Vec<CheckResult> = results.into_iter().map(|(c, _)| c).collect();
    checks.sort_by(|a, b| {
        (&a.product, &a.feature, &a.check).cmp(&(&b.product, &b.feature, &b.check))
    });
    let report = BehaviourReport {
        schema_version: 1,
        checks,
        elapsed,
    };
    let path = options.out.join("reports/behaviour.json");
    crate::safe_fs::write_json(&path, &report).map_err(write_err(&path))?;
    Ok(report)
}

/// Before checks run side by side: every distinct cargo `build` step of the selection, in slot 0, one at a
/// time, then every other slot's build folder seeded with slot 0's (a kept local folder only when it is
/// empty). So each dependency is compiled once, not once per slot, and each check's own build finds it
/// fresh. A step that follows a `set`, or has an `env` or `cwd` of its own, builds with other settings:
/// it is left to its check. A build that fails here is left to its check too, which says why.
fn prebuild(maps: &[Map], selected: &[Selected], options: &Options, sandbox: &Sandbox) {
    if sandbox.slots() < 2 || selected.len() < 2 {
        return;
    }
    let mut built: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    for s in selected {
        let map = &maps[s.map];
        let check = check_of(maps, s);
        if !map.uses_step_runner() {
            continue;
        }
        let Ok(toolchain) = toolchain_for(sandbox, map, check, options) else {
            continue;
        };
        for step in &check.steps {
            match step {
                crate::steps::Step::Set(_) => break,
                crate::steps::Step::Build { package, set }
                    if set.env.is_none() && set.cwd.is_none() =>
                {
                    let manifest = options.root.join(package).join("Cargo.toml");
                    if !manifest.is_file() || !built.insert((package.clone(), toolchain.clone())) {
                        continue;
                    }
                    let argv = crate::steps::runner::cargo_build_argv(&manifest);
                    let env = toolchain
                        .clone()
                        .map(|name| vec![("RUSTUP_TOOLCHAIN".to_string(), name.into())])
                        .unwrap_or_default();
                    let _ = sandbox.run(
                        sandbox::Job {
                            argv: &argv,
                            cwd: &options.root,
                            slot: 0,
                            network: false,
                            stdin: Vec::new(),
                            timeout: options.timeout,
                            env,
                            heartbeat: None,
                            stdout_cap: crate::sandbox::OUTPUT_CAP,
                        },
                        &BTreeSet::new(),
                    );
                }
                _ => {}
            }
        }
    }
    if !built.is_empty() {
        for slot in 1..sandbox.slots().min(selected.len()) {
            let _ = sandbox.seed_slot(slot);
        }
    }
}

/// What every check of a phase shares.
struct Phase<'a> {
    maps: &'a [Map],
    selected: &'a [Selected],
    options: &'a Options,
    sandbox: &'a Sandbox,
    /// The seed app's pid, which a check's cleanup leaves alone (without root).
    spare: &'a BTreeSet<i32>,
    /// Why the app is not there, which blocks every check that needs it.
    app_down: Option<&'a AppDown>,
    total: usize,
}

/// Runs the checks `which` (indices into the selection) on the sandbox's slots, reporting each as it ends.
fn run_phase(
    phase: &Phase,
    which: &[usize],
    done: &mut usize,
    results: &mut Vec<Timed>,
    progress: &Mutex<&mut Log>,
) {
    if which.is_empty() {
        return;
    }
    let queue: Mutex<VecDeque<usize>> = Mutex::new(which.iter().copied().collect());
    std::thread::scope(|scope| {
        let (sent, finished) = std::sync::mpsc::channel::<(usize, Timed, Vec<u8>)>();
        for slot in 0..phase.sandbox.slots().min(which.len()) {
            let (queue, sent) = (&queue, sent.clone());
            scope.spawn(move || {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                    let Some(n) = next else { break };
                    let selection = &phase.selected[n];
                    let check = check_of(phase.maps, selection);
                    let (result, log) = match phase.app_down {
                        Some(reason) if check.kind.needs_network() => (
                            blocked(
                                &phase.maps[selection.map],
                                selection,
                                check.kind,
                                Network::Allowed,
                                reason.to_string(),
                            ),
                            Vec::new(),
                        ),
                        _ => run_one(
                            phase.sandbox,
                            phase.maps,
                            selection,
                            slot,
                            phase.options,
                            phase.spare,
                            progress,
                        ),
                    };
                    if sent.send((n, result, log)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sent);
        // Progress as each check ends, in the order they end; the report is sorted afterwards.
        for (n, result, log) in finished.iter() {
            *done += 1;
            let map = &phase.maps[phase.selected[n].map];
            let label = format!("{}.{}", result.0.feature, result.0.check);
            let Ok(mut progress) = progress.lock() else {
                continue;
            };
            report_progress(
                &mut progress,
                *done,
                phase.total,
                &map.product,
                &label,
                &result,
                &log,
            );
            results.push(result);
        }
    });
}

fn check_of<'m>(maps: &'m [Map], s: &Selected) -> &'m crate::maps::Check {
    &maps[s.map].features[s.feature].checks[s.check]
}

/// A result and the timing of the check (which never goes into the report).
type Timed = (CheckResult, Duration);

fn blocked(map: &Map, s: &Selected, kind: CheckKind, network: Network, reason: String) -> Timed {
    (
        result(map, s, kind, network, Status::Blocked, reason, Vec::new()),
        Duration::ZERO,
    )
}

fn result(
    map: &Map,
    s: &Selected,
    kind: CheckKind,
    network: Network,
    status: Status,
    reason: String,
    artifacts: Vec<Artifact>,
) -> CheckResult {
    let feature = &map.features[s.feature];
    CheckResult {
        product: map.product.clone(),
        feature: feature.id.value.clone(),
        check: feature.checks[s.check].id.value.clone(),
        kind,
        selected_because: s.because.clone(),
        network,
        status,
        reason,
        artifacts,
    }
}

/// The argv of a map's control tool, then `check`: a leading `aayu` is this very binary; a relative path
/// is from the repository root.
fn control_argv(map: &Map, options: &Options) -> Vec<String> {
    let mut argv = map.control.clone();
    if let Some(first) = argv.first_mut() {
        if first == "aayu" {
            *first = options.aayu.display().to_string();
        } else if first.contains('/') && !first.starts_with('/') {
            *first = options
                .root
                .join(first.trim_start_matches("./"))
                .display()
                .to_string();
        }
    }
    argv.push("check".to_string());
    argv
}

/// Why a check is blocked before its control tool runs: its reason in the report.
#[derive(Debug, thiserror::Error)]
enum Unready {
    #[error("the map's `control` is empty: name the control tool's argv")]
    NoControl,
    /// The slot uid cannot reach the repository (the sandbox's words).
    #[error("{0}")]
    Unreachable(String),
    /// A tool the check needs is not there (the preflight's words).
    #[error("{0}")]
    Tool(String),
    #[error(
        "the sandbox uid cannot run the control tool `{program}`: {why}. Install it where other users can run it, or run aayu as an ordinary user"
    )]
    ClosedControl { program: String, why: ClosedControl },
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error("cannot prepare the check's out folder: {0}")]
    OutFolder(#[source] sandbox::SandboxError),
    /// A kept build folder that is refused (a link in its place) is the reason, not the tool.
    #[error("{0}")]
    BuildCache(#[source] sandbox::SandboxError),
    #[error("the control tool `{program}` could not start: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Why the sandbox uid cannot run a map's control tool.
#[derive(Debug, thiserror::Error)]
enum ClosedControl {
    #[error("it is not on the sandbox's PATH")]
    NotOnPath,
    #[error(
        "`{}` is mode {mode:04o}, which other users cannot pass (on the way to `{}`)",
        .folder.display(),
        .path.display()
    )]
    ClosedFolder {
        folder: PathBuf,
        mode: u32,
        path: PathBuf,
    },
    #[error("`{}` is not executable by other users", .path.display())]
    NotExecutable { path: PathBuf },
}

/// Runs one check in `slot`: blocked when it cannot run, else its control tool's word on it (and what the
/// tool wrote to stderr, for the log).
fn run_one(
    sandbox: &Sandbox,
    maps: &[Map],
    s: &Selected,
    slot: usize,
    options: &Options,
    spare: &BTreeSet<i32>,
    progress: &Mutex<&mut Log>,
) -> (Timed, Vec<u8>) {
    let map = &maps[s.map];
    let feature = &map.features[s.feature];
    let check = &feature.checks[s.check];
    let planned = if check.kind.needs_network() {
        Network::Allowed
    } else {
        Network::Isolated
    };
    let block = |why: Unready| {
        (
            blocked(map, s, check.kind, planned, why.to_string()),
            Vec::new(),
        )
    };
    let label = format!("{}.{}", feature.id.value, check.id.value);
    let argv = control_argv(map, options);
    let program = argv.first().map_or("", String::as_str);
    let toolchain = match ready(sandbox, map, check, program, options) {
        Ok(toolchain) => toolchain,
        Err(why) => return block(why),
    };
    let out = options
        .out
        .join(".out")
        .join(format!("{}-{}", map.product, label));
    if let Err(e) = sandbox.prepare(slot, &out) {
        return block(Unready::OutFolder(e));
    }
    // A line from aayu every ~10 s while the check runs (never inside another check's group: groups are
    // written whole when a check ends).
    let heartbeat = |elapsed: Duration| {
        if let Ok(mut log) = progress.lock() {
            let _ = writeln!(
                log,
                "… {} {label}: still running after {} s",
                map.product,
                elapsed.as_secs()
            );
        }
    };
    let request = serde_json::json!({
        "product": map.product,
        "feature": feature.id.value,
        "check": check.id.value,
        "out": out,
        "base_url": options.base_url,
        "root": options.root,
        "spec": check.spec,
    });
    let job = sandbox::Job {
        argv: &argv,
        cwd: &options.root,
        slot,
        network: check.kind.needs_network(),
        stdin: request.to_string().into_bytes(),
        timeout: options.timeout,
        env: control_env(sandbox, check, options, toolchain),
        heartbeat: Some(&heartbeat),
        stdout_cap: crate::sandbox::OUTPUT_CAP,
    };
    if let Err(e @ sandbox::SandboxError::BuildCache(_)) = sandbox.target_dir(slot) {
        return block(Unready::BuildCache(e));
    }
    let outcome = match sandbox.run(job, spare) {
        Ok(outcome) => outcome,
        Err(source) => {
            return block(Unready::Start {
                program: program.to_string(),
                source,
            });
        }
    };
    let log = outcome.stderr.clone();
    let network = outcome.network;
    if network == Network::NotIsolated && options.require_isolation {
        let reason = "the network filter could not be installed on this machine and `[verify] require_isolation` is set".to_string();
        return (
            (
                blocked(map, s, check.kind, network, reason).0,
                outcome.elapsed,
            ),
            log,
        );
    }
    let (status, reason, artifacts) = judge(
        &outcome,
        options.timeout,
        &out,
        &options.out,
        &format!("behaviour/{label}"),
    );
    let _ = std::fs::remove_dir_all(&out);
    (
        (
            result(map, s, check.kind, network, status, reason, artifacts),
            outcome.elapsed,
        ),
        log,
    )
}

/// Whether a check can run, before anything of it runs: its control tool named and runnable by the slot
/// uid, the repository reachable, every tool it needs there. `Ok` is the Rust toolchain its steps ask for.
fn ready(
    sandbox: &Sandbox,
    map: &Map,
    check: &crate::maps::Check,
    program: &str,
    options: &Options,
) -> Result<Option<String>, Unready> {
    if map.control.is_empty() {
        return Err(Unready::NoControl);
    }
    if let Some(why) = sandbox.reach_problem(&options.root) {
        return Err(Unready::Unreachable(why));
    }
    for tool in check_needs(map, check, &options.root) {
        sandbox.tool(tool).map_err(Unready::Tool)?;
    }
    if sandbox.separate_uids()
        && Tool::of_program(program).is_none()
        && let Some(why) = closed_control(sandbox, program)
    {
        return Err(Unready::ClosedControl {
            program: program.to_string(),
            why,
        });
    }
    Ok(toolchain_for(sandbox, map, check, options)?)
}

/// Why the slot uid cannot run the control tool `program` (not one of the tools the preflight knows),
/// or `None` when it can.
fn closed_control(sandbox: &Sandbox, program: &str) -> Option<ClosedControl> {
    let resolved = resolve_in(program, sandbox.env_value("PATH"));
    if resolved
        .as_ref()
        .is_some_and(|p| sandbox.reachable(p, true))
    {
        return None;
    }
    let closed = resolved.as_deref().and_then(closed_folder);
    Some(match (resolved, closed) {
        (None, _) => ClosedControl::NotOnPath,
        (Some(path), Some((folder, mode))) => ClosedControl::ClosedFolder { folder, mode, path },
        (Some(path), None) => ClosedControl::NotExecutable { path },
    })
}

/// The environment a check's control tool gets beyond the sandbox's: the Rust toolchain its steps ask
/// for, the browser of a ui check, and what the installs of its step packages gave them.
fn control_env(
    sandbox: &Sandbox,
    check: &crate::maps::Check,
    options: &Options,
    toolchain: Option<String>,
) -> Vec<(String, std::ffi::OsString)> {
    let mut env: Vec<(String, std::ffi::OsString)> = toolchain
        .map(|name| vec![("RUSTUP_TOOLCHAIN".to_string(), name.into())])
        .unwrap_or_default();
    // The browser a ui check drives (`[verify] chromium`, or the one on PATH): the built-in step
    // runner reads it, and so may a map's own control tool.
    if check.kind == CheckKind::Ui
        && let Some((_, chromium)) = sandbox.locate(Tool::Chromium)
    {
        env.push(("AAYU_CHROMIUM".to_string(), chromium.into()));
    }
    // What the installs of the step packages gave them (a Python venv), for the step runner's tests:
    // `{"<package>": {"VAR": "value", …}, …}`.
    let installed: serde_json::Map<String, serde_json::Value> = step_packages(check)
        .filter_map(|package| {
            let vars = sandbox.installed_env(&options.root, package);
            (!vars.is_empty()).then(|| {
                let vars: serde_json::Map<String, serde_json::Value> = vars
                    .into_iter()
                    .map(|(k, v)| (k, v.to_string_lossy().into_owned().into()))
                    .collect();
                (package.to_string(), vars.into())
            })
        })
        .collect();
    if !installed.is_empty() {
        env.push((
            crate::steps::runner::INSTALLED.to_string(),
            serde_json::Value::Object(installed).to_string().into(),
        ));
    }
    env
}

/// Turns a control tool's outcome into a status: its own word when it kept the protocol, else blocked.
fn judge(
    outcome: &sandbox::Outcome,
    timeout: Duration,
    out: &Path,
    run: &Path,
    dest: &str,
) -> (Status, String, Vec<Artifact>) {
    let blocked = |reason: String| (Status::Blocked, reason, Vec::new());
    let killed = if outcome.killed > 0 {
        format!(
            "; {} killed",
            match outcome.killed {
                1 => "1 leftover process was".to_string(),
                n => format!("{n} leftover processes were"),
            }
        )
    } else {
        String::new()
    };
    if !outcome.survivors.is_empty() {
        return blocked(format!(
            "{} of the check survived every round of the kill (pids {:?}): what it wrote cannot be trusted",
            crate::log::count(outcome.survivors.len(), "process", "processes"),
            outcome.survivors
        ));
    }
    if let Some(over) = &outcome.over_limit {
        return blocked(format!("the control tool went over a limit: {over}"));
    }
    if outcome.timed_out {
        return blocked(format!(
            "the control tool ran past the limit of {} s and was killed with every process it started",
            timeout.as_secs()
        ));
    }
    let stderr = String::from_utf8_lossy(&outcome.stderr).to_ascii_lowercase();
    if outcome.code != Some(0)
        && (stderr.contains("out of memory") || stderr.contains("cannot allocate memory"))
    {
        return blocked(format!(
            "the control tool ran out of memory: a check may hold `[verify] memory_limit_mb` with all its processes together, and each process twice that{killed}"
        ));
    }
    if let Some(signal) = outcome.signal {
        return blocked(format!(
            "the control tool crashed (killed by signal {signal}){killed}"
        ));
    }
    if outcome.stdout_truncated {
        return blocked(format!(
            "the control tool printed more than {} bytes on stdout (the rest was truncated); it must print one JSON result",
            sandbox::OUTPUT_CAP
        ));
    }
    let text = String::from_utf8_lossy(&outcome.stdout);
    let parsed: ToolResult = match serde_json::from_str(text.trim()) {
        Ok(parsed) => parsed,
        Err(e) => {
            let code = outcome
                .code
                .map_or_else(|| "no code".to_string(), |c| c.to_string());
            let what = if text.trim().is_empty() {
                "printed nothing on stdout".to_string()
            } else {
                format!("did not print one JSON result ({e})")
            };
            let stderr = String::from_utf8_lossy(&outcome.stderr);
            let said: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let said = if said.is_empty() {
                String::new()
            } else {
                format!(
                    "; its stderr ends: {}",
                    said[said.len().saturating_sub(3)..].join(" | ")
                )
            };
            return blocked(format!(
                "the control tool exited with {code} and {what}{killed}{said}"
            ));
        }
    };
    let status = match parsed.status.as_str() {
        "passed" => Status::Passed,
        "failed" => Status::Failed,
        "unreachable" => Status::Unreachable,
        other => {
            return blocked(format!(
                "the control tool answered the unknown status `{other}` (passed, failed or unreachable)"
            ));
        }
    };
    let mut artifacts = Vec::new();
    for artifact in &parsed.artifacts {
        match copy_artifact(out, &artifact.path, run, dest) {
            Ok((path, sha256, size)) => artifacts.push(Artifact {
                path,
                kind: artifact.kind,
                sha256,
                size,
            }),
            Err(why) => {
                return blocked(format!(
                    "artifact \"{}\": {why}",
                    artifact.path.escape_debug()
                ));
            }
        }
    }
    artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    let mut reason = parsed.reason;
    if !killed.is_empty() {
        reason.push_str(&killed);
    }
    (
        status,
        reason.trim_start_matches("; ").to_string(),
        artifacts,
    )
}

/// How large one artifact may be.
const ARTIFACT_CAP: u64 = 2 << 30;

/// Why an artifact a control tool named is refused; the reason names the artifact before the text.
#[derive(Debug, thiserror::Error)]
enum ArtifactError {
    #[error("an artifact path may not hold a control character (a newline, a tab, an escape)")]
    ControlCharacter,
    #[error("an artifact path must be relative to `out`")]
    NotRelative,
    #[error("an artifact path may not contain `..` or `.`")]
    Dots,
    #[error(
        "is or passes through a symbolic link (which could lead outside the check's `out` folder)"
    )]
    Link,
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("does not exist")]
    Missing,
    #[error("{0}")]
    Refused(#[source] crate::safe_fs::Refused),
    #[error("is larger than {ARTIFACT_CAP} bytes")]
    TooLarge,
    #[error("cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("has {0} hard links: copy the file into `out` instead of linking it")]
    HardLinks(u64),
    #[error("cannot be copied: {0}")]
    Copy(#[source] std::io::Error),
}

/// Copies an artifact from the check's `out` folder into the run folder while hashing it, never holding it
/// whole in memory. It is opened beneath `out` without following any link, non-blocking, as a regular file
/// only: `..`, an absolute path, a link, a FIFO or a device is refused.
fn copy_artifact(
    out: &Path,
    rel: &str,
    run: &Path,
    dest: &str,
) -> Result<(String, String, u64), ArtifactError> {
    if rel.chars().any(char::is_control) {
        return Err(ArtifactError::ControlCharacter);
    }
    if rel.is_empty() || rel.starts_with('/') || rel.contains('\\') {
        return Err(ArtifactError::NotRelative);
    }
    if Path::new(rel)
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
        || rel
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(ArtifactError::Dots);
    }
    let (source, size) = crate::safe_fs::open_file(out, rel).map_err(|e| match e {
        crate::safe_fs::Refused::Link { .. } => ArtifactError::Link,
        crate::safe_fs::Refused::NotRegular { what, .. } => ArtifactError::NotRegular(what),
        crate::safe_fs::Refused::Missing { .. } => ArtifactError::Missing,
        other => ArtifactError::Refused(other),
    })?;
    if size > ARTIFACT_CAP {
        return Err(ArtifactError::TooLarge);
    }
    // A hard link would bring in a file from anywhere on the file system the check could link: refused
    // whatever the kernel's `protected_hardlinks` says.
    let links = std::os::unix::fs::MetadataExt::nlink(
        &source.metadata().map_err(ArtifactError::Unreadable)?,
    );
    if links > 1 {
        return Err(ArtifactError::HardLinks(links));
    }
    let relative = format!("{dest}/{rel}");
    let target = run.join(&relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(ArtifactError::Copy)?;
    }
    let file = std::fs::File::create(&target).map_err(ArtifactError::Copy)?;
    let mut sink = crate::hash::Writer::new(file);
    std::io::copy(&mut std::io::Read::take(source, ARTIFACT_CAP), &mut sink)
        .map_err(ArtifactError::Copy)?;
    let (_, sha256, size) = sink.finish();
    Ok((relative, sha256, size))
}

/// Finds a program on the sandbox's `PATH` (or takes a path as it is).
fn resolve_in(program: &str, path: Option<&std::ffi::OsString>) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    std::env::split_paths(path?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Why a built-in step runner check cannot have the toolchain its steps need; each is the words of the
/// sandbox or of the package's runner that found it, which say the fix.
#[derive(Debug, thiserror::Error)]
enum ToolchainError {
    /// The sandbox uid cannot read the package.
    #[error("{0}")]
    Unreadable(String),
    /// The package's runner refuses the version of its tool on this machine.
    #[error(transparent)]
    ToolVersion(Box<crate::runners::RunnerError>),
    /// The toolchain the package asks for is not on this machine.
    #[error(transparent)]
    Missing(Box<crate::runners::RunnerError>),
    /// What the fetch left blocks the package's work.
    #[error("{0}")]
    Dependencies(String),
    /// The package's runner's tool is not there for the sandbox uid.
    #[error("{0}")]
    Tool(String),
}

/// For the built-in step runner: the toolchain its `build` and `test` steps need (cargo and the rustup
/// toolchain, or go). `Err` when the sandbox uid cannot run it, or the checkout asks for a toolchain this
/// machine lacks — checked up front so that the check is blocked with the fix instead of failing inside
/// cargo; `Ok(Some(name))` is the Rust toolchain the package's `rust-toolchain.toml` names.
fn toolchain_for(
    sandbox: &Sandbox,
    map: &Map,
    check: &crate::maps::Check,
    options: &Options,
) -> Result<Option<String>, ToolchainError> {
    if !map.uses_step_runner() {
        // A map's own control tool may build with cargo from the repository root: it gets the toolchain the
        // root's `rust-toolchain.toml` pins when that one is installed (it may not use Rust at all, so a
        // missing one does not block it).
        return Ok(sandbox
            .toolchains()
            .rust_for(&options.root, "")
            .ok()
            .flatten());
    }
    let mut tools = BTreeSet::new();
    let mut rust = None;
    for package in step_packages(check) {
        if let Some(why) = sandbox.read_problem(&options.root, package) {
            return Err(ToolchainError::Unreadable(why));
        }
        let step_id = check.steps.iter().find_map(|step| match step {
            crate::steps::Step::Test { test, .. } if test.package == package => {
                Some(crate::runners::TestId {
                    package: test.package.clone(),
                    rest: test.test.clone(),
                })
            }
            _ => None,
        });
        let found = match &step_id {
            Some(id) => crate::runners::package_of(&options.root, id),
            None => crate::runners::package(&options.root, package),
        };
        let Some(found) = found else {
            continue;
        };
        let package = found.package();
        tools.insert(package.runner.tool());
        if let Ok(version) = sandbox.tool(package.runner.tool()) {
            package
                .runner
                .accepts_tool(&options.root, &package, &version)
                .map_err(|e| ToolchainError::ToolVersion(Box::new(e)))?;
        }
        let env = package
            .runner
            .toolchain(sandbox.toolchains(), &options.root, &package)
            .map_err(|e| ToolchainError::Missing(Box::new(e)))?;
        if let Some((_, name)) = env.into_iter().find(|(k, _)| k == "RUSTUP_TOOLCHAIN") {
            rust.get_or_insert(name.to_string_lossy().into_owned());
        }
        if let Some(why) = sandbox.dependency_problem(&options.root, package.dir) {
            return Err(ToolchainError::Dependencies(why));
        }
    }
    for tool in tools {
        sandbox.tool(tool).map_err(ToolchainError::Tool)?;
    }
    Ok(rust)
}

/// The package folders a built-in step runner check builds or tests (its `build` and `test` steps),
/// normalised when the map loaded (`.`, `./x` and `x/` are the root and `x`).
fn step_packages(check: &crate::maps::Check) -> impl Iterator<Item = &str> {
    check.steps.iter().filter_map(crate::steps::Step::package)
}

/// One line per finished check; inside GitHub Actions a group per check whose title is aayu's and whose
/// body — the reason, the artifacts and what the control tool wrote to stderr, all from product code — is
/// fenced data.
#[allow(clippy::too_many_arguments)]
fn report_progress(
    out: &mut Log,
    n: usize,
    total: usize,
    product: &str,
    label: &str,
    result: &Timed,
    log: &[u8],
) {
    let (r, elapsed) = result;
    let head = format!(
        "[{n}/{total}] {product} {label}: {} ({:.1} s)",
        r.status.as_str(),
        elapsed.as_secs_f64()
    );
    if out.actions() {
        let mut body = Vec::new();
        if !r.reason.is_empty() {
            let _ = writeln!(body, "{}", r.reason);
        }
        for a in &r.artifacts {
            let _ = writeln!(body, "artifact {} ({})", a.path, kind_word(a.kind));
        }
        body.extend_from_slice(log);
        let _ = out.group(&head, &body);
    } else if r.reason.is_empty() {
        let _ = writeln!(out, "{head}");
    } else {
        let _ = writeln!(out, "{head}: {}", r.reason);
    }
}

/// An artifact kind as the contract spells it (`api-trace`).
pub(crate) fn kind_word(kind: ArtifactKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The tools a check needs beyond its control tool: the built-in step runner's builds and tests (each
/// package's runner's tool) and, for a `ui` check, its browser (Chromium); a control tool that is node
/// (or npm, npx) needs Node.
fn check_needs(map: &Map, check: &crate::maps::Check, root: &Path) -> BTreeSet<Tool> {
    let mut needs = BTreeSet::new();
    if map.uses_step_runner() {
        needs.extend(
            check
                .steps
                .iter()
                .filter_map(|step| match step {
                    crate::steps::Step::Test { test, .. } => crate::runners::package_of(
                        root,
                        &crate::runners::TestId {
                            package: test.package.clone(),
                            rest: test.test.clone(),
                        },
                    ),
                    other => crate::runners::package(root, other.package()?),
                })
                .map(|found| found.runner.tool()),
        );
        if check.steps.iter().any(crate::steps::Step::is_browser) || check.kind == CheckKind::Ui {
            needs.insert(Tool::Chromium);
        }
    } else if let Some(tool) = map.control.first().and_then(|p| Tool::of_program(p)) {
        needs.insert(tool);
    }
    needs
}

/// Every tool the selected checks need (for the preflight).
pub fn needs(maps: &[Map], selected: &[Selected], root: &Path) -> BTreeSet<Tool> {
    selected
        .iter()
        .flat_map(|s| check_needs(&maps[s.map], check_of(maps, s), root))
        .collect()
}

/// The packages whose dependencies the selected checks need fetched before they run: those the built-in
/// step runner builds or tests, each with the test a `test` step names (which runner it is, in a folder
/// two runners claim). A map's own control tool fetches nothing: its checks run offline.
pub fn packages(maps: &[Map], selected: &[Selected]) -> BTreeSet<(String, Option<String>)> {
    selected
        .iter()
        .filter(|s| maps[s.map].uses_step_runner())
        .flat_map(|s| check_of(maps, s).steps.iter())
        .filter_map(|step| match step {
            crate::steps::Step::Test { test, .. } => {
                Some((test.package.clone(), Some(test.test.clone())))
            }
            other => other.package().map(|p| (p.to_string(), None)),
        })
        .collect()
}

/// The package the seed app is built from, when ui or api checks are selected: the nearest folder with a
/// `Cargo.toml` or `go.mod` above the first argument of `[verify] seed` that is a file of the repository
/// (`sh examples/benefits-qa/seed` → `examples/benefits-qa`). Its dependencies are fetched with the
/// others, so a seed that builds the app can do so offline.
pub fn seed_package(
    maps: &[Map],
    selected: &[Selected],
    root: &Path,
    seed: &[String],
) -> Option<String> {
    let needs_app = selected
        .iter()
        .any(|s| check_of(maps, s).kind.needs_network());
    if !needs_app {
        return None;
    }
    let file = seed.iter().find_map(|arg| {
        let rel = Path::new(arg.trim_start_matches("./"));
        let plain = rel.is_relative()
            && rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        (plain && crate::safe_fs::is_regular(root, rel.to_str()?)).then(|| rel.to_path_buf())
    })?;
    file.ancestors().skip(1).find_map(|dir| {
        let rel = dir.to_str()?;
        crate::runners::package(root, rel)?;
        Some(rel.to_string())
    })
}

/// Why the app the ui and api checks drive is not there: the reason of every such check, blocked.
#[derive(Debug, thiserror::Error)]
enum AppDown {
    #[error("the seed app `{seed}` did not start: {source}")]
    SeedDidNotStart {
        seed: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "nothing answers at {base_url} and no `[verify] seed` starts the app: set `[verify] seed` (docs/behaviour-checks.md) or start it"
    )]
    NoSeed { base_url: String },
    /// `said` is the end of what the seed printed on stderr (`; its stderr ends: …`), or nothing.
    #[error("the seed app `{seed}` ended ({status}) before it answered at {base_url}{said}")]
    SeedEnded {
        seed: String,
        status: std::process::ExitStatus,
        base_url: String,
        said: String,
    },
    #[error(
        "the app did not answer at {base_url} within {} s (`[verify] check_timeout_s`){said}",
        .timeout.as_secs()
    )]
    TimedOut {
        base_url: String,
        timeout: Duration,
        said: String,
    },
}

/// Waits until the app answers at `base_url`, for as long as one check may run (a seed often builds the
/// app first). The error says why it is not there: the seed ended (with what it printed last), or the
/// time ran out.
fn wait_for_app(
    mut seed: Option<&mut SeedApp>,
    options: &Options,
    beat: &dyn Fn(Duration),
) -> Result<(), AppDown> {
    // Nobody starts an app: one probe, not a wait for something that is not coming.
    if seed.is_none() {
        if app::wait_until_up(&options.base_url, NO_SEED_PROBE) {
            return Ok(());
        }
        return Err(AppDown::NoSeed {
            base_url: options.base_url.clone(),
        });
    }
    let started = std::time::Instant::now();
    let mut next_beat = Duration::from_secs(10);
    loop {
        if app::wait_until_up(&options.base_url, Duration::from_millis(500)) {
            return Ok(());
        }
        if let Some(seed) = seed.as_deref_mut()
            && let Ok(Some(status)) = seed.child.try_wait()
        {
            return Err(AppDown::SeedEnded {
                seed: options.seed.join(" "),
                status,
                base_url: options.base_url.clone(),
                said: seed.said(),
            });
        }
        let elapsed = started.elapsed();
        if elapsed >= options.timeout {
            let said = seed.as_deref().map(SeedApp::said).unwrap_or_default();
            return Err(AppDown::TimedOut {
                base_url: options.base_url.clone(),
                timeout: options.timeout,
                said,
            });
        }
        if elapsed >= next_beat {
            beat(elapsed);
            next_beat += Duration::from_secs(10);
        }
    }
}

/// How long an app nobody starts (no `[verify] seed`) is given to answer: it is either running already or
/// not coming.
const NO_SEED_PROBE: Duration = Duration::from_secs(2);

/// The seed app of a run.
struct SeedApp {
    pid: i32,
    child: std::process::Child,
    /// The end of what it printed on stderr (at most [`SEED_SAID`] bytes).
    stderr: std::sync::Arc<Mutex<Vec<u8>>>,
    _interrupted: crate::sandbox::cleanup::Registered,
}

/// How much of the seed app's stderr is kept, for the reason when it does not come up.
const SEED_SAID: usize = 16 * 1024;

impl SeedApp {
    /// `; its stderr ends: …` with its last lines, or nothing.
    fn said(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            return String::new();
        }
        format!(
            "; its stderr ends: {}",
            lines[lines.len().saturating_sub(3)..].join(" | ")
        )
    }
}

impl SeedApp {
    /// Stops the app's whole process group (or every process of its uid).
    fn stop(mut self, sandbox: &Sandbox) {
        let owner = match sandbox.uid(usize::MAX) {
            Some(uid) => sandbox::procs::Owner::Uid(uid),
            None => sandbox::procs::Owner::Tree {
                leader: self.pid,
                keep: BTreeSet::new(),
            },
        };
        sandbox::procs::kill_all(&owner, Some(self.pid));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_seed(sandbox: &Sandbox, options: &Options) -> std::io::Result<SeedApp> {
    let mut child = sandbox.spawn_detached(&options.seed, &options.root)?;
    let pid = child.id() as i32;
    let stderr = std::sync::Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let kept = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = std::io::Read::read(&mut pipe, &mut buffer) {
                if let Ok(mut kept) = kept.lock() {
                    kept.extend_from_slice(&buffer[..n]);
                    let over = kept.len().saturating_sub(SEED_SAID);
                    kept.drain(..over);
                }
            }
        });
    }
    let owner = match sandbox.uid(usize::MAX) {
        Some(uid) => sandbox::procs::Owner::Uid(uid),
        None => sandbox::procs::Owner::Tree {
            leader: pid,
            keep: BTreeSet::new(),
        },
    };
    Ok(SeedApp {
        pid,
        child,
        stderr,
        _interrupted: crate::sandbox::cleanup::processes(owner),
    })
}

const FLOOR_TOOL: &str = "aayu behaviour floor";

/// The behaviour floor's verdict: a failed check fails it, a blocked one blocks it; the network is the
/// least isolation any check had.
pub fn floor(report: &BehaviourReport) -> crate::floors::FloorResult {
    use crate::floors::{Floor, FloorResult, Verdict};
    let count = |s: Status| report.checks.iter().filter(|c| c.status == s).count();
    let (failed, blocked) = (count(Status::Failed), count(Status::Blocked));
    let network = if report
        .checks
        .iter()
        .any(|c| c.network == Network::NotIsolated)
    {
        Network::NotIsolated
    } else if report.checks.iter().any(|c| c.network == Network::Allowed) {
        Network::Allowed
    } else {
        Network::Isolated
    };
    let detail = format!(
        "{}: {} passed, {failed} failed, {blocked} blocked, {} unreachable",
        crate::log::count(report.checks.len(), "check", "checks"),
        count(Status::Passed),
        count(Status::Unreachable)
    );
    let verdict = if failed > 0 {
        Verdict::Fail
    } else if blocked > 0 {
        Verdict::Blocked
    } else {
        Verdict::Pass
    };
    FloorResult::new(Floor::Behaviour, verdict, FLOOR_TOOL, detail)
        .numbers((failed + blocked) as f64, 0.0)
        .network(network)
}

/// The behaviour floor when no check ran: none selected (it holds), or the maps do not parse (blocked).
pub fn floor_without_checks(maps_broken: bool) -> crate::floors::FloorResult {
    use crate::floors::{Floor, FloorResult, Verdict};
    if maps_broken {
        FloorResult::new(
            Floor::Behaviour,
            Verdict::Blocked,
            FLOOR_TOOL,
            "the maps have contract errors: `aayu verify --map` lists them".into(),
        )
    } else {
        FloorResult::new(
            Floor::Behaviour,
            Verdict::Pass,
            FLOOR_TOOL,
            "no behaviour check selected by this change".into(),
        )
    }
}
