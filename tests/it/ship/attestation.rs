//! `aayu ship` and the gate's signed attestation (issue 41), against the fake GitHub and bundles of the test
//! Sigstore domain (`support/sigstore.rs`), whose root the default branch names as `[proof] trusted_root`:
//! a good bundle lands beside the gate's own pack.json; every bundle that is not the gate's own signature
//! is refused with the field and both values; one good bundle among bad ones is enough; `require`, `check`
//! and `off`; the token never reaches a `bundle_url`; the pack's base must be on the landing branch.

use super::{BASE, GATE, HEAD, REPO, World, gate_run, on_origin, pack_json, ship, world, zip};
use crate::support::fake_github::{self, FakeRun};
use crate::support::sigstore::{self, Gate, Options};
use serde_json::{Value, json};

/// The gate run every test here ships from.
const RUN: u64 = 60;

/// Where the test root lives on the default branch.
const ROOT_PATH: &str = ".aayudha/sigstore-test-root.jsonl";

/// The repository record's ids, as the fake answers them.
fn ids() -> (u64, u64) {
    let record = fake_github::example("repos/get");
    (
        record["id"].as_u64().expect("id"),
        record["owner"]["id"].as_u64().expect("owner id"),
    )
}

/// The options of the gate's own good bundle over `sha`: `octo/shop`'s gate workflow on `main`, run
/// [`RUN`] attempt 1.
fn good(sha: &str) -> Options {
    let (repository_id, owner_id) = ids();
    Gate {
        server: "https://github.com",
        repo: REPO,
        repository_id,
        owner_id,
        workflow_path: GATE,
        branch: "main",
        run: RUN,
        attempt: 1,
        pack_sha256: sha,
    }
    .options()
}

/// The good options with some claims replaced.
fn with(sha: &str, changes: &[(u32, &str)]) -> Options {
    let mut o = good(sha);
    for (arc, value) in changes {
        o.claims.insert(*arc, (*value).to_string());
    }
    o
}

/// A world whose default branch sets `[proof]` to `settings` and names the test root; the gate run
/// [`RUN`] with its pack, its status, and these attestation items for its digest. The pack's digest.
fn attested(settings: &str, items: impl FnOnce(&str) -> Vec<Value>) -> (World, String) {
    let w = world();
    let (bytes, sha) = zip(&pack_json(3, HEAD, "pass"), false, false);
    {
        let mut fake = w.github.state.lock().expect("lock");
        fake.files.insert(
            ("main".into(), ".aayudha/config.toml".into()),
            format!("[proof]\ntrusted_root = \"{ROOT_PATH}\"\n{settings}").into_bytes(),
        );
        fake.files.insert(
            ("main".into(), ROOT_PATH.into()),
            format!("{}\n", sigstore::trusted_root_json()).into_bytes(),
        );
        let listed = items(&sha);
        if !listed.is_empty() {
            fake.attestations.insert(format!("sha256:{sha}"), listed);
        }
    }
    gate_run(
        &w,
        FakeRun::gate(RUN, "aayudha-merge-gate.yml"),
        (bytes, sha.clone()),
        false,
    );
    (w, sha)
}

/// An attestation item with the bundle inline.
fn inline(o: &Options) -> Value {
    let bundle: Value = serde_json::from_slice(&sigstore::bundle(o)).expect("bundle json");
    json!({"bundle": bundle, "repository_id": ids().0})
}

/// The lines ship says of run [`RUN`].
fn run_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with(&format!("run {RUN}: ")))
        .collect()
}

