//! The sandbox every process of product code runs in (SPEC §4 "The sandbox"): control tools, builds,
//! tests and the seed app.
//!
//! - The environment is an allow-list: `PATH`, `LANG`, `CI`, a fresh `HOME` and `TMPDIR`, the toolchain's
//!   own variables, and the names `[verify] env` lists; never a token, a secret, `ACTIONS_*` or `INPUT_*`.
//! - As root, each parallel slot runs as a uid and gid of its own with no supplementary groups.
//! - Always: a session of its own, `no_new_privs`, resource limits; aayu itself is not dumpable and is a
//!   child subreaper, so a daemon that double-forks is still found and killed.
//! - No network for `cli` and `lib` checks: a seccomp filter refusing `socket(AF_INET|AF_INET6)` and the
//!   `io_uring_*` syscalls. What was really applied is recorded, never claimed when absent.
//! - No process whose behaviour the pull request's files can influence runs as root: the toolchain is found
//!   by reading data ([`toolchain`]), and dependencies are fetched by [`Sandbox::fetch`] as a slot uid, into
//!   caches that are then sealed (root-owned, read-only) for every later, offline step.

pub(crate) mod build_cache;
pub(crate) mod cleanup;
pub(crate) mod exec;
pub(crate) mod fetched;
pub(crate) mod install;
pub(crate) mod llvm;
pub(crate) mod preflight;
pub(crate) mod procs;
pub(crate) mod toolchain;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seccompiler::BpfProgram;
use serde::Serialize;

/// How much of a process's stdout (and stderr) is kept; the rest is read and dropped.
pub const OUTPUT_CAP: usize = 1 << 20;

/// The most processes a slot uid may have (`RLIMIT_NPROC`), and without root the most a check may start
/// beyond those its user already has: far above a build's or a browser's, low enough that aayu's watch
/// still gets the CPU while a fork bomb spins.
const NPROC: u64 = 512;

/// How often a long-running process is mentioned in the log.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// How many processes of one check end it (a fork bomb held at [`NPROC`] is still ended, and blocked).
const PROCESS_WATCH: u64 = NPROC * 9 / 10;

/// `1 process`, `3 processes`: how many processes a kill left, for the messages that say so.
pub(crate) fn processes(count: usize) -> String {
    if count == 1 {
        "1 process".to_string()
    } else {
        format!("{count} processes")
    }
}

/// What a tool (cargo, rustc, go) said when it failed, in one line for a reason: its error lines first
/// (`error:`, `error[E0425]:`, `go: …`, `x.go:3:2: …`), then the lines that follow the first of them —
/// never only the tail, where cargo puts its reminders (`As a reminder, you're using offline mode`). A tool
/// that printed no error line is quoted by its last lines.
pub fn said(output: &[u8], root: &Path) -> String {
    // The tree's own folder is this machine's: paths in it are said relative to it (`./src/x.rs`).
    let quoted = said_as_is(output);
    // Without a trailing `/` (git's work folder has one), or `ROOT/src` would read `.src`.
    let absolute = root.display().to_string().trim_end_matches('/').to_string();
    let quoted = if absolute.len() > 1 {
        quoted
            .replace(&format!("{absolute}/"), "./")
            .replace(&absolute, ".")
    } else {
        quoted
    };
    // The rest of the machine (a cargo home, a temp folder, Go's own source) as on every machine.
    crate::machine_paths::scrub(&quoted, root)
}

fn said_as_is(output: &[u8]) -> String {
    const ERRORS: usize = 4;
    const AFTER: usize = 5;
    const MOST: usize = 1200;
    let text = String::from_utf8_lossy(output);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let is_error = |line: &str| {
        let line = line.trim_start();
        line.starts_with("error:")
            || line.starts_with("error[")
            || (line.starts_with("go: ")
                && ![
                    "go: downloading ",
                    "go: finding ",
                    "go: extracting ",
                    "go: found ",
                ]
                .iter()
                .any(|p| line.starts_with(p)))
            || go_position(line)
            || js_error(line)
    };
    let quoted = match lines.iter().position(|l| is_error(l)) {
        None => lines[lines.len().saturating_sub(4)..].to_vec(),
        Some(first) => {
            let mut kept: Vec<&str> = lines
                .iter()
                .filter(|l| is_error(l))
                .take(ERRORS)
                .copied()
                .collect();
            // Cargo's chain of causes (`Caused by:` and the cause below it): the causes are kept.
            kept.extend(
                lines[first + 1..]
                    .iter()
                    .map(|l| l.trim())
                    .filter(|l| !is_error(l) && *l != "Caused by:")
                    .take(AFTER),
            );
            kept
        }
    };
    let joined = quoted.join(" | ");
    if joined.chars().count() <= MOST {
        return joined;
    }
    let cut: String = joined.chars().take(MOST).collect();
    format!("{cut}…")
}

/// `Error: EACCES: …`, `TypeError: …`, `Error [ERR_MODULE_NOT_FOUND]: …`: how node reports what ended
/// a process (the lines after it, an error's `code:`/`path:`, are kept with it).
fn js_error(line: &str) -> bool {
    let Some(word) = line.split([':', ' ']).next() else {
        return false;
    };
    word.ends_with("Error")
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && (line[word.len()..].starts_with(": ") || line[word.len()..].starts_with(" ["))
}

/// `path/x.go:3:2: …`, how go reports a compile error.
fn go_position(line: &str) -> bool {
    let Some((file, rest)) = line.split_once(".go:") else {
        return false;
    };
    !file.contains(' ') && rest.starts_with(|c: char| c.is_ascii_digit())
}

/// Environment variable names that never reach product code, whatever `[verify] env` says.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "GITHUB_TOKEN"
        || upper == "GH_TOKEN"
        || upper.starts_with("ACTIONS_")
        || upper.starts_with("INPUT_")
        || upper.ends_with("_TOKEN")
        || upper.ends_with("_SECRET")
        || upper.contains("PASSWORD")
}

/// What network a check had, as recorded in `reports/behaviour.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// The seccomp filter was installed: no inet sockets, no io_uring.
    Isolated,
    /// The check needs the network (ui and api checks).
    Allowed,
    /// No network was wanted but the filter could not be installed.
    NotIsolated,
}

