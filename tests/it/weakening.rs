//! The weakening floor through `aayu verify --ci`: each kind flagged at its line, the changes that are not
//! weakenings, the dated switch, the `map:reshape` waiver, and a pack with the floor that validates.

use crate::common::{self, TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

const CONTROL: &str =
    "#!/bin/sh\necho '{\"status\": \"passed\", \"reason\": \"\", \"artifacts\": []}'\n";

fn readme(control: &str, rules: &str, links: &[&str]) -> String {
    let block = format!(
        r#"{{"product": "shop", "control": {control},
 "surfaces": [{rules}]}}"#
    );
    map_readme(&block, links)
}

const COMMAND_RULE: &str =
    r#"{"kind": "command", "files": ["src/*.rs", "lib/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}"#;
const ROUTE_RULE: &str =
    r#"{"kind": "route", "files": ["src/*.rs"], "pattern": "route\\(\"([a-z/]+)\"\\)"}"#;

fn feature(id: &str, sources: &str, commands: &str) -> String {
    format!(
        r#"{{"id": "{id}", "layers": ["L02"], "sources": {sources},
 "surfaces": {{"command": {commands}}}, "verified_at": ""}}"#
    )
}

const PAYS: &str = r#"{"id": "pays", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "buy"], "exit": 0, "stdout": ["paid", "receipt"]},
  {"see": {"name": "Pay"}, "contains": "Paid"}
]}"#;
const REFUNDS: &str = r#"{"id": "refunds", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "refund"], "exit": 0, "stdout": ["refunded"]}
]}"#;
const SELLS: &str = r#"{"id": "sells", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "sell"], "exit": 1, "stderr": ["no stock"]}
]}"#;
const SHIPS: &str = r#"{"id": "ships", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "ship"], "stdout": ["shipped"]}
]}"#;
const KEEPS: &str = r#"{"id": "keeps", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "keep"], "stdout": ["kept"]}
]}"#;

const SOURCE: &str = "fn main() {\n    cmd(\"buy\");\n    cmd(\"sell\");\n    cmd(\"ship\");\n    cmd(\"keep\");\n    route(\"/buy\");\n}\n";

