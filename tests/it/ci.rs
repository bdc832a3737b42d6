//! `aayu verify --ci` through the real binary: test evidence, red-on-base, the floors and the pack, on
//! copies of the bundled examples with a base commit (the bug) and a head commit (the fix).

use crate::common;
use crate::common::{TALLY_EVIDENCE, TestRepo, copy_tree, example, ready, run, tally};
use serde_json::Value;

fn ci(
    repo: &TestRepo,
    base: &str,
    head: &str,
    story: Option<(u64, &str)>,
    env: &[(&str, &str)],
) -> (i32, Value, String) {
    let mut cmd = repo.aayu();
    common::with_toolchain(&mut cmd)
        .args(["verify", "--ci", "--base", base, "--head", head, "--json"]);
    if let Some((story, ready)) = story {
        cmd.args(["--story", &story.to_string(), "--ready", ready]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let pack: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    // Every pack a test produces is valid, and is the one written to disk.
    let dir = repo.path(&format!(".aayudha/proof/{}", story.map_or(0, |s| s.0)));
    let bytes = std::fs::read(dir.join("pack.json")).expect("pack.json written");
    let decoded =
        aayudha::pack::decode(&bytes).unwrap_or_else(|e| panic!("the written pack decodes: {e}"));
    assert_eq!(serde_json::to_value(&decoded).expect("json"), pack);
    (out.code, pack, out.stderr)
}

fn floor<'a>(pack: &'a Value, name: &str) -> &'a Value {
    pack["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["floor"] == name)
        .unwrap_or_else(|| panic!("no floor {name}: {pack:#}"))
}

fn red_on_base(repo: &TestRepo, story: u64) -> Value {
    let path = repo.path(&format!(
        ".aayudha/proof/{story}/artifacts/reports/red-on-base.json"
    ));
    serde_json::from_str(&std::fs::read_to_string(path).expect("red-on-base report")).expect("json")
}

#[test]
fn a_go_bug_fix_is_evidenced_and_red_on_base_and_runs_are_byte_identical() {
    crate::needs!(go);
    let (repo, base, head) = tally(TALLY_EVIDENCE, "");
    let snapshot = ready(&repo, 902, "1. Blank lines are skipped.", &["type:bug"]);
    let (code, pack, stderr) = ci(&repo, &base, &head, Some((902, &snapshot)), &[]);
    assert_eq!(code, 0, "{pack:#}\n{stderr}");
    let names: Vec<&str> = pack["checks"]
        .as_array()
        .expect("c")
        .iter()
        .map(|c| c["floor"].as_str().expect("f"))
        .collect();
    assert_eq!(
        names,
        vec![
            "coverage",
            "feature-map",
            "weakening",
            "harness",
            "behaviour",
            "tests",
            "red-on-base"
        ]
    );
    assert_eq!(floor(&pack, "tests")["result"], "pass");
    assert_eq!(floor(&pack, "red-on-base")["result"], "pass");
    assert_eq!(
        pack["criteria"],
        serde_json::json!([{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}])
    );
    assert_eq!(
        (
            pack["story"].as_u64(),
            pack["pr_head_sha"].as_str(),
            pack["base_sha"].as_str()
        ),
        (Some(902), Some(head.as_str()), Some(base.as_str()))
    );
    let report = red_on_base(&repo, 902);
    assert_eq!(report["base"], base.as_str());
    assert_eq!(report["criteria"][0]["verdict"], "red");
    assert_eq!(report["criteria"][0]["tests"][0]["result"], "failed");
    let evidence = std::fs::read_to_string(
        repo.path(".aayudha/proof/902/artifacts/evidence/criterion-1.jsonl"),
    )
    .expect("evidence");
    assert!(evidence.lines().count() >= 2, "{evidence}");
    for line in evidence.lines() {
        let event: Value = serde_json::from_str(line).expect("one event per line");
        assert_eq!(
            event["Test"], "TestSumSkipsBlankLines",
            "only the test's own events"
        );
        assert!(
            event.get("Time").is_none() && event.get("Elapsed").is_none(),
            "{line}"
        );
    }
    // Two runs on the same inputs: identical bytes, but for created_at.
    let first = snapshot_of(&repo, 902);
    let (code, _, _) = ci(&repo, &base, &head, Some((902, &snapshot)), &[]);
    assert_eq!(code, 0);
    assert_eq!(first, snapshot_of(&repo, 902));
}

/// Every file of a pack folder, `created_at` blanked.
fn snapshot_of(repo: &TestRepo, story: u64) -> Vec<(String, String)> {
    let dir = repo.path(&format!(".aayudha/proof/{story}"));
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir") {
            let e = e.expect("entry");
            if e.file_type().expect("t").is_dir() {
                stack.push(e.path());
            } else {
                let mut text = std::fs::read_to_string(e.path()).expect("text");
                if let Some(at) = text.find("\"created_at\"") {
                    let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
                    text.replace_range(at..end, "\"created_at\": …");
                }
                files.push((
                    e.path()
                        .strip_prefix(&dir)
                        .expect("rel")
                        .display()
                        .to_string(),
                    text,
                ));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_test_green_on_base_is_advisory_until_the_date_and_fails_from_it() {
    crate::needs!(go);
    let evidence = "[[criterion]]\nid = 1\ntests = [\"examples/tally:TestSumAddsLines\"]\n";
    let (repo, base, head) = tally(
        evidence,
        "[verify]\nred_on_base_blocking_from = \"2026-12-01\"\n",
    );
    let snapshot = ready(&repo, 902, "1. Sums add up.", &["type:bug"]);
    let (code, pack, _) = ci(
        &repo,
        &base,
        &head,
        Some((902, &snapshot)),
        &[("AAYUDHA_NOW", "2026-11-30T23:59:59Z")],
    );
    assert_eq!(code, 0, "{pack:#}");
    let red = floor(&pack, "red-on-base");
    assert_eq!(red["result"], "skipped");
    assert!(
        red["detail"]
            .as_str()
            .expect("d")
            .starts_with("advisory until 2026-12-01"),
        "{red}"
    );
    assert_eq!(red_on_base(&repo, 902)["criteria"][0]["verdict"], "green");
    let (code, pack, _) = ci(
        &repo,
        &base,
        &head,
        Some((902, &snapshot)),
        &[("AAYUDHA_NOW", "2026-12-01T00:00:00Z")],
    );
    assert_eq!(code, 3);
    assert_eq!(floor(&pack, "red-on-base")["result"], "fail");
    // An empty date keeps it advisory forever.
    let (repo, base, head) = tally(evidence, "");
    let snapshot = ready(&repo, 902, "1. Sums add up.", &["type:bug"]);
    let (code, pack, _) = ci(
        &repo,
        &base,
        &head,
        Some((902, &snapshot)),
        &[("AAYUDHA_NOW", "2099-01-01T00:00:00Z")],
    );
    assert_eq!(code, 0);
    assert!(
        floor(&pack, "red-on-base")["detail"]
            .as_str()
            .expect("d")
            .starts_with("advisory (no blocking date set)")
    );
}

#[test]
fn a_test_that_does_not_build_on_base_is_inconclusive() {
    crate::needs!(go);
    // The fix adds `Strict`; its test cannot build on the base, which has no `Strict`.
    let evidence = "[[criterion]]\nid = 1\ntests = [\"examples/tally:TestStrict\"]\n";
    let (repo, _, head) = tally(evidence, "");
    let go = std::fs::read_to_string(repo.path("examples/tally/tally.go")).expect("read");
    repo.write("examples/tally/tally.go", format!("{go}\n// Strict is Sum by another name.\nfunc Strict(lines []string) (int, error) {{ return Sum(lines) }}\n"));
    repo.write("examples/tally/strict_test.go", "package tally\n\nimport \"testing\"\n\nfunc TestStrict(t *testing.T) {\n\tif n, _ := Strict([]string{\"2\"}); n != 2 {\n\t\tt.Fatal(n)\n\t}\n}\n");
    let next = repo.commit("strict");
    let snapshot = ready(&repo, 902, "1. Strict exists.", &["type:bug"]);
    let (code, pack, _) = ci(&repo, &head, &next, Some((902, &snapshot)), &[]);
    assert_eq!(code, 0, "inconclusive never blocks: {pack:#}");
    let report = red_on_base(&repo, 902);
    assert_eq!(report["criteria"][0]["verdict"], "inconclusive");
    assert_eq!(
        report["criteria"][0]["tests"][0]["result"], "not-built",
        "{report:#}"
    );
    // Nothing red on the base proves nothing: the floor says so, and still holds.
    let floor = floor(&pack, "red-on-base");
    assert_eq!(floor["result"], "skipped", "{pack:#}");
    assert!(
        floor["detail"].as_str().is_some_and(|d| d
            .starts_with("nothing shown red: examples/tally:TestStrict did not build on base (")),
        "{floor:#}"
    );
}

/// A story whose evidence maps no test has nothing to show on the base: red-on-base is skipped and says
/// so (the tests floor, not red-on-base, judges the check it maps).
#[test]
fn evidence_without_a_mapped_test_leaves_red_on_base_nothing_to_run() {
    let (repo, _, base) = tally("", "");
    repo.write(
        &format!("{}/README.md", common::skill("", "tally")),
        common::map_readme(
            r#"{"product": "tally", "control": ["aayu", "control"], "surfaces": []}"#,
            &["sums.md"],
        ),
    )
    .write(
        &format!("{}/sums.md", common::skill("", "tally")),
        common::feature_md(
            r#"{"id": "sums", "layers": ["L02"], "sources": ["examples/tally/tally.go"], "surfaces": {}, "verified_at": ""}"#,
            &[r#"{"id": "runs", "kind": "cli", "evidence": "api-trace", "steps": [{"run": ["true"], "exit": 0}]}"#],
        ),
    )
    .write(
        ".aayudha/evidence/902.toml",
        "[[criterion]]\nid = 1\nchecks = [\"sums.runs\"]\n",
    );
    let head = repo.commit("a check, and no test, as the evidence");
    let snapshot = ready(&repo, 902, "1. Blank lines are skipped.", &["type:bug"]);
    let (_, pack, stderr) = ci(&repo, &base, &head, Some((902, &snapshot)), &[]);
    let floor = floor(&pack, "red-on-base");
    assert_eq!(floor["result"], "skipped", "{pack:#}\n{stderr}");
    assert_eq!(
        floor["detail"], "no mapped test to run on the base",
        "{floor:#}"
    );
}

#[test]
fn a_shallow_clone_is_inconclusive_with_the_fetch_depth_hint() {
    crate::needs!(go);
    let (repo, base, head) = tally(TALLY_EVIDENCE, "");
    // The base one commit further back than the head's shallow edge, as actions/checkout at depth 1 plus a
    // fetch of the other side leaves a pull request's clone.
    repo.git(&["branch", "base-branch", &base]);
    let parent = tempfile::Builder::new()
        .prefix("aayu-shallow-")
        .tempdir()
        .expect("temp");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let url = format!("file://{}", repo.root().display());
    assert!(
        common::git_command(parent.path())
            .args(["clone", "-q", "--depth", "1", &url, "c"])
            .status()
            .expect("clone")
            .success()
    );
    let clone = parent.path().join("c");
    assert!(
        common::git_command(&clone)
            .args(["fetch", "-q", "--depth", "1", "origin", "base-branch"])
            .status()
            .expect("fetch")
            .success()
    );
    let snapshot = ready(&repo, 902, "1. Blank lines are skipped.", &["type:bug"]);
    let out = run(common::with_toolchain(&mut common::aayu_in(&clone)).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "902", "--ready", &snapshot,
        "--json",
    ]));
    assert_eq!(
        out.code, 0,
        "inconclusive never blocks: {}\n{}",
        out.stdout, out.stderr
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(
            clone.join(".aayudha/proof/902/artifacts/reports/red-on-base.json"),
        )
        .expect("report"),
    )
    .expect("json");
    let verdict = &report["criteria"][0];
    assert_eq!(verdict["verdict"], "inconclusive", "{report:#}");
    insta::assert_snapshot!(
        "shallow_base_inconclusive",
        common::redact(verdict["reason"].as_str().expect("reason"))
    );
    assert_eq!(report["base"], "", "no base was guessed");
}

#[test]
fn criteria_without_evidence_say_why_and_fail_the_tests_floor() {
    crate::needs!(go);
    let evidence = "[[criterion]]\nid = 1\ntests = [\"examples/tally:TestNoSuchTest\"]\n\n[[criterion]]\nid = 2\ntests = [\"examples/tally:TestBroken\"]\n\n[[criterion]]\nid = 3\ntests = [\"examples/tally:TestSumSkipsBlankLines\"]\n";
    let (repo, _, head) = tally(evidence, "");
    repo.write("examples/tally/broken_test.go", "package tally\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) {\n\tt.Fatal(\"the total is wrong\")\n}\n");
    let next = repo.commit("a failing test");
    let snapshot = ready(&repo, 902, "1. One.\n2. Two.\n3. Three.", &[]);
    let (code, pack, _) = ci(&repo, &head, &next, Some((902, &snapshot)), &[]);
    assert_eq!(code, 3, "{pack:#}");
    let tests = floor(&pack, "tests");
    assert_eq!(
        (
            tests["result"].as_str(),
            tests["value"].as_f64(),
            tests["threshold"].as_f64()
        ),
        (Some("fail"), Some(1.0), Some(3.0))
    );
    assert_eq!(
        floor(&pack, "red-on-base")["result"],
        "skipped",
        "not a bug story"
    );
    assert_eq!(pack["criteria"][0]["evidence"], serde_json::json!([]));
    assert_eq!(pack["criteria"][1]["evidence"], serde_json::json!([]));
    assert_eq!(
        pack["criteria"][2]["evidence"],
        serde_json::json!(["evidence/criterion-3.jsonl"])
    );
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", &head, "--head", &next, "--story", "902", "--ready", &snapshot,
    ]));
    crate::aayu_snapshot!("missing_and_failing_tests", stdout out);
    assert!(
        !repo
            .path(".aayudha/proof/902/artifacts/evidence/criterion-1.jsonl")
            .exists()
    );
}

