//! Installed environments: what a runner's package needs beyond a download cache (a Python virtual
//! environment), described by the runner as data ([`Install`]) and made by the sandbox once per tree and
//! package, during the fetch: every step as the first slot's uid, with the network only where the step
//! says so, in folders of the run; then, as root, sealed with the other caches (root-owned, read-only).
//!
//! A step's words may hold these placeholders, which the sandbox replaces: `@python@` (the interpreter the
//! preflight found), `@wheels@` (the machine's wheels, linked read-only: root's, shared by every tree),
//! `@work@` (this package's own folder of the run, with `dl`, its own downloads), `@copy@` (the per-run
//! copy of the package folder) and `@venv@` (`@work@/venv`). Downloads are never shared between trees: code
//! of the head's package could otherwise plant a wheel the base installs.
//!
//! `@work@` is root's: the slot uid writes only its `copy`, `venv`, `build-env`, `dl` and `out` folders. So code
//! of the package that a step runs (a build backend) cannot change what a later step reads — a file of
//! `@work@`, or a module in a step's working folder — and what it writes for a later step (`out`) is
//! read back by root as data ([`Output`]) before a step with the network reads it.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Job, Sandbox, SandboxError, said};

/// An install made this run: its tree, its package folder, and the variables its processes get.
pub(super) type Installed = (PathBuf, String, Vec<(String, OsString)>);

/// How a package's environment is made.
#[derive(Debug, Clone)]
pub struct Install {
    /// Files written into `@work@` before any step (name, text): read as data by the steps.
    pub files: Vec<(String, String)>,
    /// The folder copied into `@copy@` (relative to the tree: the package's, or the workspace root that
    /// holds its lock file): a step that builds or installs writes there, never into the checkout.
    pub copy: Option<String>,
    pub steps: Vec<InstallStep>,
    /// Variables every later process of the package gets, placeholders replaced.
    pub env: Vec<(String, String)>,
    /// Whether the machine's npm cache seeds the install's own (`@work@/dl`): its content linked
    /// read-only, its index copied, so that what it holds is not downloaded again.
    pub npm_cache: bool,
    /// Whether every top `node_modules` of the copy gets a `.vite-temp` folder the tests' uid may write,
    /// made after the seal: vite (and so vitest) bundles a `vite.config.*`/`vitest.config.*` and writes
    /// the bundle there — else next to the config, in the sealed copy, where it cannot.
    pub vite_temp: bool,
}

/// One process of an install.
#[derive(Debug, Clone)]
pub struct InstallStep {
    /// What it does, for the log and a reason: `downloading the test dependencies`.
    pub what: String,
    pub argv: Vec<String>,
    pub network: bool,
    /// Where it runs (a placeholder path).
    pub cwd: String,
    pub env: Vec<(String, String)>,
    /// Skipped when this file of `@work@` is missing or holds no line.
    pub unless_empty: Option<String>,
    /// What a failure says, read from the process's stderr (pip's `No matching distribution found`).
    pub explain: Option<fn(&str) -> Option<String>>,
    /// A file the step writes that a later step reads: checked by root, and written again by root.
    pub output: Option<Output>,
}

/// A step's output file (in `@work@`), which code of the package may have written: read by root
/// (capped, no link followed), checked, and written as `to` (root's, read-only to the slot) — a later step
/// reads only that.
#[derive(Debug, Clone)]
pub struct Output {
    pub from: String,
    pub to: String,
    /// The text to write, or why it is refused (the runner's own error).
    pub check: fn(&str) -> Result<String, Box<dyn std::error::Error + Send + Sync>>,
}

