//! The ledger branch and `aayu ready` through the real binary, against the fake GitHub and a local bare
//! `origin`: snapshots frozen from the story as GitHub has it, refusals, `--refreeze`, concurrent writers,
//! and the user's working tree, index and HEAD left alone.

use crate::common;
use crate::support::fake_github;

use std::path::Path;

use crate::common::{TestRepo, run};
use fake_github::FakeIssue;

const GOAL: &str = "1. Blank lines are skipped.\n2. The total is printed.";

/// A clone with a bare `origin`, and the fake GitHub knowing story 7.
struct World {
    clone: TestRepo,
    origin: tempfile::TempDir,
    github: fake_github::Server,
}

fn world() -> World {
    let origin = tempfile::Builder::new()
        .prefix("aayu-origin-")
        .tempdir()
        .expect("temp");
    common::git_command(origin.path())
        .args(["init", "-q", "--bare", "-b", "main"])
        .status()
        .expect("init");
    let clone = TestRepo::new();
    clone.write("README.md", "# shop\n");
    clone.commit("first");
    clone.git(&[
        "remote",
        "add",
        "origin",
        &origin.path().display().to_string(),
    ]);
    clone.git(&["push", "-q", "origin", "main"]);
    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "alice".into());
        fake.issues.insert(
            7,
            FakeIssue {
                title: "Blank lines".into(),
                body: Some(format!(
                    "Why.\r\n\r\n## Completion Goal\r\n\r\n{GOAL}\r\n\r\n## Notes\r\nx\r\n"
                )),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
    }
    World {
        clone,
        origin,
        github,
    }
}

fn aayu(world: &World, dir: &Path, args: &[&str]) -> common::Run {
    run(common::aayu_in(dir)
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &world.github.url)
        .env("GH_REPO", "octo/shop")
        .env("AAYUDHA_NOW", "2026-11-29T10:00:00Z")
        .args(args))
}

