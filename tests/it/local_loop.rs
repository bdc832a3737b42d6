//! The local loop of docs/setup.md ("From init to a proven bug fix, offline"), as a new user walks it: a
//! root crate with no registry dependency and no `Cargo.lock`, with a bug; `init --verify-skill`; a first
//! feature and check; `verify --map` and `verify --check`; the fix on a branch with a regression test and an
//! evidence map; `ready --file`; `verify --ci` — with no network and no token, the commands the docs show.

use crate::common::{self, TestRepo, run};

const BUGGY: &str = "/// How many words `text` has.\npub fn count(text: &str) -> usize {\n    text.split(' ').count()\n}\n";
const FIXED: &str = "/// How many words `text` has.\npub fn count(text: &str) -> usize {\n    text.split_whitespace().count()\n}\n";

const FEATURE: &str = r#"# Count

Counts the words of a text.

```json
{"id": "count", "layers": ["L02"], "sources": ["src/lib.rs", "src/main.rs"], "surfaces": {}, "verified_at": ""}
```

## Sub-features

- words separated by spaces

## How to reach it

`wc "a b"` prints 2.

## Behaviour checks

```json
{"id": "counts-words", "kind": "cli", "evidence": "api-trace", "steps": [
  {"build": "."},
  {"run": ["wc", "a b"], "exit": 0, "stdout": ["2"]}
]}
```

## Gotchas

None.
"#;

const STORY: &str = "# Story 1: A blank text counts as one word\n\nLabels: type:bug\n\n`wc \"\"` prints 1.\n\n## Completion Goal\n\n1. A blank text has no words.\n";

/// `aayu` offline: no token, and an API nobody answers.
fn aayu(repo: &TestRepo, args: &[&str]) -> common::Run {
    run(common::with_toolchain(&mut repo.aayu())
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .args(args))
}

#[test]
fn from_init_to_a_proven_bug_fix_offline() {
    let repo = TestRepo::new();
    repo.git(&["config", "user.name", "Ana Dev"]);
    repo.git(&["config", "user.email", "ana@example.com"]);
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"wc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .write("src/lib.rs", BUGGY)
    .write(
        "src/main.rs",
        "fn main() {\n    let text = std::env::args().nth(1).unwrap_or_default();\n    println!(\"{}\", wc::count(&text));\n}\n",
    )
    .write(".gitignore", "/target\n");
    repo.commit("wc");

    let init = aayu(
        &repo,
        &["init", "--verify-skill", "--product", "wc", "--yes"],
    );
    crate::aayu_snapshot!("local_loop_init", init);
    let dir = ".agents/skills/verify-wc/features";
    let readme = std::fs::read_to_string(repo.path(&format!("{dir}/README.md"))).expect("README");
    repo.write(
        &format!("{dir}/README.md"),
        format!("{readme}\n1. [Count](count.md)\n"),
    )
    .write(&format!("{dir}/count.md"), FEATURE);
    repo.commit("aayu: the feature map");

    let map = aayu(&repo, &["verify", "--map"]);
    crate::aayu_snapshot!("local_loop_map", map);
    let check = aayu(&repo, &["verify", "--check", "all"]);
    // stdout only: stderr is the progress log (the build).
    crate::aayu_snapshot!("local_loop_check", stdout check);

    // The fix, on a branch: the code, a regression test of its own file, the evidence map, the story.
    repo.git(&["switch", "-q", "-c", "fix-blank"]);
    repo.write("src/lib.rs", FIXED)
        .write(
            "tests/blank.rs",
            "#[test]\nfn a_blank_text_has_no_words() {\n    assert_eq!(wc::count(\"\"), 0);\n    assert_eq!(wc::count(\"  \"), 0);\n}\n",
        )
        .write(
            ".aayudha/evidence/1.toml",
            "[[criterion]]\nid = 1\ntests = [\".:a_blank_text_has_no_words\"]\n",
        )
        .write("stories/1.md", STORY);
    repo.commit("fix: a blank text has no words");

    let ready = aayu(
        &repo,
        &[
            "ready",
            "1",
            "--file",
            "stories/1.md",
            "--label",
            "type:bug",
        ],
    );
    assert_eq!(ready.code, 0, "{}{}", ready.stdout, ready.stderr);
    assert!(
        ready.stdout.starts_with("story #1 is Ready: 1 criterion"),
        "{}",
        ready.stdout
    );

    let gate = aayu(
        &repo,
        &[
            "verify", "--ci", "--story", "1", "--base", "main", "--head", "HEAD",
        ],
    );
    assert_eq!(gate.code, 0, "{}{}", gate.stdout, gate.stderr);
    crate::aayu_snapshot!("local_gate_table", stdout gate);
    let pack: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(".aayudha/proof/1/pack.json")).expect("the pack"),
    )
    .expect("json");
    assert_eq!(pack["story"], 1);
    assert_eq!(
        pack["completion_goal_hash"],
        aayudha::hash::bytes(b"1. A blank text has no words.").as_str()
    );
    // Nothing of the run is left in the working tree (the lock resolved for the run is removed).
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
