//! The coverage floor on a Go module as repositories lay one out: a touched package (`calc`) whose change
//! adds covered and uncovered executable lines, comments, blank lines, a type declaration and an import,
//! and changes a test file; a package the change does not touch (`report`), whose tests call into the
//! touched one. The number and the line lists are checked against `go test -coverprofile` and `git diff`
//! run by the test itself, not against numbers written here.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, TestRepo, ready, run};

const CALC_BASE: &str =
    "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n";

const CALC_HEAD: &str = "package calc\n\nimport \"strings\"\n\n// Pair is two numbers.\ntype Pair struct {\n\tA, B int\n}\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Sum adds a pair.\nfunc (p Pair) Sum() int {\n\treturn Add(p.A, p.B)\n}\n\n// Shout is never tested.\nfunc Shout(s string) string {\n\tif s == \"\" {\n\t\treturn \"!\"\n\t}\n\treturn strings.ToUpper(s) + \"!\"\n}\n";

const CALC_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n\nfunc TestSum(t *testing.T) {\n\tif (Pair{1, 2}).Sum() != 3 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n";

/// A module with `calc` (touched) and `report` (not touched, its tests call `calc`), at the base and the
/// head; the evidence maps `calc:TestAdd`. Extra head files as given.
fn module(config: &str, head_extra: &[(&str, &str)]) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    repo.write("go.mod", "module example.com/shop\n\ngo 1.19\n")
        .write("calc/calc.go", CALC_BASE)
        .write(
            "report/report.go",
            "package report\n\nimport \"example.com/shop/calc\"\n\n// Total is the total.\nfunc Total() int { return calc.Add(1, 1) }\n",
        )
        .write(
            "report/report_test.go",
            "package report\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif Total() < 0 {\n\t\tt.Fatal(\"negative\")\n\t}\n}\n",
        )
        .write(".gitignore", ".aayudha/runs/\n.aayudha/proof/\n")
        .write(".aayudha/config.toml", config);
    let base = repo.commit("calc, with the bug");
    repo.write("calc/calc.go", CALC_HEAD)
        .write("calc/calc_test.go", CALC_TEST)
        .write(
            ".aayudha/evidence/7.toml",
            "[[criterion]]\nid = 1\ntests = [\"calc:TestAdd\"]\n",
        );
    for (path, text) in head_extra {
        repo.write(path, text);
    }
    let head = repo.commit("fix: add adds");
    (repo, base, head)
}

fn gate(repo: &TestRepo, base: &str, head: &str) -> (i32, Value, String) {
    let snapshot = ready(repo, 7, "1. Two numbers add up.", &["type:bug"]);
    let out = run(repo.aayu().args([
        "verify", "--ci", "--base", base, "--head", head, "--story", "7", "--ready", &snapshot,
        "--json",
    ]));
    let pack = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out.code, pack, format!("{}\n{}", out.stdout, out.stderr))
}

