//! Where a slot's cargo target folder lives. The gate (`verify --ci`, the action) builds in folders of
//! the run only: a pull request's build scripts write there, and a folder that outlived the run could
//! hand the next run a poisoned build. A local `verify --check` builds the developer's own code, so it
//! keeps its folders between runs, and a second run builds only what changed:
//!
//! - as an ordinary user: `$XDG_CACHE_HOME/aayudha/target/<repo-key>/` (`~/.cache/…` without it);
//! - as root: `/var/cache/aayudha/target/<repo-key>/<uid>/`, one leaf per sandbox uid, owned by it; the
//!   folders above are root's and mode `0711` (a uid passes through to its own leaf and lists nothing),
//!   each checked without following a link before it is used. Root's own `~/.cache` is `0700` under
//!   `/root`, which the sandbox uids cannot enter.
//!
//! `AAYUDHA_BUILD_CACHE=/abs/dir` puts them under that folder instead (the same checks apply as root).
//! `<repo-key>` is the first 16 hex digits of the SHA-256 of the repository's absolute path. `aayu clean`
//! removes them; `aayu doctor` says how much they hold.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, fchmod, fstat, mkdirat};

/// Where root keeps the sandbox uids' build folders.
pub const SYSTEM_ROOT: &str = "/var/cache/aayudha/target";

/// The variable that puts the kept build folders elsewhere (an absolute path): aayu's own environment,
/// set by whoever runs it, never by a pull request.
pub const VARIABLE: &str = "AAYUDHA_BUILD_CACHE";

/// Why a kept build folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BuildCacheError {
    #[error("neither XDG_CACHE_HOME nor HOME is an absolute path")]
    NoHome,
    #[error("cannot create `{}`: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create `{}`: {source}", .path.display())]
    MakeDir {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("cannot set the mode of `{}`: {source}", .path.display())]
    SetMode {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set the mode of `{}`: {source}", .path.display())]
    ChangeMode {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("cannot read `{}`: {source}", .path.display())]
    Stat {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("cannot open `{}`: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
    #[error("cannot hand `{}` to uid {uid}: {source}", .path.display())]
    HandOn {
        path: PathBuf,
        uid: u32,
        #[source]
        source: nix::errno::Errno,
    },
    #[error(
        "the build folder `{}` is refused: {why}. Remove it (`aayu clean`, or by hand) and run again",
        .path.display()
    )]
    Refused { path: PathBuf, why: Refusal },
}

/// Why a folder on the way to a kept build folder is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("it is a symbolic link")]
    SymbolicLink,
    #[error("it is not a directory")]
    NotADirectory,
    #[error("it belongs to uid {owner}, not the sandbox uid {uid}")]
    AnotherUid { owner: u32, uid: u32 },
    #[error("it belongs to uid {owner}, not root")]
    NotRoot { owner: u32 },
    #[error("its mode {mode:04o} lets others write in it")]
    OthersWrite { mode: u32 },
}

fn chosen(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    env.get(VARIABLE)
        .filter(|v| v.starts_with('/'))
        .map(PathBuf::from)
}

/// Whether a run's target folders are its own, or kept between local runs of one repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BuildCache {
    /// Folders of the run only (the gate).
    #[default]
    PerRun,
    /// Kept between runs of this repository (its absolute path).
    Kept { repo: PathBuf },
}

/// The repository's key: a hash of its absolute path, so two clones keep two caches.
pub fn repo_key(repo: &Path) -> String {
    use sha2::Digest;
    // Spelled as a path of components: `/srv/app/` and `/srv/app` are one repository.
    let absolute: PathBuf = std::path::absolute(repo)
        .unwrap_or_else(|_| repo.to_path_buf())
        .components()
        .collect();
    let digest = sha2::Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// An ordinary user's build folders: `$XDG_CACHE_HOME/aayudha/target`, else `~/.cache/aayudha/target`.
pub fn user_root(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if let Some(dir) = chosen(env) {
        return Some(dir);
    }
    let var = |n: &str| env.get(n).filter(|v| v.starts_with('/')).map(PathBuf::from);
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|c| c.join("aayudha/target"))
}

