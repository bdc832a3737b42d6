//! When a local run's cargo fetch has nothing to do. A local `verify --check` that keeps its build folders
//! (see [`super::build_cache`]) stamps each complete cargo fetch with a hash of everything the fetch read:
//! aayu's and cargo's versions, the cargo configuration the fetch was given, and per package its plan,
//! its workspace's `Cargo.lock` and every `Cargo.toml` of the workspace. The next run with the same hash
//! has nothing new to fetch, and starts no `cargo fetch`:
//!
//! - as root, the kept cargo home is the one that fetch filled and sealed (root-owned, read-only, under
//!   root's `0711` folder of the repository; the seal removed links out of it and hard links to files not
//!   root's, and the machine's cargo configuration was written again after the fetch): no sandbox uid can
//!   change it since. What the fetch itself wrote there is trusted as the kept target folders are — a
//!   local run builds the developer's own code;
//! - as an ordinary user, the cargo home is the user's own: every registry package the lock names must
//!   still have its downloaded `.crate` there, and a lock with a git dependency is fetched every run.
//!
//! A tree without its lock file (a library's, resolved at each run) and the gate are always fetched.

use std::path::Path;

use sha2::Digest;

use super::FetchTree;
use super::preflight::Tool;

/// The stamp's name in an ordinary user's kept build folder (as root it is `cargo-home.stamp`, beside the
/// kept cargo home).
pub const USER_STAMP: &str = ".aayu-fetched";

/// How many entries of a workspace's folders are looked at for its manifests, at most.
const MOST_ENTRIES: usize = 100_000;

