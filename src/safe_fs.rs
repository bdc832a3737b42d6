//! Files in trees that a pull request or a sandbox uid wrote: the checkout, the red-on-base copy, a check's
//! `out` folder. `aayu` often runs as root, so it must never be led elsewhere by a link such a tree holds
//! (`Cargo.toml -> /proc/1/environ`, `.aayudha/proof -> /etc`), block on a FIFO, or read without bound
//! (`README.md -> /dev/zero`). Every path here is opened relative to a directory that `aayu` itself chose,
//! without following any link on the way (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or one
//! `O_NOFOLLOW` component at a time where the kernel or a seccomp profile refuses `openat2`), non-blocking,
//! regular files only, and with a size cap.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstat, mkdirat};

/// Why a path in an untrusted tree was not opened.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("`{path}` is not a plain relative path (no `..`, `.`, empty or absolute parts)")]
    BadPath { path: String },
    #[error("`{path}` is or passes through a symbolic link, which aayu does not follow")]
    Link { path: String },
    #[error("`{path}` is {what}, not a regular file")]
    NotRegular { path: String, what: &'static str },
    #[error("`{path}` is larger than {cap} bytes")]
    TooLarge { path: String, cap: u64 },
    #[error("`{path}` does not exist")]
    Missing { path: String },
    #[error("cannot open `{path}`")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Refused {
    /// Whether the path simply is not there (not an attack, not an I/O failure).
    pub fn is_missing(&self) -> bool {
        matches!(self, Refused::Missing { .. })
    }
}

/// Opens a directory that `aayu` chose itself (the repository root, a temporary folder): the one place a
/// path is resolved the ordinary way.
pub fn open_root(dir: &Path) -> Result<OwnedFd, Refused> {
    openat(
        nix::fcntl::AT_FDCWD,
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Refused::Io {
        path: dir.display().to_string(),
        source: e.into(),
    })
}

/// The parts of a relative path, refused when one would step outside or is empty.
fn parts(rel: &str) -> Result<Vec<&str>, Refused> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty()
        || rel.contains('\0')
        || parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(Refused::BadPath {
            path: rel.to_string(),
        });
    }
    Ok(parts)
}

/// 0: not tried yet, 1: `openat2` works, 2: it does not (ENOSYS, or EPERM from a container's seccomp).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Opens `rel` beneath `dir` with `flags`, following no link on the way (the last part included).
fn open_beneath(dir: BorrowedFd, rel: &str, flags: OFlag, mode: Mode) -> Result<OwnedFd, Refused> {
    let parts = parts(rel)?;
    let flags = flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
    let mapped = |e: Errno| match e {
        Errno::ELOOP | Errno::EXDEV => Refused::Link {
            path: rel.to_string(),
        },
        Errno::ENOENT => Refused::Missing {
            path: rel.to_string(),
        },
        Errno::ENOTDIR => Refused::NotRegular {
            path: rel.to_string(),
            what: "beneath something that is not a folder",
        },
        other => Refused::Io {
            path: rel.to_string(),
            source: other.into(),
        },
    };
    // O_DIRECTORY on a link gives ENOTDIR rather than ELOOP: tell a link from a file in the way.
    let mapped = |e: Errno| match e {
        Errno::ENOTDIR if passes_link(dir, &parts) => Refused::Link {
            path: rel.to_string(),
        },
        other => mapped(other),
    };
    if OPENAT2.load(Ordering::Relaxed) != 2 {
        let how = OpenHow::new().flags(flags).mode(mode).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
        match openat2(dir, rel, how) {
            Ok(fd) => {
                OPENAT2.store(1, Ordering::Relaxed);
                return Ok(fd);
            }
            Err(Errno::ENOSYS | Errno::EPERM) if OPENAT2.load(Ordering::Relaxed) == 0 => {
                OPENAT2.store(2, Ordering::Relaxed);
            }
            Err(e) => return Err(mapped(e)),
        }
    }
    // One part at a time: each folder with O_NOFOLLOW | O_DIRECTORY, then the last part.
    let (last, folders) = parts.split_last().ok_or_else(|| Refused::BadPath {
        path: rel.to_string(),
    })?;
    let mut held: Option<OwnedFd> = None;
    for folder in folders {
        let at = held.as_ref().map_or(dir, |fd| fd.as_fd());
        let next = openat(
            at,
            *folder,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(mapped)?;
        held = Some(next);
    }
    let at = held.as_ref().map_or(dir, |fd| fd.as_fd());
    openat(at, *last, flags, mode).map_err(mapped)
}

/// Whether one of the leading parts of a path beneath `dir` is a symbolic link (looked at, never followed).
fn passes_link(dir: BorrowedFd, parts: &[&str]) -> bool {
    (1..=parts.len()).any(|n| {
        nix::sys::stat::fstatat(
            dir,
            parts[..n].join("/").as_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits())
    })
}

fn kind_of(mode: u32) -> &'static str {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => "a folder",
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFCHR | SFlag::S_IFBLK => "a device",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFLNK => "a symbolic link",
        SFlag::S_IFREG => "a regular file",
        _ => "something else",
    }
}

