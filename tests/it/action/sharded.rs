//! The sharded gate end to end (`docs/action.md`, "A sharded gate"): the plan job, each matrix leg as a
//! process of its own in a workspace of its own, the merge and the pack job, through the real binary with
//! the runner's environment, against the fake GitHub and the fake results service. The merge's pack is
//! the single job's, byte for byte but for `created_at`; a leg missing, failed or tampered with blocks
//! the gate, names the leg, uploads no pack and sets no `success` status; a re-run of the failed jobs
//! (attempt 2) makes the run's one pack.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use serde_json::{Value, json};

use super::scenario::{Done, Scenario, publish, with_ledger};
use crate::common::{self, TALLY_EVIDENCE, tally};

/// The run every job says it is in (`GITHUB_RUN_ID`): the packs of the single job and of the sharded
/// runs name the same run, so their bytes can be compared.
const RUN: &str = "202";

/// The tally example (story 902, a bug: its fix's Go suite and red-on-base) with three products whose
/// two checks each read the file the fix changes: eight units.
fn origin_with_products() -> super::Origin {
    origin_with(TALLY_EVIDENCE, &["alpha", "beta", "gamma"], true)
}

/// The tally example with `evidence` as story 902's evidence map and a product of each name checking
/// the file the fix changes; with `own_ids` each product's feature has an id of its own, else all are
/// `sums` (their checks then write one `behaviour/sums.<check>/` folder).
fn origin_with(evidence: &str, products: &[&str], own_ids: bool) -> super::Origin {
    let (source, base, _) = tally(evidence, "");
    for product in products {
        let feature = if own_ids {
            format!("sums-{product}")
        } else {
            "sums".to_string()
        };
        let dir = common::skill("", product);
        source
            .write(
                &format!("{dir}/README.md"),
                common::map_readme(
                    &format!(
                        r#"{{"product": "{product}", "control": ["aayu", "control"], "surfaces": []}}"#
                    ),
                    &["sums.md"],
                ),
            )
            .write(
                &format!("{dir}/sums.md"),
                common::feature_md(
                    // Each product's feature has its own id: a check's artifacts go to
                    // `behaviour/<feature>.<check>/` (SPEC §4), which names no product.
                    &format!(
                        r#"{{"id": "{feature}", "layers": ["L02"], "sources": ["examples/tally/tally.go"], "surfaces": {{}}, "verified_at": ""}}"#
                    ),
                    &[
                        r#"{"id": "runs", "kind": "cli", "evidence": "api-trace", "steps": [{"run": ["true"], "exit": 0}]}"#,
                        r#"{"id": "echoes", "kind": "cli", "evidence": "api-trace", "steps": [{"run": ["echo", "ok"], "exit": 0, "stdout": "ok"}]}"#,
                    ],
                ),
            );
    }
    // A harness change (advisory: no date set): the merge computes the floor as the single job does.
    source.write("conftest.py", "import os\n");
    let head = source.commit("fix: skip blank lines; three products check the sums");
    with_ledger(&source);
    publish(source, base, head)
}

/// Every entry of a zip.
fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    (0..zip.len())
        .map(|i| {
            let mut entry = zip.by_index(i).expect("entry");
            let mut data = Vec::new();
            entry.read_to_end(&mut data).expect("read");
            (entry.name().expect("name").to_string(), data)
        })
        .collect()
}

/// A zip of these entries.
fn rezip(entries: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, data) in entries {
        zip.start_file(name.as_str(), zip::write::SimpleFileOptions::default())
            .expect("start");
        zip.write_all(data).expect("write");
    }
    zip.finish().expect("finish");
    out.into_inner()
}

