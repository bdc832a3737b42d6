//! The bounds a pull request's maps and product code cannot get past (issue 28, in part): a surface rule
//! whose compiled program is too large, too many or too long handles, a hard-linked artifact, and the
//! sandbox's uid locks where nothing can be planted.

use crate::common;
use crate::common::hostile::hostile;
use crate::common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

/// The documented bounds of one map's handles (docs/security.md).
const MAX_HANDLES: usize = 4096;
const MAX_HANDLE_LEN: usize = 512;
const MAX_HANDLE_BYTES: usize = 256 << 10;

/// A map of product `shop` with these surface rules and one feature whose check has these steps.
fn map_repo(rules: &str, steps: &str) -> TestRepo {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    let block = r#"{"id": "f", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#;
    let check =
        format!(r#"{{"id": "c", "kind": "ui", "evidence": "screenshot", "steps": {steps}}}"#);
    repo.write("src/main.rs", "fn main() {}\n")
        .write(
            &format!("{dir}/README.md"),
            map_readme(
                &format!(
                    r#"{{"product": "shop", "control": ["aayu", "control"],
 "surfaces": {rules}}}"#
                ),
                &["f.md"],
            ),
        )
        .write(&format!("{dir}/f.md"), feature_md(block, &[&check]));
    repo.commit("map");
    repo
}

#[test]
fn a_surface_rule_over_the_size_limit_is_a_contract_error_at_its_line() {
    let repo = map_repo(
        r#"[{"kind": "func", "files": ["src/*.rs"], "pattern": "\\w*a\\w{200}(\\s)"}]"#,
        "[]",
    );
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    let line = said
        .lines()
        .find(|l| l.contains("compiles to more than"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        line.contains(".agents/skills/verify-shop/features/README.md:")
            && line.contains(
                "`surfaces[0].pattern` compiles to more than 512 KiB, the limit of one surface rule"
            ),
        "{line}"
    );
    // An ordinary rule of the same map compiles.
    let repo = map_repo(
        r#"[{"kind": "func", "files": ["src/*.rs"], "pattern": "(?m)^fn (\\w+)\\("}]"#,
        "[]",
    );
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_ne!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn too_many_too_long_or_too_large_handles_are_contract_errors() {
    let steps = |handles: &[String]| {
        let steps: Vec<String> = handles
            .iter()
            .map(|h| format!(r#"{{"click": {{"test": "{h}"}}}}"#))
            .collect();
        format!("[{}]", steps.join(", "))
    };
    let many: Vec<String> = (0..=MAX_HANDLES).map(|i| format!("h{i}")).collect();
    let large: Vec<String> = (0..600)
        .map(|i| format!("{i:03}{}", "x".repeat(497)))
        .collect();
    let cases = [
        (
            steps(&many),
            format!(
                ".agents/skills/verify-shop/features/README.md:1: the map's checks name {} handles of ",
                MAX_HANDLES + 1
            ),
        ),
        (
            steps(&["y".repeat(MAX_HANDLE_LEN + 1)]),
            format!(
                "a `test` handle of `click` is {} bytes long: a handle names an element in at most {MAX_HANDLE_LEN} bytes",
                MAX_HANDLE_LEN + 1
            ),
        ),
        (
            steps(&large),
            format!(
                "the map's checks name 600 handles of 300000 bytes in all: at most {MAX_HANDLES} handles and {} KiB per map",
                MAX_HANDLE_BYTES >> 10
            ),
        ),
    ];
    for (steps, expected) in cases {
        let repo = map_repo("[]", &steps);
        let out = common::run_within(
            repo.aayu().args(["verify", "--map"]),
            std::time::Duration::from_secs(60),
        );
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(said.contains(&expected), "{expected}\n{said}");
    }
}

#[test]
fn a_hard_linked_artifact_is_refused() {
    crate::needs!(perl);
    let repo = hostile(&["hardlinks"], "{}");
    let out = run(repo.aayu().args([
        "verify",
        "--check",
        "hostile.hardlinks",
        "--json",
        "--out",
        "run",
    ]));
    let report: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr));
    let check = &report["checks"][0];
    assert_eq!(check["status"], "blocked", "{report:#}");
    assert_eq!(
        check["reason"],
        "artifact \"linked.txt\": has 2 hard links: copy the file into `out` instead of linking it"
    );
}

#[test]
fn nothing_planted_where_the_uid_locks_live_is_used() {
    crate::needs!(perl);
    if !common::root_or_skip("nothing_planted_where_the_uid_locks_live_is_used") {
        return;
    }
    let repo = hostile(&["passes"], "{}");
    let locks = tempfile::tempdir().expect("temp");
    let dir = locks.path().join("locks");
    let check = |dir: &std::path::Path| {
        run(repo.aayu().env("AAYUDHA_LOCK_DIR", dir).args([
            "verify",
            "--check",
            "hostile.passes",
            "--json",
            "--out",
            "run",
        ]))
    };
    // Made as it should be: root's, 0700, and used.
    let out = check(&dir);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let meta = std::fs::symlink_metadata(&dir).expect("made");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!((meta.uid(), meta.permissions().mode() & 0o777), (0, 0o700));
    // A FIFO and a link in a lock file's place, a folder others may write, a link for the folder.
    let first = dir.join("aayu-sandbox-uid-61000.lock");
    std::fs::remove_file(&first).expect("rm");
    nix::unistd::mkfifo(&first, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
    let out = check(&dir);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "the sandbox's uid lock `{}` is not a regular file",
            first.display()
        )),
        "{}",
        out.stderr
    );
    std::fs::remove_file(&first).expect("rm");
    std::os::unix::fs::symlink("/etc/passwd", &first).expect("link");
    let out = check(&dir);
    assert!(
        out.code == 1
            && out.stderr.contains(&format!(
                "the sandbox's uid lock `{}` is a symbolic link",
                first.display()
            )),
        "{}",
        out.stderr
    );
    std::fs::remove_file(&first).expect("rm");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = check(&dir);
    assert!(
        out.code == 1
            && out
                .stderr
                .contains("must be owned by root and writable by root only"),
        "{}",
        out.stderr
    );
    let elsewhere = locks.path().join("elsewhere");
    std::os::unix::fs::symlink(&dir, &elsewhere).expect("link");
    let out = check(&elsewhere);
    assert!(
        out.code == 1 && out.stderr.contains("is not a folder (a link, or a file)"),
        "{}",
        out.stderr
    );
}