/// The base: four features, five checks, two surface rules, a control tool. `config` is the base's
/// `.aayudha/config.toml`.
fn base(config: &str) -> (TestRepo, String) {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    repo.write("src/main.rs", SOURCE)
        .write("src/buy.rs", "// buying\n")
        .write("tools/shop-control", CONTROL)
        .write(".aayudha/config.toml", config)
        .write(
            &format!("{dir}/README.md"),
            readme(
                r#"["sh", "tools/shop-control"]"#,
                &format!("{COMMAND_RULE},\n   {ROUTE_RULE}"),
                &["buy.md", "sell.md", "ship.md", "keep.md"],
            ),
        )
        .write(
            &format!("{dir}/buy.md"),
            feature_md(
                &feature("buy", r#"["src/main.rs", "src/buy.rs"]"#, r#"["buy"]"#),
                &[PAYS, REFUNDS],
            ),
        )
        .write(
            &format!("{dir}/sell.md"),
            feature_md(
                &feature("sell", r#"["src/main.rs"]"#, r#"["sell"]"#),
                &[SELLS],
            ),
        )
        .write(
            &format!("{dir}/ship.md"),
            feature_md(
                &feature("ship", r#"["src/main.rs"]"#, r#"["ship"]"#),
                &[SHIPS],
            ),
        )
        .write(
            &format!("{dir}/keep.md"),
            feature_md(
                &feature("keep", r#"["src/main.rs"]"#, r#"["keep"]"#),
                &[KEEPS],
            ),
        );
    let sha = repo.commit("base");
    (repo, sha)
}

/// A head that weakens the base every way the floor knows.
fn weaken(repo: &TestRepo) -> String {
    let dir = skill("", "shop");
    repo.write("tools/shop-control", format!("{CONTROL}exit 0\n"))
        .write(
            &format!("{dir}/README.md"),
            readme(
                r#"["sh", "tools/shop-control", "--lenient"]"#,
                r#"{"kind": "command", "files": ["src/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}"#,
                &["buy.md", "sell.md"],
            ),
        )
        .write(
            &format!("{dir}/buy.md"),
            feature_md(
                &feature("buy", r#"["src/main.rs"]"#, r#"["buy"]"#),
                &[
                    r#"{"id": "pays", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "buy"], "exit": 0, "stdout": ["paid"]},
  {"see": {"name": "Pay"}}
]}"#,
                ],
            ),
        )
        .write(
            &format!("{dir}/sell.md"),
            feature_md(
                &feature("sell", r#"["src/main.rs"]"#, r#"["sell"]"#),
                &[
                    r#"{"id": "sells", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "sell"], "stderr": ["no stock"]}
]}"#,
                ],
            ),
        )
        .remove(&format!("{dir}/ship.md"));
    repo.commit("weaken the checks")
}

/// `verify --ci` from `base` to `head`, the pack in `out`: (exit, pack.json, reports/weakening.json, stdout).
fn gate(
    repo: &TestRepo,
    base: &str,
    head: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, Value, String) {
    let mut cmd = repo.aayu();
    cmd.args([
        "verify", "--ci", "--base", base, "--head", head, "--out", "out",
    ])
    .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let read = |rel: &str| -> Value {
        let text = std::fs::read_to_string(repo.path(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}\n{}\n{}", out.stdout, out.stderr));
        serde_json::from_str(&text).expect("json")
    };
    (
        out.code,
        read("out/pack.json"),
        read("out/artifacts/reports/weakening.json"),
        out.stdout,
    )
}

fn floor(pack: &Value) -> &Value {
    pack["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["floor"] == "weakening")
        .unwrap_or_else(|| panic!("no weakening floor in {pack:#}"))
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
        + 1
}

#[test]
fn each_weakening_is_flagged_at_its_line() {
    let (repo, base_sha) = base("");
    let dir = skill("", "shop");
    let base_text = |name: &str| {
        String::from_utf8(
            std::process::Command::new("git")
                .current_dir(repo.root())
                .args(["show", &format!("{base_sha}:{dir}/{name}")])
                .output()
                .expect("git show")
                .stdout,
        )
        .expect("utf-8")
    };
    let (base_readme, base_ship) = (base_text("README.md"), base_text("ship.md"));
    let head = weaken(&repo);
    let head_text =
        |name: &str| std::fs::read_to_string(repo.path(&format!("{dir}/{name}"))).expect("read");
    let (readme, buy, sell) = (
        head_text("README.md"),
        head_text("buy.md"),
        head_text("sell.md"),
    );
    let (_, pack, report, stdout) = gate(&repo, &base_sha, &head, &[], &[]);

    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["base"], base_sha.as_str());
    assert_eq!(report["head"], head.as_str());
    let found: Vec<(String, u64, String, Value, Value)> = report["weakenings"]
        .as_array()
        .expect("weakenings")
        .iter()
        .map(|w| {
            let keys: Vec<&String> = w.as_object().expect("object").keys().collect();
            assert_eq!(
                keys,
                [
                    "file", "line", "kind", "product", "feature", "check", "detail"
                ]
            );
            assert_eq!(w["product"], "shop");
            (
                w["file"]
                    .as_str()
                    .expect("file")
                    .rsplit('/')
                    .next()
                    .expect("name")
                    .to_string(),
                w["line"].as_u64().expect("line"),
                w["kind"].as_str().expect("kind").to_string(),
                w["feature"].clone(),
                w["check"].clone(),
            )
        })
        .collect();
    let at = |file: &str, line: usize, kind: &str, feature: Value, check: Value| {
        (
            file.to_string(),
            line as u64,
            kind.to_string(),
            feature,
            check,
        )
    };
    let none = Value::Null;
    let s = |t: &str| Value::from(t);
    let mut expected = vec![
        // The control tool: a new argv and a changed file, at the map block.
        at(
            "README.md",
            line_of(&readme, "\"control\""),
            "control-changed",
            none.clone(),
            none.clone(),
        ),
        at(
            "README.md",
            line_of(&readme, "\"control\""),
            "control-file-changed",
            none.clone(),
            none.clone(),
        ),
        // The `route` rule removed (where it was), and `lib/*.rs` gone from the `command` rule (where it is).
        at(
            "README.md",
            line_of(&base_readme, "route\\\\("),
            "surface-rule-removed",
            none.clone(),
            none.clone(),
        ),
        at(
            "README.md",
            line_of(&readme, "cmd\\\\("),
            "surface-rule-removed",
            none.clone(),
            none.clone(),
        ),
        // `keep.md` still there but no longer in the index: the index line at the base.
        at(
            "README.md",
            line_of(&base_readme, "[keep.md]"),
            "removed-from-index",
            s("keep"),
            none.clone(),
        ),
        // `ship.md` deleted: its feature block's line at the base.
        at(
            "ship.md",
            line_of(&base_ship, "\"id\": \"ship\""),
            "feature-deleted",
            s("ship"),
            none.clone(),
        ),
        // buy: `refunds` removed, `pays` lost `contains` and an item of `stdout`, `src/buy.rs` gone.
        at(
            "buy.md",
            line_of(&buy, "\"id\": \"buy\""),
            "fewer-checks",
            s("buy"),
            s("refunds"),
        ),
        at(
            "buy.md",
            line_of(&buy, "\"id\": \"pays\""),
            "fewer-assertions",
            s("buy"),
            s("pays"),
        ),
        at(
            "buy.md",
            line_of(&buy, "\"id\": \"pays\""),
            "fewer-assertions",
            s("buy"),
            s("pays"),
        ),
        at(
            "buy.md",
            line_of(&buy, "\"id\": \"buy\""),
            "sources-narrowed",
            s("buy"),
            none.clone(),
        ),
        // sell: `"exit": 1` removed (not the default).
        at(
            "sell.md",
            line_of(&sell, "\"id\": \"sells\""),
            "fewer-assertions",
            s("sell"),
            s("sells"),
        ),
    ];
    let mut got = found.clone();
    got.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    expected.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(got, expected, "{report:#}");

    let details: Vec<&str> = report["weakenings"]
        .as_array()
        .expect("list")
        .iter()
        .map(|w| w["detail"].as_str().expect("detail"))
        .collect();
    // Sorted, as the kinds above are compared.
    let mut details = details;
    details.sort_unstable();
    insta::assert_snapshot!("weakening_details", details.join("\n"));

    // The floor: advisory without a date; in the pack, which validates against the schema.
    let f = floor(&pack);
    assert_eq!(f["result"], "pass");
    assert_eq!(f["value"], 11.0);
    assert_eq!(f["threshold"], 0.0);
    assert_eq!(
        f["detail"],
        "advisory (no blocking date set): 11 weakenings"
    );
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/pack.v1.json"),
        )
        .expect("schema"),
    )
    .expect("json");
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let problems: Vec<String> = validator
        .iter_errors(&pack)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        pack["artifacts"]
            .as_array()
            .expect("artifacts")
            .iter()
            .any(|a| a["path"] == "reports/weakening.json" && a["store"] == "git"),
        "the report is in the pack"
    );
    // The table prints each as `file:line: weakening: …`.
    insta::assert_snapshot!("weakening_table", common::redact(&stdout));
    // The schema reads any floor name of the pattern (a later floor's, the seeds' `coverage`); the names
    // aayu writes are its own six.
    let names: Vec<&str> = pack["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["floor"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "coverage",
            "feature-map",
            "weakening",
            "harness",
            "behaviour",
            "tests",
            "red-on-base"
        ]
    );
    let mut bad = pack.clone();
    bad["checks"][1]["floor"] = Value::from("Weakening floor");
    assert!(
        !validator.is_valid(&bad),
        "a floor name outside the pattern is refused"
    );
}