/// pack.json of a pack zip, with `created_at` blanked.
fn pack_bytes_but_created_at(zip: &[u8]) -> String {
    let pack =
        String::from_utf8(unzip(zip).remove("pack.json").expect("pack.json")).expect("utf-8");
    let created = regex::Regex::new(r#""created_at": "[^"]*""#).expect("regex");
    assert_eq!(created.find_iter(&pack).count(), 1, "{pack}");
    created.replace(&pack, r#""created_at": """#).into_owned()
}

/// A sharded run in results service `results_run`: the plan job over `shards` legs, then each leg in a
/// workspace of its own. Returns the plan's digest.
fn plan_and_legs(s: &Scenario, results_run: u64, event: &Value, shards: u32) -> String {
    let plan_ws = s.new_workspace();
    let plan = s
        .gate_in(plan_ws.root(), results_run, event)
        .env("GITHUB_RUN_ID", RUN)
        .input("MODE", "plan")
        .input("SHARDS", &shards.to_string())
        .run();
    assert_eq!(plan.code, 0, "{}", plan.said());
    let matrix: Value =
        serde_json::from_str(&plan.runner.output("matrix").expect("matrix")).expect("json");
    let legs: Vec<Value> = (1..=shards)
        .map(|i| json!({"shard": i, "of": shards}))
        .collect();
    assert_eq!(matrix, json!({ "include": legs }));
    let digest = plan.runner.output("plan_digest").expect("plan_digest");
    if shards == 2 {
        insta::assert_snapshot!("sharded_plan_summary", common::redact(&plan.summary()));
    }
    let zip = s
        .artifact(results_run, "aayudha-plan")
        .expect("the plan artifact");
    let plan_json = unzip(&zip).remove("plan.json").expect("plan.json");
    assert_eq!(aayudha::hash::bytes(&plan_json), digest);
    for shard in 1..=shards {
        let (job, _ws) = leg(s, results_run, event, shard, shards, &digest);
        let leg = job.run();
        assert_eq!(leg.code, 0, "shard {shard}: {}", leg.said());
    }
    digest
}

/// Leg `shard` of `shards` of run `results_run`, not started, and the workspace of its own it runs in
/// (kept until the job has run).
fn leg(
    s: &Scenario,
    results_run: u64,
    event: &Value,
    shard: u32,
    shards: u32,
    digest: &str,
) -> (super::scenario::Job, common::TestRepo) {
    let ws = s.new_workspace();
    let job = s
        .gate_in(ws.root(), results_run, event)
        .env("GITHUB_RUN_ID", RUN)
        .input("MODE", "shard")
        .input("SHARD", &shard.to_string())
        .input("SHARDS", &shards.to_string())
        .input("PLAN_DIGEST", digest);
    (job, ws)
}

/// The merge of run `results_run`, in a workspace of its own.
fn merge(s: &Scenario, results_run: u64, event: &Value, attempt: u32) -> Done {
    let ws = s.new_workspace();
    s.gate_in(ws.root(), results_run, event)
        .env("GITHUB_RUN_ID", RUN)
        .env("GITHUB_RUN_ATTEMPT", attempt.to_string())
        .input("MODE", "merge")
        .run()
}

/// The merge of run `results_run`, which must pass (its `result` `passed`).
fn merge_passes(s: &Scenario, results_run: u64, event: &Value, attempt: u32) -> Done {
    let merged = merge(s, results_run, event, attempt);
    assert_eq!(merged.code, 0, "{}", merged.said());
    assert_eq!(
        merged.result().as_deref(),
        Some("passed"),
        "{}",
        merged.said()
    );
    merged
}

/// The plan's units: id → leg.
fn plan_units(s: &Scenario, results_run: u64) -> BTreeMap<String, u64> {
    let zip = s
        .artifact(results_run, "aayudha-plan")
        .expect("the plan artifact");
    let plan: Value =
        serde_json::from_slice(&unzip(&zip).remove("plan.json").expect("plan.json")).expect("json");
    plan["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| {
            (
                u["id"].as_str().expect("id").to_string(),
                u["shard"].as_u64().expect("shard"),
            )
        })
        .collect()
}

#[test]
fn a_sharded_gate_makes_the_single_jobs_pack_and_one_status() {
    crate::needs!(go);
    let s = Scenario::new(origin_with_products()).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));

    // The single gate job, as today.
    let single = s.gate(201, &event).env("GITHUB_RUN_ID", RUN).run();
    assert_eq!(single.code, 0, "{}", single.said());
    assert_eq!(
        single.result().as_deref(),
        Some("proven"),
        "{}",
        single.said()
    );
    let single_zip = s
        .artifact(201, "aayudha-pack")
        .expect("the single job's pack");
    let behaviour: Value = serde_json::from_slice(
        &unzip(&single_zip)
            .remove("artifacts/reports/behaviour.json")
            .expect("behaviour.json"),
    )
    .expect("json");
    let harness: Value = serde_json::from_slice(
        &unzip(&single_zip)
            .remove("artifacts/reports/harness.json")
            .expect("harness.json"),
    )
    .expect("json");
    assert_eq!(harness["changes"][0]["file"], "conftest.py", "{harness:#}");
    let mut selected: Vec<String> = behaviour["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            format!(
                "check:{}/{}.{}",
                c["product"].as_str().expect("a name"),
                c["feature"].as_str().expect("a name"),
                c["check"].as_str().expect("a name")
            )
        })
        .collect();
    selected.extend([
        "suite:examples/tally".to_string(),
        "base:examples/tally".to_string(),
    ]);
    selected.sort();
    assert_eq!(selected.len(), 8, "{selected:?}");

    // Over two legs, then over one: each merge's pack is the single job's but for `created_at`.
    for (results_run, shards) in [(202, 2u32), (203, 1)] {
        plan_and_legs(&s, results_run, &event, shards);
        let units = plan_units(&s, results_run);
        assert_eq!(units.keys().cloned().collect::<Vec<_>>(), selected);
        // A suite and its base share a leg.
        assert_eq!(units["suite:examples/tally"], units["base:examples/tally"]);
        if shards == 2 {
            for leg in 1..=2 {
                assert!(
                    units.values().any(|&l| l == leg),
                    "leg {leg} has units: {units:?}"
                );
            }
        }
        let merged = merge_passes(&s, results_run, &event, 1);
        assert_eq!(merged.runner.output("reason").as_deref(), Some(""));
        let zip = s
            .artifact(results_run, "aayudha-pack")
            .expect("the merge's pack");
        assert_eq!(
            pack_bytes_but_created_at(&zip),
            pack_bytes_but_created_at(&single_zip),
            "{shards} legs"
        );
        // The timings beside the pack, never in it: one per unit.
        let timings = s
            .artifact(results_run, "aayudha-timings")
            .expect("aayudha-timings");
        let timings: Value = serde_json::from_slice(
            &unzip(&timings)
                .remove("timings.json")
                .expect("timings.json"),
        )
        .expect("json");
        let timed: Vec<&str> = timings["units"]
            .as_array()
            .expect("units")
            .iter()
            .map(|u| u["id"].as_str().expect("id"))
            .collect();
        assert_eq!(
            timed,
            selected.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert!(!unzip(&zip).keys().any(|k| k.contains("timings")));
    }

    // The pack job of the two-leg run: the one status, `success`, on the head.
    let pack = s
        .comment(202, &event)
        .env("GITHUB_RUN_ID", RUN)
        .input("GATE_RESULT", "success")
        .run();
    assert_eq!(pack.code, 0, "{}", pack.said());
    let fake = s.github.state.lock().expect("lock");
    let status = fake.statuses.last().expect("a status");
    assert_eq!(
        (
            status.sha.as_str(),
            status.state.as_str(),
            status.context.as_str()
        ),
        (s.origin.head.as_str(), "success", "aayudha/proof")
    );
    drop(fake);
    s.assert_clean();
}