/// A file on origin's ledger branch.
fn on_origin(world: &World, path: &str) -> Option<String> {
    let out = common::git_command(world.origin.path())
        .args(["show", &format!("ledger:{path}")])
        .output()
        .expect("git show");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn ready_freezes_the_completion_goal_on_origins_ledger_and_touches_nothing_else() {
    let w = world();
    w.clone.write("work.txt", "uncommitted\n");
    w.clone.git(&["add", "work.txt"]);
    let head_before = w.clone.git(&["rev-parse", "HEAD"]);
    let status_before = w.clone.git(&["status", "--porcelain"]);
    let out = aayu(&w, w.clone.root(), &["ready", "7"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let hash = aayudha::hash::bytes(GOAL.as_bytes());
    crate::aayu_snapshot!("ready_freezes", out);
    // The snapshot redacts hashes: the one said is the goal's.
    assert!(out.stdout.contains(&hash), "{}", out.stdout);
    let snapshot = on_origin(&w, "specs/7/ready.md").expect("on origin");
    assert_eq!(
        snapshot,
        format!(
            "# Story 7: Blank lines\n\n<!-- aayudha:ready {{\"story\": 7, \"completion_goal_hash\": \"{hash}\", \"labels\": [\"type:bug\"], \"source\": \"octo/shop#7\", \"frozen_at\": \"2026-11-29T10:00:00Z\"}} -->\n\n## Completion Goal\n\n{GOAL}\n"
        )
    );
    assert_eq!(
        w.clone.git(&["rev-parse", "HEAD"]),
        head_before,
        "HEAD unchanged"
    );
    assert_eq!(
        w.clone.git(&["status", "--porcelain"]),
        status_before,
        "index and working tree unchanged"
    );
    let author = common::git_command(w.origin.path())
        .args(["log", "-1", "--format=%an <%ae>%n%s", "ledger"])
        .output()
        .expect("log");
    let author = String::from_utf8_lossy(&author.stdout).into_owned();
    let (who, subject) = author.trim().split_once('\n').expect("two lines");
    assert!(
        who.starts_with("alice <") && who.ends_with("+alice@users.noreply.github.com>"),
        "no git identity here: the GitHub login's noreply address: {who}"
    );
    assert_eq!(
        subject,
        format!("ready: story #7 (Completion Goal {})", &hash[..12])
    );
    w.github.assert_clean();
}

#[test]
fn a_ready_story_is_not_refrozen_unless_asked_and_then_it_is_recorded() {
    let w = world();
    assert_eq!(aayu(&w, w.clone.root(), &["ready", "7"]).code, 0);
    crate::aayu_snapshot!(
        "ready_again_is_refused",
        aayu(&w, w.clone.root(), &["ready", "7"])
    );
    let old = aayudha::hash::bytes(GOAL.as_bytes());
    w.github
        .state
        .lock()
        .expect("lock")
        .issues
        .get_mut(&7)
        .expect("7")
        .body = Some("## Completion Goal\n\n1. Blank lines are skipped.\n".into());
    w.clone.git(&["config", "user.name", "Rita Reviewer"]);
    w.clone.git(&["config", "user.email", "rita@example.com"]);
    let refrozen = aayu(&w, w.clone.root(), &["ready", "7", "--refreeze"]);
    assert_eq!(refrozen.code, 0, "{}", refrozen.stderr);
    let log = common::git_command(w.origin.path())
        .args(["log", "-1", "--format=%an <%ae> %s", "ledger"])
        .output()
        .expect("log");
    assert!(
        String::from_utf8_lossy(&log.stdout)
            .starts_with("Rita Reviewer <rita@example.com> ready: story #7 refrozen"),
        "git's user.name and user.email: {}",
        String::from_utf8_lossy(&log.stdout)
    );
    let snapshot = on_origin(&w, "specs/7/ready.md").expect("snapshot");
    assert!(
        snapshot.contains(&format!(
            "\"refrozen\": {{\"previous_completion_goal_hash\": \"{old}\"}}"
        )),
        "{snapshot}"
    );
    assert!(
        snapshot.ends_with("## Completion Goal\n\n1. Blank lines are skipped.\n"),
        "{snapshot}"
    );
}

#[test]
fn a_story_without_numbered_criteria_or_a_pull_request_is_refused() {
    let w = world();
    w.github.state.lock().expect("lock").issues.insert(
        8,
        FakeIssue {
            title: "Vague".into(),
            body: Some("## Completion Goal\n\nIt works well.\n".into()),
            ..FakeIssue::default()
        },
    );
    w.github.state.lock().expect("lock").issues.insert(
        9,
        FakeIssue {
            title: "None".into(),
            body: None,
            ..FakeIssue::default()
        },
    );
    crate::aayu_snapshot!(
        "ready_without_numbered_criteria",
        aayu(&w, w.clone.root(), &["ready", "8"])
    );
    crate::aayu_snapshot!(
        "ready_without_a_completion_goal",
        aayu(&w, w.clone.root(), &["ready", "9"])
    );
    crate::aayu_snapshot!(
        "ready_of_a_missing_issue",
        aayu(&w, w.clone.root(), &["ready", "404"])
    );
    assert_eq!(on_origin(&w, "specs/8/ready.md"), None, "nothing written");
    let no_token = run(common::aayu_in(w.clone.root())
        .env("GH_REPO", "octo/shop")
        .env("PATH", "/usr/bin:/bin")
        .args(["ready", "7"]));
    crate::aayu_snapshot!("ready_without_a_token", no_token);
}

#[test]
fn concurrent_writers_all_land_and_nobody_force_pushes() {
    let w = world();
    {
        let mut fake = w.github.state.lock().expect("lock");
        for story in 20..24 {
            fake.issues.insert(
                story,
                FakeIssue {
                    title: format!("Story {story}"),
                    body: Some(format!("## Completion Goal\n\n1. Story {story} works.\n")),
                    ..FakeIssue::default()
                },
            );
        }
    }
    // Four clones of the same origin write at the same time.
    let clones: Vec<TestRepo> = (0..4)
        .map(|_| {
            let c = TestRepo::new();
            c.git(&[
                "remote",
                "add",
                "origin",
                &w.origin.path().display().to_string(),
            ]);
            c.git(&["fetch", "-q", "origin"]);
            c
        })
        .collect();
    let children: Vec<_> = clones
        .iter()
        .enumerate()
        .map(|(i, c)| {
            common::aayu_in(c.root())
                .env("GITHUB_TOKEN", "t")
                .env("GITHUB_API_URL", &w.github.url)
                .env("GH_REPO", "octo/shop")
                .args(["ready", &(20 + i).to_string()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("aayu ran");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for story in 20..24 {
        assert!(
            on_origin(&w, &format!("specs/{story}/ready.md")).is_some(),
            "story {story} landed"
        );
    }
    let history = common::git_command(w.origin.path())
        .args(["rev-list", "--parents", "ledger"])
        .output()
        .expect("rev-list");
    let history = String::from_utf8_lossy(&history.stdout).into_owned();
    assert_eq!(history.lines().count(), 4, "one commit a writer: {history}");
    assert!(
        history.lines().all(|l| l.split_whitespace().count() <= 2),
        "a line, no merges: {history}"
    );
}

const STORY_FILE: &str = "# Story 1: Blank lines count as words\n\nWhy: a blank text is counted as one word.\n\nLabels: type:bug, `area:count`\n\n## Completion Goal\n\n1. A blank text has no words.  \n2. The count of \"a b\" is 2.\n\n## Notes\n\nLabels: not-these\n";

/// The snapshot `ready --file` writes for [`STORY_FILE`], with these labels.
fn file_snapshot(labels: &str) -> String {
    let goal = "1. A blank text has no words.\n2. The count of \"a b\" is 2.";
    let hash = aayudha::hash::bytes(goal.as_bytes());
    format!(
        "# Story 1: Blank lines count as words\n\n<!-- aayudha:ready {{\"story\": 1, \"completion_goal_hash\": \"{hash}\", \"labels\": [{labels}], \"source\": \"file:stories/1.md\", \"frozen_at\": \"2026-11-29T10:00:00Z\"}} -->\n\n## Completion Goal\n\n{goal}\n"
    )
}

/// `aayu` with no token and an API nobody answers: a run that needs GitHub fails.
fn offline(dir: &Path, args: &[&str]) -> common::Run {
    run(common::aayu_in(dir)
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .env("AAYUDHA_NOW", "2026-11-29T10:00:00Z")
        .args(args))
}

#[test]
fn ready_from_a_file_needs_no_network_and_writes_only_this_clone_s_ledger_branch() {
    let w = world();
    w.clone.write("stories/1.md", STORY_FILE);
    w.clone.commit("the story");
    w.clone.git(&["config", "user.name", "Ana Dev"]);
    w.clone.git(&["config", "user.email", "ana@example.com"]);
    let status_before = w.clone.git(&["status", "--porcelain"]);
    // From the folder of the file: its path is taken relative to where aayu runs, recorded from the root.
    let out = offline(
        &w.clone.path("stories"),
        &[
            "ready",
            "1",
            "--file",
            "1.md",
            "--label",
            "map:reshape",
            "--label",
            "type:bug",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let expected = file_snapshot(r#""type:bug", "area:count", "map:reshape""#);
    let hash = aayudha::hash::bytes(
        "1. A blank text has no words.\n2. The count of \"a b\" is 2.".as_bytes(),
    );
    assert!(
        out.stdout.starts_with(&format!(
            "story #1 is Ready: 2 criteria, Completion Goal sha256 {hash}\n  ledger:specs/1/ready.md at "
        )) && out.stdout.ends_with(" (this clone's branch; push it to share it)\n"),
        "{}",
        out.stdout
    );
    // (A second `Labels:` line, in the notes, is not the story's.)
    let written = w.clone.git(&["show", "ledger:specs/1/ready.md"]);
    assert_eq!(written.trim_end(), expected.trim_end());
    assert_eq!(
        w.clone
            .git(&["log", "-1", "--format=%an <%ae>", "ledger"])
            .trim(),
        "Ana Dev <ana@example.com>"
    );
    assert_eq!(on_origin(&w, "specs/1/ready.md"), None, "nothing pushed");
    assert_eq!(w.clone.git(&["status", "--porcelain"]), status_before);

    // `--print` is the same snapshot, and writes nothing.
    let tip = w.clone.git(&["rev-parse", "ledger"]);
    let printed = offline(
        w.clone.root(),
        &["ready", "1", "--file", "stories/1.md", "--print"],
    );
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert_eq!(printed.stdout, file_snapshot(r#""type:bug", "area:count""#));
    assert_eq!(w.clone.git(&["rev-parse", "ledger"]), tip);

    // Frozen once; again only with --refreeze.
    let again = offline(w.clone.root(), &["ready", "1", "--file", "stories/1.md"]);
    crate::aayu_snapshot!("ready_again_refused", again);

    // The gate reads it from the local branch and takes its hash as its own check does.
    let head = w.clone.git(&["rev-parse", "HEAD"]).trim().to_string();
    let gate = offline(
        w.clone.root(),
        &[
            "verify", "--ci", "--story", "1", "--base", &head, "--head", &head, "--json",
        ],
    );
    // Nowhere in the progress log.
    assert!(
        !gate.stderr.contains("the snapshot was edited"),
        "{}",
        gate.stderr
    );
    let pack: serde_json::Value = serde_json::from_str(&gate.stdout).expect("the pack");
    assert_eq!(pack["completion_goal_hash"], hash.as_str());
    assert_eq!(pack["story"], 1);
    // A local-path origin: the pack names the repository by its folder, never by a path of the machine.
    let folder = w
        .clone
        .root()
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    assert_eq!(pack["repo"], folder.as_str());
    w.github.assert_clean();
}

#[test]
fn ready_from_a_file_refuses_what_cannot_be_frozen_with_the_fix() {
    let w = world();
    w.clone
        .write("stories/2.md", "# Story 2: no goal\n\nJust notes.\n");
    w.clone.write(
        "stories/3.md",
        "# Story 3\n\n## Completion Goal\n\nEverything works.\n",
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["ready", "2", "--file", "stories/2.md"],
            "error: `stories/2.md` has no `## Completion Goal` section\n  hint: add the line `## Completion Goal` to the file, then a numbered list of what done means: `1. The total skips blank lines.`\n",
        ),
        (
            &["ready", "3", "--file", "stories/3.md"],
            "error: `stories/3.md`'s Completion Goal has no numbered criteria\n  hint: write each criterion as a numbered line: `1. The total skips blank lines.`\n",
        ),
        (
            &["ready", "4", "--file", "/etc/hostname"],
            "error: the story file `/etc/hostname` is outside the repository: the snapshot records its path in the repository\n  hint: keep stories in the repository (for example `stories/<n>.md`)\n",
        ),
        (
            &["ready", "2", "--print"],
            "error: `--label` and `--print` go with `--file`: a story frozen from its issue takes the issue's labels\n  hint: aayu ready 2 --file STORY.md --label type:bug\n",
        ),
    ];
    for (args, said) in cases {
        let out = offline(w.clone.root(), args);
        assert_eq!((out.code, out.stderr.as_str()), (2, said), "{args:?}");
    }
    assert_eq!(
        w.clone.git(&["branch", "--list", "ledger"]),
        "",
        "nothing written"
    );
}
