//! git2 helpers: finding the repository, listing its files by git's own rules, and reading old trees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use std::os::unix::fs::MetadataExt;

use git2::{ObjectType, Oid, Repository, Tree};

/// Why a git operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("`{dir}` is not inside a git repository")]
    NotARepository {
        dir: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("`{dir}` is a bare repository; aayu needs a working tree")]
    Bare { dir: PathBuf },
    #[error("`{rev}` is not a commit of this repository")]
    Revision {
        rev: String,
        #[source]
        source: git2::Error,
    },
    #[error("cannot list the files of the repository at `{root}`")]
    List {
        root: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// An opened repository with a working tree.
pub struct Repo {
    repo: Repository,
    root: PathBuf,
}

/// The lines a change adds, by file of the head ([`Repo::added_lines`]), and the files it left out (too
/// large, not text, or past the budget).
#[derive(Debug, Default, Clone)]
pub struct Added {
    pub lines: BTreeMap<String, BTreeSet<u32>>,
    pub left_out: Vec<String>,
}

/// A file of a commit read with a cap ([`Repo::capped_file_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    Missing,
    /// A link, a submodule or a folder: not read.
    NotRegular,
    /// Larger than the cap: its size, never its bytes.
    TooLarge(u64),
    Bytes(Vec<u8>),
}

/// The files git sees in the working tree: tracked and present, plus untracked and not ignored, as
/// `/`-separated paths relative to the root, sorted.
pub struct WorktreeFiles {
    pub files: Vec<String>,
    /// For each file of `files` that is tracked: what the index keeps of it.
    pub tracked: Vec<Option<Tracked>>,
    /// When the index was written, for git's "racily clean" rule.
    pub index_time: Option<(i64, i64)>,
    /// Paths git reported that are not UTF-8; they cannot be named in a map and are left out.
    pub not_utf8: Vec<String>,
}

/// What the index keeps of a tracked file.
#[derive(Debug, Clone, Copy)]
pub struct Tracked {
    /// Its blob id when the index was written.
    pub id: Oid,
    pub stat: FileStat,
    /// Its mode in git's terms: `0o100644`, `0o100755` or `0o120000`.
    pub mode: u32,
}

impl WorktreeFiles {
    /// The blob id of file `i` when its stat `now` shows it unchanged since the index was written, as git's
    /// status decides without reading it; `None` when it may have changed (then its bytes are hashed).
    pub fn clean_id(&self, i: usize, now: &FileStat) -> Option<Oid> {
        let Tracked { id, stat: then, .. } = self.tracked.get(i).copied().flatten()?;
        // A file modified in the same instant the index was written may differ with the same stat.
        let racy = self.index_time.is_none_or(|t| now.mtime >= t);
        let same_time =
            then.mtime.0 == now.mtime.0 && (then.mtime.1 == 0 || then.mtime.1 == now.mtime.1);
        // The index keeps the low 32 bits of size and inode.
        let same = same_time
            && then.size == now.size & 0xffff_ffff
            && (then.ino == 0 || then.ino == now.ino & 0xffff_ffff);
        (same && !racy).then_some(id)
    }
}

impl Repo {
    /// Opens the repository containing `dir`, searching upwards like git does.
    pub fn discover(dir: &Path) -> Result<Repo, GitError> {
        let repo = Repository::discover(dir).map_err(|source| GitError::NotARepository {
            dir: dir.to_path_buf(),
            source,
        })?;
        let root = match repo.workdir() {
            Some(root) => root.to_path_buf(),
            None => {
                return Err(GitError::Bare {
                    dir: dir.to_path_buf(),
                });
            }
        };
        Ok(Repo { repo, root })
    }