impl Network {
    /// The lesser isolation of two (`not-isolated` < `allowed` < `isolated`): what a floor whose units
    /// ran in several places claims.
    pub fn weakest(self, other: Network) -> Network {
        let rank = |n: Network| match n {
            Network::NotIsolated => 0,
            Network::Allowed => 1,
            Network::Isolated => 2,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Network::Isolated => "isolated",
            Network::Allowed => "allowed",
            Network::NotIsolated => "not-isolated",
        }
    }
}

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "every sandbox uid from {first} to {last} is in use by other aayu runs on this machine"
    )]
    NoUid { first: u32, last: u32 },
    #[error(
        "`[verify] sandbox_uids` [{first}, {last}] includes {id}, {why}: product code must not run with that id (as uid or gid)"
    )]
    ForbiddenId {
        first: u32,
        last: u32,
        id: u32,
        why: String,
    },
    #[error("the sandbox's uid lock `{path}` {why}")]
    LockDir { path: PathBuf, why: String },
    #[error(transparent)]
    BuildCache(#[from] build_cache::BuildCacheError),
    #[error("cannot prepare the sandbox folder `{path}`")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a program asked for what it prints ([`Sandbox::ask`]) gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Folder(#[from] SandboxError),
    #[error("`{command}` cannot run as the sandbox uid: {source}")]
    CannotRun {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` fails as the sandbox uid{}", if .said.is_empty() { String::new() } else { format!(": {}", .said) })]
    Fails { command: String, said: String },
}

/// Why a package's dependencies were not fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Loan(#[from] LockLoanError),
    #[error(transparent)]
    Folder(#[from] SandboxError),
    #[error("cannot run `{command}`: {source}")]
    Start {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` ran past 600 s")]
    TimedOut { command: String },
    #[error("`{command}` went over a limit: {over}")]
    OverLimit { command: String, over: String },
    #[error("`{command}` exited with {status}: {said}")]
    Exited {
        command: String,
        status: String,
        said: String,
    },
    #[error("cannot copy `{lock}` onto the base: {source}")]
    CopyLock {
        lock: String,
        #[source]
        source: crate::safe_fs::Refused,
    },
    #[error("the fetch left no readable `{lock}`: {source}")]
    NoLock {
        lock: String,
        #[source]
        source: crate::safe_fs::Refused,
    },
}

/// Why a lock file could not be lent to the fetching slot uid.
#[derive(Debug, thiserror::Error)]
pub enum LockLoanError {
    #[error(transparent)]
    Folder(#[from] crate::safe_fs::Refused),
    #[error("cannot create `{name}`: {source}")]
    Create {
        name: String,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("cannot open `{path}`: {source}")]
    Open {
        path: String,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("{0}")]
    Stat(#[source] nix::errno::Errno),
    #[error("`{path}` is not a regular file")]
    NotRegular { path: String },
    #[error("{0}")]
    Lend(#[source] nix::errno::Errno),
}

/// The sandbox of one run: its folder, the environment it passes on, the uids of its slots.
pub struct Sandbox {
    dir: tempfile::TempDir,
    /// The allow-listed environment shared by every process (without HOME, TMPDIR, CARGO_TARGET_DIR).
    env: BTreeMap<String, OsString>,
    /// The uid of each slot, and last the seed app's, when aayu runs as root.
    uids: Vec<u32>,
    /// Locks on those uids, held for the whole run: two aayu runs on one machine never share a uid,
    /// so killing one run's processes by uid never touches the other's.
    _locks: Vec<nix::fcntl::Flock<std::fs::File>>,
    /// A local run's hold on its repository's kept cargo home (as root).
    _cargo_home_lock: Option<nix::fcntl::Flock<std::fs::File>>,
    /// The folder and the uids, cleaned up if aayu is interrupted.
    _cleanup: Vec<crate::sandbox::cleanup::Registered>,
    slots: usize,
    /// The seccomp filter of no-network processes (`socket()` for `AF_UNIX` only), and of the others
    /// (`AF_UNIX`, `AF_INET`, `AF_INET6`, `AF_NETLINK`); `None` where seccomp is not available.
    isolated: Option<BpfProgram>,
    networked: Option<BpfProgram>,
    /// `[verify] memory_limit_mb`, in bytes: what a check's processes together may hold resident.
    memory_limit: u64,
    /// `[verify] chromium`, when set.
    chromium: Option<String>,
    toolchains: toolchain::Toolchains,
    /// As root: the caches dependencies are fetched into, sealed once fetched.
    caches: Option<Caches>,
    /// What a fetch passes on besides the allow-list: proxies, certificates, Go's module settings.
    fetch_env: BTreeMap<String, OsString>,
    fetched: std::sync::atomic::AtomicBool,
    /// Whether aayu runs in GitHub Actions (the fix for a missing tool is then an image, not an install).
    in_action: bool,
    /// The tools checked so far this run (see [`preflight`]).
    checked: std::sync::Mutex<BTreeMap<preflight::Tool, preflight::Checked>>,
    /// Where the slots' cargo target folders are kept between local runs (`None`: the run's own).
    build_cache: build_cache::BuildCache,
    /// aayu's own environment, for the user's cache folder.
    process_env: BTreeMap<String, String>,
    /// When each sandboxed process started and ended (see [`Sandbox::product_time`]).
    spans: std::sync::Mutex<Vec<(Instant, Instant)>>,
    /// Lock files the checkout does not commit and did not have before this run: removed when the run
    /// ends (also when interrupted), so that `git status` is what it was.
    created_locks: std::sync::Mutex<Vec<(PathBuf, String, crate::sandbox::cleanup::Registered)>>,
    /// What the fetch found that blocks a package's work, by tree and package folder (a Go module that
    /// commits no `go.sum`).
    dependency_problems: std::sync::Mutex<BTreeMap<(PathBuf, String), String>>,
    /// The lock files whose versions were resolved at this run, for the report: tree, path, SHA-256.
    resolved: std::sync::Mutex<Vec<Resolved>>,
    /// What [`Sandbox::read_problem`] found per tree and package, so a package is walked once per run.
    read_checked: std::sync::Mutex<BTreeMap<(PathBuf, String), Option<String>>>,
    /// `[verify] python`, when set.
    python: Option<String>,
    /// The machine's wheelhouse (`[verify] python_wheels`, or aayu's own `PIP_FIND_LINKS`).
    python_wheels: Option<PathBuf>,
    /// The installs made this run: tree, package folder, and the variables its processes get.
    installed: std::sync::Mutex<Vec<install::Installed>>,
    /// Files outside the installs that links in them may keep leading to (a venv's interpreter).
    keep_links: std::sync::Mutex<BTreeSet<PathBuf>>,
    /// The installs' copies whose `node_modules` get a `.vite-temp` the tests' uid may write once sealed
    /// ([`install::Install::vite_temp`]).
    vite_temps: std::sync::Mutex<Vec<PathBuf>>,
    /// The repository's folder: no setting names a program or folder of the machine's inside it.
    workspace: Option<PathBuf>,
    /// `[verify] llvm_tools`, when set: the folder of the coverage floor's `llvm-profdata` and `llvm-cov`.
    llvm_tools: Option<PathBuf>,
    /// The LLVM tools found so far, by the `RUSTUP_TOOLCHAIN` they read the profiles of ([`llvm`]).
    llvm_checked: std::sync::Mutex<BTreeMap<Option<OsString>, llvm::Found>>,
}

/// A lock file the tree does not commit, as the fetch left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub root: PathBuf,
    /// Relative to the tree: `Cargo.lock`, `crates/x/Cargo.lock`.
    pub path: String,
    pub sha256: String,
    pub how: LockOrigin,
}

/// Where the versions of a lock the tree does not commit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockOrigin {
    /// Resolved by this run's fetch (nothing was there).
    Resolved,
    /// Copied from another tree (the checkout's, for red-on-base's base), then fetched.
    Copied,
    /// The working tree's own lock, which git does not track.
    Untracked,
}

impl Resolved {
    /// How the report says it: `` `Cargo.lock` is not committed: versions resolved at this run (sha256 …) ``.
    pub fn sentence(&self) -> String {
        let how = match self.how {
            LockOrigin::Resolved => "versions resolved at this run",
            LockOrigin::Copied => "the checkout's lock, resolved at this run, is used",
            LockOrigin::Untracked => "the working tree's untracked lock is used",
        };
        format!(
            "`{}` is not committed: {how} (sha256 {})",
            self.path, self.sha256
        )
    }
}

/// How one package's dependencies are fetched: a runner's plan ([`crate::runners::Runner::fetch`]), which
/// the sandbox runs as the first slot's uid, with the network and no secret.
#[derive(Debug, Clone)]
pub struct FetchPlan {
    /// The folder of what is fetched once (a Cargo workspace, a Go module), relative to the root.
    pub unit: String,
    pub argv: Vec<String>,
    /// Where it runs: this folder of the tree, or (`None`) a fresh folder of the slot.
    pub cwd: Option<String>,
    /// Variables beside the fetch's own (the toolchain).
    pub env: Vec<(String, OsString)>,
    /// The lock file it reads (and may write), relative to the root.
    pub lock: String,
    /// Whether the fetch writes the lock in place: it is lent to the slot uid for the fetch.
    pub lends_lock: bool,
    /// Whether the machine's own download cache may serve it offline first (`--offline` appended).
    pub offline_first: bool,
    /// Why the work is blocked when the tree does not commit the lock (`None`: the fetch resolves one,
    /// which is reported with its hash and removed at the run's end).
    pub without_committed_lock: Option<String>,
    /// An environment made for the package instead of one command (a Python virtual environment): the
    /// lock fields are then unused.
    pub install: Option<install::Install>,
}

/// One package of a tree to fetch for: its folder (normalised), the tool its runner needs, and its plan —
/// or why there can be none (a toolchain the machine lacks).
#[derive(Debug, Clone)]
pub struct FetchPackage {
    pub dir: String,
    pub tool: preflight::Tool,
    pub plan: Result<FetchPlan, String>,
}

/// A tree whose packages' dependencies are fetched: the checkout, or red-on-base's copy of the base.
#[derive(Debug, Clone)]
pub struct FetchTree {
    pub root: PathBuf,
    pub packages: Vec<FetchPackage>,
    /// The lock files of these packages (`Cargo.lock` where cargo reads it, a module's `go.sum`) that git
    /// holds for this tree — read from git (the checkout's index, the base's commit), never from a file's
    /// presence.
    pub committed: BTreeSet<String>,
    /// The tree whose lock a lock this one does not commit is copied from, so both build the same versions.
    pub lock_from: Option<PathBuf>,
}

impl FetchTree {
    /// The tree of `packages` in `root`, asking `committed` whether git holds each lock file.
    pub fn new(
        root: &Path,
        packages: Vec<FetchPackage>,
        committed: impl Fn(&str) -> bool,
    ) -> FetchTree {
        let committed = packages
            .iter()
            .filter_map(|p| p.plan.as_ref().ok())
            .map(|plan| plan.lock.clone())
            .filter(|lock| committed(lock))
            .collect();
        FetchTree {
            root: root.to_path_buf(),
            packages,
            committed,
            lock_from: None,
        }
    }
}

/// The per-run dependency caches (as root): written by a slot uid while fetching, then root-owned and
/// read-only.
struct Caches {
    cargo_home: PathBuf,
    go_mod_cache: PathBuf,
    /// The machine's own `CARGO_HOME` (root's), whose downloaded crates seed the per-run one.
    host_cargo_home: Option<PathBuf>,
    seeded: std::sync::atomic::AtomicBool,
    /// What of the machine's cargo configuration the fetch is given (file name, text).
    config: Vec<(String, String)>,
    /// A local run's kept cargo home: the stamp of the fetch that filled it ([`fetched`]), and whether it
    /// is that fetch's, sealed, as the run found it (not emptied yet).
    kept: Option<KeptHome>,
}

/// A lock held for the whole run (a uid's, a kept cargo home's).
type HeldLock = nix::fcntl::Flock<std::fs::File>;

/// A run's slots: as root one locked uid per slot plus one for the seed app, and how many slots that
/// makes; without root none, and one slot.
fn slot_uids(
    settings: &SandboxSettings,
    root: bool,
) -> Result<(Vec<u32>, Vec<HeldLock>, usize), SandboxError> {
    if !root {
        // Without root every check runs as aayu's own uid: one at a time, so that every process a
        // check leaves behind can be told apart from another check's and killed.
        return Ok((Vec::new(), Vec::new(), 1));
    }
    // One uid per slot plus one for the seed app, each one locked for this run.
    let (uids, locks) = lock_uids(settings, settings.jobs.max(1) + 1)?;
    if uids.len() < 2 {
        return Err(SandboxError::NoUid {
            first: settings.uids[0],
            last: settings.uids[1],
        });
    }
    let slots = uids.len() - 1;
    Ok((uids, locks, slots))
}

/// The run's cargo home: the run's own (`deps/cargo` in `dir`), or a local run's kept one as root, with
/// its lock and stamp — emptied now unless a finished fetch sealed it.
fn cargo_home(
    settings: &SandboxSettings,
    root: bool,
    dir: &Path,
) -> Result<(PathBuf, Option<HeldLock>, Option<KeptHome>), SandboxError> {
    // A local run as root keeps its target folders, and so needs a cargo home at a path that stays
    // the same between its runs (cargo names a registry crate's build by its source's path).
    // A local run's kept folder that is refused (a link planted in its place) stops the run before
    // anything runs, with the path and the fix.
    if let build_cache::BuildCache::Kept { repo } = &settings.build_cache {
        build_cache::kept_folder(&settings.process_env, repo)?;
    }
    let kept_home = match &settings.build_cache {
        build_cache::BuildCache::Kept { repo } if root => {
            build_cache::system_cargo_home(&settings.process_env, repo)
        }
        _ => None,
    };
    let Some((home, lock)) = kept_home else {
        return Ok((dir.join("deps/cargo"), None, None));
    };
    let stamp = home.with_file_name("cargo-home.stamp");
    // Left by a fetch that finished (its stamp is there) and sealed it: the fetch decides
    // whether it is still what the run needs; anything else is emptied now.
    let sealed = fetched::read_stamp(&stamp).is_some() && is_sealed(&home);
    if !sealed {
        let _ = std::fs::remove_file(&stamp);
        build_cache::remove(&home).map_err(|source| SandboxError::Folder {
            path: home.clone(),
            source,
        })?;
    }
    let kept = KeptHome {
        stamp,
        sealed: std::sync::atomic::AtomicBool::new(sealed),
    };
    Ok((home, Some(lock), Some(kept)))
}

impl Caches {
    /// As root: the run's caches under `dir`'s `deps` folder (made here), with the cargo home chosen.
    fn new(
        settings: &SandboxSettings,
        dir: &Path,
        cargo_home: PathBuf,
        kept: Option<KeptHome>,
    ) -> Result<Caches, SandboxError> {
        // The machine's own cargo configuration still applies where it says where crates come from
        // (mirrors, source replacement, proxies): root's, trusted, and readable by the slot uid. Never
        // its credentials, nor anything else of it.
        let config = cargo_home_of(settings)
            .map(|home| {
                ["config.toml", "config"]
                    .into_iter()
                    .filter_map(|name| {
                        let text = std::fs::read_to_string(home.join(name)).ok()?;
                        Some((name.to_string(), network_config(&text)?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let caches = Caches {
            cargo_home,
            go_mod_cache: dir.join("deps/go"),
            host_cargo_home: cargo_home_of(settings),
            seeded: std::sync::atomic::AtomicBool::new(false),
            config,
            kept,
        };
        let deps = dir.join("deps");
        std::fs::create_dir(&deps).map_err(|source| SandboxError::Folder {
            path: deps.clone(),
            source,
        })?;
        set_mode(&deps, 0o711)?;
        Ok(caches)
    }
}

/// The machine's wheelhouse: `[verify] python_wheels`, else aayu's own `PIP_FIND_LINKS` (one absolute
/// folder); `None` when it is not a folder.
fn python_wheels(settings: &SandboxSettings) -> Option<PathBuf> {
    settings
        .python_wheels
        .clone()
        .or_else(|| {
            settings
                .process_env
                .get("PIP_FIND_LINKS")
                .filter(|v| v.starts_with('/') && !v.contains(' '))
                .map(PathBuf::from)
        })
        .filter(|p| p.is_dir())
}

/// Whether a local run's cargo fetch is the last one's: its stamp, the hash of what it reads, and whether
/// they match.
struct Reuse {
    stamp: PathBuf,
    key: String,
    hit: bool,
}

/// The cargo home a local run as root keeps between its runs, and the stamp of the fetch that filled it.
struct KeptHome {
    stamp: PathBuf,
    sealed: std::sync::atomic::AtomicBool,
}

/// The toolchain and pass-through settings the sandbox is built from, resolved by the caller.
#[derive(Debug, Clone, Default)]
pub struct SandboxSettings {
    /// aayu's own environment, read once at start-up.
    pub process_env: BTreeMap<String, String>,
    /// `[verify] env`: extra names to pass on.
    pub extra_names: Vec<String>,
    /// `[verify] sandbox_uids`.
    pub uids: [u32; 2],
    /// How many checks may run at once.
    pub jobs: usize,
    /// The repository's folder: its owner's uid and its gid are never sandbox ids.
    pub workspace: Option<PathBuf>,
    /// `[verify] memory_limit_mb`.
    pub memory_limit_mb: u64,
    /// `[verify] chromium`: a path or a program name; `None` looks for the usual names on `PATH`.
    pub chromium: Option<String>,
    /// Whether the slots' cargo target folders are the run's, or kept between local runs.
    pub build_cache: build_cache::BuildCache,
    /// `[verify] python`: the interpreter Python packages are installed with (a path or a name on
    /// `PATH`); `None` looks for a `python3` on `PATH` the sandbox uid can run.
    pub python: Option<String>,
    /// `[verify] python_wheels`: a wheelhouse of the machine's, linked read-only into each run's.
    pub python_wheels: Option<PathBuf>,
    /// `[verify] llvm_tools`: the folder of the LLVM tools the coverage floor reads Rust's profiles
    /// with; `None` looks for those of rustc's own LLVM version ([`llvm`]).
    pub llvm_tools: Option<PathBuf>,
}

/// One process to run in the sandbox.
pub struct Job<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub slot: usize,
    pub network: bool,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Variables set for this process only (the step runner's own, the check's).
    pub env: Vec<(String, OsString)>,
    /// Told every ~10 s how long the process has been running, for a line in the log.
    pub heartbeat: Option<&'a dyn Fn(Duration)>,
    /// How much of its stdout is kept ([`OUTPUT_CAP`], or more for a test runner's record).
    pub stdout_cap: usize,
}

/// How a sandboxed process ended.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
    pub network: Network,
    pub elapsed: Duration,
    /// How many processes were still alive when the check ended and were killed.
    pub killed: usize,
    /// A limit the check went over (memory, processes), which ended it: the reason, in words.
    pub over_limit: Option<String>,
    /// Processes of the check still alive after every round of the kill.
    pub survivors: Vec<i32>,
}

impl Sandbox {
    /// Prepares the sandbox of a run: makes aayu undumpable and a child subreaper, builds the
    /// environment allow-list and the seccomp filter, and a folder for the slots.
    pub fn new(settings: &SandboxSettings) -> Result<Sandbox, SandboxError> {
        // Same-uid processes cannot read an undumpable process's /proc files (environ, mem).
        let _ = nix::sys::prctl::set_dumpable(false);
        // Orphans of a check (a daemon that forked twice) come back to aayu instead of init.
        let _ = nix::sys::prctl::set_child_subreaper(true);
        let root = nix::unistd::geteuid().is_root();
        if root {
            refuse_forbidden_ids(settings)?;
        }
        let dir = tempfile::Builder::new()
            .prefix("aayu-sandbox-")
            .tempdir()
            .map_err(|source| SandboxError::Folder {
                path: std::env::temp_dir(),
                source,
            })?;
        // Traversable by the slot uids, readable by nobody else.
        set_mode(dir.path(), 0o711)?;
        let (uids, locks, slots) = slot_uids(settings, root)?;
        let mut cleanup = vec![crate::sandbox::cleanup::dir(dir.path())];
        cleanup.extend(
            uids.iter()
                .map(|&uid| crate::sandbox::cleanup::processes(procs::Owner::Uid(uid))),
        );
        let toolchains = toolchain::Toolchains::detect(&settings.process_env);
        let (cargo_home, cargo_home_lock, kept) = cargo_home(settings, root, dir.path())?;
        let caches = if root {
            Some(Caches::new(settings, dir.path(), cargo_home, kept)?)
        } else {
            None
        };
        let mut sandbox = Sandbox {
            dir,
            env: BTreeMap::new(),
            uids,
            _locks: locks,
            _cargo_home_lock: cargo_home_lock,
            _cleanup: cleanup,
            slots,
            isolated: socket_filter(&[libc::AF_UNIX]),
            networked: socket_filter(&[
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
            ]),
            memory_limit: settings.memory_limit_mb.saturating_mul(1 << 20),
            chromium: settings.chromium.clone(),
            toolchains,
            caches,
            fetch_env: fetch_env(settings),
            fetched: std::sync::atomic::AtomicBool::new(false),
            in_action: settings
                .process_env
                .get("GITHUB_ACTIONS")
                .is_some_and(|v| v == "true"),
            checked: std::sync::Mutex::new(BTreeMap::new()),
            build_cache: settings.build_cache.clone(),
            process_env: settings.process_env.clone(),
            spans: std::sync::Mutex::new(Vec::new()),
            created_locks: std::sync::Mutex::new(Vec::new()),
            dependency_problems: std::sync::Mutex::new(BTreeMap::new()),
            resolved: std::sync::Mutex::new(Vec::new()),
            read_checked: std::sync::Mutex::new(BTreeMap::new()),
            python: settings.python.clone(),
            python_wheels: python_wheels(settings),
            installed: std::sync::Mutex::new(Vec::new()),
            keep_links: std::sync::Mutex::new(BTreeSet::new()),
            vite_temps: std::sync::Mutex::new(Vec::new()),
            workspace: settings.workspace.clone(),
            llvm_tools: settings.llvm_tools.clone(),
            llvm_checked: std::sync::Mutex::new(BTreeMap::new()),
        };
        sandbox.prepare_caches()?;
        sandbox.env = allowed_env(settings, &sandbox.toolchains, sandbox.caches.as_ref());
        sandbox.ask_go_version();
        Ok(sandbox)
    }

    /// As root: the caches' folders for the first slot's uid to fill — Go's download folder, and the
    /// cargo home unless a kept one is sealed as the last run left it.
    fn prepare_caches(&self) -> Result<(), SandboxError> {
        let Some(caches) = &self.caches else {
            return Ok(());
        };
        // Go's download folder exists before the cache is sealed, so that a module missing from it is
        // reported by its path (`…/cache/download/example.com: permission denied`), not as a bare
        // `mkdir …/cache` failure.
        let go_download = caches.go_mod_cache.join("cache");
        for dir in [
            &caches.go_mod_cache,
            &go_download,
            &go_download.join("download"),
        ] {
            self.prepare(0, dir)?;
            set_mode(dir, 0o755)?;
        }
        let sealed = caches
            .kept
            .as_ref()
            .is_some_and(|k| k.sealed.load(std::sync::atomic::Ordering::SeqCst));
        if !sealed {
            self.fresh_cargo_home(caches)?;
        }
        Ok(())
    }

    /// What a no-network process here really gets: `isolated` when the filter can be installed.
    pub fn no_network(&self) -> Network {
        if self.isolated.is_some() {
            Network::Isolated
        } else {
            Network::NotIsolated
        }
    }

    /// How many checks run at once.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Whether product code runs as uids of its own (aayu is root).
    pub fn separate_uids(&self) -> bool {
        !self.uids.is_empty()
    }

    /// The uid of a slot (the seed app's slot is `usize::MAX`), when aayu is root.
    pub fn uid(&self, slot: usize) -> Option<u32> {
        if slot == usize::MAX {
            self.uids.last().copied()
        } else {
            self.uids.get(slot).copied()
        }
    }

    /// A fresh folder owned by the slot's uid, for one process (HOME, TMPDIR).
    pub fn fresh_dir(&self, slot: usize, name: &str) -> Result<PathBuf, SandboxError> {
        let path = self.dir.path().join(name);
        let _ = std::fs::remove_dir_all(&path);
        self.prepare(slot, &path)?;
        Ok(path)
    }

    /// Creates a folder (anywhere) and hands it to the slot's uid (as root), with no access for others.
    pub fn prepare(&self, slot: usize, path: &Path) -> Result<(), SandboxError> {
        let failed = |source: std::io::Error| SandboxError::Folder {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(path).map_err(failed)?;
        if let Some(uid) = self.uid(slot) {
            let id = (
                nix::unistd::Uid::from_raw(uid),
                nix::unistd::Gid::from_raw(uid),
            );
            // The folder itself, never a link in its place.
            let fd = crate::safe_fs::open_root(path)
                .map_err(|e| failed(std::io::Error::other(e.to_string())))?;
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(failed(std::io::Error::other("a symbolic link")));
            }
            nix::unistd::fchown(fd.as_fd(), Some(id.0), Some(id.1))
                .map_err(|e| failed(e.into()))?;
        }
        set_mode(path, 0o700)
    }

    /// Makes the cargo home of the run's fetch empty, for the first slot's uid to fill, with the
    /// machine's cargo configuration in it.
    fn fresh_cargo_home(&self, caches: &Caches) -> Result<(), SandboxError> {
        let home = &caches.cargo_home;
        if let Some(kept) = &caches.kept {
            let _ = std::fs::remove_file(&kept.stamp);
            kept.sealed
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        build_cache::remove(home).map_err(|source| SandboxError::Folder {
            path: home.clone(),
            source,
        })?;
        self.prepare(0, home)?;
        set_mode(home, 0o755)?;
        for (name, text) in &caches.config {
            let to = home.join(name);
            let _ = std::fs::write(&to, text);
            let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644));
        }
        Ok(())
    }

    /// Where a slot's build cache lives for the whole run, so that a package is built once per slot; for
    /// a local run, kept between runs ([`build_cache`]).
    pub fn target_dir(&self, slot: usize) -> Result<PathBuf, SandboxError> {
        if let build_cache::BuildCache::Kept { repo } = &self.build_cache {
            return match self.uid(slot) {
                Some(uid) => build_cache::system_folder(&self.process_env, repo, uid),
                None => build_cache::user_folder(&self.process_env, repo),
            }
            .map_err(SandboxError::BuildCache);
        }
        self.named_target_dir(slot, "target")
    }

    /// Seeds `slot`'s build folder `name` (another tree's, such as red-on-base's base) with a copy of slot
    /// 0's, which the head's builds wrote, handed to `slot`'s uid; a folder seeded already is left as it
    /// is. So a registry or git dependency is compiled once per run; the tree's own packages are rebuilt
    /// when the tree's files are newer than the copy ([`build_cache::touch_tree`]).
    pub fn seed_target(&self, slot: usize, name: &str) -> Result<PathBuf, SandboxError> {
        let to = self.named_target_dir(slot, name)?;
        self.seed(slot, &to)?;
        Ok(to)
    }

    /// Copies slot 0's build folder into `to`, `slot`'s, when `to` is empty.
    fn seed(&self, slot: usize, to: &Path) -> Result<(), SandboxError> {
        let from = self.target_dir(0)?;
        let failed = |source: std::io::Error| SandboxError::Folder {
            path: to.to_path_buf(),
            source,
        };
        if std::fs::read_dir(to).map_err(failed)?.next().is_none() {
            build_cache::copy_tree(&from, to, self.uid(0), self.uid(slot)).map_err(failed)?;
        }
        Ok(())
    }

    /// Seeds `slot`'s build folder with a copy of slot 0's (see [`Sandbox::seed_target`]) when it is empty.
    pub fn seed_slot(&self, slot: usize) -> Result<(), SandboxError> {
        self.seed(slot, &self.target_dir(slot)?)
    }

    /// A build cache of its own for another tree (red-on-base's copy of the base): cargo names a path
    /// package's build by its path relative to its workspace, so two trees of one package would share the
    /// cache and a build of the base could be taken for fresh from the head's.
    pub fn named_target_dir(&self, slot: usize, name: &str) -> Result<PathBuf, SandboxError> {
        // The seed app's slot is `usize::MAX`: named so.
        let owner = if slot == usize::MAX {
            "seed".to_string()
        } else {
            format!("slot-{slot}")
        };
        let path = self.dir.path().join(format!("{owner}-{name}"));
        if !path.exists() {
            self.prepare(slot, &path)?;
        }
        Ok(path)
    }

    /// When Go's `VERSION` file is not beside the `go` on PATH (a version manager's shim, say), asks
    /// `go env GOVERSION` — as a slot uid, offline, from a fresh folder, never as root.
    fn ask_go_version(&mut self) {
        if self
            .toolchains
            .go
            .as_ref()
            .is_none_or(|g| g.version.is_some())
        {
            return;
        }
        let asked = self.ask(&["go", "env", "GOVERSION"], &[], Duration::from_secs(30));
        if let (Ok(text), Some(go)) = (asked, self.toolchains.go.as_mut()) {
            let text = text.trim().to_string();
            if text.starts_with("go") {
                go.version = Some(text);
            }
        }
    }

    /// Runs a program as the first slot's uid, offline, from a fresh folder, for what it prints (its
    /// first 1 MiB); `Err` says how it failed.
    pub(crate) fn ask(
        &self,
        argv: &[&str],
        env: &[(String, OsString)],
        timeout: Duration,
    ) -> Result<String, AskError> {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let cwd = self.fresh_dir(0, "ask")?;
        let ran = self
            .run(
                Job {
                    argv: &argv,
                    cwd: &cwd,
                    slot: 0,
                    network: false,
                    stdin: Vec::new(),
                    timeout,
                    env: env.to_vec(),
                    heartbeat: None,
                    stdout_cap: crate::sandbox::OUTPUT_CAP,
                },
                &BTreeSet::new(),
            )
            .map_err(|source| AskError::CannotRun {
                command: argv.join(" "),
                source,
            })?;
        if ran.code != Some(0) {
            return Err(AskError::Fails {
                command: argv.join(" "),
                said: said(&ran.stderr, &cwd),
            });
        }
        Ok(String::from_utf8_lossy(&ran.stdout).into_owned())
    }

    /// The toolchains of this machine or image, and what a checkout may ask of them.
    pub fn toolchains(&self) -> &toolchain::Toolchains {
        &self.toolchains
    }

    /// Fetches the dependencies of every package of every tree (the checkout, and red-on-base's copy of the
    /// base), once per run and before any test or check: `cargo fetch` or `go mod download`, as the first
    /// slot's uid, with the network and no secret, from a fresh working directory. Then every process of
    /// that uid is gone (each run kills them) and, as root, the caches are sealed: root-owned and read-only
    /// to every later step, which runs offline. A failure is a warning on `progress`: the offline build
    /// then says what is missing.
    ///
    /// A lock file the tree does not commit is resolved here (a library's `Cargo.lock`, most often): into
    /// the folder cargo reads it from, read-only to every later step, reported with its hash, and removed
    /// when the run ends. A tree with `lock_from` gets a copy of that tree's lock first. A Go module that
    /// requires modules but commits no `go.sum` is not fetched: its work is blocked with the fix.
    pub fn fetch(&self, trees: &[FetchTree], progress: &mut dyn std::io::Write) {
        if self.fetched.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = writeln!(
                progress,
                "warning: dependencies are fetched once per run; a second fetch was skipped"
            );
            return;
        }
        // A local run whose last cargo fetch read the same files has nothing new to fetch ([`fetched`]).
        let reuse = self.cargo_reuse(trees);
        let skip_cargo = reuse.as_ref().is_some_and(|r| r.hit);
        if !skip_cargo
            && let Some(caches) = &self.caches
            && caches
                .kept
                .as_ref()
                .is_some_and(|k| k.sealed.load(std::sync::atomic::Ordering::SeqCst))
            && let Err(e) = self.fresh_cargo_home(caches)
        {
            let _ = writeln!(
                progress,
                "warning: cannot empty the kept cargo home for this run's fetch: {e}"
            );
        }
        let cargo_failed = self.fetch_trees(trees, skip_cargo, progress);
        let sealed = self.seal_caches(skip_cargo, progress);
        // A complete fetch is stamped for the next local run; a failed one is done again.
        if let Some(reuse) = reuse
            && !reuse.hit
            && !cargo_failed
            && sealed
            // What the fetch left (it may have written the lock) is what the next run is compared with.
            && let Some(key) = self.cargo_reuse(trees).map(|r| r.key)
        {
            let _ = crate::safe_fs::write_atomic(&reuse.stamp, format!("{key}\n").as_bytes());
            if let Some(kept) = self.caches.as_ref().and_then(|c| c.kept.as_ref()) {
                kept.sealed.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// Runs the fetch of every package of every tree, once per unit; a package whose fetch cannot
    /// happen, or whose work it blocks, is said on `progress` and recorded. Whether a cargo fetch failed.
    fn fetch_trees(
        &self,
        trees: &[FetchTree],
        skip_cargo: bool,
        progress: &mut dyn std::io::Write,
    ) -> bool {
        let mut cargo_failed = false;
        // One fetch per unit (a Cargo workspace, a Go module): a later package of a unit shares its problem.
        let mut seen: BTreeMap<(PathBuf, preflight::Tool, String), Option<String>> =
            BTreeMap::new();
        for tree in trees {
            let root = &tree.root;
            for package in &tree.packages {
                // What cannot run here is blocked with its reason where it is used: no fetch to fail first.
                if self.reach_problem(root).is_some() || self.tool(package.tool).is_err() {
                    continue;
                }
                let shown = toolchain::shown_dir(&package.dir).to_string();
                let plan = match &package.plan {
                    Ok(plan) => plan,
                    Err(why) => {
                        let _ = writeln!(
                            progress,
                            "warning: fetching the dependencies of `{shown}` failed: {why}"
                        );
                        // What the plan could not be made for blocks the package's work, with why.
                        if let Ok(mut problems) = self.dependency_problems.lock() {
                            problems.insert((root.clone(), package.dir.clone()), why.clone());
                        }
                        continue;
                    }
                };
                let key = (root.clone(), package.tool, plan.unit.clone());
                if skip_cargo && package.tool == preflight::Tool::Cargo {
                    if seen.insert(key, None).is_none()
                        && let Some(resolved) = self.untracked_lock(tree, plan)
                    {
                        let _ = writeln!(progress, "note: {}", resolved.sentence());
                    }
                    continue;
                }
                if let Some(problem) = seen.get(&key) {
                    if let (Some(why), Ok(mut problems)) =
                        (problem, self.dependency_problems.lock())
                    {
                        problems.insert((root.clone(), package.dir.clone()), why.clone());
                    }
                    continue;
                }
                let beat = |elapsed: Duration| {
                    let _ = writeln!(
                        progress,
                        "… fetching the dependencies of `{shown}`: still running after {} s",
                        elapsed.as_secs()
                    );
                };
                let fetched = {
                    let beat = std::cell::RefCell::new(beat);
                    self.fetch_package(tree, &package.dir, plan, &|elapsed| {
                        (beat.borrow_mut())(elapsed)
                    })
                };
                let mut problem = None;
                cargo_failed |= package.tool == preflight::Tool::Cargo && fetched.is_err();
                match fetched {
                    Err(Blocked::Fetch(why)) => {
                        let _ = writeln!(
                            progress,
                            "warning: fetching the dependencies of `{shown}` failed: {why}"
                        );
                    }
                    Err(Blocked::Work(why)) => {
                        let _ = writeln!(
                            progress,
                            "warning: fetching the dependencies of `{shown}` failed: {why}"
                        );
                        problem = Some(why);
                    }
                    Ok(Some(resolved)) => {
                        let _ = writeln!(progress, "note: {}", resolved.sentence());
                    }
                    Ok(None) => {}
                }
                seen.insert(key, problem);
            }
        }
        cargo_failed
    }

    /// As root, after the fetch: the machine's cargo configuration written again, the installs sealed
    /// (or removed and their packages blocked), the caches made root's and read-only. Whether every
    /// cache was sealed.
    fn seal_caches(&self, skip_cargo: bool, progress: &mut dyn std::io::Write) -> bool {
        let mut sealed = true;
        if let Some(caches) = &self.caches {
            // The machine's cargo configuration, written again: the fetch's uid could replace what was
            // written before it in the folder it owned.
            if !skip_cargo {
                for name in ["config.toml", "config"] {
                    let at = caches.cargo_home.join(name);
                    let _ = build_cache::remove(&at);
                    if let Some((_, text)) = caches.config.iter().find(|(n, _)| n == name) {
                        let _ = std::fs::write(&at, text);
                        let _ =
                            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o644));
                    }
                }
            }
            let installs = self.installs_dir();
            let keep: Vec<PathBuf> = self
                .keep_links
                .lock()
                .map(|k| k.iter().cloned().collect())
                .unwrap_or_default();
            if installs.exists()
                && let Err(e) = seal_with(&installs, &keep, true)
            {
                // An install left writable is no install: every package that has one is blocked, and
                // what was installed is removed.
                let why = format!(
                    "the installed environments could not be made read-only ({e}): their tests are not run"
                );
                let _ = writeln!(progress, "warning: {why}");
                if let (Ok(mut installed), Ok(mut problems)) =
                    (self.installed.lock(), self.dependency_problems.lock())
                {
                    for (root, package, _) in installed.drain(..) {
                        problems.insert((root, package), why.clone());
                    }
                }
                let _ = build_cache::remove(&installs);
            } else if let Ok(copies) = self.vite_temps.lock() {
                for copy in copies.iter() {
                    install::vite_temps(copy, self.uid(0));
                }
            }
            for dir in [&caches.cargo_home, &caches.go_mod_cache] {
                if skip_cargo && dir == &caches.cargo_home {
                    continue;
                }
                if let Err(e) = seal(dir) {
                    sealed = false;
                    let _ = writeln!(
                        progress,
                        "warning: cannot make the dependency cache `{}` read-only: {e}",
                        dir.display()
                    );
                }
            }
        }
        sealed
    }

    /// Whether this local run's cargo fetch would fetch what the last one did, into the cargo home it
    /// filled (see [`fetched`]); `None` for the gate, and where a fetch runs whatever the stamp says.
    fn cargo_reuse(&self, trees: &[FetchTree]) -> Option<Reuse> {
        let build_cache::BuildCache::Kept { .. } = &self.build_cache else {
            return None;
        };
        // A run with no cargo package has nothing to skip, and no reason to run cargo's preflight.
        let any_cargo = trees
            .iter()
            .flat_map(|t| &t.packages)
            .any(|p| p.tool == preflight::Tool::Cargo && p.plan.is_ok());
        if !any_cargo {
            return None;
        }
        let cargo = self.tool(preflight::Tool::Cargo).ok()?;
        let config = self
            .caches
            .as_ref()
            .map(|c| c.config.clone())
            .unwrap_or_default();
        let key = fetched::cargo_key(trees, &cargo, &config)?;
        let stamp = match &self.caches {
            // As root: the kept cargo home, sealed by the fetch that wrote the stamp (a run that found
            // another run holding it fetches into one of its own).
            Some(caches) => caches.kept.as_ref()?.stamp.clone(),
            None => self.target_dir(0).ok()?.join(fetched::USER_STAMP),
        };
        let mut hit = fetched::read_stamp(&stamp).as_deref() == Some(key.as_str());
        match &self.caches {
            Some(caches) => {
                hit &= caches
                    .kept
                    .as_ref()
                    .is_some_and(|k| k.sealed.load(std::sync::atomic::Ordering::SeqCst));
            }
            // The user's own cargo home may have been cleaned since: every crate must still be there.
            None if hit => {
                let home = PathBuf::from(self.env_value("CARGO_HOME")?);
                hit = trees.iter().all(|tree| {
                    tree.packages
                        .iter()
                        .filter(|p| p.tool == preflight::Tool::Cargo)
                        .filter_map(|p| p.plan.as_ref().ok())
                        .all(|plan| {
                            crate::safe_fs::read(&tree.root, &plan.lock, 64 << 20).is_ok_and(
                                |lock| {
                                    fetched::lock_is_downloaded(
                                        &home,
                                        &String::from_utf8_lossy(&lock),
                                    )
                                },
                            )
                        })
                });
            }
            None => {}
        }
        Some(Reuse { stamp, key, hit })
    }

    /// The working tree's own lock that git does not track, as a fetch reports it (see
    /// [`Sandbox::fetch_package`]), when the fetch itself is skipped.
    fn untracked_lock(&self, tree: &FetchTree, plan: &FetchPlan) -> Option<Resolved> {
        if tree.committed.contains(&plan.lock) {
            return None;
        }
        let bytes = crate::safe_fs::read(&tree.root, &plan.lock, 64 << 20).ok()?;
        let resolved = Resolved {
            root: tree.root.clone(),
            path: plan.lock.clone(),
            sha256: crate::hash::bytes(&bytes),
            how: LockOrigin::Untracked,
        };
        if let Ok(mut all) = self.resolved.lock() {
            all.push(resolved.clone());
        }
        Some(resolved)
    }

    /// What blocks the work of a package (a folder relative to `root`) after the fetch, if anything.
    pub fn dependency_problem(&self, root: &Path, package: &str) -> Option<String> {
        let package = toolchain::package_dir(package).ok()?;
        self.dependency_problems
            .lock()
            .ok()?
            .get(&(root.to_path_buf(), package))
            .cloned()
    }

    /// The lock files of `root` that this run resolved (the tree commits none), for the report.
    pub fn resolved_locks(&self, root: &Path) -> Vec<Resolved> {
        self.resolved
            .lock()
            .map(|r| r.iter().filter(|l| l.root == root).cloned().collect())
            .unwrap_or_default()
    }

    /// One package's fetch, with what it did to a lock file the tree does not commit.
    fn fetch_package(
        &self,
        tree: &FetchTree,
        package: &str,
        plan: &FetchPlan,
        heartbeat: &dyn Fn(Duration),
    ) -> Result<Option<Resolved>, Blocked> {
        let root = tree.root.as_path();
        if let Some(install) = &plan.install {
            return match self.install(root, package, install, heartbeat) {
                Ok(_) => Ok(None),
                Err(why) => {
                    // Said where the package's work is blocked, and in the fetch's warning.
                    let why = why.to_string();
                    if let Ok(mut problems) = self.dependency_problems.lock() {
                        problems.insert((root.to_path_buf(), package.to_string()), why.clone());
                    }
                    Err(Blocked::Work(why))
                }
            };
        }
        let lock = plan.lock.clone();
        if tree.committed.contains(&lock) {
            self.fetch_one(root, plan, heartbeat)?;
            return Ok(None);
        }
        if let Some(why) = &plan.without_committed_lock {
            if let Ok(mut problems) = self.dependency_problems.lock() {
                problems.insert((root.to_path_buf(), package.to_string()), why.clone());
            }
            return Err(Blocked::Work(why.clone()));
        }
        // A lock file the tree does not commit (a library's `Cargo.lock`, most often): the run's own,
        // removed at its end if nothing was there (a link counts as something: a developer's own is never
        // removed).
        let existed = std::fs::symlink_metadata(root.join(&lock)).is_ok();
        let mut copied = false;
        if !existed {
            if let Ok(mut created) = self.created_locks.lock() {
                created.push((
                    root.to_path_buf(),
                    lock.clone(),
                    crate::sandbox::cleanup::file(root, &lock),
                ));
            }
            if let Some(from) = &tree.lock_from
                && let Ok(bytes) = crate::safe_fs::read(from, &lock, 64 << 20)
            {
                crate::safe_fs::write(root, &lock, &bytes).map_err(|source| {
                    FetchError::CopyLock {
                        lock: lock.clone(),
                        source,
                    }
                })?;
                copied = true;
            }
        }
        self.fetch_one(root, plan, heartbeat)?;
        let bytes =
            crate::safe_fs::read(root, &lock, 64 << 20).map_err(|source| FetchError::NoLock {
                lock: lock.clone(),
                source,
            })?;
        if !existed && self.uids.is_empty() {
            // Without separate uids the build runs as aayu's own user: the lock is made read-only to it.
            let _ =
                std::fs::set_permissions(root.join(&lock), std::fs::Permissions::from_mode(0o444));
        }
        let resolved = Resolved {
            root: root.to_path_buf(),
            path: lock,
            sha256: crate::hash::bytes(&bytes),
            how: if existed {
                LockOrigin::Untracked
            } else if copied {
                LockOrigin::Copied
            } else {
                LockOrigin::Resolved
            },
        };
        if let Ok(mut all) = self.resolved.lock() {
            all.push(resolved.clone());
        }
        Ok(Some(resolved))
    }

    fn fetch_one(
        &self,
        root: &Path,
        plan: &FetchPlan,
        heartbeat: &dyn Fn(Duration),
    ) -> Result<(), FetchError> {
        let mut env: Vec<(String, OsString)> = self
            .fetch_env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.extend(plan.env.iter().cloned());
        // The slot uid cannot write the checkout; a lock the fetch writes in place is lent to it.
        let _lock = match self.uid(0) {
            Some(uid) if plan.lends_lock => Some(LockLoan::new(root, &plan.lock, uid)?),
            _ => None,
        };
        let cwd = match &plan.cwd {
            Some(dir) => root.join(dir),
            None => self.fresh_dir(0, "fetch")?,
        };
        let argv = plan.argv.clone();
        // As root the per-run cargo cache starts with the machine's downloaded crates (hard links that the
        // slot uid can read, not change): then an offline fetch is enough when nothing new is needed.
        if plan.offline_first && self.seed_cargo_cache() {
            let mut offline = argv.clone();
            offline.push("--offline".into());
            let ran = self.run(
                Job {
                    argv: &offline,
                    cwd: &cwd,
                    slot: 0,
                    network: false,
                    stdin: Vec::new(),
                    timeout: Duration::from_secs(600),
                    env: env.clone(),
                    heartbeat: Some(heartbeat),
                    stdout_cap: OUTPUT_CAP,
                },
                &BTreeSet::new(),
            );
            if ran.is_ok_and(|o| o.code == Some(0)) {
                return Ok(());
            }
            // Something new is needed: fetch online with an index of its own (the linked index files are
            // root's and cannot be updated in place).
            if let Some(caches) = &self.caches {
                let _ = std::fs::remove_dir_all(caches.cargo_home.join("registry/index"));
            }
        }
        let outcome = self
            .run(
                Job {
                    argv: &argv,
                    cwd: &cwd,
                    slot: 0,
                    network: true,
                    stdin: Vec::new(),
                    timeout: Duration::from_secs(600),
                    env,
                    heartbeat: Some(heartbeat),
                    stdout_cap: OUTPUT_CAP,
                },
                &BTreeSet::new(),
            )
            .map_err(|source| FetchError::Start {
                command: argv.join(" "),
                source,
            })?;
        if outcome.timed_out {
            return Err(FetchError::TimedOut {
                command: argv.join(" "),
            });
        }
        if let Some(over) = outcome.over_limit {
            return Err(FetchError::OverLimit {
                command: argv.join(" "),
                over,
            });
        }
        if outcome.code != Some(0) {
            return Err(FetchError::Exited {
                command: argv.join(" "),
                status: outcome
                    .code
                    .map_or_else(|| "a signal".to_string(), |c| c.to_string()),
                said: said(&outcome.stderr, root),
            });
        }
        Ok(())
    }

    /// Hard-links the machine's downloaded crates and registry index cache into the per-run cargo cache,
    /// once (as root only; a file that cannot be linked is left out). Whether there is anything to use.
    fn seed_cargo_cache(&self) -> bool {
        let Some(caches) = &self.caches else {
            return false;
        };
        let Some(host) = &caches.host_cargo_home else {
            return false;
        };
        if caches
            .seeded
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return true;
        }
        let registry = caches.cargo_home.join("registry");
        if std::fs::create_dir_all(&registry).is_err() {
            return false;
        }
        if let Some(uid) = self.uid(0) {
            let _ = std::os::unix::fs::lchown(&registry, Some(uid), Some(uid));
        }
        let mut linked = 0usize;
        for part in ["cache", "index"] {
            linked += link_tree(
                &host.join("registry").join(part),
                &registry.join(part),
                self.uid(0),
            );
        }
        linked += link_sources(
            &host.join("registry/src"),
            &registry.join("src"),
            self.uid(0),
        );
        linked > 0
    }

    /// The value the sandbox gives a variable, if any (to find the toolchain the sandbox will use).
    pub fn env_value(&self, name: &str) -> Option<&OsString> {
        self.env.get(name)
    }

    /// Whether a path can be reached (and executed, for a file) by a slot uid: every folder on the way
    /// needs `o+x`. Always true without separate uids.
    pub fn reachable(&self, path: &Path, execute: bool) -> bool {
        if self.uids.is_empty() {
            return true;
        }
        let mut ok = true;
        for ancestor in path.ancestors().skip(1) {
            if let Ok(meta) = std::fs::metadata(ancestor) {
                ok &= meta.permissions().mode() & 0o001 != 0;
            }
        }
        if execute {
            ok &= std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o001 != 0);
        }
        ok
    }

    /// The environment of one process of a slot: the allow-list, fresh HOME and TMPDIR, the slot's build
    /// cache, and the process's own variables.
    fn env_for(
        &self,
        slot: usize,
        extra: Vec<(String, OsString)>,
    ) -> Result<BTreeMap<String, OsString>, SandboxError> {
        let name = if slot == usize::MAX {
            "seed".to_string()
        } else {
            format!("slot-{slot}")
        };
        let home = self.fresh_dir(slot, &format!("{name}-home"))?;
        let tmp = self.fresh_dir(slot, &format!("{name}-tmp"))?;
        let target = self.target_dir(slot)?;
        let mut env = self.env.clone();
        env.insert(
            "GOCACHE".into(),
            home.join(".cache/go-build").into_os_string(),
        );
        env.insert("HOME".into(), home.into_os_string());
        env.insert("TMPDIR".into(), tmp.into_os_string());
        env.insert("CARGO_TARGET_DIR".into(), target.into_os_string());
        env.extend(extra);
        Ok(env)
    }

    /// A command for `argv`, confined to the slot: its uid (as root), its environment, and the network
    /// filter when one is given.
    fn command(
        &self,
        argv: &[String],
        cwd: &Path,
        slot: usize,
        env: &BTreeMap<String, OsString>,
        filter: Option<BpfProgram>,
    ) -> std::io::Result<Command> {
        let Some(program) = argv.first() else {
            return Err(std::io::Error::other("an empty argv"));
        };
        let mut command = Command::new(program);
        command
            .args(&argv[1..])
            .current_dir(cwd)
            .env_clear()
            .envs(env);
        let uid = self.uid(slot);
        // Processes: a slot uid may have NPROC; without root the limit counts every process of the
        // user's, so it is what the user has now plus NPROC. Both never above the hard limit aayu has.
        let (_, nproc_hard) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC)
                .unwrap_or((u64::MAX, u64::MAX));
        let nproc = match uid {
            Some(_) => NPROC,
            None => {
                (procs::count_of_uid(nix::unistd::getuid().as_raw()) as u64).saturating_add(NPROC)
            }
        }
        .min(nproc_hard);
        // Data: twice the check's memory limit per process, a backstop for one allocation too fast for
        // the watch; the watch of the processes' resident memory together is the limit itself.
        let (_, data_hard) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_DATA)
                .unwrap_or((u64::MAX, u64::MAX));
        exec::confine(
            &mut command,
            exec::Confinement {
                ids: uid.map(|u| (u, u)),
                filter,
                nproc: Some(nproc),
                data: Some(self.memory_limit.saturating_mul(2).min(data_hard)),
            },
        );
        Ok(command)
    }

    /// Starts a long-running process (the seed app) with the network allowed, its output discarded.
    pub fn spawn_detached(
        &self,
        argv: &[String],
        cwd: &Path,
    ) -> std::io::Result<std::process::Child> {
        let env = self
            .env_for(usize::MAX, Vec::new())
            .map_err(std::io::Error::other)?;
        self.command(argv, cwd, usize::MAX, &env, self.networked.clone())?
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
    }

    /// Runs one process in the sandbox and kills every process it started before returning.
    pub fn run(&self, job: Job, keep: &BTreeSet<i32>) -> std::io::Result<Outcome> {
        let started = Instant::now();
        let what = crate::timing::enabled().then(|| {
            let words: Vec<&str> = job.argv.iter().take(2).map(|a| a.as_str()).collect();
            format!("process `{}` (slot {})", words.join(" "), job.slot)
        });
        let outcome = self.run_inner(job, keep, started);
        if let Ok(mut spans) = self.spans.lock() {
            spans.push((started, Instant::now()));
        }
        if let Some(what) = what {
            crate::timing::line(&what, started.elapsed());
        }
        outcome
    }

    /// How long product code ran this run: the time during which at least one sandboxed process was
    /// running (processes of parallel slots counted once). What is left of a run's time is aayu's own.
    pub fn product_time(&self) -> Duration {
        let mut spans = self.spans.lock().map(|s| s.clone()).unwrap_or_default();
        spans.sort();
        let mut total = Duration::ZERO;
        let mut current: Option<(Instant, Instant)> = None;
        for (start, end) in spans {
            current = match current {
                Some((s, e)) if start <= e => Some((s, e.max(end))),
                Some((s, e)) => {
                    total += e - s;
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        if let Some((s, e)) = current {
            total += e - s;
        }
        total
    }

    fn run_inner(
        &self,
        job: Job,
        keep: &BTreeSet<i32>,
        started: Instant,
    ) -> std::io::Result<Outcome> {
        let env = self
            .env_for(job.slot, job.env)
            .map_err(std::io::Error::other)?;
        let wanted_isolation = !job.network;
        let filter = if wanted_isolation {
            self.isolated.clone()
        } else {
            self.networked.clone()
        };
        let network = match (wanted_isolation, &filter) {
            (false, _) => Network::Allowed,
            (true, Some(_)) => Network::Isolated,
            (true, None) => Network::NotIsolated,
        };
        let spawn = |filter: Option<BpfProgram>| {
            self.command(job.argv, job.cwd, job.slot, &env, filter)?
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        };
        let heartbeat = job.heartbeat;
        match spawn(filter) {
            Ok(child) => self.finish(
                child,
                (job.stdin, job.stdout_cap),
                (job.timeout, heartbeat),
                job.slot,
                keep,
                started,
                network,
            ),
            // ENOSYS from the hook: the filter could not be installed here. Run without it and say so.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => self.finish(
                spawn(None)?,
                (job.stdin, job.stdout_cap),
                (job.timeout, heartbeat),
                job.slot,
                keep,
                started,
                if wanted_isolation {
                    Network::NotIsolated
                } else {
                    Network::Allowed
                },
            ),
            Err(e) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        mut child: std::process::Child,
        (stdin, stdout_cap): (Vec<u8>, usize),
        (timeout, heartbeat): (Duration, Option<&dyn Fn(Duration)>),
        slot: usize,
        keep: &BTreeSet<i32>,
        started: Instant,
        network: Network,
    ) -> std::io::Result<Outcome> {
        let leader = child.id() as i32;
        // Without a uid of its own, the check's processes are its session's: killed if aayu is interrupted.
        let _interrupted = self.uid(slot).is_none().then(|| {
            crate::sandbox::cleanup::processes(procs::Owner::Tree {
                leader,
                keep: keep.clone(),
            })
        });
        let feeder = child.stdin.take().map(|mut pipe| {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&stdin);
            })
        });
        // The readers hand their text over a channel: a process that survived the kill may hold a pipe
        // open, and the check must not wait for it forever.
        let reader = |pipe: Option<Box<dyn Read + Send>>, cap: usize| {
            let (sent, received) = std::sync::mpsc::channel();
            if let Some(pipe) = pipe {
                std::thread::spawn(move || {
                    let _ = sent.send(capped(pipe, cap));
                });
            }
            received
        };
        let out = reader(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            stdout_cap,
        );
        let err = reader(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            OUTPUT_CAP,
        );
        let owner = match self.uid(slot) {
            Some(uid) => procs::Owner::Uid(uid),
            None => procs::Owner::Tree {
                leader,
                keep: keep.clone(),
            },
        };
        let mut timed_out = false;
        let mut over_limit = None;
        let mut watched = Instant::now();
        let mut beaten = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() >= timeout {
                timed_out = true;
                break None;
            }
            if let Some(heartbeat) = heartbeat
                && beaten.elapsed() >= HEARTBEAT
            {
                beaten = Instant::now();
                heartbeat(started.elapsed());
            }
            // What the check's processes use, every 100 ms: over a limit, it ends here.
            if watched.elapsed() >= Duration::from_millis(100) {
                watched = Instant::now();
                let usage = procs::usage(&owner, Some(leader), self.memory_limit);
                if usage.processes as u64 >= PROCESS_WATCH {
                    over_limit = Some(format!(
                        "it started {} processes or more (a fork bomb?), so it was killed with every process it started",
                        PROCESS_WATCH
                    ));
                    break None;
                }
                if usage.rss_bytes > self.memory_limit {
                    over_limit = Some(format!(
                        "its processes used more than {} MiB of memory together (`[verify] memory_limit_mb`), so it was killed with every process it started",
                        self.memory_limit >> 20
                    ));
                    break None;
                }
            }
            // Most processes of a run are short (a version, a fetch with nothing to do): looked at often
            // at first, then every 10 ms.
            let poll = if started.elapsed() < Duration::from_millis(200) {
                1
            } else {
                10
            };
            std::thread::sleep(Duration::from_millis(poll));
        };
        // Every process of the check dies before anything it wrote is read: its uid's, or its tree's.
        let ended = procs::kill_all(&owner, Some(leader));
        let killed = ended.killed.iter().filter(|pid| **pid != leader).count();
        let status = match status {
            Some(status) => status,
            None => {
                let _ = child.kill();
                child.wait()?
            }
        };
        if let Some(feeder) = feeder
            && ended.survivors.is_empty()
        {
            let _ = feeder.join();
        }
        let wait = if ended.survivors.is_empty() {
            Duration::from_secs(30)
        } else {
            Duration::from_millis(500)
        };
        let (stdout, stdout_truncated) = out.recv_timeout(wait).unwrap_or_default();
        let (stderr, _) = err.recv_timeout(wait).unwrap_or_default();
        use std::os::unix::process::ExitStatusExt;
        Ok(Outcome {
            code: status.code(),
            signal: status.signal(),
            timed_out,
            stdout,
            stdout_truncated,
            stderr,
            network,
            elapsed: started.elapsed(),
            killed,
            over_limit,
            survivors: ended.survivors,
        })
    }
}

