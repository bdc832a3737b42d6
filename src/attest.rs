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

pub use bundle::{MAX_BUNDLE_BYTES, MAX_SNAPPY_IN, decode_snappy};
pub use policy::{Expected, Field, Mismatch, SLSA_PROVENANCE_V1, policy};
pub use root::TrustedRoots;

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
}
