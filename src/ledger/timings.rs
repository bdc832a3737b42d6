//! The gate's timings sidecars on the ledger: `proof/<story>/<head>/authoritative/timings.json`, landed by
//! `aayu ship` beside the authoritative pack (not proof), read by the sharded gate's plan job to balance its
//! shards. Read from git objects alone, newest first, with bounds so that a long ledger cannot stall a plan.

use std::collections::BTreeSet;

use git2::{ObjectType, Oid, Repository, Tree};

/// How many ledger commits are looked at, at most, before giving up on finding more sidecars.
const MAX_COMMITS: usize = 2_000;

/// The most a sidecar may hold; a larger blob is skipped.
const MAX_BYTES: usize = 4 << 20;

/// The sidecar's name in an authoritative pack's folder.
const FILE: &str = "timings.json";

/// One sidecar: its path on the ledger and its bytes (not parsed here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthoritativeTimings {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The newest `limit` timings sidecars (`proof/<story>/<head>/authoritative/timings.json`) in the tree of
/// the ledger branch's tip, newest first: newest by the ledger commit that last added or changed the
/// file, following first parents from the tip (ties within one commit in path order). The walk stops once
/// `limit` are found or after 2,000 commits. Advisory packs' folders (`…/advisory/<stamp>/`) are never
/// read; a sidecar that is not a regular file (a link), or over 4 MiB, is skipped. Reads git objects only.
///
/// `ledger_ref` names the ledger branch as this clone has it. In the merge gate, `gate::inputs::fetch_pull`
/// fetches it as `refs/remotes/origin/<branch>` (`<branch>` is `[ledger] branch`, default `ledger`): pass
/// that. A short name git can resolve (`origin/ledger`, `ledger`) works too. A ref that does not exist (no
/// ledger yet) gives an empty list, and so does any git error on the way: timings only balance shards.
pub fn authoritative(
    repo: &crate::git::Repo,
    ledger_ref: &str,
    limit: usize,
) -> Vec<AuthoritativeTimings> {
    let Ok(git) = Repository::discover(repo.root()) else {
        return Vec::new();
    };
    read(&git, ledger_ref, limit, MAX_COMMITS)
}

/// [`authoritative`] on an open repository, walking at most `max_commits`.
fn read(
    git: &Repository,
    ledger_ref: &str,
    limit: usize,
    max_commits: usize,
) -> Vec<AuthoritativeTimings> {
    let mut found = Vec::new();
    if limit == 0 {
        return found;
    }
    let Some(tip) = git
        .resolve_reference_from_short_name(ledger_ref)
        .ok()
        .and_then(|r| r.peel_to_commit().ok())
    else {
        return found;
    };
    let Ok(tip_tree) = tip.tree() else {
        return found;
    };
    // Every path met, landed or not: a path's first change met walking back is its last change.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut commit = Some(tip);
    for _ in 0..max_commits {
        let Some(current) = commit.take() else {
            break;
        };
        let Ok(tree) = current.tree() else {
            break;
        };
        // A shallow or damaged history ends the walk where it ends.
        let parent = current.parent(0).ok();
        let before = parent.as_ref().and_then(|p| p.tree().ok());
        for path in changed_sidecars(git, &tree, before.as_ref()) {
            if !seen.insert(path.clone()) {
                continue;
            }
            // The tip's copy: a sidecar deleted since is not on the ledger any more.
            if let Some(bytes) = regular_blob(git, &tip_tree, &path) {
                found.push(AuthoritativeTimings { path, bytes });
                if found.len() == limit {
                    return found;
                }
            }
        }
        commit = parent;
    }
    found
}

/// The sidecar paths `tree` holds with other bytes (or mode) than `before` (nothing: every one), in path
/// order. Only the folders that differ are descended into, so an unchanged `proof/` costs one comparison.
fn changed_sidecars(git: &Repository, tree: &Tree<'_>, before: Option<&Tree<'_>>) -> Vec<String> {
    let mut paths = Vec::new();
    let Some(proof) = changed_subtree(git, tree, before, "proof") else {
        return paths;
    };
    let proof_before = before.and_then(|b| subtree(git, b, "proof"));
    for story in proof.iter() {
        let Ok(story_name) = story.name() else {
            continue;
        };
        let Some(heads) = changed_subtree(git, &proof, proof_before.as_ref(), story_name) else {
            continue;
        };
        let heads_before = proof_before
            .as_ref()
            .and_then(|b| subtree(git, b, story_name));
        for head in heads.iter() {
            let Ok(head_name) = head.name() else {
                continue;
            };
            let Some(kinds) = changed_subtree(git, &heads, heads_before.as_ref(), head_name) else {
                continue;
            };
            let kinds_before = heads_before
                .as_ref()
                .and_then(|b| subtree(git, b, head_name));
            let Some(folder) = changed_subtree(git, &kinds, kinds_before.as_ref(), "authoritative")
            else {
                continue;
            };
            let Some(entry) = folder.get_name(FILE) else {
                continue;
            };
            let then = kinds_before
                .as_ref()
                .and_then(|b| subtree(git, b, "authoritative"))
                .and_then(|f| f.get_name(FILE).map(|e| (e.id(), e.filemode())));
            if then != Some((entry.id(), entry.filemode())) {
                paths.push(format!(
                    "proof/{story_name}/{head_name}/authoritative/{FILE}"
                ));
            }
        }
    }
    paths
}