impl Drop for Sandbox {
    /// Removes the lock files this run created in the checkout (a regular file only, never what a link
    /// in its place points at).
    fn drop(&mut self) {
        let created = self
            .created_locks
            .get_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for (root, rel, _registered) in created {
            let _ = crate::safe_fs::remove(&root, &rel);
        }
    }
}

/// Where the uid locks live: one machine-wide place (not `$TMPDIR`, which differs between runs) so every aayu
/// run sees them, which only root can write. `AAYUDHA_LOCK_DIR` in aayu's own environment names another (a
/// host whose `/run` is not shared between its runs; the tests).
const LOCK_DIR: &str = "/run/aayudha/locks";

/// The lock folder, opened without following a link once it is checked with `lstat`: a real folder owned by
/// root that no other user can write (created `0700` when missing, its parent `0755`).
fn lock_dir(settings: &SandboxSettings) -> Result<(PathBuf, std::os::fd::OwnedFd), SandboxError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = settings
        .process_env
        .get("AAYUDHA_LOCK_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from(LOCK_DIR), PathBuf::from);
    let refused = |path: &Path, why: String| SandboxError::LockDir {
        path: path.to_path_buf(),
        why,
    };
    if let Some(parent) = dir.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent);
    }
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir)
        .map_err(|e| refused(&dir, format!("cannot be created or read: {e}")))?;
    if !meta.file_type().is_dir() {
        return Err(refused(
            &dir,
            "is not a folder (a link, or a file)".to_string(),
        ));
    }
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(refused(
            &dir,
            format!(
                "must be owned by root and writable by root only (it is uid {}, mode {:04o})",
                meta.uid(),
                meta.mode() & 0o7777
            ),
        ));
    }
    let fd = nix::fcntl::open(
        &dir,
        nix::fcntl::OFlag::O_RDONLY
            | nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| refused(&dir, format!("cannot be opened: {e}")))?;
    Ok((dir, fd))
}