/// What the fake results service of a run holds, to put back between cases.
type Held = (
    Vec<crate::support::fake_results::Artifact>,
    BTreeMap<String, Vec<u8>>,
);

fn hold(s: &Scenario, run: u64) -> Held {
    let results = s.results(run);
    let fake = results.state.lock().expect("lock");
    (fake.artifacts.clone(), fake.blobs.clone())
}

fn put_back(s: &Scenario, run: u64, held: &Held) {
    let results = s.results(run);
    let mut fake = results.state.lock().expect("lock");
    fake.artifacts = held.0.clone();
    fake.blobs = held.1.clone();
}

/// Replaces artifact `name`'s bytes; with `digest` the service reports the new bytes' digest (an
/// artifact uploaded so), without it the old one (bytes changed after the upload).
fn replace(s: &Scenario, run: u64, name: &str, bytes: Vec<u8>, digest: bool) {
    let results = s.results(run);
    let mut fake = results.state.lock().expect("lock");
    let artifact = fake
        .artifacts
        .iter_mut()
        .find(|a| a.name == name)
        .expect("the artifact");
    if digest {
        artifact.hash = Some(format!("sha256:{}", aayudha::hash::bytes(&bytes)));
        artifact.size = Some(bytes.len() as u64);
    }
    let key = artifact.key.clone();
    fake.blobs.insert(key, bytes);
}

/// Adds an artifact `name` holding `bytes`, as a job would have uploaded it.
fn add(s: &Scenario, run: u64, name: &str, bytes: Vec<u8>) {
    let results = s.results(run);
    let mut fake = results.state.lock().expect("lock");
    let key = format!("extra{}", fake.artifacts.len() + 1);
    fake.artifacts.push(crate::support::fake_results::Artifact {
        name: name.to_string(),
        key: key.clone(),
        finalized: true,
        size: Some(bytes.len() as u64),
        hash: Some(format!("sha256:{}", aayudha::hash::bytes(&bytes))),
        ..Default::default()
    });
    fake.blobs.insert(key, bytes);
}