/// Where this user's (or, as root, the sandbox uids') build folders of every repository are, by the
/// environment aayu started with.
pub fn roots(env: &crate::settings::Env) -> Vec<PathBuf> {
    let env = &env.vars;
    if nix::unistd::geteuid().is_root() {
        vec![system_root(env)]
    } else {
        user_root(env).into_iter().collect()
    }
}

/// The kept folder of `repo` for a run as an ordinary user, created (mode `0700`) when missing.
pub fn user_folder(
    env: &BTreeMap<String, String>,
    repo: &Path,
) -> Result<PathBuf, BuildCacheError> {
    use std::os::unix::fs::PermissionsExt;
    let root = user_root(env).ok_or(BuildCacheError::NoHome)?;
    let dir = root.join(repo_key(repo));
    std::fs::create_dir_all(&dir).map_err(|source| BuildCacheError::Create {
        path: dir.clone(),
        source,
    })?;
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refused(&dir, Refusal::SymbolicLink));
    }
    // The repository's folder is the user's alone; the folders above it are left as they are.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|source| {
        BuildCacheError::SetMode {
            path: dir.clone(),
            source,
        }
    })?;
    Ok(dir)
}

/// As root: the kept folder of `repo` for the sandbox uid `uid`, under [`SYSTEM_ROOT`]. Each folder on
/// the way is opened from its parent without following a link; the root-owned ones must be directories
/// of root's that nobody else can write, and are set to `0711`; the leaf is created for `uid` (mode
/// `0700`) or must already be that uid's directory. Anything else — a link at any level, a folder of
/// another owner — is refused with its path, and `aayu clean` as the fix.
pub fn system_folder(
    env: &BTreeMap<String, String>,
    repo: &Path,
    uid: u32,
) -> Result<PathBuf, BuildCacheError> {
    system_folder_in(&system_root(env), repo, uid)
}

/// Root's folder of the sandbox uids' build folders: [`SYSTEM_ROOT`], or [`VARIABLE`]'s.
pub fn system_root(env: &BTreeMap<String, String>) -> PathBuf {
    chosen(env).unwrap_or_else(|| PathBuf::from(SYSTEM_ROOT))
}