/// Takes up to `want` uids of the range that no other aayu run on this machine holds, locking each (`flock`
/// on a file per uid in [`lock_dir`]) for as long as the locks live. Each lock file is opened beneath the
/// folder without following a link and without blocking, and must be a regular file: anything else planted
/// there is refused with its path.
fn lock_uids(
    settings: &SandboxSettings,
    want: usize,
) -> Result<(Vec<u32>, Vec<nix::fcntl::Flock<std::fs::File>>), SandboxError> {
    use nix::fcntl::OFlag;
    let (dir, dir_fd) = lock_dir(settings)?;
    let [first, last] = settings.uids;
    let mut uids = Vec::new();
    let mut locks = Vec::new();
    for uid in first..=last {
        if uids.len() == want {
            break;
        }
        let name = format!("aayu-sandbox-uid-{uid}.lock");
        let refused = |why: String| SandboxError::LockDir {
            path: dir.join(&name),
            why,
        };
        let fd = match nix::fcntl::openat(
            &dir_fd,
            name.as_str(),
            OFlag::O_CREAT
                | OFlag::O_RDWR
                | OFlag::O_NOFOLLOW
                | OFlag::O_NONBLOCK
                | OFlag::O_NOCTTY
                | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => fd,
            Err(nix::errno::Errno::ELOOP) => {
                return Err(refused("is a symbolic link, not a lock file".to_string()));
            }
            Err(e) => return Err(refused(format!("cannot be opened: {e}"))),
        };
        let stat = nix::sys::stat::fstat(&fd).map_err(|e| refused(e.to_string()))?;
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(refused(
                "is not a regular file (a FIFO, a device?)".to_string(),
            ));
        }
        if let Ok(lock) = nix::fcntl::Flock::lock(
            std::fs::File::from(fd),
            nix::fcntl::FlockArg::LockExclusiveNonblock,
        ) {
            uids.push(uid);
            locks.push(lock);
        }
    }
    Ok((uids, locks))
}