    /// The working tree's top folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the repository is a shallow clone (its history is cut off).
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow()
    }

    /// The equivalent of `git ls-files --cached --others --exclude-standard`, less the tracked files that
    /// were deleted from the working tree: what a person sees in the checkout, by git's ignore rules.
    ///
    /// Tracked files come from the index. Untracked ones come from a parallel walk of the working tree
    /// that applies the repository's ignore files (`.gitignore` at every level, `.git/info/exclude`,
    /// `core.excludesFile`) the way git does, skipping `.git` and nested repositories. A tracked file
    /// whose size, inode and modification time match the index (and that is not "racily clean", i.e.
    /// modified in the same instant the index was written) keeps its index blob id, so its content need
    /// not be hashed again for the stale check. libgit2's own status walk gives the same list but is
    /// single-threaded and was the slowest step on a large monorepo (see tests/bench/verify-map.sh).
    pub fn worktree_files(&self) -> Result<WorktreeFiles, GitError> {
        let list_err = |source| GitError::List {
            root: self.root.clone(),
            source,
        };
        // The walk runs on its own threads while this one reads the index.
        let root = self.root.clone();
        let walker = std::thread::spawn(move || walk(&root));
        let index = self.repo.index().map_err(list_err)?;
        let index_time = std::fs::metadata(self.repo.path().join("index"))
            .ok()
            .map(|m| (m.mtime(), m.mtime_nsec()));
        let mut not_utf8 = Vec::new();
        let mut tracked: Vec<(String, Tracked)> = Vec::with_capacity(index.len());
        for entry in index.iter() {
            // Stage 0 only (a conflicted file appears once), and no submodules (gitlinks).
            let stage = (entry.flags >> 12) & 0x3;
            if stage != 0 || entry.mode == 0o160000 {
                continue;
            }
            let stat = FileStat {
                mtime: (
                    i64::from(entry.mtime.seconds()),
                    i64::from(entry.mtime.nanoseconds()),
                ),
                size: u64::from(entry.file_size),
                ino: u64::from(entry.ino),
            };
            let known = Tracked {
                id: entry.id,
                stat,
                mode: entry.mode,
            };
            match String::from_utf8(entry.path) {
                Ok(path) => tracked.push((path, known)),
                Err(e) => not_utf8.push(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            }
        }
        tracked.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        tracked.dedup_by(|a, b| a.0 == b.0);

        let (mut walked, walk_not_utf8) = walker.join().unwrap_or_default();
        not_utf8.extend(walk_not_utf8);
        walked.sort_unstable();

        let mut listed = WorktreeFiles {
            files: Vec::with_capacity(tracked.len() + 16),
            tracked: Vec::with_capacity(tracked.len() + 16),
            index_time,
            not_utf8,
        };
        let mut walked = walked.into_iter().peekable();
        let mut tracked = tracked.into_iter().peekable();
        loop {
            let order = match (tracked.peek(), walked.peek()) {
                (Some(t), Some(w)) => t.0.cmp(w),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => break,
            };
            match order {
                std::cmp::Ordering::Equal => {
                    walked.next();
                    if let Some((path, known)) = tracked.next() {
                        listed.files.push(path);
                        listed.tracked.push(Some(known));
                    }
                }
                std::cmp::Ordering::Less => {
                    // Tracked but not walked: tracked although ignored (still listed, as git lists it),
                    // or deleted from the working tree (not listed).
                    if let Some((path, known)) = tracked.next()
                        && std::fs::symlink_metadata(self.root.join(&path)).is_ok()
                    {
                        listed.files.push(path);
                        listed.tracked.push(Some(known));
                    }
                }
                std::cmp::Ordering::Greater => {
                    if let Some(path) = walked.next() {
                        listed.files.push(path);
                        listed.tracked.push(None);
                    }
                }
            }
        }
        Ok(listed)
    }

    /// The tree of a commit named by `rev` (a SHA or an abbreviation), or `None` when the repository does
    /// not have that commit (a shallow clone, a rewritten history, a typo).
    pub fn commit_tree(&self, rev: &str) -> Option<(Oid, Tree<'_>)> {
        let object = self.repo.revparse_single(rev).ok()?;
        let commit = object.peel_to_commit().ok()?;
        let tree = commit.tree().ok()?;
        Some((commit.id(), tree))
    }

    /// The names of the regular files (blobs, not links) directly in folder `dir` (`""`: the root) of
    /// the commit `rev`, sorted; none when either is missing.
    pub fn files_in_at(&self, rev: &str, dir: &str) -> Vec<String> {
        let Some((_, tree)) = self.commit_tree(rev) else {
            return Vec::new();
        };
        let folder = if dir.is_empty() {
            tree
        } else {
            match tree
                .get_path(Path::new(dir))
                .ok()
                .filter(|e| e.kind() == Some(ObjectType::Tree))
                .and_then(|e| self.repo.find_tree(e.id()).ok())
            {
                Some(folder) => folder,
                None => return Vec::new(),
            }
        };
        let mut names: Vec<String> = folder
            .iter()
            .filter(|e| e.kind() == Some(ObjectType::Blob) && e.filemode() != 0o120000)
            .filter_map(|e| e.name().ok().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// The blob ids of every file at or under `path` in `tree` (a file gives itself), keyed by path.
    pub fn blobs_under(&self, tree: &Tree<'_>, path: &str) -> Vec<(String, Oid)> {
        let mut found = Vec::new();
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return found;
        };
        match entry.kind() {
            Some(ObjectType::Blob) => found.push((path.to_string(), entry.id())),
            Some(ObjectType::Tree) => {
                if let Ok(subtree) = self.repo.find_tree(entry.id()) {
                    let _ = subtree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
                        if e.kind() == Some(ObjectType::Blob)
                            && let Ok(name) = e.name()
                        {
                            found.push((format!("{path}/{dir}{name}"), e.id()));
                        }
                        git2::TreeWalkResult::Ok
                    });
                }
            }
            _ => {}
        }
        found.sort();
        found
    }
}

