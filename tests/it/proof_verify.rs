//! `aayu proof verify` through the real binary: packs landed on a ledger branch of a local bare `origin`,
//! the pull request's head from the fake GitHub, and one test per check of SPEC §6, plus old packs.

use crate::common;
use crate::support::fake_github;
use crate::support::sigstore;

use crate::common::{TestRepo, run};
use fake_github::FakePull;
use serde_json::{Value, json};

const HEAD: &str = "1111111111111111111111111111111111111111";
const GOAL: &str = "1. Blank lines are skipped.\n2. The total is printed.";
const EVIDENCE_1: &[u8] = b"{\"Action\":\"pass\",\"Test\":\"TestSumSkipsBlankLines\"}\n";
const EVIDENCE_2: &[u8] = b"{\"Action\":\"pass\",\"Test\":\"TestTotal\"}\n";

fn snapshot(goal: &str) -> String {
    format!(
        "# Story 7: Totals\n\n<!-- aayudha:ready {{\"story\": 7, \"completion_goal_hash\": \"{}\", \"labels\": [\"type:bug\"]}} -->\n\n## Completion Goal\n\n{goal}\n",
        aayudha::hash::bytes(goal.as_bytes())
    )
}

fn artifact(path: &str, bytes: &[u8]) -> Value {
    json!({"path": path, "kind": "api-trace", "sha256": aayudha::hash::bytes(bytes), "size": bytes.len(), "store": "git"})
}

/// A pack for story 7 on HEAD, both criteria evidenced.
fn good_pack(kind: &str, created_at: &str) -> Value {
    json!({
        "schema_version": 1, "repo": "octo/shop", "story": 7, "pr": 3, "pr_head_sha": HEAD,
        "seat": "ai-native-engineer", "host": "action", "identity": "ci", "authority": {"kind": kind},
        "completion_goal_hash": aayudha::hash::bytes(GOAL.as_bytes()),
        "criteria": [{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}, {"id": 2, "evidence": ["evidence/criterion-2.jsonl"]}],
        "artifacts": [artifact("evidence/criterion-1.jsonl", EVIDENCE_1), artifact("evidence/criterion-2.jsonl", EVIDENCE_2)],
        "checks": [{"floor": "tests", "result": "pass", "value": 2, "threshold": 2, "tool": "t", "version": "v", "detail": "", "network": "isolated"}],
        "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0}, "links": {}, "created_at": created_at
    })
}

/// A clone of a bare origin whose ledger holds the given files; the fake GitHub with PR #3 at `pr_head`.
struct World {
    clone: TestRepo,
    _origin: tempfile::TempDir,
    github: fake_github::Server,
}

fn world(ledger: &[(&str, Vec<u8>)], pr_head: &str) -> World {
    let (origin, url) = common::bare_repo();
    // The ledger is made in a scratch repository and pushed; the clone never had it checked out.
    let scratch = TestRepo::new();
    for (path, bytes) in ledger {
        scratch.write(path, bytes);
    }
    scratch.commit("ledger");
    scratch.git(&["push", "-q", &url, "HEAD:refs/heads/ledger"]);
    let clone = TestRepo::new();
    clone.write("README.md", "x\n");
    clone.commit("main");
    clone.git(&["remote", "add", "origin", &url]);
    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "alice".into());
        fake.pulls.insert(3, FakePull::open(pr_head));
    }
    World {
        clone,
        _origin: origin,
        github,
    }
}

fn landed(pack: &Value, dir: &str, files: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut all = vec![(
        format!("{dir}/pack.json"),
        serde_json::to_vec_pretty(pack).expect("json"),
    )];
    for (path, bytes) in files {
        all.push((format!("{dir}/artifacts/{path}"), bytes.to_vec()));
    }
    all
}

const AUTH: &str = "proof/7/1111111111111111111111111111111111111111/authoritative";