/// Reads a pipe to its end, keeping the first `cap` bytes.
fn capped(mut pipe: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
    (kept, truncated)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), SandboxError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        SandboxError::Folder {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// The allow-listed environment: what the toolchains need to keep working under a fresh HOME and as
/// another uid, and nothing that could carry a secret. Every later step runs offline: cargo with
/// `CARGO_NET_OFFLINE`, Go with `GOPROXY=off` and `GOTOOLCHAIN=local`, and no `GOFLAGS` (go's default,
/// `-mod=readonly`, or `vendor/`: go never writes go.mod).
fn allowed_env(
    settings: &SandboxSettings,
    toolchains: &toolchain::Toolchains,
    caches: Option<&Caches>,
) -> BTreeMap<String, OsString> {
    let from = |name: &str| {
        settings
            .process_env
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let mut env: BTreeMap<String, OsString> = BTreeMap::new();
    for name in ["PATH", "LANG", "LC_ALL", "CI", "TERM", "TZ"] {
        if let Some(value) = from(name) {
            env.insert(name.into(), value.into());
        }
    }
    // Rust: the toolchain stays where it is installed, read-only.
    if let Some(dir) = &toolchains.rustup_home {
        env.insert("RUSTUP_HOME".into(), dir.clone().into_os_string());
    }
    if let Some(toolchain) = &toolchains.rust_default {
        env.insert("RUSTUP_TOOLCHAIN".into(), toolchain.into());
    }
    let cargo_home = match caches {
        Some(caches) => Some(caches.cargo_home.clone()),
        None => cargo_home_of(settings),
    };
    if let Some(dir) = cargo_home {
        env.insert("CARGO_HOME".into(), dir.into_os_string());
    }
    env.insert("CARGO_NET_OFFLINE".into(), "true".into());
    // Go: its own root, the module cache read-only, no downloads, no other toolchain.
    if let Some(root) = from("GOROOT") {
        env.insert("GOROOT".into(), root.into());
    }
    let go_mod_cache = match caches {
        Some(caches) => Some(caches.go_mod_cache.clone()),
        None => go_mod_cache_of(settings),
    };
    if let Some(dir) = go_mod_cache {
        env.insert("GOMODCACHE".into(), dir.into_os_string());
    }
    env.insert("GOPROXY".into(), "off".into());
    env.insert("GOTOOLCHAIN".into(), "local".into());
    for name in &settings.extra_names {
        if is_secret_name(name) || name == "GOFLAGS" {
            continue;
        }
        if let Some(value) = from(name) {
            env.insert(name.clone(), value.into());
        }
    }
    env
}

/// What a dependency fetch adds to the allow-list: the network settings the downloads need (proxies,
/// certificates, Go's proxy and checksum settings) — never a token — and the network switched back on.
fn fetch_env(settings: &SandboxSettings) -> BTreeMap<String, OsString> {
    const PASSED: [&str; 15] = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        // node's own (npm, pnpm and yarn download with node's TLS, which reads no SSL_CERT_FILE).
        "NODE_EXTRA_CA_CERTS",
        "GONOSUMDB",
        "GONOSUMCHECK",
        "GOPRIVATE",
        "GONOPROXY",
        "GOSUMDB",
        "GOINSECURE",
    ];
    let mut env: BTreeMap<String, OsString> = PASSED
        .iter()
        .filter_map(|name| {
            settings
                .process_env
                .get(*name)
                .filter(|v| !v.is_empty())
                .map(|v| (name.to_string(), OsString::from(v)))
        })
        .collect();
    // npm's registry and offline switch (never a token: `_authToken` settings are not passed).
    for name in [
        "npm_config_registry",
        "NPM_CONFIG_REGISTRY",
        "npm_config_offline",
        "NPM_CONFIG_OFFLINE",
    ] {
        if let Some(value) = settings.process_env.get(name).filter(|v| !v.is_empty())
            && !value
                .split_once("://")
                .is_some_and(|(_, rest)| rest.split('/').next().is_some_and(|h| h.contains('@')))
        {
            env.insert(name.into(), value.into());
        }
    }
    // pip's index, when it carries no credentials (a token in a URL is never passed on).
    for name in [
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_NO_INDEX",
        "PIP_TRUSTED_HOST",
    ] {
        if let Some(value) = settings.process_env.get(name).filter(|v| !v.is_empty())
            && !value.split_whitespace().any(|url| {
                url.split_once("://").is_some_and(|(_, rest)| {
                    rest.split('/')
                        .next()
                        .is_some_and(|host| host.contains('@'))
                })
            })
        {
            env.insert(name.into(), value.into());
        }
    }
    env.insert("CARGO_NET_OFFLINE".into(), "false".into());
    // Go's own default when aayu was given none; `off` stays off.
    let proxy = settings
        .process_env
        .get("GOPROXY")
        .filter(|v| !v.is_empty())
        .cloned()
        .unwrap_or_else(|| "https://proxy.golang.org,direct".to_string());
    env.insert("GOPROXY".into(), proxy.into());
    env
}

/// The part of a cargo configuration that says where crates come from — `[source]` (replacement, local
/// registries, vendoring), `[net]`, `[http]` without a proxy that carries a user, each `[registries.*]`'s
/// `index` and `protocol`, `[registry] default` — and nothing else: no token, credential provider,
/// `[env]`, alias or build setting. `None` when it does not parse.
fn network_config(text: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let mut kept = toml::Table::new();
    let only = |value: Option<&toml::Value>, keys: &[&str]| -> Option<toml::Table> {
        let table = value?.as_table()?;
        let kept: toml::Table = table
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!kept.is_empty()).then_some(kept)
    };
    for name in ["source", "net"] {
        if let Some(value) = table.get(name).filter(|v| v.is_table()) {
            kept.insert(name.to_string(), value.clone());
        }
    }
    if let Some(mut http) = table.get("http").and_then(toml::Value::as_table).cloned() {
        if http
            .get("proxy")
            .and_then(toml::Value::as_str)
            .is_some_and(|p| p.contains('@'))
        {
            http.remove("proxy");
        }
        kept.insert("http".to_string(), toml::Value::Table(http));
    }
    if let Some(registries) = table.get("registries").and_then(toml::Value::as_table) {
        let only_index: toml::Table = registries
            .iter()
            .filter_map(|(name, r)| {
                only(Some(r), &["index", "protocol"]).map(|t| (name.clone(), toml::Value::Table(t)))
            })
            .collect();
        if !only_index.is_empty() {
            kept.insert("registries".to_string(), toml::Value::Table(only_index));
        }
    }
    if let Some(registry) = only(table.get("registry"), &["default"]) {
        kept.insert("registry".to_string(), toml::Value::Table(registry));
    }
    toml::to_string(&kept).ok()
}

