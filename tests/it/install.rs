//! `aayu install` registering `aayu mcp` with the agent apps: the project files of Claude Code
//! (`.mcp.json`) and Cursor (`.cursor/mcp.json`) written or merged into, every other server and key kept in
//! its order, a second run writing nothing; a file that is not JSON, or a link, refused and left as it is;
//! the Codex and Amp entries printed, nothing written in the home folder. (The pointers and the Cursor rule
//! are in `init.rs`.)

use crate::common::{TestRepo, run};

use serde_json::Value;
use std::path::Path;

/// `aayu install` in `repo` with `home` as the home folder.
fn install(repo: &TestRepo, home: &Path) -> crate::common::Run {
    run(repo.aayu().env("HOME", home).arg("install"))
}

fn json(repo: &TestRepo, path: &str) -> Value {
    let text = std::fs::read_to_string(repo.path(path)).expect(path);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"))
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).expect("under").display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn install_registers_aayu_mcp_for_claude_code_and_cursor_with_no_verify_skill_and_nothing_in_home()
{
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_fresh", out);
    assert_eq!(
        json(&repo, ".mcp.json"),
        serde_json::json!({"mcpServers": {"aayudha": {"type": "stdio", "command": "aayu", "args": ["mcp"]}}})
    );
    assert_eq!(
        json(&repo, ".cursor/mcp.json"),
        serde_json::json!({"mcpServers": {"aayudha": {"type": "stdio", "command": "aayu", "args": ["mcp", "-C", "${workspaceFolder}"]}}})
    );
    // Only the two registrations: no pointer or rule without a verify skill.
    assert_eq!(
        files(repo.root())
            .into_iter()
            .filter(|f| !f.starts_with(".git/"))
            .collect::<Vec<_>>(),
        [".cursor/mcp.json", ".mcp.json"]
    );
    assert_eq!(
        files(home.path()),
        Vec::<String>::new(),
        "install writes nothing in the home folder"
    );
    let again = install(&repo, home.path());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stdout
            .contains("unchanged .mcp.json\nunchanged .cursor/mcp.json\n"),
        "{}",
        again.stdout
    );
}

#[test]
fn install_merges_into_an_existing_mcp_json_keeping_its_servers_and_keys_in_order() {
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    repo.write(
        ".mcp.json",
        r#"{
    "mcpServers": {
        "zeta": {"command": "npx", "args": ["-y", "zeta-mcp"], "env": {"Z": "1"}},
        "alpha": {"type": "http", "url": "https://alpha.example/mcp"}
    },
    "comment": "ours"
}
"#,
    );
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_merged", out);
    let merged = std::fs::read_to_string(repo.path(".mcp.json")).expect("read");
    let document: Value = serde_json::from_str(&merged).expect("json");
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .expect("object")
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&document), ["mcpServers", "comment"]);
    assert_eq!(keys(&document["mcpServers"]), ["zeta", "alpha", "aayudha"]);
    assert_eq!(
        document["mcpServers"]["zeta"],
        serde_json::json!({"command": "npx", "args": ["-y", "zeta-mcp"], "env": {"Z": "1"}})
    );
    assert_eq!(
        document["mcpServers"]["alpha"],
        serde_json::json!({"type": "http", "url": "https://alpha.example/mcp"})
    );
    let cursor = std::fs::read(repo.path(".cursor/mcp.json")).expect("cursor");
    let again = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_merged_again", again);
    assert_eq!(
        std::fs::read_to_string(repo.path(".mcp.json")).expect("read"),
        merged,
        "a second run writes nothing"
    );
    assert_eq!(
        std::fs::read(repo.path(".cursor/mcp.json")).expect("cursor"),
        cursor
    );
}

#[test]
fn install_keeps_a_customised_entry_but_its_command_and_arguments() {
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    // An entry a person changed: an `env` of theirs, and the flags a committed file must not carry.
    repo.write(
        ".mcp.json",
        r#"{"mcpServers": {"aayudha": {"command": "/opt/aayu/bin/aayu", "args": ["mcp", "--allow-write", "--github"], "env": {"RUST_LOG": "debug"}}}}"#,
    );
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_customised", out);
    assert_eq!(
        json(&repo, ".mcp.json"),
        serde_json::json!({"mcpServers": {"aayudha": {"command": "aayu", "args": ["mcp"], "env": {"RUST_LOG": "debug"}}}})
    );
}

#[test]
fn install_refuses_an_mcp_json_that_is_not_json_and_writes_nothing() {
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    let broken =
        "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n    \"more\": {}\n  }\n}\n";
    repo.write(".mcp.json", broken);
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_not_json", out);
    assert_eq!(
        std::fs::read_to_string(repo.path(".mcp.json")).expect("read"),
        broken
    );
    assert!(
        !repo.path(".cursor").exists(),
        "nothing is written when one file cannot be merged into"
    );
    // `mcpServers` that is not an object: refused the same way, with its place.
    let list = "{\"mcpServers\": [\"aayudha\"]}\n";
    repo.write(".mcp.json", list);
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_servers_not_an_object", out);
    assert_eq!(
        std::fs::read_to_string(repo.path(".mcp.json")).expect("read"),
        list
    );
}

#[test]
fn install_refuses_an_mcp_json_that_is_a_link_and_does_not_follow_it() {
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("mcp.json");
    std::fs::write(&target, "{}\n").expect("write");
    std::os::unix::fs::symlink(&target, repo.path(".mcp.json")).expect("link");
    let out = install(&repo, home.path());
    crate::aayu_snapshot!("install_mcp_link", out);
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "{}\n");
    assert!(
        repo.path(".mcp.json").is_symlink(),
        "the link is left as it is"
    );
    assert!(!repo.path(".cursor").exists());
}