/// Opens a regular file beneath `dir` for reading: no link followed, never blocking (a FIFO opens at once
/// and is then refused), anything but a regular file refused. Returns the file and its size.
pub fn open_file_at(dir: BorrowedFd, rel: &str) -> Result<(File, u64), Refused> {
    let fd = open_beneath(
        dir,
        rel,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
        Mode::empty(),
    )?;
    let stat = fstat(&fd).map_err(|e| Refused::Io {
        path: rel.to_string(),
        source: e.into(),
    })?;
    let mode = stat.st_mode;
    if mode & SFlag::S_IFMT.bits() != SFlag::S_IFREG.bits() {
        return Err(Refused::NotRegular {
            path: rel.to_string(),
            what: kind_of(mode),
        });
    }
    Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
}

/// Opens a folder beneath `dir`, following no link on the way (the folder itself included), to open the
/// files in it by name with [`openat`] and `O_NOFOLLOW`: one path walk per folder rather than per file.
pub fn open_dir_at(dir: BorrowedFd, rel: &str) -> Result<OwnedFd, Refused> {
    open_beneath(
        dir,
        rel,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
}

/// [`open_file_at`] beneath a folder given by path.
pub fn open_file(root: &Path, rel: &str) -> Result<(File, u64), Refused> {
    let dir = open_root(root)?;
    open_file_at(dir.as_fd(), rel)
}

/// Reads a whole regular file beneath `root`, refusing one larger than `cap` bytes (also when it grows
/// while it is read).
pub fn read(root: &Path, rel: &str, cap: u64) -> Result<Vec<u8>, Refused> {
    let dir = open_root(root)?;
    read_at(dir.as_fd(), rel, cap)
}

/// [`read`] beneath an open folder.
pub fn read_at(dir: BorrowedFd, rel: &str, cap: u64) -> Result<Vec<u8>, Refused> {
    let (file, size) = open_file_at(dir, rel)?;
    let too_large = || Refused::TooLarge {
        path: rel.to_string(),
        cap,
    };
    if size > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| Refused::Io {
            path: rel.to_string(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Whether `rel` beneath `root` is a regular file, reached without following a link.
pub fn is_regular(root: &Path, rel: &str) -> bool {
    let Ok(dir) = open_root(root) else {
        return false;
    };
    open_beneath(
        dir.as_fd(),
        rel,
        OFlag::O_PATH | OFlag::O_NOFOLLOW,
        Mode::empty(),
    )
    .and_then(|fd| {
        fstat(&fd).map_err(|e| Refused::Io {
            path: rel.to_string(),
            source: e.into(),
        })
    })
    .is_ok_and(|s| s.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits())
}

/// The path of `rel` beneath `root` when it is a plain relative path, passes through no link as far as it
/// exists and is a file or a folder if it exists (what does not exist yet is made later beneath it, as [`create_dirs`] does): a path an MCP
/// client names, which must not lead out of the server's root.
pub fn beneath(root: &Path, rel: &str) -> Result<PathBuf, Refused> {
    let parts = parts(rel)?;
    let dir = open_root(root)?;
    for n in 1..=parts.len() {
        let prefix = parts[..n].join("/");
        match open_beneath(dir.as_fd(), &prefix, OFlag::O_PATH, Mode::empty()) {
            Ok(fd) => {
                // Without `openat2`, `O_PATH | O_NOFOLLOW` opens a final link itself: refuse it here;
                // and a FIFO or a device would block or never end the command reading it.
                let kind = fstat(&fd).map_or(0, |s| s.st_mode & SFlag::S_IFMT.bits());
                if kind == SFlag::S_IFLNK.bits() {
                    return Err(Refused::Link {
                        path: rel.to_string(),
                    });
                }
                if kind != SFlag::S_IFREG.bits() && kind != SFlag::S_IFDIR.bits() {
                    return Err(Refused::NotRegular {
                        path: rel.to_string(),
                        what: "a FIFO, a socket or a device",
                    });
                }
            }
            Err(Refused::Missing { .. }) => break,
            Err(e) => {
                return Err(match e {
                    Refused::Link { .. } => Refused::Link {
                        path: rel.to_string(),
                    },
                    Refused::NotRegular { what, .. } => Refused::NotRegular {
                        path: rel.to_string(),
                        what,
                    },
                    other => other,
                });
            }
        }
    }
    Ok(root.join(rel))
}

/// Creates the folders of `rel` beneath `root` (each one that is missing, mode 0755 less the umask),
/// refusing a link or a file on the way; returns the last folder, open.
pub fn create_dirs(root: &Path, rel: &str) -> Result<OwnedFd, Refused> {
    let mut held = open_root(root)?;
    for part in parts(rel)? {
        match mkdirat(held.as_fd(), part, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => {
                return Err(Refused::Io {
                    path: rel.to_string(),
                    source: e.into(),
                });
            }
        }
        held = open_beneath(
            held.as_fd(),
            part,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Refused::Link { .. } => Refused::Link {
                path: rel.to_string(),
            },
            Refused::NotRegular { .. } | Refused::Io { .. } => Refused::NotRegular {
                path: rel.to_string(),
                what: "in the way of a folder",
            },
            other => other,
        })?;
    }
    Ok(held)
}

/// Creates the folders of `rel` beneath `root` and returns the path of the last one: for a folder that
/// `aayu` then fills itself (a run folder, the pack folder's parent), after checking that nothing on the
/// way is a link.
pub fn ensure_dir(root: &Path, rel: &str) -> Result<PathBuf, Refused> {
    create_dirs(root, rel)?;
    Ok(root.join(rel))
}

/// Writes `bytes` to `rel` beneath `root` whole or not at all (a temporary file beside it, then a rename
/// that replaces a file but never writes through a link), creating missing folders.
pub fn write(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), Refused> {
    write_mode(root, rel, bytes, 0o644)
}

/// Creates the link `rel` beneath `root` pointing at `target` (written as it is, never followed), creating
/// missing folders.
pub fn symlink(root: &Path, rel: &str, target: &[u8]) -> Result<(), Refused> {
    let parts = parts(rel)?;
    let (name, folders) = parts.split_last().ok_or_else(|| Refused::BadPath {
        path: rel.to_string(),
    })?;
    let dir = if folders.is_empty() {
        open_root(root)?
    } else {
        create_dirs(root, &folders.join("/"))?
    };
    let target = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(target);
    nix::unistd::symlinkat(target, dir.as_fd(), *name).map_err(|e| Refused::Io {
        path: rel.to_string(),
        source: e.into(),
    })
}

/// [`write`] with the file's mode.
pub fn write_mode(root: &Path, rel: &str, bytes: &[u8], mode: u32) -> Result<(), Refused> {
    let parts = parts(rel)?;
    let io = |source: std::io::Error| Refused::Io {
        path: rel.to_string(),
        source,
    };
    let (name, folders) = parts.split_last().ok_or_else(|| Refused::BadPath {
        path: rel.to_string(),
    })?;
    let dir = if folders.is_empty() {
        open_root(root)?
    } else {
        create_dirs(root, &folders.join("/"))?
    };
    let temp = format!(".{name}.aayu-{}", std::process::id());
    let fd = openat(
        dir.as_fd(),
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )
    .map_err(|e| io(e.into()))?;
    let mut file = File::from(fd);
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    let renamed = written.and_then(|()| {
        nix::fcntl::renameat(dir.as_fd(), temp.as_str(), dir.as_fd(), *name).map_err(Into::into)
    });
    if let Err(e) = renamed {
        let _ = nix::unistd::unlinkat(
            dir.as_fd(),
            temp.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        return Err(io(e));
    }
    Ok(())
}

/// Removes the file (or link) `rel` beneath `root`, never following a link on the way; a missing file is
/// not an error.
pub fn remove(root: &Path, rel: &str) -> Result<(), Refused> {
    let parts = parts(rel)?;
    let (name, folders) = parts.split_last().ok_or_else(|| Refused::BadPath {
        path: rel.to_string(),
    })?;
    let root_fd = open_root(root)?;
    let dir = if folders.is_empty() {
        root_fd
    } else {
        match open_beneath(
            root_fd.as_fd(),
            &folders.join("/"),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) if e.is_missing() => return Ok(()),
            Err(e) => return Err(e),
        }
    };
    match nix::unistd::unlinkat(dir.as_fd(), *name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(Refused::Io {
            path: rel.to_string(),
            source: e.into(),
        }),
    }
}

/// Writes a file whole or not at all: a temporary file beside it, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes a JSON document (pretty-printed, a final newline) whole or not at all, making its folder.
pub fn write_json<T: serde::Serialize>(path: &Path, document: &T) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(document).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_fifos_and_big_files_are_refused() {
        let dir = tempfile::tempdir().expect("temp");
        let root = dir.path();
        std::fs::create_dir(root.join("real")).expect("mkdir");
        std::fs::write(root.join("real/a.txt"), "hello").expect("write");
        symlink("/dev/zero", root.join("zero")).expect("link");
        symlink("real", root.join("via")).expect("link");
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o600)).expect("fifo");

        assert_eq!(read(root, "real/a.txt", 100).expect("read"), b"hello");
        assert!(matches!(read(root, "zero", 100), Err(Refused::Link { .. })));
        assert!(matches!(
            read(root, "via/a.txt", 100),
            Err(Refused::Link { .. })
        ));
        assert!(matches!(
            read(root, "fifo", 100),
            Err(Refused::NotRegular { what: "a FIFO", .. })
        ));
        assert!(matches!(
            read(root, "real/a.txt", 4),
            Err(Refused::TooLarge { .. })
        ));
        assert!(matches!(
            read(root, "../x", 4),
            Err(Refused::BadPath { .. })
        ));
        assert!(read(root, "nothing", 4).expect_err("missing").is_missing());
        assert!(is_regular(root, "real/a.txt"));
        assert!(!is_regular(root, "via/a.txt"));
        assert!(!is_regular(root, "zero"));
    }

    #[test]
    fn a_path_beneath_passes_no_link_as_far_as_it_exists() {
        let dir = tempfile::tempdir().expect("temp");
        let outside = tempfile::tempdir().expect("temp");
        let root = dir.path();
        std::fs::create_dir(root.join("real")).expect("mkdir");
        std::fs::write(root.join("file"), "x").expect("write");
        symlink(outside.path(), root.join("away")).expect("link");
        symlink("real", root.join("inside")).expect("link");
        assert_eq!(beneath(root, "real").expect("a folder"), root.join("real"));
        assert_eq!(
            beneath(root, "real/new/deeper").expect("not made yet"),
            root.join("real/new/deeper")
        );
        for link in ["away", "away/x", "inside", "inside/new"] {
            assert!(
                matches!(beneath(root, link), Err(Refused::Link { .. })),
                "{link}"
            );
        }
        for bad in ["../x", "/etc", "a/../b", "./a", ""] {
            assert!(
                matches!(beneath(root, bad), Err(Refused::BadPath { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            beneath(root, "file/x"),
            Err(Refused::NotRegular { .. })
        ));
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o600)).expect("fifo");
        assert!(matches!(
            beneath(root, "fifo"),
            Err(Refused::NotRegular { .. })
        ));
        assert_eq!(beneath(root, "file").expect("a file"), root.join("file"));
    }

    #[test]
    fn writes_never_go_through_a_link() {
        let dir = tempfile::tempdir().expect("temp");
        let outside = tempfile::tempdir().expect("temp");
        let root = dir.path();
        symlink(outside.path(), root.join("tests")).expect("link");
        symlink(outside.path().join("f.rs"), root.join("f.rs")).expect("link");
        assert!(matches!(
            write(root, "tests/a.rs", b"x"),
            Err(Refused::Link { .. })
        ));
        // A link at the file's own name is replaced, not written through.
        write(root, "f.rs", b"mine").expect("write");
        assert!(!outside.path().join("f.rs").exists());
        assert_eq!(std::fs::read(root.join("f.rs")).expect("read"), b"mine");
        write(root, "new/deep/b.rs", b"y").expect("write");
        assert_eq!(
            std::fs::read(root.join("new/deep/b.rs")).expect("read"),
            b"y"
        );
        remove(root, "new/deep/b.rs").expect("remove");
        remove(root, "new/deep/b.rs").expect("missing is fine");
        assert!(matches!(
            create_dirs(root, "tests/x"),
            Err(Refused::Link { .. })
        ));
    }
}