/// The hash of what a cargo fetch of `trees` reads, with `cargo` its version and `config` the cargo
/// configuration it is given; `None` when there is nothing to skip (no cargo package) or the fetch must
/// run anyway (a lock file the tree does not have, a tree that takes its lock from another).
pub fn cargo_key(trees: &[FetchTree], cargo: &str, config: &[(String, String)]) -> Option<String> {
    let mut hash = sha2::Sha256::new();
    let mut field = |name: &str, value: &[u8]| {
        hash.update(name.as_bytes());
        hash.update((value.len() as u64).to_le_bytes());
        hash.update(value);
    };
    field("aayu", env!("CARGO_PKG_VERSION").as_bytes());
    field("cargo", cargo.as_bytes());
    for (name, text) in config {
        field(name, text.as_bytes());
    }
    let mut any = false;
    for tree in trees {
        let cargo_plans: Vec<_> = tree
            .packages
            .iter()
            .filter(|p| p.tool == Tool::Cargo)
            .filter_map(|p| p.plan.as_ref().ok())
            .collect();
        if cargo_plans.is_empty() {
            continue;
        }
        if tree.lock_from.is_some() {
            return None;
        }
        field("tree", tree.root.as_os_str().as_encoded_bytes());
        let mut units = std::collections::BTreeSet::new();
        for plan in cargo_plans {
            field("argv", plan.argv.join("\0").as_bytes());
            for (name, value) in &plan.env {
                field(name, value.as_encoded_bytes());
            }
            if !units.insert(plan.unit.clone()) {
                continue;
            }
            let lock = crate::safe_fs::read(&tree.root, &plan.lock, 64 << 20).ok()?;
            field(&plan.lock, &lock);
            let unit = tree.root.join(&plan.unit);
            for (rel, bytes) in manifests(&unit) {
                field(&rel, &bytes);
            }
            any = true;
        }
    }
    any.then(|| hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Every `Cargo.toml` under `dir` and its `.cargo/config.toml` (and `.cargo/config`), by path relative to
/// it, in order; build folders (`target`), hidden folders and links are not entered.
fn manifests(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    for name in [".cargo/config.toml", ".cargo/config"] {
        if let Ok(bytes) = crate::safe_fs::read(dir, name, 1 << 20) {
            found.push((name.to_string(), bytes));
        }
    }
    let mut pending = vec![String::new()];
    let mut seen = 0usize;
    while let Some(rel) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MOST_ENTRIES {
                return found;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let path = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() && !name.starts_with('.') && name != "target" && name != "node_modules"
            {
                pending.push(path);
            } else if kind.is_file()
                && name == "Cargo.toml"
                && let Ok(bytes) = crate::safe_fs::read(dir, &path, 1 << 20)
            {
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

/// Whether the user's cargo home `home` still holds every registry package `lock` (a `Cargo.lock`'s text)
/// names, downloaded; a git dependency, or a lock that does not read, is never taken as there.
pub fn lock_is_downloaded(home: &Path, lock: &str) -> bool {
    let Ok(lock) = lock.parse::<toml::Table>() else {
        return false;
    };
    let registries: Vec<_> = std::fs::read_dir(home.join("registry/cache"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let Some(packages) = lock.get("package").and_then(|p| p.as_array()) else {
        return true;
    };
    packages.iter().all(|package| {
        let text = |key: &str| package.get(key).and_then(|v| v.as_str());
        match text("source") {
            // A path package of the workspace: nothing to download.
            None => true,
            Some(source) if source.starts_with("registry+") || source.starts_with("sparse+") => {
                let (Some(name), Some(version)) = (text("name"), text("version")) else {
                    return false;
                };
                let file = format!("{name}-{version}.crate");
                registries.iter().any(|r| r.join(&file).is_file())
            }
            Some(_) => false,
        }
    })
}

/// The stamp at `path`, if it reads.
pub fn read_stamp(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 1024 {
        return None;
    }
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_downloaded_when_every_registry_crate_is_in_the_cache() {
        let home = tempfile::tempdir().expect("temp");
        let cache = home
            .path()
            .join("registry/cache/index.crates.io-1949cf8c6b5b557f");
        std::fs::create_dir_all(&cache).expect("write");
        std::fs::write(cache.join("itoa-1.0.11.crate"), b"x").expect("write");
        let lock = r#"
version = 4
[[package]]
name = "app"
version = "0.1.0"
dependencies = ["itoa"]
[[package]]
name = "itoa"
version = "1.0.11"
source = "registry+https://github.com/rust-lang/crates.io-index"
"#;
        assert!(lock_is_downloaded(home.path(), lock));
        let newer = lock.replace("1.0.11", "1.0.12");
        assert!(!lock_is_downloaded(home.path(), &newer));
        let git = format!(
            "{lock}[[package]]\nname = \"g\"\nversion = \"0.1.0\"\nsource = \"git+https://example.com/g#abc\"\n"
        );
        assert!(!lock_is_downloaded(home.path(), &git));
        assert!(!lock_is_downloaded(home.path(), "not = [toml"));
    }

    #[test]
    fn the_key_follows_the_lock_and_every_manifest_of_the_workspace() {
        let root = tempfile::tempdir().expect("temp");
        let write = |rel: &str, text: &str| {
            let path = root.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("write");
            std::fs::write(path, text).expect("write");
        };
        write("Cargo.toml", "[workspace]\nmembers = [\"crates/a\"]\n");
        write("crates/a/Cargo.toml", "[package]\nname = \"a\"\n");
        write("Cargo.lock", "version = 4\n");
        write("target/debug/Cargo.toml", "ignored");
        let tree = |lock_from: Option<std::path::PathBuf>| FetchTree {
            root: root.path().to_path_buf(),
            packages: vec![super::super::FetchPackage {
                dir: "crates/a".into(),
                tool: Tool::Cargo,
                plan: Ok(super::super::FetchPlan {
                    unit: String::new(),
                    argv: vec!["cargo".into(), "fetch".into()],
                    cwd: None,
                    env: Vec::new(),
                    lock: "Cargo.lock".into(),
                    lends_lock: true,
                    offline_first: true,
                    without_committed_lock: None,
                    install: None,
                }),
            }],
            committed: Default::default(),
            lock_from,
        };
        let key = || cargo_key(&[tree(None)], "cargo 1.90.0", &[]).expect("a key");
        let first = key();
        assert_eq!(first, key(), "the same files give the same key");
        write("target/debug/Cargo.toml", "changed, and still ignored");
        assert_eq!(first, key());
        write(
            "crates/a/Cargo.toml",
            "[package]\nname = \"a\"\n[dependencies]\nitoa = \"1\"\n",
        );
        let second = key();
        assert_ne!(first, second, "a member's manifest is read");
        write("Cargo.lock", "version = 4\n# changed\n");
        assert_ne!(second, key(), "the lock is read");
        assert_ne!(
            key(),
            cargo_key(&[tree(None)], "cargo 1.91.0", &[]).expect("a key"),
            "so is cargo's version"
        );
        assert!(cargo_key(&[tree(Some(root.path().into()))], "cargo", &[]).is_none());
        std::fs::remove_file(root.path().join("Cargo.lock")).expect("write");
        assert!(
            cargo_key(&[tree(None)], "cargo", &[]).is_none(),
            "a lock resolved at each run is fetched at each run"
        );
    }
}