/// Why a package's install could not be made.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("no Python interpreter the sandbox uid can run")]
    NoPython,
    #[error("{0}")]
    Write(#[source] std::io::Error),
    #[error(
        "`[verify] python_wheels` names `{}`, which is inside the repository: it names a folder of the machine's (the repository's own files are the pull request's)",
        .folder.display()
    )]
    WheelsInRepository { folder: PathBuf },
    #[error(transparent)]
    Folder(#[from] SandboxError),
    #[error("cannot copy `{shown}` for its install: {source}")]
    Copy {
        shown: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {why}")]
    Step {
        what: String,
        #[source]
        why: StepError,
    },
}

/// Why one step of an install failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("cannot run `{argv}`: {source}")]
    Start {
        argv: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{} survived the kill: the install cannot be trusted", crate::sandbox::processes(*count))]
    Survivors { count: usize },
    #[error("ran past 600 s")]
    TimedOut,
    #[error("went over a limit: {over}")]
    OverLimit { over: String },
    /// What the step said (see [`Sandbox::step_said`]).
    #[error("{said}")]
    Failed { said: String },
    #[error("it wrote no readable `{from}`: {source}")]
    NoOutput {
        from: String,
        #[source]
        source: crate::safe_fs::Refused,
    },
    #[error("{0}")]
    Refused(Box<dyn std::error::Error + Send + Sync>),
}

/// The folders of one package's install.
pub(super) struct Places {
    pub python: PathBuf,
    pub wheels: PathBuf,
    pub work: PathBuf,
}

impl Places {
    fn fill(&self, text: &str) -> String {
        let work = self.work.display().to_string();
        text.replace("@python@", &self.python.display().to_string())
            .replace("@wheels@", &self.wheels.display().to_string())
            .replace("@venv@", &format!("{work}/venv"))
            .replace("@copy@", &format!("{work}/copy"))
            .replace("@work@", &work)
    }
}

impl Sandbox {
    /// The folder the run's installs live in (`deps/python` as root, sealed with the caches).
    pub(super) fn installs_dir(&self) -> PathBuf {
        if self.caches.is_some() {
            self.dir.path().join("deps/python")
        } else {
            self.dir.path().join("python")
        }
    }

    /// Makes one package's environment in `root` (see [`Install`]); the variables its processes get, or
    /// why it could not be made.
    pub(super) fn install(
        &self,
        root: &Path,
        package: &str,
        install: &Install,
        heartbeat: &dyn Fn(Duration),
    ) -> Result<Vec<(String, OsString)>, InstallError> {
        // The interpreter, when a step names it (a JavaScript install needs none).
        let python = self
            .locate(super::preflight::Tool::Python)
            .map(|(_, file)| file);
        if python.is_none()
            && install
                .steps
                .iter()
                .any(|step| step.argv.iter().any(|a| a.contains("@python@")))
        {
            return Err(InstallError::NoPython);
        }
        let places = self.install_places(python.clone().unwrap_or_default())?;
        self.fill_work(root, install, &places)?;
        for step in &install.steps {
            self.install_step(root, step, &places, heartbeat)?;
        }
        Ok(self.record_install(root, package, install, &places, python))
    }

    /// The install's folders: the run's installs (made once), its wheelhouse (the machine's wheels linked
    /// read-only), and this install's own `@work@` with the slot's folders in it.
    fn install_places(&self, python: PathBuf) -> Result<Places, InstallError> {
        let base = self.installs_dir();
        if !base.exists() {
            std::fs::create_dir_all(&base).map_err(InstallError::Write)?;
            let _ = std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711));
        }
        let wheels = base.join("wheels");
        if !wheels.exists() {
            // Root's: the machine's own wheelhouse, linked read-only (a wheel it holds is not downloaded
            // again). No step writes here.
            std::fs::create_dir_all(&wheels).map_err(InstallError::Write)?;
            let _ = std::fs::set_permissions(&wheels, std::fs::Permissions::from_mode(0o755));
            if let Some(from) = &self.python_wheels {
                if let Some(workspace) = &self.workspace
                    && std::fs::canonicalize(from).is_ok_and(|f| {
                        std::fs::canonicalize(workspace).is_ok_and(|w| f.starts_with(w))
                    })
                {
                    return Err(InstallError::WheelsInRepository {
                        folder: from.clone(),
                    });
                }
                link_wheels(from, &wheels);
            }
        }
        let n = self
            .installed
            .lock()
            .map(|all| all.len())
            .unwrap_or_default();
        let work = base.join(format!("{n}"));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(InstallError::Write)?;
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755))
            .map_err(InstallError::Write)?;
        for slot_own in ["venv", "build-env", "out", "dl"] {
            let dir = work.join(slot_own);
            self.prepare(0, &dir)?;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
        }
        Ok(Places {
            python,
            wheels,
            work,
        })
    }

    /// What `@work@` holds before any step: the install's files, the seed of the npm cache, the copy of
    /// the package folder.
    fn fill_work(
        &self,
        root: &Path,
        install: &Install,
        places: &Places,
    ) -> Result<(), InstallError> {
        let work = &places.work;
        for (name, text) in &install.files {
            let to = work.join(name);
            if let Some(parent) = to.parent() {
                let _ = std::fs::create_dir_all(parent);
                let _ = std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755));
            }
            // As written: a file's text is data (a requirement is never a placeholder's).
            std::fs::write(&to, text).map_err(InstallError::Write)?;
            let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644));
        }
        if install.npm_cache
            && let Some(from) = self.machine_npm_cache()
        {
            seed_npm_cache(
                &from.join("_cacache"),
                &work.join("dl/_cacache"),
                self.uid(0),
            );
        }
        if let Some(folder) = &install.copy {
            let copy = work.join("copy");
            let shown = super::toolchain::shown_dir(folder);
            copy_package(&root.join(folder), &copy, self.uid(0)).map_err(|source| {
                InstallError::Copy {
                    shown: shown.to_string(),
                    source,
                }
            })?;
        }
        Ok(())
    }

    /// Runs one step of an install (unless the file it needs is empty), and checks and writes again the
    /// output file it wrote for a later step.
    fn install_step(
        &self,
        root: &Path,
        step: &InstallStep,
        places: &Places,
        heartbeat: &dyn Fn(Duration),
    ) -> Result<(), InstallError> {
        let work = &places.work;
        if let Some(file) = &step.unless_empty {
            let text = std::fs::read_to_string(work.join(file)).unwrap_or_default();
            if text.lines().all(|l| l.trim().is_empty()) {
                return Ok(());
            }
        }
        let failed = |why: StepError| InstallError::Step {
            what: step.what.clone(),
            why,
        };
        let argv: Vec<String> = step.argv.iter().map(|a| places.fill(a)).collect();
        let cwd = PathBuf::from(places.fill(&step.cwd));
        let mut env: Vec<(String, OsString)> = if step.network {
            self.fetch_env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            Vec::new()
        };
        env.extend(
            step.env
                .iter()
                .map(|(k, v)| (k.clone(), OsString::from(places.fill(v)))),
        );
        let outcome = self
            .run(
                Job {
                    argv: &argv,
                    cwd: &cwd,
                    slot: 0,
                    network: step.network,
                    stdin: Vec::new(),
                    timeout: Duration::from_secs(600),
                    env,
                    heartbeat: Some(heartbeat),
                    stdout_cap: crate::sandbox::OUTPUT_CAP,
                },
                &BTreeSet::new(),
            )
            .map_err(|source| {
                failed(StepError::Start {
                    argv: crate::machine_paths::scrub(&argv.join(" "), root),
                    source,
                })
            })?;
        if !outcome.survivors.is_empty() {
            return Err(failed(StepError::Survivors {
                count: outcome.survivors.len(),
            }));
        }
        if outcome.timed_out {
            return Err(failed(StepError::TimedOut));
        }
        if let Some(over) = outcome.over_limit {
            return Err(failed(StepError::OverLimit { over }));
        }
        if outcome.code != Some(0) {
            return Err(failed(StepError::Failed {
                said: self.step_said(root, step, places, &outcome),
            }));
        }
        if let Some(output) = &step.output {
            let text = crate::safe_fs::read(work, &output.from, 4 << 20).map_err(|source| {
                failed(StepError::NoOutput {
                    from: output.from.clone(),
                    source,
                })
            })?;
            let checked = (output.check)(&String::from_utf8_lossy(&text))
                .map_err(|why| failed(StepError::Refused(why)))?;
            let to = work.join(&output.to);
            let _ = std::fs::remove_file(&to);
            std::fs::write(&to, checked).map_err(InstallError::Write)?;
            let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644));
        }
        Ok(())
    }

    /// What a failed step said, as a reason may show it: the runner's explanation, or its exit and
    /// stderr; machine paths and index URLs (a token may be in one) written out.
    fn step_said(
        &self,
        root: &Path,
        step: &InstallStep,
        places: &Places,
        outcome: &super::Outcome,
    ) -> String {
        let stderr = String::from_utf8_lossy(&outcome.stderr);
        let root_said = said(&outcome.stderr, root);
        let why = step
            .explain
            .and_then(|explain| explain(&stderr))
            .unwrap_or_else(|| {
                format!(
                    "exited with {}: {root_said}",
                    outcome
                        .code
                        .map_or_else(|| "a signal".to_string(), |c| c.to_string())
                )
            });
        let mut why = crate::machine_paths::scrub(&why, root)
            .replace(&places.work.display().to_string(), "<install>")
            .replace(&places.wheels.display().to_string(), "<wheelhouse>");
        // An index URL may carry a token in its path: never in a reason (which a comment shows).
        for name in [
            "PIP_INDEX_URL",
            "PIP_EXTRA_INDEX_URL",
            "npm_config_registry",
            "NPM_CONFIG_REGISTRY",
        ] {
            if let Some(value) = self.fetch_env.get(name).and_then(|v| v.to_str()) {
                for url in value.split_whitespace().filter(|u| u.len() > 8) {
                    why = why.replace(url, "<index>");
                }
            }
        }
        why
    }

    /// Records a made install: the variables its package's processes get (returned), the copy that gets
    /// a `.vite-temp`, the interpreter its venv's links lead to.
    fn record_install(
        &self,
        root: &Path,
        package: &str,
        install: &Install,
        places: &Places,
        python: Option<PathBuf>,
    ) -> Vec<(String, OsString)> {
        let env: Vec<(String, OsString)> = install
            .env
            .iter()
            .map(|(k, v)| (k.clone(), OsString::from(places.fill(v))))
            .collect();
        if let Ok(mut all) = self.installed.lock() {
            all.push((root.to_path_buf(), package.to_string(), env.clone()));
        }
        if install.vite_temp
            && let Ok(mut copies) = self.vite_temps.lock()
        {
            copies.push(places.work.join("copy"));
        }
        if let Some(python) = python
            && let Ok(mut keep) = self.keep_links.lock()
        {
            keep.insert(std::fs::canonicalize(&python).unwrap_or(python));
        }
        env
    }

    /// The machine's npm cache, as npm itself finds it for aayu's own user: `npm_config_cache`, else
    /// `~/.npm` — read from aayu's environment, never by running npm (which would read the checkout's
    /// `.npmrc`).
    fn machine_npm_cache(&self) -> Option<PathBuf> {
        let env = &self.process_env;
        env.get("npm_config_cache")
            .or_else(|| env.get("NPM_CONFIG_CACHE"))
            .filter(|v| v.starts_with('/'))
            .map(PathBuf::from)
            .or_else(|| env.get("HOME").map(|h| Path::new(h).join(".npm")))
            .filter(|p| p.join("_cacache").is_dir())
    }

    /// The fetch and installs of `from` serve the tree at `to` as well (the canary's copy of the head,
    /// whose test files alone differ): the lock files this run resolved for it (copied), what each
    /// install gave, and what blocks each package's work there.
    pub fn share_fetch(&self, from: &Path, to: &Path) {
        for lock in self.resolved_locks(from) {
            if let Ok(bytes) = crate::safe_fs::read(from, &lock.path, 64 << 20) {
                let _ = crate::safe_fs::write(to, &lock.path, &bytes);
            }
        }
        if let Ok(mut all) = self.installed.lock() {
            let shared: Vec<Installed> = all
                .iter()
                .filter(|(root, _, _)| root == from)
                .map(|(_, package, env)| (to.to_path_buf(), package.clone(), env.clone()))
                .collect();
            all.extend(shared);
        }
        if let Ok(mut problems) = self.dependency_problems.lock() {
            let shared: Vec<((PathBuf, String), String)> = problems
                .iter()
                .filter(|((root, _), _)| root == from)
                .map(|((_, package), why)| ((to.to_path_buf(), package.clone()), why.clone()))
                .collect();
            problems.extend(shared);
        }
    }

    /// The variables an install gave the package in `root` (a folder, any spelling): none when it has
    /// no install.
    pub fn installed_env(&self, root: &Path, package: &str) -> Vec<(String, OsString)> {
        let Ok(package) = super::toolchain::package_dir(package) else {
            return Vec::new();
        };
        self.installed
            .lock()
            .ok()
            .and_then(|all| {
                all.iter()
                    .find(|(r, p, _)| r == root && *p == package)
                    .map(|(_, _, env)| env.clone())
            })
            .unwrap_or_default()
    }
}

