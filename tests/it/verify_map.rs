//! `aayu verify --map` through the real binary, on real git repositories made in temp dirs.

use crate::common;
use crate::common::{TestRepo, feature_md, map_readme, run, skill};
use serde_json::Value;

const MAP_BLOCK: &str = r#"{"product": "shop", "control": ["tools/shop-control"],
 "surfaces": [{"kind": "command", "files": ["src/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}]}"#;

pub(crate) const SOURCE: &str = r#"fn main() {
    cmd("buy");
    cmd("sell");
    render("<button>Pay</button>");
}
#[test]
fn pays_in_full() {}
"#;

fn buy_block(verified_at: &str) -> String {
    format!(
        r#"{{"id": "buy", "layers": ["L02"], "sources": ["src/main.rs"],
 "surfaces": {{"command": ["buy"]}}, "verified_at": "{verified_at}"}}"#
    )
}

fn sell_block(verified_at: &str) -> String {
    format!(
        r#"{{"id": "sell", "layers": ["L02"], "sources": ["src/main.rs"],
 "surfaces": {{"command": ["sell"]}}, "verified_at": "{verified_at}"}}"#
    )
}

const BUY_CHECK: &str = r#"{"id": "pays", "kind": "ui", "evidence": "screenshot", "steps": [
  {"click": {"name": "Pay"}},
  {"go": {"test": "pays_in_full"}}
]}"#;

const SELL_CHECK: &str = r#"{"id": "sells", "kind": "cli", "evidence": "api-trace", "steps": [{"run": ["shop", "sell"], "exit": 0}]}"#;

/// A product `shop` whose map is in sync with its source, committed, and verified at that commit.
pub(crate) fn shop() -> (TestRepo, String) {
    let repo = TestRepo::new();
    let dir = skill("", "shop");
    repo.write("src/main.rs", SOURCE)
        .write(
            &format!("{dir}/README.md"),
            map_readme(MAP_BLOCK, &["buy.md", "sell.md"]),
        )
        .write(
            &format!("{dir}/buy.md"),
            feature_md(&buy_block(""), &[BUY_CHECK]),
        )
        .write(
            &format!("{dir}/sell.md"),
            feature_md(&sell_block(""), &[SELL_CHECK]),
        );
    let sha = repo.commit("shop");
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(&buy_block(&sha), &[BUY_CHECK]),
    )
    .write(
        &format!("{dir}/sell.md"),
        feature_md(&sell_block(&sha), &[SELL_CHECK]),
    );
    repo.commit("verified");
    (repo, sha)
}

fn json(repo: &TestRepo) -> (i32, Value) {
    let out = run(repo.aayu().args(["verify", "--map", "--json"]));
    let value: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is one JSON object ({e}): {}\nstderr: {}",
            out.stdout, out.stderr
        )
    });
    (out.code, value)
}

fn drift_kinds(report: &Value) -> Vec<(String, String)> {
    report["drift"]
        .as_array()
        .expect("drift array")
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().expect("kind").to_string(),
                d["detail"].as_str().expect("detail").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_map_in_sync_exits_0_quietly() {
    let (repo, _) = shop();
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "1 map, 2 features: in sync\n");
    assert_eq!(out.stderr, "");
    let (code, report) = json(&repo);
    assert_eq!(code, 0);
    assert_eq!(
        report,
        serde_json::json!({"schema_version": 1, "maps": 1, "features": 2, "drift": [], "stale": [], "errors": [], "warnings": []})
    );
}