impl Repo {
    /// The commit a revision names, or an error naming the revision.
    pub fn commit(&self, rev: &str) -> Result<git2::Commit<'_>, GitError> {
        self.repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map_err(|source| GitError::Revision {
                rev: rev.to_string(),
                source,
            })
    }

    /// The tree of the commit `rev`, or an error naming the revision.
    fn tree_at(&self, rev: &str) -> Result<Tree<'_>, GitError> {
        self.commit(rev)?
            .tree()
            .map_err(|source| GitError::Revision {
                rev: rev.to_string(),
                source,
            })
    }

    /// Every path a change from `base` to `head` touches (both sides of a rename), sorted.
    pub fn changed_paths(&self, base: &str, head: &str) -> Result<Vec<String>, GitError> {
        let old = self.tree_at(base)?;
        let new = self.tree_at(head)?;
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(|source| GitError::Revision {
                rev: format!("{base}..{head}"),
                source,
            })?;
        let mut paths = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path().and_then(Path::to_str) {
                    paths.push(path.to_string());
                }
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The lines a change from `base` to `head` adds, by file of the head (its `+` lines, numbered in the
    /// head; no context; git's default rename detection, so a renamed and edited file brings only its
    /// edited lines). A binary file brings none.
    ///
    /// Only the files `pathspecs` name (`*.rs`), each at most `max_size` bytes (a larger one is left out,
    /// and named), and at most `budget` lines in all (the files past it are left out, and named): what a
    /// pull request adds never fills aayu's memory.
    pub fn added_lines(
        &self,
        (base, head): (&str, &str),
        pathspecs: &[&str],
        max_size: u64,
        budget: usize,
    ) -> Result<Added, GitError> {
        let old = self.tree_at(base)?;
        let new = self.tree_at(head)?;
        let revision = |source| GitError::Revision {
            rev: format!("{base}..{head}"),
            source,
        };
        let mut options = git2::DiffOptions::new();
        options.context_lines(0);
        for spec in pathspecs {
            options.pathspec(spec);
        }
        // A larger blob is marked binary: no lines are read from it.
        options.max_size(i64::try_from(max_size).unwrap_or(i64::MAX));
        let mut diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options))
            .map_err(revision)?;
        let mut find = git2::DiffFindOptions::new();
        find.renames(true);
        diff.find_similar(Some(&mut find)).map_err(revision)?;
        let mut added = Added::default();
        let mut count = 0usize;
        let left_out = std::cell::RefCell::new(BTreeSet::new());
        diff.foreach(
            &mut |delta, _| {
                if delta.flags().is_binary()
                    && let Some(path) = delta.new_file().path().and_then(Path::to_str)
                {
                    left_out.borrow_mut().insert(path.to_string());
                }
                true
            },
            Some(&mut |delta, _| {
                if let Some(path) = delta.new_file().path().and_then(Path::to_str) {
                    left_out.borrow_mut().insert(path.to_string());
                }
                true
            }),
            None,
            Some(&mut |delta, _, line| {
                if line.origin() == '+'
                    && let (Some(path), Some(n)) = (
                        delta.new_file().path().and_then(Path::to_str),
                        line.new_lineno(),
                    )
                {
                    if count >= budget && !added.lines.contains_key(path) {
                        left_out.borrow_mut().insert(path.to_string());
                    } else {
                        count += 1;
                        added.lines.entry(path.to_string()).or_default().insert(n);
                    }
                }
                true
            }),
        )
        .map_err(revision)?;
        added.left_out = left_out
            .into_inner()
            .into_iter()
            .filter(|p| !added.lines.contains_key(p))
            .collect();
        Ok(added)
    }

    /// The bytes of `path` at the commit `rev`, or `None` when the commit has no such file.
    pub fn file_at(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let tree = self.tree_at(rev)?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        Ok(entry
            .to_object(&self.repo)
            .ok()
            .and_then(|o| o.into_blob().ok())
            .map(|b| b.content().to_vec()))
    }
}

