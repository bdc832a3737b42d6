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
    // The note goes on with the folders' size, which follows the build.
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

/// `cargo` on the sandbox's `PATH`, in front of the real one: it appends its first argument (`fetch`,
/// `--version`, `build`) to a log every uid may write, then runs the real cargo.
struct CargoLog {
    dir: tempfile::TempDir,
}

impl CargoLog {
    fn new() -> CargoLog {
        use std::os::unix::fs::PermissionsExt;
        let (dir, log) = common::shared_log("aayu-cargo-log-", 0o755, "log");
        // The cargo the tests' own PATH finds first (rustup's proxy, most often).
        let path = path_of(common::with_toolchain(&mut std::process::Command::new(
            "true",
        )));
        let real = std::env::split_paths(&path)
            .map(|d| d.join("cargo"))
            .find(|c| c.is_file())
            .expect("cargo on PATH");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let script = bin.join("cargo");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$1\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        )
        .expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        CargoLog { dir }
    }

    /// How many times cargo was run with `first` as its first argument.
    fn count(&self, first: &str) -> usize {
        std::fs::read_to_string(self.dir.path().join("log"))
            .expect("the log")
            .lines()
            .filter(|l| *l == first)
            .count()
    }

    /// A local `verify --check all` with this cargo first on `PATH`; it must pass.
    fn check(&self, repo: &TestRepo) -> common::Run {
        let mut cmd = repo.aayu();
        let path = path_of(common::with_toolchain(&mut cmd));
        let mut dirs = vec![self.dir.path().join("bin")];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
        let out = run(cmd.args(["verify", "--check", "all", "--out", "run"]));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        // Whatever else the report says (its timings vary), the checks passed.
        assert!(out.stdout.contains("passed"), "{}", out.stdout);
        out
    }
}

/// The `PATH` a command is given.
fn path_of(cmd: &std::process::Command) -> std::ffi::OsString {
    cmd.get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v.map(|v| v.to_os_string()))
        .expect("PATH")
}

/// `app`, with its `Cargo.lock` committed (an application's, as cargo advises).
fn app_with_lock(counter: &BuildCounter) -> TestRepo {
    let repo = app(counter);
    repo.write(
        "Cargo.lock",
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    repo.commit("the lock");
    repo
}

#[test]
fn a_second_local_check_fetches_nothing_and_asks_cargo_nothing_until_something_changed() {
    let counter = BuildCounter::new();
    let cargo = CargoLog::new();
    let repo = app_with_lock(&counter);
    cargo.check(&repo);
    assert_eq!((cargo.count("fetch"), cargo.count("--version")), (1, 1));
    cargo.check(&repo);
    assert_eq!(
        (cargo.count("fetch"), cargo.count("--version")),
        (1, 1),
        "nothing changed: no fetch, and cargo's version is known"
    );
    assert_eq!(cargo.count("build"), 2, "each run still builds");
    assert_eq!(counter.count("built"), 1);

    // A manifest that changed may need what the last fetch did not fetch.
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[features]\nextra = []\n",
    );
    cargo.check(&repo);
    assert_eq!(cargo.count("fetch"), 2, "a changed manifest is fetched for");
    cargo.check(&repo);
    assert_eq!(cargo.count("fetch"), 2);

    // Another cargo on PATH (here: the same one, changed) is asked again.
    let script = cargo.dir.path().join("bin/cargo");
    let text = std::fs::read_to_string(&script).expect("read");
    std::fs::write(&script, format!("{text}# changed\n")).expect("write");
    cargo.check(&repo);
    assert_eq!(cargo.count("--version"), 2, "a changed cargo is run again");

    if common::is_root() {
        // The kept cargo home is used as the fetch sealed it, and only so: one a hand made writable is
        // emptied and fetched into again, then sealed.
        let home = kept(&repo).expect("a kept folder").join("cargo-home");
        let sealed = || {
            let meta = std::fs::symlink_metadata(&home).expect("the cargo home");
            (meta.uid(), meta.mode() & 0o7777)
        };
        assert_eq!(sealed(), (0, 0o555));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        cargo.check(&repo);
        assert_eq!(
            cargo.count("fetch"),
            3,
            "an unsealed cargo home is fetched into again"
        );
        assert_eq!(sealed(), (0, 0o555));
    }
}

/// As root: a link planted in place of the repository's folder or of a uid's leaf is refused with its
/// path and the fix, never followed; `aayu clean` removes the link (not what it points to), and the next
/// run builds again.
#[test]
fn as_root_a_planted_link_in_the_build_folders_is_refused_and_clean_removes_it() {
    if !common::is_root() {
        return;
    }
    let counter = BuildCounter::new();
    let repo = app(&counter);
    check(&repo);
    let folder = kept(&repo).expect("a kept folder");
    let leaf = std::fs::read_dir(&folder)
        .expect("leaves")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .expect("a uid's leaf");
    let elsewhere = tempfile::tempdir().expect("temp");
    let decoy = elsewhere.path().join("decoy");
    std::fs::create_dir(&decoy).expect("mkdir");
    std::fs::write(decoy.join("kept.txt"), "not aayu's").expect("write");
    // A uid's leaf blocks the check that would build there (exit 3); the repository's folder stops the
    // run before anything runs (exit 1).
    for (planted, code, prefix) in [
        (leaf.clone(), 3, "blocked: "),
        (folder.clone(), 1, "error: "),
    ] {
        if planted.is_dir() {
            std::fs::remove_dir_all(&planted).expect("remove");
        } else {
            std::fs::remove_file(&planted).expect("remove");
        }
        std::os::unix::fs::symlink(&decoy, &planted).expect("symlink");
        let out = run(common::with_toolchain(&mut repo.aayu())
            .args(["verify", "--check", "all", "--out", "run"]));
        let said = format!("{}{}", out.stdout, out.stderr);
        assert_eq!(out.code, code, "{said}");
        // A line of the report or the error, among the build's progress log.
        assert!(
            said.contains(&format!(
                "{prefix}the build folder `{}` is refused: it is a symbolic link. Remove it (`aayu clean`, or by hand) and run again",
                planted.display()
            )),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(decoy.join("kept.txt")).expect("the decoy"),
            "not aayu's"
        );
        let cleaned = run(repo.aayu().arg("clean"));
        assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
        assert!(
            std::fs::symlink_metadata(&folder).is_err(),
            "the repository's folder is gone"
        );
        assert!(
            decoy.join("kept.txt").is_file(),
            "what a link pointed to is left alone"
        );
        check(&repo);
    }
}
