//! Contract errors in maps and configuration: each names file, line and field, and exits 2.

use crate::common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

const GOOD_MAP: &str = r#"{"product": "shop", "control": ["aayu", "control"],
 "surfaces": [{"kind": "command", "files": ["src/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}]}"#;

const GOOD_FEATURE: &str = r#"{"id": "buy", "layers": ["L02"], "sources": ["src/main.rs"],
 "surfaces": {"command": ["buy"]}, "verified_at": ""}"#;

const CHECK: &str = r#"{"id": "pays", "kind": "cli", "evidence": "api-trace", "steps": [{"run": ["shop", "buy"]}]}"#;

fn repo_with(readme: &str, feature: &str) -> TestRepo {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    repo.write("src/main.rs", "fn main() { cmd(\"buy\"); }\n")
        .write(&format!("{dir}/README.md"), readme)
        .write(&format!("{dir}/buy.md"), feature);
    repo
}

/// Runs `verify --map --json`, expects exit 2, and returns the errors as `file:line: message`.
fn errors_of(repo: &TestRepo) -> Vec<String> {
    let out = run(repo.aayu().args(["verify", "--map", "--json"]));
    assert_eq!(
        out.code, 2,
        "contract errors exit 2: {}{}",
        out.stdout, out.stderr
    );
    let report: Value = serde_json::from_str(&out.stdout).expect("one JSON object");
    assert_eq!(
        report["drift"],
        serde_json::json!([]),
        "a broken map is not judged for drift"
    );
    report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            format!(
                "{}:{}: {}",
                e["file"].as_str().expect("file"),
                e["line"],
                e["message"].as_str().expect("message")
            )
        })
        .collect()
}

/// The contract errors of `verify --map --json`, one `file:line: message` a line, frozen whole.
macro_rules! errors_snapshot {
    ($name:expr, $repo:expr) => {
        insta::assert_snapshot!($name, errors_of(&$repo).join("\n"))
    };
}

fn feature_file() -> String {
    format!("{}/buy.md", skill("", "shop"))
}

fn readme_file() -> String {
    format!("{}/README.md", skill("", "shop"))
}

#[test]
fn an_unknown_field_in_a_feature_block() {
    let block = GOOD_FEATURE.replace(
        r#""verified_at": """#,
        r#""verified_at": "", "owner": "me""#,
    );
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(&block, &[CHECK]),
    );
    errors_snapshot!("unknown_field_in_a_feature_block", repo);
}

#[test]
fn a_missing_field_in_a_check_block() {
    let check = r#"{"id": "pays", "kind": "cli", "steps": []}"#;
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[check]),
    );
    let errors = errors_of(&repo);
    assert_eq!(
        errors,
        vec![format!(
            "{}:21: check block: missing field `evidence`",
            feature_file()
        )]
    );
}

#[test]
fn a_wrong_type_names_the_field_path() {
    let map = GOOD_MAP.replace(r#""pattern": "cmd\\(\"([a-z]+)\"\\)""#, r#""pattern": 7"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    errors_snapshot!("wrong_type", repo);
}

#[test]
fn an_unknown_check_kind_and_evidence_kind() {
    let check = r#"{"id": "pays", "kind": "gui", "evidence": "api-trace", "steps": []}"#;
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[check]),
    );
    errors_snapshot!("unknown_check_kind", repo);
}

#[test]
fn wrong_h2_order() {
    let feature = feature_md(GOOD_FEATURE, &[CHECK])
        .replace("## How to reach it", "## Gotchas first")
        .replace("## Gotchas\n", "## How to reach it\n");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &feature);
    errors_snapshot!("wrong_h2", repo);

    let swapped = feature_md(GOOD_FEATURE, &[CHECK])
        .replace("## Sub-features", "## TEMP")
        .replace("## How to reach it", "## Sub-features")
        .replace("## TEMP", "## How to reach it");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &swapped);
    errors_snapshot!("swapped_h2s", repo);
}

#[test]
fn a_missing_h2_and_a_missing_h1() {
    let feature = feature_md(GOOD_FEATURE, &[CHECK]).replace("## Gotchas\n\nNone.\n", "");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &feature);
    errors_snapshot!("missing_h2", repo);
    let feature = feature_md(GOOD_FEATURE, &[CHECK]).replace("# Feature\n", "");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &feature);
    assert_eq!(
        errors_of(&repo),
        vec![format!(
            "{}:1: no H1: a feature file starts with `# <title>`",
            feature_file()
        )]
    );
}