/// The merge blocks naming each of `why`, uploads no pack, and the pack job then sets `failure` with the
/// reason.
fn assert_blocked(s: &Scenario, run: u64, event: &Value, attempt: u32, why: &[&str]) -> Done {
    let before = s.artifact_names(run);
    let merged = merge(s, run, event, attempt);
    assert_ne!(merged.code, 0, "{}", merged.said());
    assert_eq!(
        merged.result().as_deref(),
        Some("blocked"),
        "{}",
        merged.said()
    );
    let reason = merged.runner.output("reason").expect("reason");
    for why in why {
        assert!(
            reason.contains(why),
            "{reason:?} should say {why:?}\n{}",
            merged.said()
        );
    }
    assert!(!reason.contains('\n'), "one line: {reason:?}");
    assert_eq!(s.artifact_names(run), before, "the merge uploads nothing");
    if before.iter().any(|n| n == "aayudha-pack") {
        // Not the merge's: what the pack job makes of it is its own verification's to say.
        return merged;
    }
    let pack = s
        .comment(run, event)
        .env("GITHUB_RUN_ID", RUN)
        .input("GATE_RESULT", "failure")
        .input("GATE_REASON", &reason)
        .run();
    assert_ne!(pack.code, 0, "{}\n{}", pack.said(), reason);
    let fake = s.github.state.lock().expect("lock");
    let status = fake.statuses.last().expect("a status");
    assert_eq!(
        (status.state.as_str(), status.sha.as_str()),
        ("failure", s.origin.head.as_str())
    );
    assert!(
        status.description.contains("blocked"),
        "{}",
        status.description
    );
    drop(fake);
    merged
}