#[test]
fn timings_say_where_the_time_goes_when_asked() {
    let (repo, _) = shop();
    let out = run(repo
        .aayu()
        .args(["verify", "--map"])
        .env("AAYU_TIMINGS", "1"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "1 map, 2 features: in sync\n");
    let phases: Vec<&str> = out
        .stderr
        .lines()
        .map(|l| {
            let phase = l.strip_prefix("aayu timing: ").expect("a timing line");
            let (phase, ms) = phase.rsplit_once(' ').expect("unit");
            assert_eq!(ms, "ms", "{l}");
            let (phase, number) = phase.rsplit_once(' ').expect("number");
            number.parse::<f64>().expect("milliseconds");
            phase
        })
        .collect();
    assert_eq!(
        phases,
        [
            "list the working tree (walk and index)",
            "read the maps",
            "open the verified commits",
            "scan the sources",
            "drift and stale"
        ]
    );
}

#[test]
fn no_map_exits_0() {
    let repo = TestRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit("no map");
    // No map, and how to start one.
    crate::aayu_snapshot!("no_map", run(repo.aayu().args(["verify", "--map"])));
    let (code, report) = json(&repo);
    assert_eq!((code, report["maps"].as_u64()), (0, Some(0)));
}

#[test]
fn an_unmapped_surface_is_drift_at_its_line() {
    let (repo, _) = shop();
    repo.write(
        "src/main.rs",
        SOURCE.replace(
            "    cmd(\"sell\");\n",
            "    cmd(\"sell\");\n    cmd(\"refund\");\n",
        ),
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    let drift = &report["drift"][0];
    assert_eq!(drift["kind"], "unmapped-surface");
    assert_eq!(drift["product"], "shop");
    assert_eq!(drift["feature"], Value::Null);
    assert_eq!(drift["file"], "src/main.rs");
    assert_eq!(drift["line"], 4);
    insta::assert_snapshot!(
        "unmapped_surface_detail",
        drift["detail"].as_str().expect("detail")
    );
    assert_eq!(report["drift"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_missing_surface_is_drift_on_the_feature_line() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    let block = buy_block(&sha).replace(r#"["buy"]"#, r#"["buy", "checkout"]"#);
    repo.write(&format!("{dir}/buy.md"), feature_md(&block, &[BUY_CHECK]));
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    assert_eq!(drift_kinds(&report).len(), 1, "{report}");
    let drift = &report["drift"][0];
    assert_eq!(drift["kind"], "missing-surface");
    assert_eq!(drift["feature"], "buy");
    assert_eq!(drift["file"], format!("{dir}/buy.md"));
    assert_eq!(drift["line"], 7);
    insta::assert_snapshot!(
        "missing_surface_detail",
        drift["detail"].as_str().expect("detail")
    );
}

#[test]
fn a_missing_handle_is_drift_and_deeper_values_are_data() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    let check = r#"{"id": "pays", "kind": "ui", "evidence": "screenshot", "steps": [
  {"click": {"name": "Pay"}},
  {"fill": {"label": "Card number"}},
  {"request": {"method": "POST", "body": {"name": "Nowhere in source"}}},
  {"go": {"test": "pays"}}
]}"#;
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(&buy_block(&sha), &[check]),
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    let drift = drift_kinds(&report);
    // `Card number` is not in source; `pays` is only part of the word `pays_in_full`; the body's name is data.
    assert_eq!(drift.len(), 2, "{report}");
    assert!(drift.iter().all(|(kind, _)| kind == "missing-handle"));
    let details: Vec<&str> = drift.iter().map(|(_, d)| d.as_str()).collect();
    insta::assert_snapshot!("missing_handle_details", details.join("\n"));
    assert_eq!(report["drift"][0]["line"], 23);
    assert_eq!(report["drift"][1]["line"], 25);
}

#[test]
fn handles_count_quoted_or_as_element_text_only() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    repo.write(
        "src/main.rs",
        SOURCE.replace("<button>Pay</button>", "<button> Pay</button> // Pay"),
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 3, "{report}");
    assert_eq!(
        drift_kinds(&report),
        vec![(
            "missing-handle".to_string(),
            drift_kinds(&report)[0].1.clone()
        )]
    );
    repo.write(
        "src/main.rs",
        SOURCE.replace("<button>Pay</button>", "label('Pay')"),
    );
    let (code, _) = json(&repo);
    assert_eq!(code, 0);
    let _ = (sha, dir);
}

#[test]
fn a_missing_source_is_drift() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    let block = sell_block(&sha).replace(
        r#""sources": ["src/main.rs"]"#,
        r#""sources": ["src/main.rs", "src/gone.rs"]"#,
    );
    repo.write(&format!("{dir}/sell.md"), feature_md(&block, &[SELL_CHECK]));
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    let drift = &report["drift"][0];
    assert_eq!(
        (drift["kind"].as_str(), drift["feature"].as_str()),
        (Some("missing-source"), Some("sell"))
    );
    insta::assert_snapshot!(
        "missing_source_detail",
        drift["detail"].as_str().expect("detail")
    );
    assert_eq!(drift["line"], 6);
}

