//! Before any floor: whether the tools that the selected checks and the mapped tests need — cargo, go,
//! node, chromium — are there and run as the sandbox uid, and whether that uid can reach the repository.
//! When one cannot, the checks and tests that need it are blocked with a reason that names the tool and
//! the fix for where aayu runs: in the action, the full image or an extended one; locally, the folder in
//! the way and its mode, or running as an ordinary user.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Job, Sandbox};

/// A tool product code needs, checked once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    Cargo,
    Go,
    Node,
    Chromium,
    Python,
    /// `llvm-profdata` and `llvm-cov` of rustc's own LLVM version (the coverage floor on Rust), found by
    /// [`Sandbox::llvm_tools`].
    Llvm,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cargo => "cargo",
            Tool::Go => "go",
            Tool::Node => "node",
            Tool::Chromium => "chromium",
            Tool::Python => "python",
            Tool::Llvm => "llvm-cov",
        }
    }

    /// The programs that are this tool, in the order they are looked for on `PATH`.
    fn programs(self) -> &'static [&'static str] {
        match self {
            Tool::Cargo => &["cargo"],
            Tool::Go => &["go"],
            Tool::Node => &["node"],
            Tool::Chromium => &["chromium", "chromium-browser", "google-chrome"],
            Tool::Python => &["python3"],
            Tool::Llvm => &["llvm-cov"],
        }
    }

    /// The arguments that make it say its version and do nothing else.
    fn version_args(self) -> &'static [&'static str] {
        match self {
            Tool::Go => &["version"],
            Tool::Chromium => &["--headless", "--no-sandbox", "--version"],
            // Its version, and that the modules an install uses are there.
            Tool::Python => &[
                "-c",
                "import sys, venv, pip; print('Python', sys.version.split()[0], '(pip', pip.__version__ + ')')",
            ],
            _ => &["--version"],
        }
    }

    /// How to install it on a machine of one's own.
    fn install(self) -> &'static str {
        match self {
            Tool::Cargo => "install Rust with rustup (https://rustup.rs)",
            Tool::Go => "install Go (apt-get install golang-go, or https://go.dev/dl)",
            Tool::Node => "install Node.js (apt-get install nodejs npm, or https://nodejs.org)",
            Tool::Chromium => "install Chromium (apt-get install chromium)",
            Tool::Python => {
                "install Python 3 with venv and pip (apt-get install python3 python3-venv python3-pip), or name an interpreter with `[verify] python`"
            }
            Tool::Llvm => {
                "install the llvm-profdata and llvm-cov of rustc's LLVM version (apt-get install llvm-N, N as `rustc -vV` says)"
            }
        }
    }

    /// The tool a control program is, when it is one of these (`node`, `npm`, `npx`).
    pub fn of_program(program: &str) -> Option<Tool> {
        let name = Path::new(program).file_name()?.to_str()?;
        match name {
            "node" | "npm" | "npx" => Some(Tool::Node),
            "cargo" => Some(Tool::Cargo),
            "go" => Some(Tool::Go),
            "python3" | "python" => Some(Tool::Python),
            _ => None,
        }
    }
}

/// How a tool was found: its version line, or why it cannot run and how to fix that.
pub(super) type Checked = Result<String, String>;

/// The first folder on the way to `path` (from `/`) that other users cannot pass (`o+x` missing), with
/// its mode; `None` when every folder can be passed.
pub fn closed_folder(path: &Path) -> Option<(PathBuf, u32)> {
    let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
    ancestors.reverse();
    ancestors.into_iter().find_map(|folder| {
        let mode = std::fs::metadata(folder).ok()?.permissions().mode();
        (mode & 0o001 == 0).then(|| (folder.to_path_buf(), mode & 0o7777))
    })
}

