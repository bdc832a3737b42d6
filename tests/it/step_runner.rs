//! The built-in step runner (`aayu control check`) and selection by diff, through the real binary: the
//! notes example's checks pass, a broken copy fails with a precise reason, and ui/api checks reach a seed
//! app that is stopped afterwards.

use crate::common;
use std::path::{Path, PathBuf};

use crate::common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

/// Copies a folder of this repository into the test repository at the same path.
fn copy_tree(from: &Path, repo: &TestRepo, rel: &str) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "target" {
            continue;
        }
        let rel = format!("{rel}/{name}");
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), repo, &rel);
        } else {
            repo.write(&rel, std::fs::read(entry.path()).expect("read"));
        }
    }
}

fn notes_repo() -> TestRepo {
    let repo = TestRepo::new();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/notes"),
        &repo,
        "examples/notes",
    );
    repo.commit("notes");
    repo
}

fn parse(out: &common::Run) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
}

#[test]
fn the_notes_checks_pass_through_the_step_runner() {
    let repo = notes_repo();
    let out = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--check", "all", "--json", "--out", "run"]));
    let report = parse(&out);
    assert_eq!(out.code, 0, "{report:#}\n{}", out.stderr);
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 6);
    for check in checks {
        assert_eq!(check["status"], "passed", "{check}");
        assert_eq!(check["artifacts"][0]["kind"], "api-trace");
    }
    let transcript: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path("run/behaviour/mark-done.missing/transcript.json"))
            .expect("transcript"),
    )
    .expect("json");
    let steps = transcript["steps"].as_array().expect("steps");
    assert_eq!(steps[2]["run"], serde_json::json!(["notes", "done", "5"]));
    assert_eq!(steps[2]["exit"], 1);
    assert_eq!(steps[2]["stderr"], "notes: no such note: 5 (there are 1)\n");
}

#[test]
fn a_broken_notes_fails_with_the_expectation_that_broke() {
    let repo = notes_repo();
    let store = repo.path("examples/notes/src/store.rs");
    let text = std::fs::read_to_string(&store).expect("read");
    repo.write(
        "examples/notes/src/store.rs",
        text.replace("no such note: {n}", "missing note {n}"),
    );
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify",
        "--check",
        "mark-done",
        "--json",
        "--out",
        "run",
    ]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    let report = parse(&out);
    let check = &report["checks"][0];
    assert_eq!(check["status"], "failed");
    assert_eq!(
        check["reason"],
        "step 3 (run notes done 5): stderr lacks `no such note: 5 (there are 1)`; it was: \"notes: missing note 5 (there are 1)\\n\""
    );
    // The transcript of a failed check is still evidence of what happened.
    assert_eq!(
        check["artifacts"][0]["path"],
        "behaviour/mark-done.missing/transcript.json"
    );

    // A test that no longer exists fails the lib check by name.
    let store_text = std::fs::read_to_string(&store).expect("read");
    repo.write(
        "examples/notes/src/store.rs",
        store_text.replace("fn done_marks_the_note", "fn done_marks_a_note"),
    );
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify",
        "--check",
        "store.done-marks",
        "--json",
        "--out",
        "run2",
    ]));
    assert_eq!(out.code, 3);
    assert_eq!(
        parse(&out)["checks"][0]["reason"],
        "step 1 (test store::tests::done_marks_the_note): `examples/notes:store::tests::done_marks_the_note` was not found: no test `store::tests::done_marks_the_note` in `examples/notes`"
    );
}

/// The built-in runner's steps mean what it says: a typo is a contract error (exit 2) naming the feature
/// file, the check's line, the check and the key — in `verify --map` and before any check runs — and the
/// runner itself refuses the check the same way when it is handed one.
#[test]
fn an_unknown_step_key_is_a_contract_error() {
    let repo = notes_repo();
    let dir = skill("examples/notes", "notes");
    let feature = std::fs::read_to_string(repo.path(&format!("{dir}/mark-done.md"))).expect("read");
    repo.write(
        &format!("{dir}/mark-done.md"),
        feature.replace(
            r#"{"build": "examples/notes"}"#,
            r#"{"biuld": "examples/notes"}"#,
        ),
    );
    let said = format!(
        "{dir}/mark-done.md:25: check `mark-done.missing`: step 1: unknown key `biuld` (the step runner knows build, run, request, test, env, cwd, open, fill, click, press, select, see, url, wait, screenshot; beside them stdin, exit, stdout, stderr, expect)"
    );
    let map = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(map.code, 2, "{}", map.stdout);
    // The one contract error among the map report's lines (the rest is the examples' map).
    assert!(map.stdout.contains(&said), "{}", map.stdout);
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify",
        "--check",
        "mark-done",
        "--out",
        "run",
    ]));
    crate::aayu_snapshot!("unknown_step_key_refused_before_running", out);
    assert!(
        !repo.path("run/reports").exists(),
        "nothing ran: no report was written"
    );
    // Handed such a check directly, the runner refuses it whole, naming the check and the key.
    let spec = serde_json::json!({"id": "x", "kind": "ui", "evidence": "screenshot",
        "steps": [{"open": "/"}, {"click": {"name": "Ask"}, "wait": 3}]});
    let request = serde_json::json!({"product": "p", "feature": "f", "check": "x",
        "out": repo.path("."), "base_url": "http://127.0.0.1:9", "root": repo.path("."), "spec": spec});
    repo.write("request.json", request.to_string());
    let direct = run(repo
        .aayu()
        .args(["control", "check"])
        .stdin(std::fs::File::open(repo.path("request.json")).expect("request")));
    crate::aayu_snapshot!("control_check_refuses_two_actions", direct);
}

