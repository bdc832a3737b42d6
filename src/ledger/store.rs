//! The ledger branch as a store: read files from it, and add files to it in one commit, built with git2
//! straight into the object database — the user's working tree, index and HEAD are never touched — and
//! pushed to `origin` without force. A push refused as non-fast-forward (another writer got there first)
//! is rebuilt on the new tip and tried again, so two concurrent writers both land and lose nothing.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{FileMode, ObjectType, Oid, Repository, Signature};

use crate::git::{Network, git_program};

/// Why the ledger could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot open the repository at `{0}`")]
    Open(String, #[source] git2::Error),
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("cannot run git: {0}")]
    Program(#[from] std::io::Error),
    #[error("cannot fetch the `{branch}` branch from origin: {stderr}")]
    Fetch { branch: String, stderr: String },
    #[error("cannot push the `{branch}` branch to origin: {stderr}")]
    Push { branch: String, stderr: String },
    #[error("another writer kept moving the `{0}` branch; gave up after {1} tries")]
    Contended(String, u32),
    #[error("`{0}` is checked out here: aayu never writes the branch under your working tree")]
    CheckedOut(String),
    #[error("`{path}` already holds other bytes on the `{branch}` branch")]
    Conflict { branch: String, path: String },
}

/// How many times a write is rebuilt on a moved tip before giving up.
/// How a push that lost a race is retried.
const RETRY: crate::retry::Policy = crate::retry::PUSH;

/// Who a ledger commit is by (SPEC §6: git's `user.name`/`user.email`, else the GitHub login).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

/// What to do when a path to write is already on the branch with other bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse the whole write (e.g. a Ready snapshot without `--refreeze`).
    Refuse,
    /// Replace it.
    Replace,
}

/// The ledger branch of a repository.
pub struct Ledger {
    repo: Repository,
    root: std::path::PathBuf,
    branch: String,
    network: Network,
    has_origin: bool,
    /// Written and read on the local branch only, never fetched or pushed (`aayu ready --file`).
    local_only: bool,
}

impl Ledger {
    pub fn open(root: &Path, branch: &str, network: Network) -> Result<Ledger, LedgerError> {
        let repo = Repository::discover(root)
            .map_err(|e| LedgerError::Open(root.display().to_string(), e))?;
        let has_origin = repo.find_remote("origin").is_ok();
        let root = repo
            .workdir()
            .map_or_else(|| repo.path().to_path_buf(), Path::to_path_buf);
        Ok(Ledger {
            repo,
            root,
            branch: branch.to_string(),
            network,
            has_origin,
            local_only: false,
        })
    }

    /// The ledger branch of this clone alone: read and written on the local branch, never fetched or
    /// pushed, so it needs no network. A local branch that does not exist yet starts from origin's copy
    /// as last fetched, when there is one, so that pushing it later adds to origin's history.
    pub fn open_local(root: &Path, branch: &str) -> Result<Ledger, LedgerError> {
        let mut ledger = Ledger::open(root, branch, Network::default())?;
        ledger.local_only = true;
        Ok(ledger)
    }

    fn remote_ref(&self) -> String {
        format!("refs/remotes/origin/{}", self.branch)
    }

    fn local_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// Fetches the branch from `origin` when there is one; a branch origin does not have yet is fine.
    pub fn fetch(&self) -> Result<(), LedgerError> {
        if !self.has_origin || self.local_only {
            return Ok(());
        }
        let refspec = format!("+refs/heads/{}:{}", self.branch, self.remote_ref());
        let out = git_program(
            &self.root,
            &self.network,
            &["fetch", "--no-tags", "--quiet", "origin", &refspec],
        )?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if !out.status.success() && !stderr.contains("couldn't find remote ref") {
            return Err(LedgerError::Fetch {
                branch: self.branch.clone(),
                stderr,
            });
        }
        if !out.status.success() {
            // Origin has no ledger (yet): forget a stale copy of it.
            if let Ok(mut r) = self.repo.find_reference(&self.remote_ref()) {
                let _ = r.delete();
            }
        }
        Ok(())
    }

    /// The commit the ledger is read from: origin's copy when there is an origin, else the local branch.
    pub fn tip(&self) -> Option<Oid> {
        let at = |name: &str| {
            self.repo
                .find_reference(name)
                .ok()
                .and_then(|r| r.peel_to_commit().ok())
                .map(|c| c.id())
        };
        if self.local_only {
            return at(&self.local_ref()).or_else(|| at(&self.remote_ref()));
        }
        if self.has_origin {
            at(&self.remote_ref())
        } else {
            at(&self.local_ref())
        }
    }

