//! Which toolchains product code runs with, found without running any of them as root (SPEC §4): `rustup
//! show` and `go env` read the checkout's `rust-toolchain.toml`, `go.mod` and `go.work` and may run or fetch
//! another toolchain, so `aayu` reads data instead — the environment it was given, rustup's
//! `settings.toml` and installed `toolchains/`, Go's `VERSION` file — and reads what a checkout asks for as
//! text, through [`crate::safe_fs`]. A request the image cannot meet (a channel it lacks, a toolchain by
//! `path`, a Go version newer than its own) makes the work that needs it blocked, naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How much of a toolchain file is read.
const FILE_CAP: u64 = 1 << 20;

/// The toolchains of the image (or the developer's machine).
#[derive(Debug, Clone, Default)]
pub struct Toolchains {
    /// `RUSTUP_HOME` when rustup manages Rust here.
    pub rustup_home: Option<PathBuf>,
    /// The toolchain product code gets when the checkout names none: `RUSTUP_TOOLCHAIN`, else rustup's
    /// default.
    pub rust_default: Option<String>,
    /// The folders of `$RUSTUP_HOME/toolchains`, e.g. `1.95.0-x86_64-unknown-linux-gnu`.
    pub rust_installed: Vec<String>,
    /// Go's root and version (`go1.22.5`), when `go` is on `PATH` or `GOROOT` is set.
    pub go: Option<Go>,
    /// Where corepack keeps the package managers it prepared (`$COREPACK_HOME`, else
    /// `$XDG_CACHE_HOME/node/corepack` or `~/.cache/node/corepack`): pnpm and yarn are run from there,
    /// never by a shim that reads the checkout's `packageManager`.
    pub corepack_home: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Go {
    /// The first line of `$GOROOT/VERSION` (`go1.22.5`), when there is one.
    pub version: Option<String>,
}

impl Toolchains {
    /// Reads what is installed from `aayu`'s own environment; runs nothing.
    pub fn detect(env: &BTreeMap<String, String>) -> Toolchains {
        let var = |name: &str| env.get(name).filter(|v| !v.is_empty()).cloned();
        let home = var("HOME").map(PathBuf::from);
        let rustup_home = var("RUSTUP_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".rustup")))
            .filter(|d| d.join("toolchains").is_dir());
        let mut rust_installed: Vec<String> = rustup_home
            .as_ref()
            .and_then(|h| std::fs::read_dir(h.join("toolchains")).ok())
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| !name.starts_with('.'))
            .collect();
        rust_installed.sort();
        let settings_default = rustup_home.as_ref().and_then(|h| {
            let text = std::fs::read_to_string(h.join("settings.toml")).ok()?;
            let table: toml::Table = toml::from_str(&text).ok()?;
            table
                .get("default_toolchain")
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        });
        let rust_default = var("RUSTUP_TOOLCHAIN").or(settings_default);
        Toolchains {
            rustup_home,
            rust_default,
            rust_installed,
            go: detect_go(&var("GOROOT"), &var("PATH")),
            corepack_home: var("COREPACK_HOME").map(PathBuf::from).or_else(|| {
                var("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| home.as_ref().map(|h| h.join(".cache")))
                    .map(|cache| cache.join("node/corepack"))
            }),
        }
    }

    /// The Rust toolchain to run a package with (`package` relative to `root`): the channel its
    /// `rust-toolchain.toml` (or `rust-toolchain`, in the package or a folder above it inside `root`) names,
    /// when installed; else the default. `Err` says why it cannot run here.
    pub fn rust_for(&self, root: &Path, package: &str) -> Result<Option<String>, ToolchainError> {
        let Some(home) = &self.rustup_home else {
            // Without rustup, cargo ignores toolchain files: the installed toolchain is the only one.
            return Ok(None);
        };
        let Some((file, request)) = rust_request(root, package)? else {
            return Ok(self.rust_default.clone());
        };
        match request {
            RustRequest::Path(path) => Err(ToolchainError::RustPath {
                file,
                path,
                installed: self.installed_list(),
            }),
            RustRequest::Channel(channel) => match self.installed(&channel) {
                Some(name) => Ok(Some(name)),
                None => Err(ToolchainError::RustMissing {
                    file,
                    channel,
                    folder: home.join("toolchains"),
                    installed: self.installed_list(),
                }),
            },
        }
    }

    fn installed_list(&self) -> String {
        if self.rust_installed.is_empty() {
            "none".to_string()
        } else {
            self.rust_installed.join(", ")
        }
    }

    /// The installed toolchain folder a channel names: itself, `<channel>-<host>`, or for a two-part version
    /// (`1.95`) any installed `1.95.N`.
    fn installed(&self, channel: &str) -> Option<String> {
        let host_suffix =
            |rest: &str| !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_digit());
        self.rust_installed
            .iter()
            .find(|name| {
                *name == channel
                    || name
                        .strip_prefix(channel)
                        .and_then(|r| r.strip_prefix('-'))
                        .is_some_and(host_suffix)
            })
            .or_else(|| {
                let two_part = channel.split('.').count() == 2
                    && channel.split('.').all(|p| p.parse::<u32>().is_ok());
                two_part
                    .then(|| {
                        self.rust_installed.iter().find(|name| {
                            name.strip_prefix(channel)
                                .and_then(|r| r.strip_prefix('.'))
                                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                        })
                    })
                    .flatten()
            })
            .cloned()
    }