fn standard(pack: &Value) -> Vec<(String, Vec<u8>)> {
    let mut files = landed(
        pack,
        AUTH,
        &[
            ("evidence/criterion-1.jsonl", EVIDENCE_1),
            ("evidence/criterion-2.jsonl", EVIDENCE_2),
        ],
    );
    files.push(("specs/7/ready.md".into(), snapshot(GOAL).into_bytes()));
    files
}

/// `aayu proof verify 7 …` in the world's clone, with the fake GitHub.
fn proof_verify(w: &World, extra: &[&str]) -> common::Run {
    run(common::aayu_in(w.clone.root())
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", &w.github.url)
        .env("GH_REPO", "octo/shop")
        .args(["proof", "verify", "7"])
        .args(extra))
}

fn world_of(files: &[(String, Vec<u8>)], pr_head: &str) -> World {
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(p, b)| (p.as_str(), b.clone())).collect();
    world(&files, pr_head)
}

fn verify(files: Vec<(String, Vec<u8>)>, pr_head: &str) -> (i32, Value, String) {
    let w = world_of(&files, pr_head);
    let out = proof_verify(&w, &["--json"]);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    w.github.assert_clean();
    (out.code, report, out.stderr)
}

fn failures(report: &Value) -> Vec<(String, String)> {
    report["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            (
                f["check"].as_str().expect("check").to_string(),
                f["subject"].as_str().expect("subject").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_good_authoritative_pack_verifies() {
    let (code, report, stderr) = verify(
        standard(&good_pack("authoritative", "2026-11-29T10:00:00Z")),
        HEAD,
    );
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["verifies"], true);
    assert_eq!(report["pack"], format!("{AUTH}/pack.json"));
    assert_eq!(report["artifacts_checked"], 2);
    assert_eq!(report["artifacts_not_stored"], 0);
    assert_eq!(report["floors_hold"], true);
}

/// A pack of the six floors aayu writes, `coverage` first with its report stored, verifies and its floors
/// hold; the same pack with the coverage floor failed verifies and says its floors do not hold.
#[test]
fn a_six_floor_pack_with_a_coverage_report_verifies() {
    let report = b"{\"schema_version\":1,\"base\":\"b\",\"head\":\"h\",\"tool\":\"aayudha diff coverage (llvm-cov)\",\"changed_executable\":4,\"covered\":4,\"files\":[]}\n";
    let floor = |name: &str, result: &str| json!({"floor": name, "result": result, "value": 0, "threshold": 0, "tool": "t", "version": "v", "detail": "", "network": "isolated"});
    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    pack["checks"] = json!([
        {"floor": "coverage", "result": "pass", "value": 100, "threshold": 90, "tool": "aayudha diff coverage (llvm-cov)", "version": "rustc 1.95.0, llvm-cov 22.1.8", "detail": "4 of 4 changed executable lines covered (llvm-cov)", "network": "isolated"},
        floor("feature-map", "pass"),
        floor("weakening", "pass"),
        floor("behaviour", "pass"),
        floor("tests", "pass"),
        floor("red-on-base", "pass"),
    ]);
    pack["artifacts"]
        .as_array_mut()
        .expect("artifacts")
        .push(artifact("reports/coverage.json", report));
    let files = |pack: &Value| {
        let mut files = standard(pack);
        files.push((
            format!("{AUTH}/artifacts/reports/coverage.json"),
            report.to_vec(),
        ));
        files
    };
    let (code, out, stderr) = verify(files(&pack), HEAD);
    assert_eq!(code, 0, "{out:#}\n{stderr}");
    assert_eq!(out["verifies"], true);
    assert_eq!(out["artifacts_checked"], 3);
    assert_eq!(out["floors_hold"], true);
    pack["checks"][0]["result"] = json!("fail");
    let (_, out, stderr) = verify(files(&pack), HEAD);
    assert_eq!(out["verifies"], true, "{out:#}\n{stderr}");
    assert_eq!(out["floors_hold"], false, "{out:#}");
}

#[test]
fn the_plain_report_names_each_failure() {
    let mut files = standard(&good_pack("authoritative", "2026-11-29T10:00:00Z"));
    files[1].1 = b"tampered\n".to_vec();
    let w = world(
        &files
            .iter()
            .map(|(p, b)| (p.as_str(), b.clone()))
            .collect::<Vec<_>>(),
        HEAD,
    );
    let out = proof_verify(&w, &[]);
    // Both hashes are named: the redacted snapshot holds the shape, this the values.
    assert!(
        out.stdout.contains(&format!(
            "sha256 expected {}, actual {}",
            aayudha::hash::bytes(EVIDENCE_1),
            aayudha::hash::bytes(b"tampered\n")
        )),
        "{}",
        out.stdout
    );
    crate::aayu_snapshot!("proof_verify_tampered", out);
}

#[test]
fn a_missing_artifact_and_a_wrong_size_are_named() {
    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    pack["artifacts"][1]["size"] = json!(999);
    let mut files = standard(&pack);
    files.remove(1); // criterion-1's bytes
    let (code, report, _) = verify(files, HEAD);
    assert_eq!(code, 4);
    assert_eq!(
        failures(&report),
        [
            (
                "artifact-missing".to_string(),
                "evidence/criterion-1.jsonl".to_string()
            ),
            (
                "artifact-size".to_string(),
                "evidence/criterion-2.jsonl".to_string()
            ),
        ]
    );
}

#[test]
fn duplicate_and_escaping_paths_are_refused() {
    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    let first = pack["artifacts"][0].clone();
    pack["artifacts"].as_array_mut().expect("a").push(first);
    let (code, report, _) = verify(standard(&pack), HEAD);
    assert_eq!(code, 4);
    // One failure among the report's (a set).
    assert!(
        failures(&report).contains(&("duplicate-path".into(), "evidence/criterion-1.jsonl".into())),
        "{report:#}"
    );
    let mut escaping = good_pack("authoritative", "2026-11-29T10:00:00Z");
    escaping["artifacts"][1]["path"] = json!("../../specs/7/ready.md");
    let w = world(
        &standard(&escaping)
            .iter()
            .map(|(p, b)| (p.as_str(), b.clone()))
            .collect::<Vec<_>>(),
        HEAD,
    );
    // The escaping path is named.
    crate::aayu_snapshot!("proof_verify_escaping_path", proof_verify(&w, &["--json"]));
}

#[test]
fn evidence_and_criteria_must_match_the_ready_snapshot() {
    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    pack["criteria"] = json!([
        {"id": 1, "evidence": ["evidence/criterion-1.jsonl", "evidence/nowhere.jsonl"]},
        {"id": 2, "evidence": []},
        {"id": 9, "evidence": ["evidence/criterion-2.jsonl"]}
    ]);
    let (code, report, _) = verify(standard(&pack), HEAD);
    assert_eq!(code, 4);
    let found = failures(&report);
    // Each is among the report's failures (a set).
    for expected in [
        ("evidence-without-artifact", "criterion 1"),
        ("criterion-without-evidence", "criterion 2"),
        ("criterion-outside-ready", "criterion 9"),
    ] {
        assert!(
            found.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} in {found:?}"
        );
    }
}