#[test]
fn without_a_story_only_the_map_floors_run() {
    crate::needs!(go);
    let (repo, base, head) = tally(TALLY_EVIDENCE, "");
    let (code, pack, _) = ci(&repo, &base, &head, None, &[]);
    assert_eq!(code, 0, "{pack:#}");
    assert_eq!(pack["story"], 0);
    assert_eq!(floor(&pack, "tests")["result"], "skipped");
    assert!(
        floor(&pack, "tests")["detail"]
            .as_str()
            .expect("d")
            .starts_with("no story: only the map floors")
    );
    assert_eq!(
        floor(&pack, "feature-map")["result"],
        "skipped",
        "no map in the tally repository"
    );
}

#[test]
fn a_snapshot_edited_after_ready_is_refused() {
    crate::needs!(go);
    let (repo, base, head) = tally(TALLY_EVIDENCE, "");
    let snapshot = ready(&repo, 902, "1. Blank lines are skipped.", &["type:bug"]);
    let text = std::fs::read_to_string(&snapshot).expect("read");
    std::fs::write(&snapshot, text.replace("are skipped", "are ignored")).expect("write");
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "902", "--ready", &snapshot,
    ]));
    crate::aayu_snapshot!("an_edited_snapshot_is_refused", out);
}

#[test]
fn a_rust_bug_fix_is_red_on_base_and_a_check_of_the_wrong_kind_is_no_evidence() {
    let repo = TestRepo::new();
    copy_tree(&example("notes"), &repo, "examples/notes");
    let fixed = std::fs::read_to_string(repo.path("examples/notes/src/store.rs")).expect("read");
    let buggy = fixed.replace("        .filter(|line| !line.trim().is_empty())\n", "");
    assert_ne!(
        fixed, buggy,
        "the example's fix is where the test expects it"
    );
    let blank =
        std::fs::read_to_string(repo.path("examples/notes/tests/blank_lines.rs")).expect("read");
    repo.remove("examples/notes/tests/blank_lines.rs");
    repo.write("examples/notes/src/store.rs", &buggy);
    let base = repo.commit("notes with the bug");
    // The fix, its integration test, and a unit test that exists only at the head.
    let unit = fixed.replace(
        "    #[test]\n    fn add_numbers_from_one() {",
        "    #[test]\n    fn blank_lines_are_skipped() {\n        assert!(true);\n    }\n\n    #[test]\n    fn add_numbers_from_one() {",
    );
    repo.write("examples/notes/src/store.rs", &unit);
    repo.write("examples/notes/tests/blank_lines.rs", &blank);
    repo.write(
        ".aayudha/evidence/901.toml",
        "[[criterion]]\nid = 1\ntests = [\"examples/notes:a_blank_line_in_the_store_is_skipped\"]\n\n[[criterion]]\nid = 2\nchecks = [\"mark-done.missing\"]\n\n[[criterion]]\nid = 3\ntests = [\"examples/notes:store::tests::blank_lines_are_skipped\"]\n",
    );
    let head = repo.commit("fix: skip blank lines");
    let snapshot = ready(
        &repo,
        901,
        "1. Blank lines are read.\n2. The page says so. (evidence: screenshot)\n3. The store skips them.",
        &["type:bug"],
    );
    let (code, pack, stderr) = ci(&repo, &base, &head, Some((901, &snapshot)), &[]);
    assert_eq!(code, 3, "criterion 2 has no evidence: {pack:#}\n{stderr}");
    assert_eq!(floor(&pack, "behaviour")["result"], "pass", "{pack:#}");
    assert_eq!(floor(&pack, "tests")["value"], 2.0);
    assert_eq!(pack["criteria"][1]["evidence"], serde_json::json!([]));
    let report = red_on_base(&repo, 901);
    let verdicts: Vec<(&str, &str)> = report["criteria"]
        .as_array()
        .expect("criteria")
        .iter()
        .map(|c| {
            (
                c["verdict"].as_str().expect("v"),
                c["tests"]
                    .get(0)
                    .and_then(|t| t["result"].as_str())
                    .unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("red", "failed"),
            ("inconclusive", ""),
            ("inconclusive", "not-found")
        ],
        "{report:#}"
    );
    let evidence = std::fs::read_to_string(
        repo.path(".aayudha/proof/901/artifacts/evidence/criterion-1.jsonl"),
    )
    .expect("evidence");
    for line in evidence.lines() {
        let event: Value = serde_json::from_str(line).expect("event");
        assert_eq!(event["name"], "a_blank_line_in_the_store_is_skipped");
        assert!(event.get("exec_time").is_none(), "{line}");
    }
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "901", "--ready", &snapshot,
    ]));
    crate::aayu_snapshot!("check_without_the_evidence_kind", stdout out);
}