impl Repo {
    /// The regular files of the commit `rev` whose path `keep` accepts, with their bytes, sorted by path.
    /// Links and submodules are left out (aayu reads no file through a link), and so is a path with an
    /// empty, `.` or `..` part (a crafted tree can hold one). A file larger than `cap` gives only its first
    /// `cap + 1` bytes: enough for a reader to refuse it as too large, without loading it whole.
    pub fn files_at(
        &self,
        rev: &str,
        cap: u64,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<(String, Vec<u8>)>, GitError> {
        let tree = self.tree_at(rev)?;
        let mut ids = Vec::new();
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
            let regular = matches!(e.filemode(), 0o100644 | 0o100755);
            if regular && let Ok(name) = e.name() {
                let path = format!("{dir}{name}");
                let plain = path.split('/').all(|p| !matches!(p, "" | "." | ".."));
                if plain && keep(&path) {
                    ids.push((path, e.id()));
                }
            }
            git2::TreeWalkResult::Ok
        });
        let mut files = Vec::with_capacity(ids.len());
        let odb = self.repo.odb().map_err(|source| GitError::Revision {
            rev: rev.to_string(),
            source,
        })?;
        for (path, id) in ids {
            if odb.read_header(id).is_ok_and(|(size, _)| size as u64 > cap) {
                let over = usize::try_from(cap).unwrap_or(usize::MAX).saturating_add(1);
                files.push((path, vec![b' '; over]));
                continue;
            }
            let blob = self
                .repo
                .find_blob(id)
                .map_err(|source| GitError::Revision {
                    rev: format!("{rev}:{path}"),
                    source,
                })?;
            files.push((path, blob.content().to_vec()));
        }
        files.sort();
        Ok(files)
    }

    /// `path` at the commit `rev`, read only when it is a regular file of at most `cap` bytes (its size
    /// is read from the object's header first: a larger one is never loaded).
    pub fn capped_file_at(&self, rev: &str, path: &str, cap: u64) -> Result<Capped, GitError> {
        let tree = self.tree_at(rev)?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(Capped::Missing);
        };
        if !matches!(entry.filemode(), 0o100644 | 0o100755) {
            return Ok(Capped::NotRegular);
        }
        let odb = self.repo.odb().map_err(|source| GitError::Revision {
            rev: rev.to_string(),
            source,
        })?;
        if let Ok((size, _)) = odb.read_header(entry.id())
            && size as u64 > cap
        {
            return Ok(Capped::TooLarge(size as u64));
        }
        let blob = self
            .repo
            .find_blob(entry.id())
            .map_err(|source| GitError::Revision {
                rev: format!("{rev}:{path}"),
                source,
            })?;
        Ok(Capped::Bytes(blob.content().to_vec()))
    }

    /// Whether the index holds `path` (as `git ls-files` would list it): what the checkout commits.
    pub fn is_tracked(&self, path: &str) -> bool {
        self.repo
            .index()
            .is_ok_and(|index| index.get_path(Path::new(path), 0).is_some())
    }

    /// The object id of `path` (a file or a folder) at the commit `rev`, or `None` when it has none.
    pub fn id_at(&self, rev: &str, path: &str) -> Option<Oid> {
        let (_, tree) = self.commit_tree(rev)?;
        tree.get_path(Path::new(path)).ok().map(|e| e.id())
    }
}

impl Repo {
    /// The merge base of two commits, or `None` when the history does not have one (a shallow clone).
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<Oid>, GitError> {
        let a = self.commit(a)?.id();
        let b = self.commit(b)?.id();
        Ok(self.repo.merge_base(a, b).ok())
    }

