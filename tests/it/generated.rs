//! The drift test: every file generated from the registry is what `aayu generate` would write; generating
//! twice changes nothing; an edited registry fails until `aayu generate` runs; the skills mention only real
//! commands and flags.

use crate::common;
use std::path::{Path, PathBuf};

use aayudha::generate::{self, Rendered};
use aayudha::registry::CommandId;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A readable account of how the disk differs from what generation renders: the first differing lines.
fn explain(root: &Path, rendered: &Rendered, drift: &[String]) -> String {
    let mut text = String::new();
    for path in drift {
        text.push_str(&format!("\n--- {path}\n"));
        let Some(wanted) = rendered.files.get(path) else {
            continue;
        };
        let on_disk = std::fs::read_to_string(root.join(path)).unwrap_or_default();
        let wanted = String::from_utf8_lossy(wanted);
        let mut shown = 0;
        for (i, (a, b)) in on_disk.lines().zip(wanted.lines()).enumerate() {
            if a != b && shown < 3 {
                text.push_str(&format!(
                    "line {}:\n  on disk:   {a}\n  generated: {b}\n",
                    i + 1
                ));
                shown += 1;
            }
        }
        if on_disk.lines().count() != wanted.lines().count() {
            text.push_str(&format!(
                "  {} lines on disk, {} generated\n",
                on_disk.lines().count(),
                wanted.lines().count()
            ));
        }
    }
    text
}

#[test]
fn every_generated_file_is_what_aayu_generate_writes() {
    let rendered = generate::render(&root(), &generate::registry()).expect("generation succeeds");
    let drift = generate::drift(&root(), &rendered);
    assert!(
        drift.is_empty(),
        "generated files are out of date: run `cargo run -- generate` and commit the result{}",
        explain(&root(), &rendered, &drift)
    );
}

/// A copy of everything generation reads and writes.
fn copy_of_the_sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp");
    let files = [
        "docs/README.md",
        "docs/configuration.md",
        "docs/registry.md",
        "docs/aayu.1",
        "defaults.toml",
        "action.yml",
        "slim/action.yml",
        "LAYERS.md",
    ];
    for rel in files {
        let target = dir.path().join(rel);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::copy(root().join(rel), &target).expect(rel);
    }
    for folder in ["skills", "schemas/mcp"] {
        for entry in walk(&root().join(folder)) {
            let rel = entry.strip_prefix(root()).expect("inside");
            let target = dir.path().join(rel);
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::copy(&entry, &target).expect("copy");
        }
    }
    dir
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn generating_twice_changes_nothing() {
    let copy = copy_of_the_sources();
    let first = generate::render(copy.path(), &generate::registry()).expect("first");
    generate::write(copy.path(), &first).expect("write");
    let second = generate::render(copy.path(), &generate::registry()).expect("second");
    assert_eq!(first, second);
    assert_eq!(
        generate::write(copy.path(), &second).expect("again"),
        Vec::<String>::new()
    );
}

#[test]
fn an_edited_summary_fails_the_drift_check_until_generate_runs() {
    let copy = copy_of_the_sources();
    let mut registry = generate::registry();
    let ship = registry
        .iter_mut()
        .find(|c| c.id == CommandId::Ship)
        .expect("ship");
    ship.summary = "Merge a proven pull request (an edited summary).";
    let rendered = generate::render(copy.path(), &registry).expect("render");
    let drift = generate::drift(copy.path(), &rendered);
    assert_eq!(
        drift,
        ["skills/ship/SKILL.md"],
        "the skill's description comes from the summary"
    );
    let written = generate::write(copy.path(), &rendered).expect("generate");
    assert_eq!(written, ["skills/ship/SKILL.md"]);
    assert_eq!(
        generate::drift(
            copy.path(),
            &generate::render(copy.path(), &registry).expect("again")
        ),
        Vec::<String>::new(),
        "after generating, it passes"
    );
}

#[test]
fn generate_check_reports_stale_and_edited_files_and_generate_fixes_them() {
    let copy = copy_of_the_sources();
    // aayu generate runs in aayudha's own source tree.
    std::fs::create_dir_all(copy.path().join("src/registry")).expect("mkdir");
    std::fs::write(copy.path().join("src/registry/commands.rs"), "").expect("marker");
    common::git_command(copy.path())
        .args(["init", "-q"])
        .status()
        .expect("git init");
    std::fs::write(copy.path().join("schemas/mcp/gone.json"), "{}").expect("stale");
    let readme = std::fs::read_to_string(copy.path().join("docs/README.md")).expect("read");
    std::fs::write(
        copy.path().join("docs/README.md"),
        readme.replace("| `aayu ship` |", "| `aayu ship-it` |"),
    )
    .expect("edit by hand");
    // The file edited by hand, the stale one, and the command to run.
    crate::aayu_snapshot!(
        "generate_check_differs",
        common::run(common::aayu_in(copy.path()).args(["generate", "--check"]))
    );
    let fix = common::run(common::aayu_in(copy.path()).arg("generate"));
    assert_eq!(fix.code, 0, "{}", fix.stderr);
    assert!(!copy.path().join("schemas/mcp/gone.json").exists());
    let again = common::run(common::aayu_in(copy.path()).args(["generate", "--check"]));
    assert_eq!(again.code, 0, "{}", again.stdout);
}