#[test]
fn a_ready_snapshot_edited_after_freeze_and_another_goal_do_not_verify() {
    let mut files = standard(&good_pack("authoritative", "2026-11-29T10:00:00Z"));
    let edited = snapshot(GOAL).replace("are skipped", "are ignored");
    files.last_mut().expect("snapshot").1 = edited.into_bytes();
    let (code, report, _) = verify(files, HEAD);
    assert_eq!(code, 4);
    assert_eq!(
        failures(&report),
        [("ready-snapshot".into(), "ready.md".into())]
    );
    let detail = report["failures"][0]["detail"].as_str().expect("detail");
    insta::assert_snapshot!(
        "proof_verify_snapshot_edited",
        crate::common::redact(detail)
    );

    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    pack["completion_goal_hash"] = json!(aayudha::hash::bytes(b"another goal"));
    let (code, report, _) = verify(standard(&pack), HEAD);
    assert_eq!(code, 4);
    assert_eq!(
        failures(&report),
        [("completion-goal-hash".into(), "completion_goal_hash".into())]
    );
}

#[test]
fn a_pull_request_whose_head_moved_does_not_verify() {
    let (code, report, _) = verify(
        standard(&good_pack("authoritative", "2026-11-29T10:00:00Z")),
        &"2".repeat(40),
    );
    assert_eq!(code, 4);
    assert_eq!(
        failures(&report),
        [("pr-head".into(), "pr_head_sha".into())]
    );
}

