//! Build folders: a local `verify --check` keeps its cargo target folder between runs (a second run
//! builds nothing), `aayu clean` removes it, and the gate never reuses one. A build script that appends
//! to a file outside the target folder counts how often the crate was really built.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::common::{self, BuildCounter, TestRepo, feature_md, map_readme, run, skill};

/// A crate `app` whose build script appends a line to `counter`, and a map whose check builds and runs it.
fn app(counter: &BuildCounter) -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .write("build.rs", counter.build_script("built", &["build.rs"]))
    .write("src/main.rs", "fn main() {\n    println!(\"7\");\n}\n")
    .write(".gitignore", "/target\n/run/\n.aayudha/runs/\n.aayudha/proof/\n")
    .write(".aayudha/config.toml", "")
    .write(
        &format!("{}/README.md", skill("", "app")),
        map_readme(
            r#"{"product": "app", "control": ["aayu", "control"], "surfaces": []}"#,
            &["prints.md"],
        ),
    )
    .write(
        &format!("{}/prints.md", skill("", "app")),
        feature_md(
            r#"{"id": "prints", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#,
            &[r#"{"id": "seven", "kind": "cli", "evidence": "api-trace", "steps": [
  {"build": "."},
  {"run": ["app"], "exit": 0, "stdout": ["7"]}
]}"#],
        ),
    );
    repo.commit("app");
    repo
}

fn check(repo: &TestRepo) -> common::Run {
    let out =
        run(common::with_toolchain(&mut repo.aayu())
            .args(["verify", "--check", "all", "--out", "run"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out
}

/// The one folder kept for the repository (`<cache>/<repo-key>`).
fn kept(repo: &TestRepo) -> Option<PathBuf> {
    let entries: Vec<PathBuf> = std::fs::read_dir(common::build_cache(repo.root()))
        .ok()?
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(entries.len() <= 1, "one folder per repository: {entries:?}");
    entries.into_iter().next()
}

#[test]
fn a_local_check_keeps_its_build_folder_and_clean_removes_it() {
    let counter = BuildCounter::new();
    let repo = app(&counter);
    check(&repo);
    check(&repo);
    assert_eq!(counter.count("built"), 1, "the second run built nothing");
    let folder = kept(&repo).expect("a kept folder");
    if common::is_root() {
        // Root's folders on the way, `0711`; the leaf the sandbox uid's own, `0700`.
        for dir in [common::build_cache(repo.root()), folder.clone()] {
            let meta = std::fs::symlink_metadata(&dir).expect("stat");
            assert_eq!(
                (meta.uid(), meta.mode() & 0o7777),
                (0, 0o711),
                "{}",
                dir.display()
            );
        }
        // Beside the uids' leaves: the cargo home kept at one path for the repository, sealed (root's).
        let entries: Vec<_> = std::fs::read_dir(&folder)
            .expect("leaves")
            .map(|e| e.expect("entry"))
            .collect();
        let leaves: Vec<_> = entries
            .iter()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .collect();
        assert_eq!(leaves.len(), 1, "one leaf: one slot ran the check");
        let home = std::fs::symlink_metadata(folder.join("cargo-home")).expect("the cargo home");
        assert!(home.is_dir() && home.uid() == 0, "sealed: root's");
        let meta = std::fs::symlink_metadata(leaves[0].path()).expect("stat");
        assert_ne!(meta.uid(), 0);
        assert_eq!(meta.mode() & 0o7777, 0o700);
        assert_eq!(
            leaves[0].file_name().to_string_lossy(),
            meta.uid().to_string()
        );
    }
    let doctor = run(repo.aayu().arg("doctor"));
    assert!(
        doctor.stderr.contains(&format!(
            "note: local checks keep their build folders in `{}` (",
            folder.display()
        )),
        "{}",
        doctor.stderr
    );
    let cleaned = run(repo.aayu().arg("clean"));
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(
        cleaned
            .stdout
            .starts_with(&format!("removed `{}` (", folder.display())),
        "{}",
        cleaned.stdout
    );
    assert!(!folder.exists());
    let again = run(repo.aayu().arg("clean"));
    assert_eq!(
        again.stdout,
        format!(
            "nothing to remove: no build folder is kept for `{}`\n",
            repo.root().display()
        )
    );
    check(&repo);
    assert_eq!(
        counter.count("built"),
        2,
        "after clean, the crate is built again"
    );
}

#[test]
fn the_gate_never_reuses_a_build_folder() {
    let counter = BuildCounter::new();
    let repo = app(&counter);
    let base = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write(
        "src/main.rs",
        "fn main() {\n    // seven, still\n    println!(\"7\");\n}\n",
    );
    let head = repo.commit("a comment");
    for _ in 0..2 {
        let out = run(common::with_toolchain(&mut repo.aayu())
            .args(["verify", "--ci", "--base", &base, "--head", &head, "--json"]));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    }
    assert_eq!(
        counter.count("built"),
        2,
        "each gate run built the crate itself"
    );
    assert_eq!(kept(&repo), None, "the gate keeps no folder");
}