/// What the test itself finds: `git diff -U0`'s `+` lines of `calc/calc.go`, and of those, the ones a block
/// of `go test -coverprofile ./calc` (run here, in a copy) spans, and the ones a block that ran spans.
fn expected(repo: &TestRepo, base: &str, head: &str) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let diff = repo.git(&[
        "diff",
        "-U0",
        "--no-color",
        base,
        head,
        "--",
        "calc/calc.go",
    ]);
    let mut added = BTreeSet::new();
    for line in diff.lines().filter(|l| l.starts_with("@@")) {
        let plus = line.split_whitespace().nth(2).expect("+a,b");
        let (start, count) = plus
            .trim_start_matches('+')
            .split_once(',')
            .map_or((plus.trim_start_matches('+'), "1"), |(s, c)| (s, c));
        let (start, count): (u32, u32) = (start.parse().expect("n"), count.parse().expect("n"));
        added.extend(start..start + count);
    }
    // In the checkout at the head: go test writes nothing there (the profile and the cache are outside).
    let copy = tempfile::tempdir().expect("scratch");
    let profile = copy.path().join("cover.out");
    let status = Command::new("go")
        .args(["test", "-count=1", "-covermode=set"])
        .arg(format!("-coverprofile={}", profile.display()))
        .arg("./calc")
        .current_dir(repo.root())
        .env("GOCACHE", copy.path().join(".gocache"))
        .output()
        .expect("go test");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let mut executable = BTreeSet::new();
    let mut covered = BTreeSet::new();
    for line in std::fs::read_to_string(profile)
        .expect("profile")
        .lines()
        .skip(1)
    {
        let words: Vec<&str> = line.split(' ').collect();
        let (place, statements, count) = (words[0], words[1], words[2]);
        if statements == "0" {
            continue;
        }
        let range = place.rsplit_once(':').expect(":").1;
        let (a, b) = range.split_once(',').expect(",");
        let line_of = |s: &str| s.split('.').next().expect(".").parse::<u32>().expect("n");
        for n in line_of(a)..=line_of(b) {
            executable.insert(n);
            if count != "0" {
                covered.insert(n);
            }
        }
    }
    let changed: BTreeSet<u32> = added.intersection(&executable).copied().collect();
    let ran: BTreeSet<u32> = changed.intersection(&covered).copied().collect();
    (changed, ran)
}