#[test]
fn a_missing_failed_or_tampered_leg_blocks_the_gate_and_a_rerun_makes_the_one_pack() {
    crate::needs!(go);
    let s = Scenario::new(origin_with_products()).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));
    let run = 301;

    // Attempt 1: the plan, leg 1 uploads; leg 2 fails before it uploads anything (the head's fetch
    // fails: no `origin` on its runner).
    let plan_ws = s.new_workspace();
    let plan = s
        .gate_in(plan_ws.root(), run, &event)
        .env("GITHUB_RUN_ID", RUN)
        .input("MODE", "plan")
        .input("SHARDS", "2")
        .run();
    assert_eq!(plan.code, 0, "{}", plan.said());
    let digest = plan.runner.output("plan_digest").expect("plan_digest");
    let (job, _ws1) = leg(&s, run, &event, 1, 2, &digest);
    let one = job.run();
    assert_eq!(one.code, 0, "{}", one.said());
    let (job, _ws2) = leg(&s, run, &event, 2, 2, &"0".repeat(64));
    let broken = job.run();
    assert_ne!(
        broken.code, 0,
        "a leg given another plan's digest runs nothing"
    );
    assert!(
        broken.stderr.contains("not the plan job's"),
        "{}",
        broken.said()
    );
    let missing = assert_blocked(
        &s,
        run,
        &event,
        1,
        &[
            "shard 2 of 2: no artifact (the leg failed, was cancelled or did not run; its job's log says why)",
        ],
    );
    assert!(
        broken.summary().contains("not the plan job's"),
        "the failed leg says why in its own summary: {}",
        broken.summary()
    );
    insta::assert_snapshot!(
        "sharded_merge_blocked_summary",
        common::redact(&missing.summary())
    );
    let status = s
        .github
        .state
        .lock()
        .expect("lock")
        .statuses
        .last()
        .expect("status")
        .description
        .clone();
    insta::assert_snapshot!(
        "sharded_blocked_status_description",
        common::redact(&status)
    );

    // Attempt 2 re-runs the failed jobs: leg 2, then the merge.
    let (job, _ws3) = leg(&s, run, &event, 2, 2, &digest);
    let two = job.env("GITHUB_RUN_ATTEMPT", "2").run();
    assert_eq!(two.code, 0, "{}", two.said());
    let held = hold(&s, run);
    let leg1 = "aayudha-pack-shard-1-of-2-attempt-1";
    let leg2 = "aayudha-pack-shard-2-of-2-attempt-2";
    let units = plan_units(&s, run);
    let zip1 = s.artifact(run, leg1).expect("leg 1");

    // A leg's file edited, its listing left: the hash says so.
    let mut edited = unzip(&zip1);
    let name = edited
        .keys()
        .find(|k| k.starts_with("run/"))
        .cloned()
        .unwrap_or_else(|| panic!("leg 1 has files: {:?}", edited.keys()));
    edited.insert(name.clone(), b"forged".to_vec());
    replace(&s, run, leg1, rezip(&edited), true);
    assert_blocked(
        &s,
        run,
        &event,
        2,
        &["shard 1 of 2: ", &name[4..], "does not match its hash"],
    );
    put_back(&s, run, &held);

    // The bytes changed after the upload: GitHub's digest says so.
    let mut bytes = zip1.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    replace(&s, run, leg1, bytes, false);
    assert_blocked(
        &s,
        run,
        &event,
        2,
        &["shard 1 of 2: ", "is not what was uploaded"],
    );
    put_back(&s, run, &held);

    // A unit of leg 2 claimed by leg 1 too.
    let theirs = units
        .iter()
        .find(|(_, l)| **l == 2)
        .map(|(id, _)| id.clone())
        .expect("a unit of leg 2");
    let mut claimed = unzip(&zip1);
    let mut shard: Value = serde_json::from_slice(&claimed["shard.json"]).expect("json");
    shard["units"]
        .as_array_mut()
        .expect("units")
        .push(json!(theirs));
    claimed.insert(
        "shard.json".into(),
        serde_json::to_vec(&shard).expect("json"),
    );
    replace(&s, run, leg1, rezip(&claimed), true);
    assert_blocked(
        &s,
        run,
        &event,
        2,
        &[
            "shard 2 of 2: ",
            &theirs,
            "which shard 1 ran too (a duplicated unit)",
        ],
    );
    put_back(&s, run, &held);

    // A leg the plan does not have.
    add(&s, run, "aayudha-pack-shard-3-of-2-attempt-1", zip1.clone());
    assert_blocked(
        &s,
        run,
        &event,
        2,
        &[
            "aayudha-pack-shard-3-of-2-attempt-1",
            "a shard outside the plan",
        ],
    );
    put_back(&s, run, &held);

    // A pack already in the run.
    add(&s, run, "aayudha-pack", zip1.clone());
    assert_blocked(&s, run, &event, 2, &["already has an `aayudha-pack`"]);
    put_back(&s, run, &held);

    // No `success` was ever set; now the re-run's merge makes the run's one pack.
    assert!(
        s.github
            .state
            .lock()
            .expect("lock")
            .statuses
            .iter()
            .all(|st| st.state != "success")
    );
    merge_passes(&s, run, &event, 2);
    assert!(s.artifact(run, leg2).is_some());
    let packs = s
        .artifact_names(run)
        .iter()
        .filter(|n| *n == "aayudha-pack")
        .count();
    assert_eq!(packs, 1);
    let pack = s
        .comment(run, &event)
        .env("GITHUB_RUN_ID", RUN)
        .input("GATE_RESULT", "success")
        .run();
    assert_eq!(pack.code, 0, "{}", pack.said());
    assert_eq!(
        s.github
            .state
            .lock()
            .expect("lock")
            .statuses
            .last()
            .expect("status")
            .state,
        "success"
    );
    s.assert_clean();
}

/// Commits `files` to the ledger branch of `origin`, as `aayu ship` and `aayu proof push` would.
fn add_to_ledger(origin: &super::Origin, files: &[(&str, String)]) {
    let clone = tempfile::Builder::new()
        .prefix("aayu-ledger-")
        .tempdir()
        .expect("temp");
    let git = |args: &[&str]| {
        let out = common::git_command(clone.path())
            .args(args)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["clone", "-q", "--branch", "ledger", &origin.url(), "."]);
    for (path, text) in files {
        let file = clone.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "ship"]);
    git(&["push", "-q", "origin", "ledger"]);
}

/// A timings sidecar: `slow` takes `ms`, every other unit 1 ms.
fn sidecar(units: &BTreeMap<String, u64>, slow: &str, ms: u64) -> String {
    let units: Vec<Value> = units
        .keys()
        .map(|id| json!({"id": id, "ms": if id == slow { ms } else { 1 }}))
        .collect();
    serde_json::to_string_pretty(&json!({"schema_version": 1, "units": units})).expect("json")
}

/// The plan job of run `run` over three legs: its stdout.
fn plan_only(s: &Scenario, run: u64, event: &Value) -> String {
    let ws = s.new_workspace();
    let plan = s
        .gate_in(ws.root(), run, event)
        .input("MODE", "plan")
        .input("SHARDS", "3")
        .run();
    assert_eq!(plan.code, 0, "{}", plan.said());
    plan.stdout.clone()
}

