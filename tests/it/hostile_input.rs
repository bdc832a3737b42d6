//! Bad input never panics: binary, huge and non-UTF-8 sources, globs that match nothing, symlink loops.

use crate::common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

const MAP: &str = r#"{"product": "shop", "control": ["aayu", "control"],
 "surfaces": [{"kind": "command", "files": ["src/**"], "pattern": "cmd\\(\"([a-z]+)\"\\)"},
              {"kind": "route", "files": ["web/**/*.ts"], "pattern": "route\\('([a-z/]+)'\\)"}]}"#;

const FEATURE: &str = r#"{"id": "buy", "layers": ["L02"], "sources": ["src"],
 "surfaces": {"command": ["buy"]}, "verified_at": ""}"#;

const CHECK: &str = r#"{"id": "pays", "kind": "ui", "evidence": "screenshot", "steps": [{"click": {"name": "Pay"}}]}"#;

fn shop() -> TestRepo {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    repo.write(
        "src/main.rs",
        "fn main() { cmd(\"buy\"); button(\"Pay\"); }\n",
    )
    .write(&format!("{dir}/README.md"), map_readme(MAP, &["buy.md"]))
    .write(&format!("{dir}/buy.md"), feature_md(FEATURE, &[CHECK]));
    repo
}

fn report(repo: &TestRepo) -> (i32, Value, String) {
    let out = run(repo.aayu().args(["verify", "--map", "--json"]));
    // Whatever else stderr says, it holds no panic.
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    (out.code, value, out.stderr)
}

fn warnings(report: &Value) -> Vec<String> {
    report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| {
            format!(
                "{}: {}",
                w["file"].as_str().expect("file"),
                w["message"].as_str().expect("message")
            )
        })
        .collect()
}

#[test]
fn a_glob_that_matches_nothing_is_reported() {
    let repo = shop();
    let (code, report, _) = report(&repo);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        warnings(&report),
        vec![format!(
            "{}/README.md: surface rule 1 (`route`): `files[0]` `web/**/*.ts` matches no file",
            skill("", "shop")
        )]
    );
    crate::aayu_snapshot!(
        "glob_matches_nothing",
        run(repo.aayu().args(["verify", "--map"]))
    );
}

#[test]
fn binary_and_non_utf8_sources_do_not_panic() {
    let repo = shop();
    repo.write("web/app.ts", "route('/home')\n");
    let mut binary = b"cmd(\"hidden\")".to_vec();
    binary.extend_from_slice(&[0, 159, 146, 150, 0, 255]);
    repo.write("src/logo.bin", &binary);
    // Invalid UTF-8 around a real surface: the surface is still found.
    let mut latin1 = b"// caf\xe9\n".to_vec();
    latin1.extend_from_slice(b"cmd(\"sell\")\n");
    repo.write("src/legacy.rs", &latin1);
    let (code, report, _) = report(&repo);
    assert_eq!(code, 3);
    let drift: Vec<&str> = report["drift"]
        .as_array()
        .expect("drift")
        .iter()
        .map(|d| d["detail"].as_str().expect("d"))
        .collect();
    // `sell` and `/home` are drift; the binary file is said, not searched.
    insta::assert_snapshot!(
        "binary_and_non_utf8_sources",
        format!(
            "drift:\n{}\nwarnings:\n{}",
            drift.join("\n"),
            warnings(&report).join("\n")
        )
    );
    // The rule, said outright: nothing of the binary file is drift.
    assert!(
        !drift.iter().any(|d| d.contains("hidden")),
        "a binary file is not searched: {drift:?}"
    );
}

#[test]
fn a_fifty_megabyte_source_is_left_out_by_default_and_read_under_a_larger_cap() {
    let repo = shop();
    let mut big = "// filler line of a generated file\n".repeat(50 * 1024 * 1024 / 35);
    big.push_str("cmd(\"bulk\")\n");
    repo.write("src/generated.rs", big.as_bytes());
    // Over `max_source_bytes` (16 MiB): a warning, never drift.
    let (code, capped, _) = report(&repo);
    assert_eq!(code, 0, "{capped:#}");
    insta::assert_snapshot!("fifty_megabytes_capped", warnings(&capped).join("\n"));
    // A repository that wants it searched raises the cap.
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nmax_source_bytes = 67108864\n",
    );
    let (code, report, _) = report(&repo);
    assert_eq!(code, 3);
    let drift = &report["drift"][0];
    assert_eq!(drift["file"], "src/generated.rs");
    insta::assert_snapshot!(
        "fifty_megabytes_searched",
        drift["detail"].as_str().expect("d")
    );
    assert_eq!(drift["line"], 50 * 1024 * 1024 / 35 + 1);
}

#[test]
fn symlinks_are_not_followed_and_loops_do_not_hang() {
    let repo = shop();
    std::os::unix::fs::symlink("loop-b", repo.path("src/loop-a")).expect("symlink");
    std::os::unix::fs::symlink("loop-a", repo.path("src/loop-b")).expect("symlink");
    std::os::unix::fs::symlink("/etc/passwd", repo.path("src/outside")).expect("symlink");
    std::os::unix::fs::symlink("..", repo.path("src/up")).expect("symlink");
    let (code, report, _) = report(&repo);
    assert_eq!(code, 0, "{report}");
    insta::assert_snapshot!("symbolic_links", warnings(&report).join("\n"));
}

#[test]
fn a_map_that_is_not_utf8_is_a_contract_error() {
    let repo = shop();
    repo.write(
        &format!("{}/README.md", skill("", "shop")),
        b"# Map\n\xff\xfe\n",
    );
    let (code, report, _) = report(&repo);
    assert_eq!(code, 2);
    insta::assert_snapshot!(
        "map_not_utf8",
        report["errors"][0]["message"].as_str().expect("m")
    );
}

#[test]
fn a_deleted_tracked_source_is_missing() {
    let repo = shop();
    repo.write("src/extra.rs", "// extra\n");
    repo.commit("all");
    let dir = skill("", "shop");
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(&FEATURE.replace(r#"["src"]"#, r#"["src/extra.rs"]"#), &[]),
    );
    repo.remove("src/extra.rs");
    let (code, report, _) = report(&repo);
    assert_eq!(code, 3);
    assert_eq!(report["drift"][0]["kind"], "missing-source");
}

#[test]
fn a_tracked_file_behind_a_linked_folder_is_not_read() {
    let repo = shop();
    repo.write("src/deep/x.rs", "// nothing here\n");
    repo.commit("deep");
    // The folder becomes a link to one outside the checkout, whose file names a surface.
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("x.rs"), "cmd(\"evil\");\n").expect("write");
    std::fs::remove_dir_all(repo.path("src/deep")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), repo.path("src/deep")).expect("symlink");
    let (code, report, _) = report(&repo);
    assert_eq!(
        code, 0,
        "nothing outside is read, so nothing is unmapped: {report}"
    );
    insta::assert_snapshot!("behind_a_linked_folder", warnings(&report).join("\n"));
}