/// Steps under the built-in runner are typed when the map loads: a value of the wrong type, two actions
/// in one step, an unknown key and a test name the package's runner cannot read are each a contract error
/// at the step's own line (exit 2), while the very same steps under a map's own control tool are that
/// tool's to read, and load. `aayu` as the program is only the built-in runner.
#[test]
fn malformed_steps_are_contract_errors_at_their_line_only_under_the_built_in_runner() {
    let steps = [
        r#"{"id": "number", "kind": "cli", "evidence": "api-trace", "steps": [
  {"cwd": "."},
  {"build": 3}
]}"#,
        r#"{"id": "two", "kind": "cli", "evidence": "api-trace", "steps": [
  {"build": "a", "test": {"package": "a", "test": "t"}}
]}"#,
        r#"{"id": "unknown", "kind": "cli", "evidence": "api-trace", "steps": [
  {"run": ["true"]},
  {"run": ["true"], "retries": 3}
]}"#,
        r#"{"id": "name", "kind": "cli", "evidence": "api-trace", "steps": [
  {"test": {"package": ".", "test": "a b"}}
]}"#,
    ];
    for (control, name) in [
        (r#"["aayu", "control"]"#, "malformed_steps_built_in_runner"),
        (
            r#"["sh", "control.sh"]"#,
            "malformed_steps_own_control_tool",
        ),
        (
            r#"["aayu", "control", "--"]"#,
            "malformed_steps_not_the_built_in_runner",
        ),
    ] {
        let repo = TestRepo::new();
        let dir = skill("", "p");
        repo.write(
            "Cargo.toml",
            "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .write("src/main.rs", "fn main() {}\n\n// a b\n#[test]\nfn t() {}\n")
        .write("control.sh", "#!/bin/sh\n")
        .write(
            &format!("{dir}/README.md"),
            map_readme(
                &format!(r#"{{"product": "p", "control": {control}, "surfaces": []}}"#),
                &["f.md"],
            ),
        )
        .write(
            &format!("{dir}/f.md"),
            feature_md(
                r#"{"id": "f", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#,
                &steps,
            ),
        );
        repo.commit("p");
        // Under the built-in runner, each malformed step is a contract error at its own line; under a
        // tool of the map's own, the map loads; `aayu control --` is not the built-in runner.
        crate::aayu_snapshot!(name, run(repo.aayu().args(["verify", "--map"])));
    }
}

#[test]
fn a_diff_selects_the_checks_of_what_changed() {
    let repo = notes_repo();
    let dir = skill("examples/notes", "notes");
    let base = repo.git(&["rev-parse", "HEAD"]);
    // A SKILL.md edit alone selects nothing.
    repo.write(
        &format!("{}/SKILL.md", dir.trim_end_matches("/features")),
        "# edited\n",
    );
    let skill_only = repo.commit("skill");
    // Said in a line; with `--json`, one JSON document: an empty report.
    for (json, said) in [
        (&[][..], "no behaviour check selected\n"),
        (
            &["--json"][..],
            "{\n  \"schema_version\": 1,\n  \"checks\": []\n}\n",
        ),
    ] {
        let out = run(common::with_toolchain(&mut repo.aayu())
            .args(["verify", "--base", &base, "--head", &skill_only])
            .args(json));
        assert_eq!((out.code, out.stdout.as_str()), (0, said), "{}", out.stderr);
    }
    // The store's source selects every feature whose sources hold it; the feature file selects its own.
    let store = std::fs::read_to_string(repo.path("examples/notes/src/store.rs")).expect("read");
    repo.write(
        "examples/notes/src/store.rs",
        format!("{store}\n// touched\n"),
    );
    let head = repo.commit("store");
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify",
        "--base",
        &skill_only,
        "--head",
        &head,
        "--json",
        "--out",
        "run",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = parse(&out);
    let selected: Vec<(String, Value)> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                format!(
                    "{}.{}",
                    c["feature"].as_str().expect("f"),
                    c["check"].as_str().expect("c")
                ),
                c["selected_because"].clone(),
            )
        })
        .collect();
    assert_eq!(selected.len(), 6, "{selected:?}");
    assert!(
        selected
            .iter()
            .all(|(_, why)| why == &serde_json::json!(["changed: examples/notes/src/store.rs"])),
        "{selected:?}"
    );
    // The README of the map selects every check of the map; an evidence map adds its checks with their reason.
    repo.write(
        ".aayudha/evidence/7.toml",
        "[[criterion]]\nid = 1\nchecks = [\"mark-done.missing\"]\n",
    );
    let readme = std::fs::read_to_string(repo.path(&format!("{dir}/README.md"))).expect("read");
    repo.write(
        &format!("{dir}/README.md"),
        format!("{readme}\nMore words.\n"),
    );
    let next = repo.commit("readme and evidence");
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--base", &head, "--head", &next, "--story", "7", "--json", "--out", "run3",
    ]));
    let report = parse(&out);
    let missing = report["checks"]
        .as_array()
        .expect("c")
        .iter()
        .find(|c| c["check"] == "missing")
        .expect("missing");
    assert_eq!(
        missing["selected_because"],
        serde_json::json!([
            format!("map changed: {dir}/README.md"),
            "evidence map of story #7, criterion 1"
        ])
    );
    // An evidence map naming a check that does not exist is reported precisely.
    repo.write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 2\nchecks = [\"mark-done.gone\"]\n",
    );
    let last = repo.commit("bad evidence");
    let out = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--base", &next, "--head", &last, "--story", "8"]));
    crate::aayu_snapshot!("evidence_map_names_no_check", out);
}