/// `CARGO_HOME`, else `~/.cargo`, when it exists.
fn cargo_home_of(settings: &SandboxSettings) -> Option<PathBuf> {
    let env = &settings.process_env;
    env.get("CARGO_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env.get("HOME").map(|h| Path::new(h).join(".cargo")))
        .filter(|d| d.is_dir())
}

/// Go's module cache as `go env GOMODCACHE` would say in aayu's own environment, computed from the
/// variables rather than asked of `go`: `GOMODCACHE`, else the first `GOPATH` entry's `pkg/mod`, else
/// `~/go/pkg/mod`.
fn go_mod_cache_of(settings: &SandboxSettings) -> Option<PathBuf> {
    let env = &settings.process_env;
    let var = |n: &str| env.get(n).filter(|v| !v.is_empty());
    if let Some(dir) = var("GOMODCACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(first) = var("GOPATH").and_then(|p| std::env::split_paths(p).next()) {
        return Some(first.join("pkg/mod"));
    }
    var("HOME").map(|h| Path::new(h).join("go/pkg/mod"))
}

/// Recreates the folders of `from` under `to` (owned by `uid`, so that cargo can add to them) with every
/// regular file hard-linked (root's, read-only to that uid) — or copied, root's and mode 0644 (0755 for an
/// executable), when its mode would hide it from that uid: root's cargo home holds a crate's files with
/// the modes of its archive less root's umask (`0640` under `027`), and a link shares the mode. The user's
/// own files keep theirs. Links and anything else are left out. Returns how many files were linked or
/// copied.
fn link_tree(from: &Path, to: &Path, uid: Option<u32>) -> usize {
    let Ok(entries) = std::fs::read_dir(from) else {
        return 0;
    };
    if std::fs::create_dir_all(to).is_err() {
        return 0;
    }
    if let Some(uid) = uid {
        let _ = std::os::unix::fs::lchown(to, Some(uid), Some(uid));
    }
    let mut linked = 0;
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            linked += link_tree(&entry.path(), &target, uid);
        } else if kind.is_file() {
            let mode = entry.metadata().map_or(0, |m| m.permissions().mode());
            let shared = if mode & 0o004 != 0 {
                std::fs::hard_link(entry.path(), &target).is_ok()
            } else {
                readable_copy(&entry.path(), &target, mode).is_ok()
            };
            linked += usize::from(shared);
        }
    }
    linked
}

