//! The attest job's Sigstore bundles, verified offline: the bundle (`attest/bundle.rs`), the trusted root
//! (`attest/root.rs`), the verified leaf certificate's Fulcio claims (`attest/claims.rs`) and ship's policy
//! over them (`attest/policy.rs`).
//!
//! [`verify`] runs `sigstore-verify`'s default keyless checks — the certificate chains to a Fulcio CA of the
//! trusted root and carries a valid SCT, the Rekor entry has an inclusion proof under a signed checkpoint and
//! a SET — over a DSSE envelope holding an in-toto v1 statement about the pack's SHA-256. What it returns,
//! [`Verified`], holds only what the verified certificate and the verified log entry say; [`policy`] decides
//! whether that is the gate's own workflow identity (issue 41, "The policy reads the verified leaf
//! certificate").

mod bundle;
mod claims;
mod policy;
mod root;
#[cfg(test)]
mod test_domain;

pub use bundle::{MAX_BUNDLE_BYTES, MAX_SNAPPY_IN, decode_snappy};
pub use policy::{ACTIONS_ISSUER, Expected, Field, Mismatch, SLSA_PROVENANCE_V1, policy};

/// The Sigstore instance a verified bundle was signed by, as the ship record names it: public
/// repositories on github.com sign with Sigstore's public-good instance, the only one this version
/// verifies.
pub const PUBLIC_GOOD: &str = "public-good";
pub use root::{TRUSTED_ROOT_MAX_BYTES, TrustedRoots};

use std::collections::BTreeMap;

/// The hint a failure that a stale trusted root could explain ends with.
const STALE_ROOT_HINT: &str =
    "the trusted root may be out of date: update aayu, or set `[proof] trusted_root`";

/// Why a bundle is not a verified attestation of the pack.
#[derive(Debug, thiserror::Error)]
pub enum AttestError {
    #[error("attestation: the {what} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
    },
    #[error("attestation: the `bundle_url` body is not snappy-compressed: {0}")]
    Snappy(String),
    #[error("attestation: not a Sigstore bundle: {0}")]
    NotABundle(String),
    #[error(
        "attestation: the bundle's media type is `{0}`, not `application/vnd.dev.sigstore.bundle.v0.3+json`"
    )]
    MediaType(String),
    #[error(
        "attestation: signed by GitHub's private Sigstore instance, not verified by this version"
    )]
    PrivateInstance,
    #[error("attestation: {0}")]
    Statement(String),
    #[error("attestation: no subject of the statement has sha256 {0}")]
    SubjectDigest(String),
    #[error("attestation: pack sha256 `{0}` is not 64 hex digits")]
    PackDigest(String),
    #[error("attestation: does not verify: {detail}{}", if *.stale_root { format!("; {STALE_ROOT_HINT}") } else { String::new() })]
    Verification { detail: String, stale_root: bool },
    #[error("attestation: the signing certificate: {0}")]
    Certificate(String),
    #[error("trusted root: line {line} does not parse: {detail}")]
    TrustedRootLine { line: usize, detail: String },
    #[error("trusted root: the file holds no trusted root")]
    TrustedRootEmpty,
    #[error("trusted root: {0}")]
    TrustedRoot(String),
}

/// What a bundle that verified says, every value from the verified leaf certificate or the verified log
/// entry (never from the statement's predicate, which the signer writes about itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    claims: BTreeMap<u32, String>,
    san: String,
    bundle_sha256: String,
    signed_at: String,
    predicate_type: String,
}

impl Verified {
    /// The Fulcio extension `1.3.6.1.4.1.57264.1.<arc>` (8 to 22), decoded from its DER UTF8String.
    pub fn claim(&self, arc: u32) -> Option<&str> {
        self.claims.get(&arc).map(String::as_str)
    }

    /// Every Fulcio extension from `.8` to `.22` the certificate carries, by the last arc of its OID.
    pub fn claims(&self) -> &BTreeMap<u32, String> {
        &self.claims
    }

    /// The certificate's URI subject alternative name: the workflow that signed, `S/R/<path>@<ref>`.
    pub fn san(&self) -> &str {
        &self.san
    }

    /// The SHA-256 of the bundle's bytes as given to [`verify`], in hex.
    pub fn bundle_sha256(&self) -> &str {
        &self.bundle_sha256
    }