#[test]
fn api_checks_reach_the_seed_app_which_is_stopped_afterwards() {
    crate::needs!(python3);
    let port = common::free_port();
    let repo = TestRepo::new();
    let dir = skill("", "site");
    let map = r#"{"product": "site", "control": ["aayu", "control"], "surfaces": []}"#;
    let block = r#"{"id": "home", "layers": ["L01"], "sources": ["www/index.html"], "surfaces": {}, "verified_at": ""}"#;
    let check = r#"{"id": "greets", "kind": "api", "evidence": "api-trace", "steps": [
  {"request": {"method": "GET", "path": "/index.html"}, "expect": {"status": 200, "text": "hello from the seed"}}
]}"#;
    let missing = r#"{"id": "missing", "kind": "api", "evidence": "api-trace", "steps": [
  {"request": {"method": "GET", "path": "/nope.html"}, "expect": {"status": 200}}
]}"#;
    repo.write("www/index.html", "<p>hello from the seed</p>\n")
        .write(&format!("{dir}/README.md"), map_readme(map, &["home.md"]))
        .write(&format!("{dir}/home.md"), feature_md(block, &[check, missing]))
        .write(
            ".aayudha/config.toml",
            format!(
                "[verify]\nbase_url = \"http://127.0.0.1:{port}\"\nseed = [\"/usr/bin/python3\", \"-m\", \"http.server\", \"--bind\", \"127.0.0.1\", \"--directory\", \"www\", \"{port}\"]\n"
            ),
        );
    repo.commit("site");
    let out = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--check", "home", "--json", "--out", "run"]));
    let report = parse(&out);
    assert_eq!(out.code, 3, "{report:#} {}", out.stderr);
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(checks[0]["check"], "greets");
    assert_eq!(checks[0]["status"], "passed", "{report:#}");
    assert_eq!(checks[0]["network"], "allowed");
    assert_eq!(checks[1]["status"], "failed");
    assert!(
        checks[1]["reason"]
            .as_str()
            .expect("r")
            .starts_with("step 1 (GET /nope.html): expected status 200, got 404"),
        "{report:#}"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the seed app was stopped"
    );
}