    /// A file's bytes on the ledger, or `None`.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        let Some(tip) = self.tip() else {
            return Ok(None);
        };
        let tree = self.repo.find_commit(tip)?.tree()?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        if entry.kind() != Some(ObjectType::Blob) {
            return Ok(None);
        }
        Ok(Some(self.repo.find_blob(entry.id())?.content().to_vec()))
    }

    /// Every file under a folder of the ledger (recursively), as paths relative to the ledger's root.
    pub fn list(&self, folder: &str) -> Result<Vec<String>, LedgerError> {
        let Some(tip) = self.tip() else {
            return Ok(Vec::new());
        };
        let tree = self.repo.find_commit(tip)?.tree()?;
        let sub = match tree.get_path(Path::new(folder)) {
            Ok(entry) if entry.kind() == Some(ObjectType::Tree) => {
                self.repo.find_tree(entry.id())?
            }
            _ => return Ok(Vec::new()),
        };
        let mut found = Vec::new();
        sub.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Blob)
                && let Ok(name) = entry.name()
            {
                found.push(format!("{folder}/{dir}{name}"));
            }
            git2::TreeWalkResult::Ok
        })?;
        found.sort();
        Ok(found)
    }

    /// Adds `files` to the branch in one commit and pushes it (when there is an origin). Files already
    /// there with the same bytes are no change; when nothing changes no commit is made (a repeated write
    /// completes without duplicating anything). Answers the ledger's tip afterwards.
    pub fn write(
        &self,
        files: &BTreeMap<String, Vec<u8>>,
        existing: Existing,
        message: &str,
        author: &Author,
    ) -> Result<Oid, LedgerError> {
        if let Ok(head) = self.repo.head()
            && head.name().ok() == Some(self.local_ref().as_str())
            && !self.repo.is_bare()
        {
            return Err(LedgerError::CheckedOut(self.branch.clone()));
        }
        for attempt in 0..RETRY.attempts {
            self.fetch()?;
            let parent = self.tip();
            let Some(commit) = self.commit_on(parent, files, existing, message, author)? else {
                return Ok(parent.unwrap_or(Oid::ZERO_SHA1));
            };
            if !self.has_origin || self.local_only {
                self.repo
                    .reference(&self.local_ref(), commit, true, "aayu: ledger write")?;
                return Ok(commit);
            }
            let refspec = format!("{commit}:refs/heads/{}", self.branch);
            let out = git_program(
                &self.root,
                &self.network,
                &["push", "--quiet", "--porcelain", "origin", &refspec],
            )?;
            if out.status.success() {
                self.repo
                    .reference(&self.remote_ref(), commit, true, "aayu: ledger pushed")?;
                // The local branch follows, unless the user's own commits are on it.
                let local_behind = match self.repo.find_reference(&self.local_ref()) {
                    Ok(r) => r.target().is_some_and(|t| {
                        t == commit || self.repo.graph_descendant_of(commit, t).unwrap_or(false)
                    }),
                    Err(_) => true,
                };
                if local_behind {
                    let _ =
                        self.repo
                            .reference(&self.local_ref(), commit, true, "aayu: ledger pushed");
                }
                return Ok(commit);
            }
            let stderr = String::from_utf8_lossy(&out.stderr).to_string()
                + &String::from_utf8_lossy(&out.stdout);
            // Another writer got there first (or holds the ref's lock this instant): rebuild and retry.
            let moved = stderr.contains("non-fast-forward")
                || stderr.contains("fetch first")
                || stderr.contains("[rejected]")
                || stderr.contains("stale info")
                || stderr.contains("cannot lock ref")
                || stderr.contains("failed to update ref");
            if !moved {
                return Err(LedgerError::Push {
                    branch: self.branch.clone(),
                    stderr: stderr.trim().to_string(),
                });
            }
            // Back off a little, at random, so that racing writers spread out.
            RETRY.wait(attempt, None);
        }
        Err(LedgerError::Contended(self.branch.clone(), RETRY.attempts))
    }

    /// A commit adding `files` on top of `parent`, or `None` when it would change nothing.
    fn commit_on(
        &self,
        parent: Option<Oid>,
        files: &BTreeMap<String, Vec<u8>>,
        existing: Existing,
        message: &str,
        author: &Author,
    ) -> Result<Option<Oid>, LedgerError> {
        let parent_commit = parent.map(|p| self.repo.find_commit(p)).transpose()?;
        let base_tree = parent_commit.as_ref().map(git2::Commit::tree).transpose()?;
        let mut tree = base_tree.as_ref().map(git2::Tree::id);
        let mut changed = false;
        for (path, bytes) in files {
            let blob = self.repo.blob(bytes)?;
            let current = tree
                .map(|t| self.repo.find_tree(t))
                .transpose()?
                .and_then(|t| t.get_path(Path::new(path)).ok().map(|e| e.id()));
            match current {
                Some(id) if id == blob => continue,
                Some(_) if existing == Existing::Refuse => {
                    return Err(LedgerError::Conflict {
                        branch: self.branch.clone(),
                        path: path.clone(),
                    });
                }
                _ => {}
            }
            let parts: Vec<&str> = path.split('/').collect();
            tree = Some(self.insert(tree, &parts, blob)?);
            changed = true;
        }
        if !changed {
            return Ok(None);
        }
        let tree = self.repo.find_tree(tree.expect("a tree after a change"))?;
        let signature = Signature::now(&author.name, &author.email)?;
        let parents: Vec<&git2::Commit<'_>> = parent_commit.iter().collect();
        Ok(Some(self.repo.commit(
            None, &signature, &signature, message, &tree, &parents,
        )?))
    }

    /// The tree `base` with the blob at `parts` (creating folders), as a new tree id.
    fn insert(&self, base: Option<Oid>, parts: &[&str], blob: Oid) -> Result<Oid, LedgerError> {
        let base_tree = base.map(|t| self.repo.find_tree(t)).transpose()?;
        let mut builder = self.repo.treebuilder(base_tree.as_ref())?;
        match parts {
            [name] => {
                builder.insert(name, blob, FileMode::Blob.into())?;
            }
            [folder, rest @ ..] => {
                let sub = base_tree
                    .as_ref()
                    .and_then(|t| t.get_name(folder))
                    .filter(|e| e.kind() == Some(ObjectType::Tree))
                    .map(|e| e.id());
                let id = self.insert(sub, rest, blob)?;
                builder.insert(folder, id, FileMode::Tree.into())?;
            }
            [] => unreachable!("a path has at least one part"),
        }
        Ok(builder.write()?)
    }

    /// The author of ledger commits: git's `user.name`/`user.email` when set, else the GitHub login.
    pub fn author(&self, login: &str, id: u64) -> Author {
        self.git_author().unwrap_or_else(|| Author {
            name: login.to_string(),
            email: format!("{id}+{login}@users.noreply.github.com"),
        })
    }

    /// git's `user.name` and `user.email`, when both are set.
    pub fn git_author(&self) -> Option<Author> {
        let config = self.repo.config().ok()?;
        let get = |key: &str| config.get_string(key).ok().filter(|v| !v.trim().is_empty());
        Some(Author {
            name: get("user.name")?,
            email: get("user.email")?,
        })
    }
}

