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

mod exec;
pub(crate) mod procs;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use serde::Serialize;

/// How much of a process's stdout (and stderr) is kept; the rest is read and dropped.
pub const OUTPUT_CAP: usize = 1 << 20;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    #[error("cannot prepare the sandbox folder `{path}`")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
    /// The folder and the uids, cleaned up if aayu is interrupted.
    _cleanup: Vec<crate::cleanup::Registered>,
    slots: usize,
    filter: Option<BpfProgram>,
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
        let dir = tempfile::Builder::new()
            .prefix("aayu-sandbox-")
            .tempdir()
            .map_err(|source| SandboxError::Folder {
                path: std::env::temp_dir(),
                source,
            })?;
        // Traversable by the slot uids, readable by nobody else.
        set_mode(dir.path(), 0o711)?;
        let (uids, locks, slots) = if root {
            // One uid per slot plus one for the seed app, each one locked for this run.
            let (uids, locks) = lock_uids(settings.uids, settings.jobs.max(1) + 1);
            if uids.len() < 2 {
                return Err(SandboxError::NoUid {
                    first: settings.uids[0],
                    last: settings.uids[1],
                });
            }
            let slots = uids.len() - 1;
            (uids, locks, slots)
        } else {
            // Without root every check runs as aayu's own uid: one at a time, so that every process a
            // check leaves behind can be told apart from another check's and killed.
            (Vec::new(), Vec::new(), 1)
        };
        let mut cleanup = vec![crate::cleanup::dir(dir.path())];
        cleanup.extend(
            uids.iter()
                .map(|&uid| crate::cleanup::processes(procs::Owner::Uid(uid))),
        );
        Ok(Sandbox {
            dir,
            env: allowed_env(settings),
            uids,
            _locks: locks,
            _cleanup: cleanup,
            slots,
            filter: network_filter(),
        })
    }

    /// What a no-network process here really gets: `isolated` when the filter can be installed.
    pub fn no_network(&self) -> Network {
        if self.filter.is_some() {
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
            nix::unistd::chown(path, Some(id.0), Some(id.1)).map_err(|e| failed(e.into()))?;
        }
        set_mode(path, 0o700)
    }

    /// Where a slot's build cache lives for the whole run, so that a package is built once per slot.
    pub fn target_dir(&self, slot: usize) -> Result<PathBuf, SandboxError> {
        let path = self.dir.path().join(format!("slot-{slot}-target"));
        if !path.exists() {
            self.prepare(slot, &path)?;
        }
        Ok(path)
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
        exec::confine(
            &mut command,
            exec::Confinement {
                ids: uid.map(|u| (u, u)),
                filter,
                nproc: uid.map(|_| 4096),
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
        self.command(argv, cwd, usize::MAX, &env, None)?
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    }

    /// Runs one process in the sandbox and kills every process it started before returning.
    pub fn run(&self, job: Job, keep: &BTreeSet<i32>) -> std::io::Result<Outcome> {
        let started = Instant::now();
        let env = self
            .env_for(job.slot, job.env)
            .map_err(std::io::Error::other)?;
        let wanted_isolation = !job.network;
        let filter = if wanted_isolation {
            self.filter.clone()
        } else {
            None
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
        match spawn(filter) {
            Ok(child) => self.finish(
                child,
                job.stdin,
                job.timeout,
                job.slot,
                keep,
                started,
                network,
            ),
            // ENOSYS from the hook: the filter could not be installed here. Run without it and say so.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) && network == Network::Isolated => {
                self.finish(
                    spawn(None)?,
                    job.stdin,
                    job.timeout,
                    job.slot,
                    keep,
                    started,
                    Network::NotIsolated,
                )
            }
            Err(e) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        mut child: std::process::Child,
        stdin: Vec<u8>,
        timeout: Duration,
        slot: usize,
        keep: &BTreeSet<i32>,
        started: Instant,
        network: Network,
    ) -> std::io::Result<Outcome> {
        let leader = child.id() as i32;
        // Without a uid of its own, the check's processes are its session's: killed if aayu is interrupted.
        let _interrupted = self.uid(slot).is_none().then(|| {
            crate::cleanup::processes(procs::Owner::Tree {
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
        let out = child
            .stdout
            .take()
            .map(|pipe| std::thread::spawn(move || capped(pipe)));
        let err = child
            .stderr
            .take()
            .map(|pipe| std::thread::spawn(move || capped(pipe)));
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() >= timeout {
                timed_out = true;
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // Every process of the check dies before anything it wrote is read: its uid's, or its tree's.
        let owner = match self.uid(slot) {
            Some(uid) => procs::Owner::Uid(uid),
            None => procs::Owner::Tree {
                leader,
                keep: keep.clone(),
            },
        };
        let killed = procs::kill_all(&owner, Some(leader))
            .into_iter()
            .filter(|pid| *pid != leader)
            .count();
        let status = match status {
            Some(status) => status,
            None => {
                let _ = child.kill();
                child.wait()?
            }
        };
        if let Some(feeder) = feeder {
            let _ = feeder.join();
        }
        let (stdout, stdout_truncated) = out.and_then(|h| h.join().ok()).unwrap_or_default();
        let (stderr, _) = err.and_then(|h| h.join().ok()).unwrap_or_default();
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
        })
    }
}

/// Takes up to `want` uids of the range that no other aayu run on this machine holds, locking each
/// (`flock` on a file per uid in the temp folder) for as long as the locks live.
fn lock_uids(
    [first, last]: [u32; 2],
    want: usize,
) -> (Vec<u32>, Vec<nix::fcntl::Flock<std::fs::File>>) {
    let mut uids = Vec::new();
    let mut locks = Vec::new();
    for uid in first..=last {
        if uids.len() == want {
            break;
        }
        // One machine-wide place (not $TMPDIR, which differs between runs) so every aayu run sees the locks.
        let path = Path::new("/tmp").join(format!("aayu-sandbox-uid-{uid}.lock"));
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            continue;
        };
        if let Ok(lock) = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        {
            uids.push(uid);
            locks.push(lock);
        }
    }
    (uids, locks)
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP`] bytes.
fn capped(mut pipe: impl Read) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
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
/// another uid, and nothing that could carry a secret.
fn allowed_env(settings: &SandboxSettings) -> BTreeMap<String, OsString> {
    let from = |name: &str| {
        settings
            .process_env
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let home = from("HOME").map(PathBuf::from);
    let mut env: BTreeMap<String, OsString> = BTreeMap::new();
    for name in ["PATH", "LANG", "LC_ALL", "CI", "TERM", "TZ"] {
        if let Some(value) = from(name) {
            env.insert(name.into(), value.into());
        }
    }
    // Rust: the toolchain stays where it is installed, read-only; downloads happened before the sandbox.
    let rustup_home = from("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".rustup")));
    if let Some(dir) = rustup_home.filter(|d| d.is_dir()) {
        env.insert("RUSTUP_HOME".into(), dir.into_os_string());
    }
    if let Some(toolchain) = from("RUSTUP_TOOLCHAIN").or_else(active_toolchain) {
        env.insert("RUSTUP_TOOLCHAIN".into(), toolchain.into());
    }
    let cargo_home = from("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".cargo")));
    if let Some(dir) = cargo_home.filter(|d| d.is_dir()) {
        env.insert("CARGO_HOME".into(), dir.into_os_string());
    }
    env.insert("CARGO_NET_OFFLINE".into(), "true".into());
    // Go: the toolchain and module cache read-only, no toolchain downloads, the build cache per HOME.
    for name in ["GOROOT", "GOMODCACHE", "GOPROXY"] {
        if let Some(value) = from(name).or_else(|| go_env(name, &settings.process_env)) {
            env.insert(name.into(), value.into());
        }
    }
    env.insert("GOFLAGS".into(), "-mod=mod".into());
    env.insert("GOTOOLCHAIN".into(), "local".into());
    for name in &settings.extra_names {
        if is_secret_name(name) {
            continue;
        }
        if let Some(value) = from(name) {
            env.insert(name.clone(), value.into());
        }
    }
    env
}

/// What `go env NAME` says in aayu's own environment (the module cache lives under the real HOME, which the
/// sandbox does not have); `None` without Go.
fn go_env(name: &str, process_env: &BTreeMap<String, String>) -> Option<String> {
    let output = Command::new("go")
        .args(["env", name])
        .env_clear()
        .envs(process_env.iter().filter(|(k, _)| !is_secret_name(k)))
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let value = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (output.status.success() && !value.is_empty()).then_some(value)
}

/// The toolchain rustup would pick here, so that a fresh HOME does not change it.
fn active_toolchain() -> Option<String> {
    let output = Command::new("rustup")
        .args(["show", "active-toolchain"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// The seccomp filter of no-network checks: `socket(AF_INET | AF_INET6, …)` fails with EACCES, and so do
/// the io_uring syscalls, whose socket and connect operations would bypass a `socket()` filter.
fn network_filter() -> Option<BpfProgram> {
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).ok()?;
    let family = |af: i32| {
        SeccompRule::new(vec![
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af as u64).ok()?,
        ])
        .ok()
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        libc::SYS_socket,
        vec![family(libc::AF_INET)?, family(libc::AF_INET6)?],
    );
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .ok()?;
    filter.try_into().ok()
}
