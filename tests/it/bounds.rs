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

/// Writes the map of product `shop` (built-in step runner, these surface rules) with feature `f` of this
/// block and check.
fn write_map(repo: &TestRepo, rules: &str, block: &str, check: &str) {
    let dir = skill("", "shop");
    let map = format!(
        r#"{{"product": "shop", "control": ["aayu", "control"],
 "surfaces": {rules}}}"#
    );
    repo.write(&format!("{dir}/README.md"), map_readme(&map, &["f.md"]))
        .write(&format!("{dir}/f.md"), feature_md(block, &[check]));
}

/// A map of product `shop` with these surface rules and one feature whose check has these steps.
fn map_repo(rules: &str, steps: &str) -> TestRepo {
    let repo = TestRepo::new();
    let block = r#"{"id": "f", "layers": ["L02"], "sources": ["src/main.rs"], "surfaces": {}, "verified_at": ""}"#;
    let check =
        format!(r#"{{"id": "c", "kind": "ui", "evidence": "screenshot", "steps": {steps}}}"#);
    repo.write("src/main.rs", "fn main() {}\n");
    write_map(&repo, rules, block, &check);
    repo.commit("map");
    repo
}

#[test]
fn a_surface_rule_over_the_size_limit_is_a_contract_error_at_its_line() {
    let repo = map_repo(
        r#"[{"kind": "func", "files": ["src/*.rs"], "pattern": "\\w*a\\w{200}(\\s)"}]"#,
        "[]",
    );
    crate::aayu_snapshot!(
        "surface_rule_over_the_size_limit",
        run(repo.aayu().args(["verify", "--map"]))
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
        (steps(&many), "too_many_handles"),
        (
            steps(&["y".repeat(MAX_HANDLE_LEN + 1)]),
            "too_long_a_handle",
        ),
        (steps(&large), "too_large_handles"),
    ];
    for (steps, name) in cases {
        let repo = map_repo("[]", &steps);
        let out = common::run_within(
            repo.aayu().args(["verify", "--map"]),
            std::time::Duration::from_secs(60),
        );
        crate::aayu_snapshot!(name, out);
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
    // Uids no other test uses: the locks of this folder keep no other run off them.
    repo.write(
        ".aayudha/config.toml",
        "[verify]\ncheck_timeout_s = 5\nsandbox_uids = [61900, 61909]\n",
    );
    repo.commit("uids of its own");
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
    let first = dir.join("aayu-sandbox-uid-61900.lock");
    std::fs::remove_file(&first).expect("rm");
    nix::unistd::mkfifo(&first, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
    crate::aayu_snapshot!("uid_lock_a_fifo", check(&dir));
    std::fs::remove_file(&first).expect("rm");
    std::os::unix::fs::symlink("/etc/passwd", &first).expect("link");
    crate::aayu_snapshot!("uid_lock_a_link", check(&dir));
    std::fs::remove_file(&first).expect("rm");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    crate::aayu_snapshot!("uid_locks_writable_by_others", check(&dir));
    let elsewhere = locks.path().join("elsewhere");
    std::os::unix::fs::symlink(&dir, &elsewhere).expect("link");
    crate::aayu_snapshot!("uid_locks_behind_a_link", check(&elsewhere));
}

/// A map of product `shop` whose feature `f` has these sources and claimed `func` surfaces, verified at
/// `verified`, with these surface rules.
fn scan_repo(repo: &TestRepo, rules: &str, sources: &str, verified: &str) {
    let block = format!(
        r#"{{"id": "f", "layers": ["L02"], "sources": {sources}, "surfaces": {{"func": ["main", "hidden"]}}, "verified_at": "{verified}"}}"#
    );
    write_map(
        repo,
        rules,
        &block,
        r#"{"id": "c", "kind": "cli", "evidence": "api-trace", "steps": []}"#,
    );
}

/// Runs aayu to its end, reading its peak resident memory (`VmHWM`, a high-water mark the kernel keeps)
/// from `/proc/<pid>/status` while it runs; the exit code, stdout and the peak in KiB.
fn with_peak_memory(cmd: &mut std::process::Command) -> (i32, String, u64) {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("aayu starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let code = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code().unwrap_or(-1);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    (code, reader.join().expect("stdout"), peak)
}

#[test]
fn a_source_over_max_source_bytes_is_left_out_still_stale_checked_and_memory_stays_bounded() {
    let repo = TestRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    let big = repo.path("src/big.rs");
    // 100 MiB of zeros, sparse on disk (and a few hundred KiB in git).
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(100 << 20))
        .expect("sparse file");
    scan_repo(
        &repo,
        r#"[{"kind": "func", "files": ["src/*.rs"], "pattern": "fn (\\w+)\\("}]"#,
        r#"["src/main.rs", "src/big.rs"]"#,
        "",
    );
    let verified = repo.commit("the big file");
    scan_repo(
        &repo,
        r#"[{"kind": "func", "files": ["src/*.rs"], "pattern": "fn (\\w+)\\("}]"#,
        r#"["src/main.rs", "src/big.rs"]"#,
        &verified,
    );
    repo.commit("verified");
    // Changed since it was verified, in the working tree: its blob id must be computed, by streaming.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&big)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"fn hidden() {}\n"))
        .expect("append");
    let (code, stdout, peak_kib) =
        with_peak_memory(repo.aayu().args(["verify", "--map", "--json"]));
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(code, 0, "no drift from a file left out: {report:#}");
    assert_eq!(report["drift"], serde_json::json!([]), "{report:#}");
    assert!(
        report["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .any(|w| w["file"] == "src/big.rs"
                && w["message"] == "skipped: 100 MiB is over max_source_bytes (16 MiB)"),
        "{report:#}"
    );
    assert_eq!(report["stale"][0]["feature"], "f", "{report:#}");
    assert_eq!(report["stale"][0]["reason"], "changed", "{report:#}");
    // 64 MiB for the scan plus one capped file per scan thread (the suite's machines have 2 cores; the
    // binary's own pages are in it too). Reading the file whole would take 100 MiB alone.
    let threads = std::thread::available_parallelism().map_or(2, usize::from) as u64;
    let bound_kib = (64 << 10) + threads * (16 << 10);
    assert!(
        peak_kib > 0 && peak_kib < bound_kib,
        "peak {peak_kib} KiB, bound {bound_kib} KiB"
    );
}

#[test]
fn slow_rules_stop_at_the_scan_budget_and_are_named() {
    let repo = TestRepo::new();
    // Lines of long lowercase words, where `[a-z]*a[a-z]{200}(\s)` (15 KiB compiled, under the size limit)
    // searches slowly.
    let mut text = String::with_capacity(1 << 20);
    let mut seed: u64 = 7;
    while text.len() < 1 << 20 {
        for _ in 0..150 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push((b'a' + ((seed >> 40) % 26) as u8) as char);
        }
        text.push('\n');
    }
    repo.write("src/main.rs", "fn main() {}\n")
        .write("src/long.txt", &text);
    let rules = |n: usize| {
        let rules: Vec<String> = (b'a'..)
            .take(n)
            .map(|c| {
                format!(
                    r#"{{"kind": "func", "files": ["src/long.txt"], "pattern": "[a-z]*{}[a-z]{{200}}(\\s)"}}"#,
                    c as char
                )
            })
            .collect();
        format!("[{}]", rules.join(", "))
    };
    // One rule, with the default budget: the time one search takes here.
    scan_repo(&repo, &rules(1), r#"["src/main.rs"]"#, "");
    repo.commit("one slow rule");
    let started = std::time::Instant::now();
    let one = run(repo.aayu().args(["verify", "--map"]));
    let one_search = started.elapsed();
    // Whatever else the report says, the scan did not stop.
    assert!(!one.stdout.contains("scan stopped"), "{}", one.stdout);
    // Sixteen, with a budget of one second: stopped after the budget and at most about one more search.
    scan_repo(&repo, &rules(16), r#"["src/main.rs"]"#, "");
    repo.write(".aayudha/config.toml", "[verify]\nscan_timeout_s = 1\n");
    repo.commit("sixteen slow rules");
    let started = std::time::Instant::now();
    let out = run(repo.aayu().args(["verify", "--map"]));
    let took = started.elapsed();
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("scan stopped: "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        line.starts_with("scan stopped: the scan ran past its budget of 1 s (`[verify] scan_timeout_s`): the surface rule at `.agents/skills/verify-shop/features/README.md:")
            && line.ends_with("longest over `src/long.txt`: simplify the rule or narrow its files"),
        "{line}"
    );
    let bound = std::time::Duration::from_secs(1) + one_search * 2;
    assert!(
        took < bound,
        "took {took:?}; the budget and two searches: {bound:?}"
    );
}