impl Sandbox {
    /// Whether `tool` runs here as product code runs it (on the sandbox's `PATH`, as the sandbox uid,
    /// with the sandbox's environment); its version line, or the reason it cannot with the fix. Checked
    /// once per run.
    pub fn tool(&self, tool: Tool) -> Checked {
        let known = |checked: &BTreeMap<Tool, Checked>| checked.get(&tool).cloned();
        if let Some(found) = known(&self.checked.lock().unwrap_or_else(|p| p.into_inner())) {
            return found;
        }
        // Not held while the tool runs: checking one tool may need another (the LLVM tools, cargo).
        let found = self.check_tool(tool);
        self.checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tool)
            .or_insert(found)
            .clone()
    }

    /// Why the sandbox uid cannot reach the repository at `root`, with the fix; `None` when it can.
    pub fn reach_problem(&self, root: &Path) -> Option<String> {
        if !self.separate_uids() {
            return None;
        }
        let absolute: PathBuf = std::path::absolute(root)
            .unwrap_or_else(|_| root.to_path_buf())
            .components()
            .collect();
        // The folders on the way to a file in it: the repository's own folder included.
        let (folder, mode) = closed_folder(&absolute.join("x"))?;
        let root = absolute.as_path();
        Some(if self.in_action {
            format!(
                "the sandbox uid cannot reach the workspace `{}`: `{}` is mode {mode:04o}. GitHub's workspace is open to other users: does a step before aayu change its mode?",
                root.display(),
                folder.display()
            )
        } else {
            format!(
                "the sandbox uid cannot reach the repository `{}`: `{}` is mode {mode:04o}, which other users cannot pass. Clone it under a folder others can enter (such as /var/tmp or /srv), `chmod o+x {}`, or run aayu as an ordinary user (checks then run as your own uid)",
                root.display(),
                folder.display(),
                shell_word(&folder.display().to_string())
            )
        })
    }

    /// Why the sandbox uid cannot read a package folder (relative to `root`), with the path and the fix:
    /// the first file the repository commits there without `o+r`, or folder without `o+rx` (a clone made
    /// under umask `027`, say), looked at without following links. `None` when it can, or without
    /// separate uids.
    pub fn read_problem(&self, root: &Path, package: &str) -> Option<String> {
        if !self.separate_uids() {
            return None;
        }
        let key = (root.to_path_buf(), package.to_string());
        if let Some(found) = self.read_checked.lock().ok()?.get(&key) {
            return found.clone();
        }
        let found = self.first_hidden(root, package);
        if let Ok(mut checked) = self.read_checked.lock() {
            checked.insert(key, found.clone());
        }
        found
    }

    fn first_hidden(&self, root: &Path, package: &str) -> Option<String> {
        const MOST: usize = 200_000;
        // What the repository commits is what product code is given: a developer's own untracked files
        // (a `0600` `.env`) are none of its business, and aayu's run folders are closed on purpose. A tree
        // that is no repository (red-on-base's copy of the base) was written by aayu, readable.
        let repo = git2::Repository::open(root).ok()?;
        let index = repo.index().ok()?;
        let prefix = if package.is_empty() {
            String::new()
        } else {
            format!("{package}/")
        };
        let mut folders = BTreeSet::new();
        for entry in index.iter().take(MOST) {
            let Ok(rel) = std::str::from_utf8(&entry.path) else {
                continue;
            };
            if !rel.starts_with(&prefix) {
                continue;
            }
            let mut checks: Vec<(String, bool)> = Vec::new();
            let mut dir = rel;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                if parent.len() < prefix.len().saturating_sub(1)
                    || !folders.insert(parent.to_string())
                {
                    break;
                }
                checks.push((parent.to_string(), true));
                dir = parent;
            }
            checks.push((rel.to_string(), false));
            for (path, folder) in checks {
                let Ok(meta) = std::fs::symlink_metadata(root.join(&path)) else {
                    continue;
                };
                let mode = meta.permissions().mode() & 0o7777;
                let hidden = if folder {
                    meta.is_dir() && mode & 0o005 != 0o005
                } else {
                    meta.is_file() && mode & 0o004 == 0
                };
                if hidden {
                    let shown = crate::sandbox::toolchain::shown_dir(package);
                    return Some(format!(
                        "the sandbox uid cannot read `{path}` (mode {mode:04o}): product code runs as another uid, which reads only what other users may; `chmod -R o+rX {}` in the repository (a clone made under umask 022 has these modes)",
                        shell_word(shown)
                    ));
                }
            }
        }
        None
    }

    /// Checks every tool of `needs` and the repository now, before any floor; the lines to log (one per
    /// tool, then the repository's problem if any).
    pub fn preflight(&self, root: &Path, needs: &BTreeSet<Tool>) -> Vec<String> {
        let mut lines: Vec<String> = needs
            .iter()
            .map(|&tool| match self.tool(tool) {
                Ok(version) => format!("{}: {version}", tool.name()),
                Err(why) => format!("{}: blocked: {why}", tool.name()),
            })
            .collect();
        if let Some(why) = self.reach_problem(root) {
            lines.push(format!("repository: blocked: {why}"));
        }
        lines
    }

    /// Where `tool` is: the program (as run) and its file. Chromium is `[verify] chromium` when set (a
    /// path, or a name on `PATH`).
    pub fn locate(&self, tool: Tool) -> Option<(String, PathBuf)> {
        let path = self.env_value("PATH");
        let on_path = |name: &str| {
            std::env::split_paths(path?)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        };
        if let (Tool::Chromium, Some(chosen)) = (tool, &self.chromium) {
            let found = if chosen.contains('/') {
                Some(PathBuf::from(chosen)).filter(|p| p.is_file())
            } else {
                on_path(chosen)
            };
            return found.map(|f| (f.display().to_string(), f));
        }
        if tool == Tool::Python {
            return self.locate_python();
        }
        tool.programs()
            .iter()
            .find_map(|name| Some((name.to_string(), on_path(name)?)))
    }

    /// The interpreter Python packages are installed with: `[verify] python` (a path, or a name on
    /// `PATH`), else the first `python3` on `PATH` that the sandbox uid can reach and that is a program,
    /// not a version manager's shim (a script that picks an interpreter from its own settings, in a home
    /// the sandbox uid cannot read). The file is named by its path, links resolved.
    fn locate_python(&self) -> Option<(String, PathBuf)> {
        let path = self.env_value("PATH");
        let dirs: Vec<PathBuf> = path
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default();
        let program = |file: &Path| {
            let mut head = [0u8; 4];
            std::fs::File::open(file)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok_and(|()| &head == b"\x7fELF")
        };
        let usable = |file: &Path| {
            file.is_file()
                && program(file)
                && (!self.separate_uids() || closed_folder(file).is_none())
        };
        let found = match &self.python {
            Some(chosen) if chosen.contains('/') => {
                Some(PathBuf::from(chosen)).filter(|p| p.is_file())
            }
            Some(chosen) => dirs.iter().map(|d| d.join(chosen)).find(|p| p.is_file()),
            None => dirs.iter().map(|d| d.join("python3")).find(|p| usable(p)),
        }?;
        let file = std::fs::canonicalize(&found).unwrap_or(found);
        Some((file.display().to_string(), file))
    }

    fn check_tool(&self, tool: Tool) -> Checked {
        if tool == Tool::Llvm {
            // Which pair depends on rustc's LLVM version: found, and run, by the coverage floor's own
            // lookup (for the default toolchain; a package that names another is looked up again).
            self.tool(Tool::Cargo)?;
            return self
                .llvm_tools(&[])
                .map(|found| format!("{} (`{}`)", found.version, found.cov.display()))
                .map_err(|e| e.to_string());
        }
        let Some((program, found)) = self.locate(tool) else {
            return Err(self.missing(tool));
        };
        if self.separate_uids() {
            let closed = closed_folder(&found);
            let executable =
                std::fs::metadata(&found).is_ok_and(|m| m.permissions().mode() & 0o001 != 0);
            let rustup = (tool == Tool::Cargo)
                .then(|| self.env_value("RUSTUP_HOME").map(PathBuf::from))
                .flatten()
                .and_then(|home| closed_folder(&home.join("toolchains/x")));
            if let Some((folder, mode)) = closed.or(rustup) {
                return Err(self.unreachable(tool, &found, &folder, mode));
            }
            if !executable {
                return Err(self.unreachable(tool, &found, &found, 0));
            }
        }
        // A local run knows the tool from its last run when nothing about it has changed since.
        let record = self.tool_record(tool, &found);
        if let Some((path, id)) = &record
            && let Some(text) = super::fetched::read_stamp(path)
            && let Some((stored, version)) = text.split_once('\n')
            && stored == id
        {
            return Ok(version.to_string());
        }
        // Run it, as product code would, from an empty folder: a toolchain that cannot choose a version,
        // or a broken install, is found here rather than inside the first build.
        let argv: Vec<String> = std::iter::once(program.to_string())
            .chain(tool.version_args().iter().map(|a| a.to_string()))
            .collect();
        let ran = self
            .fresh_dir(0, &format!("preflight-{}", tool.name()))
            .map_err(|e| e.to_string())
            .and_then(|cwd| {
                self.run(
                    Job {
                        argv: &argv,
                        cwd: &cwd,
                        slot: 0,
                        network: false,
                        stdin: Vec::new(),
                        timeout: Duration::from_secs(60),
                        env: Vec::new(),
                        heartbeat: None,
                        stdout_cap: crate::sandbox::OUTPUT_CAP,
                    },
                    &BTreeSet::new(),
                )
                .map_err(|e| e.to_string())
            });
        let command = format!("`{program} {}`", tool.version_args().join(" "));
        match ran {
            Ok(outcome) if outcome.code == Some(0) => {
                let text = String::from_utf8_lossy(&outcome.stdout);
                let version = text.lines().next().unwrap_or("").trim().to_string();
                if let Some((path, id)) = &record {
                    let _ =
                        crate::safe_fs::write_atomic(path, format!("{id}\n{version}\n").as_bytes());
                }
                Ok(version)
            }
            Ok(outcome) => {
                let said = String::from_utf8_lossy(&outcome.stderr);
                let said: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
                let said = said[said.len().saturating_sub(3)..].join(" | ");
                let ended = match (outcome.code, outcome.signal) {
                    (_, Some(signal)) => format!("killed by signal {signal}"),
                    (Some(code), None) => format!("exit {code}"),
                    (None, None) => "no exit code".to_string(),
                };
                let over = outcome
                    .over_limit
                    .as_deref()
                    .map(|o| format!(", {o}"))
                    .unwrap_or_default();
                Err(self.broken(tool, &format!("{command} ({ended}{over})"), &said))
            }
            Err(e) => Err(self.broken(tool, &command, &e)),
        }
    }

    /// Where a local run (one that keeps its build folders) records that `tool`, found at `found`, ran,
    /// and what identifies it: the sandbox's environment, and the file found and — for rustup's cargo —
    /// rustup's settings and every installed toolchain's cargo, by device, inode, size, mode, owner and
    /// times. A tool whose files or environment changed in any way is run again. `None` for the gate.
    fn tool_record(&self, tool: Tool, found: &Path) -> Option<(PathBuf, String)> {
        use sha2::Digest;
        use std::os::unix::fs::MetadataExt;
        let super::build_cache::BuildCache::Kept { repo } = &self.build_cache else {
            return None;
        };
        let dir = super::build_cache::kept_folder(&self.process_env, repo).ok()?;
        let mut hash = sha2::Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(env!("CARGO_PKG_VERSION").as_bytes());
        // A folder of this run (root's Go module cache) is new each run: its name is left out.
        let own = self.dir.path().as_os_str().as_encoded_bytes();
        for (name, value) in &self.env {
            field(name.as_bytes());
            if !value.as_encoded_bytes().starts_with(own) {
                field(value.as_encoded_bytes());
            }
        }
        let mut files = vec![found.to_path_buf()];
        if tool == Tool::Cargo
            && let Some(home) = &self.toolchains.rustup_home
        {
            field(
                self.toolchains
                    .rust_default
                    .as_deref()
                    .unwrap_or("")
                    .as_bytes(),
            );
            files.push(home.join("settings.toml"));
            for name in &self.toolchains.rust_installed {
                files.push(home.join("toolchains").join(name).join("bin/cargo"));
            }
        }
        for file in files {
            field(file.as_os_str().as_encoded_bytes());
            for meta in [std::fs::symlink_metadata(&file), std::fs::metadata(&file)] {
                let stat = meta.map(|m| {
                    [
                        m.dev(),
                        m.ino(),
                        m.size(),
                        u64::from(m.mode()),
                        u64::from(m.uid()),
                        m.mtime() as u64,
                        m.mtime_nsec() as u64,
                        m.ctime() as u64,
                        m.ctime_nsec() as u64,
                    ]
                });
                match stat {
                    Ok(values) => values.iter().for_each(|v| field(&v.to_le_bytes())),
                    Err(_) => field(b"none"),
                }
            }
        }
        let id = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Some((dir.join(format!("tool-{}.stamp", tool.name())), id))
    }

    fn missing(&self, tool: Tool) -> String {
        let name = tool.name();
        if let (Tool::Python, Some(chosen)) = (tool, &self.python) {
            return format!(
                "`[verify] python` names `{chosen}`, which is not {}: {}, or correct the setting",
                if chosen.contains('/') {
                    "an absolute path to a file outside the repository"
                } else {
                    "on the PATH aayu was started with (outside the repository)"
                },
                tool.install()
            );
        }
        if let (Tool::Chromium, Some(chosen)) = (tool, &self.chromium) {
            return format!(
                "`[verify] chromium` names `{chosen}`, which is not {}: {}, or correct the setting",
                if chosen.contains('/') {
                    "a file"
                } else {
                    "on the PATH aayu was started with"
                },
                tool.install()
            );
        }
        if self.in_action {
            format!(
                "`{name}` is not in this image: run the gate with the full image (`uses: aayudha/verify@<release>`; `aayudha/verify/slim` has git only) or an image extended with {name} (docs/action.md, \"Extending the image\")"
            )
        } else {
            format!(
                "`{name}` is not installed (not on the PATH aayu was started with): {}",
                tool.install()
            )
        }
    }

    fn unreachable(&self, tool: Tool, found: &Path, folder: &Path, mode: u32) -> String {
        let name = tool.name();
        let why = if folder == found {
            format!("`{}` is not executable by other users", found.display())
        } else {
            format!(
                "`{}` is mode {mode:04o}, which other users cannot pass",
                folder.display()
            )
        };
        if self.in_action {
            format!(
                "the sandbox uid cannot run `{name}` at `{}`: {why}. In an extended image, install {name} where other users can read it (chmod -R o+rX), as the full image does",
                found.display()
            )
        } else {
            format!(
                "the sandbox uid cannot run `{name}` at `{}`: {why}. Install {name} system-wide (under /usr/local), make its folders readable by other users (chmod o+rx on `{}`), or run aayu as an ordinary user (checks then run as your own uid)",
                found.display(),
                folder.display()
            )
        }
    }

    fn broken(&self, tool: Tool, command: &str, said: &str) -> String {
        let name = tool.name();
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        let fix = if self.in_action {
            format!(
                "the image's {name} does not run: use the full image as released, or fix the extended one"
            )
        } else if tool == Tool::Cargo && said.contains("no default") {
            "rustup has no default toolchain for this HOME: run `rustup default stable`, or set RUSTUP_HOME (and CARGO_HOME) to the installation that has one — aayu passes them to the sandbox".to_string()
        } else {
            format!(
                "check that `{name}` works for another user, or {}",
                tool.install()
            )
        };
        format!("{command} fails as the sandbox uid{said}. {fix}")
    }
}