    /// Whether the Go module in `module` (relative to `root`) can be built by this image's Go: its `go.mod`
    /// (and a `go.work` above it inside `root`) may not ask for a newer Go (`go` or `toolchain` line), since
    /// every Go step runs with `GOTOOLCHAIN=local`.
    pub fn go_for(&self, root: &Path, module: &str) -> Result<(), ToolchainError> {
        let Some(go) = &self.go else {
            return Err(ToolchainError::NoGo);
        };
        let Some(local) = go.version.as_deref().and_then(parse_go_version) else {
            return Ok(());
        };
        let mut files = vec![join(module, "go.mod")];
        let mut dir = module.to_string();
        loop {
            files.push(join(&dir, "go.work"));
            if dir.is_empty() {
                break;
            }
            dir = dir
                .rsplit_once('/')
                .map_or(String::new(), |(p, _)| p.to_string());
        }
        for file in files {
            let Ok(bytes) = crate::safe_fs::read(root, &file, FILE_CAP) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            for line in text.lines() {
                let mut words = line.split("//").next().unwrap_or("").split_whitespace();
                let (Some(key), Some(value), None) = (words.next(), words.next(), words.next())
                else {
                    continue;
                };
                let asked = match key {
                    "go" => value.to_string(),
                    "toolchain" => value.trim_start_matches("go").to_string(),
                    _ => continue,
                };
                if parse_go_version(&asked).is_some_and(|v| v > local) {
                    return Err(ToolchainError::GoTooOld {
                        file,
                        asked,
                        key: key.to_string(),
                        has: go.version.as_deref().unwrap_or("an older Go").to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// A package folder as a map or an evidence map writes it, normalised: `.` and `""` are the repository
/// root (returned as `""`), `./x` and `x/` are `x`. Refused: an absolute path, `..`, an empty or `.` part
/// inside, a control character.
pub fn package_dir(text: &str) -> Result<String, NotAPackageDir> {
    if text.starts_with('/') {
        return Err(NotAPackageDir(text.escape_debug().to_string()));
    }
    let mut dir = text;
    while let Some(rest) = dir.strip_prefix("./") {
        dir = rest;
    }
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() || dir == "." {
        return Ok(String::new());
    }
    let bad = text.starts_with('/')
        || text.chars().any(char::is_control)
        || dir
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..");
    if bad {
        return Err(NotAPackageDir(text.escape_debug().to_string()));
    }
    Ok(dir.to_string())
}

/// A normalised package folder as a person reads it: `.` for the root.
pub fn shown_dir(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}

/// Whether a Go module's `go.mod` (read as text) requires any module, in a `require` line or block.
pub fn go_requires_modules(root: &Path, module: &str) -> bool {
    let Ok(bytes) = crate::safe_fs::read(root, &join(module, "go.mod"), FILE_CAP) else {
        return true;
    };
    String::from_utf8_lossy(&bytes).lines().any(|line| {
        let line = line.split("//").next().unwrap_or("").trim();
        line == "require (" || line.starts_with("require ") || line.starts_with("require(")
    })
}

/// The folder of the Cargo workspace a package belongs to, where its `Cargo.lock` lives, found as cargo
/// finds it: the package itself when its manifest has a `[workspace]` table; the folder its
/// `package.workspace` key names; else the nearest folder above it (inside `root`) whose `Cargo.toml` has a
/// `[workspace]` that names it in `members` or does not `exclude` it (an excluding one is passed over);
/// else the package.
pub fn cargo_workspace(root: &Path, package: &str) -> String {
    let package = package_dir(package).unwrap_or_else(|_| package.trim_matches('/').to_string());
    let manifest = |dir: &str| {
        crate::safe_fs::read(root, &join(dir, "Cargo.toml"), FILE_CAP)
            .ok()
            .and_then(|b| toml::from_str::<toml::Table>(&String::from_utf8_lossy(&b)).ok())
    };
    if let Some(own) = manifest(&package) {
        if own.contains_key("workspace") {
            return package;
        }
        // Only a folder that really holds a workspace: cargo refuses any other.
        if let Some(named) = own
            .get("package")
            .and_then(|p| p.get("workspace"))
            .and_then(toml::Value::as_str)
            .and_then(|w| relative_join(&package, w))
            .filter(|dir| manifest(dir).is_some_and(|t| t.contains_key("workspace")))
        {
            return named;
        }
    }
    let parent = |dir: &str| {
        dir.rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string())
    };
    let mut dir = package.clone();
    while !dir.is_empty() {
        dir = parent(&dir);
        let Some(table) = manifest(&dir) else {
            continue;
        };
        let Some(workspace) = table.get("workspace").and_then(toml::Value::as_table) else {
            continue;
        };
        let inside = package
            .strip_prefix(dir.as_str())
            .unwrap_or(&package)
            .trim_start_matches('/');
        let listed = |key: &str| -> Vec<String> {
            workspace
                .get(key)
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str)
                .filter_map(|e| package_dir(e).ok())
                .collect()
        };
        let member = listed("members").iter().any(|m| m == inside);
        let excluded = listed("exclude")
            .iter()
            .any(|e| !e.is_empty() && (inside == e || inside.starts_with(&format!("{e}/"))));
        if member || !excluded {
            return dir;
        }
    }
    package
}

/// `base` joined with a relative path that may climb (`../..`), normalised; `None` above the root.
pub(crate) fn relative_join(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(parts.join("/"))
}

/// Whether the `Cargo.toml` of a folder is a virtual workspace manifest (a `[workspace]` without a
/// `[package]`): it has no tests of its own, its members do.
pub fn is_virtual_manifest(root: &Path, package: &str) -> bool {
    let Ok(dir) = package_dir(package) else {
        return false;
    };
    crate::safe_fs::read(root, &join(&dir, "Cargo.toml"), FILE_CAP)
        .ok()
        .and_then(|b| toml::from_str::<toml::Table>(&String::from_utf8_lossy(&b)).ok())
        .is_some_and(|t| t.contains_key("workspace") && !t.contains_key("package"))
}

/// What a Rust toolchain file asks for.
#[derive(Debug, PartialEq, Eq)]
enum RustRequest {
    Channel(String),
    Path(String),
}

/// Why a package cannot have the toolchain it asks for.
#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error(
        "`{file}` names a toolchain by `path` (`{path}`): aayu never runs a toolchain from a path; name an installed channel instead ({installed})"
    )]
    RustPath {
        file: String,
        path: String,
        installed: String,
    },
    #[error(
        "`{file}` asks for the Rust toolchain `{channel}`, which this image lacks (installed in `{}`: {installed}); use an image with it, or change the channel",
        .folder.display()
    )]
    RustMissing {
        file: String,
        channel: String,
        folder: PathBuf,
        installed: String,
    },
    #[error("`{file}`: {why}")]
    ToolchainFile {
        file: String,
        #[source]
        why: RustRequestError,
    },
    #[error(transparent)]
    Read(#[from] crate::safe_fs::Refused),
    #[error("Go is not installed here (no `go` on PATH): install it, or use an image with Go")]
    NoGo,
    #[error(
        "`{file}` asks for Go {asked} (its `{key}` line), and this image has {has}: every Go step runs with GOTOOLCHAIN=local, so use an image with Go {asked} or newer"
    )]
    GoTooOld {
        file: String,
        asked: String,
        key: String,
        has: String,
    },
}

