//! Nothing a pull request wrote runs, is followed, or configures the gate as root (SPEC §4): hostile
//! checkouts through the real binary, as root. Each fixture plants what an attacker would — a cargo
//! `rustc-wrapper` in the checkout and in the temp folder, a toolchain by `path`, a `go.work` asking for
//! another Go, links to secrets and to `/dev/zero`, a linked `.aayudha/proof` — and the tests assert what a
//! user relies on: a planted program never ran as uid 0, no secret's text reaches any output, nothing is
//! written through a link.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{TestRepo, feature_md, map_readme, ready, run, shared_dir, skill};
use serde_json::Value;

fn write_exe(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A program of the test's own `PATH` (with the Rust toolchain in front, as `with_toolchain` sets it).
fn real(program: &str) -> PathBuf {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map_or_else(|| home.join(".cargo"), PathBuf::from)
        .join("bin");
    std::iter::once(cargo_bin)
        .chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{program}` is not installed"))
}

/// Shims in front of the real `cargo`, `rustup`, `rustc` and `go` that log `<uid> <program> <cwd>` to
/// `calls.log` in `shared` and run the real program: every toolchain process aayu starts, directly or in
/// the sandbox, leaves a line.
fn shims(shared: &Path) -> PathBuf {
    let dir = shared.join("shims");
    let log = shared.join("calls.log");
    std::fs::write(&log, "").expect("log");
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    for program in ["cargo", "rustup", "rustc", "go"] {
        write_exe(
            &dir.join(program),
            &format!(
                "#!/bin/sh\necho \"$(id -u) {program} $PWD\" >> {}\nexec {} \"$@\"\n",
                log.display(),
                real(program).display()
            ),
        );
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// `aayu` with the toolchain, the shims first on `PATH`, and `TMPDIR` in the shared folder.
fn aayu(repo: &TestRepo, shared: &Path) -> std::process::Command {
    let mut cmd = repo.aayu();
    common::with_toolchain(&mut cmd);
    let path = std::env::join_paths(
        std::iter::once(shared.join("shims")).chain(std::env::split_paths(
            &cmd.get_envs()
                .find(|(k, _)| *k == "PATH")
                .and_then(|(_, v)| v.map(ToOwned::to_owned))
                .unwrap_or_default(),
        )),
    )
    .expect("PATH");
    let tmp = shared.join("tmp");
    std::fs::create_dir_all(&tmp).expect("mkdir");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    cmd.env("PATH", path).env("TMPDIR", tmp);
    cmd
}

/// The lines of `calls.log` whose uid is 0: toolchain processes that ran as root.
fn root_calls(shared: &Path) -> Vec<String> {
    std::fs::read_to_string(shared.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("0 "))
        .map(str::to_string)
        .collect()
}

const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n";

fn rust_package(repo: &TestRepo, dir: &str, name: &str) {
    repo.write(
        &format!("{dir}/Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"
        ),
    )
    .write(&format!("{dir}/src/lib.rs"), LIB);
}

fn floor<'a>(pack: &'a Value, name: &str) -> &'a Value {
    pack["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["floor"] == name)
        .unwrap_or_else(|| panic!("no floor {name}: {pack:#}"))
}

/// A checkout's `.cargo/config.toml` and one a check's control tool plants in the temp folder both name a
/// `rustc-wrapper`; rustup and go were once asked about the checkout as root. Every toolchain process now
/// runs as a sandbox uid: the wrapper ran (the checkout's config is honoured inside the sandbox), never as
/// root, and the fetch wrote the missing `Cargo.lock` as the sandbox uid without leaving the checkout
/// writable.
#[test]
fn planted_cargo_configs_and_toolchain_questions_never_run_as_root() {
    if !common::root_or_skip("planted_cargo_configs_and_toolchain_questions_never_run_as_root") {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    shims(s);
    let wrapper = s.join("wrapper.sh");
    std::fs::write(s.join("wrapper.log"), "").expect("log");
    std::fs::set_permissions(
        s.join("wrapper.log"),
        std::fs::Permissions::from_mode(0o666),
    )
    .expect("chmod");
    write_exe(
        &wrapper,
        &format!(
            "#!/bin/sh\nif [ \"$(id -u)\" = 0 ]; then echo root > {s}/ROOT-wrapper; fi\necho \"$(id -u)\" >> {s}/wrapper.log\nexec \"$@\"\n",
            s = s.display()
        ),
    );
    let repo = TestRepo::new();
    rust_package(&repo, "pkg", "pkg");
    repo.write(
        ".cargo/config.toml",
        format!("[build]\nrustc-wrapper = \"{}\"\n", wrapper.display()),
    );
    // A cli check whose control tool plants a cargo config in the temp folder, where aayu once ran
    // `cargo fetch` as root.
    let planted = s.join("tmp/.cargo/config.toml");
    let control = format!(
        "#!/bin/sh\ncat > /dev/null\nmkdir -p {dir}\nprintf '[build]\\nrustc-wrapper = \"{w}\"\\n' > {file}\necho '{{\"status\": \"passed\", \"reason\": \"planted\"}}'\n",
        dir = planted.parent().expect("dir").display(),
        w = wrapper.display(),
        file = planted.display()
    );
    let dir = skill("", "lib");
    repo.write(
        &format!("{dir}/README.md"),
        map_readme(
            r#"{"product": "lib", "control": ["sh", ".agents/skills/verify-lib/control/plant.sh"], "surfaces": []}"#,
            &["plant.md"],
        ),
    )
    .write(
        &format!("{dir}/plant.md"),
        feature_md(
            r#"{"id": "plant", "layers": [], "sources": ["pkg/src/lib.rs"], "surfaces": {}, "verified_at": ""}"#,
            &[r#"{"id": "writes", "kind": "cli", "evidence": "report", "steps": []}"#],
        ),
    )
    .write(".agents/skills/verify-lib/control/plant.sh", &control)
    .write(
        ".aayudha/evidence/77.toml",
        "[[criterion]]\nid = 1\ntests = [\"pkg:tests::adds\"]\n",
    );
    let base = repo.commit("base");
    repo.write("pkg/src/lib.rs", format!("{LIB}\n// changed\n"));
    let head = repo.commit("change the library");
    let snapshot = ready(&repo, 77, "1. It adds.", &["type:bug"]);

    let out = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "77", "--ready", &snapshot,
        "--json",
    ]));
    let pack: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    assert!(planted.exists(), "the control tool ran: {pack:#}");
    assert_eq!(
        root_calls(s),
        Vec::<String>::new(),
        "toolchain processes ran as root"
    );
    assert!(
        !s.join("ROOT-wrapper").exists(),
        "the planted wrapper ran as root"
    );
    let ran_as: Vec<String> = std::fs::read_to_string(s.join("wrapper.log"))
        .expect("the checkout's wrapper ran in the sandbox")
        .lines()
        .map(str::to_string)
        .collect();
    assert!(
        ran_as
            .iter()
            .all(|uid| uid.parse::<u32>().is_ok_and(|u| u >= 61000)),
        "{ran_as:?}"
    );
    assert_eq!(
        floor(&pack, "tests")["result"],
        "pass",
        "{pack:#}\n{}",
        out.stderr
    );
    assert_eq!(floor(&pack, "behaviour")["result"], "pass", "{pack:#}");
    // The checkout commits no lock: the one the fetch resolved is said in the report and removed at the end.
    insta::assert_snapshot!(
        "uncommitted_lock_detail",
        common::redact(floor(&pack, "tests")["detail"].as_str().unwrap_or_default())
    );
    assert!(
        !repo.path("pkg/Cargo.lock").exists(),
        "the run's own lock is removed when it ends"
    );
}

/// A toolchain file naming a toolchain by `path`, or a channel the machine lacks, blocks the tests floor
/// with the file named; the path toolchain never runs (as root or at all).
#[test]
fn a_toolchain_by_path_or_missing_blocks_and_never_runs() {
    if !common::root_or_skip("a_toolchain_by_path_or_missing_blocks_and_never_runs") {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    shims(s);
    for tool in ["cargo", "rustc"] {
        write_exe(
            &s.join(format!("evil/bin/{tool}")),
            &format!("#!/bin/sh\ntouch {}/EVIL-$(id -u)\nexit 1\n", s.display()),
        );
    }
    let repo = TestRepo::new();
    rust_package(&repo, "by-path", "by_path");
    rust_package(&repo, "old", "old");
    repo.write(
        "by-path/rust-toolchain.toml",
        format!("[toolchain]\npath = \"{}\"\n", s.join("evil").display()),
    )
    .write("old/rust-toolchain.toml", "[toolchain]\nchannel = \"1.2.3\"\n")
    .write(
        ".aayudha/evidence/78.toml",
        "[[criterion]]\nid = 1\ntests = [\"by-path:tests::adds\"]\n\n[[criterion]]\nid = 2\ntests = [\"old:tests::adds\"]\n",
    );
    let base = repo.commit("base");
    let head = repo.commit("head");
    let snapshot = ready(&repo, 78, "1. It adds.\n2. It adds too.", &[]);
    let out = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "78", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let evil: Vec<_> = std::fs::read_dir(s)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("EVIL-"))
        .collect();
    assert!(evil.is_empty(), "the path toolchain ran: {evil:?}");
    assert_eq!(root_calls(s), Vec::<String>::new());
    // The report lists the toolchains this machine has installed, so it is not frozen whole.
    assert!(
        out.stdout.contains("tests        blocked"),
        "the floor is blocked: {}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("`by-path/rust-toolchain.toml` names a toolchain by `path`")
            && out
                .stdout
                .contains("aayu never runs a toolchain from a path"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "`old/rust-toolchain.toml` asks for the Rust toolchain `1.2.3`, which this image lacks"
        ),
        "{}",
        out.stdout
    );
}

fn go_module(repo: &TestRepo, dir: &str, go_mod: &str) {
    repo.write(&format!("{dir}/go.mod"), go_mod).write(
        &format!("{dir}/x_test.go"),
        "package x\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
    );
}

/// A `go.work` asking for a newer Go (which `go` would fetch or switch to) blocks the floor naming the
/// file; no Go process runs as root, and the planted toolchain program never runs.
#[test]
fn a_go_work_asking_for_another_go_blocks_and_nothing_runs_as_root() {
    crate::needs!(go);
    if !common::root_or_skip("a_go_work_asking_for_another_go_blocks_and_nothing_runs_as_root") {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    let shim_dir = shims(s);
    write_exe(
        &shim_dir.join("go1.999.0"),
        &format!("#!/bin/sh\ntouch {}/GO-$(id -u)\nexit 1\n", s.display()),
    );
    let repo = TestRepo::new();
    go_module(&repo, "mod", "module example.com/x\n\ngo 1.19\n");
    repo.write("go.work", "go 1.19\n\ntoolchain go1.999.0\n\nuse ./mod\n")
        .write(
            ".aayudha/evidence/79.toml",
            "[[criterion]]\nid = 1\ntests = [\"mod:TestX\"]\n",
        );
    let base = repo.commit("base");
    let head = repo.commit("head");
    let snapshot = ready(&repo, 79, "1. It works.", &[]);
    let out = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "79", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(root_calls(s), Vec::<String>::new());
    assert!(
        std::fs::read_dir(s)
            .expect("dir")
            .filter_map(|e| e.ok())
            .all(|e| !e.file_name().to_string_lossy().starts_with("GO-")),
        "the go.work's toolchain ran"
    );
    crate::aayu_snapshot!("go_work_toolchain", stdout out);
}

/// A module whose go.mod has no `go` directive is evidenced (go's default `-mod=readonly` never writes
/// go.mod); a module that cannot be loaded offline reports go's own error, not "not found".
#[test]
fn a_go_module_without_a_go_directive_is_evidenced_and_a_load_error_is_gos_own() {
    crate::needs!(go);
    if !common::root_or_skip(
        "a_go_module_without_a_go_directive_is_evidenced_and_a_load_error_is_gos_own",
    ) {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    shims(s);
    let repo = TestRepo::new();
    go_module(&repo, "plain", "module example.com/plain\n");
    go_module(
        &repo,
        "needs",
        "module example.com/needs\n\ngo 1.19\n\nrequire example.invalid/missing v1.0.0\n",
    );
    // Its go.sum is committed (without one the module is blocked before go runs: real_layouts).
    repo.write(
        "needs/go.sum",
        "example.invalid/missing v1.0.0 h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nexample.invalid/missing v1.0.0/go.mod h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
    );
    repo.write(
        "needs/x_test.go",
        "package x\n\nimport (\n\t\"testing\"\n\n\t_ \"example.invalid/missing\"\n)\n\nfunc TestX(t *testing.T) {}\n",
    );
    repo.write(
        ".aayudha/evidence/80.toml",
        "[[criterion]]\nid = 1\ntests = [\"plain:TestX\"]\n\n[[criterion]]\nid = 2\ntests = [\"needs:TestX\"]\n",
    );
    let base = repo.commit("base");
    let head = repo.commit("head");
    let snapshot = ready(&repo, 80, "1. Plain works.\n2. Needs works.", &[]);
    // No module proxy here: a fetch that cannot download says so at once.
    let out = run(aayu(&repo, s).env("GOPROXY", "off").args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "80", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(root_calls(s), Vec::<String>::new());
    // The report holds go's own load error, whose words vary with go's version: a line and a part of
    // another are looked for.
    assert!(
        out.stdout.contains("criterion 1: evidenced"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("criterion 2:"))
        .unwrap_or_default();
    assert!(
        line.contains("did not build: `go test .` exited with status 1: ")
            && line.contains("example.invalid"),
        "{}",
        out.stdout
    );
}

/// A link in the checkout is never followed by aayu: not a package manifest pointing at a secret, not a map
/// file pointing at `/dev/zero` (which would read without end) or at a secret.
#[test]
fn links_in_the_checkout_are_not_followed() {
    if !common::root_or_skip("links_in_the_checkout_are_not_followed") {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    shims(s);
    let secret = s.join("secret.txt");
    std::fs::write(&secret, "MARKER-ROOT-ONLY-7f3a\n").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let repo = TestRepo::new();
    repo.write("linked/src/lib.rs", LIB);
    std::os::unix::fs::symlink(&secret, repo.path("linked/Cargo.toml")).expect("link");
    let dir = skill("", "z");
    repo.write(&format!("{dir}/ok.md"), "x").write(
        ".aayudha/evidence/81.toml",
        "[[criterion]]\nid = 1\ntests = [\"linked:tests::adds\"]\n",
    );
    std::os::unix::fs::symlink("/dev/zero", repo.path(&format!("{dir}/README.md"))).expect("link");
    std::fs::remove_file(repo.path(&format!("{dir}/ok.md"))).expect("rm");
    std::os::unix::fs::symlink(&secret, repo.path(&format!("{dir}/leak.md"))).expect("link");
    let base = repo.commit("base");
    let head = repo.commit("head");
    let snapshot = ready(&repo, 81, "1. It adds.", &[]);

    let map = common::run_within(
        aayu(&repo, s).args(["verify", "--map"]),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(map.code, 2, "{}\n{}", map.stdout, map.stderr);
    crate::aayu_snapshot!("links_not_followed_map", map);
    let ci = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "81", "--ready", &snapshot,
    ]));
    assert_eq!(root_calls(s), Vec::<String>::new());
    // The secret is in no text and no file, whatever else they say.
    for text in [&map.stdout, &map.stderr, &ci.stdout, &ci.stderr] {
        assert!(
            !text.contains("MARKER-ROOT-ONLY"),
            "the secret leaked: {text}"
        );
    }
    let pack_dir = repo.path(".aayudha/proof/81");
    for file in common::files(&pack_dir) {
        let bytes = std::fs::read(&file).expect("read");
        assert!(
            !String::from_utf8_lossy(&bytes).contains("MARKER-ROOT-ONLY"),
            "{} holds the secret",
            file.display()
        );
    }
    crate::aayu_snapshot!("links_not_followed_ci", stdout ci);
}

/// A pull request that commits `.aayudha/proof` or `.aayudha/runs` as a link gets nothing written through
/// it; a link in the base's tree is not written through when red-on-base puts the pull request's test files
/// on top.
#[test]
fn nothing_is_written_through_a_link() {
    crate::needs!(perl);
    if !common::root_or_skip("nothing_is_written_through_a_link") {
        return;
    }
    let shared = shared_dir();
    let s = shared.path();
    shims(s);
    let outside = tempfile::tempdir().expect("temp");
    let repo = TestRepo::new();
    rust_package(&repo, "pkg", "pkg");
    // On the base, `pkg/tests` is a link out of the tree; the pull request makes it a folder with a test.
    // Relative, as libgit2 writes only such links when it checks a tree out.
    let up = format!("../../../../../../../../..{}", outside.path().display());
    std::os::unix::fs::symlink(&up, repo.path("pkg/tests")).expect("link");
    repo.write(
        ".aayudha/evidence/82.toml",
        "[[criterion]]\nid = 1\ntests = [\"pkg:cli/it_adds\"]\n",
    );
    let base = repo.commit("base");
    std::fs::remove_file(repo.path("pkg/tests")).expect("rm");
    repo.write(
        "pkg/tests/cli.rs",
        "#[test]\nfn it_adds() {\n    assert_eq!(pkg::add(1, 1), 2);\n}\n",
    );
    let head = repo.commit("a test");
    let snapshot = ready(&repo, 82, "1. It adds.", &["type:bug"]);

    let out = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "82", "--ready", &snapshot,
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("dir").count(),
        0,
        "red-on-base wrote through the base's link"
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/82/artifacts/reports/red-on-base.json"))
            .expect("report"),
    )
    .expect("json");
    assert_eq!(
        report["criteria"][0]["verdict"], "inconclusive",
        "{report:#}\n{}",
        out.stderr
    );
    insta::assert_snapshot!(
        "test_file_not_put_on_the_base",
        common::redact(report["criteria"][0]["reason"].as_str().unwrap_or_default())
    );

    // `.aayudha/proof` committed as a link.
    std::fs::remove_dir_all(repo.path(".aayudha/proof")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), repo.path(".aayudha/proof")).expect("link");
    let out = run(aayu(&repo, s).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "82", "--ready", &snapshot,
    ]));
    crate::aayu_snapshot!("proof_folder_is_a_link", out);
    // `.aayudha/runs` committed as a link, in a repository with a check to run.
    let hostile = common::hostile::hostile(&["passes"], "{}");
    std::os::unix::fs::symlink(outside.path(), hostile.path(".aayudha/runs")).expect("link");
    let out = run(hostile.aayu().args(["verify", "--check", "all"]));
    crate::aayu_snapshot!("runs_folder_is_a_link", out);
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("dir").count(),
        0,
        "something was written through a link"
    );
}

/// `[verify] sandbox_uids` never covers an id with power on the runner: system ids, 1001, the workspace's
/// group, the group of the file-command files.
#[test]
fn sandbox_ids_with_power_are_refused() {
    crate::needs!(perl);
    if !common::root_or_skip("sandbox_ids_with_power_are_refused") {
        return;
    }
    let repo = common::hostile::hostile(&["passes"], "{}");
    for (range, name) in [
        ("[100, 200]", "uids_below_1000"),
        ("[1000, 1100]", "uids_with_the_runners"),
    ] {
        repo.write(
            ".aayudha/config.toml",
            format!("[verify]\nsandbox_uids = {range}\n"),
        );
        let out = run(repo.aayu().args(["verify", "--check", "all"]));
        crate::aayu_snapshot!(name, out);
    }
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nsandbox_uids = [61000, 61063]\n",
    );
    // The workspace's group.
    let gid = nix::unistd::Gid::from_raw(61005);
    nix::unistd::chown(repo.root(), None, Some(gid)).expect("chgrp");
    let out = run(repo.aayu().args(["verify", "--check", "all"]));
    crate::aayu_snapshot!("uids_with_the_workspaces_group", out);
    nix::unistd::chown(repo.root(), None, Some(nix::unistd::Gid::from_raw(0))).expect("chgrp");
    // The group of a file-command file.
    let commands = tempfile::tempdir().expect("temp");
    let output = commands.path().join("set_output");
    std::fs::write(&output, "").expect("write");
    nix::unistd::chown(&output, None, Some(nix::unistd::Gid::from_raw(61010))).expect("chgrp");
    let out = run(repo
        .aayu()
        .env("GITHUB_OUTPUT", &output)
        .args(["verify", "--check", "all"]));
    crate::aayu_snapshot!("uids_with_a_file_commands_group", out);
    let out = run(repo.aayu().args(["verify", "--check", "all"]));
    assert_eq!(out.code, 0, "a range clear of them runs: {}", out.stderr);
}
