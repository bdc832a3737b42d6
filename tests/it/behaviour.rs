//! The behaviour floor through the real binary: the control-tool protocol, the sandbox, hostile control
//! tools, selection, and the built-in step runner on the notes example.

use crate::common;
use crate::common::hostile::{MAP, hostile};
use crate::common::{TestRepo, feature_md, map_readme, run, skill};
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
    crate::needs!(perl);
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
    // A line of the progress log (its timing varies).
    assert!(
        stderr.contains("[1/1] shop hostile.passes: passed ("),
        "{stderr}"
    );
}

#[test]
fn failed_fails_the_floor_and_unreachable_proves_nothing() {
    crate::needs!(perl);
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
    crate::needs!(perl);
    let repo = hostile(&["garbage", "silent", "weird"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let checks = report["checks"].as_array().expect("checks");
    assert!(checks.iter().all(|c| c["status"] == "blocked"), "{report}");
    let reasons: Vec<&str> = checks
        .iter()
        .map(|c| c["reason"].as_str().expect("reason"))
        .collect();
    insta::assert_snapshot!("protocol_errors", reasons.join("\n"));
}

#[test]
fn a_check_past_the_limit_is_killed_and_the_run_goes_on() {
    crate::needs!(perl);
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
    insta::assert_snapshot!("past_the_limit", checks[1]["reason"].as_str().expect("r"));
}

#[test]
fn a_hundred_megabytes_of_output_is_capped() {
    crate::needs!(perl);
    let repo = hostile(&["floods"], "{}");
    let (code, report, _) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 3);
    let check = only(&report);
    assert_eq!(check["status"], "blocked");
    insta::assert_snapshot!("output_capped", check["reason"].as_str().expect("r"));
}

#[test]
fn artifacts_outside_out_block() {
    crate::needs!(perl);
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
    insta::assert_snapshot!("artifacts_outside_out", reasons.join("\n"));
    assert!(!repo.path("run/behaviour/hostile.links/p").exists());
}

#[test]
fn no_secret_reaches_product_code() {
    crate::needs!(perl);
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
    // The environment product code saw, a variable a line: what must and must not be in it.
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
    crate::needs!(perl);
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
    // How many processes were left when each check ended depends on timing: the words, not the count.
    assert!(
        reasons
            .iter()
            .all(|r| r.ends_with(" leftover process was killed")
                || r.ends_with(" leftover processes were killed")),
        "{reasons:?}"
    );
}

#[test]
fn a_cli_check_has_no_network_and_says_so() {
    crate::needs!(perl);
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
    crate::needs!(perl);
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
    crate::needs!(perl);
    // Without root every check runs as the user's own uid, one at a time.
    if !common::root_or_skip("parallel_checks_run_as_separate_uids_without_groups") {
        return;
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
    crate::needs!(perl);
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
    crate::needs!(perl);
    let repo = hostile(&["passes"], "{}");
    crate::aayu_snapshot!(
        "unknown_check",
        run(repo.aayu().args(["verify", "--check", "hostile.nope"]))
    );
}

#[test]
fn production_targets_are_refused_before_anything_starts() {
    crate::needs!(perl);
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
    crate::aayu_snapshot!("production_base_url", out);
    assert!(!marker.exists(), "the seed never started");
    assert!(!repo.path("run/reports/behaviour.json").exists());
}

#[test]
fn an_interrupted_run_kills_its_checks_and_removes_its_folders() {
    crate::needs!(perl);
    let shared = common::shared_dir();
    let notes = format!(r#"{{"dir": "{}"}}"#, shared.path().display());
    let repo = hostile(&["lingers"], &notes);
    repo.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 120\n");
    // aayu's own temporary folders go here, to be counted afterwards.
    let tmp = common::shared_dir();
    let said = repo.path("aayu.stderr");
    let mut child = repo
        .aayu()
        .env("TMPDIR", tmp.path())
        .args(["verify", "--check", "hostile", "--out", "run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&said).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let pid_file = shared.path().join("child.pid");
    let started = std::time::Instant::now();
    let pid = common::pid_in(&pid_file, std::time::Duration::from_secs(30));
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
        "Ctrl-C ends aayu with 128 + SIGINT; it said: {}",
        std::fs::read_to_string(&said).unwrap_or_default()
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

/// The reason a control tool gives, what it prints on stderr and an artifact path it names are data in
/// GitHub Actions: wherever aayu shows them (the group of the check, the closing report, the report on
/// stdout), the runner acts on none of them. A path holding a control character blocks its check, shown
/// escaped.
#[test]
fn text_from_product_code_issues_no_workflow_command() {
    crate::needs!(perl);
    let repo = hostile(&["injects", "badpath"], "{}");
    let out = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .args(["verify", "--check", "hostile", "--out", "run"]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let live = common::live_commands(text);
        assert!(
            live.iter().all(|l| !l.contains("MARK")),
            "{stream} issues a forged command: {live:?}\n{text}"
        );
    }
    // Shown, as data: the reason in the fenced report on stdout, and what the tool printed in the
    // progress log (a line of it).
    crate::aayu_snapshot!("product_text_as_data", stdout out);
    assert!(out.stderr.contains("MARK-stderr"), "shown, as data");
    let groups: Vec<String> = common::live_commands(&out.stderr)
        .into_iter()
        .filter(|l| l.starts_with("::group::"))
        .collect();
    assert_eq!(groups.len(), 2, "a group per check, aayu's own: {groups:?}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path("run/reports/behaviour.json")).expect("report"),
    )
    .expect("json");
    let badpath = &report["checks"][0];
    assert_eq!(badpath["check"], "badpath");
    assert_eq!(badpath["status"], "blocked");
    assert_eq!(
        badpath["reason"],
        "artifact \"a\\n::warning title=aayudha proof::MARK-path\": an artifact path may not hold a control character (a newline, a tab, an escape)"
    );
}

/// A FIFO named as an artifact, a memory bomb and (as root) a fork bomb are each blocked within their
/// limits, with the reason; aayu survives them and the next check runs.
#[test]
fn a_fifo_a_memory_bomb_and_a_fork_bomb_are_blocked_and_the_next_check_runs() {
    crate::needs!(perl);
    let repo = hostile(&["fifo", "memory", "passes"], "{}");
    repo.write(
        ".aayudha/config.toml",
        "[verify]\ncheck_timeout_s = 30\nmemory_limit_mb = 64\n",
    );
    repo.commit("limits");
    let started = std::time::Instant::now();
    let out = common::run_within(
        repo.aayu()
            .args(["verify", "--check", "hostile", "--json", "--out", "run"]),
        std::time::Duration::from_secs(120),
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("report");
    let by_id = |report: &Value, id: &str| {
        report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["check"] == id)
            .unwrap_or_else(|| panic!("{id}: {report:#}"))
            .clone()
    };
    let fifo = by_id(&report, "fifo");
    assert_eq!(fifo["status"], "blocked");
    assert_eq!(
        fifo["reason"],
        "artifact \"pipe\": is a FIFO, not a regular file"
    );
    let memory = by_id(&report, "memory");
    assert_eq!(memory["status"], "blocked", "{memory}");
    let reason = memory["reason"].as_str().unwrap_or_default();
    // Which of the two limits ends the bomb first varies with the kernel's memory accounting.
    assert!(
        reason.contains("more than 64 MiB of memory") || reason.contains("ran out of memory"),
        "{reason}"
    );
    assert_eq!(
        by_id(&report, "passes")["status"],
        "passed",
        "the next check ran"
    );
    // A fork bomb, held by RLIMIT_NPROC of the slot's uid and ended by the process watch (as root only:
    // without root it would be the user's own processes).
    if common::root_or_skip(
        "the fork bomb of a_fifo_a_memory_bomb_and_a_fork_bomb_are_blocked_and_the_next_check_runs",
    ) {
        let repo = hostile(&["forkbomb", "passes"], "{}");
        repo.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 30\n");
        repo.commit("limits");
        let out = common::run_within(
            repo.aayu().args([
                "verify", "--check", "hostile", "--json", "--out", "run", "--jobs", "1",
            ]),
            std::time::Duration::from_secs(120),
        );
        assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
        let report: Value = serde_json::from_str(&out.stdout).expect("report");
        let bomb = by_id(&report, "forkbomb");
        assert_eq!(bomb["status"], "blocked", "{bomb}");
        insta::assert_snapshot!("fork_bomb", bomb["reason"].as_str().unwrap_or_default());
        assert_eq!(
            by_id(&report, "passes")["status"],
            "passed",
            "the next check ran"
        );
    }
    // Every limit ended its check long before the time limit would have.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// A cli check cannot open a netlink or vsock socket, nor reach `socket` through the x32 syscall range:
/// the filter allows `AF_UNIX` only and refuses the x32 range.
#[test]
fn a_cli_check_opens_no_netlink_vsock_or_x32_socket() {
    crate::needs!(perl);
    let mut ids = vec!["netlink", "vsock"];
    if std::env::consts::ARCH == "x86_64" {
        ids.push("x32");
    }
    let repo = hostile(&ids, "{}");
    let (code, report, stderr) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    for c in report["checks"].as_array().expect("checks") {
        assert_eq!(c["status"], "passed", "{c}");
        assert_eq!(c["network"], "isolated", "{c}");
    }
}

/// The kill is checked: a process that keeps forking and leaving its session escapes a kill by pid and
/// blocks its check (without root, where a check's processes are told by their tree); as root every
/// process of the slot's uid dies at once and nothing survives.
#[test]
fn a_process_that_escapes_the_kill_blocks_its_check() {
    crate::needs!(perl, cc);
    if !common::root_or_skip("a_process_that_escapes_the_kill_blocks_its_check") {
        return;
    }
    let Some((_keep, hopper)) = common::hostile::hopper() else {
        panic!("no C compiler (`cc`) to build the hopping process with: install gcc");
    };
    let notes = |seconds: u32| {
        format!(
            r#"{{"hopper": "{}", "hop_s": {seconds}}}"#,
            hopper.display()
        )
    };
    // As root: every process of the slot's uid dies at once; nothing survives (the hopper would hop on for
    // 6 s: none of it is left when aayu is done).
    let repo = hostile(&["hops"], &notes(6));
    let (code, report, stderr) = checks(&repo, "hostile", &[]);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(only(&report)["status"], "passed", "{report:#}");
    for _ in 0..5 {
        let alive = common::processes_running(&hopper);
        assert!(alive.is_empty(), "the hopper outlived its check: {alive:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Without root (aayu as uid 65534, from a copy of the binary any user can run).
    let bin = tempfile::Builder::new()
        .prefix("aayu-bin-")
        .tempdir()
        .expect("temp");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let aayu = bin.path().join("aayu");
    std::fs::copy(assert_cmd::cargo::cargo_bin("aayu"), &aayu).expect("copy");
    // Without root a hopper that forks faster than the kill rounds escapes them, and the check is blocked.
    // On a loaded machine (the hopper runs at a lower priority than aayu) it may not hop fast enough and
    // is simply killed — also right: passed, every process gone. Up to three tries for the escape.
    let mut escaped = false;
    for _ in 0..3 {
        let repo = hostile(&["hops"], &notes(4));
        let nobody = nix::unistd::Uid::from_raw(65534);
        for entry in
            std::iter::once(repo.root().to_path_buf()).chain(common::all_paths(repo.root()))
        {
            let _ = nix::unistd::chown(
                &entry,
                Some(nobody),
                Some(nix::unistd::Gid::from_raw(65534)),
            );
        }
        use std::os::unix::process::CommandExt;
        let out = common::run_within(
            std::process::Command::new(&aayu)
                .current_dir(repo.root())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", repo.root())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .uid(65534)
                .gid(65534)
                .args(["verify", "--check", "hostile", "--json", "--out", "run"]),
            std::time::Duration::from_secs(60),
        );
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
        let check = only(&report).clone();
        if check["status"] == "blocked" {
            assert_eq!(out.code, 3, "{}", out.stderr);
            // The rest of the reason names the process that escaped, which varies from run to run.
            assert!(
                check["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("survived every round of the kill"),
                "{check}"
            );
            escaped = true;
            break;
        }
        assert_eq!(
            (out.code, check["status"].as_str()),
            (0, Some("passed")),
            "{check}\n{}",
            out.stderr
        );
        assert!(
            common::processes_running(&hopper).is_empty(),
            "a hopper that was not reported survived"
        );
    }
    assert!(
        escaped,
        "in three tries the hopper never outran the kill rounds"
    );
    // The hopper ends by itself; wait for it so that nothing of this test outlives it.
    std::thread::sleep(std::time::Duration::from_secs(4));
}
