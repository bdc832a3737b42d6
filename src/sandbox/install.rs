//! Installed environments: what a runner's package needs beyond a download cache (a Python virtual
//! environment), described by the runner as data ([`Install`]) and made by the sandbox once per tree and
//! package, during the fetch: every step as the first slot's uid, with the network only where the step
//! says so, in folders of the run; then, as root, sealed with the other caches (root-owned, read-only).
//!
//! A step's words may hold these placeholders, which the sandbox replaces: `@python@` (the interpreter the
//! preflight found), `@wheels@` (the run's wheelhouse, shared by every tree), `@work@` (this package's
//! own folder of the run), `@copy@` (the per-run copy of the package folder) and `@venv@`
//! (`@work@/venv`).

use std::collections::BTreeSet;
use std::ffi::OsString;
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
    /// Whether the package folder is copied into `@copy@` (without what git ignores): a step that builds
    /// the package writes there, never into the checkout.
    pub copy: bool,
    pub steps: Vec<InstallStep>,
    /// Variables every later process of the package gets, placeholders replaced.
    pub env: Vec<(String, String)>,
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
    ) -> Result<Vec<(String, OsString)>, String> {
        let failed = |e: SandboxError| e.to_string();
        let python = self
            .locate(super::preflight::Tool::Python)
            .map(|(_, file)| file)
            .ok_or_else(|| "no Python interpreter the sandbox uid can run".to_string())?;
        let base = self.installs_dir();
        if !base.exists() {
            std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
            let _ = std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o711));
        }
        let wheels = base.join("wheels");
        if !wheels.exists() {
            self.prepare(0, &wheels).map_err(failed)?;
            let _ = std::fs::set_permissions(&wheels, std::fs::Permissions::from_mode(0o755));
            // The machine's own wheelhouse, linked read-only: a wheel it holds is not downloaded again.
            if let Some(from) = &self.python_wheels {
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
        self.prepare(0, &work).map_err(failed)?;
        let _ = std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755));
        let places = Places {
            python: python.clone(),
            wheels,
            work: work.clone(),
        };
        for (name, text) in &install.files {
            let to = work.join(name);
            if let Some(parent) = to.parent() {
                let _ = std::fs::create_dir_all(parent);
                let _ = std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755));
            }
            std::fs::write(&to, places.fill(text)).map_err(|e| e.to_string())?;
            let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644));
        }
        if install.copy {
            let copy = work.join("copy");
            copy_package(&root.join(package), &copy, self.uid(0))
                .map_err(|e| format!("cannot copy `{package}` for its install: {e}"))?;
        }
        for step in &install.steps {
            if let Some(file) = &step.unless_empty {
                let text = std::fs::read_to_string(work.join(file)).unwrap_or_default();
                if text.lines().all(|l| l.trim().is_empty()) {
                    continue;
                }
            }
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
                    },
                    &BTreeSet::new(),
                )
                .map_err(|e| format!("{}: cannot run `{}`: {e}", step.what, argv.join(" ")))?;
            if outcome.timed_out {
                return Err(format!("{}: ran past 600 s", step.what));
            }
            if let Some(over) = &outcome.over_limit {
                return Err(format!("{}: went over a limit: {over}", step.what));
            }
            if outcome.code != Some(0) {
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
                let why = crate::machine_paths::scrub(&why, root)
                    .replace(&places.work.display().to_string(), "<install>")
                    .replace(&places.wheels.display().to_string(), "<wheelhouse>");
                return Err(format!("{}: {why}", step.what));
            }
        }
        let env: Vec<(String, OsString)> = install
            .env
            .iter()
            .map(|(k, v)| (k.clone(), OsString::from(places.fill(v))))
            .collect();
        if let Ok(mut all) = self.installed.lock() {
            all.push((root.to_path_buf(), package.to_string(), env.clone()));
        }
        if let Ok(mut keep) = self.keep_links.lock() {
            keep.insert(std::fs::canonicalize(&python).unwrap_or(python));
        }
        Ok(env)
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

/// Copies a package folder for its install — every file git does not ignore, `.git` and any virtual
/// environment left out, links copied as links — into `to`, handed to `uid`.
fn copy_package(from: &Path, to: &Path, uid: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(to)?;
    let own = |path: &Path| {
        if let Some(uid) = uid {
            let _ = std::os::unix::fs::lchown(path, Some(uid), Some(uid));
        }
    };
    own(to);
    let walk = ignore::WalkBuilder::new(from)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| {
            e.file_name() != ".git"
                && !(e.file_type().is_some_and(|t| t.is_dir())
                    && e.path().join("pyvenv.cfg").exists())
        })
        .build();
    for entry in walk.flatten() {
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = to.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if meta.is_file() {
            std::fs::copy(entry.path(), &target)?;
            let mode = if meta.mode() & 0o100 != 0 {
                0o755
            } else {
                0o644
            };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
        } else {
            continue;
        }
        own(&target);
    }
    Ok(())
}