#[test]
fn the_newest_authoritative_pack_wins_over_a_newer_advisory_one() {
    let mut files = standard(&good_pack("authoritative", "2026-11-29T10:00:00Z"));
    let mut advisory = good_pack("advisory", "2026-11-30T10:00:00Z");
    advisory["criteria"] = json!([{"id": 1, "evidence": []}]);
    files.extend(landed(
        &advisory,
        "proof/7/1111111111111111111111111111111111111111/advisory/20261130T100000Z",
        &[],
    ));
    let (code, report, _) = verify(files.clone(), HEAD);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["authority"], "authoritative");
    // Without an authoritative pack, the newest advisory one is verified.
    let only_advisory: Vec<_> = files
        .into_iter()
        .filter(|(p, _)| !p.contains("/authoritative/"))
        .collect();
    let (code, report, _) = verify(only_advisory, HEAD);
    assert_eq!(code, 4);
    assert_eq!(report["authority"], "advisory");
}

#[test]
fn old_packs_count_tombstones_and_lfs_media_as_not_stored() {
    let mut pack = good_pack("authoritative", "2026-11-29T10:00:00Z");
    let video = b"a recording";
    pack["artifacts"].as_array_mut().expect("a").extend([
        json!({"path": "media/run.webm", "kind": "recording", "sha256": aayudha::hash::bytes(video), "size": video.len(), "store": "lfs"}),
        json!({"path": "media/old.png", "kind": "screenshot", "sha256": aayudha::hash::bytes(b"png"), "size": 3, "store": "git",
               "tombstone": {"purged_at": "2026-06-01T00:00:00Z", "reason": "retention"}}),
    ]);
    let pointer = format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        aayudha::hash::bytes(video),
        video.len()
    );
    let mut files = standard(&pack);
    files.push((
        format!("{AUTH}/artifacts/media/run.webm"),
        pointer.into_bytes(),
    ));
    let (code, report, stderr) = verify(files, HEAD);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["artifacts_checked"], 2);
    assert_eq!(report["artifacts_not_stored"], 2, "{report:#}");
}

#[test]
fn a_story_without_a_pack_does_not_verify() {
    let files = [("specs/7/ready.md".to_string(), snapshot(GOAL).into_bytes())];
    let w = world_of(&files, HEAD);
    crate::aayu_snapshot!("proof_verify_no_pack", proof_verify(&w, &[]));
}

// Provenance (issue 41): what ship lands beside an authoritative pack — the gate's own pack.json and the
// Sigstore bundle it verified — checked against the ship record.

/// The test trusted root's file in the working tree, and the configuration naming it.
const TRUST: &str = "trust/root.jsonl";
const TRUSTED: &str = "[proof]\ntrusted_root = \"trust/root.jsonl\"\n";

/// The SAN of the gate's signature in `octo/shop`.
const SAN: &str = "https://github.com/octo/shop/.github/workflows/aayudha.yml@refs/heads/main";

fn pretty(v: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(v).expect("json");
    bytes.push(b'\n');
    bytes
}

/// The options of the gate's good bundle in `octo/shop`, run 77 attempt 1, signing `pack_sha256`.
fn gate_options(pack_sha256: &str) -> sigstore::Options {
    sigstore::Gate {
        server: "https://github.com",
        repo: "octo/shop",
        repository_id: 1001,
        owner_id: 2002,
        workflow_path: ".github/workflows/aayudha.yml",
        branch: "main",
        run: 77,
        attempt: 1,
        pack_sha256,
    }
    .options()
}

/// What ship lands for story 7: the authoritative pack, the gate's pack.json, the bundle and the record.
struct Shipped {
    landed: Value,
    gate: Vec<u8>,
    bundle: Option<Vec<u8>>,
    record: Value,
}

