//! `aayu verify --select` through the real binary: the gate's plan of a change — the checks with why,
//! the mapped tests with their criterion, the touched packages — printed as a report or JSON with nothing
//! run, the same checks `verify --ci` runs on the change, and the flags it refuses.

use std::path::Path;

use crate::common::{self, TestRepo, feature_md, map_readme, ready, run, skill};
use serde_json::{Value, json};

/// A control tool that leaves a mark in `marks` whenever it runs, and passes.
fn control(marks: &Path) -> String {
    format!(
        "cat > /dev/null\ntouch {}/ran\necho '{{\"status\": \"passed\", \"reason\": \"\", \"artifacts\": []}}'\n",
        marks.display()
    )
}

/// A check block the control tool above answers.
fn check(id: &str) -> String {
    format!(r#"{{"id": "{id}", "kind": "cli", "evidence": "report", "steps": [{{"note": {{}}}}]}}"#)
}

/// A repository with a map of product `shop` whose feature `count` (sources `src/lib.rs`) has the checks
/// `counts` and `empty`, and whose feature `report` (sources `src/report.rs`) has `prints`; with
/// `crates`, the root is a cargo package and `crates/util` another. The base commit; `src/lib.rs`, with
/// `crates` also `crates/util/src/lib.rs`, changed at the head, which is checked out.
pub(crate) fn shop(
    marks: &Path,
    crates: bool,
    evidence: Option<&str>,
) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    let map = r#"{"product": "shop", "control": ["sh", ".agents/skills/verify-shop/control/mark.sh"], "surfaces": []}"#;
    let count = r#"{"id": "count", "layers": ["L02"], "sources": ["src/lib.rs"], "surfaces": {}, "verified_at": ""}"#;
    let report = r#"{"id": "report", "layers": ["L02"], "sources": ["src/report.rs"], "surfaces": {}, "verified_at": ""}"#;
    repo.write("src/lib.rs", "pub fn count() {}\n")
        .write("src/report.rs", "pub fn report() {}\n")
        .write(".agents/skills/verify-shop/control/mark.sh", control(marks))
        .write(
            &format!("{dir}/README.md"),
            map_readme(map, &["count.md", "report.md"]),
        )
        .write(
            &format!("{dir}/count.md"),
            feature_md(count, &[&check("counts"), &check("empty")]),
        )
        .write(
            &format!("{dir}/report.md"),
            feature_md(report, &[&check("prints")]),
        );
    if crates {
        repo.write(
            "Cargo.toml",
            "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .write(
            "crates/util/Cargo.toml",
            "[package]\nname = \"util\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .write("crates/util/src/lib.rs", "pub fn util() {}\n");
    }
    let base = repo.commit("shop");
    repo.write("src/lib.rs", "pub fn count() -> usize { 0 }\n");
    if crates {
        repo.write("crates/util/src/lib.rs", "pub fn util() -> u8 { 0 }\n");
    }
    if let Some(evidence) = evidence {
        repo.write(".aayudha/evidence/7.toml", evidence);
    }
    let head = repo.commit("count returns a number");
    (repo, base, head)
}

/// The evidence map of story 7: two tests of the root crate, one of `crates/util`, and the check
/// `report.prints` the diff does not select.
pub(crate) const EVIDENCE: &str = "[[criterion]]\nid = 1\ntests = [\".:counts_words\", \"crates/util:utils\"]\nchecks = [\"report.prints\"]\n\n[[criterion]]\nid = 2\ntests = [\"./:empty_is_zero\"]\n";

/// `aayu verify --select` with `args`, in a temporary folder of its own (`TMPDIR`), which is returned.
fn select(repo: &TestRepo, args: &[&str]) -> (common::Run, tempfile::TempDir) {
    let temp = tempfile::tempdir().expect("temp");
    let out = run(repo
        .aayu()
        .env("TMPDIR", temp.path())
        .args(["verify", "--select"])
        .args(args));
    (out, temp)
}

fn json(out: &common::Run) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let document: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON document ({e}): {}", out.stdout));
    // Every document is valid against the shipped schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/select.v1.json"),
        )
        .expect("schema"),
    )
    .expect("json");
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let problems: Vec<String> = validator
        .iter_errors(&document)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    document
}

