//! `aayu doctor`: planted problems, each found with its line and fixed by `--fix` where it can be; a clean
//! repository gives exit 0; `--json` has its shape.

use crate::common::{self, TestRepo, run};
use crate::init::{Release, SHA, release_github};
use crate::support::fake_github;

use serde_json::Value;

/// A repository set up by `aayu init --verify-skill` with the workflows pinned (through the fake GitHub),
/// `aayu install`ed, the ledger branch there, committed: nothing for doctor to say.
fn clean() -> TestRepo {
    let github = release_github(Release::Tagged);
    let repo = TestRepo::new();
    let init = run(repo
        .aayu()
        .env("GITHUB_API_URL", &github.url)
        .env("GITHUB_TOKEN", "ghp_user")
        .env("HOME", repo.path(".home"))
        .args(["init", "--verify-skill", "--product", "shop", "--yes"]));
    assert_eq!(init.code, 0, "{}", init.stderr);
    std::fs::create_dir_all(repo.path(".claude")).expect("mkdir");
    assert_eq!(run(repo.aayu().arg("install")).code, 0);
    repo.commit("aayudha");
    repo.git(&["branch", "ledger"]);
    repo
}

fn doctor(repo: &TestRepo, args: &[&str]) -> common::Run {
    run(repo
        .aayu()
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .arg("doctor")
        .args(args))
}

fn json(repo: &TestRepo) -> (i32, Value) {
    let out = doctor(repo, &["--json"]);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    (out.code, report)
}

/// `--json`'s shape: `{"schema_version": 1, "problems": [{"check", "where", "problem", "fix", "fixable"}]}`.
fn assert_shape(report: &Value) {
    let keys: Vec<&String> = report.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["schema_version", "problems"]);
    assert_eq!(report["schema_version"], 1);
    for p in report["problems"].as_array().expect("problems") {
        let keys: Vec<&String> = p.as_object().expect("problem").keys().collect();
        assert_eq!(keys, ["check", "where", "problem", "fix", "fixable"], "{p}");
        for key in ["check", "where", "problem", "fix"] {
            assert!(p[key].as_str().is_some_and(|s| !s.is_empty()), "{p}");
        }
        assert!(p["fixable"].is_boolean());
    }
}

