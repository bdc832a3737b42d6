//! The harness floor's waiver in the merge gate: an approval of the exact head by a user with write
//! permission who is not the pull request's author, not a bot and not a committer of it waives the floor
//! when the gate runs again (it reads the reviews live); the author's, a bot's, a committer's or one of an
//! older commit do not.

use std::io::Read as _;

use serde_json::Value;

use super::scenario::{Scenario, publish, with_ledger};
use crate::common::{TALLY_EVIDENCE, tally};

/// The harness floor of run `run_id`'s pack.
fn harness_floor(s: &Scenario, run_id: u64) -> Value {
    let zip = s.artifact(run_id, "aayudha-pack").expect("the pack");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(zip)).expect("a zip");
    let mut text = String::new();
    zip.by_name("pack.json")
        .expect("pack.json")
        .read_to_string(&mut text)
        .expect("read");
    let pack: Value = serde_json::from_str(&text).expect("json");
    pack["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["floor"] == "harness")
        .cloned()
        .expect("a harness floor")
}

#[test]
fn only_a_writers_approval_of_the_head_waives_the_harness_floor_once_the_gate_runs_again() {
    crate::needs!(go);
    // The fix, and a conftest.py beside it: a harness change, blocking since the base's date.
    let (source, base, _) = tally(
        TALLY_EVIDENCE,
        "[verify]\nharness_blocking_from = \"2026-01-01\"\n",
    );
    source.write("conftest.py", "import os\n");
    let head = source.commit("fix: skip blank lines, with a conftest");
    with_ledger(&source);
    let s = Scenario::new(publish(source, base.clone(), head.clone())).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));
    {
        let mut fake = s.github.state.lock().expect("lock");
        fake.pulls.get_mut(&3).expect("pull").committer = Some("committer-cat".into());
        for (login, permission) in [
            ("octocat", "admin"),
            ("helper[bot]", "write"),
            ("committer-cat", "write"),
            ("hubot", "write"),
            ("reader", "read"),
        ] {
            fake.permissions.insert(login.into(), permission.into());
        }
        let approved = |login: &str, commit: &str| (login.into(), "APPROVED".into(), commit.into());
        // The author, a bot, a committer of the pull request, a writer on an older commit, a reader.
        fake.reviews.insert(
            3,
            vec![
                approved("octocat", &head),
                approved("helper[bot]", &head),
                approved("committer-cat", &head),
                approved("hubot", &base),
                approved("reader", &head),
            ],
        );
    }
    let gate = s.gate(501, &event).run();
    assert_eq!(
        gate.result().as_deref(),
        Some("floors-fail"),
        "{}",
        gate.said()
    );
    let floor = harness_floor(&s, 501);
    assert_eq!(floor["result"], "fail", "{floor:#}");
    assert!(
        floor["detail"]
            .as_str()
            .is_some_and(|d| d.contains("approves the head, then re-runs the merge gate")),
        "{floor:#}"
    );

    // hubot approves the head; the re-run reads it.
    s.github
        .state
        .lock()
        .expect("lock")
        .reviews
        .get_mut(&3)
        .expect("reviews")
        .push(("hubot".into(), "APPROVED".into(), head.clone()));
    let gate = s.gate(502, &event).run();
    assert_eq!(gate.code, 0, "{}", gate.said());
    assert_eq!(gate.result().as_deref(), Some("proven"), "{}", gate.said());
    let floor = harness_floor(&s, 502);
    assert_eq!(floor["result"], "waived", "{floor:#}");
    assert_eq!(
        floor["detail"], "1 harness change, waived by hubot's approval of the head",
        "{floor:#}"
    );
}