/// The ship record of `gate`'s bytes and of the bundle made with `o` (`None`: ship verified none).
fn record(gate: &[u8], bundle: Option<(&[u8], &sigstore::Options)>) -> Value {
    let attestation = bundle.map(|(bytes, o)| {
        json!({
            "bundle_sha256": aayudha::hash::bytes(bytes), "instance": "public-good", "san": o.san,
            "run_invocation": o.claims[&21], "build_config_digest": o.claims[&19],
            "source_digest": o.claims[&13], "signed_at": "2025-06-01T12:01:00Z"
        })
    });
    json!({
        "schema_version": 1, "story": 7, "pr": 3, "head": HEAD, "gate_run": 77, "gate_run_attempt": 1,
        "artifact": 5, "pack_sha256": aayudha::hash::bytes(gate), "approver": "bob", "solo_bypass": false,
        "writer": "aayudha-bot", "attestation": attestation
    })
}

/// Story 7 shipped from the gate's run 77, its bundle made with `o` over the gate pack's digest (`o` is
/// given that digest): the landed pack differs from the gate's in `authority`, and in a media artifact's
/// `store`, `object` and `tombstone`, as ship makes it.
fn shipped_with(options: impl Fn(&str) -> sigstore::Options) -> Shipped {
    let shot = b"png";
    let mut gate = good_pack("advisory", "2026-11-29T10:00:00Z");
    gate["artifacts"].as_array_mut().expect("artifacts").push(
        json!({"path": "media/shot.png", "kind": "screenshot", "sha256": aayudha::hash::bytes(shot), "size": 3, "store": "none"}),
    );
    let mut landed = gate.clone();
    landed["authority"] = json!({"kind": "authoritative", "workflow": ".github/workflows/aayudha.yml", "run_id": 77, "writer": "aayudha-bot"});
    landed["artifacts"][2]["store"] = json!("bucket");
    landed["artifacts"][2]["object"] = json!("s3://media/proof/7/shot.png");
    landed["artifacts"][2]["tombstone"] =
        json!({"purged_at": "2027-01-01T00:00:00Z", "reason": "retention"});
    let gate = pretty(&gate);
    let o = options(&aayudha::hash::bytes(&gate));
    let bundle = sigstore::bundle(&o);
    Shipped {
        record: record(&gate, Some((&bundle, &o))),
        landed,
        gate,
        bundle: Some(bundle),
    }
}

fn shipped() -> Shipped {
    shipped_with(gate_options)
}

impl Shipped {
    fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut files = standard(&self.landed);
        files.push((format!("{AUTH}/gate/pack.json"), self.gate.clone()));
        if let Some(bundle) = &self.bundle {
            files.push((
                format!("{AUTH}/gate/attestation.sigstore.json"),
                bundle.clone(),
            ));
        }
        files.push(("ship/7.json".into(), pretty(&self.record)));
        files
    }

    /// `aayu proof verify 7 …` on this ledger, `config` the working tree's configuration and the test
    /// trusted root at [`TRUST`].
    fn run(&self, config: &str, extra: &[&str]) -> common::Run {
        let w = world_of(&self.files(), HEAD);
        w.clone.write(TRUST, sigstore::trusted_root_json());
        w.clone.write(".aayudha/config.toml", config);
        let out = proof_verify(&w, extra);
        w.github.assert_clean();
        out
    }

    /// [`Shipped::run`] with `--json` and the test root: the exit code and the report.
    fn report(&self) -> (i32, Value) {
        let out = self.run(TRUSTED, &["--json"]);
        let report = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
        (out.code, report)
    }
}

/// The report's provenance when it fails: (field, actual, expected).
fn provenance_failure(report: &Value) -> (String, String, String) {
    let p = &report["provenance"];
    assert_eq!(p["state"], "fails", "{report:#}");
    let s = |k: &str| p[k].as_str().expect(k).to_string();
    (s("field"), s("actual"), s("expected"))
}

