//! git2 helpers: finding the repository, listing its files by git's own rules, and reading old trees.

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Status, StatusOptions, Tree};

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
    #[error("cannot list the files of the repository at `{root}`")]
    List {
        root: PathBuf,
        #[source]
        source: git2::Error,
    },
}

/// An opened repository with a working tree.
pub struct Repo {
    repo: Repository,
    root: PathBuf,
}

/// The files git sees in the working tree: tracked and present, plus untracked and not ignored, as
/// `/`-separated paths relative to the root, sorted.
pub struct WorktreeFiles {
    pub files: Vec<String>,
    /// Paths git reported that are not UTF-8; they cannot be named in a map and are left out.
    pub not_utf8: Vec<String>,
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
    pub fn worktree_files(&self) -> Result<WorktreeFiles, GitError> {
        let list_err = |source| GitError::List {
            root: self.root.clone(),
            source,
        };
        let index = self.repo.index().map_err(list_err)?;
        let mut files: Vec<String> = Vec::with_capacity(index.len());
        let mut not_utf8 = Vec::new();
        for entry in index.iter() {
            // Stage 0 only (a conflicted file appears once), and no submodules (gitlinks).
            let stage = (entry.flags >> 12) & 0x3;
            if stage != 0 || entry.mode == 0o160000 {
                continue;
            }
            match String::from_utf8(entry.path) {
                Ok(path) => files.push(path),
                Err(e) => not_utf8.push(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            }
        }
        let mut options = StatusOptions::new();
        options
            .show(git2::StatusShow::Workdir)
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true)
            .include_unmodified(false);
        let statuses = self.repo.statuses(Some(&mut options)).map_err(list_err)?;
        let mut deleted = Vec::new();
        for entry in statuses.iter() {
            let status = entry.status();
            let Ok(path) = entry.path() else {
                not_utf8.push(String::from_utf8_lossy(entry.path_bytes()).into_owned());
                continue;
            };
            if status.contains(Status::WT_NEW) {
                files.push(path.to_string());
            } else if status.contains(Status::WT_DELETED) {
                deleted.push(path.to_string());
            }
        }
        files.sort_unstable();
        files.dedup();
        if !deleted.is_empty() {
            deleted.sort_unstable();
            files.retain(|f| deleted.binary_search(f).is_err());
        }
        Ok(WorktreeFiles { files, not_utf8 })
    }

    /// The tree of a commit named by `rev` (a SHA or an abbreviation), or `None` when the repository does
    /// not have that commit (a shallow clone, a rewritten history, a typo).
    pub fn commit_tree(&self, rev: &str) -> Option<(Oid, Tree<'_>)> {
        let object = self.repo.revparse_single(rev).ok()?;
        let commit = object.peel_to_commit().ok()?;
        let tree = commit.tree().ok()?;
        Some((commit.id(), tree))
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
                        if e.kind() == Some(ObjectType::Blob) {
                            if let Ok(name) = e.name() {
                                found.push((format!("{path}/{dir}{name}"), e.id()));
                            }
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

/// The id git gives a blob with these bytes (what `git hash-object` prints), without touching the disk.
pub fn blob_id(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(ObjectType::Blob, bytes).ok()
}