/// A ledger error: exit 1, with a hint where there is one.
impl crate::failure::Diagnose for LedgerError {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Failure
    }

    fn hint(&self) -> Option<String> {
        let hint = match self {
            LedgerError::Push { .. } | LedgerError::Fetch { .. } => {
                "check that the token may write to the repository (contents: write) and that `origin` is reachable"
            }
            LedgerError::CheckedOut(_) => "switch to another branch first",
            _ => return None,
        };
        Some(hint.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().expect("temp");
        Repository::init(dir.path()).expect("init");
        let ledger = Ledger::open(dir.path(), "ledger", Network::default()).expect("open");
        (dir, ledger)
    }

    fn author() -> Author {
        Author {
            name: "A".into(),
            email: "a@example.com".into(),
        }
    }

    #[test]
    fn files_land_in_nested_folders_and_a_repeat_changes_nothing() {
        let (_dir, ledger) = repo();
        let files: BTreeMap<String, Vec<u8>> = [
            (crate::story::ready_path(7), b"ready".to_vec()),
            (
                "proof/7/abc/advisory/x/pack.json".to_string(),
                b"{}".to_vec(),
            ),
        ]
        .into();
        let first = ledger
            .write(&files, Existing::Refuse, "one", &author())
            .expect("write");
        assert_eq!(
            ledger.read(&crate::story::ready_path(7)).expect("read"),
            Some(b"ready".to_vec())
        );
        assert_eq!(
            ledger.list("proof/7").expect("list"),
            ["proof/7/abc/advisory/x/pack.json"]
        );
        let again = ledger
            .write(&files, Existing::Refuse, "two", &author())
            .expect("repeat");
        assert_eq!(first, again, "no second commit");
        let other: BTreeMap<String, Vec<u8>> =
            [(crate::story::ready_path(7), b"changed".to_vec())].into();
        assert!(matches!(
            ledger.write(&other, Existing::Refuse, "three", &author()),
            Err(LedgerError::Conflict { .. })
        ));
        ledger
            .write(&other, Existing::Replace, "three", &author())
            .expect("replace");
        assert_eq!(
            ledger.read(&crate::story::ready_path(7)).expect("read"),
            Some(b"changed".to_vec())
        );
        assert_eq!(
            ledger
                .read("proof/7/abc/advisory/x/pack.json")
                .expect("read"),
            Some(b"{}".to_vec()),
            "the rest of the tree is kept"
        );
    }
}