    /// When the transparency log integrated the entry (its SET-verified `integratedTime`), RFC 3339 to the
    /// second: the same for every verification of the same bundle.
    pub fn signed_at(&self) -> &str {
        &self.signed_at
    }

    /// The in-toto statement's `predicateType` (checked by [`policy`], not by [`verify`]).
    pub fn predicate_type(&self) -> &str {
        &self.predicate_type
    }

    /// `.21`, the run invocation URI: `S/R/actions/runs/<run>/attempts/<k>`.
    pub fn run_invocation(&self) -> Option<&str> {
        self.claim(21)
    }

    /// `.19`, the commit of the workflow file that ran (recorded, never compared).
    pub fn build_config_digest(&self) -> Option<&str> {
        self.claim(19)
    }

    /// `.13`, the commit the workflow ran at (recorded, never compared).
    pub fn source_digest(&self) -> Option<&str> {
        self.claim(13)
    }

    /// A `Verified` made by hand, for tests of what reads one.
    #[cfg(test)]
    pub(crate) fn for_test(
        claims: BTreeMap<u32, String>,
        san: &str,
        predicate_type: &str,
    ) -> Verified {
        Verified {
            claims,
            san: san.to_string(),
            bundle_sha256: "0".repeat(64),
            signed_at: "2025-06-01T12:01:00Z".to_string(),
            predicate_type: predicate_type.to_string(),
        }
    }
}

/// Verifies `bundle_bytes` (a Sigstore bundle v0.3, as `actions/attest` writes it for a public repository)
/// against `trusted_root`: the default keyless checks of `sigstore-verify` (chain, SCT, inclusion proof and
/// checkpoint, SET), a DSSE envelope over an in-toto v1 statement, and a subject with `pack_sha256_hex` as
/// its SHA-256. With several trusted roots (JSON Lines) the bundle verifies when it verifies against one;
/// otherwise the first root's failure is the one reported.
pub fn verify(
    bundle_bytes: &[u8],
    trusted_root: &TrustedRoots,
    pack_sha256_hex: &str,
) -> Result<Verified, AttestError> {
    let digest = pack_digest(pack_sha256_hex)?;
    let parsed = bundle::parse(bundle_bytes)?;
    let statement = bundle::statement(&parsed)?;
    if !statement.has_subject_sha256(&digest) {
        return Err(AttestError::SubjectDigest(digest));
    }
    let result = trusted_root.verify(&parsed.bundle, &digest)?;
    let san = match result.identity() {
        Some(sigstore_verify::SubjectAltName::Uri(uri)) => uri.clone(),
        Some(other) => {
            return Err(AttestError::Certificate(format!(
                "its subject alternative name `{}` is not a URI",
                other.as_str()
            )));
        }
        None => {
            return Err(AttestError::Certificate(
                "it has no subject alternative name".to_string(),
            ));
        }
    };
    let integrated = result
        .integrated_time()
        .ok_or_else(|| AttestError::Verification {
            detail: "no transparency log entry has a SET-verified integrated time".to_string(),
            stale_root: false,
        })?;
    Ok(Verified {
        claims: claims::fulcio_claims(&parsed.leaf)?,
        san,
        bundle_sha256: crate::hash::bytes(bundle_bytes),
        signed_at: rfc3339(integrated.as_second())?,
        predicate_type: statement.predicate_type,
    })
}

/// The pack's digest as lowercase hex, or why it is not one.
fn pack_digest(hex: &str) -> Result<String, AttestError> {
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(AttestError::PackDigest(hex.to_string()))
    }
}

/// Seconds since the epoch as `2025-09-01T12:13:59Z`.
fn rfc3339(seconds: i64) -> Result<String, AttestError> {
    let t = time::OffsetDateTime::from_unix_timestamp(seconds).map_err(|e| {
        AttestError::Verification {
            detail: format!("integrated time {seconds}: {e}"),
            stale_root: false,
        }
    })?;
    Ok(crate::clock::utc_stamp(t, false))
}