#[test]
fn a_clean_repository_has_no_problem() {
    let repo = clean();
    let out = doctor(&repo, &[]);
    // What could not be checked (no token) is said on stderr.
    crate::aayu_snapshot!("doctor_clean", out);
    let (code, report) = json(&repo);
    assert_eq!(code, 0);
    assert_shape(&report);
    assert_eq!(report["problems"], serde_json::json!([]));
    // doctor's token order is GITHUB_TOKEN, then GH_TOKEN, never `gh` (docs/github.md): a logged-in `gh`
    // on PATH is not asked.
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().expect("temp");
    let asked = bin.path().join("asked");
    std::fs::write(
        bin.path().join("gh"),
        format!("#!/bin/sh\ntouch '{}'\necho ghp_user\n", asked.display()),
    )
    .expect("write gh");
    std::fs::set_permissions(
        bin.path().join("gh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // It says exactly what it says without `gh`: no token.
    crate::aayu_snapshot!(
        "doctor_clean",
        run(repo.aayu().env("PATH", path).arg("doctor"))
    );
    assert!(!asked.exists(), "doctor asked `gh` for a token");
}

#[test]
fn planted_problems_are_found_with_their_place_and_the_fixable_ones_fixed() {
    let repo = clean();
    let gate = ".github/workflows/aayudha-merge-gate.yml";
    let text = std::fs::read_to_string(repo.path(gate)).expect("gate");
    repo.write(
        gate,
        text.replace(&format!("aayudha/verify@{SHA}"), "aayudha/verify@v1")
            .replace("          persist-credentials: false\n", ""),
    );
    repo.write(".gitignore", "target/\n");
    repo.write(".aayudha/config.toml", "[verify]\ncheck_timeot_s = 3\n");
    let pointer = ".claude/commands/aayudha/verify-shop.md";
    let stale = std::fs::read_to_string(repo.path(pointer))
        .expect("pointer")
        .replace("Check and keep shop's", "Keep shop's");
    repo.write(pointer, stale);
    let features = ".agents/skills/verify-shop/features";
    // A map block with a field the contract does not know.
    repo.write(
        &format!("{features}/README.md"),
        common::map_readme(
            r#"{"product": "shop", "control": ["aayu", "control"], "surfaces": [], "owner": "me"}"#,
            &[],
        ),
    );
    repo.git(&["branch", "-D", "ledger"]);

    let (code, report) = json(&repo);
    assert_eq!(code, 3, "{report:#}");
    assert_shape(&report);
    let found: Vec<(String, String, bool)> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            (
                p["check"].as_str().unwrap_or("").to_string(),
                p["where"].as_str().unwrap_or("").to_string(),
                p["fixable"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    let has = |check: &str, place: &str, fixable: bool| {
        assert!(
            found
                .iter()
                .any(|(c, w, f)| c == check && w.starts_with(place) && *f == fixable),
            "{check} at {place}: {found:?}"
        );
    };
    has("config", ".aayudha/config.toml:2", false);
    has("gate-workflow", &format!("{gate}:67"), false);
    has("gate-workflow", &format!("{gate}:"), false);
    has("gitignore", ".gitignore", true);
    has("pointer", pointer, true);
    has("maps", &format!("{features}/README.md:"), false);
    has("ledger", "branch `ledger`", true);
    // Each problem with its place; the template's difference is shown (stderr), never written over.
    crate::aayu_snapshot!("doctor_planted", doctor(&repo, &[]));
    // What can be fixed is, and said; what cannot remains (exit 3).
    crate::aayu_snapshot!("doctor_planted_fixed", doctor(&repo, &["--fix"]));
    assert!(
        std::fs::read_to_string(repo.path(pointer))
            .expect("pointer")
            .contains("Check and keep shop's")
    );
    assert!(
        !repo
            .git(&["rev-parse", "--verify", "refs/heads/ledger"])
            .is_empty()
    );
    assert!(
        std::fs::read_to_string(repo.path(gate))
            .expect("gate")
            .contains("aayudha/verify@v1"),
        "the workflow a person changed is not edited"
    );
    // Which checks still find a problem (a set: their texts are in the snapshots above).
    let (_, after) = json(&repo);
    let checks: Vec<&str> = after["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p["check"].as_str().unwrap_or(""))
        .collect();
    assert!(
        !checks.contains(&"gitignore")
            && !checks.contains(&"pointer")
            && !checks.contains(&"ledger"),
        "{checks:?}"
    );
    assert!(
        checks.contains(&"config") && checks.contains(&"maps"),
        "{checks:?}"
    );
}

#[test]
fn a_shallow_clone_is_a_problem() {
    let repo = clean();
    repo.write("a.txt", "a\n");
    repo.commit("a");
    let shallow = tempfile::tempdir().expect("temp");
    let url = format!("file://{}", repo.root().display());
    let cloned = common::git_command(shallow.path())
        .args(["clone", "-q", "--depth", "1", &url, "c"])
        .status()
        .expect("git clone");
    assert!(cloned.success());
    let out = run(common::aayu_in(&shallow.path().join("c"))
        .env_remove("GITHUB_TOKEN")
        .arg("doctor"));
    crate::aayu_snapshot!("doctor_shallow", out);
}

#[test]
fn a_toolchain_the_sandbox_cannot_run_is_a_problem() {
    let repo = clean();
    // A ui check needs Chromium; this one names a Chromium that is not there.
    let features = ".agents/skills/verify-shop/features";
    repo.write(
        &format!("{features}/page.md"),
        common::feature_md(
            r#"{"id": "page", "layers": ["L02"], "sources": [], "surfaces": {}, "verified_at": ""}"#,
            &[r#"{"id": "opens", "kind": "ui", "evidence": "screenshot", "steps": [{"open": "/"}]}"#],
        ),
    );
    // The built-in step runner drives Chromium for ui checks.
    repo.write(
        &format!("{features}/README.md"),
        common::map_readme(
            r#"{"product": "shop", "control": ["aayu", "control"], "surfaces": []}"#,
            &["page.md"],
        ),
    );
    let config = std::fs::read_to_string(repo.path(".aayudha/config.toml")).expect("config");
    repo.write(
        ".aayudha/config.toml",
        config.replace("# chromium = \"\"", "chromium = \"/opt/none/chromium\""),
    );
    crate::aayu_snapshot!("doctor_toolchain", doctor(&repo, &[]));
}

/// The fake GitHub of `repo`'s origin (`octo/shop`), with `aayudha/proof` required or not.
fn origin_github(
    required_by_ruleset: bool,
    protection: Option<Vec<String>>,
) -> fake_github::Server {
    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("ghp_reader".into(), "reader".into());
        fake.tokens.insert("ghp_admin".into(), "admin".into());
        fake.admins.push("ghp_admin".into());
        if required_by_ruleset {
            fake.ruleset_contexts = vec!["aayudha/proof".into()];
        }
        fake.protection_contexts = protection;
    }
    github
}

fn doctor_online(repo: &TestRepo, github: &fake_github::Server, token: &str) -> common::Run {
    run(repo
        .aayu()
        .env("GITHUB_API_URL", &github.url)
        .env("GITHUB_TOKEN", token)
        .env("GITHUB_REPOSITORY", "octo/shop")
        .arg("doctor"))
}

#[test]
fn the_required_status_and_the_token_are_checked_online() {
    let repo = clean();
    // A ruleset requires aayudha/proof: no problem, with a reader's token.
    let github = origin_github(true, None);
    crate::aayu_snapshot!(
        "doctor_online_ruleset",
        doctor_online(&repo, &github, "ghp_reader")
    );
    // Only branch protection, readable by an admin: found with the admin's token, noted without it.
    let github = origin_github(false, Some(vec!["aayudha/proof".into()]));
    assert_eq!(doctor_online(&repo, &github, "ghp_admin").code, 0);
    // Not checkable is not a problem (exit 0), and is said.
    crate::aayu_snapshot!(
        "doctor_online_protection_unreadable",
        doctor_online(&repo, &github, "ghp_reader")
    );
    // Not required anywhere.
    let github = origin_github(false, Some(vec!["ci/build".into()]));
    crate::aayu_snapshot!(
        "doctor_online_not_required",
        doctor_online(&repo, &github, "ghp_admin")
    );
    // A token GitHub refuses.
    crate::aayu_snapshot!(
        "doctor_online_token_refused",
        doctor_online(&repo, &github, "ghp_unknown")
    );
}

#[test]
fn a_maintainer_or_media_bucket_aayu_cannot_use_is_a_config_problem() {
    let repo = clean();
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nmaintainer = \"copilot\"\n\n[proof]\nmedia = \"ftp://media/packs\"\n",
    );
    repo.commit("config");
    let (code, report) = json(&repo);
    assert_eq!(code, 3, "{report:#}");
    assert_shape(&report);
    let config: Vec<&Value> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["check"] == "config")
        .collect();
    assert_eq!(config.len(), 2, "{report:#}");
    let problems: Vec<&str> = config
        .iter()
        .map(|p| p["problem"].as_str().unwrap_or_default())
        .collect();
    insta::assert_snapshot!("doctor_config_problems", problems.join("\n"));
}

#[test]
fn an_mcp_registration_that_fell_behind_is_found_and_fixed_and_one_with_writes_is_warned_of() {
    let repo = clean();
    let (code, report) = json(&repo);
    assert_eq!((code, &report["problems"]), (0, &serde_json::json!([])));
    // Cursor's entry from an older aayu (no `-C`), with an `env` of the user's; Claude Code's with the flags
    // a committed file must not carry.
    repo.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"aayudha": {"command": "aayu", "args": ["mcp"], "env": {"RUST_LOG": "debug"}}}}"#,
    );
    repo.write(
        ".mcp.json",
        r#"{"mcpServers": {"aayudha": {"type": "stdio", "command": "aayu", "args": ["mcp", "--allow-write"]}}}"#,
    );
    let (code, report) = json(&repo);
    assert_eq!(code, 3, "{report:#}");
    assert_shape(&report);
    let found: Vec<(&str, &str, bool)> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            (
                p["check"].as_str().unwrap_or(""),
                p["where"].as_str().unwrap_or(""),
                p["fixable"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("mcp-elevated", ".mcp.json", false),
            ("mcp-registration", ".cursor/mcp.json", true),
        ]
    );
    crate::aayu_snapshot!("doctor_mcp_registrations", doctor(&repo, &[]));
    // --fix writes Cursor's entry again, its `env` kept; the flags a person chose are theirs to remove.
    crate::aayu_snapshot!("doctor_mcp_registrations_fixed", doctor(&repo, &["--fix"]));
    let cursor: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".cursor/mcp.json")).expect("cursor"),
    )
    .expect("json");
    assert_eq!(
        cursor,
        serde_json::json!({"mcpServers": {"aayudha": {"command": "aayu", "args": ["mcp", "-C", "${workspaceFolder}"], "env": {"RUST_LOG": "debug"}}}})
    );
    assert!(
        std::fs::read_to_string(repo.path(".mcp.json"))
            .expect("claude")
            .contains("--allow-write")
    );
    // With --github too.
    repo.write(
        ".mcp.json",
        r#"{"mcpServers": {"aayudha": {"command": "aayu", "args": ["mcp", "--github"]}}}"#,
    );
    let (_, report) = json(&repo);
    assert_eq!(
        report["problems"][0]["problem"],
        "its `aayudha` server runs `aayu mcp --github`: a committed file gives a GitHub token to the agent on every contributor's machine"
    );
}