#[test]
fn authoritative_timings_change_the_split_advisory_ones_do_not_and_absurd_ones_are_clamped() {
    crate::needs!(go);
    let s = Scenario::new(origin_with_products()).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));
    plan_only(&s, 501, &event);
    let before = plan_units(&s, 501);
    let slow = "check:beta/sums-beta.runs";
    assert!(before.contains_key(slow), "{before:?}");
    let alone = |units: &BTreeMap<String, u64>| {
        units.iter().filter(|(_, l)| **l == units[slow]).count() == 1
    };
    assert!(!alone(&before), "{before:?}");

    // An advisory pack's timings (`aayu proof push`) are never read.
    let head = &s.origin.head;
    add_to_ledger(
        &s.origin,
        &[(
            &format!("proof/902/{head}/advisory/2026-12-01T00-00-00Z/timings.json"),
            sidecar(&before, slow, 170_000),
        )],
    );
    plan_only(&s, 502, &event);
    assert_eq!(plan_units(&s, 502), before);

    // The authoritative one moves the slow check to a leg of its own, its absurd duration clamped to
    // `check_timeout_s` (180 s by default).
    add_to_ledger(
        &s.origin,
        &[(
            &format!("proof/902/{head}/authoritative/timings.json"),
            sidecar(&before, slow, 10_000_000_000),
        )],
    );
    let said = plan_only(&s, 503, &event);
    let after = plan_units(&s, 503);
    assert!(alone(&after), "{after:?}");
    assert!(said.contains("the slowest is estimated at 180 s"), "{said}");
    // Durations change only the split, never which units run.
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );

    // A sidecar that does not parse is said and left out.
    add_to_ledger(
        &s.origin,
        &[(
            &format!("proof/902/{}/authoritative/timings.json", "b".repeat(40)),
            "{\"schema_version\": 2}".to_string(),
        )],
    );
    let ws = s.new_workspace();
    let plan = s
        .gate_in(ws.root(), 504, &event)
        .input("MODE", "plan")
        .input("SHARDS", "3")
        .run();
    assert_eq!(plan.code, 0, "{}", plan.said());
    assert!(
        plan.stderr
            .contains("notice: the timings sidecar `proof/902/bbbb"),
        "{}",
        plan.said()
    );
    assert_eq!(plan_units(&s, 504), after);
    s.assert_clean();
}

#[test]
fn checks_of_one_feature_and_check_name_share_a_leg_and_merge() {
    crate::needs!(go);
    // Two products whose features are both `sums`: their checks write one artifact folder.
    let s = Scenario::new(origin_with(TALLY_EVIDENCE, &["alpha", "beta"], false))
        .with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));
    plan_and_legs(&s, 601, &event, 3);
    let units = plan_units(&s, 601);
    for check in ["runs", "echoes"] {
        assert_eq!(
            units[&format!("check:alpha/sums.{check}")],
            units[&format!("check:beta/sums.{check}")],
            "{units:?}"
        );
    }
    merge_passes(&s, 601, &event, 1);
}

#[test]
fn an_evidence_map_the_pull_request_breaks_is_the_reason_the_gate_is_blocked() {
    let evidence = "[[criterion]]\nid = 1\ntests = [\"examples/tally:Test Sum\"]\n";
    let s = Scenario::new(origin_with(evidence, &["alpha"], true)).with_story_on_the_ledger();
    let event = s.event("opened", Some("Story: #902"));
    let ws = s.new_workspace();
    let plan = s
        .gate_in(ws.root(), 701, &event)
        .env("GITHUB_RUN_ID", RUN)
        .input("MODE", "plan")
        .input("SHARDS", "2")
        .run();
    assert_eq!(plan.code, 2, "{}", plan.said());
    assert!(
        plan.summary().contains(".aayudha/evidence/902.toml"),
        "{}",
        plan.summary()
    );
    // No leg ran; the merge says what to fix, not that the plan's artifact is missing.
    let merged = merge(&s, 701, &event, 1);
    assert_ne!(merged.code, 0);
    let reason = merged.runner.output("reason").expect("reason");
    assert!(
        reason.starts_with(".aayudha/evidence/902.toml: criterion 1:"),
        "{reason}"
    );
    assert!(
        merged.summary().contains("fix what it names and push"),
        "{}",
        merged.summary()
    );
}
