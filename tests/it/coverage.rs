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
    let added = added(repo, base, head, "calc/calc.go");
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
    // The uncovered line is the one go's profile names (computed above), among the table's lines.
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
    // The detail starts with the test binary's hashed file name, which changes with the toolchain.
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

// Rust: a workspace of two crates. `calc` (touched) is a lib and a bin of one name, with an inline
// `#[cfg(test)]` module, a `#[cfg(test)] mod more;` file and an integration test that runs the bin;
// `report` (not touched) calls into `calc` from its tests. Every test appends its name to a file, so the
// test can tell how often each ran.

/// A test helper that appends `name` to the marks file (written into each test target), a line in one
/// write: tests run side by side.
fn mark_fn(marks: &std::path::Path) -> String {
    format!(
        "fn mark(name: &str) {{\n        use std::io::Write;\n        let mut f = std::fs::OpenOptions::new().append(true).open({:?}).unwrap();\n        f.write_all(format!(\"{{name}}\\n\").as_bytes()).unwrap();\n    }}\n",
        marks.display().to_string()
    )
}

const CALC_LIB_BASE: &str = "//! A calculator.\n\n/// Adds two numbers.\npub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n";

/// The head's lib: the fix, a `use` line, a type declaration, comments and blank lines, an impl a test
/// runs, an unused generic function, a function no test runs, and the tests.
fn calc_lib_head(marks: &std::path::Path) -> String {
    format!(
        "//! A calculator.\n\nuse std::fmt;\n\n#[cfg(test)]\nmod more;\n\n/// A pair of numbers.\n#[derive(Debug, Clone, Copy)]\npub struct Pair {{\n    pub a: i64,\n    pub b: i64,\n}}\n\n// Adding is the one operation.\n/// Adds two numbers.\npub fn add(a: i64, b: i64) -> i64 {{\n    a + b\n}}\n\nimpl fmt::Display for Pair {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n        write!(f, \"{{}} + {{}}\", self.a, self.b)\n    }}\n}}\n\n/// The first of a list: never called, an unused generic function.\npub fn first<T: Clone>(xs: &[T]) -> Option<T> {{\n    xs.first().cloned()\n}}\n\n/// Shouts; only the CLI's `--shout`, which no test runs, calls it.\npub fn shout(s: &str) -> String {{\n    if s.is_empty() {{\n        return \"!\".to_string();\n    }}\n    format!(\"{{}}!\", s.to_uppercase())\n}}\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    {}\n    #[test]\n    fn adds() {{\n        mark(\"calc:adds\");\n        assert_eq!(add(2, 2), 4);\n    }}\n\n    #[test]\n    fn pairs_print() {{\n        mark(\"calc:pairs_print\");\n        assert_eq!(Pair {{ a: 1, b: 2 }}.to_string(), \"1 + 2\");\n    }}\n}}\n",
        mark_fn(marks)
    )
}

const CALC_MAIN_BASE: &str = "fn main() {\n    let n: Vec<i64> = std::env::args().skip(1).map(|a| a.parse().unwrap_or(0)).collect();\n    println!(\"{}\", calc::add(n[0], n[1]));\n}\n";

const CALC_MAIN_HEAD: &str = "fn main() {\n    let args: Vec<String> = std::env::args().skip(1).collect();\n    if args.first().map(String::as_str) == Some(\"--shout\") {\n        println!(\"{}\", calc::shout(&args[1..].join(\" \")));\n        return;\n    }\n    let n: Vec<i64> = args.iter().map(|a| a.parse().unwrap_or(0)).collect();\n    let sum = calc::add(n[0], n[1]);\n    println!(\"{sum}\");\n}\n";