    /// Writes the tree of `commit` into the empty folder `dir`, leaving the repository's own index and
    /// working tree alone: every blob as a file (its executable bit kept), every link as a link (written,
    /// never followed), submodules as empty folders. Each path is created beneath `dir` through
    /// [`crate::safe_fs`], so no link of the tree can lead a later write out of it. (libgit2's checkout into
    /// another folder compares with the repository's HEAD and leaves out entries whose type changed.)
    pub fn export_tree(&self, commit: Oid, dir: &Path) -> Result<(), GitError> {
        let fail = |source| GitError::Revision {
            rev: commit.to_string(),
            source,
        };
        let tree = self
            .repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(fail)?;
        let mut failed: Option<git2::Error> = None;
        tree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
            let Ok(name) = entry.name() else {
                return git2::TreeWalkResult::Skip;
            };
            let rel = format!("{parent}{name}");
            let written = match (entry.kind(), entry.filemode()) {
                (Some(ObjectType::Tree), _) | (Some(ObjectType::Commit), _) => {
                    crate::safe_fs::create_dirs(dir, &rel).map(|_| ())
                }
                (Some(ObjectType::Blob), mode) => match self.repo.find_blob(entry.id()) {
                    Ok(blob) if mode == 0o120000 => {
                        crate::safe_fs::symlink(dir, &rel, blob.content())
                    }
                    Ok(blob) => crate::safe_fs::write_mode(
                        dir,
                        &rel,
                        blob.content(),
                        if mode == 0o100755 { 0o755 } else { 0o644 },
                    ),
                    Err(e) => {
                        failed = Some(e);
                        return git2::TreeWalkResult::Abort;
                    }
                },
                _ => Ok(()),
            };
            match written {
                Ok(()) => git2::TreeWalkResult::Ok,
                Err(e) => {
                    failed = Some(git2::Error::from_str(&e.to_string()));
                    git2::TreeWalkResult::Abort
                }
            }
        })
        .map_err(|e| fail(failed.take().unwrap_or(e)))?;
        match failed {
            Some(e) => Err(fail(e)),
            None => Ok(()),
        }
    }

    /// The message of a commit, for its trailers.
    pub fn message(&self, rev: &str) -> Result<String, GitError> {
        Ok(self.commit(rev)?.message().unwrap_or_default().to_string())
    }

    /// The full SHA of a revision.
    pub fn sha(&self, rev: &str) -> Result<String, GitError> {
        Ok(self.commit(rev)?.id().to_string())
    }

    /// The tracked files whose working-tree or staged content differs from the checkout's `HEAD`
    /// (at most `limit`, by path); untracked and ignored files are not looked at.
    pub fn changed_tracked(&self, limit: usize) -> Result<Vec<String>, GitError> {
        let mut options = git2::StatusOptions::new();
        options
            .include_untracked(false)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses =
            self.repo
                .statuses(Some(&mut options))
                .map_err(|source| GitError::Revision {
                    rev: "the working tree".to_string(),
                    source,
                })?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != git2::Status::CURRENT)
            .filter_map(|s| s.path().ok().map(str::to_string))
            .take(limit)
            .collect())
    }

    /// Whether git ignores a repository path.
    pub fn is_ignored(&self, path: &str) -> bool {
        self.repo.is_path_ignored(path).unwrap_or(false)
    }

    /// `owner/name` from the `origin` remote's URL, when it is a GitHub-style URL.
    pub fn origin_slug(&self) -> Option<String> {
        let remote = self.repo.find_remote("origin").ok()?;
        let url = remote
            .url()
            .ok()?
            .trim_end_matches('/')
            .trim_end_matches(".git")
            .to_string();
        let tail = url.rsplit_once(':').map_or(url.as_str(), |(_, t)| t);
        let parts: Vec<&str> = tail.rsplit('/').take(2).collect();
        (parts.len() == 2 && !parts[0].is_empty() && !parts[1].is_empty())
            .then(|| format!("{}/{}", parts[1], parts[0]))
    }

    /// How a pack names this repository (only the pack: the API's slug is [`Repo::origin_slug`]'s):
    /// `owner/name` for a GitHub origin (`github.com`, or `github_host`, the host of `GITHUB_SERVER_URL`),
    /// `<host>/<path>` for another remote, and the repository folder's name for a local-path or `file://`
    /// origin, or none — never a path of this machine.
    pub fn pack_name(&self, github_host: Option<&str>) -> String {
        let folder = || {
            self.root()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let Some(url) = self
            .repo
            .find_remote("origin")
            .ok()
            .and_then(|r| r.url().ok().map(str::to_string))
        else {
            return folder();
        };
        match remote_host_path(&url) {
            Some((host, path)) => {
                let github = host.eq_ignore_ascii_case("github.com")
                    || github_host.is_some_and(|h| h.eq_ignore_ascii_case(&host));
                let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
                if github && parts.len() >= 2 {
                    format!("{}/{}", parts[parts.len() - 2], parts[parts.len() - 1])
                } else {
                    format!("{host}/{}", parts.join("/"))
                }
            }
            None => folder(),
        }
    }

    /// Whether `branch` exists here or at `origin` (as fetched).
    pub fn has_branch(&self, branch: &str) -> bool {
        [
            format!("refs/heads/{branch}"),
            format!("refs/remotes/origin/{branch}"),
        ]
        .iter()
        .any(|r| self.repo.find_reference(r).is_ok())
    }

    /// Creates `branch` locally with one empty commit, by git's `user.name` and `user.email` (else
    /// `aayu`), without touching the working tree or the checked-out branch.
    pub fn create_empty_branch(&self, branch: &str) -> Result<(), git2::Error> {
        let tree_id = self.repo.treebuilder(None)?.write()?;
        let tree = self.repo.find_tree(tree_id)?;
        let signature = self
            .repo
            .signature()
            .or_else(|_| git2::Signature::now("aayu", "aayu@localhost"))?;
        let commit = self.repo.commit(
            None,
            &signature,
            &signature,
            &format!("{branch}: the aayudha ledger (created by aayu doctor --fix)"),
            &tree,
            &[],
        )?;
        self.repo.reference(
            &format!("refs/heads/{branch}"),
            commit,
            false,
            "aayu doctor --fix",
        )?;
        Ok(())
    }

    /// A file on a branch: `origin`'s copy of it when there is one (the ledger is read from origin),
    /// else the local branch.
    pub fn file_on_branch(&self, branch: &str, path: &str) -> Option<Vec<u8>> {
        let remote = format!("refs/remotes/origin/{branch}");
        let order = if self.repo.find_reference(&remote).is_ok() {
            [remote, format!("refs/heads/{branch}")]
        } else {
            [format!("refs/heads/{branch}"), remote]
        };
        for reference in order {
            if let Ok(Some(bytes)) = self.file_at(&reference, path) {
                return Some(bytes);
            }
        }
        None
    }
}

