//! The behaviour floor through the real binary: the control-tool protocol, the sandbox, hostile control
//! tools, selection, and the built-in step runner on the notes example.

mod common;

use common::hostile::{MAP, hostile};
use common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

/// Runs `verify --check <arg> --json --out <run>` and returns the exit code, the report and stderr.
fn checks(repo: &TestRepo, arg: &str, extra: &[&str]) -> (i32, Value, String) {
    let out = run(repo
        .aayu()
        .args(["verify", "--check", arg, "--json", "--out", "run"])
        .args(extra));
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "one JSON report ({e}): {}\nstderr: {}",
            out.stdout, out.stderr
        )
    });
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path("run/reports/behaviour.json")).expect("report written"),
    )
    .expect("json on disk");
    assert_eq!(report, on_disk, "stdout and reports/behaviour.json agree");
    (out.code, report, out.stderr)
}

fn only(report: &Value) -> &Value {
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 1, "{report}");
    &checks[0]
}

#[test]
fn a_passing_check_has_its_artifacts_hashed_and_copied() {
    let repo = hostile(&["passes"], "{}");
    let (code, report, stderr) = checks(&repo, "hostile.passes", &[]);
    assert_eq!(code, 0, "{report} {stderr}");
    let check = only(&report);
    assert_eq!(check["product"], "shop");
    assert_eq!(check["feature"], "hostile");
    assert_eq!(check["check"], "passes");
    assert_eq!(check["kind"], "cli");
    assert_eq!(check["status"], "passed");
    assert_eq!(check["network"], "isolated");
    assert_eq!(
        check["selected_because"],
        serde_json::json!(["chosen: --check hostile.passes"])
    );
    assert_eq!(
        check["artifacts"],
        serde_json::json!([
            {"path": "behaviour/hostile.passes/a.txt", "kind": "api-trace",
             "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "size": 5},
            {"path": "behaviour/hostile.passes/sub/b.json", "kind": "report",
             "sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "size": 2}
        ])
    );
    assert_eq!(
        std::fs::read_to_string(repo.path("run/behaviour/hostile.passes/a.txt")).expect("copied"),
        "hello"
    );
    assert!(
        !repo.path("run/.out").exists(),
        "the scratch folders are gone"
    );
    let keys: Vec<&str> = report
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, vec!["schema_version", "checks"]);
    assert!(
        stderr.contains("[1/1] shop hostile.passes: passed ("),
        "{stderr}"
    );
}

#[test]
fn failed_fails_the_floor_and_unreachable_proves_nothing() {
    let repo = hostile(&["fails", "unreachable"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let statuses: Vec<(&str, &str, &str)> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().expect("c"),
                c["status"].as_str().expect("s"),
                c["reason"].as_str().expect("r"),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("fails", "failed", "the total is 41, expected 42"),
            ("unreachable", "unreachable", "no app")
        ]
    );
    let repo = hostile(&["unreachable"], "{}");
    let (code, _, _) = checks(&repo, "hostile", &[]);
    assert_eq!(
        code, 0,
        "an unreachable check proves nothing but does not fail the floor"
    );
}

#[test]
fn protocol_errors_block() {
    let repo = hostile(&["garbage", "silent", "weird"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let checks = report["checks"].as_array().expect("checks");
    assert!(checks.iter().all(|c| c["status"] == "blocked"), "{report}");
    let reason = |i: usize| checks[i]["reason"].as_str().expect("reason").to_string();
    assert!(
        reason(0).contains("did not print one JSON result"),
        "{}",
        reason(0)
    );
    assert!(reason(1).starts_with("the control tool exited with 7 and printed nothing on stdout; its stderr ends: boom: something broke"), "{}", reason(1));
    assert!(
        reason(2).contains("unknown status `maybe`"),
        "{}",
        reason(2)
    );
}

#[test]
fn a_check_past_the_limit_is_killed_and_the_run_goes_on() {
    let repo = hostile(&["sleeps", "passes"], "{}");
    repo.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 1\n");
    let started = std::time::Instant::now();
    let (code, report, _) = checks(&repo, "hostile", &["--jobs", "1"]);
    assert!(
        started.elapsed().as_secs() < 30,
        "the sleeper was killed at the limit"
    );
    assert_eq!(code, 3);
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(checks[0]["status"], "passed");
    assert_eq!(checks[1]["status"], "blocked");
    assert!(
        checks[1]["reason"]
            .as_str()
            .expect("r")
            .contains("ran past the limit of 1 s and was killed"),
        "{report}"
    );
}

#[test]
fn a_hundred_megabytes_of_output_is_capped() {
    let repo = hostile(&["floods"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let check = only(&report);
    assert_eq!(check["status"], "blocked");
    assert!(
        check["reason"]
            .as_str()
            .expect("r")
            .contains("more than 1048576 bytes on stdout"),
        "{check}"
    );
}

#[test]
fn artifacts_outside_out_block() {
    let repo = hostile(&["escapes", "absolute", "links"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let reasons: Vec<&str> = report["checks"]
        .as_array()
        .expect("c")
        .iter()
        .map(|c| c["reason"].as_str().expect("r"))
        .collect();
    assert!(
        report["checks"]
            .as_array()
            .expect("c")
            .iter()
            .all(|c| c["status"] == "blocked" && c["artifacts"] == serde_json::json!([]))
    );
    assert!(
        reasons[0].contains("must be relative to `out`"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("may not contain `..`"), "{reasons:?}");
    assert!(
        reasons[2].contains("is or passes through a symbolic link"),
        "{reasons:?}"
    );
    assert!(!repo.path("run/behaviour/hostile.links/p").exists());
}

#[test]
fn no_secret_reaches_product_code() {
    let repo = hostile(&["env"], "{}");
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nenv = [\"GITHUB_TOKEN\", \"SAFE_SETTING\", \"INPUT_TOKEN\"]\n",
    );
    let out = run(repo
        .aayu()
        .env("GITHUB_TOKEN", "ghs_secret1")
        .env("ACTIONS_RUNTIME_TOKEN", "secret2")
        .env("INPUT_TOKEN", "secret3")
        .env("DEPLOY_SECRET", "secret4")
        .env("NPM_TOKEN", "secret5")
        .env("SAFE_SETTING", "visible")
        .args(["verify", "--check", "hostile.env", "--out", "run"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let env = std::fs::read_to_string(repo.path("run/behaviour/hostile.env/env.txt"))
        .expect("env artifact");
    for secret in [
        "ghs_secret1",
        "secret2",
        "secret3",
        "secret4",
        "secret5",
        "TOKEN",
        "SECRET",
        "ACTIONS_",
        "INPUT_",
    ] {
        assert!(
            !env.contains(secret),
            "`{secret}` reached product code:\n{env}"
        );
    }
    assert!(env.contains("SAFE_SETTING=visible"), "{env}");
    assert!(
        env.contains("CARGO_NET_OFFLINE=true") && env.contains("GOTOOLCHAIN=local"),
        "{env}"
    );
    let home = env
        .lines()
        .find_map(|l| l.strip_prefix("HOME="))
        .expect("HOME");
    assert_ne!(
        home,
        repo.root().display().to_string(),
        "a fresh HOME, not aayu's"
    );
}

#[test]
fn every_process_of_a_check_is_killed_before_hashing() {
    let shared = common::shared_dir();
    let notes = format!(r#"{{"dir": "{}"}}"#, shared.path().display());
    let repo = hostile(&["forks", "daemon"], &notes);
    let (code, report, _) = checks(&repo, "hostile", &["--jobs", "1"]);
    assert_eq!(code, 0, "{report}");
    for file in ["child.pid", "daemon.pid"] {
        let pid = std::fs::read_to_string(shared.path().join(file))
            .unwrap_or_else(|_| panic!("{file} written"));
        assert!(!common::alive(&pid), "{file} {pid} outlived its check");
    }
    let reasons: Vec<&str> = report["checks"]
        .as_array()
        .expect("c")
        .iter()
        .map(|c| c["reason"].as_str().expect("r"))
        .collect();
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("leftover process(es) were killed")),
        "{reasons:?}"
    );
}

#[test]
fn a_cli_check_has_no_network_and_says_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let repo = hostile(&["connects", "uring"], &format!(r#"{{"port": {port}}}"#));
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 0, "{report}");
    for check in report["checks"].as_array().expect("c") {
        assert_eq!(check["status"], "passed", "{check}");
        assert_eq!(check["network"], "isolated", "{check}");
    }
    assert!(
        report["checks"][0]["reason"]
            .as_str()
            .expect("r")
            .starts_with("refused: Permission denied"),
        "{report}"
    );
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
}

#[test]
fn a_check_cannot_read_aayus_environment() {
    let repo = hostile(&["environ"], "{}");
    let out = run(repo
        .aayu()
        .env("AAYU_TEST_MARKER", "marker-in-aayus-env")
        .args(["verify", "--check", "hostile", "--json", "--out", "run"]));
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(out.code, 0, "{report}");
    assert!(
        only(&report)["reason"]
            .as_str()
            .expect("r")
            .starts_with("denied"),
        "{report}"
    );
}

#[test]
fn parallel_checks_run_as_separate_uids_without_groups() {
    if !common::is_root() {
        return; // Without root every check runs as the user's own uid, one at a time.
    }
    let repo = hostile(&["uid-a", "uid-b"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &["--jobs", "2"]);
    assert_eq!(code, 0, "{report}");
    let mut uids = Vec::new();
    for id in ["uid-a", "uid-b"] {
        let text =
            std::fs::read_to_string(repo.path(&format!("run/behaviour/hostile.{id}/uid.txt")))
                .expect("uid artifact");
        let mut parts = text.split_whitespace();
        let uid: u32 = parts.next().expect("uid").parse().expect("number");
        let groups = parts.next().expect("groups");
        assert!((61000..=61063).contains(&uid), "{text}");
        assert!(
            groups.split(',').all(|g| g == uid.to_string()),
            "only its own group, no supplementary ones: {text}"
        );
        uids.push(uid);
    }
    assert_ne!(uids[0], uids[1], "each parallel slot has a uid of its own");
    assert!(!uids.contains(&1001), "never the workspace owner's uid");
}

#[test]
fn product_output_cannot_forge_workflow_commands() {
    let repo = hostile(&["forges"], "{}");
    let out = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .args(["verify", "--check", "hostile", "--out", "run"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let stop = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("::stop-commands::"))
        .expect("stop-commands")
        .to_string();
    assert!(stop.len() >= 32, "a random token");
    let forged = out
        .stderr
        .find("::set-output name=result::proven")
        .expect("the output is shown");
    let start = out
        .stderr
        .find(&format!("::stop-commands::{stop}"))
        .expect("start");
    let end = out.stderr.find(&format!("::{stop}::")).expect("resume");
    assert!(start < forged && forged < end, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("::group::[1/1] shop hostile.forges: passed"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unknown_check_is_a_usage_error() {
    let repo = hostile(&["passes"], "{}");
    let out = run(repo.aayu().args(["verify", "--check", "hostile.nope"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`--check hostile.nope` names no check: the features and their checks are: hostile (passes)"), "{}", out.stderr);
}

#[test]
fn production_targets_are_refused_before_anything_starts() {
    let repo = hostile(&["passes"], "{}");
    let dir = skill("", "shop");
    let block = r#"{"id": "web", "layers": ["L01"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#;
    let check = r#"{"id": "home", "kind": "ui", "evidence": "screenshot", "steps": [{"visit": {"name": "Home"}}]}"#;
    repo.write(&format!("{dir}/web.md"), feature_md(block, &[check]));
    repo.write(
        &format!("{dir}/README.md"),
        map_readme(MAP, &["hostile.md", "web.md"]),
    );
    let shared = common::shared_dir();
    let marker = shared.path().join("seed-ran");
    repo.write("seed.sh", format!("touch {}\n", marker.display()));
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nbase_url = \"https://shop.example.com\"\nproduction = [\"shop.example.com\"]\nseed = [\"sh\", \"seed.sh\"]\n",
    );
    let out = run(repo
        .aayu()
        .args(["verify", "--check", "web", "--out", "run"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("is on `shop.example.com`, which `[verify] production` lists"),
        "{}",
        out.stderr
    );
    assert!(!marker.exists(), "the seed never started");
    assert!(!repo.path("run/reports/behaviour.json").exists());
}

#[test]
fn an_interrupted_run_kills_its_checks_and_removes_its_folders() {
    let shared = common::shared_dir();
    let notes = format!(r#"{{"dir": "{}"}}"#, shared.path().display());
    let repo = hostile(&["lingers"], &notes);
    repo.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 120\n");
    // aayu's own temporary folders go here, to be counted afterwards.
    let tmp = common::shared_dir();
    let mut child = repo
        .aayu()
        .env("TMPDIR", tmp.path())
        .args(["verify", "--check", "hostile", "--out", "run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let pid_file = shared.path().join("child.pid");
    let started = std::time::Instant::now();
    while !pid_file.exists() && started.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the check started");
    let during: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").collect();
    assert!(
        !during.is_empty(),
        "the sandbox folder exists while the check runs"
    );
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let status = child.wait().expect("wait");
    assert_eq!(
        status.code(),
        Some(130),
        "Ctrl-C ends aayu with 128 + SIGINT"
    );
    assert!(started.elapsed().as_secs() < 30);
    // SIGKILL is delivered at once, but a loaded machine may take a moment to tear the process down.
    let killed_at = std::time::Instant::now();
    while common::alive(&pid) && killed_at.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!common::alive(&pid), "the check's child {pid} was killed");
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("tmp")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "aayu's temporary folders were removed: {left:?}"
    );
}