/// Ships and expects the run passed over with exactly these lines (after `run <id>: `), nothing landed.
fn refused(w: &World, lines: &[String]) {
    let out = ship(w, &["3"]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    let said: Vec<String> = run_lines(&out.stderr)
        .iter()
        .map(|l| l[format!("run {RUN}: ").len()..].to_string())
        .collect();
    assert_eq!(said, lines, "{}", out.stderr);
    assert_eq!(on_origin(w, "ship/7.json"), None);
    assert!(w.github.state.lock().expect("lock").merged.is_empty());
}

/// The workflow URI of the gate in `octo/shop`.
fn workflow() -> String {
    format!("https://github.com/{REPO}/{GATE}@refs/heads/main")
}

#[test]
fn a_good_bundle_lands_beside_the_gates_own_pack_and_the_record_names_it() {
    let (w, sha) = attested("", |sha| vec![inline(&good(sha))]);
    let bundle = sigstore::bundle(&good(&sha));
    crate::aayu_snapshot!("ship_attested_dry_run", ship(&w, &["3", "--dry-run"]));
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "provenance: verified ({}, signed 2025-06-01T12:01:00Z)",
            workflow()
        )),
        "{}",
        out.stdout
    );
    let dir = format!("proof/7/{HEAD}/authoritative");
    // The gate's bytes, unchanged: the digest the attestation signs and the record names.
    let gate_pack = on_origin(&w, &format!("{dir}/gate/pack.json")).expect("gate/pack.json");
    assert_eq!(aayudha::hash::bytes(gate_pack.as_bytes()), sha);
    let landed_bundle =
        on_origin(&w, &format!("{dir}/gate/attestation.sigstore.json")).expect("bundle");
    let landed: Value = serde_json::from_str(&landed_bundle).expect("json");
    let made: Value = serde_json::from_slice(&bundle).expect("json");
    assert_eq!(landed, made);
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("record")).expect("json");
    let claims = sigstore::gate_claims();
    assert_eq!(
        record["attestation"],
        json!({
            "bundle_sha256": aayudha::hash::bytes(landed_bundle.as_bytes()),
            "instance": "public-good",
            "san": workflow(),
            "run_invocation": format!("https://github.com/{REPO}/actions/runs/{RUN}/attempts/1"),
            "build_config_digest": claims[&19],
            "source_digest": claims[&13],
            "signed_at": "2025-06-01T12:01:00Z",
        })
    );
    super::valid_record(&record);
    // `proof verify` re-verifies the landed bundle against the landed gate bytes, with the root the
    // working tree names.
    w.clone.write(
        ".aayudha/config.toml",
        format!("[proof]\ntrusted_root = \"{ROOT_PATH}\"\n"),
    );
    w.clone
        .write(ROOT_PATH, format!("{}\n", sigstore::trusted_root_json()));
    let verified = crate::common::run(
        crate::common::aayu_in(w.clone.root())
            .env("GITHUB_TOKEN", "t")
            .env("GITHUB_API_URL", &w.github.url)
            .env("GH_REPO", REPO)
            .args(["proof", "verify", "7"]),
    );
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    assert!(
        verified
            .stdout
            .contains(&format!("provenance: verified ({}, run {RUN})", workflow())),
        "{}",
        verified.stdout
    );
    w.github.assert_clean();
}

/// How a case makes its bundle's options from the pack's digest.
type MakeOptions = Box<dyn Fn(&str) -> Options>;