/// No `[verify] seed` and nothing at `base_url`: the api check is blocked at once with the fix, not after
/// the check timeout.
#[test]
fn with_no_seed_and_nothing_answering_api_checks_are_blocked_at_once() {
    let port = common::free_port();
    let repo = TestRepo::new();
    let dir = skill("", "site");
    let map = r#"{"product": "site", "control": ["aayu", "control"], "surfaces": []}"#;
    let block = r#"{"id": "home", "layers": ["L01"], "sources": ["www/index.html"], "surfaces": {}, "verified_at": ""}"#;
    let check = r#"{"id": "greets", "kind": "api", "evidence": "api-trace", "steps": [
  {"request": {"method": "GET", "path": "/index.html"}, "expect": {"status": 200}}
]}"#;
    repo.write("www/index.html", "<p>hello</p>\n")
        .write(&format!("{dir}/README.md"), map_readme(map, &["home.md"]))
        .write(&format!("{dir}/home.md"), feature_md(block, &[check]))
        .write(
            ".aayudha/config.toml",
            format!("[verify]\nbase_url = \"http://127.0.0.1:{port}\"\ncheck_timeout_s = 300\n"),
        );
    repo.commit("site");
    let started = std::time::Instant::now();
    let out = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--check", "home", "--json", "--out", "run"]));
    let report = parse(&out);
    assert_eq!(out.code, 3, "{report:#} {}", out.stderr);
    assert_eq!(report["checks"][0]["status"], "blocked", "{report:#}");
    assert_eq!(
        report["checks"][0]["reason"],
        format!(
            "nothing answers at http://127.0.0.1:{port} and no `[verify] seed` starts the app: set `[verify] seed` (docs/behaviour-checks.md) or start it"
        )
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "blocked at once, not after the 300 s check timeout"
    );
}

#[test]
fn a_toolchain_the_sandbox_uid_cannot_run_blocks_with_the_fix() {
    // Without root the sandbox runs as the user, who can run their own toolchain.
    if !common::root_or_skip("a_toolchain_the_sandbox_uid_cannot_run_blocks_with_the_fix") {
        return;
    }
    let repo = notes_repo();
    let hidden = tempfile::Builder::new()
        .prefix("aayu-private-")
        .tempdir()
        .expect("temp");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(hidden.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let cargo = hidden.path().join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        hidden.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(common::with_toolchain(&mut repo.aayu())
        .env("PATH", path)
        .args(["verify", "--check", "mark-done", "--json", "--out", "run"]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    let check = &parse(&out)["checks"][0];
    assert_eq!(check["status"], "blocked");
    let reason = check["reason"].as_str().expect("reason");
    // The program, the folder in the way, its mode, and the fixes for a machine of one's own.
    insta::assert_snapshot!(
        "cargo_the_sandbox_cannot_run",
        reason
            .replace(&cargo.display().to_string(), "[cargo]")
            .replace(&hidden.path().display().to_string(), "[hidden]")
    );
}

#[test]
fn a_repository_the_sandbox_uid_cannot_enter_blocks_with_the_folder_and_the_fix() {
    if !common::root_or_skip(
        "a_repository_the_sandbox_uid_cannot_enter_blocks_with_the_folder_and_the_fix",
    ) {
        return;
    }
    let repo = notes_repo();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(repo.root(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify",
        "--check",
        "mark-done",
        "--json",
        "--out",
        "run",
    ]));
    std::fs::set_permissions(repo.root(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_eq!(out.code, 3, "{}", out.stderr);
    for check in parse(&out)["checks"].as_array().expect("checks") {
        assert_eq!(check["status"], "blocked", "{check}");
        let reason = check["reason"].as_str().expect("reason");
        insta::assert_snapshot!(
            "repository_the_sandbox_cannot_enter",
            reason.replace(&repo.root().display().to_string(), "[repo]")
        );
    }
}

#[test]
fn a_rustup_without_a_default_blocks_with_the_fix() {
    // HOME changed and RUSTUP_HOME not set: the rustup proxy finds no default toolchain.
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let cargo_home =
        std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    if !cargo_home.join("bin/rustup").exists() {
        eprintln!("skipped: the toolchain here is not rustup's, so it has no default to miss");
        return;
    }
    let repo = notes_repo();
    let mut dirs = vec![cargo_home.join("bin")];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let out = run(repo
        .aayu()
        .env("PATH", std::env::join_paths(dirs).expect("PATH"))
        .args(["verify", "--check", "mark-done", "--json", "--out", "run"]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    let check = &parse(&out)["checks"][0];
    assert_eq!(check["status"], "blocked");
    let reason = check["reason"].as_str().expect("reason");
    // The middle is rustup's own error, whose words vary with its version.
    assert!(
        reason.starts_with("`cargo --version` (exit 1) fails as the sandbox uid: ")
            && reason.contains("no default"),
        "{reason}"
    );
    assert!(
        reason.contains("run `rustup default stable`, or set RUSTUP_HOME"),
        "{reason}"
    );
}