#[test]
fn a_skill_for_a_command_without_the_skill_surface_fails_generation() {
    let copy = copy_of_the_sources();
    std::fs::create_dir_all(copy.path().join("skills/control")).expect("mkdir");
    std::fs::write(copy.path().join("skills/control/SKILL.md"), "body\n").expect("write");
    let err = generate::render(copy.path(), &generate::registry()).expect_err("refused");
    insta::assert_snapshot!(
        "skill_of_a_command_without_a_skill_surface",
        common::redact(&err.to_string())
    );
}

/// Every `aayu …` a skill's body mentions in backticks is a registry command, and each of its `--flags` an
/// input of that command (or a global one).
#[test]
fn skills_mention_only_real_commands_and_flags() {
    let names: Vec<&str> = CommandId::ALL.iter().map(|id| id.spec().name).collect();
    let mut checked = 0;
    for path in walk(&root().join("skills"))
        .into_iter()
        .filter(|p| p.ends_with("SKILL.md"))
    {
        let text = std::fs::read_to_string(&path).expect("read");
        let body = text.splitn(3, "---\n").nth(2).unwrap_or(&text);
        for span in body.split('`').skip(1).step_by(2) {
            let Some(rest) = span.strip_prefix("aayu ") else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            let command = names
                .iter()
                .filter(|n| {
                    let parts: Vec<&str> = n.split(' ').collect();
                    words.len() >= parts.len() && words[..parts.len()] == parts[..]
                })
                .max_by_key(|n| n.len())
                .unwrap_or_else(|| panic!("{}: `{span}` names no aayu command", path.display()));
            let spec = CommandId::ALL
                .iter()
                .map(|id| id.spec())
                .find(|c| c.name == *command)
                .expect("spec");
            for flag in words.iter().filter_map(|w| w.strip_prefix("--")) {
                assert!(
                    spec.input(flag).is_some_and(|i| !i.positional)
                        || ["help", "version"].contains(&flag),
                    "{}: `{span}`: `aayu {command}` has no flag --{flag}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "the lint read the skills' commands ({checked})"
    );
}

#[test]
fn completions_and_help_come_from_the_registry() {
    let dir = tempfile::tempdir().expect("temp");
    let bash = common::run(common::aayu_in(dir.path()).args(["completions", "bash"]));
    assert_eq!(bash.code, 0, "{}", bash.stderr);
    for id in CommandId::ALL {
        let first = id.spec().words()[0];
        // The script is clap's; each command's first word is in it.
        assert!(bash.stdout.contains(first), "bash completes `{first}`");
    }
    let bad = common::run(common::aayu_in(dir.path()).args(["completions", "tcsh"]));
    assert_eq!(bad.code, 2);
    let man = std::fs::read_to_string(root().join("docs/aayu.1")).expect("man page");
    assert!(man.contains(".TH aayu 1"), "a man page");
}

#[test]
fn every_mcp_schema_is_a_json_schema_that_accepts_a_real_call() {
    let verify: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root().join("schemas/mcp/verify.json")).expect("verify.json"),
    )
    .expect("json");
    let validator = jsonschema::validator_for(&verify).expect("a valid JSON Schema");
    assert!(validator.is_valid(&serde_json::json!({"story": "#131", "map": true})));
    assert!(!validator.is_valid(&serde_json::json!({"story": "131; rm -rf /"})));
    assert!(
        !validator.is_valid(&serde_json::json!({"story": "131", "refreeze": true})),
        "an input the command does not have is refused"
    );
    // A schema exactly for each command with the MCP surface, named as its tool, and the listing.
    let mut with_mcp: Vec<String> = aayudha::registry::CommandId::ALL
        .iter()
        .map(|id| id.spec())
        .filter(|c| c.surfaces.contains(&aayudha::registry::Surface::Mcp))
        .map(|c| format!("{}.json", c.name.replace(' ', "_")))
        .chain(["tools.json".to_string()])
        .collect();
    with_mcp.sort();
    let mut present: Vec<String> = walk(&root().join("schemas/mcp"))
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    present.sort();
    assert_eq!(present, with_mcp);
    for path in walk(&root().join("schemas/mcp")) {
        if path.ends_with("tools.json") {
            continue;
        }
        let schema: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Every property says what an agent may do with it.
        for (name, property) in schema["properties"].as_object().expect("properties") {
            assert!(
                matches!(property["x-aayu-exposure"].as_str(), Some("read" | "write")),
                "{}: {name}",
                path.display()
            );
        }
        assert!(schema["x-aayu-exposure"].is_string(), "{}", path.display());
    }
}

#[test]
fn the_raci_and_lanes_tables_list_every_command_from_the_registry() {
    let readme = std::fs::read_to_string(root().join("docs/README.md")).expect("README");
    let raci = readme
        .split("<!-- BEGIN GENERATED: raci -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- END GENERATED: raci -->").next())
        .expect("the raci block");
    let registry = std::fs::read_to_string(root().join("docs/registry.md")).expect("registry.md");
    for id in aayudha::registry::CommandId::ALL {
        let c = id.spec();
        let row = format!("| `aayu {}` | {} |", c.name, c.seat.id());
        assert!(raci.contains(&row), "{row} in {raci}");
        let lane = c.lane.map_or("—", |l| l.id());
        let row = format!("| `aayu {}` | {lane} | {} |", c.name, c.layers.render());
        assert!(registry.contains(&row), "{row}");
    }
}