/// The workspace at the base and the head (the fix, with the evidence map for story 8); `extra` files at
/// the head; the marks file's folder, kept alive by the caller.
fn workspace(
    config: &str,
    extra: &[(&str, String)],
) -> (
    TestRepo,
    String,
    String,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let (marks_dir, marks) = common::shared_log("aayu-marks-", 0o777, "marks");
    let repo = TestRepo::new();
    repo.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/calc\", \"crates/report\"]\nresolver = \"2\"\n",
    )
    .write(
        "crates/calc/Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"calc\"\npath = \"src/main.rs\"\n",
    )
    .write("crates/calc/src/lib.rs", CALC_LIB_BASE)
    .write("crates/calc/src/main.rs", CALC_MAIN_BASE)
    .write(
        "crates/report/Cargo.toml",
        "[package]\nname = \"report\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncalc = { path = \"../calc\" }\n",
    )
    .write(
        "crates/report/src/lib.rs",
        format!(
            "//! Reports.\n\n/// The total.\npub fn total() -> i64 {{\n    calc::add(1, 1)\n}}\n\n#[cfg(test)]\nmod tests {{\n    {}\n    #[test]\n    fn totals() {{\n        mark(\"report:totals\");\n        assert!(super::total() >= 0);\n    }}\n}}\n",
            mark_fn(&marks)
        ),
    )
    .write(".gitignore", "/target\n.aayudha/runs/\n.aayudha/proof/\n")
    .write(".aayudha/config.toml", config);
    let base = repo.commit("calc, with the bug");
    repo.write("crates/calc/src/lib.rs", calc_lib_head(&marks))
        .write("crates/calc/src/main.rs", CALC_MAIN_HEAD)
        .write(
            "crates/calc/src/more.rs",
            format!(
                "use super::*;\n\n{}\n#[test]\nfn adds_more() {{\n    mark(\"calc:adds_more\");\n    assert_eq!(add(1, 1), 2);\n}}\n",
                mark_fn(&marks)
            ),
        )
        .write(
            "crates/calc/tests/cli.rs",
            format!(
                "{}\n#[test]\nfn cli_adds() {{\n    mark(\"calc:cli_adds\");\n    let out = std::process::Command::new(env!(\"CARGO_BIN_EXE_calc\")).args([\"2\", \"3\"]).output().unwrap();\n    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), \"5\");\n}}\n",
                mark_fn(&marks)
            ),
        )
        .write(
            ".aayudha/evidence/8.toml",
            "[[criterion]]\nid = 1\ntests = [\"crates/calc:tests::adds\"]\n",
        );
    for (path, text) in extra {
        repo.write(path, text);
    }
    let head = repo.commit("fix: add adds");
    (repo, base, head, marks_dir, marks)
}

fn rust_gate(repo: &TestRepo, base: &str, head: &str) -> (i32, Value, String) {
    let snapshot = ready(repo, 8, "1. Two numbers add up.", &["type:feature"]);
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", base, "--head", head, "--story", "8", "--ready", &snapshot,
        "--json",
    ]));
    let pack = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out.code, pack, format!("{}\n{}", out.stdout, out.stderr))
}

/// `git diff -U0`'s `+` lines of one file.
fn added(repo: &TestRepo, base: &str, head: &str, path: &str) -> BTreeSet<u32> {
    let diff = repo.git(&["diff", "-U0", "--no-color", base, head, "--", path]);
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
    added
}

/// What the test itself finds with llvm-cov, as `cargo llvm-cov` would: `calc`'s tests built with
/// `-C instrument-coverage` (in a target folder of the test's), each test executable run, the profiles
/// merged, and `llvm-cov export -format=lcov` over the test executables and the `calc` bin; each file's
/// executable lines and the ones that ran.
fn llvm_cov_lines(
    repo: &TestRepo,
    files: &[&str],
) -> std::collections::BTreeMap<String, (BTreeSet<u32>, BTreeSet<u32>)> {
    let (profdata, cov) = common::llvm();
    let scratch = tempfile::tempdir().expect("scratch");
    let target = scratch.path().join("target");
    let built = common::with_toolchain(&mut Command::new("cargo"))
        .args([
            "test",
            "-p",
            "calc",
            "--no-run",
            "--message-format=json",
            "--quiet",
        ])
        .current_dir(repo.root())
        .env("CARGO_TARGET_DIR", &target)
        .env("RUSTFLAGS", "-C instrument-coverage")
        .output()
        .expect("cargo test --no-run");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mut tests = Vec::new();
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&built.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(exe) = message["executable"].as_str() else {
            continue;
        };
        if !message["package_id"]
            .as_str()
            .unwrap_or("")
            .contains("calc")
        {
            continue;
        }
        if message["profile"]["test"] == true {
            tests.push(exe.to_string());
        } else if message["target"]["kind"][0] == "bin" {
            bins.push(exe.to_string());
        }
    }
    let profiles = scratch.path().join("profiles");
    for exe in &tests {
        let ran = Command::new(exe)
            .current_dir(repo.path("crates/calc"))
            .env("LLVM_PROFILE_FILE", profiles.join("%p-%m.profraw"))
            .output()
            .expect("a test executable");
        assert!(ran.status.success(), "{exe}");
    }
    let merged = scratch.path().join("merged.profdata");
    let status = Command::new(&profdata)
        .args(["merge", "-sparse"])
        .arg(&profiles)
        .arg("-o")
        .arg(&merged)
        .status()
        .expect("llvm-profdata");
    assert!(status.success());
    let mut export = Command::new(&cov);
    export
        .args(["export", "-format=lcov"])
        .arg(format!("-instr-profile={}", merged.display()));
    for (i, object) in tests.iter().chain(&bins).enumerate() {
        if i > 0 {
            export.arg("-object");
        }
        export.arg(object);
    }
    for file in files {
        export.arg(repo.path(file));
    }
    let lcov = export.output().expect("llvm-cov export");
    assert!(lcov.status.success());
    let mut found = std::collections::BTreeMap::new();
    let mut current = None;
    for line in String::from_utf8_lossy(&lcov.stdout).lines() {
        if let Some(file) = line.strip_prefix("SF:") {
            current = files
                .iter()
                .find(|f| file.ends_with(&format!("/{f}")))
                .map(|f| f.to_string());
        } else if let (Some(path), Some(at)) = (&current, line.strip_prefix("DA:")) {
            let (n, count) = at.split_once(',').expect("DA:n,count");
            let n: u32 = n.parse().expect("line");
            let entry: &mut (BTreeSet<u32>, BTreeSet<u32>) = found.entry(path.clone()).or_default();
            entry.0.insert(n);
            if count.split(',').next() != Some("0") {
                entry.1.insert(n);
            }
        }
    }
    found
}