/// Seeds an install's npm cache from the machine's: the content (immutable, named by its hash) linked,
/// the index (which npm may append to) copied and handed to `uid` — only what every user may read.
fn seed_npm_cache(from: &Path, to: &Path, uid: Option<u32>) {
    open_files(&from.join("content-v2"), &to.join("content-v2"), uid, false);
    open_files(&from.join("index-v5"), &to.join("index-v5"), uid, true);
    if let Some(uid) = uid {
        let _ = std::os::unix::fs::lchown(to, Some(uid), Some(uid));
    }
}

/// The files of `from` that every user may read already (never one only the machine's user may: a
/// private package, a stored request), linked read-only — or, with `copy`, copied and handed to `uid`
/// (npm appends to its index) — into `to`, whose folders are `uid`'s. Links are left out.
fn open_files(from: &Path, to: &Path, uid: Option<u32>, copy: bool) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    if std::fs::create_dir_all(to).is_err() {
        return;
    }
    if let Some(uid) = uid {
        let _ = std::os::unix::fs::lchown(to, Some(uid), Some(uid));
    }
    for entry in entries.flatten() {
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let target = to.join(entry.file_name());
        if meta.is_dir() {
            open_files(&entry.path(), &target, uid, copy);
        } else if meta.is_file() && meta.mode() & 0o004 != 0 {
            if copy {
                if std::fs::copy(entry.path(), &target).is_ok() {
                    let _ =
                        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644));
                    if let Some(uid) = uid {
                        let _ = std::os::unix::fs::lchown(&target, Some(uid), Some(uid));
                    }
                }
            } else if std::fs::hard_link(entry.path(), &target).is_err() {
                let _ = std::fs::copy(entry.path(), &target).and_then(|_| {
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444))
                });
            }
        }
    }
}

