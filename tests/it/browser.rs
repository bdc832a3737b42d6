//! Web products in a real browser: the benefits-qa example's seven ui checks and three api checks through
//! the built-in step runner and Debian's Chromium (no mock), a deliberately broken build failing the right
//! check with a screenshot, a renamed button as drift, and the merge gate proving a bug story with PNG
//! screenshots in its pack, linked from the job summary and the comment.

use crate::action::{Runner, on_pr, pr_event, publish, workspace};
use crate::common::{self, TestRepo, copy_tree, example, run, skill};
use crate::support::fake_github::{self, FakeIssue, FakePull};
use crate::support::fake_results;

use serde_json::Value;

const DIR: &str = "examples/benefits-qa";

/// The configuration that starts benefits-qa on its own port.
fn config(port: u16) -> String {
    format!(
        "[verify]\nseed = [\"sh\", \"{DIR}/seed\", \"127.0.0.1:{port}\"]\nbase_url = \"http://127.0.0.1:{port}\"\nproduction = [\"benefits.example.com\"]\n"
    )
}

/// A repository holding benefits-qa and its configuration, committed.
fn benefits_repo() -> TestRepo {
    let repo = TestRepo::new();
    copy_tree(&example("benefits-qa"), &repo, DIR);
    repo.write(".aayudha/config.toml", config(common::free_port()));
    repo.commit("benefits-qa");
    repo
}

/// benefits-qa built once (the example's sources, with `patch` applied to `src/main.rs` when given) by
/// the tests themselves, and copied into `repo` where the sandbox uid can run it; the seed script runs it
/// instead of building (`BENEFITS_QA_BIN`, passed through `[verify] env`). The gate test builds from
/// source in the sandbox, as a user's gate does; the others need not pay for that build again.
fn prebuilt(repo: &TestRepo, port: u16, patch: Option<(&str, &str)>) -> std::path::PathBuf {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let name = if patch.is_some() { "patched" } else { "clean" };
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("benefits-qa");
    let src = work.join(name);
    let _ = std::fs::remove_dir_all(&src);
    let copy = TestRepo::new();
    copy_tree(&example("benefits-qa"), &copy, "app");
    if let Some((from, to)) = patch {
        let main = std::fs::read_to_string(copy.path("app/src/main.rs")).expect("main.rs");
        assert!(main.contains(from), "the patch applies");
        copy.write("app/src/main.rs", main.replacen(from, to, 1));
    }
    std::fs::create_dir_all(&work).expect("mkdir");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(copy.path("app"))
        .arg(&src)
        .status()
        .expect("cp");
    assert!(status.success());
    let built = std::process::Command::new("cargo")
        .args(["build", "--quiet", "--locked", "--manifest-path"])
        .arg(src.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", work.join("target"))
        .output()
        .expect("cargo build");
    assert!(
        built.status.success(),
        "benefits-qa builds: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let bin = repo.path(&format!(".bin/{name}/benefits-qa"));
    std::fs::create_dir_all(bin.parent().expect("parent")).expect("mkdir");
    std::fs::copy(work.join("target/debug/benefits-qa"), &bin).expect("copy the binary");
    repo.write(
        ".aayudha/config.toml",
        format!("{}env = [\"BENEFITS_QA_BIN\"]\n", config(port)),
    );
    bin
}

fn checks(report: &Value) -> Vec<&Value> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .collect()
}

fn is_png(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000)
}

/// The reason of a passed check says nothing but why Chromium ran without its own sandbox, and (on a
/// loaded machine, where a browser helper outlives the 3 s the runner waits for it) that a leftover
/// process was killed.
fn quiet(reason: &str) -> bool {
    let rest = reason
        .strip_prefix("Chromium ran with --no-sandbox: ")
        .map_or(reason, |r| r.split_once(';').map_or("", |(_, more)| more));
    let rest = rest.trim_start_matches(';').trim();
    rest.is_empty()
        || ((rest.ends_with("leftover process was killed")
            || rest.ends_with("leftover processes were killed"))
            && rest.len() < 45)
}