#[test]
fn every_bundle_that_is_not_the_gates_own_signature_is_refused_with_the_field_and_both_values() {
    let release =
        format!("https://github.com/{REPO}/.github/workflows/release.yml@refs/heads/main");
    let fork = format!("https://github.com/mallory/shop/{GATE}@refs/heads/main");
    let called = "https://github.com/acme/tools/.github/workflows/sign.yml@refs/heads/main";
    let (repository_id, owner_id) = ids();
    let cases: Vec<(&str, MakeOptions, String)> = vec![
        (
            "another pack's digest",
            Box::new(|_| good(&"ab".repeat(32))),
            String::new(),
        ),
        (
            "another workflow of the repository",
            Box::new({
                let release = release.clone();
                move |sha| {
                    let mut o = with(sha, &[(9, &release), (18, &release)]);
                    o.san = release.clone();
                    o
                }
            }),
            format!("SAN is {release}, not {}", workflow()),
        ),
        (
            "the same workflow path in a fork",
            Box::new({
                let fork = fork.clone();
                move |sha| {
                    let mut o = with(
                        sha,
                        &[
                            (9, &fork),
                            (12, "https://github.com/mallory/shop"),
                            (15, "3003"),
                            (17, "4004"),
                            (18, &fork),
                        ],
                    );
                    o.san = fork.clone();
                    o
                }
            }),
            format!(".12 is https://github.com/mallory/shop, not https://github.com/{REPO}"),
        ),
        (
            "the same repository path, another repository id",
            Box::new(|sha| with(sha, &[(15, "3003")])),
            format!(".15 is 3003, not {repository_id}"),
        ),
        (
            "another owner id",
            Box::new(|sha| with(sha, &[(17, "4004")])),
            format!(".17 is 4004, not {owner_id}"),
        ),
        (
            ".9 alone names another workflow",
            Box::new({
                let release = release.clone();
                move |sha| with(sha, &[(9, &release)])
            }),
            format!(".9 is {release}, not {}", workflow()),
        ),
        (
            "another predicate type",
            Box::new(|sha| {
                let mut o = good(sha);
                o.predicate_type = "https://example.com/custom/v1".to_string();
                o
            }),
            "predicate type is https://example.com/custom/v1, not https://slsa.dev/provenance/v1"
                .to_string(),
        ),
        (
            "an attempt after the run's latest",
            Box::new(|sha| {
                with(
                    sha,
                    &[(
                        21,
                        "https://github.com/octo/shop/actions/runs/60/attempts/2",
                    )],
                )
            }),
            format!(
                ".21 is https://github.com/octo/shop/actions/runs/60/attempts/2, not https://github.com/{REPO}/actions/runs/{RUN}/attempts/1"
            ),
        ),
        (
            "control characters and a forged line in a claim",
            Box::new(|sha| with(sha, &[(20, "push\u{1b}[2J\nrun 61: qualifies")])),
            "trigger: push\\u{1b}[2J\\nrun 61: qualifies, not pull_request_target".to_string(),
        ),
        (
            "a SAN that differs from .18 (a reusable workflow)",
            Box::new(move |sha| {
                let mut o = with(sha, &[(9, called)]);
                o.san = called.to_string();
                o
            }),
            format!("SAN is {called}, not {}", workflow()),
        ),
        (
            "trigger pull_request",
            Box::new(|sha| with(sha, &[(20, "pull_request")])),
            "trigger: pull_request, not pull_request_target".to_string(),
        ),
        (
            "a ref that is not the default branch",
            Box::new(|sha| with(sha, &[(14, "refs/heads/feature")])),
            ".14 is refs/heads/feature, not refs/heads/main".to_string(),
        ),
        (
            "another run",
            Box::new(|sha| {
                with(
                    sha,
                    &[(
                        21,
                        "https://github.com/octo/shop/actions/runs/61/attempts/1",
                    )],
                )
            }),
            format!(
                ".21 is https://github.com/octo/shop/actions/runs/61/attempts/1, not https://github.com/{REPO}/actions/runs/{RUN}/attempts/1"
            ),
        ),
    ];
    for (name, options, line) in cases {
        let (w, sha) = attested("", |sha| vec![inline(&options(sha))]);
        let line = if line.is_empty() {
            format!("attestation 1 of 1: no subject of the statement has sha256 {sha}")
        } else {
            format!("attestation 1 of 1: {line}")
        };
        eprintln!("case: {name}");
        refused(&w, &[line]);
    }
}

#[test]
fn a_bundle_that_does_not_verify_is_refused_with_why() {
    let cases: Vec<(&str, Options, &str)> = vec![
        (
            "a CA outside the root",
            Options {
                foreign_ca: true,
                ..Options::good()
            },
            "certificate chain is invalid",
        ),
        (
            "an entry without a SET",
            Options {
                set: false,
                ..Options::good()
            },
            "no verified timestamp",
        ),
        (
            "a SET over another integratedTime",
            Options {
                set_time_shift: 1,
                ..Options::good()
            },
            "SET verification failed",
        ),
        (
            "a leaf without an SCT",
            Options {
                sct: false,
                ..Options::good()
            },
            "certificate is missing SCT extension",
        ),
    ];
    for (name, broken, wanted) in cases {
        let (w, _) = attested("", |sha| {
            let mut o = good(sha);
            o.foreign_ca = broken.foreign_ca;
            o.set = broken.set;
            o.set_time_shift = broken.set_time_shift;
            o.sct = broken.sct;
            vec![inline(&o)]
        });
        let out = ship(&w, &["3"]);
        assert_eq!(out.code, 4, "{name}: {}", out.stderr);
        let lines = run_lines(&out.stderr);
        assert_eq!(lines.len(), 1, "{name}: {}", out.stderr);
        assert!(
            lines[0].starts_with(&format!("run {RUN}: attestation 1 of 1: does not verify: ")),
            "{name}: {}",
            lines[0]
        );
        assert!(lines[0].contains(wanted), "{name}: {}", lines[0]);
        assert_eq!(on_origin(&w, "ship/7.json"), None, "{name}");
    }
    // A bundle of GitHub's private instance is named as such.
    let (w, _) = attested("", |sha| {
        let mut o = good(sha);
        o.ca_org = "GitHub, Inc.".to_string();
        o.foreign_ca = true;
        vec![inline(&o)]
    });
    refused(
        &w,
        &["attestation 1 of 1: signed by GitHub's private Sigstore instance, not verified by this version".to_string()],
    );
}