/// Hard-links (or, across file systems, copies) the wheels of a machine's wheelhouse into the run's: only
/// `*.whl` files that are regular and readable by every user already — the folder is named by a setting,
/// and nothing it holds that other users may not read is handed to the sandbox uid.
fn link_wheels(from: &Path, to: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else {
            continue;
        };
        let open = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|m| m.is_file() && m.mode() & 0o004 != 0 && m.mode() & 0o022 == 0);
        if !text.ends_with(".whl") || text.starts_with('.') || !open {
            continue;
        }
        let target = to.join(&name);
        if std::fs::hard_link(entry.path(), &target).is_err() {
            let _ = std::fs::copy(entry.path(), &target).and_then(|_| {
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o444))
            });
        }
    }
}

/// Makes `.vite-temp` in each `node_modules` of `copy` that is not inside another (the one vite finds
/// nearest a config), owned by `uid`, after the seal: the only folder of a sealed install its tests may
/// write, and one no module is resolved from (no package is named `.vite-temp`).
pub(super) fn vite_temps(copy: &Path, uid: Option<u32>) {
    let Ok(entries) = std::fs::read_dir(copy) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !kind.is_dir() {
            continue;
        }
        let path = entry.path();
        if entry.file_name() == "node_modules" {
            let temp = path.join(".vite-temp");
            if std::fs::create_dir(&temp).is_ok() {
                if let Some(uid) = uid {
                    let _ = std::os::unix::fs::lchown(&temp, Some(uid), Some(uid));
                }
                let _ = std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o700));
            }
        } else {
            vite_temps(&path, uid);
        }
    }
}