#[test]
fn a_shipped_pack_with_its_attestation_verifies() {
    let s = shipped();
    // What ship rewrites differs, and passes.
    assert_ne!(s.landed["authority"], json!({"kind": "advisory"}));
    let (code, report) = s.report();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verifies"], true);
    assert_eq!(report["failures"], json!([]));
    assert_eq!(
        report["provenance"],
        json!({"state": "verified", "san": SAN, "run": 77, "signed_at": "2025-06-01T12:01:00Z"})
    );
    let out = s.run(TRUSTED, &[]);
    assert!(
        out.stdout
            .contains(&format!("  provenance: verified ({SAN}, run 77)\n")),
        "{}",
        out.stdout
    );
    crate::aayu_snapshot!("proof_verify_provenance_verified", out);
}

#[test]
fn packs_without_a_signature_say_provenance_none() {
    // An old pack: no gate/ folder, no ship record.
    let (code, report, _) = verify(
        standard(&good_pack("authoritative", "2026-11-29T10:00:00Z")),
        HEAD,
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["provenance"], json!({"state": "none"}));
    // Shipped without an attestation: gate/pack.json is checked, the record's attestation is null.
    let mut s = shipped();
    s.bundle = None;
    s.record = record(&s.gate, None);
    let (code, report) = s.report();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["provenance"], json!({"state": "none"}));
    // An advisory pack is not looked at for provenance, even beside a record, a gate pack and a bundle.
    let mut s = shipped();
    s.landed["authority"] = json!({"kind": "advisory"});
    let advisory = format!("proof/7/{HEAD}/advisory/20261129T100000Z");
    let files: Vec<(String, Vec<u8>)> = s
        .files()
        .into_iter()
        .map(|(p, b)| (p.replace(AUTH, &advisory), b))
        .collect();
    let (code, report, _) = verify(files, HEAD);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["pack"], format!("{advisory}/pack.json"));
    assert_eq!(report["provenance"], json!({"state": "none"}));
}

#[test]
fn a_gate_pack_that_is_not_the_records_does_not_verify() {
    let mut s = shipped();
    // The same pack, other bytes: only its digest differs from the record's.
    s.gate.extend_from_slice(b"\n");
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    assert_eq!(
        failures(&report),
        [("gate-pack".into(), "gate/pack.json".into())]
    );
    assert_eq!(
        report["failures"][0]["detail"],
        format!(
            "sha256 {}, not the ship record's pack_sha256 {}",
            aayudha::hash::bytes(&s.gate),
            s.record["pack_sha256"].as_str().expect("sha")
        )
    );
}