/// The host and path of a remote URL (`https://host/a/b.git`, `ssh://git@host:22/a/b`, `git@host:a/b.git`),
/// without `.git` or a trailing `/`; `None` for a local path or `file://`.
fn remote_host_path(url: &str) -> Option<(String, String)> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return None;
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = host.split(':').next().unwrap_or(host);
        return (!host.is_empty()).then(|| (host.to_string(), path.to_string()));
    }
    // scp-like `user@host:path` (a `:` before any `/`); a local path has none.
    let (before, path) = url.split_once(':')?;
    if before.contains('/') || before.is_empty() {
        return None;
    }
    let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
    Some((host.to_string(), path.trim_start_matches('/').to_string()))
}

impl Repo {
    /// The credentials the repository's own git configuration holds, by key (never the value): an
    /// `http.<url>.extraheader` (what actions/checkout persists), a credential helper, a remote URL with a
    /// user and password or token — also in a file the configuration includes (actions/checkout v6 keeps
    /// them in one under `$RUNNER_TEMP`, included with `includeIf.gitdir`).
    pub fn persisted_credentials(&self) -> Vec<String> {
        let mut found = Vec::new();
        let Ok(config) = self
            .repo
            .config()
            .and_then(|c| c.open_level(git2::ConfigLevel::Local))
        else {
            return found;
        };
        let Ok(mut entries) = config.entries(None) else {
            return found;
        };
        while let Some(Ok(entry)) = entries.next() {
            let Ok(name) = entry.name().map(str::to_ascii_lowercase) else {
                continue;
            };
            let value = entry.value().unwrap_or_default();
            let credential = (name.starts_with("http.") && name.ends_with(".extraheader"))
                || (name.starts_with("credential.") && name.ends_with(".helper"))
                || name == "credential.helper"
                || ((name.starts_with("remote.") || name.starts_with("url."))
                    && (name.ends_with(".url") || name.ends_with(".pushurl") || name.ends_with(".insteadof"))
                    && url_has_password(value))
                // An included file that the checkout named for its credentials (checkout v6), even where
                // its condition or path does not resolve here.
                || ((name == "include.path" || name.starts_with("includeif."))
                    && name.ends_with(".path")
                    && value.contains("credentials"));
            if credential && !found.contains(&name) {
                found.push(name);
            }
        }
        found
    }
}

/// Whether a URL carries a password or token (`https://user:secret@host/…`, `https://token@host/…`).
fn url_has_password(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    matches!(scheme, "http" | "https") && authority.contains('@')
}

/// The first 12 characters of a SHA (or the whole string when shorter), for people to read.
pub fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Whether `text` is a full commit SHA: 40 hex digits (either case). The one place this is decided.
pub fn is_full_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The id git gives a blob with these bytes (what `git hash-object` prints), without touching the disk.
pub fn blob_id(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(ObjectType::Blob, bytes).ok()
}

/// The id git gives the tree of `entries` — (path, mode, blob id), the paths relative to the tree and
/// sorted bytewise, which is git's own tree order — without writing anything; what `git write-tree` would
/// print for an index of exactly these files.
pub fn tree_id(entries: &[(&str, u32, Oid)]) -> Option<Oid> {
    tree_id_from(entries, 0)
}