/// Every path in the repository outside `.git`.
fn tree(repo: &TestRepo) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = common::all_paths(repo.root())
        .into_iter()
        .filter(|p| !p.starts_with(repo.path(".git")))
        .collect();
    paths.sort();
    paths
}

#[test]
fn the_checks_a_diff_selects_are_listed_with_why_and_nothing_runs() {
    let marks = common::shared_dir();
    let (repo, base, head) = shop(marks.path(), false, None);
    let before = tree(&repo);
    let (out, temp) = select(&repo, &["--base", &base, "--head", &head, "--json"]);
    assert_eq!(
        json(&out),
        json!({
            "schema_version": 1,
            "checks": [
                {"id": "shop/count.counts", "selected_because": ["changed: src/lib.rs"]},
                {"id": "shop/count.empty", "selected_because": ["changed: src/lib.rs"]}
            ],
            "tests": [],
            "packages": []
        })
    );
    assert_eq!(out.stderr, "", "no progress: nothing ran");
    // The control tool leaves a mark whenever it runs (`verify --ci` below makes one); no folder was made,
    // in the repository (no `.aayudha/runs`, no pack) or in the temporary folder (no run folder).
    assert!(!marks.path().join("ran").exists(), "the control tool ran");
    assert_eq!(tree(&repo), before);
    assert!(common::all_paths(temp.path()).is_empty());

    let (out, _) = select(&repo, &["--base", &base, "--head", &head]);
    crate::aayu_snapshot!("select_report_without_a_story", out);
    assert!(!marks.path().join("ran").exists());
}

#[test]
fn a_story_adds_its_tests_with_their_criteria_and_the_touched_packages() {
    let marks = common::shared_dir();
    let (repo, base, head) = shop(marks.path(), true, Some(EVIDENCE));
    let snapshot = ready(&repo, 7, "1. Counts.\n2. Empty.", &[]);
    let before = tree(&repo);
    let args = [
        "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
    ];
    let (out, _) = select(&repo, &[&args[..], &["--json"]].concat());
    let document = json(&out);
    assert_eq!(
        document,
        json!({
            "schema_version": 1,
            "checks": [
                {"id": "shop/count.counts", "selected_because": ["changed: src/lib.rs"]},
                {"id": "shop/count.empty", "selected_because": ["changed: src/lib.rs"]},
                {"id": "shop/report.prints", "selected_because": ["evidence map of story #7, criterion 1"]}
            ],
            "tests": [
                {"id": ".:counts_words", "criterion": 1},
                {"id": "crates/util:utils", "criterion": 1},
                {"id": "./:empty_is_zero", "criterion": 2}
            ],
            "packages": [
                {"dir": ".", "runner": "cargo"},
                {"dir": "crates/util", "runner": "cargo"}
            ]
        })
    );
    let keys: Vec<&str> = document
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["schema_version", "checks", "tests", "packages"]);
    crate::aayu_snapshot!("select_json_with_a_story", out);
    let (out, _) = select(&repo, &args);
    crate::aayu_snapshot!("select_report_with_a_story", out);
    assert!(!marks.path().join("ran").exists(), "the control tool ran");
    assert_eq!(tree(&repo), before, "no folder was made");
}

#[test]
fn the_selection_is_what_verify_ci_runs_on_the_change() {
    let marks = common::shared_dir();
    let (repo, base, head) = shop(
        marks.path(),
        false,
        Some("[[criterion]]\nid = 1\nchecks = [\"report.prints\"]\n"),
    );
    let snapshot = ready(&repo, 7, "1. Reports.", &[]);
    let args = [
        "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
    ];
    let (out, _) = select(&repo, &[&args[..], &["--json"]].concat());
    let planned = json(&out)["checks"].clone();
    assert!(!marks.path().join("ran").exists());

    let gate = run(repo.aayu().args(["verify", "--ci", "--json"]).args(args));
    let pack: Value = serde_json::from_str(&gate.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", gate.stdout, gate.stderr));
    // The behaviour floor is what this is about (the check's empty answer evidences no criterion).
    assert_eq!(
        common::floor(&pack, "behaviour")["result"],
        "pass",
        "{pack:#}"
    );
    assert!(marks.path().join("ran").exists(), "the gate ran the checks");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/7/artifacts/reports/behaviour.json"))
            .expect("the behaviour report"),
    )
    .expect("json");
    let ran: Vec<Value> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            json!({
                "id": format!("{}/{}.{}", c["product"].as_str().expect("p"), c["feature"].as_str().expect("f"), c["check"].as_str().expect("c")),
                "selected_because": c["selected_because"],
            })
        })
        .collect();
    // The report is sorted by name, the plan by the maps' order: the same here.
    assert_eq!(Value::Array(ran), planned);
    assert_eq!(planned.as_array().expect("checks").len(), 3);
}