#[test]
fn a_self_hosted_runner_is_refused_unless_the_setting_allows_it() {
    let (w, _) = attested("", |sha| vec![inline(&with(sha, &[(11, "self-hosted")]))]);
    refused(
        &w,
        &["attestation 1 of 1: .11 is self-hosted, not github-hosted".to_string()],
    );
    let (w, _) = attested("self_hosted_runners = true\n", |sha| {
        vec![inline(&with(sha, &[(11, "self-hosted")]))]
    });
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn attempt_2_of_the_run_and_one_good_bundle_among_bad_ones_qualify() {
    let (w, _) = attested("", |sha| {
        vec![
            inline(&with(sha, &[(20, "push")])),
            inline(&with(
                sha,
                &[(
                    21,
                    &format!("https://github.com/{REPO}/actions/runs/{RUN}/attempts/2"),
                )],
            )),
        ]
    });
    // The run's latest attempt is 2: a bundle of attempt 2 is the gate's.
    w.github
        .state
        .lock()
        .expect("lock")
        .runs
        .iter_mut()
        .for_each(|r| {
            r.run_attempt = 2;
            r.earlier_attempts = vec![("completed".into(), Some("failure".into()))];
        });
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("record")).expect("json");
    assert_eq!(
        record["attestation"]["run_invocation"],
        format!("https://github.com/{REPO}/actions/runs/{RUN}/attempts/2")
    );
}

#[test]
fn a_bundle_url_is_fetched_without_the_token_and_snappy_decoded() {
    let (w, sha) = attested("attestation = \"require\"\n", |_| Vec::new());
    let body = snap::raw::Encoder::new()
        .compress_vec(&sigstore::bundle(&good(&sha)))
        .expect("snappy");
    let url = w.github.bundle_url("one");
    {
        let mut fake = w.github.state.lock().expect("lock");
        fake.bundle_blobs.insert("one".into(), body);
        fake.attestations.insert(
            format!("sha256:{sha}"),
            vec![
                // An address that is not HTTPS is refused without being fetched.
                json!({"bundle": null, "bundle_url": "http://blob.example/two"}),
                json!({"bundle": null, "bundle_url": url}),
            ],
        );
    }
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        on_origin(
            &w,
            &format!("proof/7/{HEAD}/authoritative/gate/attestation.sigstore.json")
        )
        .is_some()
    );
    assert_eq!(w.github.state.lock().expect("lock").auth_to_blob, 0);
    // When none verifies, the address that is not HTTPS is named.
    let (w, sha) = attested("", |_| Vec::new());
    w.github.state.lock().expect("lock").attestations.insert(
        format!("sha256:{sha}"),
        vec![json!({"bundle": null, "bundle_url": "http://blob.example/two"})],
    );
    refused(
        &w,
        &["attestation 1 of 1: `http://blob.example/two` is not an HTTPS address".to_string()],
    );
}

#[test]
fn require_check_and_off_without_a_bundle() {
    // require: the run is passed over, with the re-run hint.
    let (w, sha) = attested("attestation = \"require\"\n", |_| Vec::new());
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert_eq!(
        run_lines(&out.stderr),
        [format!(
            "run {RUN}: no attestation of pack sha256 {} ([proof] attestation = \"require\")",
            &sha[..12]
        )
        .as_str()]
    );
    assert!(
        out.stderr.contains("copy it from this release's template"),
        "{}",
        out.stderr
    );
    // check (the default): it ships, and says there is none.
    let (w, _) = attested("", |_| Vec::new());
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("provenance: none"), "{}", out.stdout);
    let record: Value =
        serde_json::from_str(&on_origin(&w, "ship/7.json").expect("record")).expect("json");
    assert_eq!(record["attestation"], Value::Null);
    super::valid_record(&record);
    assert!(
        on_origin(&w, &format!("proof/7/{HEAD}/authoritative/gate/pack.json")).is_some(),
        "the gate's bytes land all the same"
    );
    // check with only failing bundles is refused like require.
    let (w, _) = attested("", |sha| vec![inline(&with(sha, &[(20, "push")]))]);
    refused(
        &w,
        &["attestation 1 of 1: trigger: push, not pull_request_target".to_string()],
    );
    // check in a private repository: not asked (its bundles would be the private instance's).
    let (w, _) = attested("", |sha| vec![inline(&good(sha))]);
    w.github.state.lock().expect("lock").visibility = "private".into();
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "provenance: not checked (a private repository: signed packs are for public repositories on github.com; [proof] attestation = \"check\")"
        ),
        "{}",
        out.stdout
    );
    assert!(
        !w.github
            .state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .any(|r| r.contains("attestations")),
        "a private repository's attestations are not asked for under check"
    );
    // off: not even asked.
    let (w, _) = attested("attestation = \"off\"\n", |sha| {
        vec![inline(&with(sha, &[(20, "push")]))]
    });
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("provenance"), "{}", out.stdout);
    assert!(
        !w.github
            .state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .any(|r| r.contains("attestations")),
        "off asks nothing"
    );
}