/// The tree of `entries` whose paths share their first `skip` bytes (a folder and its `/`).
fn tree_id_from(entries: &[(&str, u32, Oid)], skip: usize) -> Option<Oid> {
    let mut bytes = Vec::with_capacity(entries.len() * 48);
    let mut i = 0;
    while i < entries.len() {
        let (path, mode, id) = entries[i];
        let rest = path.get(skip..)?;
        let (name, mode, id, next) = match rest.split_once('/') {
            None => (rest, mode, id, i + 1),
            Some((folder, _)) => {
                let inner = skip + folder.len() + 1;
                let within = entries[i..]
                    .iter()
                    .take_while(|(p, _, _)| {
                        p.len() > inner
                            && p.as_bytes()[inner - 1] == b'/'
                            && p[skip..].starts_with(folder)
                    })
                    .count();
                let sub = tree_id_from(&entries[i..i + within], inner)?;
                (folder, 0o40000, sub, i + within)
            }
        };
        if name.is_empty() {
            return None;
        }
        bytes.extend_from_slice(format!("{mode:o} {name}\0").as_bytes());
        bytes.extend_from_slice(id.as_bytes());
        i = next;
    }
    Oid::hash_object(ObjectType::Tree, &bytes).ok()
}

/// What the index records of a file's stat, to tell a clean file without reading it.
#[derive(Debug, Clone, Copy)]
pub struct FileStat {
    mtime: (i64, i64),
    size: u64,
    ino: u64,
}

impl FileStat {
    /// From an `fstat` of an open file.
    pub fn of_stat(stat: &nix::sys::stat::FileStat) -> FileStat {
        FileStat {
            mtime: (stat.st_mtime, stat.st_mtime_nsec),
            size: u64::try_from(stat.st_size).unwrap_or(0),
            ino: stat.st_ino,
        }
    }
}

/// Every file of the working tree that git's ignore rules do not exclude, walked in parallel; `.git` and
/// nested repositories are left out, as git leaves them out. Links are listed, never followed.
fn walk(root: &Path) -> (Vec<String>, Vec<String>) {
    let found = std::sync::Mutex::new((Vec::new(), Vec::new()));
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            // A nested repository (or submodule) is one untracked folder to git, not its files.
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir && entry.depth() > 0 && entry.path().join(".git").exists())
        })
        .build_parallel();
    walker.run(|| {
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                return ignore::WalkState::Continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else {
                return ignore::WalkState::Continue;
            };
            if let Ok(mut found) = found.lock() {
                match rel.to_str() {
                    Some(path) => found.0.push(path.to_string()),
                    None => found.1.push(rel.to_string_lossy().into_owned()),
                }
            }
            ignore::WalkState::Continue
        })
    });
    found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Accepts repositories owned by another uid, for this process: what `safe.directory = *` in the image's
/// system config does for the git program. Only `aayu action` calls it — inside the action's container the
/// workspace belongs to the runner's uid (1001) while the action runs as root.
#[allow(unsafe_code)]
pub fn trust_every_owner() {
    // SAFETY: libgit2's owner validation is a process-wide option; it is set once, before any repository
    // is opened and before any thread that uses git2 starts, so nothing reads it concurrently.
    let _ = unsafe { git2::opts::set_verify_owner_validation(false) };
}