#[test]
fn a_landed_pack_that_differs_from_the_gates_names_each_field() {
    let mut s = shipped();
    s.landed["checks"][0]["result"] = json!("fail");
    s.landed["model"] = json!("m");
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    let details: Vec<&str> = report["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            assert_eq!(
                (&f["check"], &f["subject"]),
                (&json!("gate-pack"), &json!("pack.json"))
            );
            f["detail"].as_str().expect("detail")
        })
        .collect();
    assert_eq!(
        details,
        [
            "differs from gate/pack.json at /model: \"m\", not absent",
            "differs from gate/pack.json at /checks/0/result: \"fail\", not \"pass\"",
        ]
    );
    let out = s.run(TRUSTED, &[]);
    assert!(
        out.stdout.contains(
            "gate-pack pack.json: differs from gate/pack.json at /checks/0/result: \"fail\", not \"pass\""
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_recorded_san_that_is_not_the_bundles_fails() {
    let mut s = shipped();
    let other = "https://github.com/octo/shop/.github/workflows/release.yml@refs/heads/main";
    s.record["attestation"]["san"] = json!(other);
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    assert_eq!(report["verifies"], false);
    assert_eq!(
        provenance_failure(&report),
        ("san".into(), SAN.into(), other.into())
    );
    let out = s.run(TRUSTED, &[]);
    assert_eq!(out.code, 4);
    assert!(
        out.stdout.contains(&format!(
            "  does not verify: its provenance fails\n  provenance: fails: san: {SAN}, not {other}\n"
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn a_bundle_signed_on_pull_request_fails() {
    let s = shipped_with(|sha| {
        let mut o = gate_options(sha);
        o.claims.insert(20, "pull_request".to_string());
        o
    });
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    assert_eq!(
        provenance_failure(&report),
        (
            "trigger".into(),
            "pull_request".into(),
            "pull_request_target".into()
        )
    );
}

#[test]
fn a_bundle_signed_for_another_digest_fails() {
    let other = "ab".repeat(32);
    let s = shipped_with(|_| gate_options(&other));
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    let (field, actual, _) = provenance_failure(&report);
    assert_eq!(field, "signature");
    assert_eq!(
        actual,
        format!(
            "attestation: no subject of the statement has sha256 {}",
            aayudha::hash::bytes(&s.gate)
        )
    );
    let out = s.run(TRUSTED, &[]);
    assert!(
        out.stdout
            .contains(&format!("  provenance: fails: signature: {actual}\n")),
        "{}",
        out.stdout
    );
}

#[test]
fn a_recorded_attestation_without_its_bundle_fails() {
    let mut s = shipped();
    s.bundle = None;
    let out = s.run(TRUSTED, &[]);
    assert_eq!(out.code, 4, "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "  provenance: fails: gate/attestation.sigstore.json: missing, not present\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn the_embedded_root_refuses_the_test_bundle_with_the_stale_root_hint() {
    let out = shipped().run("", &["--json"]);
    assert_eq!(out.code, 4, "{}", out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let (field, actual, _) = provenance_failure(&report);
    assert_eq!(field, "signature");
    assert!(
        actual.starts_with("attestation: does not verify: ")
            && actual.ends_with(
                "the trusted root may be out of date: update aayu, or set `[proof] trusted_root`"
            ),
        "{actual}"
    );
}

#[test]
fn a_trusted_root_that_does_not_read_is_a_usage_error_naming_it() {
    let s = shipped();
    let w = world_of(&s.files(), HEAD);
    w.clone.write(".aayudha/config.toml", TRUSTED);
    let missing = proof_verify(&w, &[]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("`trust/root.jsonl`"),
        "{}",
        missing.stderr
    );
    w.clone.write(
        TRUST,
        format!(
            "{}\n{{\"mediaType\": 3}}\n",
            sigstore::trusted_root_json().trim_end()
        ),
    );
    let bad_line = proof_verify(&w, &[]);
    assert_eq!(bad_line.code, 2, "{}", bad_line.stderr);
    assert!(
        bad_line
            .stderr
            .contains("the trusted root `trust/root.jsonl`: line 2 does not parse: "),
        "{}",
        bad_line.stderr
    );
}

#[test]
fn a_self_hosted_runner_passes_only_with_the_setting_and_an_attempt_only_up_to_the_records() {
    let self_hosted = shipped_with(|sha| {
        let mut o = gate_options(sha);
        o.claims.insert(11, "self-hosted".to_string());
        o
    });
    let (code, report) = self_hosted.report();
    assert_eq!(code, 4, "{report:#}");
    assert_eq!(
        provenance_failure(&report),
        (".11".into(), "self-hosted".into(), "github-hosted".into())
    );
    let allowed = self_hosted.run(
        &format!("{TRUSTED}self_hosted_runners = true\n"),
        &["--json"],
    );
    assert_eq!(allowed.code, 0, "{}", allowed.stdout);

    let second = "https://github.com/octo/shop/actions/runs/77/attempts/2";
    let mut s = shipped_with(|sha| {
        let mut o = gate_options(sha);
        o.claims.insert(21, second.to_string());
        o
    });
    let (code, report) = s.report();
    assert_eq!(code, 4, "{report:#}");
    assert_eq!(
        provenance_failure(&report),
        (
            ".21".into(),
            second.into(),
            "https://github.com/octo/shop/actions/runs/77/attempts/1".into()
        )
    );
    s.record["gate_run_attempt"] = json!(2);
    let (code, report) = s.report();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["provenance"]["state"], "verified");
}