/// The unpacked crates of root's cargo cache (`registry/src/<registry>/<crate>-<version>/`), each linked
/// whole when every file of it is world-readable and else left out: cargo then unpacks that crate again
/// from its `.crate` in `registry/cache` (copied readable), which is far less to copy than its sources. A
/// crate folder is never half there (cargo trusts a folder with its `.cargo-ok` marker).
fn link_sources(from: &Path, to: &Path, uid: Option<u32>) -> usize {
    let Ok(registries) = std::fs::read_dir(from) else {
        return 0;
    };
    let mut linked = 0;
    for registry in registries.flatten() {
        if !registry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(crates) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        let into = to.join(registry.file_name());
        for krate in crates.flatten() {
            if krate.file_type().is_ok_and(|t| t.is_dir()) && world_readable(&krate.path()) {
                linked += link_tree(&krate.path(), &into.join(krate.file_name()), uid);
            }
        }
        if let Some(uid) = uid {
            for dir in [to, into.as_path()] {
                if dir.is_dir() {
                    let _ = std::os::unix::fs::lchown(dir, Some(uid), Some(uid));
                }
            }
        }
    }
    linked
}

/// Whether every regular file under a folder can be read by other users (links are not followed).
fn world_readable(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().all(|entry| match entry.file_type() {
        Ok(kind) if kind.is_dir() => world_readable(&entry.path()),
        Ok(kind) if kind.is_file() => entry
            .metadata()
            .is_ok_and(|m| m.permissions().mode() & 0o004 != 0),
        _ => true,
    })
}

/// Copies a file the sandbox could not read into a new file (never following a link at `to`) that it can:
/// mode 0644, or 0755 when the original is executable.
fn readable_copy(from: &Path, to: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // The file itself, never a link swapped in since the folder was listed, and only root's own: a file
    // another user keeps private stays so.
    let mut source = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    let meta = source.metadata()?;
    if !meta.is_file() || meta.uid() != 0 {
        return Err(std::io::Error::other("not a regular file of root's"));
    }
    let mut copy = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)?;
    std::io::copy(&mut source, &mut copy)?;
    let wanted = if mode & 0o100 != 0 { 0o755 } else { 0o644 };
    copy.set_permissions(std::fs::Permissions::from_mode(wanted))
}

/// Whether `dir` is a folder as [`seal`] leaves it: root's, not a link, and read-only.
fn is_sealed(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.mode() & 0o7777 == 0o555)
}

/// Makes a fetched cache root-owned and read-only, without following a link. No process of the uid that
/// wrote it is alive any more (each sandboxed run ends by killing them all).
fn seal(dir: &Path) -> std::io::Result<()> {
    seal_with(dir, &[], false)
}

/// [`seal`], keeping links out of the folder that lead to one of `keep` (a venv's interpreter), and —
/// with `copy_shared` — replacing a hard-linked file aayu did not link from a machine cache by a copy of
/// its own instead of removing it.
fn seal_with(dir: &Path, keep: &[PathBuf], copy_shared: bool) -> std::io::Result<()> {
    let root = std::fs::canonicalize(dir)?;
    seal_in(&root, dir, keep, copy_shared)
}

fn seal_in(root: &Path, path: &Path, keep: &[PathBuf], copy_shared: bool) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        // A link the fetch left that leads out of the cache (or nowhere) would hand a later step what the
        // seal does not cover — a folder the uid can still write, say: removed. One within stays (a git
        // dependency's own links), and one to a file the install was made with (a venv's interpreter).
        let target = std::fs::canonicalize(path);
        let inside = target
            .as_ref()
            .is_ok_and(|target| target.starts_with(root) || keep.contains(target));
        if !inside {
            return std::fs::remove_file(path);
        }
        return std::os::unix::fs::lchown(path, Some(0), Some(0));
    }
    if meta.is_file() && meta.nlink() > 1 {
        // A file linked from the machine's own cache is root's and closed to others' writes already: it
        // (and its mode, shared with the original) is left alone. Any other hard link may be another file
        // of the machine's, which a chown or chmod here would change: removed, or replaced by a copy.
        if meta.uid() == 0 && meta.mode() & 0o022 == 0 {
            return Ok(());
        }
        if copy_shared {
            return copy_in_place(path, meta.mode());
        }
        return std::fs::remove_file(path);
    }
    std::os::unix::fs::lchown(path, Some(0), Some(0))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            seal_in(root, &entry?.path(), keep, copy_shared)?;
        }
    }
    let mode = meta.permissions().mode() & 0o7777;
    let sealed = if meta.is_dir() {
        0o555
    } else {
        (mode | 0o444) & !0o7222
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(sealed))
}

/// Replaces a hard-linked file by a root-owned, read-only copy of its bytes (the other links keep the
/// original, untouched).
fn copy_in_place(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut source = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut copy = tempfile::NamedTempFile::new_in(parent)?;
    std::io::copy(&mut source, copy.as_file_mut())?;
    let sealed = if mode & 0o100 != 0 { 0o555 } else { 0o444 };
    copy.as_file()
        .set_permissions(std::fs::Permissions::from_mode(sealed))?;
    copy.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The ids a sandbox uid (and gid: each slot uses the same number for both) may never be: below 1000 and
/// 1001 (refused by the configuration already), the workspace's owner and group, and the group of the
/// docker socket and of the runner's file-command files. On GitHub's hosted runners uid 1001 is in the
/// `docker` group and owns `$GITHUB_ENV`, `$GITHUB_PATH` and the rest.
fn refuse_forbidden_ids(settings: &SandboxSettings) -> Result<(), SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let [first, last] = settings.uids;
    let mut forbidden: Vec<(u32, String)> = Vec::new();
    if let Some(workspace) = &settings.workspace
        && let Ok(meta) = std::fs::metadata(workspace)
    {
        let at = workspace.components().collect::<PathBuf>();
        let at = at.display();
        forbidden.push((meta.uid(), format!("the uid of the owner of `{at}`")));
        forbidden.push((meta.gid(), format!("the gid of `{at}`")));
    }
    for socket in ["/var/run/docker.sock", "/run/docker.sock"] {
        if let Ok(meta) = std::fs::metadata(socket) {
            forbidden.push((meta.gid(), format!("the gid of `{socket}`")));
        }
    }
    for name in [
        "GITHUB_OUTPUT",
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
    ] {
        if let Some(file) = settings.process_env.get(name).filter(|v| !v.is_empty())
            && let Ok(meta) = std::fs::metadata(file)
        {
            forbidden.push((meta.uid(), format!("the uid of the owner of `${name}`")));
            forbidden.push((meta.gid(), format!("the gid of `${name}`")));
        }
    }
    match forbidden
        .into_iter()
        .find(|(id, _)| (first..=last).contains(id))
    {
        Some((id, why)) => Err(SandboxError::ForbiddenId {
            first,
            last,
            id,
            why,
        }),
        None => Ok(()),
    }
}

/// Why a package's fetch did not happen: the fetch failed (the offline build then says what is missing),
/// or the package's work is blocked until the fix (a `go.sum` to commit).
enum Blocked {
    Fetch(FetchError),
    Work(String),
}

impl From<FetchError> for Blocked {
    fn from(e: FetchError) -> Blocked {
        Blocked::Fetch(e)
    }
}

/// A package's lock file (cargo's `Cargo.lock`), handed to the fetching slot uid for the fetch and given back afterwards (its
/// owner and mode restored; removed again when aayu created it and the fetch left it empty). Cargo writes
/// the lock file in place, so the folder itself stays closed to the slot uid.
struct LockLoan {
    dir: std::os::fd::OwnedFd,
    name: String,
    file: std::fs::File,
    owner: (u32, u32, u32),
    created: bool,
}

