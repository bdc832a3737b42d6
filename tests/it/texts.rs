//! What people read, as `insta` snapshots (`tests/it/snapshots/`): the `--help` of every command, the table
//! of `verify --ci`, and each error message with its hint and exit code. The job summaries, the comment and
//! the sweep's table are snapshotted where their tests run the action (`action.rs`). Temporary paths,
//! SHAs, hashes, fence tokens and timings are redacted, so that a snapshot changes only when the text does.

use crate::common::{self, TestRepo, ready, redact, run};

fn shown(out: &common::Run) -> String {
    let mut text = format!("exit {}\n", out.code);
    if !out.stdout.is_empty() {
        text.push_str(&format!("--- stdout\n{}", out.stdout));
    }
    if !out.stderr.is_empty() {
        text.push_str(&format!("--- stderr\n{}", out.stderr));
    }
    redact(&text)
}

#[test]
fn the_help_of_every_command() {
    let dir = tempfile::tempdir().expect("temp");
    let top = run(common::aayu_in(dir.path()).arg("--help"));
    insta::assert_snapshot!("help", shown(&top));
    for id in aayudha::registry::CommandId::ALL {
        let words = id.spec().words();
        let out = run(common::aayu_in(dir.path()).args(&words).arg("--help"));
        assert_eq!(out.code, 0, "{words:?}: {}", out.stderr);
        insta::assert_snapshot!(format!("help_{}", words.join("_")), shown(&out));
    }
}

#[test]
fn the_table_of_verify_ci() {
    crate::needs!(go);
    let (repo, base, head) = common::tally(common::TALLY_EVIDENCE, "");
    let snapshot = ready(&repo, 902, "1. Blank lines are skipped.", &["type:bug"]);
    let out = run(common::with_toolchain(&mut repo.aayu())
        .env("AAYUDHA_NOW", "2026-11-30T12:00:00Z")
        .args([
            "verify", "--ci", "--base", &base, "--head", &head, "--story", "902", "--ready",
            &snapshot,
        ]));
    insta::assert_snapshot!("verify_ci_table", shown(&out));
}

/// One case of a user's mistake: what they ran, in what repository.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    setup: fn(&TestRepo),
}

fn nothing(_: &TestRepo) {}

fn bad_config(repo: &TestRepo) {
    repo.write(
        ".aayudha/config.toml",
        "[verify]\ncheck_timeout_s = 30\nchek_timeout = 3\n",
    );
}

fn system_uids(repo: &TestRepo) {
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nsandbox_uids = [1000, 1100]\n",
    );
}

fn a_map(repo: &TestRepo) {
    let dir = common::skill("", "shop");
    repo.write(
        &format!("{dir}/README.md"),
        common::map_readme(
            r#"{"product": "shop", "control": ["aayu", "control"], "surfaces": []}"#,
            &["buy.md"],
        ),
    )
    .write(
        &format!("{dir}/buy.md"),
        common::feature_md(
            r#"{"id": "buy", "layers": [], "sources": [], "surfaces": {}, "verified_at": ""}"#,
            &[],
        ),
    );
    repo.commit("a map");
}

const CASES: &[Case] = &[
    Case {
        name: "verify_without_what",
        args: &["verify"],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "verify_ci_without_base",
        args: &["verify", "--ci", "--head", "HEAD"],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "verify_ci_an_unknown_revision",
        args: &["verify", "--ci", "--base", "nope", "--head", "HEAD"],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "verify_ci_a_story_without_a_snapshot",
        args: &[
            "verify", "--ci", "--base", "HEAD", "--head", "HEAD", "--story", "7",
        ],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "an_unknown_configuration_key",
        args: &["verify", "--map"],
        env: &[],
        setup: bad_config,
    },
    Case {
        name: "system_ids_as_sandbox_uids",
        args: &["verify", "--check", "all"],
        env: &[],
        setup: system_uids,
    },
    Case {
        name: "an_unknown_check",
        args: &["verify", "--check", "nope"],
        env: &[],
        setup: a_map,
    },
    Case {
        name: "a_bad_clock",
        args: &["verify", "--map"],
        env: &[("AAYUDHA_NOW", "yesterday")],
        setup: nothing,
    },
    Case {
        name: "ship_in_ci",
        args: &["ship", "3"],
        env: &[("CI", "true")],
        setup: nothing,
    },
    Case {
        name: "action_without_an_event",
        args: &["action"],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "proof_comment_outside_actions",
        args: &["proof", "comment", "--pr", "3"],
        env: &[],
        setup: nothing,
    },
    Case {
        name: "an_unknown_flag",
        args: &["verify", "--mapp"],
        env: &[],
        setup: nothing,
    },
];

#[test]
fn each_error_message_with_its_hint() {
    for case in CASES {
        let repo = TestRepo::new();
        repo.write("README.md", "x\n");
        repo.commit("first");
        (case.setup)(&repo);
        let mut cmd = repo.aayu();
        for (key, value) in case.env {
            cmd.env(key, value);
        }
        let out = run(cmd.args(case.args));
        assert_ne!(out.code, 0, "{}: {}", case.name, out.stdout);
        insta::assert_snapshot!(format!("error_{}", case.name), shown(&out));
    }
    // Outside a repository.
    let dir = tempfile::tempdir().expect("temp");
    let out = run(common::aayu_in(dir.path()).args(["verify", "--map"]));
    insta::assert_snapshot!("error_not_a_repository", shown(&out));
}