/// The folder `name` of `tree` when it is one and differs from the same folder of `before`.
fn changed_subtree<'r>(
    git: &'r Repository,
    tree: &Tree<'r>,
    before: Option<&Tree<'_>>,
    name: &str,
) -> Option<Tree<'r>> {
    let entry = tree.get_name(name)?;
    if entry.kind() != Some(ObjectType::Tree) {
        return None;
    }
    let then: Option<Oid> = before
        .and_then(|b| b.get_name(name))
        .filter(|e| e.kind() == Some(ObjectType::Tree))
        .map(|e| e.id());
    if then == Some(entry.id()) {
        return None;
    }
    git.find_tree(entry.id()).ok()
}

/// The folder `name` of `tree`, when it is one.
fn subtree<'r>(git: &'r Repository, tree: &Tree<'_>, name: &str) -> Option<Tree<'r>> {
    let entry = tree.get_name(name)?;
    if entry.kind() != Some(ObjectType::Tree) {
        return None;
    }
    git.find_tree(entry.id()).ok()
}

/// The bytes at `path` in `tree` when it is a regular file (not a link) of at most [`MAX_BYTES`]; its size
/// is read from the object's header before its bytes are.
fn regular_blob(git: &Repository, tree: &Tree<'_>, path: &str) -> Option<Vec<u8>> {
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    let regular = [
        i32::from(git2::FileMode::Blob),
        i32::from(git2::FileMode::BlobExecutable),
    ];
    if entry.kind() != Some(ObjectType::Blob) || !regular.contains(&entry.filemode()) {
        return None;
    }
    let (size, _) = git.odb().ok()?.read_header(entry.id()).ok()?;
    if size > MAX_BYTES {
        return None;
    }
    Some(git.find_blob(entry.id()).ok()?.content().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a working tree (the plan job's checkout) and a ledger branch built commit by
    /// commit, first parents only, with fixed signatures.
    struct Ledger {
        _dir: tempfile::TempDir,
        git: Repository,
        tip: Option<Oid>,
    }

    impl Ledger {
        fn new() -> Ledger {
            let dir = tempfile::tempdir().expect("temp");
            let git = Repository::init(dir.path()).expect("init");
            Ledger {
                _dir: dir,
                git,
                tip: None,
            }
        }

        /// A commit on the ledger that writes `files` (a `None` body removes the file) over the tip's tree.
        fn commit(&mut self, files: &[(&str, Option<&[u8]>)]) {
            let mut index = git2::Index::new().expect("index");
            if let Some(tip) = self.tip {
                let tree = self
                    .git
                    .find_commit(tip)
                    .expect("tip")
                    .tree()
                    .expect("tree");
                index.read_tree(&tree).expect("read tree");
            }
            for (path, body) in files {
                match body {
                    Some(bytes) => {
                        let id = self.git.blob(bytes).expect("blob");
                        index.add(&entry(path, id, 0o100644)).expect("add");
                    }
                    None => index.remove_path(std::path::Path::new(path)).expect("rm"),
                }
            }
            self.write(index);
        }

        /// A commit adding a link at `path`.
        fn link(&mut self, path: &str) {
            let mut index = git2::Index::new().expect("index");
            if let Some(tip) = self.tip {
                let tree = self
                    .git
                    .find_commit(tip)
                    .expect("tip")
                    .tree()
                    .expect("tree");
                index.read_tree(&tree).expect("read tree");
            }
            let id = self.git.blob(b"/etc/passwd").expect("blob");
            index.add(&entry(path, id, 0o120000)).expect("add");
            self.write(index);
        }

        fn write(&mut self, mut index: git2::Index) {
            let tree_id = index.write_tree_to(&self.git).expect("tree");
            let tree = self.git.find_tree(tree_id).expect("tree");
            let signature =
                git2::Signature::new("A", "a@example.com", &git2::Time::new(1_700_000_000, 0))
                    .expect("signature");
            let parent = self.tip.map(|t| self.git.find_commit(t).expect("tip"));
            let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
            let id = self
                .git
                .commit(None, &signature, &signature, "ledger", &tree, &parents)
                .expect("commit");
            self.git
                .reference("refs/remotes/origin/ledger", id, true, "test")
                .expect("ref");
            self.tip = Some(id);
        }

        fn read(&self, limit: usize) -> Vec<String> {
            read(&self.git, "refs/remotes/origin/ledger", limit, MAX_COMMITS)
                .into_iter()
                .map(|t| t.path)
                .collect()
        }
    }

    fn entry(path: &str, id: Oid, mode: u32) -> git2::IndexEntry {
        git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: 0,
            id,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        }
    }

    fn sidecar(story: u64, head: char) -> String {
        format!(
            "proof/{story}/{}/authoritative/timings.json",
            head.to_string().repeat(40)
        )
    }

    #[test]
    fn newest_first_by_the_commit_that_last_changed_each_and_the_limit_holds() {
        let mut l = Ledger::new();
        let (a, b, c) = (sidecar(1, 'a'), sidecar(2, 'b'), sidecar(3, 'c'));
        l.commit(&[(&a, Some(b"{\"a\":1}")), ("specs/1/ready.md", Some(b"r"))]);
        l.commit(&[(&b, Some(b"{\"b\":1}"))]);
        l.commit(&[(&c, Some(b"{\"c\":1}"))]);
        // `a` changes last: it is the newest, with its newest bytes.
        l.commit(&[(&a, Some(b"{\"a\":2}"))]);
        // A commit that touches no sidecar, and one that lands the same bytes again, change nothing.
        l.commit(&[("ship/1.json", Some(b"{}")), (&b, Some(b"{\"b\":1}"))]);
        assert_eq!(l.read(20), [a.clone(), c.clone(), b.clone()]);
        assert_eq!(l.read(2), [a.clone(), c.clone()]);
        assert_eq!(l.read(0), Vec::<String>::new());
        let all = read(&l.git, "refs/remotes/origin/ledger", 1, MAX_COMMITS);
        assert_eq!(all[0].bytes, b"{\"a\":2}");
        // The short name resolves too.
        assert_eq!(
            read(&l.git, "origin/ledger", 20, MAX_COMMITS).len(),
            3,
            "origin/ledger"
        );
        // Past the commit bound, the older ones are not found.
        let bounded: Vec<String> = read(&l.git, "refs/remotes/origin/ledger", 20, 2)
            .into_iter()
            .map(|t| t.path)
            .collect();
        assert_eq!(bounded, [a]);
    }

    #[test]
    fn several_in_one_commit_come_in_path_order() {
        let mut l = Ledger::new();
        let (a, b) = (sidecar(5, 'a'), sidecar(4, 'b'));
        l.commit(&[(&a, Some(b"{}")), (&b, Some(b"{}"))]);
        assert_eq!(l.read(20), [b, a]);
    }

    #[test]
    fn advisory_folders_links_oversized_and_deleted_sidecars_are_never_read() {
        let mut l = Ledger::new();
        let head = "a".repeat(40);
        let kept = sidecar(1, 'a');
        l.commit(&[
            (&kept, Some(b"{}")),
            (
                &format!("proof/1/{head}/advisory/2026-11-29T10:00:00Z/timings.json"),
                Some(b"{}"),
            ),
            (&format!("proof/1/{head}/timings.json"), Some(b"{}")),
            (
                &format!("proof/1/{head}/authoritative/artifacts/timings.json"),
                Some(b"{}"),
            ),
            ("timings.json", Some(b"{}")),
        ]);
        let big = vec![b' '; MAX_BYTES + 1];
        l.commit(&[(&sidecar(2, 'b'), Some(&big))]);
        l.link(&sidecar(3, 'c'));
        let gone = sidecar(4, 'd');
        l.commit(&[(&gone, Some(b"{}"))]);
        l.commit(&[(&gone, None)]);
        assert_eq!(l.read(20), [kept]);
    }

    #[test]
    fn a_missing_ref_gives_nothing() {
        let l = Ledger::new();
        assert!(l.read(20).is_empty());
        assert!(read(&l.git, "refs/remotes/origin/nope", 20, MAX_COMMITS).is_empty());
        // Through the public function, on a checkout.
        let repo = crate::git::Repo::discover(l.git.workdir().expect("workdir")).expect("repo");
        assert!(authoritative(&repo, "refs/remotes/origin/ledger", 20).is_empty());
    }

    #[test]
    fn the_public_function_reads_the_checkouts_ledger() {
        let mut l = Ledger::new();
        l.commit(&[(&sidecar(1, 'a'), Some(b"{\"units\":[]}"))]);
        let repo = crate::git::Repo::discover(l.git.workdir().expect("workdir")).expect("repo");
        assert_eq!(
            authoritative(&repo, "refs/remotes/origin/ledger", 20),
            [AuthoritativeTimings {
                path: sidecar(1, 'a'),
                bytes: b"{\"units\":[]}".to_vec()
            }]
        );
    }
}