#[test]
fn an_api_failure_stops_ship_and_a_bad_trusted_root_is_a_usage_error() {
    // 403 (a fine-grained token without Attestations: read) is not "no bundle".
    let (w, _) = attested("", |_| Vec::new());
    w.github.state.lock().expect("lock").attestations_status = Some(403);
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("Attestations: read"), "{}", out.stderr);
    assert_eq!(on_origin(&w, "ship/7.json"), None);
    // A trusted root line that does not parse names the branch, the file and the line.
    let (w, _) = attested("", |_| Vec::new());
    w.github.state.lock().expect("lock").files.insert(
        ("main".into(), ROOT_PATH.into()),
        format!("{}\n{{not json\n", sigstore::trusted_root_json()).into_bytes(),
    );
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "main:{ROOT_PATH}: trusted root: line 2 does not parse"
        )),
        "{}",
        out.stderr
    );
    // A trusted root the default branch does not have.
    let (w, _) = attested("", |_| Vec::new());
    w.github
        .state
        .lock()
        .expect("lock")
        .files
        .remove(&("main".to_string(), ROOT_PATH.to_string()));
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("not on the default branch"),
        "{}",
        out.stderr
    );
    // The embedded production root does not know the test CA: the stale-root hint ends the line.
    let (w, _) = attested("", |sha| vec![inline(&good(sha))]);
    w.github.state.lock().expect("lock").files.insert(
        ("main".into(), ".aayudha/config.toml".into()),
        b"[proof]\nattestation = \"check\"\n".to_vec(),
    );
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let lines = run_lines(&out.stderr);
    assert!(
        lines.len() == 1
            && lines[0].ends_with(
                "the trusted root may be out of date: update aayu, or set `[proof] trusted_root`"
            ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_listing_ship_cannot_read_stops_it() {
    let (w, sha) = attested("", |_| Vec::new());
    w.github
        .state
        .lock()
        .expect("lock")
        .attestations
        .insert(format!("sha256:{sha}"), vec![json!({"repository_id": 1})]);
    let out = ship(&w, &["3"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("an attestation with neither `bundle` nor `bundle_url`"),
        "{}",
        out.stderr
    );
    assert_eq!(on_origin(&w, "ship/7.json"), None);
}

#[test]
fn the_packs_base_must_be_on_the_branch_ship_merges_into() {
    for (status, said) in [
        (Some("diverged"), "the comparison says diverged"),
        (Some("behind"), "the comparison says behind"),
        (None, "not in the repository"),
    ] {
        let (w, _) = attested("", |sha| vec![inline(&good(sha))]);
        {
            let mut fake = w.github.state.lock().expect("lock");
            let key = format!("{BASE}...main");
            match status {
                Some(s) => fake.compares.insert(key, s.to_string()),
                None => fake.compares.remove(&key),
            };
        }
        refused(
            &w,
            &[format!(
                "its pack was built on {}, which is not on `main` ({said})",
                &BASE[..12]
            )],
        );
    }
    // A pack that names no base.
    let w = world();
    let mut pack = pack_json(3, HEAD, "pass");
    pack.as_object_mut().expect("object").remove("base_sha");
    gate_run(
        &w,
        FakeRun::gate(RUN, "aayudha-merge-gate.yml"),
        zip(&pack, false, false),
        false,
    );
    refused(
        &w,
        &[
            "its pack names no base commit (`base_sha`): where it was built cannot be told"
                .to_string(),
        ],
    );
    // Identical is on the branch.
    let (w, _) = attested("", |sha| vec![inline(&good(sha))]);
    w.github
        .state
        .lock()
        .expect("lock")
        .compares
        .insert(format!("{BASE}...main"), "identical".into());
    assert_eq!(ship(&w, &["3"]).code, 0);
}