#[test]
fn an_mcp_file_that_is_not_json_is_a_problem_and_no_registration_is_a_note() {
    let repo = clean();
    repo.write(".mcp.json", "{\n  \"mcpServers\": {,}\n}\n");
    let out = doctor(&repo, &[]);
    crate::aayu_snapshot!("doctor_mcp_not_json", out);
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    assert_shape(&report);
    assert_eq!(report["problems"][0]["check"], "mcp-registration");
    assert_eq!(report["problems"][0]["fixable"], false);
    // --fix leaves it as it is.
    assert_eq!(doctor(&repo, &["--fix"]).code, 3);
    assert_eq!(
        std::fs::read_to_string(repo.path(".mcp.json")).expect("read"),
        "{\n  \"mcpServers\": {,}\n}\n"
    );
    // No registration at all is no problem: a note says how to register.
    repo.remove(".mcp.json").remove(".cursor/mcp.json");
    crate::aayu_snapshot!("doctor_mcp_none", doctor(&repo, &[]));
}

/// A `LAYERS.md` none of whose globs matches a file of the repository (one for another layout) is a
/// `layers` problem, in text and `--json`; once one glob matches a file, it is not (a layer with no file
/// is normal). `LAYERS.md` itself and aayu's own files do not count.
#[test]
fn a_layers_md_that_matches_no_file_is_a_problem() {
    let repo = clean();
    repo.write(
        "LAYERS.md",
        "# Layers\n\n| layer | paths |\n|---|---|\n| L02 | `cmd/**` |\n| L05 | `**/*_test.go` |\n| L07 | `LAYERS.md` `.aayudha/config.toml` |\n",
    );
    repo.commit("layers for another layout");
    crate::aayu_snapshot!("doctor_layers_match_nothing", doctor(&repo, &[]));
    let (code, report) = json(&repo);
    assert_eq!(code, 3);
    assert_shape(&report);
    assert_eq!(
        report["problems"],
        serde_json::json!([{
            "check": "layers",
            "where": "LAYERS.md",
            "problem": "no path glob of it matches a file of this repository: every pack's `footprint` is empty",
            "fix": "edit its globs to fit this repository's layout (docs/proof-packs.md, `footprint`), or delete it and run `aayu init` for a starter",
            "fixable": false,
        }])
    );
    // One file in one layer is enough.
    repo.write("cmd/shop/main.go", "package main\n\nfunc main() {}\n");
    repo.commit("a command");
    assert_eq!(json(&repo).1["problems"], serde_json::json!([]));
}