/// The lines of `text` from each line that starts `#[cfg(test)]` through the end of the item after it
/// (a `mod x;` line, or a braced block to its closing `}` at the start of a line).
fn cfg_test_lines(text: &str) -> BTreeSet<u32> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            let start = i;
            let mut end = i + 1;
            if !lines[end].trim_end().ends_with(';') {
                while lines[end] != "}" {
                    end += 1;
                }
            }
            found.extend((start as u32 + 1)..=(end as u32 + 1));
            i = end;
        }
        i += 1;
    }
    found
}

#[test]
fn a_rust_workspace_s_touched_crate_runs_once_and_gives_the_change_s_diff_coverage() {
    let (repo, base, head, _marks_dir, marks) = workspace("", &[]);
    let (code, pack, said) = rust_gate(&repo, &base, &head);
    assert_eq!(code, 0, "{said}");
    let floor = common::floor(&pack, "coverage");
    // Each test of the touched crate ran once — the mapped one too, read from the same run — and the
    // untouched crate's tests not at all.
    let ran = std::fs::read_to_string(&marks).expect("marks");
    let count = |name: &str| ran.lines().filter(|l| *l == name).count();
    for name in [
        "calc:adds",
        "calc:pairs_print",
        "calc:adds_more",
        "calc:cli_adds",
    ] {
        assert_eq!(count(name), 1, "{name}: {ran}\n{said}");
    }
    assert_eq!(count("report:totals"), 0, "{ran}");
    assert_eq!(common::floor(&pack, "tests")["result"], "pass", "{said}");
    let evidence =
        std::fs::read_to_string(repo.path(".aayudha/proof/8/artifacts/evidence/criterion-1.jsonl"))
            .expect("evidence");
    // The evidence is libtest's own JSON lines (timings in them): the test's line is looked for.
    assert!(evidence.contains("\"name\":\"tests::adds\""), "{evidence}");
    // What llvm-cov says, run here: the change's `+` lines that it lists, test code left out.
    let files = ["crates/calc/src/lib.rs", "crates/calc/src/main.rs"];
    let lines = llvm_cov_lines(&repo, &files);
    let lib = std::fs::read_to_string(repo.path(files[0])).expect("lib");
    let mut changed_total = 0;
    let mut covered_total = 0;
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/8/artifacts/reports/coverage.json"))
            .expect("reports/coverage.json"),
    )
    .expect("json");
    let reported: Vec<&str> = report["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    assert_eq!(reported, files, "only calc's own product files: {report:#}");
    for (i, file) in files.iter().enumerate() {
        let (executable, ran) = &lines[*file];
        let test_code = if i == 0 {
            cfg_test_lines(&lib)
        } else {
            BTreeSet::new()
        };
        let changed: BTreeSet<u32> = added(&repo, &base, &head, file)
            .intersection(executable)
            .copied()
            .filter(|n| !test_code.contains(n))
            .collect();
        let covered: BTreeSet<u32> = changed.intersection(ran).copied().collect();
        let entry = &report["files"][i];
        let list = |key: &str| -> BTreeSet<u32> {
            entry[key]
                .as_array()
                .expect("lines")
                .iter()
                .map(|n| n.as_u64().expect("n") as u32)
                .collect()
        };
        assert_eq!(list("changed_executable"), changed, "{file}");
        let uncovered: BTreeSet<u32> = changed.difference(&covered).copied().collect();
        assert_eq!(list("uncovered"), uncovered, "{file}");
        assert!(
            !covered.is_empty() && !uncovered.is_empty(),
            "{file} has both: {changed:?} {covered:?}"
        );
        changed_total += changed.len();
        covered_total += covered.len();
    }
    // The bin's own lines count: the CLI test ran it.
    assert!(
        report["files"][1]["changed_executable"]
            .as_array()
            .map(Vec::len)
            > report["files"][1]["uncovered"].as_array().map(Vec::len)
    );
    assert_eq!(report["changed_executable"], changed_total);
    assert_eq!(report["covered"], covered_total);
    assert_eq!(floor["value"], (covered_total * 100 / changed_total) as f64);
    assert_eq!(floor["tool"], "aayudha diff coverage (llvm-cov)");
    assert_eq!(report["tool"], floor["tool"]);
    assert_eq!(
        floor["detail"],
        format!(
            "advisory (no blocking date set): {covered_total} of {changed_total} changed executable lines covered (llvm-cov)"
        )
    );
    let version = floor["version"].as_str().unwrap_or("");
    // The machine's rustc and llvm-cov versions: their shape, not their numbers.
    assert!(
        version.starts_with("rustc 1.") && version.contains(", llvm-cov "),
        "{floor:#}"
    );
}