/// How the `git` program reaches a remote: the server's URL and the token sent as an HTTP header.
#[derive(Clone, Default)]
pub struct Network {
    pub server_url: String,
    pub token: Option<String>,
    /// git may ask the user's credential helpers; not under `aayu mcp`, where a helper (`gh auth
    /// git-credential`) would hand git a token the server was started without.
    pub credential_helpers: bool,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("server_url", &self.server_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Runs the `git` program in `root` for network work (fetch, push): aayu's git library is built without
/// network transports, and git's own credential helpers and proxy settings are what users expect. A token
/// reaches git through `GIT_CONFIG_*` variables of that one process (an `http.<server>/.extraheader`),
/// never its command line or a file; no prompt is ever shown.
pub fn git_program(
    root: &Path,
    network: &Network,
    args: &[&str],
) -> std::io::Result<std::process::Output> {
    let mut command = std::process::Command::new("git");
    command
        .current_dir(root)
        // aayu reads git's stderr (a rejected push, a missing ref): in git's own words, not a translation.
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_CONFIG_COUNT")
        .args(["-c", &format!("safe.directory={}", root.display())]);
    if !network.credential_helpers {
        // An empty value clears git's list of helpers (git-config(1), `credential.helper`).
        command.args(["-c", "credential.helper="]);
    }
    command.args(args);
    if let Some(token) = &network.token {
        use base64::Engine as _;
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        command
            .env("GIT_CONFIG_COUNT", "1")
            .env(
                "GIT_CONFIG_KEY_0",
                format!(
                    "http.{}/.extraheader",
                    network.server_url.trim_end_matches('/')
                ),
            )
            .env(
                "GIT_CONFIG_VALUE_0",
                format!("AUTHORIZATION: basic {basic}"),
            );
    }
    command.output()
}

/// A git error: a usage error with a hint when the user can fix it, else exit 1.
impl crate::failure::Diagnose for GitError {
    fn status(&self) -> crate::exit::ExitStatus {
        use crate::exit::ExitStatus;
        match self {
            GitError::NotARepository { .. } | GitError::Bare { .. } | GitError::Revision { .. } => {
                ExitStatus::Usage
            }
            GitError::List { .. } | GitError::Io { .. } => ExitStatus::Failure,
        }
    }

    fn hint(&self) -> Option<String> {
        let hint = match self {
            GitError::NotARepository { .. } => "run aayu inside a git repository, or pass `-C DIR`",
            GitError::Bare { .. } => "run aayu in a checkout with a working tree",
            GitError::Revision { .. } => {
                "name a commit this clone has (a SHA, a branch or HEAD~1); a shallow clone may need `fetch-depth: 0`"
            }
            GitError::List { .. } | GitError::Io { .. } => return None,
        };
        Some(hint.to_string())
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_remote_url_is_read_as_host_and_path() {
        let hp = |u: &str| super::remote_host_path(u);
        let pair = |h: &str, p: &str| Some((h.to_string(), p.to_string()));
        assert_eq!(
            hp("https://github.com/octo/shop.git"),
            pair("github.com", "octo/shop")
        );
        assert_eq!(
            hp("ssh://git@github.com:22/octo/shop"),
            pair("github.com", "octo/shop")
        );
        assert_eq!(
            hp("git@github.com:octo/shop.git"),
            pair("github.com", "octo/shop")
        );
        assert_eq!(
            hp("https://gitlab.example.com/group/sub/app.git/"),
            pair("gitlab.example.com", "group/sub/app")
        );
        assert_eq!(hp("/srv/mirror/owner+name/repo"), None);
        assert_eq!(hp("file:///srv/mirror/repo.git"), None);
        assert_eq!(hp("../other"), None);
    }

    use super::*;

    /// The tree id computed from (path, mode, blob id) is the one libgit2 writes for the same index.
    #[test]
    fn tree_ids_are_the_ones_git_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let files: &[(&str, &[u8])] = &[
            ("a-b.rs", b"1"),
            ("a.rs", b"2"),
            ("a/deep/x.rs", b"3"),
            ("a/y.rs", b"4"),
            ("a0.rs", b"5"),
            ("b/c/d/e.txt", b"6"),
            ("run.sh", b"#!/bin/sh\n"),
        ];
        for (path, bytes) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(&full, bytes).expect("write");
        }
        std::fs::set_permissions(
            dir.path().join("run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        std::os::unix::fs::symlink("a.rs", dir.path().join("link")).expect("symlink");
        let mut index = repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        let written = index.write_tree().expect("write tree");

        let mut entries: Vec<(String, u32, Oid)> = index
            .iter()
            .map(|e| (String::from_utf8(e.path).expect("utf-8"), e.mode, e.id))
            .collect();
        entries.sort();
        let borrowed: Vec<(&str, u32, Oid)> = entries
            .iter()
            .map(|(p, m, o)| (p.as_str(), *m, *o))
            .collect();
        assert_eq!(tree_id(&borrowed), Some(written));

        // A folder's tree, from paths relative to it.
        let tree = repo.find_tree(written).expect("tree");
        let a = tree.get_path(Path::new("a")).expect("a").id();
        let under: Vec<(&str, u32, Oid)> = borrowed
            .iter()
            .filter_map(|&(p, m, o)| p.strip_prefix("a/").map(|rest| (rest, m, o)))
            .collect();
        assert_eq!(tree_id(&under), Some(a));

        // Any difference — content or mode — gives another id.
        let mut changed = borrowed.clone();
        changed[1].1 = 0o100755;
        assert_ne!(tree_id(&changed), Some(written));
        assert_eq!(tree_id(&[("", 0o100644, written)]), None);
    }
}