/// Why a toolchain file says nothing aayu can read.
#[derive(Debug, thiserror::Error)]
pub enum RustRequestError {
    #[error("{}", .0.message())]
    Toml(#[source] toml::de::Error),
    #[error("no `[toolchain]` table")]
    NoTable,
    #[error("`[toolchain]` names neither `channel` nor `path`")]
    NoChannel,
}

/// A package folder that is not a plain relative path (its text, escaped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a package folder relative to the repository root (write `.` for the root, `a/b` for a folder in it)"
)]
pub struct NotAPackageDir(String);

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The nearest toolchain file from `package` up to `root`, as rustup looks for one, and what it asks.
fn rust_request(
    root: &Path,
    package: &str,
) -> Result<Option<(String, RustRequest)>, ToolchainError> {
    let mut dir = package_dir(package).unwrap_or_else(|_| package.trim_matches('/').to_string());
    loop {
        for name in ["rust-toolchain.toml", "rust-toolchain"] {
            let file = join(&dir, name);
            match crate::safe_fs::read(root, &file, FILE_CAP) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    return parse_rust_request(&text)
                        .map(|r| Some((file.clone(), r)))
                        .map_err(|why| ToolchainError::ToolchainFile { file, why });
                }
                Err(e) if e.is_missing() => {}
                Err(e) => return Err(e.into()),
            }
        }
        if dir.is_empty() {
            return Ok(None);
        }
        dir = dir
            .rsplit_once('/')
            .map_or(String::new(), |(p, _)| p.to_string());
    }
}