#[test]
fn a_rust_suite_that_breaks_fails_the_floor_and_other_llvm_tools_block_it() {
    // A test of the touched crate that no criterion maps fails: no number, the test named; the mapped
    // test keeps its own verdict.
    let broken =
        "#[test]\nfn breaks() {\n    assert_eq!(calc::add(1, 2), 4, \"one and two\");\n}\n"
            .to_string();
    let (repo, base, head, _marks_dir, _) =
        workspace("", &[("crates/calc/tests/broken.rs", broken)]);
    let (code, pack, said) = rust_gate(&repo, &base, &head);
    assert_ne!(code, 0, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "fail", "{said}");
    assert_eq!(
        floor["detail"],
        "`broken(test)/breaks` in `crates/calc` (assertion `left == right` failed: one and two; left: 3; right: 4 (at crates/calc/tests/broken.rs:3:5)) of the suite failed and no criterion maps it: a broken suite has no coverage to report — fix it, or map it to the criterion it tests"
    );
    assert_eq!(common::floor(&pack, "tests")["result"], "pass", "{said}");
    // llvm tools of another LLVM than rustc's: blocked, with the fix; never a number.
    let tools = tempfile::tempdir().expect("tools");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for name in ["llvm-profdata", "llvm-cov"] {
        let path = tools.path().join(name);
        std::fs::write(
            &path,
            "#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version 14.0.6'\n",
        )
        .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let config = format!(
        "[verify]\nllvm_tools = {:?}\n",
        tools.path().display().to_string()
    );
    let (repo, base, head, _marks_dir, marks) = workspace(&config, &[]);
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{said}");
    let detail = floor["detail"].as_str().unwrap_or("");
    // The detail names the machine's rustc and its LLVM: the planted tool's version and the fix are
    // looked for.
    assert!(
        detail.contains("is LLVM 14.0.6")
            && detail.contains("apt-get install llvm-")
            && detail.starts_with("`crates/calc`: rustc 1."),
        "{detail}"
    );
    assert!(
        !repo
            .path(".aayudha/proof/8/artifacts/reports/coverage.json")
            .exists()
    );
    // The mapped test still ran, in the tests floor.
    assert_eq!(common::floor(&pack, "tests")["result"], "pass", "{said}");
    let ran = std::fs::read_to_string(&marks).expect("marks");
    assert_eq!(
        ran.lines().filter(|l| *l == "calc:adds").count(),
        1,
        "{ran}"
    );
}

/// A crate `calc` at the repository root with this `src/lib.rs`, committed: the repository and the base.
fn root_crate(lib: &str) -> (TestRepo, String) {
    root_crate_with("", &[("src/lib.rs", lib)])
}

/// A crate `calc` at the repository root with these files and this `.aayudha/config.toml`, committed.
fn root_crate_with(config: &str, files: &[(&str, &str)]) -> (TestRepo, String) {
    let repo = TestRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .write(".gitignore", "/target\n.aayudha/runs/\n.aayudha/proof/\n")
    .write(".aayudha/config.toml", config);
    for (path, text) in files {
        repo.write(path, text);
    }
    let base = repo.commit("calc");
    (repo, base)
}

/// The head of a `root_crate`: `add` gains a branch no test runs (after `prefix`), and the evidence map
/// names its test.
fn add_a_branch(repo: &TestRepo, prefix: &str) -> String {
    repo.write(
        "src/lib.rs",
        prefix.to_string() + "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    if a < 0 {\n        return b + a;\n    }\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n",
    )
    .write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 1\ntests = [\".:tests::adds\"]\n",
    );
    repo.commit("add, with a branch")
}

const ADDS: &str = "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n";

/// The repository's cargo configuration keeps its own flags: a `[target.'cfg(unix)'] rustflags` (which
/// makes cargo ignore `build.rustflags`) is joined by aayu's `target.<host>.rustflags`, and the suite is
/// still instrumented; a `RUSTFLAGS` passed into the sandbox replaces both, and the floor says "not
/// instrumented" — never 0 %.
#[test]
fn the_repository_s_rustflags_stay_and_an_uninstrumented_suite_blocks() {
    let guard = "#[cfg(not(aayu_flag))]\ncompile_error!(\"the repository's flag is lost\");\n\n";
    let (repo, base) = root_crate_with(
        "",
        &[
            ("src/lib.rs", &format!("{guard}{ADDS}")),
            (
                ".cargo/config.toml",
                "[target.'cfg(unix)']\nrustflags = [\"--cfg\", \"aayu_flag\"]\n",
            ),
        ],
    );
    let head = add_a_branch(&repo, guard);
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "pass", "{said}");
    // How many of the three lines llvm-cov counts as run depends on its version's regions.
    assert!(
        floor["detail"]
            .as_str()
            .unwrap_or("")
            .contains("of 3 changed executable lines covered (llvm-cov)"),
        "{floor:#}"
    );
    let (repo, base) =
        root_crate_with("[verify]\nenv = [\"RUSTFLAGS\"]\n", &[("src/lib.rs", ADDS)]);
    let head = add_a_branch(&repo, "");
    let snapshot = ready(&repo, 8, "1. Two numbers add up.", &["type:feature"]);
    let out = run(common::with_toolchain(&mut repo.aayu())
        .env("RUSTFLAGS", "-C debuginfo=0")
        .args([
            "verify", "--ci", "--base", &base, "--head", &head, "--story", "8", "--ready",
            &snapshot, "--json",
        ]));
    let pack: Value = serde_json::from_str(&out.stdout).expect("pack");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{}", out.stderr);
    // The detail starts with the test binary's hashed file name, which changes with the toolchain.
    assert!(
        floor["detail"]
            .as_str()
            .unwrap_or("")
            .contains("wrote no `.profraw`: it is not instrumented"),
        "{floor:#}"
    );
}