#[test]
fn index_drift_covers_unlisted_files_dead_links_and_duplicate_ids() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    // sell.md leaves the index, a link points nowhere, a third file reuses the id `buy`, and a check id repeats.
    repo.write(
        &format!("{dir}/README.md"),
        map_readme(MAP_BLOCK, &["buy.md", "ghost.md", "copy.md"]),
    );
    repo.write(
        &format!("{dir}/copy.md"),
        feature_md(&buy_block(&sha).replace(r#"["buy"]"#, "[]"), &[]),
    );
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(&buy_block(&sha), &[BUY_CHECK, BUY_CHECK]),
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    let details: Vec<String> = drift_kinds(&report)
        .into_iter()
        .map(|(kind, detail)| {
            assert_eq!(kind, "index");
            detail
        })
        .collect();
    // An unlisted file, a dead link, a reused feature id, a repeated check id.
    insta::assert_snapshot!("index_drift_details", details.join("\n"));
}

#[test]
fn the_readable_report_groups_by_product_and_feature() {
    let (repo, sha) = shop();
    let dir = skill("", "shop");
    repo.write(
        "src/main.rs",
        SOURCE.replace(
            "    cmd(\"sell\");\n",
            "    cmd(\"sell\");\n    cmd(\"refund\");\n",
        ),
    );
    let block = sell_block(&sha).replace(
        r#""sources": ["src/main.rs"]"#,
        r#""sources": ["src/main.rs", "src/gone.rs"]"#,
    );
    repo.write(&format!("{dir}/sell.md"), feature_md(&block, &[SELL_CHECK]));
    let out = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(out.code, 3);
    let expected = format!(
        "shop\n  (no feature)\n    src/main.rs:4: unmapped-surface: command `refund` is found in source but no feature claims it: add it to a feature's `surfaces.command`\n  sell\n    {dir}/sell.md:6: missing-source: source `src/gone.rs` does not exist\n  stale: buy (changed): changed since {}: src/main.rs\n  stale: sell (changed): changed since {}: src/main.rs\n1 map, 2 features: 2 drift, 2 stale\n",
        &sha[..12],
        &sha[..12]
    );
    assert_eq!(out.stdout, expected);
}

#[test]
fn stale_is_never_drift() {
    let (repo, sha) = shop();
    repo.write("src/main.rs", format!("{SOURCE}// a comment\n"));
    let (code, report) = json(&repo);
    assert_eq!(code, 0, "stale alone is not drift: {report}");
    assert_eq!(report["drift"], serde_json::json!([]));
    let stale = report["stale"].as_array().expect("stale");
    assert_eq!(stale.len(), 2);
    assert_eq!(stale[0]["feature"], "buy");
    assert_eq!(stale[0]["reason"], "changed");
    assert_eq!(
        stale[0]["detail"],
        format!("changed since {}: src/main.rs", &sha[..12])
    );
    // The feature file itself is not compared: editing only it leaves the feature fresh.
    let (repo, _) = shop();
    let dir = skill("", "shop");
    let text = std::fs::read_to_string(repo.path(&format!("{dir}/buy.md"))).expect("read");
    repo.write(&format!("{dir}/buy.md"), text.replace("None.", "Many."));
    let (code, report) = json(&repo);
    assert_eq!((code, report["stale"].clone()), (0, serde_json::json!([])));
}

#[test]
fn never_verified_and_missing_commit_are_stale_reasons() {
    let (repo, _) = shop();
    let dir = skill("", "shop");
    repo.write(
        &format!("{dir}/buy.md"),
        feature_md(&buy_block(""), &[BUY_CHECK]),
    );
    repo.write(
        &format!("{dir}/sell.md"),
        feature_md(
            &sell_block("0123456789abcdef0123456789abcdef01234567"),
            &[SELL_CHECK],
        ),
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 0);
    let reasons: Vec<(&str, &str)> = report["stale"]
        .as_array()
        .expect("stale")
        .iter()
        .map(|s| {
            (
                s["feature"].as_str().expect("f"),
                s["reason"].as_str().expect("r"),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![("buy", "never-verified"), ("sell", "missing-commit")]
    );
}

#[test]
fn a_shallow_clone_reports_missing_commit_with_the_fetch_depth_hint() {
    let (repo, _) = shop();
    // One more commit, so that the verified commit is cut off by a depth-1 clone.
    repo.write("README.md", "shop\n");
    repo.commit("readme");
    let clone_parent = tempfile::tempdir().expect("temp");
    let url = format!("file://{}", repo.root().display());
    let status = common::git_command(clone_parent.path())
        .args(["clone", "-q", "--depth", "1", &url, "shallow"])
        .status()
        .expect("git clone");
    assert!(status.success());
    let shallow = clone_parent.path().join("shallow");
    let out = run(common::aayu_in(&shallow).args(["verify", "--map", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let stale = report["stale"].as_array().expect("stale");
    assert_eq!(stale.len(), 2);
    for s in stale {
        assert_eq!(s["reason"], "missing-commit");
    }
    // With the fetch-depth hint.
    let details: Vec<&str> = stale
        .iter()
        .map(|s| s["detail"].as_str().expect("detail"))
        .collect();
    insta::assert_snapshot!("shallow_clone_stale", common::redact(&details.join("\n")));
}

#[test]
fn an_untracked_map_is_read_and_an_ignored_one_is_not() {
    let (repo, _) = shop();
    let untracked = skill("tools/cli", "extra");
    repo.write(
        &format!("{untracked}/README.md"),
        map_readme(
            r#"{"product": "extra", "control": [], "surfaces": []}"#,
            &[],
        ),
    );
    let ignored = skill("vendor", "hidden");
    repo.write(".gitignore", "/vendor/\n");
    repo.write(
        &format!("{ignored}/README.md"),
        "this is not even a valid map\n",
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["maps"], 2,
        "the untracked map is read, the ignored one is not: {report}"
    );
}

#[test]
fn directory_option_runs_in_another_repository() {
    let (repo, _) = shop();
    let elsewhere = tempfile::tempdir().expect("temp");
    let out = run(common::aayu_in(elsewhere.path())
        .arg("-C")
        .arg(repo.path("src"))
        .args(["verify", "--map"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "1 map, 2 features: in sync\n");
    crate::aayu_snapshot!(
        "outside_a_repository",
        run(common::aayu_in(elsewhere.path()).args(["verify", "--map"]))
    );
}

#[test]
fn annotations_in_actions_are_warnings_until_the_blocking_date() {
    let (repo, _) = shop();
    repo.write(
        "src/main.rs",
        SOURCE.replace(
            "cmd(\"sell\");",
            "cmd(\"sell\"); cmd(\"re,fund\"); cmd(\"refund\");",
        ),
    );
    repo.write(
        ".aayudha/config.toml",
        "[verify]\ndrift_blocking_from = \"2026-11-13\"\n",
    );
    let before = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .env("AAYUDHA_NOW", "2026-11-12T23:59:59Z")
        .args(["verify", "--map", "--json"]));
    assert_eq!(before.code, 3);
    serde_json::from_str::<Value>(&before.stdout).expect("stdout stays one JSON document");
    // The one drift annotation, titled as the merge gate titles it.
    insta::assert_snapshot!("map_annotation_advisory", before.stderr);
    let after = run(repo
        .aayu()
        .env("GITHUB_ACTIONS", "true")
        .env("AAYUDHA_NOW", "2026-11-13T00:00:00Z")
        .args(["verify", "--map"]));
    assert_eq!(after.code, 3);
    // The report on stdout is fenced; the annotation is stderr's first line.
    insta::assert_snapshot!(
        "map_annotation_blocking",
        after.stderr.lines().next().unwrap_or_default()
    );
    // No annotations outside Actions.
    crate::aayu_snapshot!(
        "map_outside_actions",
        run(repo.aayu().args(["verify", "--map"]))
    );
}

#[test]
fn a_same_size_edit_right_after_a_commit_is_still_changed() {
    let (repo, _) = shop();
    // Same length, same second as the index: the stat alone cannot tell, so the bytes are hashed.
    repo.write(
        "src/main.rs",
        SOURCE
            .replace("buy", "bux")
            .replace("bux\"", "buy\"")
            .replace("Pay<", "Pax<"),
    );
    let edited = std::fs::read_to_string(repo.path("src/main.rs")).expect("read");
    assert_eq!(edited.len(), SOURCE.len());
    let (_, report) = json(&repo);
    assert_eq!(
        report["stale"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
}

#[test]
fn tracked_ignored_files_count_and_nested_repositories_do_not() {
    let (repo, _) = shop();
    // A tracked file that .gitignore matches is still listed by git, so it is still a source.
    repo.write(".gitignore", "src/main.rs\n");
    let (code, report) = json(&repo);
    assert_eq!(code, 0, "{report}");
    // A nested repository is one untracked folder to git: its maps are not this repository's.
    let nested = repo.path("vendor/other");
    std::fs::create_dir_all(&nested).expect("mkdir");
    common::git_command(&nested)
        .args(["init", "-q"])
        .status()
        .expect("git init");
    std::fs::create_dir_all(nested.join(".agents/skills/verify-other/features")).expect("mkdir");
    std::fs::write(
        nested.join(".agents/skills/verify-other/features/README.md"),
        "not a map\n",
    )
    .expect("write");
    let (code, report) = json(&repo);
    assert_eq!((code, report["maps"].as_u64()), (0, Some(1)), "{report}");
}

/// A product whose one feature's source is a folder with nested folders, verified at its first commit.
fn shelf() -> (TestRepo, String) {
    let repo = TestRepo::new();
    let dir = skill("", "shelf");
    let block = |sha: &str| {
        format!(
            r#"{{"id": "stock", "layers": ["L02"], "sources": ["lib"],
 "surfaces": {{"command": ["stock"]}}, "verified_at": "{sha}"}}"#
        )
    };
    let map = r#"{"product": "shelf", "control": ["aayu", "control"],
 "surfaces": [{"kind": "command", "files": ["lib/**/*.rs"], "pattern": "cmd\\(\"([a-z]+)\"\\)"}]}"#;
    // Names that sort differently as paths and as bare names (`a-b`, `a.rs`, `a/`, `a0`), and a link.
    repo.write("lib/a-b.rs", "// a-b\n")
        .write("lib/a.rs", "// a\n")
        .write("lib/a/deep/x.rs", "fn main() { cmd(\"stock\"); }\n")
        .write("lib/a/y.rs", "// y\n")
        .write("lib/a0.rs", "// a0\n")
        .write(&format!("{dir}/README.md"), map_readme(map, &["stock.md"]))
        .write(&format!("{dir}/stock.md"), feature_md(&block(""), &[]));
    std::os::unix::fs::symlink("a.rs", repo.path("lib/link.rs")).expect("symlink");
    let sha = repo.commit("shelf");
    repo.write(&format!("{dir}/stock.md"), feature_md(&block(&sha), &[]));
    repo.commit("verified");
    (repo, sha)
}

fn stale_detail(repo: &TestRepo) -> Option<String> {
    let (code, report) = json(repo);
    assert_eq!(code, 0, "{report}");
    let stale = report["stale"].as_array().expect("stale");
    assert!(stale.len() <= 1, "{report}");
    stale
        .first()
        .map(|s| s["detail"].as_str().expect("detail").to_string())
}

#[test]
fn a_folder_source_is_stale_exactly_when_a_file_under_it_changed() {
    let (repo, sha) = shelf();
    let since = format!("changed since {}", &sha[..12]);
    assert_eq!(stale_detail(&repo), None, "nothing changed");

    // An edit deep down, committed or not, staged or not.
    repo.write("lib/a/deep/x.rs", "fn main() { cmd(\"stock\"); } // more\n");
    assert_eq!(
        stale_detail(&repo),
        Some(format!("{since}: lib/a/deep/x.rs"))
    );
    repo.git(&["add", "-A"]);
    assert_eq!(
        stale_detail(&repo),
        Some(format!("{since}: lib/a/deep/x.rs"))
    );
    repo.git(&["checkout", "HEAD", "--", "lib"]);
    assert_eq!(stale_detail(&repo), None, "edit undone");

    // A new file (untracked), a deleted one, a link pointed elsewhere.
    repo.write("lib/a/new.rs", "// new\n");
    assert_eq!(
        stale_detail(&repo),
        Some(format!("{since}: lib/a/new.rs (added)"))
    );
    repo.remove("lib/a/new.rs").remove("lib/a0.rs");
    assert_eq!(
        stale_detail(&repo),
        Some(format!("{since}: lib/a0.rs (deleted)"))
    );
    repo.git(&["checkout", "HEAD", "--", "lib"]);
    std::fs::remove_file(repo.path("lib/link.rs")).expect("unlink");
    std::os::unix::fs::symlink("a0.rs", repo.path("lib/link.rs")).expect("symlink");
    assert_eq!(stale_detail(&repo), Some(format!("{since}: lib/link.rs")));

    // Only the mode changed: the content is what was verified.
    repo.git(&["checkout", "HEAD", "--", "lib"]);
    let y = repo.path("lib/a/y.rs");
    std::fs::set_permissions(&y, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    repo.git(&["add", "-A"]);
    repo.commit("executable");
    assert_eq!(stale_detail(&repo), None, "a mode change is not a change");
}

#[test]
fn handles_are_looked_for_in_each_features_own_sources_however_they_overlap() {
    let repo = TestRepo::new();
    let dir = skill("", "desk");
    let map = r#"{"product": "desk", "control": ["aayu", "control"], "surfaces": []}"#;
    let feature = |id: &str, sources: &str, name: &str| {
        let block = format!(
            r#"{{"id": "{id}", "layers": ["L02"], "sources": {sources}, "surfaces": {{}}, "verified_at": ""}}"#
        );
        let check = format!(
            r#"{{"id": "c", "kind": "ui", "evidence": "screenshot", "steps": [{{"click": {{"name": "{name}"}}}}]}}"#
        );
        feature_md(&block, &[&check])
    };
    repo.write("src/a.rs", "button(\"Open\");\n")
        .write("src/sub/b.rs", "button(\"Close\");\n")
        .write("src/sub/c.rs", "// nothing\n")
        .write("web/d.ts", "button('File')\n")
        .write(
            &format!("{dir}/README.md"),
            map_readme(map, &["all.md", "sub.md", "twice.md", "file.md"]),
        )
        // The whole folder: finds a handle in a file another feature's source also covers.
        .write(
            &format!("{dir}/all.md"),
            feature("all", r#"["src"]"#, "Close"),
        )
        // A folder inside it: `Open` is in src/a.rs, outside this feature's sources.
        .write(
            &format!("{dir}/sub.md"),
            feature("sub", r#"["src/sub"]"#, "Open"),
        )
        // Overlapping sources of one feature, and a second folder.
        .write(
            &format!("{dir}/twice.md"),
            feature("twice", r#"["src/sub", "src/sub/b.rs", "web"]"#, "File"),
        )
        // One file only.
        .write(
            &format!("{dir}/file.md"),
            feature("file", r#"["src/sub/c.rs"]"#, "Close"),
        );
    repo.commit("desk");
    let (code, report) = json(&repo);
    assert_eq!(code, 3, "drift: {report}");
    let missing: Vec<(String, String)> = report["drift"]
        .as_array()
        .expect("drift")
        .iter()
        .map(|d| {
            (
                d["feature"].as_str().expect("feature").to_string(),
                d["kind"].as_str().expect("kind").to_string(),
            )
        })
        .collect();
    assert_eq!(
        missing,
        [
            ("file".to_string(), "missing-handle".to_string()),
            ("sub".to_string(), "missing-handle".to_string()),
        ],
        "{report}"
    );
}

/// A surface rule's `!` entries exclude what the entries before them include, in order (later entries
/// win): a Go module's tests are no surfaces; put first, the exclusion is undone by the glob after it; one
/// that excludes nothing is a warning; a rule of `!` entries only, or a bare `!`, is a contract error.
#[test]
fn a_surface_rule_excludes_with_bang_entries_in_order() {
    let rule = |files: &str| {
        format!(
            r#"{{"product": "calc", "control": ["aayu", "control"],
 "surfaces": [{{"kind": "func", "files": {files}, "pattern": "(?m)^func ([A-Z]\\w*)\\("}}]}}"#
        )
    };
    let feature = r#"{"id": "add", "layers": ["L02"], "sources": ["calc.go"], "surfaces": {"func": ["Add"]}, "verified_at": ""}"#;
    let repo = TestRepo::new();
    let dir = skill("", "calc");
    repo.write("go.mod", "module example.com/calc\n\ngo 1.22\n")
        .write(
            "calc.go",
            "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
        )
        .write(
            "calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n",
        )
        .write("testdata/gen.go", "package gen\n\nfunc Generated() {}\n")
        .write(&format!("{dir}/add.md"), feature_md(feature, &[]));
    let map = |files: &str| {
        repo.write(
            &format!("{dir}/README.md"),
            map_readme(&rule(files), &["add.md"]),
        );
        repo.commit("map");
        let out = run(repo.aayu().args(["verify", "--map", "--json"]));
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
        (out.code, report)
    };
    let (code, report) = map(r#"["**/*.go", "!**/*_test.go", "!**/testdata/**", "!vendor/**"]"#);
    assert_eq!(code, 0, "in sync: {report:#}");
    assert_eq!(drift_kinds(&report), Vec::<(String, String)>::new());
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w["message"].as_str().expect("message"))
        .collect();
    assert_eq!(
        warnings,
        [
            "surface rule 0 (`func`): `files[3]` `!vendor/**` excludes no file the entries before it include",
            "the feature has no behaviour checks"
        ]
    );

    // Later entries win: the glob after the exclusion takes the tests back.
    let (code, report) = map(r#"["!**/*_test.go", "**/*.go"]"#);
    assert_eq!(code, 3, "{report:#}");
    let unmapped: Vec<&str> = report["drift"]
        .as_array()
        .expect("drift")
        .iter()
        .map(|d| d["file"].as_str().expect("file"))
        .collect();
    assert_eq!(unmapped, ["calc_test.go", "testdata/gen.go"], "{report:#}");

    for (files, said) in [
        (
            r#"["!**/*_test.go"]"#,
            "map block: `surfaces[0].files` has only `!` entries, which exclude: name the files to look in first",
        ),
        (
            r#"["**/*.go", "!"]"#,
            "map block: `surfaces[0].files[1]`: `!` excludes nothing: write the glob after it (`!**/*_test.go`)",
        ),
    ] {
        let (code, report) = map(files);
        assert_eq!(code, 2, "{report:#}");
        assert!(
            report["errors"]
                .as_array()
                .expect("errors")
                .iter()
                .any(|e| e["message"] == said),
            "{report:#}"
        );
    }
}

/// A reader that goes away (`aayu verify --map --json | head -c 0`) ends the command quietly with success,
/// for the `--json` document as for the readable report.
#[test]
fn a_closed_stdout_is_a_quiet_success() {
    let (repo, _) = shop();
    for args in [&["verify", "--map", "--json"][..], &["verify", "--map"][..]] {
        let mut child = repo
            .aayu()
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("aayu starts");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("aayu ends");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}