fn parse_rust_request(text: &str) -> Result<RustRequest, RustRequestError> {
    let trimmed = text.trim();
    // The old single-line form: just a channel name.
    if !trimmed.contains(['=', '[', '\n']) && !trimmed.is_empty() {
        return Ok(RustRequest::Channel(trimmed.to_string()));
    }
    let table: toml::Table = toml::from_str(text).map_err(RustRequestError::Toml)?;
    let toolchain = table
        .get("toolchain")
        .and_then(toml::Value::as_table)
        .ok_or(RustRequestError::NoTable)?;
    if let Some(path) = toolchain.get("path").and_then(toml::Value::as_str) {
        return Ok(RustRequest::Path(path.to_string()));
    }
    toolchain
        .get("channel")
        .and_then(toml::Value::as_str)
        .map(|c| RustRequest::Channel(c.to_string()))
        .ok_or(RustRequestError::NoChannel)
}

/// `1.21`, `1.21.3`, `1.21rc2`, `go1.19.8` → comparable numbers (a release candidate sorts before `.0`).
fn parse_go_version(text: &str) -> Option<(u32, u32, i64)> {
    let text = text.trim().trim_start_matches("go");
    let (numbers, rc) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&text[..i], true),
        None => (text, false),
    };
    let mut parts = numbers.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    let patch: i64 = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    Some((major, minor, if rc { -1 } else { patch }))
}

