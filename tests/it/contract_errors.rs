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
    let errors = errors_of(&repo);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!(
            "{}:7: feature block: unknown field `owner`",
            feature_file()
        )),
        "{}",
        errors[0]
    );
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
    let errors = errors_of(&repo);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!(
            "{}:7: map block: `surfaces[0].pattern`: invalid type: integer `7`",
            readme_file()
        )),
        "{}",
        errors[0]
    );
}

#[test]
fn an_unknown_check_kind_and_evidence_kind() {
    let check = r#"{"id": "pays", "kind": "gui", "evidence": "api-trace", "steps": []}"#;
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[check]),
    );
    let errors = errors_of(&repo);
    assert!(
        errors[0].contains(
            "check block: `kind`: unknown variant `gui`, expected one of `ui`, `cli`, `api`, `lib`"
        ),
        "{}",
        errors[0]
    );
}

#[test]
fn wrong_h2_order() {
    let feature = feature_md(GOOD_FEATURE, &[CHECK])
        .replace("## How to reach it", "## Gotchas first")
        .replace("## Gotchas\n", "## How to reach it\n");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &feature);
    let errors = errors_of(&repo);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(&format!(
            "{}:14: H2 2 is `Gotchas first`, expected `How to reach it`",
            feature_file()
        )),
        "{}",
        errors[0]
    );

    let swapped = feature_md(GOOD_FEATURE, &[CHECK])
        .replace("## Sub-features", "## TEMP")
        .replace("## How to reach it", "## Sub-features")
        .replace("## TEMP", "## How to reach it");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &swapped);
    let errors = errors_of(&repo);
    assert!(
        errors[0].contains("H2 1 is `How to reach it` (out of order), expected `Sub-features`"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_missing_h2_and_a_missing_h1() {
    let feature = feature_md(GOOD_FEATURE, &[CHECK]).replace("## Gotchas\n\nNone.\n", "");
    let repo = repo_with(&map_readme(GOOD_MAP, &["buy.md"]), &feature);
    assert!(errors_of(&repo)[0].contains("missing H2 `Gotchas`"));
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
    let errors = errors_of(&repo);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(&format!(
            "{}:14: a second map block (the first is on line 5)",
            readme_file()
        )),
        "{}",
        errors[0]
    );
}

#[test]
fn a_bad_regex_and_a_rule_without_a_capture_group() {
    let map = GOOD_MAP.replace(r#"cmd\\(\"([a-z]+)\"\\)"#, r#"cmd\\(([a-z]+"#);
    let repo = repo_with(
        &map_readme(&map, &["buy.md"]),
        &feature_md(GOOD_FEATURE, &[CHECK]),
    );
    let errors = errors_of(&repo);
    assert!(
        errors[0].starts_with(&format!(
            "{}:7: map block: `surfaces[0].pattern` is not a valid regular expression",
            readme_file()
        )),
        "{}",
        errors[0]
    );

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
    assert!(errors_of(&repo)[0].contains("has 2 capture groups"));
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
    assert!(errors_of(&repo)[0].contains("`surfaces[0].files[0]`: `src/[.rs` is not a valid glob"));

    let feature = GOOD_FEATURE
        .replace(r#"["L02"]"#, r#"["L10"]"#)
        .replace(r#"["src/main.rs"]"#, r#"["../outside.rs"]"#)
        .replace(r#""verified_at": """#, r#""verified_at": "main""#);
    let repo = repo_with(
        &map_readme(GOOD_MAP, &["buy.md"]),
        &feature_md(&feature, &[CHECK]),
    );
    let errors = errors_of(&repo);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(errors[0].contains("`layers[0]`: `L10` is not a layer (L01 to L09)"));
    assert!(errors[1].contains(
        "`sources[0]`: `../outside.rs` must be a plain path relative to the repository root"
    ));
    assert!(errors[2].contains("`verified_at`: `main` is not a commit SHA"));
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
    let errors = errors_of(&repo);
    assert!(
        errors[0].contains(
            "`shop` is also the product of .agents/skills/verify-shop/features/README.md"
        ),
        "{errors:#?}"
    );
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
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stdout.is_empty(),
        "nothing is reported on a bad configuration"
    );
    assert!(
        out.stderr.starts_with(
            "error: .aayudha/config.toml:3: unknown key `verify.check_timeout` (known in [verify]: "
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("hint: every key and its default is listed in defaults.toml")
    );

    repo.write(
        ".aayudha/config.toml",
        "[verify]\ncheck_timeout_s = \"soon\"\n",
    );
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("error: .aayudha/config.toml:2: `verify.check_timeout_s` must be an integer, not a string"), "{}", out.stderr);

    repo.write(".aayudha/config.toml", "[verify\n");
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: .aayudha/config.toml:1: "),
        "{}",
        out.stderr
    );

    let out = run(repo
        .aayu()
        .args(["verify", "--map", "--config", "nowhere.toml"]));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: cannot read `nowhere.toml`"),
        "{}",
        out.stderr
    );
}