#[test]
fn a_repository_with_no_file_of_its_own_has_no_layers_problem() {
    // Just after `aayu init` there is nothing to judge the globs by (the release check of scripts/test).
    let repo = crate::common::TestRepo::new();
    repo.write("LAYERS.md", "| L02 | `cmd/**` |\n")
        .write(".gitignore", ".aayudha/proof/\n");
    repo.commit("init");
    let (_, report) = json(&repo);
    let layers: Vec<&serde_json::Value> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["check"] == "layers")
        .collect();
    assert!(layers.is_empty(), "{report}");
}

#[test]
fn signature_settings_every_ship_would_fail_on_are_attestation_problems() {
    let repo = clean();
    repo.write(
        ".aayudha/config.toml",
        "[proof]\nattestation = \"require\"\ntrusted_root = \".aayudha/root.jsonl\"\n",
    );
    repo.commit("require a signature the gate cannot make, from a root that is not there");
    let attestation = |report: &Value| -> Vec<String> {
        report["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .filter(|p| p["check"] == "attestation")
            .map(|p| {
                format!(
                    "{}: {}",
                    p["where"].as_str().unwrap_or_default(),
                    p["problem"].as_str().unwrap_or_default()
                )
            })
            .collect()
    };
    let (code, report) = json(&repo);
    assert_eq!(code, 3, "{report:#}");
    assert_shape(&report);
    let found = attestation(&report);
    assert_eq!(found.len(), 2, "{report:#}");
    assert_eq!(
        found[0],
        ".aayudha/config.toml: `[proof] attestation` is \"require\", but .github/workflows/aayudha-merge-gate.yml has no attest job: `aayu ship` would pass over every run"
    );
    assert!(
        found[1].starts_with(".aayudha/root.jsonl: `[proof] trusted_root`: "),
        "{}",
        found[1]
    );
    // A root that does not parse is named by its line.
    repo.write(".aayudha/root.jsonl", "{not json\n");
    repo.commit("a bad root");
    let (_, report) = json(&repo);
    let found = attestation(&report);
    assert!(
        found
            .iter()
            .any(|p| p.contains("trusted root: line 1 does not parse")),
        "{found:?}"
    );
    // `check` and a root that parses: nothing to say.
    repo.write(
        ".aayudha/config.toml",
        "[proof]\nattestation = \"check\"\ntrusted_root = \".aayudha/root.jsonl\"\n",
    );
    repo.write(
        ".aayudha/root.jsonl",
        format!("{}\n", crate::support::sigstore::trusted_root_json()),
    );
    repo.commit("check, and a root");
    let (_, report) = json(&repo);
    assert_eq!(attestation(&report), Vec::<String>::new(), "{report:#}");
}