#[test]
fn a_rust_test_that_does_not_build_is_reported_as_such() {
    let (repo, base, head) = {
        let repo = TestRepo::new();
        copy_tree(&example("notes"), &repo, "examples/notes");
        let base = repo.commit("notes");
        repo.write(
            "examples/notes/tests/broken.rs",
            "#[test]\nfn uses_what_does_not_exist() {\n    notes::nothing_here();\n}\n",
        );
        repo.write(
            ".aayudha/evidence/5.toml",
            "[[criterion]]\nid = 1\ntests = [\"examples/notes:broken/uses_what_does_not_exist\"]\n",
        );
        let head = repo.commit("a test that does not compile");
        (repo, base, head)
    };
    let snapshot = ready(&repo, 5, "1. It works.", &[]);
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "5", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    // The report goes on with rustc's own error, whose words change with the toolchain.
    assert!(
        out.stdout.contains("criterion 1: no evidence — `examples/notes:broken/uses_what_does_not_exist` did not build: target `broken(test)` did not build"),
        "{}",
        out.stdout
    );
}

/// The pack's `footprint`: the layers of `aayu init`'s `LAYERS.md` starter whose globs match a changed
/// path, sorted; a path in no layer adds none. No toolchain: the repository has no stack.
#[test]
fn the_footprint_lists_the_layers_a_change_touches() {
    let repo = TestRepo::new();
    repo.write("README.md", "# tally\n");
    let init = run(repo
        .aayu()
        .args(["init", "--yes"])
        .env("GITHUB_API_URL", "http://127.0.0.1:9"));
    assert_eq!(init.code, 0, "{}\n{}", init.stdout, init.stderr);
    let base = repo.commit("base");
    repo.write(
        "migrations/001_counts.sql",
        "CREATE TABLE counts (n INTEGER);\n",
    )
    .write("cmd/tally/main.go", "package main\n\nfunc main() {}\n")
    .write("notes.txt", "in no layer\n");
    let head = repo.commit("a command and its table");
    let (_, pack, stderr) = ci(&repo, &base, &head, None, &[]);
    assert_eq!(
        pack["footprint"],
        serde_json::json!(["L02", "L04"]),
        "{stderr}"
    );
}