/// What the copy of a package leaves out, at any depth: git's folder and caches (read by name: no ignore
/// file of the pull request's is read as root).
const NOT_COPIED: [&str; 10] = [
    ".git",
    "node_modules",
    // npm's project settings (`git=`, `node-options=`, `${VAR}` in a registry): never the pull request's.
    ".npmrc",
    // yarn 1's (`yarn-path`: a program yarn runs instead of itself) and yarn 2's; pnpm's install hooks.
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
];

/// What it leaves out at the package folder's top: the build output and environments a developer's
/// checkout holds (`src/build/` of a package named `build` is its source).
const NOT_COPIED_AT_TOP: [&str; 7] = [
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "node_modules",
    "build",
    "dist",
];

/// The most a package's copy may hold.
const COPY_FILES: usize = 200_000;
const COPY_BYTES: u64 = 2 << 30;

/// Copies a package folder for its install — its files but [`NOT_COPIED`], [`NOT_COPIED_AT_TOP`], `*.egg-info` and any
/// virtual environment (a folder holding `pyvenv.cfg`), links copied as links, no link followed, each
/// file opened as itself — into `to`, handed to `uid`. Capped by [`COPY_FILES`] and [`COPY_BYTES`].
fn copy_package(from: &Path, to: &Path, uid: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    std::fs::create_dir_all(to)?;
    let own = |path: &Path| {
        if let Some(uid) = uid {
            let _ = std::os::unix::fs::lchown(path, Some(uid), Some(uid));
        }
    };
    own(to);
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut stack = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((dir, into)) = stack.pop() {
        let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)?.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name();
            let text = name.to_string_lossy();
            let top = dir == from;
            if NOT_COPIED.contains(&text.as_ref())
                || (top && NOT_COPIED_AT_TOP.contains(&text.as_ref()))
                || text.ends_with(".egg-info")
            {
                continue;
            }
            let path = entry.path();
            let target = into.join(&name);
            let meta = std::fs::symlink_metadata(&path)?;
            files += 1;
            if files > COPY_FILES {
                return Err(std::io::Error::other(format!(
                    "it holds more than {COPY_FILES} files"
                )));
            }
            if meta.is_dir() {
                if std::fs::symlink_metadata(path.join("pyvenv.cfg")).is_ok() {
                    continue;
                }
                std::fs::create_dir(&target)?;
                own(&target);
                stack.push((path, target));
            } else if meta.file_type().is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&path)?, &target)?;
                own(&target);
            } else if meta.is_file() {
                bytes += meta.len();
                if bytes > COPY_BYTES {
                    return Err(std::io::Error::other("it holds more than 2 GiB"));
                }
                let mut source = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(&path)?;
                if !source.metadata()?.is_file() {
                    continue;
                }
                let mut copy = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&target)?;
                std::io::copy(&mut (&mut source).take(meta.len()), &mut copy)?;
                let mode = if meta.mode() & 0o100 != 0 {
                    0o755
                } else {
                    0o644
                };
                copy.set_permissions(std::fs::Permissions::from_mode(mode))?;
                own(&target);
            }
        }
    }
    Ok(())
}