/// Go's root: `GOROOT`, else the folder above `bin/go` found on `PATH` (links resolved: they are the
/// image's own, e.g. Debian's `/usr/bin/go -> ../lib/go-1.19/bin/go`), with the version its `VERSION`
/// file states.
fn detect_go(goroot: &Option<String>, path: &Option<String>) -> Option<Go> {
    let root = match goroot {
        Some(root) => PathBuf::from(root),
        None => {
            let found = std::env::split_paths(path.as_deref()?)
                .map(|d| d.join("go"))
                .find(|p| p.is_file())?;
            let real = found.canonicalize().ok()?;
            real.parent()?.parent()?.to_path_buf()
        }
    };
    let version = std::fs::read_to_string(root.join("VERSION"))
        .ok()
        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
        .filter(|v| v.starts_with("go"));
    Some(Go { version })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(names: &[&str]) -> Toolchains {
        Toolchains {
            rustup_home: Some(PathBuf::from("/rustup")),
            rust_default: Some("stable-x86_64-unknown-linux-gnu".into()),
            rust_installed: names.iter().map(|s| s.to_string()).collect(),
            go: None,
            corepack_home: None,
        }
    }

    #[test]
    fn channels_match_installed_toolchains() {
        let t = installed(&[
            "1.95.0-x86_64-unknown-linux-gnu",
            "stable-x86_64-unknown-linux-gnu",
            "nightly-2026-01-01-x86_64-unknown-linux-gnu",
        ]);
        assert_eq!(
            t.installed("stable").as_deref(),
            Some("stable-x86_64-unknown-linux-gnu")
        );
        assert_eq!(
            t.installed("1.95.0").as_deref(),
            Some("1.95.0-x86_64-unknown-linux-gnu")
        );
        assert_eq!(
            t.installed("1.95").as_deref(),
            Some("1.95.0-x86_64-unknown-linux-gnu")
        );
        assert_eq!(t.installed("1.80"), None);
        assert_eq!(t.installed("nightly"), None);
        assert!(t.installed("nightly-2026-01-01").is_some());
    }

    #[test]
    fn toolchain_files_are_read_as_data() {
        assert_eq!(
            parse_rust_request("[toolchain]\nchannel = \"1.80\"\n").ok(),
            Some(RustRequest::Channel("1.80".into()))
        );
        assert_eq!(
            parse_rust_request("[toolchain]\npath = \"/tmp/evil\"\n").ok(),
            Some(RustRequest::Path("/tmp/evil".into()))
        );
        assert_eq!(
            parse_rust_request("nightly-2026-01-01\n").ok(),
            Some(RustRequest::Channel("nightly-2026-01-01".into()))
        );
        assert!(parse_rust_request("[other]\n").is_err());
    }

    #[test]
    fn a_package_s_lock_is_where_cargo_reads_it() {
        let dir = tempfile::tempdir().expect("temp");
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write(
            "Cargo.toml",
            "[package]\nname = \"r\"\n[workspace]\nmembers = [\".\", \"crates/a\"]\nexclude = [\"own\"]\n",
        );
        write("crates/a/Cargo.toml", "[package]\nname = \"a\"\n");
        write("own/Cargo.toml", "[package]\nname = \"own\"\n");
        write(
            "own/inner/Cargo.toml",
            "[package]\nname = \"inner\"\n[workspace]\n",
        );
        write(
            "own/named/Cargo.toml",
            "[package]\nname = \"named\"\nworkspace = \"..\"\n",
        );
        write(
            "nested/Cargo.toml",
            "[workspace]\nmembers = [\"m\"]\nexclude = [\"m\", \"x\"]\n",
        );
        write("nested/m/Cargo.toml", "[package]\nname = \"m\"\n");
        write("nested/x/Cargo.toml", "[package]\nname = \"x\"\n");
        write(
            "nested/deep/p/Cargo.toml",
            "[package]\nname = \"p\"\nworkspace = \"../..\"\n",
        );
        for (package, lock) in [
            (".", "Cargo.lock"),
            ("", "Cargo.lock"),
            ("./crates/a/", "Cargo.lock"),
            ("own", "own/Cargo.lock"),
            ("own/inner", "own/inner/Cargo.lock"),
            // `workspace = ".."` names `own`, which holds no workspace: cargo's walk up decides, and the
            // root excludes `own`.
            ("own/named", "own/named/Cargo.lock"),
            ("nested/deep/p", "nested/Cargo.lock"),
            // A member wins over `exclude`; an excluding workspace is passed over, as cargo does.
            ("nested/m", "nested/Cargo.lock"),
            ("nested/x", "Cargo.lock"),
        ] {
            let workspace = cargo_workspace(dir.path(), package);
            assert_eq!(join(&workspace, "Cargo.lock"), lock, "{package}");
        }
        assert_eq!(package_dir("./a/b/").as_deref(), Ok("a/b"));
        assert_eq!(package_dir(".").as_deref(), Ok(""));
        assert!(package_dir("a/../b").is_err());
        assert!(package_dir("/etc").is_err());
        assert!(package_dir("/").is_err());
        assert!(package_dir("///").is_err());
        assert!(package_dir("a//b").is_err());
    }

    #[test]
    fn go_versions_compare() {
        assert!(parse_go_version("1.21").expect("v") > parse_go_version("go1.19.8").expect("v"));
        assert!(parse_go_version("1.21rc1").expect("v") < parse_go_version("1.21.0").expect("v"));
        assert_eq!(parse_go_version("go1.19.8"), Some((1, 19, 8)));
        assert_eq!(parse_go_version("x"), None);
    }

    #[test]
    fn a_rust_request_comes_from_the_nearest_file_inside_the_root() {
        let dir = tempfile::tempdir().expect("temp");
        std::fs::create_dir_all(dir.path().join("a/b")).expect("mkdir");
        std::fs::write(
            dir.path().join("rust-toolchain.toml"),
            "[toolchain]\nchannel = \"stable\"\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join("a/rust-toolchain.toml"),
            "[toolchain]\npath = \"/x\"\n",
        )
        .expect("write");
        let t = installed(&["stable-x86_64-unknown-linux-gnu"]);
        assert!(
            t.rust_for(dir.path(), "a/b")
                .expect_err("path")
                .to_string()
                .contains("by `path`")
        );
        assert_eq!(
            t.rust_for(dir.path(), "").expect("stable").as_deref(),
            Some("stable-x86_64-unknown-linux-gnu")
        );
        std::fs::write(
            dir.path().join("rust-toolchain.toml"),
            "[toolchain]\nchannel = \"1.70\"\n",
        )
        .expect("write");
        assert!(
            t.rust_for(dir.path(), "")
                .expect_err("missing")
                .to_string()
                .contains("`1.70`")
        );
    }
}