#[test]
fn the_touched_packages_suites_give_the_changes_diff_coverage() {
    crate::needs!(go);
    // A folder of `//go:build ignore` files (a generator) is no package: it blocks nothing.
    let (repo, base, head) = module(
        "",
        &[(
            "tools/gen.go",
            "//go:build ignore\n\npackage main\n\nfunc main() {}\n",
        )],
    );
    let (code, pack, said) = gate(&repo, &base, &head);
    assert_eq!(code, 0, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(pack["checks"][0]["floor"], "coverage", "first in checks");
    let (changed, ran) = expected(&repo, &base, &head);
    assert!(
        !changed.is_empty() && ran.len() < changed.len(),
        "the fixture has both: {changed:?} {ran:?}"
    );
    let value = (ran.len() * 100 / changed.len()) as f64;
    assert_eq!(floor["value"], value, "{floor:#}");
    assert_eq!(floor["threshold"], 90.0);
    // Under the threshold, with no blocking date: advisory.
    assert_eq!(floor["result"], "pass", "{floor:#}");
    assert_eq!(
        floor["detail"],
        format!(
            "advisory (no blocking date set): {} of {} changed executable lines covered (go coverprofile)",
            ran.len(),
            changed.len()
        )
    );
    assert_eq!(
        floor["tool"],
        "aayudha diff coverage (go test -coverprofile)"
    );
    assert!(
        floor["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("go1.")),
        "{floor:#}"
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/7/artifacts/reports/coverage.json"))
            .expect("reports/coverage.json"),
    )
    .expect("json");
    let files = report["files"].as_array().expect("files");
    // Only the touched package's file: the untouched `report` and the test file are not in it.
    assert_eq!(files.len(), 1, "{report:#}");
    assert_eq!(files[0]["path"], "calc/calc.go");
    let lines = |key: &str| -> BTreeSet<u32> {
        files[0][key]
            .as_array()
            .expect("lines")
            .iter()
            .map(|n| n.as_u64().expect("n") as u32)
            .collect()
    };
    assert_eq!(lines("changed_executable"), changed);
    let uncovered: BTreeSet<u32> = changed.difference(&ran).copied().collect();
    assert_eq!(lines("uncovered"), uncovered);
    assert_eq!(report["changed_executable"], changed.len());
    assert_eq!(report["covered"], ran.len());
    assert_eq!(
        (report["base"].as_str(), report["head"].as_str()),
        (Some(base.as_str()), Some(head.as_str()))
    );
    // The same bytes on a second run; and under the table, where a person looks, each run of uncovered
    // lines.
    let snapshot = ready(&repo, 7, "1. Two numbers add up.", &["type:bug"]);
    let out = run(repo.aayu().args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = uncovered.iter().next().expect("one");
    assert!(
        out.stdout.contains(&format!("calc/calc.go:{first}")) && out.stdout.contains(": uncovered"),
        "{}",
        out.stdout
    );
    let again =
        std::fs::read_to_string(repo.path(".aayudha/proof/7/artifacts/reports/coverage.json"))
            .expect("again");
    assert_eq!(serde_json::from_str::<Value>(&again).expect("json"), report);
}

#[test]
fn under_the_threshold_fails_from_the_blocking_date_and_a_failing_unmapped_test_fails_the_floor() {
    crate::needs!(go);
    let (repo, base, head) = module("[verify]\ncoverage_blocking_from = \"2020-01-01\"\n", &[]);
    let (code, pack, said) = gate(&repo, &base, &head);
    assert_ne!(code, 0, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "fail", "{floor:#}");
    assert!(
        !floor["detail"]
            .as_str()
            .unwrap_or("")
            .starts_with("advisory"),
        "{floor:#}"
    );
    // A test of the suite that no criterion maps fails: no number, the test named.
    let (repo, base, head) = module(
        "",
        &[(
            "calc/broken_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { t.Fatal(\"broken\") }\n",
        )],
    );
    let (_, pack, said) = gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "fail", "{said}");
    assert_eq!(
        floor["detail"],
        "`TestBroken` in `calc` of the suite failed and no criterion maps it: a broken suite has no coverage to report — fix it, or map it to the criterion it tests"
    );
    assert!(
        !repo
            .path(".aayudha/proof/7/artifacts/reports/coverage.json")
            .exists()
    );
    // A mapped test that panics ends the test binary before it writes its profile: no number, never
    // "no changed executable line".
    let panics = CALC_TEST.replace(
        "if Add(2, 2) != 4 {",
        "if Add(2, 2) == 4 {\n\t\tpanic(\"boom\")\n\t}\n\tif false {",
    );
    let (repo, base, head) = module("", &[("calc/calc_test.go", &panics)]);
    let (_, pack, said) = gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "fail", "{said}");
    assert!(
        floor["detail"]
            .as_str()
            .unwrap_or("")
            .contains("and wrote no coverage: a panic or an exit ended the test binary"),
        "{floor:#}"
    );
}

#[test]
fn a_comment_only_change_has_no_changed_executable_line() {
    crate::needs!(go);
    let repo = TestRepo::new();
    repo.write("go.mod", "module example.com/shop\n\ngo 1.19\n")
        .write("calc/calc.go", CALC_BASE)
        .write("calc/calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 0 {\n\t\tt.Fatal(\"2-2\")\n\t}\n}\n")
        .write(".gitignore", ".aayudha/runs/\n.aayudha/proof/\n")
        .write(".aayudha/config.toml", "");
    let base = repo.commit("calc");
    repo.write(
        "calc/calc.go",
        CALC_BASE.replace(
            "// Add adds.",
            "// Add adds\n// (a comment, and a blank line below).\n",
        ),
    )
    .write(
        ".aayudha/evidence/7.toml",
        "[[criterion]]\nid = 1\ntests = [\"calc:TestAdd\"]\n",
    );
    let head = repo.commit("docs");
    let snapshot = ready(&repo, 7, "1. Two numbers add up.", &["type:docs"]);
    let out = run(repo.aayu().args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
        "--json",
    ]));
    let pack: Value = serde_json::from_str(&out.stdout).expect("pack");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "skipped", "{floor:#}");
    assert_eq!(floor["detail"], "no changed executable line");
    // Without a story: skipped, as tests and red-on-base are.
    let out = run(repo
        .aayu()
        .args(["verify", "--ci", "--base", &base, "--head", &head, "--json"]));
    let pack: Value = serde_json::from_str(&out.stdout).expect("pack");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "skipped");
    assert!(
        floor["detail"]
            .as_str()
            .unwrap_or("")
            .starts_with("no story"),
        "{floor:#}"
    );
}