fn system_folder_in(base: &Path, repo: &Path, uid: u32) -> Result<PathBuf, BuildCacheError> {
    let (mut path, at) = repo_folder_in(base, repo)?;
    let leaf = uid.to_string();
    path.push(&leaf);
    make_dir(&at, &leaf, 0o700, &path)?;
    let fd = open_dir(Some(&at), Path::new(&leaf), &path)?;
    let stat = fstat(fd.as_fd()).map_err(|source| BuildCacheError::Stat {
        path: path.clone(),
        source,
    })?;
    if stat.st_uid == 0 {
        // Just made, or left by a run that stopped before handing it on: the uid's own from now.
        nix::unistd::fchown(
            fd.as_fd(),
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(uid)),
        )
        .map_err(|source| BuildCacheError::HandOn {
            path: path.clone(),
            uid,
            source,
        })?;
    } else if stat.st_uid != uid {
        return Err(refused(
            &path,
            Refusal::AnotherUid {
                owner: stat.st_uid,
                uid,
            },
        ));
    }
    fchmod(fd.as_fd(), Mode::from_bits_truncate(0o700)).map_err(|source| {
        BuildCacheError::ChangeMode {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

/// As root: a cargo home at a path that stays the same between local runs of `repo`
/// (`<repo-key>/cargo-home`), and the lock that makes it this run's alone (`None`: another run of the
/// repository holds it, or a folder on the way is refused — the run then uses one of its own). cargo
/// names a registry crate's build by the path of its source, so a cargo home at a new path each run would
/// rebuild every dependency in a kept target folder. A run's fetch fills it and seals it, as it does a
/// run's own; the next run uses it as it is when nothing it fetched from has changed
/// ([`super::fetched`]), and empties it otherwise.
pub fn system_cargo_home(
    env: &BTreeMap<String, String>,
    repo: &Path,
) -> Option<(PathBuf, nix::fcntl::Flock<std::fs::File>)> {
    use std::os::unix::fs::OpenOptionsExt;
    let (dir, _) = repo_folder_in(&system_root(env), repo).ok()?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join("cargo-home.lock"))
        .ok()?;
    let lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()?;
    Some((dir.join("cargo-home"), lock))
}

/// Where a local run of `repo` keeps what outlives it beside the target folders (the cargo home, the
/// stamps of a fetch and of the tools that ran): as root, root's `<repo-key>` folder, checked as
/// [`system_folder`] checks it; as an ordinary user, the user's kept folder.
pub fn kept_folder(
    env: &BTreeMap<String, String>,
    repo: &Path,
) -> Result<PathBuf, BuildCacheError> {
    if nix::unistd::geteuid().is_root() {
        repo_folder_in(&system_root(env), repo).map(|(path, _)| path)
    } else {
        user_folder(env, repo)
    }
}

/// Removes what is at `path` — a folder with all it holds, or a file or a link (never what it points
/// to); nothing there is no error.
pub fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// As root: `base/<repo-key>`, each folder on the way checked (see [`system_folder`]), and its descriptor.
fn repo_folder_in(base: &Path, repo: &Path) -> Result<(PathBuf, OwnedFd), BuildCacheError> {
    let mut at = open_dir(None, Path::new("/"), Path::new("/"))?;
    let mut path = PathBuf::from("/");
    let key = repo_key(repo);
    let parts: Vec<String> = base
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    // A folder on the way that exists (`/var`, `/var/cache`) is used as it is, if root's and closed to
    // others' writes; one that does not is created, `0711`; the base and the repository's folder are
    // aayu's own, and set to `0711`.
    let own_from = parts.len().saturating_sub(1);
    for (i, name) in parts.iter().chain(std::iter::once(&key)).enumerate() {
        path.push(name);
        let created = make_dir(&at, name, 0o711, &path)?;
        let next = open_dir(Some(&at), Path::new(name), &path)?;
        let stat = fstat(next.as_fd()).map_err(|source| BuildCacheError::Stat {
            path: path.clone(),
            source,
        })?;
        if stat.st_uid != 0 {
            return Err(refused(&path, Refusal::NotRoot { owner: stat.st_uid }));
        }
        // A sticky folder (`/tmp`) lets others write, but not rename or remove what is not theirs.
        let sticky = stat.st_mode & 0o1000 != 0;
        if stat.st_mode & 0o022 != 0 && !sticky && !created {
            return Err(refused(
                &path,
                Refusal::OthersWrite {
                    mode: stat.st_mode & 0o7777,
                },
            ));
        }
        if (i >= own_from || created) && stat.st_mode & 0o7777 != 0o711 {
            fchmod(next.as_fd(), Mode::from_bits_truncate(0o711)).map_err(|source| {
                BuildCacheError::ChangeMode {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        at = next;
    }
    Ok((path, at))
}

fn refused(path: &Path, why: Refusal) -> BuildCacheError {
    BuildCacheError::Refused {
        path: path.to_path_buf(),
        why,
    }
}

/// Creates `name` in `at` with `mode`; whether it was made now.
fn make_dir(at: &OwnedFd, name: &str, mode: u32, path: &Path) -> Result<bool, BuildCacheError> {
    match mkdirat(at.as_fd(), name, Mode::from_bits_truncate(mode)) {
        Ok(()) => Ok(true),
        Err(nix::errno::Errno::EEXIST) => Ok(false),
        Err(source) => Err(BuildCacheError::MakeDir {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Opens a directory in `at` (or an absolute one) without following a link.
fn open_dir(at: Option<&OwnedFd>, name: &Path, path: &Path) -> Result<OwnedFd, BuildCacheError> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let opened = match at {
        Some(at) => openat(at.as_fd(), name, flags, Mode::empty()),
        None => nix::fcntl::open(name, flags, Mode::empty()),
    };
    opened.map_err(|e| match e {
        nix::errno::Errno::ELOOP | nix::errno::Errno::ENOTDIR => {
            let what = std::fs::symlink_metadata(path)
                .map(|m| {
                    if m.file_type().is_symlink() {
                        Refusal::SymbolicLink
                    } else {
                        Refusal::NotADirectory
                    }
                })
                .unwrap_or(Refusal::NotADirectory);
            refused(path, what)
        }
        source => BuildCacheError::Open {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// How many bytes the files under `dir` hold, without following a link.
pub fn size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

/// Copies the build folder `from` into the empty folder `to` — files with their modes and times (cargo
/// judges freshness by them), folders and links as they are — and hands each copy to `new_owner` (as
/// root). A build folder is written by the pull request's code: with `owner` set (as root), an entry
/// that is not that uid's own (a hard link to a file of root's, another uid's file) is left out, no link
/// is followed, and anything but a file, a folder or a link is left out. The slot's processes have all
/// ended before a copy starts.
pub fn copy_tree(
    from: &Path,
    to: &Path,
    owner: Option<u32>,
    new_owner: Option<u32>,
) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let hand_on = |path: &Path| -> std::io::Result<()> {
        if let Some(uid) = new_owner {
            std::os::unix::fs::lchown(path, Some(uid), Some(uid))?;
        }
        Ok(())
    };
    let mut folders = vec![PathBuf::new()];
    while let Some(rel) = folders.pop() {
        for entry in std::fs::read_dir(from.join(&rel))? {
            let entry = entry?;
            let rel = rel.join(entry.file_name());
            let (source, copy) = (from.join(&rel), to.join(&rel));
            let meta = std::fs::symlink_metadata(&source)?;
            if owner.is_some_and(|uid| meta.uid() != uid) {
                continue;
            }
            let kind = meta.file_type();
            if kind.is_dir() {
                std::fs::DirBuilder::new()
                    .mode(meta.mode() & 0o777 | 0o700)
                    .create(&copy)?;
                hand_on(&copy)?;
                folders.push(rel);
            } else if kind.is_file() {
                // Never a link, and never left waiting on a FIFO put in the file's place.
                let mut input = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(&source)?;
                // The file opened is the one looked at.
                let opened = input.metadata()?;
                if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
                    continue;
                }
                let mut output = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(meta.mode() & 0o777)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&copy)?;
                std::io::copy(&mut input, &mut output)?;
                output.set_times(
                    std::fs::FileTimes::new()
                        .set_modified(meta.modified()?)
                        .set_accessed(meta.accessed()?),
                )?;
                hand_on(&copy)?;
            } else if kind.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&source)?, &copy)?;
                hand_on(&copy)?;
            }
        }
    }
    Ok(())
}

/// Sets the modification time of every file under `root` (not `.git`, no link followed) to `when`, so
/// that a build folder seeded from another tree's build holds nothing cargo takes for fresh of this one.
pub fn touch_tree(root: &Path, when: std::time::SystemTime) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut folders = vec![root.to_path_buf()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() && entry.file_name() != ".git" {
                folders.push(entry.path());
            } else if kind.is_file() {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(entry.path())?;
                if !file.metadata()?.is_file() {
                    continue;
                }
                file.set_times(std::fs::FileTimes::new().set_modified(when))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_s_key_is_its_path_s() {
        let a = repo_key(Path::new("/srv/one/app"));
        assert_eq!(a.len(), 16);
        assert_eq!(a, repo_key(Path::new("/srv/one/app")));
        assert_ne!(a, repo_key(Path::new("/srv/two/app")));
        assert_eq!(a, repo_key(Path::new("/srv/one/app/")));
    }

    #[test]
    fn the_user_s_cache_follows_xdg() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            user_root(&env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/aayudha/target"))
        );
        assert_eq!(
            user_root(&env(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/aayudha/target"))
        );
        assert_eq!(user_root(&env(&[])), None);
    }

    /// As root: the folders on the way are root's and `0711`, the leaf the uid's and `0700`; a link
    /// planted at any level is refused.
    #[test]
    fn as_root_the_folders_have_their_owners_and_modes_and_a_link_is_refused() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        // `cache` stands for `/var/cache`: the machine's, used as it is.
        std::fs::create_dir(dir.path().join("cache")).expect("mkdir");
        let base = dir.path().join("cache/aayudha/target");
        let repo = Path::new("/srv/app");
        let leaf = system_folder_in(&base, repo, 64_123).expect("made");
        assert_eq!(leaf, base.join(repo_key(repo)).join("64123"));
        for (path, uid, mode) in [
            (dir.path().join("cache/aayudha"), 0, 0o711),
            (base.clone(), 0, 0o711),
            (base.join(repo_key(repo)), 0, 0o711),
            (leaf.clone(), 64_123, 0o700),
        ] {
            let m = std::fs::symlink_metadata(&path).expect("stat");
            assert_eq!(
                (m.uid(), m.mode() & 0o7777),
                (uid, mode),
                "{}",
                path.display()
            );
        }
        // Again: the same folder, as it is.
        assert_eq!(system_folder_in(&base, repo, 64_123).expect("again"), leaf);
        // Another uid's leaf is refused to this one.
        std::os::unix::fs::chown(&leaf, Some(64_124), None).expect("chown");
        let err = system_folder_in(&base, repo, 64_123).expect_err("another's");
        assert!(err.to_string().contains("belongs to uid 64124"), "{err}");
        // A link at each level.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).expect("mkdir");
        for level in [
            leaf.clone(),
            base.join(repo_key(repo)),
            base.clone(),
            dir.path().join("cache/aayudha"),
        ] {
            let _ = std::fs::remove_dir_all(&level);
            std::os::unix::fs::symlink(&elsewhere, &level).expect("link");
            let err = system_folder_in(&base, repo, 64_123).expect_err("a link");
            assert!(
                err.to_string().contains(&format!(
                    "`{}` is refused: it is a symbolic link",
                    level.display()
                )),
                "{err}"
            );
            std::fs::remove_file(&level).expect("unlink");
            std::fs::create_dir_all(&level).expect("back");
        }
        // A root folder others may write in is refused.
        std::fs::set_permissions(
            dir.path().join("cache"),
            std::fs::Permissions::from_mode(0o777),
        )
        .expect("chmod");
        let err = system_folder_in(&base, repo, 64_123).expect_err("writable");
        assert!(err.to_string().contains("lets others write in it"), "{err}");
    }

    /// A copy keeps modes and times, and (with an owner) leaves out what is not the owner's own.
    #[test]
    fn a_copy_keeps_modes_and_times_and_only_the_owner_s_files() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("dir");
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::create_dir_all(from.join("debug/deps")).expect("mkdir");
        std::fs::create_dir(&to).expect("mkdir");
        let exe = from.join("debug/deps/app-1");
        std::fs::write(&exe, "elf").expect("write");
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&exe)
            .expect("open")
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .expect("times");
        std::os::unix::fs::symlink("/etc/passwd", from.join("debug/link")).expect("link");
        let me = nix::unistd::geteuid().as_raw();
        let root = me == 0;
        if root {
            std::fs::write(from.join("debug/other"), "not the owner's").expect("write");
            std::os::unix::fs::chown(from.join("debug/other"), Some(64_200), None).expect("chown");
        }
        copy_tree(&from, &to, Some(me), None).expect("copy");
        let copied = std::fs::metadata(to.join("debug/deps/app-1")).expect("copied");
        assert_eq!(copied.mode() & 0o700, 0o700, "an executable stays one");
        assert_eq!(copied.modified().expect("mtime"), old);
        assert_eq!(
            std::fs::read_link(to.join("debug/link")).expect("a link, as it was"),
            Path::new("/etc/passwd")
        );
        assert!(
            !to.join("debug/other").exists(),
            "another uid's file is left out"
        );
        let when = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        touch_tree(&to, when).expect("touch");
        assert_eq!(
            std::fs::metadata(to.join("debug/deps/app-1"))
                .expect("stat")
                .modified()
                .expect("mtime"),
            when
        );
        if root {
            assert_eq!(copied.uid(), 0);
        }
    }
}