#[test]
fn changed_values_a_default_exit_and_a_moved_check_are_not_weakenings() {
    let (repo, base_sha) = base("");
    let dir = skill("", "shop");
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(
            &feature("buy", r#"["src/main.rs", "src/buy.rs"]"#, r#"["buy"]"#),
            &[
                // A renamed handle, another expected text, `"exit": 0` (the default) dropped.
                r#"{"id": "pays", "kind": "cli", "evidence": "report", "steps": [
  {"run": ["shop", "buy", "--now"], "stdout": ["paid in full", "receipt #1"]},
  {"see": {"name": "Pay now"}, "contains": "Paid in full"}
]}"#,
                REFUNDS,
                // `sells`, moved here from `sell` with the same assertions.
                SELLS,
                // And a new check: adding is never a weakening.
                r#"{"id": "new", "kind": "cli", "evidence": "report", "steps": [{"run": ["shop"], "exit": 2}]}"#,
            ],
        ),
    )
    .write(
        &format!("{dir}/sell.md"),
        feature_md(&feature("sell", r#"["src/main.rs"]"#, r#"["sell"]"#), &[]),
    );
    let head = repo.commit("reshape without weakening");
    let (_, pack, report, _) = gate(&repo, &base_sha, &head, &[], &[]);
    assert_eq!(report["weakenings"], serde_json::json!([]), "{report:#}");
    let f = floor(&pack);
    assert_eq!(f["result"], "pass");
    assert_eq!(f["value"], 0.0);
    assert_eq!(
        f["detail"],
        "no feature, check or assertion removed or loosened"
    );
}

#[test]
fn the_floor_blocks_from_its_date_and_the_map_reshape_label_waives_it() {
    let (repo, base_sha) = base("[verify]\nweakening_blocking_from = \"2026-12-01\"\n");
    let head = weaken(&repo);
    let (_, pack, _, _) = gate(
        &repo,
        &base_sha,
        &head,
        &[],
        &[("AAYUDHA_NOW", "2026-11-30T23:59:59Z")],
    );
    let f = floor(&pack);
    assert_eq!(f["result"], "pass");
    assert_eq!(f["detail"], "advisory until 2026-12-01: 11 weakenings");

    let (code, pack, _, _) = gate(
        &repo,
        &base_sha,
        &head,
        &[],
        &[("AAYUDHA_NOW", "2026-12-01T00:00:00Z")],
    );
    assert_eq!(code, 3, "a floor does not hold");
    let f = floor(&pack);
    assert_eq!(f["result"], "fail");
    assert_eq!(f["detail"], "11 weakenings (blocking since 2026-12-01)");

    // The story says the maps are reshaped on purpose: waived, whatever the date, and named.
    let goal = "1. The shop's checks are regrouped.";
    let ready = common::ready(&repo, 12, goal, &["map:reshape"]);
    let (_, pack, _, _) = gate(
        &repo,
        &base_sha,
        &head,
        &["--story", "12", "--ready", &ready],
        &[("AAYUDHA_NOW", "2026-12-01T00:00:00Z")],
    );
    let f = floor(&pack);
    assert_eq!(f["result"], "waived");
    assert_eq!(
        f["detail"],
        "11 weakenings, waived by the story's label `map:reshape`"
    );
    // Another label does not waive it.
    let ready = common::ready(&repo, 13, goal, &["type:bug"]);
    let (_, pack, _, _) = gate(
        &repo,
        &base_sha,
        &head,
        &["--story", "13", "--ready", &ready],
        &[("AAYUDHA_NOW", "2026-12-01T00:00:00Z")],
    );
    assert_eq!(floor(&pack)["result"], "fail");
}

#[test]
fn a_feature_file_that_cannot_be_read_at_the_head_is_said_so() {
    let (repo, base_sha) = base("");
    let dir = skill("", "shop");
    // Over the map reader's 4 MiB: the file is there, its feature is not readable.
    let big = format!(
        "{}\n{}",
        feature_md(
            &feature("keep", r#"["src/main.rs"]"#, r#"["keep"]"#),
            &[KEEPS]
        ),
        "x".repeat(5 << 20)
    );
    repo.write(&format!("{dir}/keep.md"), big);
    let head = repo.commit("a huge feature file");
    let (_, _, report, _) = gate(&repo, &base_sha, &head, &[], &[]);
    let weakenings = report["weakenings"].as_array().expect("list");
    assert_eq!(weakenings.len(), 1, "{report:#}");
    assert_eq!(weakenings[0]["kind"], "feature-deleted");
    assert!(
        weakenings[0]["detail"].as_str().is_some_and(
            |d| d.starts_with("feature `keep` cannot be read at the head (`keep.md` is there")
        ),
        "{report:#}"
    );
}

/// A `!` entry added to a rule's `files` (or changed) narrows it: `surface-rule-narrowed` at the rule's
/// line; a `!` entry removed widens it, and is no weakening.
#[test]
fn an_added_exclusion_narrows_a_surface_rule_and_a_removed_one_does_not() {
    let (repo, base_sha) = base("");
    let dir = skill("", "shop");
    let rules = |command_files: &str, route_files: &str| {
        format!(
            r#"{{"kind": "command", "files": {command_files}, "pattern": "cmd\\(\"([a-z]+)\"\\)"}},
   {{"kind": "route", "files": {route_files}, "pattern": "route\\(\"([a-z/]+)\"\\)"}}"#
        )
    };
    let write = |command_files: &str, route_files: &str| {
        repo.write(
            &format!("{dir}/README.md"),
            readme(
                r#"["sh", "tools/shop-control"]"#,
                &rules(command_files, route_files),
                &["buy.md", "sell.md", "ship.md", "keep.md"],
            ),
        );
    };
    // The base's rules, with an exclusion on `route` added first (a commit of its own).
    write(
        r#"["src/*.rs", "lib/*.rs"]"#,
        r#"["src/*.rs", "!src/old.rs"]"#,
    );
    let middle = repo.commit("route rule excludes an old file");
    write(
        r#"["src/*.rs", "lib/*.rs", "!src/buy.rs"]"#,
        r#"["src/*.rs"]"#,
    );
    let head = repo.commit("command rule excludes buy.rs; route rule looks everywhere again");
    let readme_text =
        std::fs::read_to_string(repo.path(&format!("{dir}/README.md"))).expect("read");
    let (_, _, report, _) = gate(&repo, &middle, &head, &[], &[]);
    let found: Vec<(u64, String, String)> = report["weakenings"]
        .as_array()
        .expect("weakenings")
        .iter()
        .map(|w| {
            (
                w["line"].as_u64().expect("line"),
                w["kind"].as_str().expect("kind").to_string(),
                w["detail"].as_str().expect("detail").to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![(
            line_of(&readme_text, "cmd\\\\(") as u64,
            "surface-rule-narrowed".to_string(),
            "the surface rule `command` now excludes `!src/buy.rs`: review what it no longer looks in"
                .to_string()
        )],
        "{report:#}"
    );
    // From the base (no exclusion anywhere) to the middle: the added `!src/old.rs` is flagged too.
    let (_, _, report, _) = gate(&repo, &base_sha, &middle, &[], &[]);
    let kinds: Vec<&str> = report["weakenings"]
        .as_array()
        .expect("weakenings")
        .iter()
        .map(|w| w["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["surface-rule-narrowed"], "{report:#}");
}