#[test]
fn a_checkout_elsewhere_than_the_head_or_changed_is_said_and_planned() {
    let marks = common::shared_dir();
    let (repo, base, head) = shop(marks.path(), true, None);
    repo.git(&["checkout", "-q", &base]);
    let (out, _) = select(&repo, &["--base", &base, "--head", &head]);
    crate::aayu_snapshot!("select_checkout_elsewhere", out);
    repo.git(&["checkout", "-q", "main"]);
    repo.write("src/report.rs", "pub fn report() -> u8 { 1 }\n");
    let (out, _) = select(&repo, &["--base", &base, "--head", &head]);
    crate::aayu_snapshot!("select_checkout_with_changes", out);
}

#[test]
fn contract_errors_in_a_map_or_the_evidence_map_are_usage_errors() {
    let marks = common::shared_dir();
    let (repo, base, head) = shop(
        marks.path(),
        false,
        Some("[[criterion]]\nid = 1\ntests = [\"no-colon\"]\n"),
    );
    let snapshot = ready(&repo, 7, "1. Counts.", &[]);
    let (out, _) = select(
        &repo,
        &[
            "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot,
        ],
    );
    crate::aayu_snapshot!("select_evidence_map_contract_error", out);

    let dir = skill("", "shop");
    repo.write(
        &format!("{dir}/report.md"),
        feature_md(r#"{"id": "report"}"#, &[&check("prints")]),
    );
    let head = repo.commit("a broken feature block");
    let (out, _) = select(&repo, &["--base", &base, "--head", &head]);
    crate::aayu_snapshot!("select_map_contract_error", out);
}

#[test]
fn flags_that_run_or_write_are_refused() {
    let repo = TestRepo::new();
    repo.commit("empty");
    let change = ["--base", "HEAD", "--head", "HEAD"];
    for (name, extra) in [
        ("ci", &["--ci"][..]),
        ("map", &["--map"]),
        ("check", &["--check", "all"]),
        ("maintain", &["--maintain", "drift"]),
        ("out", &["--out", "run"]),
        ("jobs", &["--jobs", "2"]),
    ] {
        let (out, _) = select(&repo, &[&change[..], extra].concat());
        crate::aayu_snapshot!(format!("select_refuses_{name}"), out);
    }
    let (out, _) = select(&repo, &["--base", "HEAD"]);
    crate::aayu_snapshot!("select_needs_base_and_head", out);
    assert!(common::all_paths(&repo.path(".aayudha")).is_empty());
}

#[test]
fn a_touched_package_without_a_coverage_runner_is_said_not_listed() {
    let marks = common::shared_dir();
    let evidence = "[[criterion]]\nid = 1\ntests = [\".:counts_words\"]\n";
    let (repo, base, _) = shop(marks.path(), false, Some(evidence));
    repo.write(
        "py/pyproject.toml",
        "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
    )
    .write("py/calc.py", "def add(a, b):\n    return a + b\n");
    let head = repo.commit("a Python package");
    let snapshot = ready(&repo, 7, "1. Counts.", &[]);
    let args = [
        "--base", &base, "--head", &head, "--story", "7", "--ready", &snapshot, "--json",
    ];
    let (out, _) = select(&repo, &args);
    assert_eq!(json(&out)["packages"], json!([]));
    // (The stderr is the whole notice: nothing else is said.)
    assert_eq!(
        out.stderr,
        "notice: the change touches Python packages, which have no coverage runner yet: the gate's coverage floor skips them, and `packages` leaves them out\n"
    );
}