#[test]
fn two_map_blocks() {
    let readme = format!(
        "{}\n```json\n{{}}\n```\n",
        map_readme(GOOD_MAP, &["buy.md"])
    );
    let repo = repo_with(&readme, &feature_md(GOOD_FEATURE, &[CHECK]));
    errors_snapshot!("two_map_blocks", repo);
}

#[test]
fn a_bad_regex_and_a_rule_without_a_capture_group() {
    let map = GOOD_MAP.replace(r#"cmd\\(\"([a-z]+)\"\\)"#, r#"cmd\\(([a-z]+"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    errors_snapshot!("bad_regex", repo);

    let map = GOOD_MAP.replace(r#"cmd\\(\"([a-z]+)\"\\)"#, r#"cmd\\(\"[a-z]+\"\\)"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    assert_eq!(
        errors_of(&repo),
        vec![format!(
            "{}:7: map block: `surfaces[0].pattern` has 0 capture groups; it needs exactly one, the surface (use `(?:…)` for other groups)",
            readme_file()
        )]
    );
    let map = GOOD_MAP.replace(r#"cmd\\(\"([a-z]+)\"\\)"#, r#"(cmd)\\(\"([a-z]+)\"\\)"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    errors_snapshot!("two_capture_groups", repo);
}

#[test]
fn invalid_json_names_its_line() {
    let check =
        "{\"id\": \"pays\",\n \"kind\": \"cli\",, \"evidence\": \"api-trace\", \"steps\": []}";
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[check]),
    );
    let errors = errors_of(&repo);
    assert_eq!(
        errors,
        vec![format!(
            "{}:22: check block: key must be a string",
            feature_file()
        )]
    );
}

#[test]
fn a_bad_glob_a_bad_layer_an_escaping_source_and_a_bad_sha() {
    let map = GOOD_MAP.replace(r#"["src/*.rs"]"#, r#"["src/[.rs"]"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    errors_snapshot!("bad_glob", repo);

    let feature = GOOD_FEATURE
        .replace(r#"["L02"]"#, r#"["L10"]"#)
        .replace(r#"["src/main.rs"]"#, r#"["../outside.rs"]"#)
        .replace(r#""verified_at": """#, r#""verified_at": "main""#);
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(&feature, &[CHECK]),
    );
    errors_snapshot!("bad_layer_escaping_source_bad_sha", repo);
}

#[test]
fn two_maps_for_one_product() {
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    repo.write(
        &format!("{}/README.md", skill("other", "shop")),
        map_readme(GOOD_MAP, &[]),
    );
    errors_snapshot!("two_maps_for_one_product", repo);
}

#[test]
fn the_readable_report_lists_contract_errors() {
    let repo = repo_with(
        &map_readme("{\"product\": \"shop\"}", &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stdout,
        format!(
            "contract errors (the maps below are not judged until they are fixed)\n  {}:6: map block: missing field `control`\n1 map, 1 feature: 1 contract error\n",
            readme_file()
        )
    );
}

#[test]
fn configuration_errors_name_key_file_and_line() {
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nseed = [\"./serve\"]\ncheck_timeout = 30\n",
    );
    // Nothing is reported on a bad configuration: stdout is empty.
    crate::aayu_snapshot!(
        "config_unknown_key",
        run(repo.aayu().args(["verify", "--map"]))
    );

    repo.write(
        ".aayudha/config.toml",
        "[verify]\ncheck_timeout_s = \"soon\"\n",
    );
    crate::aayu_snapshot!(
        "config_wrong_type",
        run(repo.aayu().args(["verify", "--map"]))
    );

    repo.write(".aayudha/config.toml", "[verify\n");
    crate::aayu_snapshot!(
        "config_not_toml",
        run(repo.aayu().args(["verify", "--map"]))
    );

    crate::aayu_snapshot!(
        "config_missing_file",
        run(repo
            .aayu()
            .args(["verify", "--map", "--config", "nowhere.toml"]))
    );
}