/// A `sigstore-verify` failure as ours: a failure a trusted root without the right key or CA would also
/// cause (chain, SCT, unknown log, checkpoint, SET, timestamp) carries the stale-root hint.
fn verification_error(e: sigstore_verify::Error) -> AttestError {
    use sigstore_verify::{CertificateError as C, Error as E, TransparencyLogError as T};
    let stale_root = matches!(
        &e,
        E::Certificate(C::ChainInvalid(_) | C::NoValidAuthority { .. } | C::Sct(_))
            | E::TransparencyLog(T::UnknownLog { .. } | T::Checkpoint(_) | T::InclusionPromise(_))
            | E::Timestamp(_)
    );
    AttestError::Verification {
        detail: e.to_string(),
        stale_root,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_digest_is_64_hex_digits() {
        assert_eq!(pack_digest(&"AB".repeat(32)).ok(), Some("ab".repeat(32)));
        for bad in ["", "ab", &"g".repeat(64), &"a".repeat(65)] {
            assert!(matches!(pack_digest(bad), Err(AttestError::PackDigest(_))));
        }
    }

    #[test]
    fn the_stale_root_hint_ends_the_line() {
        let e = AttestError::Verification {
            detail: "certificate chain is invalid: x".to_string(),
            stale_root: true,
        };
        assert!(e.to_string().ends_with(STALE_ROOT_HINT), "{e}");
        let e = AttestError::Verification {
            detail: "invalid signature: x".to_string(),
            stale_root: false,
        };
        assert!(!e.to_string().contains("out of date"), "{e}");
    }

    #[test]
    fn signed_at_is_rfc3339_utc() {
        assert_eq!(
            rfc3339(1_756_728_839).ok().as_deref(),
            Some("2025-09-01T12:13:59Z")
        );
    }
    /// The tests of [`verify`] over the test trust domain and over real bundles.
    mod verification {
        use super::super::test_domain::{
            Options, PACK_SHA256, bundle, expected, trusted_root_json,
        };
        use super::super::*;

        fn test_root() -> TrustedRoots {
            TrustedRoots::from_json_lines(&trusted_root_json()).expect("the test root")
        }

        fn verified(o: &Options) -> Verified {
            match verify(&bundle(o), &test_root(), PACK_SHA256) {
                Ok(v) => v,
                Err(e) => panic!("the bundle should verify: {e}"),
            }
        }

        fn refused(o: &Options) -> String {
            match verify(&bundle(o), &test_root(), PACK_SHA256) {
                Ok(_) => panic!("the bundle should not verify"),
                Err(e) => e.to_string(),
            }
        }

        fn policy_line(o: &Options, e: &Expected) -> String {
            policy(&verified(o), e)
                .err()
                .map(|m| m.to_string())
                .unwrap_or_default()
        }

        #[test]
        fn a_good_bundle_verifies_and_passes_the_policy() {
            let bytes = bundle(&Options::good());
            let v =
                verify(&bytes, &test_root(), &PACK_SHA256.to_ascii_uppercase()).expect("verifies");
            assert_eq!(policy(&v, &expected()), Ok(()));
            assert_eq!(v.san(), super::super::test_domain::WORKFLOW);
            assert_eq!(v.signed_at(), "2025-06-01T12:01:00Z");
            assert_eq!(v.bundle_sha256(), crate::hash::bytes(&bytes));
            assert_eq!(v.claims().len(), 15);
            assert_eq!(v.claim(22), Some("public"));
            assert_eq!(
                v.run_invocation(),
                Some("https://github.com/acme/shop/actions/runs/77/attempts/1")
            );
            // The same bundle, the same answer: nothing depends on the clock.
            assert_eq!(bytes, bundle(&Options::good()));
        }

        #[test]
        fn a_bundle_for_another_pack_is_refused() {
            let other = "ab".repeat(32);
            let e = verify(&bundle(&Options::good()), &test_root(), &other)
                .err()
                .map(|e| e.to_string());
            assert_eq!(
                e,
                Some(format!(
                    "attestation: no subject of the statement has sha256 {other}"
                ))
            );
        }

        #[test]
        fn another_workflow_a_fork_a_reusable_workflow_a_trigger_and_a_ref_are_refused() {
            let e = expected();
            let release =
                "https://github.com/acme/shop/.github/workflows/release.yml@refs/heads/main";
            let mut other_workflow = Options::with_claims(&[(9, release), (18, release)]);
            other_workflow.san = release.to_string();
            assert_eq!(
                policy_line(&other_workflow, &e),
                format!(
                    "SAN is {release}, not {}",
                    super::super::test_domain::WORKFLOW
                )
            );
            let fork =
                "https://github.com/mallory/shop/.github/workflows/aayudha.yml@refs/heads/main";
            let mut fork = Options::with_claims(&[
                (9, fork),
                (12, "https://github.com/mallory/shop"),
                (15, "3003"),
                (17, "4004"),
                (18, fork),
            ]);
            fork.san = fork.claims[&9].clone();
            assert_eq!(
                policy_line(&fork, &e),
                ".12 is https://github.com/mallory/shop, not https://github.com/acme/shop"
            );
            // A reusable workflow: the SAN names the called file, .18 the caller.
            let called = "https://github.com/acme/tools/.github/workflows/sign.yml@refs/heads/main";
            let mut reusable = Options::good();
            reusable.san = called.to_string();
            reusable.claims.insert(9, called.to_string());
            assert_eq!(
                policy_line(&reusable, &e),
                format!(
                    "SAN is {called}, not {}",
                    super::super::test_domain::WORKFLOW
                )
            );
            assert_eq!(
                policy_line(&Options::with_claims(&[(20, "pull_request")]), &e),
                "trigger: pull_request, not pull_request_target"
            );
            assert_eq!(
                policy_line(&Options::with_claims(&[(14, "refs/heads/feature")]), &e),
                ".14 is refs/heads/feature, not refs/heads/main"
            );
        }

        #[test]
        fn a_self_hosted_runner_is_refused_unless_allowed() {
            let o = Options::with_claims(&[(11, "self-hosted")]);
            assert_eq!(
                policy_line(&o, &expected()),
                ".11 is self-hosted, not github-hosted"
            );
            let allowed = Expected {
                self_hosted_runners: true,
                ..expected()
            };
            assert_eq!(policy(&verified(&o), &allowed), Ok(()));
        }

        #[test]
        fn attempt_2_of_the_run_is_accepted() {
            let o = Options::with_claims(&[(
                21,
                "https://github.com/acme/shop/actions/runs/77/attempts/2",
            )]);
            let two = Expected {
                latest_attempt: 2,
                ..expected()
            };
            assert_eq!(policy(&verified(&o), &two), Ok(()));
            assert_eq!(
                policy_line(&o, &expected()),
                ".21 is https://github.com/acme/shop/actions/runs/77/attempts/2, not https://github.com/acme/shop/actions/runs/77/attempts/1"
            );
        }

        #[test]
        fn a_ca_outside_the_root_is_refused_with_the_stale_root_hint() {
            let o = Options {
                foreign_ca: true,
                ..Options::good()
            };
            let line = refused(&o);
            assert!(
                line.starts_with("attestation: does not verify: certificate chain is invalid"),
                "{line}"
            );
            assert!(line.ends_with(super::super::STALE_ROOT_HINT), "{line}");
        }

        #[test]
        fn an_entry_without_a_set_is_refused() {
            let o = Options {
                set: false,
                ..Options::good()
            };
            let line = refused(&o);
            assert!(line.contains("no verified timestamp"), "{line}");
        }

        #[test]
        fn a_set_over_another_integrated_time_is_refused() {
            let o = Options {
                set_time_shift: 1,
                ..Options::good()
            };
            let line = refused(&o);
            assert!(line.contains("SET verification failed"), "{line}");
        }

        #[test]
        fn a_wrong_inclusion_proof_or_checkpoint_is_refused() {
            let good: serde_json::Value =
                serde_json::from_slice(&bundle(&Options::good())).expect("json");
            let proof = "/verificationMaterial/tlogEntries/0/inclusionProof";
            let mut bad_path = good.clone();
            if let Some(h) = bad_path.pointer_mut(&format!("{proof}/hashes/0")) {
                *h = serde_json::Value::String(base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    [7u8; 32],
                ));
            }
            let e = verify(bad_path.to_string().as_bytes(), &test_root(), PACK_SHA256)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("inclusion proof verification failed"), "{e}");
            let mut unsigned_note = good;
            if let Some(serde_json::Value::String(note)) =
                unsigned_note.pointer_mut(&format!("{proof}/checkpoint/envelope"))
            {
                *note = note.replacen("rekor.test - 1234", "rekor.test - 1235", 1);
            }
            let e = verify(
                unsigned_note.to_string().as_bytes(),
                &test_root(),
                PACK_SHA256,
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
            assert!(
                e.contains("No valid Rekor signature found on checkpoint"),
                "{e}"
            );
        }

        #[test]
        fn a_leaf_without_an_sct_is_refused() {
            let o = Options {
                sct: false,
                ..Options::good()
            };
            let line = refused(&o);
            assert!(
                line.contains("certificate is missing SCT extension"),
                "{line}"
            );
        }

        #[test]
        fn a_ca_of_githubs_private_instance_is_refused_before_verifying() {
            let o = Options {
                ca_org: "GitHub, Inc.".to_string(),
                foreign_ca: true,
                ..Options::good()
            };
            assert_eq!(
                refused(&o),
                "attestation: signed by GitHub's private Sigstore instance, not verified by this version"
            );
        }

        #[test]
        fn a_root_that_does_not_name_the_ca_fails_with_the_hint_and_another_line_can_verify() {
            let production =
                sigstore_verify::trust_root::SIGSTORE_PRODUCTION_TRUSTED_ROOT.replace('\n', "");
            let only_production = TrustedRoots::from_json_lines(&production).expect("root");
            let line = verify(&bundle(&Options::good()), &only_production, PACK_SHA256)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(line.ends_with(super::super::STALE_ROOT_HINT), "{line}");
            let both =
                TrustedRoots::from_json_lines(&format!("{production}\n{}\n", trusted_root_json()))
                    .expect("roots");
            assert!(verify(&bundle(&Options::good()), &both, PACK_SHA256).is_ok());
        }

        /// A real bundle of sigstore-verify's test data (tests/data/sigstore/README.md): it verifies
        /// against the embedded production root, and ship's policy refuses its `push` trigger.
        #[test]
        fn the_real_conda_bundle_verifies_and_the_policy_refuses_its_trigger() {
            let bytes = include_bytes!("../tests/data/sigstore/conda-attestation.sigstore.json");
            let root = TrustedRoots::production().expect("root");
            let v = verify(
                bytes,
                &root,
                "54303491a8418fbed24344b513546182c29b43bf282ceb433af65e2299f9271f",
            )
            .expect("the conda bundle verifies");
            assert_eq!(v.signed_at(), "2025-09-01T12:13:59Z");
            let run = v.run_invocation().unwrap_or_default();
            let (repo_uri, rest) = run.split_once("/actions/runs/").unwrap_or_default();
            let run_id = rest
                .split('/')
                .next()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            let (workflow_path, branch) = v
                .claim(18)
                .and_then(|c| c.strip_prefix(&format!("{repo_uri}/")))
                .and_then(|c| c.split_once("@refs/heads/"))
                .unwrap_or_default();
            let (origin, repo) = repo_uri.split_at(repo_uri.find("github.com/").unwrap_or(0) + 10);
            let own = Expected {
                server_origin: origin.to_string(),
                repo: repo.trim_start_matches('/').to_string(),
                default_branch: branch.to_string(),
                repository_id: v.claim(15).and_then(|c| c.parse().ok()).unwrap_or(0),
                owner_id: v.claim(17).and_then(|c| c.parse().ok()).unwrap_or(0),
                workflow_path: workflow_path.to_string(),
                run_id,
                latest_attempt: 1,
                self_hosted_runners: false,
            };
            assert_eq!(
                policy(&v, &own).err().map(|m| m.to_string()),
                Some("trigger: push, not pull_request_target".to_string())
            );
        }

        /// A real bundle from GitHub's private instance (sigstore-verify's test data).
        #[test]
        fn a_real_private_instance_bundle_is_refused() {
            let bytes =
                include_bytes!("../tests/data/sigstore/github-private-attestation.sigstore.json");
            let root = TrustedRoots::production().expect("root");
            let e = verify(
                bytes,
                &root,
                "76f1fe8593bf227cca2c089e3c16dc95014a8d3e89c5dd220530469ca043c428",
            )
            .err()
            .map(|e| e.to_string());
            assert_eq!(
                e.as_deref(),
                Some(
                    "attestation: signed by GitHub's private Sigstore instance, not verified by this version"
                )
            );
        }
    }
}