/// A suite past `[verify] suite_timeout_s` is blocked, saying what was running; a test that ends its
/// executable early fails the floor, named — never a number from a partial profile.
#[test]
fn a_rust_suite_past_its_time_blocks_and_one_ended_early_fails() {
    // A test that sleeps a minute: past the second the suite has, whether the build or the test holds it.
    let (repo, base) = root_crate_with(
        "[verify]\nsuite_timeout_s = 1\n",
        &[
            ("src/lib.rs", ADDS),
            (
                "tests/slow.rs",
                "#[test]\nfn sleeps() {\n    std::thread::sleep(std::time::Duration::from_secs(60));\n}\n",
            ),
        ],
    );
    let head = add_a_branch(&repo, "");
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{said}");
    assert!(
        floor["detail"].as_str().unwrap_or("").starts_with(
            "the instrumented suite of `.` ran past `[verify] suite_timeout_s` (1 s) while "
        ),
        "{floor:#}"
    );
    let (repo, base) = root_crate(ADDS);
    repo.write(
        "tests/exits.rs",
        "#[test]\nfn leaves() {\n    std::process::exit(0);\n}\n",
    );
    let head = add_a_branch(&repo, "");
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "fail", "{said}");
    assert!(
        floor["detail"].as_str().unwrap_or("").starts_with(
            "`exits(test)/leaves` in `.` ended the run before it finished (its test executable exited with status 0)"
        ),
        "{floor:#}"
    );
}

#[test]
fn a_rust_comment_only_change_has_no_changed_executable_line() {
    let (repo, base) = root_crate(
        "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n",
    );
    let text = std::fs::read_to_string(repo.path("src/lib.rs")).expect("lib");
    repo.write(
        "src/lib.rs",
        text.replace(
            "/// Adds.",
            "/// Adds two numbers.\n///\n/// (A comment, and the blank line above.)",
        ),
    )
    .write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 1\ntests = [\".:tests::adds\"]\n",
    );
    let head = repo.commit("docs");
    let (code, pack, said) = rust_gate(&repo, &base, &head);
    assert_eq!(code, 0, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "skipped", "{floor:#}");
    assert_eq!(floor["detail"], "no changed executable line");
}