impl LockLoan {
    /// Lends `lock` (a path relative to `root`, whose folder must exist) to `uid` for the fetch.
    fn new(root: &Path, lock: &str, uid: u32) -> Result<LockLoan, LockLoanError> {
        use nix::fcntl::OFlag;
        use nix::sys::stat::Mode;
        let (workspace, name) = lock.rsplit_once('/').unwrap_or(("", lock));
        let workspace = workspace.to_string();
        let dir = if workspace.is_empty() {
            crate::safe_fs::open_root(root)
        } else {
            // The workspace folder as it is: a pull request's `package.workspace` never makes aayu create one.
            crate::safe_fs::open_root(root)
                .and_then(|top| crate::safe_fs::open_dir_at(top.as_fd(), &workspace))
        }?;
        let name = name.to_string();
        let open = |flags: OFlag| {
            nix::fcntl::openat(
                dir.as_fd(),
                name.as_str(),
                flags | OFlag::O_RDWR | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )
        };
        let (fd, created) = match open(OFlag::empty()) {
            Ok(fd) => (fd, false),
            Err(nix::errno::Errno::ENOENT) => (
                open(OFlag::O_CREAT | OFlag::O_EXCL).map_err(|source| LockLoanError::Create {
                    name: name.clone(),
                    source,
                })?,
                true,
            ),
            Err(source) => {
                return Err(LockLoanError::Open {
                    path: join_rel(&workspace, &name),
                    source,
                });
            }
        };
        let stat = nix::sys::stat::fstat(&fd).map_err(LockLoanError::Stat)?;
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(LockLoanError::NotRegular {
                path: join_rel(&workspace, &name),
            });
        }
        let file = std::fs::File::from(fd);
        nix::unistd::fchown(
            file.as_fd(),
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(uid)),
        )
        .map_err(LockLoanError::Lend)?;
        Ok(LockLoan {
            dir,
            name,
            file,
            owner: (stat.st_uid, stat.st_gid, stat.st_mode & 0o7777),
            created,
        })
    }
}

impl Drop for LockLoan {
    fn drop(&mut self) {
        let (uid, gid, mode) = self.owner;
        let _ = nix::unistd::fchown(
            self.file.as_fd(),
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
        );
        let _ = nix::sys::stat::fchmod(
            self.file.as_fd(),
            nix::sys::stat::Mode::from_bits_truncate(mode),
        );
        if self.created && self.file.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = nix::unistd::unlinkat(
                self.dir.as_fd(),
                self.name.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The seccomp filter of a sandboxed process, written as classic BPF: `socket()` only for the address
/// families in `families` (an allow-list: netlink, vsock, packet and the rest fail with `EACCES`), the
/// `io_uring_*` syscalls refused (their socket and connect operations would bypass a `socket()` filter),
/// and on x86_64 the x32 syscall range refused (its `socket` is another number). A process of another
/// architecture (a 32-bit binary) is killed. `None` on an architecture it is not written for.
fn socket_filter(families: &[i32]) -> Option<BpfProgram> {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    const RET_ERRNO: u32 = 0x0005_0000 | libc::EACCES as u32;
    const OFFSET_NR: u32 = 0;
    const OFFSET_ARCH: u32 = 4;
    // The low 32 bits of the first argument, on a little-endian machine.
    const OFFSET_ARG0: u32 = 16;
    const X32_BIT: u32 = 0x4000_0000;
    let (arch, x32) = match std::env::consts::ARCH {
        "x86_64" => (0xC000_003E_u32, true),
        "aarch64" => (0xC000_00B7_u32, false),
        _ => return None,
    };
    let uring = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    // Where each part starts, so that jumps (counted from the next instruction) can be written.
    let checks = 4 + usize::from(x32);
    let allow_a = checks + 1 + uring.len();
    let sock = allow_a + 1;
    let errno = sock + 1 + families.len();
    let allow_b = errno + 1;
    let to = |from: usize, target: usize| u8::try_from(target - from - 1).ok();
    let op = |code: u16, k: u32| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u16, k: u32, jt: u8| sock_filter { code, jt, jf: 0, k };
    let mut program = vec![
        op(LD_W_ABS, OFFSET_ARCH),
        sock_filter {
            code: JEQ_K,
            jt: 1,
            jf: 0,
            k: arch,
        },
        op(RET_K, RET_KILL_PROCESS),
        op(LD_W_ABS, OFFSET_NR),
    ];
    if x32 {
        program.push(jump(JGE_K, X32_BIT, to(program.len(), errno)?));
    }
    program.push(jump(
        JEQ_K,
        u32::try_from(libc::SYS_socket).ok()?,
        to(program.len(), sock)?,
    ));
    for call in uring {
        program.push(jump(
            JEQ_K,
            u32::try_from(call).ok()?,
            to(program.len(), errno)?,
        ));
    }
    program.push(op(RET_K, RET_ALLOW));
    program.push(op(LD_W_ABS, OFFSET_ARG0));
    for family in families {
        program.push(jump(
            JEQ_K,
            u32::try_from(*family).ok()?,
            to(program.len(), allow_b)?,
        ));
    }
    program.push(op(RET_K, RET_ERRNO));
    program.push(op(RET_K, RET_ALLOW));
    debug_assert_eq!(program.len(), allow_b + 1);
    Some(program)
}

#[cfg(test)]
mod tests {

    /// As root: the seal removes what the fetch's uid could point elsewhere — a link out of the cache, a
    /// hard link to a file not root's — and never changes the file such a link led to.
    #[test]
    fn the_seal_removes_links_out_of_the_cache_and_changes_nothing_outside() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let outside = tempfile::tempdir().expect("temp");
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "mine").expect("write");
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::os::unix::fs::lchown(&secret, Some(4242), Some(4242)).expect("chown");
        let cache = tempfile::tempdir().expect("temp");
        let dir = cache.path().join("registry");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("crate.rs"), "fn f() {}").expect("write");
        std::fs::hard_link(&secret, dir.join("linked")).expect("hard link");
        std::os::unix::fs::symlink(outside.path(), dir.join("out")).expect("symlink");
        std::os::unix::fs::symlink("crate.rs", dir.join("within")).expect("symlink");
        crate::sandbox::seal(cache.path()).expect("seal");
        let meta = std::fs::metadata(&secret).expect("the secret");
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (4242, 0o600),
            "unchanged"
        );
        assert!(
            std::fs::symlink_metadata(dir.join("linked")).is_err(),
            "the hard link is gone"
        );
        assert!(
            std::fs::symlink_metadata(dir.join("out")).is_err(),
            "the link out is gone"
        );
        assert!(
            std::fs::symlink_metadata(dir.join("within")).is_ok(),
            "a link within stays"
        );
        let file = std::fs::metadata(dir.join("crate.rs")).expect("crate.rs");
        assert_eq!((file.uid(), file.mode() & 0o777), (0, 0o444));
        assert!(crate::sandbox::is_sealed(cache.path()));
    }

    /// An installed environment (a venv) keeps its link to the interpreter it was made with, and a file
    /// with several links is replaced by a copy of its own: the other file is left as it was.
    #[test]
    fn an_install_s_seal_keeps_its_interpreter_and_copies_shared_files() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let outside = tempfile::tempdir().expect("temp");
        let other = outside.path().join("other");
        std::fs::write(&other, "theirs").expect("write");
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o664)).expect("chmod");
        std::os::unix::fs::lchown(&other, Some(4242), Some(4242)).expect("chown");
        let python = outside.path().join("python3");
        std::fs::write(&python, "#!").expect("python");
        let install = tempfile::tempdir().expect("temp");
        let bin = install.path().join("venv/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::os::unix::fs::symlink(&python, bin.join("python")).expect("symlink");
        std::os::unix::fs::symlink(outside.path(), bin.join("elsewhere")).expect("symlink");
        std::fs::hard_link(&other, bin.join("shared")).expect("hard link");
        let keep = [std::fs::canonicalize(&python).expect("canonical")];
        crate::sandbox::seal_with(install.path(), &keep, true).expect("seal");
        assert!(
            std::fs::symlink_metadata(bin.join("python")).is_ok(),
            "the interpreter's link stays"
        );
        assert!(
            std::fs::symlink_metadata(bin.join("elsewhere")).is_err(),
            "another link out is gone"
        );
        let shared = std::fs::symlink_metadata(bin.join("shared")).expect("copied");
        assert_eq!(
            (shared.uid(), shared.mode() & 0o777, shared.nlink()),
            (0, 0o444, 1)
        );
        assert_eq!(std::fs::read(bin.join("shared")).expect("read"), b"theirs");
        let meta = std::fs::metadata(&other).expect("other");
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (4242, 0o664),
            "unchanged"
        );
        assert!(crate::sandbox::is_sealed(install.path()));
    }

    use super::{network_config, said_as_is as said};

    #[test]
    fn only_where_crates_come_from_reaches_the_sandbox_of_root_s_cargo_config() {
        let config = "[registry]\ntoken = \"secret-1\"\ndefault = \"corp\"\n[registries.corp]\nindex = \"sparse+https://crates.corp/\"\ntoken = \"secret-2\"\ncredential-provider = \"cargo:token\"\n[source.crates-io]\nreplace-with = \"mirror\"\n[source.mirror]\nregistry = \"sparse+https://mirror/\"\n[http]\nproxy = \"http://user:secret-3@proxy:3128\"\ntimeout = 30\n[env]\nKEY = \"secret-4\"\n[build]\nrustc-wrapper = \"sccache\"\n";
        let kept = network_config(config).expect("parses");
        assert!(!kept.contains("secret"), "{kept}");
        assert!(
            !kept.contains("sccache") && !kept.contains("credential"),
            "{kept}"
        );
        for wanted in [
            "replace-with = \"mirror\"",
            "sparse+https://crates.corp/",
            "default = \"corp\"",
            "timeout = 30",
        ] {
            assert!(kept.contains(wanted), "{wanted}: {kept}");
        }
        assert_eq!(network_config("not toml ["), None);
    }

    #[test]
    fn a_node_failure_is_quoted_from_its_error_line() {
        let vite = b"failed to load config from /c/vitest.config.js\n\nstartup error:\nError: EACCES: permission denied, open '/c/vitest.config.js.timestamp-1.mjs'\n    at async open (node:internal/fs/promises:639:25) {\n  errno: -13,\n  code: 'EACCES',\n  syscall: 'open',\n  path: '/c/vitest.config.js.timestamp-1.mjs'\n}\n";
        let quoted = said(vite);
        assert!(
            quoted.starts_with(
                "Error: EACCES: permission denied, open '/c/vitest.config.js.timestamp-1.mjs'"
            ),
            "{quoted}"
        );
        assert!(said(b"TypeError [ERR_X]: y\n").starts_with("TypeError [ERR_X]: y"));
        // A word that merely ends in `Error` is not one.
        assert!(said(b"a\nb\nc\nd\nNoError here\n").starts_with("b | c"));
    }

    #[test]
    fn a_tool_failure_is_quoted_by_its_error_lines_first() {
        let cargo = b"    Updating crates.io index\nerror: no matching package named `anyhow` found\nlocation searched: registry `crates-io`\nrequired by package `x v0.1.0 (/r)`\nAs a reminder, you're using offline mode (--offline) which can sometimes cause surprising resolution failures, if this error is too confusing you may wish to retry without the offline flag.\n";
        let quoted = said(cargo);
        assert!(
            quoted
                .starts_with("error: no matching package named `anyhow` found | location searched"),
            "{quoted}"
        );
        let go = b"# example.com/x\n./x.go:3:2: undefined: y\nFAIL\texample.com/x [build failed]\n";
        assert!(
            said(go).starts_with("./x.go:3:2: undefined: y"),
            "{}",
            said(go)
        );
        assert_eq!(
            said(b"one\ntwo\n\nthree\nfour\nfive\n"),
            "two | three | four | five"
        );
        assert_eq!(said(b""), "");
        assert_eq!(
            super::said(
                b"error: failed to read `/w/repo/src/x.rs`\n",
                std::path::Path::new("/w/repo")
            ),
            "error: failed to read `./src/x.rs`"
        );
        // git's work folder ends in `/`: the root is said the same.
        assert_eq!(
            super::said(
                b"error: failed to read `/w/repo/src/x.rs`\n",
                std::path::Path::new("/w/repo/")
            ),
            "error: failed to read `./src/x.rs`"
        );
        let chain = b"error: failed to download `tinydep v0.1.0`\n\nCaused by:\n  unable to get packages from source\n\nCaused by:\n  failed to open `lib.rs`: Permission denied (os error 13)\n";
        assert_eq!(
            said(chain),
            "error: failed to download `tinydep v0.1.0` | unable to get packages from source | failed to open `lib.rs`: Permission denied (os error 13)"
        );
    }
}