#[test]
fn seven_ui_and_three_api_checks_pass_in_a_real_browser() {
    crate::needs!(chromium);
    let repo = benefits_repo();
    let bin = prebuilt(&repo, common::free_port(), None);
    let out = run(common::with_toolchain(&mut repo.aayu())
        .env("BENEFITS_QA_BIN", &bin)
        .args(["verify", "--check", "all", "--json", "--out", "run"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let all = checks(&report);
    let kinds = |kind: &str| all.iter().filter(|c| c["kind"] == kind).count();
    assert_eq!((kinds("ui"), kinds("api"), all.len()), (7, 3, 10));
    for check in &all {
        let label = format!(
            "{}.{}",
            check["feature"].as_str().unwrap_or(""),
            check["check"].as_str().unwrap_or("")
        );
        assert_eq!(check["status"], "passed", "{label}: {check:#}");
        assert_eq!(check["network"], "allowed", "{label}");
        let reason = check["reason"].as_str().expect("reason");
        assert!(quiet(reason), "{label}: {reason}");
        let artifacts = check["artifacts"].as_array().expect("artifacts");
        assert!(
            artifacts.iter().any(|a| a["kind"] == "api-trace"),
            "{label}: every check keeps its transcript"
        );
        if check["kind"] == "ui" {
            let shots: Vec<&Value> = artifacts
                .iter()
                .filter(|a| a["kind"] == "screenshot")
                .collect();
            assert_eq!(shots.len(), 1, "{label}: {artifacts:?}");
            let path = shots[0]["path"].as_str().expect("path");
            assert!(
                path.starts_with(&format!("behaviour/{label}/")) && path.ends_with(".png"),
                "{path}"
            );
            assert!(
                is_png(&repo.path(&format!("run/{path}"))),
                "{path} is a PNG"
            );
        }
    }
    // The transcript says what each browser step did.
    let transcript: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path("run/behaviour/ask.question-mark/transcript.json"))
            .expect("transcript"),
    )
    .expect("json");
    let steps = transcript["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 7);
    assert_eq!(steps[0]["open"], "/");
    // The element's text as the browser gives it (its whitespace is the browser's): a part is looked for.
    assert!(
        steps[4]["did"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Standard plan, §4.2 Vision care")),
        "{:#}",
        steps[4]
    );
}

#[test]
fn a_broken_build_fails_the_right_check_with_a_screenshot() {
    crate::needs!(chromium);
    let repo = benefits_repo();
    // The page ignores the chosen plan: every answer comes from the Standard plan.
    let break_it = (
        "async fn ask_page(Query(asked): Query<Asked>) -> Response {\n    match plan_of(asked.plan.as_deref()) {",
        "async fn ask_page(Query(asked): Query<Asked>) -> Response {\n    match plan_of(None) {",
    );
    let main = std::fs::read_to_string(repo.path(&format!("{DIR}/src/main.rs"))).expect("main.rs");
    repo.write(
        &format!("{DIR}/src/main.rs"),
        main.replacen(break_it.0, break_it.1, 1),
    );
    repo.commit("ignore the plan");
    let bin = prebuilt(&repo, common::free_port(), Some(break_it));
    let out = run(common::with_toolchain(&mut repo.aayu())
        .env("BENEFITS_QA_BIN", &bin)
        .args(["verify", "--check", "ask", "--json", "--out", "run"]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let statuses: Vec<(String, String)> = checks(&report)
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap_or("").to_string(),
                c["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("answer-cited", "passed"),
            ("plan-choice", "failed"),
            ("press-enter", "passed"),
            ("question-mark", "passed"),
        ]
        .map(|(c, s)| (c.to_string(), s.to_string()))
    );
    let failed = checks(&report)
        .into_iter()
        .find(|c| c["check"] == "plan-choice")
        .expect("plan-choice");
    let reason = failed["reason"].as_str().expect("reason");
    // The reason quotes the page's text, cut where the browser's layout puts the line ends.
    assert!(
        reason.starts_with(
            "step 5 (see {\"test\":\"passage\"}): the element with test id `passage` does not contain `up to 30 visits` after 5 s; its text is \"Physical therapy is covered for up to 20 visits"
        ) && reason.contains("; screenshot failed-step-5.png"),
        "{reason}"
    );
    let shot = failed["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .find(|a| a["path"] == "behaviour/ask.plan-choice/failed-step-5.png")
        .unwrap_or_else(|| panic!("the failed step's screenshot: {failed:#}"));
    assert_eq!(shot["kind"], "screenshot");
    assert!(is_png(
        &repo.path("run/behaviour/ask.plan-choice/failed-step-5.png")
    ));
    // The human report names the check and the screenshot too.
    let human = run(common::with_toolchain(&mut repo.aayu())
        .env("BENEFITS_QA_BIN", &bin)
        .args(["verify", "--check", "ask.plan-choice", "--out", "run2"]));
    assert_eq!(human.code, 3);
    // The check's line of the report, which goes on with the reason above.
    assert!(
        human
            .stdout
            .contains("benefits-qa ask.plan-choice (ui, network allowed): failed: step 5"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_renamed_button_is_drift() {
    let repo = benefits_repo();
    let clean = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(clean.code, 0, "{}", clean.stdout);
    let page = std::fs::read_to_string(repo.path(&format!("{DIR}/src/page.rs"))).expect("page");
    repo.write(
        &format!("{DIR}/src/page.rs"),
        page.replace(
            r#"<button type="submit">Ask</button>"#,
            r#"<button type="submit">Send</button>"#,
        ),
    );
    let out = run(repo.aayu().args(["verify", "--map", "--json"]));
    assert_eq!(out.code, 3, "{}", out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let drift: Vec<(String, String)> = report["drift"]
        .as_array()
        .expect("drift")
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or("").to_string(),
                d["file"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let features = skill(DIR, "benefits-qa");
    assert!(!drift.is_empty());
    for (kind, file) in &drift {
        assert_eq!(kind, "missing-handle");
        assert!(
            file == &format!("{features}/ask.md") || file == &format!("{features}/refusals.md"),
            "{file}"
        );
    }
    insta::assert_snapshot!(
        "renamed_button_drift",
        report["drift"][0]["detail"].as_str().unwrap_or_default()
    );
}

#[test]
fn a_production_base_url_is_refused_before_anything_starts() {
    let repo = benefits_repo();
    repo.write(
        ".aayudha/config.toml",
        format!(
            "{}base_url = \"https://benefits.example.com\"\n",
            config(common::free_port()).replace("base_url = ", "# base_url = ")
        ),
    );
    let out = run(repo
        .aayu()
        .args(["verify", "--check", "ask", "--out", "run"]));
    crate::aayu_snapshot!("production_base_url", out);
    assert!(!repo.path("run/reports/behaviour.json").exists());
}

/// Story 903 of benefits-qa: a question ending in `?` lost its last word. The base has the bug; the pull
/// request fixes it with a test; the gate runs the checks in Chromium and proves the story.
const GOAL: &str = "1. Asking \"What about vision?\" on the page shows the vision care passage, quoted and cited. (evidence: screenshot)\n2. The API answers \"What about vision?\" with section 4.2 and its citation.\n3. Questions about another person's records are still refused. (evidence: screenshot)";

#[test]
fn the_gate_proves_a_web_story_with_screenshots_linked_from_summary_and_comment() {
    crate::needs!(chromium);
    let source = TestRepo::new();
    copy_tree(&example("benefits-qa"), &source, DIR);
    source.write(".aayudha/config.toml", config(common::free_port()));
    let answer_rs = format!("{DIR}/src/answer.rs");
    let fixed = std::fs::read_to_string(source.path(&answer_rs)).expect("answer.rs");
    let buggy = fixed.replacen(
        "fn words(text: &str) -> Vec<String> {\n    words_of(text)\n}",
        "fn words(text: &str) -> Vec<String> {\n    text.split_whitespace().map(str::to_lowercase).collect()\n}",
        1,
    );
    assert_ne!(buggy, fixed, "the bug applies");
    let test =
        std::fs::read_to_string(source.path(&format!("{DIR}/tests/questions.rs"))).expect("test");
    std::fs::remove_file(source.path(&format!("{DIR}/tests/questions.rs"))).expect("rm");
    source.write(&answer_rs, buggy);
    let base = source.commit("benefits-qa, with the bug");
    source.write(&answer_rs, fixed);
    source.write(&format!("{DIR}/tests/questions.rs"), test);
    // The story and its evidence map as the example keeps them.
    let stories = example("benefits-qa").join("stories");
    let ready = std::fs::read_to_string(stories.join("903.ready.md")).expect("903.ready.md");
    assert!(
        ready.contains(&aayudha::hash::bytes(GOAL.as_bytes())),
        "the example's snapshot is this goal's"
    );
    source.write(
        ".aayudha/evidence/903.toml",
        std::fs::read(stories.join("903.evidence.toml")).expect("903.evidence.toml"),
    );
    let head = source.commit("fix: punctuation is not part of a word");
    let hash = aayudha::hash::bytes(GOAL.as_bytes());
    source.git(&["switch", "-q", "--orphan", "ledger"]);
    source.write(
        "specs/903/ready.md",
        format!("# Story 903: Vision\n\n<!-- aayudha:ready {{\"story\": 903, \"completion_goal_hash\": \"{hash}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{GOAL}\n"),
    );
    source.commit("ready: story 903");
    source.git(&["switch", "-q", "main"]);
    let origin = publish(source, base, head);
    let ws = workspace(&origin);

    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.repo = "Codertocat/Hello-World".into();
        fake.tokens
            .insert("ghs_job".into(), "github-actions[bot]".into());
        fake.no_user.push("ghs_job".into());
        fake.issues.insert(
            903,
            FakeIssue {
                title: "Vision".into(),
                body: Some(format!(
                    "A question mark hides the last word.\n\n## Completion Goal\n\n{GOAL}\n"
                )),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
        fake.pulls.insert(3, FakePull::open(&origin.head));
        let snapshot = common::git_command(origin.bare.path())
            .args(["show", "ledger:specs/903/ready.md"])
            .output()
            .expect("git show")
            .stdout;
        fake.files
            .insert(("ledger".into(), "specs/903/ready.md".into()), snapshot);
    }
    let results = fake_results::Server::start(&crate::action::runtime_token(201));
    let runner = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #903")));
    let gate = on_pr(&ws, &runner, &github, &results, 201, &[]);
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    let outputs = runner.outputs();
    let summary = runner.summary();
    assert_eq!(
        outputs.get("result").map(String::as_str),
        Some("proven"),
        "{outputs:?}\n{summary}\n{}",
        gate.stderr
    );

    // The pack: the screenshots are hashed artifacts of kind screenshot, `store: none` (never git), and
    // their bytes are in the uploaded zip.
    let zip = {
        let state = results.state.lock().expect("lock");
        assert_eq!(state.artifacts.len(), 1);
        state.blobs[&state.artifacts[0].key].clone()
    };
    let unpacked =
        aayudha::publish::archive::read(&zip, Default::default()).expect("the zip reads");
    let pack = &unpacked.pack;
    for (id, shot) in [
        (1, "behaviour/ask.question-mark/question-mark.png"),
        (
            3,
            "behaviour/refusals.other-person/refused-other-person.png",
        ),
    ] {
        let artifact = pack
            .artifacts
            .iter()
            .find(|a| a.path == shot)
            .unwrap_or_else(|| panic!("{shot} in the pack"));
        assert_eq!(
            serde_json::to_value(artifact.kind).expect("kind"),
            "screenshot"
        );
        assert_eq!(artifact.store, aayudha::pack::Store::None);
        let bytes = unpacked
            .artifacts
            .get(shot)
            .expect("the bytes are in the zip");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        let criterion = pack
            .criteria
            .iter()
            .find(|c| c.id == id)
            .expect("criterion");
        assert_eq!(criterion.evidence, vec![shot.to_string()]);
    }
    let red = pack
        .checks
        .iter()
        .find(|c| c.floor == "red-on-base")
        .expect("red-on-base");
    assert_eq!(red.result, aayudha::pack::Verdict::Pass, "{red:?}");

    // The job summary lists each screenshot criterion with a link to the run's artifact.
    // A screenshot's size follows the machine's Chromium and fonts: the snapshots hold the words, not the
    // number.
    let sizes = regex::Regex::new(r"\| \d+ \| `\[sha256\]` \|").expect("a pattern");
    let shown = |text: &str| {
        sizes
            .replace_all(&common::redact(text), "| [n] | `[sha256]` |")
            .into_owned()
    };
    insta::assert_snapshot!("web_story_summary", shown(&summary));

    // The pack job's comment does too.
    let runner2 = Runner::new(&pr_event("opened", 0, &origin, Some("Story: #903")));
    let comment = on_pr(
        &ws,
        &runner2,
        &github,
        &results,
        201,
        &[("MODE", "comment")],
    );
    assert_eq!(comment.code, 0, "{}\n{}", comment.stdout, comment.stderr);
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    insta::assert_snapshot!("web_story_comment", shown(&comments[0].body));
}

#[test]
fn a_missing_chromium_blocks_the_ui_checks_naming_what_to_install() {
    crate::needs!(python3);
    let repo = benefits_repo();
    let port = common::free_port();
    // Any app will do: the browser is what is missing.
    repo.write(
        ".aayudha/config.toml",
        format!(
            "[verify]\nseed = [\"python3\", \"-m\", \"http.server\", \"--bind\", \"127.0.0.1\", \"{port}\"]\nbase_url = \"http://127.0.0.1:{port}\"\nchromium = \"/opt/nowhere/chromium\"\n"
        ),
    );
    let out = run(repo
        .aayu()
        .args(["verify", "--check", "refusals", "--json", "--out", "run"]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let said = "`[verify] chromium` names `/opt/nowhere/chromium`, which is not a file: install Chromium (apt-get install chromium), or correct the setting";
    for check in checks(&report) {
        assert_eq!(check["status"], "blocked", "{check:#}");
        assert_eq!(check["reason"], said);
    }
    // A line of the progress log.
    assert!(
        out.stderr.contains(&format!("chromium: blocked: {said}")),
        "the preflight says it once, before any check: {}",
        out.stderr
    );
}