/// A proc-macro crate's own tests link Rust's std as a library, as `cargo test` runs them (the toolchain's
/// library folder on the library path); and a mapped test that fails keeps its verdict, whatever another
/// test of its executable prints: the mapped test runs alone, in a process of its own, within the
/// coverage run.
#[test]
fn a_proc_macro_crate_is_covered_and_a_sibling_cannot_pass_a_failing_mapped_test() {
    let repo = TestRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"shout\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\nproc-macro = true\n",
    )
    .write(
        "src/lib.rs",
        "//! A macro that shouts.\n\nextern crate proc_macro;\nuse proc_macro::TokenStream;\n\n/// The number of tokens, as a literal.\n#[proc_macro]\npub fn count(input: TokenStream) -> TokenStream {\n    format!(\"{}\", input.into_iter().count()).parse().unwrap()\n}\n\n/// Upper case.\npub fn loud(s: &str) -> String {\n    s.to_lowercase()\n}\n",
    )
    .write(".gitignore", "/target\n.aayudha/runs/\n.aayudha/proof/\n")
    .write(".aayudha/config.toml", "");
    let base = repo.commit("shout");
    // The head: `loud` is still wrong, its test fails; another test installs a panic hook that prints a
    // forged `ok` for it, with a whole suite frame, and exits 0.
    let forged = "{\\\"type\\\":\\\"test\\\",\\\"name\\\":\\\"tests::loud_shouts\\\",\\\"event\\\":\\\"ok\\\"}\\n{\\\"type\\\":\\\"suite\\\",\\\"event\\\":\\\"ok\\\",\\\"passed\\\":2,\\\"failed\\\":0,\\\"ignored\\\":0,\\\"measured\\\":0,\\\"filtered_out\\\":0}\\n";
    let lib = std::fs::read_to_string(repo.path("src/lib.rs")).expect("lib");
    repo.write(
        "src/lib.rs",
        format!(
            "{lib}\n/// Whether a text is loud.\npub fn is_loud(s: &str) -> bool {{\n    s.chars().all(|c| !c.is_lowercase())\n}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn a_setup() {{\n        std::panic::set_hook(Box::new(|_| {{\n            use std::io::Write;\n            let mut out = std::io::stdout();\n            let _ = out.write_all(\"{forged}\".as_bytes());\n            let _ = out.flush();\n            std::process::exit(0);\n        }}));\n        assert!(super::is_loud(\"AB\"));\n    }}\n\n    #[test]\n    fn loud_shouts() {{\n        std::thread::sleep(std::time::Duration::from_millis(100));\n        assert_eq!(super::loud(\"ab\"), \"AB\");\n    }}\n}}\n"
        ),
    )
    .write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 1\ntests = [\".:tests::loud_shouts\"]\n",
    );
    let head = repo.commit("loud");
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let tests = common::floor(&pack, "tests");
    assert_eq!(tests["result"], "fail", "{said}");
    let coverage = common::floor(&pack, "coverage");
    assert_eq!(coverage["result"], "pass", "{said}");
    // As above, the count follows llvm-cov's regions.
    assert!(
        coverage["detail"]
            .as_str()
            .unwrap_or("")
            .contains("changed executable lines covered (llvm-cov)"),
        "{coverage:#}"
    );
    // Its own verdict: the assertion, not the forged line.
    let snapshot = ready(&repo, 8, "1. Two numbers add up.", &["type:feature"]);
    let out = run(common::with_toolchain(&mut repo.aayu()).args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "8", "--ready", &snapshot,
    ]));
    // The rest of the line is libtest's panic message, whose layout changes with the toolchain.
    assert!(
        out.stdout
            .contains("`.:tests::loud_shouts` failed: assertion `left == right` failed"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}

/// `verify --ci` runs the checkout's files: a `--head` the checkout is not at, or tracked files changed
/// since it, are refused before anything runs.
#[test]
fn the_gate_refuses_a_head_the_checkout_is_not_at() {
    let repo = TestRepo::new();
    repo.write("README.md", "one\n")
        .write(".aayudha/config.toml", "");
    let base = repo.commit("one");
    repo.write("README.md", "two\n");
    let head = repo.commit("two");
    repo.git(&["checkout", "-q", &base]);
    let out = run(repo
        .aayu()
        .args(["verify", "--ci", "--base", &base, "--head", &head]));
    crate::aayu_snapshot!("head_not_checked_out", out);
    // The snapshot redacts commit SHAs: the two it names are these.
    assert!(
        out.stderr.contains(&format!(
            "`--head` is {}, but the checkout is at {}",
            &head[..12],
            &base[..12]
        )),
        "{}",
        out.stderr
    );
    repo.git(&["checkout", "-q", &head]);
    repo.write("README.md", "three\n");
    let out = run(repo
        .aayu()
        .args(["verify", "--ci", "--base", &base, "--head", &head]));
    crate::aayu_snapshot!("checkout_changed_since_head", out);
}

/// A changed file whose name holds a line break is refused, never left out of the count: its lines could
/// not be told apart in the tools' reports.
#[test]
fn a_changed_path_with_a_control_character_blocks_the_floor() {
    let (repo, base) = root_crate("pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n");
    repo.write("src/x\nSF:y.rs", "pub fn hidden() {}\n").write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 1\ntests = [\".:tests::adds\"]\n",
    );
    let head = repo.commit("a file with a line break in its name");
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{said}");
    assert_eq!(
        floor["detail"],
        "`src/x\\nSF:y.rs` has a control character in its name: aayu refuses such a path, and cannot count its lines — rename it"
    );
}

/// A module the root crate brings in from another folder (`#[path = "../engine/lib.rs"]`, a folder with a
/// manifest of its own and no tests) counts where the root crate's tests ran it, by the name the build
/// gave it (`src/../engine/lib.rs`); an added Rust file too large to read is named as not counted.
#[test]
fn a_path_module_from_another_folder_counts_and_a_huge_file_is_named() {
    let (repo, base) = root_crate(
        "#[path = \"../engine/lib.rs\"]\npub mod engine;\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::engine::add(2, 2), 4);\n    }\n}\n",
    );
    repo.write(
        "engine/Cargo.toml",
        "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n",
    )
    .write(
        "engine/lib.rs",
        "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// Never run.\npub fn sub(a: i64, b: i64) -> i64 {\n    a - b\n}\n",
    )
    .write("src/generated.rs", "// generated\n".repeat(400_000))
    .write(
        ".aayudha/evidence/8.toml",
        "[[criterion]]\nid = 1\ntests = [\".:tests::adds\"]\n",
    );
    let head = repo.commit("the engine, from another folder");
    let _ = base;
    let base = repo.git(&["rev-parse", "HEAD~1"]);
    let (_, pack, said) = rust_gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/8/artifacts/reports/coverage.json"))
            .unwrap_or_else(|_| panic!("reports/coverage.json: {said}")),
    )
    .expect("json");
    let engine = report["files"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["path"] == "engine/lib.rs"))
        .unwrap_or_else(|| panic!("engine/lib.rs is counted: {report:#}\n{said}"));
    assert!(
        !engine["uncovered"].as_array().expect("lines").is_empty()
            && engine["changed_executable"].as_array().map(Vec::len)
                > engine["uncovered"].as_array().map(Vec::len),
        "{report:#}"
    );
    // The rest of the detail is the floor's count, which follows llvm-cov's regions.
    assert!(
        floor["detail"]
            .as_str()
            .unwrap_or("")
            .contains("not counted: `src/generated.rs` (over 4 MiB"),
        "{floor:#}"
    );
}