/// A path as a shell command needs it: as it is when every character is plain, else in single quotes (a
/// path with a space, a `$` or a quote), so a hint's command can be pasted as it is.
fn shell_word(path: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !path.is_empty() && path.chars().all(plain) {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_a_hint_is_quoted_as_a_shell_needs_it() {
        assert_eq!(shell_word("/var/tmp/shop"), "/var/tmp/shop");
        assert_eq!(shell_word("/home/me/My Projects"), "'/home/me/My Projects'");
        assert_eq!(shell_word("/srv/it's"), r"'/srv/it'\''s'");
    }

    #[test]
    fn the_first_closed_folder_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let closed = dir.path().join("closed");
        std::fs::create_dir_all(closed.join("open/deeper")).expect("mkdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let found = closed_folder(&closed.join("open/deeper/file"));
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // The temp dir's own parents may be closed on this machine; below them, `closed` is the one.
        if closed_folder(dir.path()).is_none() {
            assert_eq!(found, Some((closed.clone(), 0o700)));
            assert_eq!(closed_folder(&closed.join("open/deeper/file")), None);
        }
    }

    #[test]
    fn control_programs_that_are_tools() {
        assert_eq!(Tool::of_program("node"), Some(Tool::Node));
        assert_eq!(Tool::of_program("/usr/bin/npx"), Some(Tool::Node));
        assert_eq!(Tool::of_program("python3"), Some(Tool::Python));
        assert_eq!(Tool::of_program("sh"), None);
    }
}