/// An honest `TestMain`: it runs the tests, and could as well have rewritten the profile after them.
const TEST_MAIN: &str = "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n";

#[test]
fn a_go_package_whose_harness_changed_has_its_coverage_blocked_and_a_marker_beside_it_changes_nothing()
 {
    crate::needs!(go);
    let (repo, base, head) = module("", &[("calc/main_test.go", TEST_MAIN)]);
    let (code, pack, said) = gate(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{floor:#}");
    assert!(
        floor["detail"].as_str().is_some_and(|d| d
            .starts_with("the harness of `calc` changed: its coverage is the test binary's own")),
        "{floor:#}"
    );
    let harness: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/7/artifacts/reports/harness.json"))
            .expect("reports/harness.json"),
    )
    .expect("json");
    let changes = harness["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{harness:#}");
    assert_eq!(
        (
            &changes[0]["file"],
            &changes[0]["line"],
            &changes[0]["stack"],
            &changes[0]["kind"]
        ),
        (
            &Value::from("calc/main_test.go"),
            &Value::from(8),
            &Value::from("go"),
            &Value::from("setup")
        ),
        "{harness:#}"
    );

    // An empty pytest.ini beside the Go code: the Go package keeps its coverage.
    let (repo, base, head) = module("", &[("calc/pytest.ini", "")]);
    let (_, pack, said) = gate(&repo, &base, &head);
    assert!(pack.is_object(), "{said}");
    let floor = common::floor(&pack, "coverage");
    let (changed, ran) = expected(&repo, &base, &head);
    assert_eq!(floor["result"], "pass", "{floor:#}\n{said}");
    assert_eq!(
        floor["value"],
        (ran.len() * 100 / changed.len()) as f64,
        "{floor:#}"
    );
}

/// A `TestMain` that, after the tests, marks every block of the profile as run.
const REWRITING_MAIN: &str = "package calc\n\nimport (\n\t\"flag\"\n\t\"os\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tcode := m.Run()\n\tif f := flag.Lookup(\"test.coverprofile\"); f != nil && f.Value.String() != \"\" {\n\t\tb, _ := os.ReadFile(f.Value.String())\n\t\t_ = os.WriteFile(f.Value.String(), []byte(strings.ReplaceAll(string(b), \" 0\\n\", \" 1\\n\")), 0o644)\n\t}\n\tos.Exit(code)\n}\n";

#[test]
fn a_profile_the_test_binary_rewrites_or_a_line_directive_moves_is_not_counted() {
    crate::needs!(go);
    // The rewrite would read every changed line as covered: the harness change blocks the floor.
    let (repo, base, head) = module("", &[("calc/main_test.go", REWRITING_MAIN)]);
    let (code, pack, said) = gate(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{floor:#}");
    assert!(
        floor["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the harness of `calc` changed")),
        "{floor:#}"
    );

    // `//line` to a Go file moves the new statements off the file: blocked, naming the directive.
    let moved = CALC_HEAD.replace(
        "// Shout is never tested.\n",
        "// Shout is never tested.\n//line calc.go:9000\n",
    );
    let (repo, base, head) = module("", &[("calc/calc.go", &moved)]);
    let (_, pack, said) = gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_eq!(floor["result"], "blocked", "{floor:#}\n{said}");
    assert!(
        floor["detail"].as_str().is_some_and(|d| d.contains(
            "has a `//line` directive naming `calc.go:9000`: its statements are counted at another Go file's lines"
        )),
        "{floor:#}"
    );

    // Generated from a grammar: counted as not measured, with a note, and the floor still counts.
    let parser = "// Code generated by goyacc. DO NOT EDIT.\n\npackage calc\n\n//line parser.y:3\nfunc parse(s string) int {\n\treturn len(s)\n}\n";
    let (repo, base, head) = module("", &[("calc/parser.go", parser)]);
    let (_, pack, said) = gate(&repo, &base, &head);
    let floor = common::floor(&pack, "coverage");
    assert_ne!(floor["result"], "blocked", "{floor:#}\n{said}");
    assert!(
        said.contains("`calc/parser.go` is generated from `parser.y`"),
        "{said}"
    );
}

/// A `TestMain` that frames a pass for `TestAdd` and runs no test (`-test.run` set to match nothing).
const FORGING_MAIN: &str = "package calc\n\nimport (\n\t\"flag\"\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tflag.Parse()\n\t_ = flag.Set(\"test.run\", \"^$\")\n\tfmt.Println(\"=== RUN   TestAdd\")\n\tfmt.Println(\"--- PASS: TestAdd (0.00s)\")\n\tos.Exit(m.Run())\n}\n";

#[test]
fn the_canary_refuses_a_framed_pass_and_keeps_an_honest_one() {
    crate::needs!(go);
    // The bug stays (Add subtracts): TestAdd fails, and the TestMain frames its pass.
    let (repo, base, head) = module(
        "",
        &[
            (
                "calc/calc.go",
                &CALC_HEAD.replace("return a + b", "return a - b"),
            ),
            ("calc/main_test.go", FORGING_MAIN),
        ],
    );
    let (_, pack, said) = gate(&repo, &base, &head);
    let harness =
        std::fs::read_to_string(repo.path(".aayudha/proof/7/artifacts/reports/harness.json"))
            .unwrap_or_default();
    let tests = common::floor(&pack, "tests");
    assert_eq!(tests["result"], "fail", "{tests:#}\n{said}\n{harness}");
    let snapshot = ready(&repo, 7, "1. Two numbers add up.", &["type:bug"]);
    let table = run(repo.aayu().args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
    ]));
    assert!(
        table.stdout.contains("criterion 1: no evidence — `calc:TestAdd` failed: its record says it passed although its first statement fails: the record is not the test's"),
        "{}\n{harness}",
        table.stdout
    );

    // Without the canary the framed pass is evidence: what the canary is for.
    let (repo, base, head) = module(
        "[verify]\ncanary = false\n",
        &[
            (
                "calc/calc.go",
                &CALC_HEAD.replace("return a + b", "return a - b"),
            ),
            ("calc/main_test.go", FORGING_MAIN),
        ],
    );
    let (_, pack, said) = gate(&repo, &base, &head);
    assert_eq!(common::floor(&pack, "tests")["result"], "pass", "{said}");

    // The honest fix: the canary fails the test with its own message, and the pass stands.
    let (repo, base, head) = module("", &[]);
    let (code, pack, said) = gate(&repo, &base, &head);
    assert_eq!(code, 0, "{said}");
    assert_eq!(common::floor(&pack, "tests")["result"], "pass", "{said}");
    assert!(!said.contains("canary not applied"), "{said}");
}
