//! A Sigstore bundle as bytes arrive from the attestations API: size limits, the snappy body of a
//! `bundle_url`, the v0.3 media type, the private instance refused, and the in-toto statement inside.

use super::AttestError;
use x509_cert::der::Decode;

/// The largest bundle read (a bundle of the attest job is a few kilobytes; this bounds what a hostile
/// bundle can make us parse). It is also the most a `bundle_url` body may decompress to.
pub const MAX_BUNDLE_BYTES: usize = 8 * 1024 * 1024;

/// The largest `bundle_url` body read before decompressing it.
pub const MAX_SNAPPY_IN: usize = 4 * 1024 * 1024;

/// The organisation in the issuer of a leaf certificate from GitHub's private Sigstore instance (the test
/// `gh attestation verify` makes to tell the instances apart).
const GITHUB_ISSUER_ORG: &str = "GitHub, Inc.";

/// The only bundle media type accepted: what `actions/attest` writes.
const MEDIA_TYPE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The DSSE payload type of an in-toto statement.
const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The in-toto statement type `actions/attest` writes.
const IN_TOTO_STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";

/// Decodes a `bundle_url` body: raw (block) snappy, as GitHub serves it and `gh` reads it, at most
/// [`MAX_SNAPPY_IN`] bytes in and [`MAX_BUNDLE_BYTES`] out. The decoded length is read from the body's
/// header before anything is allocated.
pub fn decode_snappy(body: &[u8]) -> Result<Vec<u8>, AttestError> {
    if body.len() > MAX_SNAPPY_IN {
        return Err(AttestError::TooLarge {
            what: "`bundle_url` body",
            size: body.len(),
            limit: MAX_SNAPPY_IN,
        });
    }
    let size = snap::raw::decompress_len(body).map_err(|e| AttestError::Snappy(e.to_string()))?;
    if size > MAX_BUNDLE_BYTES {
        return Err(AttestError::TooLarge {
            what: "decompressed bundle",
            size,
            limit: MAX_BUNDLE_BYTES,
        });
    }
    snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| AttestError::Snappy(e.to_string()))
}

/// A bundle that parsed, with its leaf certificate.
pub(super) struct Parsed {
    pub bundle: sigstore_verify::types::Bundle,
    pub leaf: x509_cert::Certificate,
}

/// Parses a bundle: at most [`MAX_BUNDLE_BYTES`], media type v0.3, a signing certificate, and not from
/// GitHub's private instance (its bundles have no transparency log entry and chain to a CA outside the
/// public-good root; this version does not carry that root).
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, AttestError> {
    if bytes.len() > MAX_BUNDLE_BYTES {
        return Err(AttestError::TooLarge {
            what: "bundle",
            size: bytes.len(),
            limit: MAX_BUNDLE_BYTES,
        });
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| AttestError::NotABundle(format!("not UTF-8: {e}")))?;
    // The media type first, from the JSON as is, so a bundle of another version says so rather than
    // failing on a field it lacks.
    let media_type = serde_json::from_str::<serde_json::Value>(text)
        .map_err(|e| AttestError::NotABundle(e.to_string()))?
        .get("mediaType")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .unwrap_or_default();
    if media_type != MEDIA_TYPE_V03 {
        return Err(AttestError::MediaType(media_type));
    }
    let bundle = sigstore_verify::types::Bundle::from_json(text)
        .map_err(|e| AttestError::NotABundle(e.to_string()))?;
    let der = bundle
        .signing_certificate()
        .ok_or_else(|| AttestError::Certificate("the bundle has none".to_string()))?;
    let leaf = x509_cert::Certificate::from_der(der.as_bytes())
        .map_err(|e| AttestError::Certificate(format!("it does not parse: {e}")))?;
    if issuer_organisations(&leaf).any(|o| o == GITHUB_ISSUER_ORG) {
        return Err(AttestError::PrivateInstance);
    }
    Ok(Parsed { bundle, leaf })
}

/// The `O=` values of a certificate's issuer.
fn issuer_organisations(cert: &x509_cert::Certificate) -> impl Iterator<Item = String> + '_ {
    const ORGANIZATION: x509_cert::der::asn1::ObjectIdentifier =
        x509_cert::der::asn1::ObjectIdentifier::new_unwrap("2.5.4.10");
    cert.tbs_certificate
        .issuer
        .0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .filter(|atv| atv.oid == ORGANIZATION)
        .filter_map(|atv| directory_string(&atv.value))
}

/// A DirectoryString attribute value (UTF8String or PrintableString) as text.
fn directory_string(value: &x509_cert::der::Any) -> Option<String> {
    use x509_cert::der::asn1::{PrintableStringRef, Utf8StringRef};
    if let Ok(s) = value.decode_as::<Utf8StringRef<'_>>() {
        return Some(s.as_str().to_string());
    }
    value
        .decode_as::<PrintableStringRef<'_>>()
        .ok()
        .map(|s| s.as_str().to_string())
}

/// The in-toto statement of a bundle's DSSE envelope, as much of it as verification reads.
pub(super) struct Statement {
    pub predicate_type: String,
    subject_sha256: Vec<String>,
}

impl Statement {
    /// Whether one subject has `digest` (lowercase hex) as its SHA-256.
    pub fn has_subject_sha256(&self, digest: &str) -> bool {
        self.subject_sha256
            .iter()
            .any(|d| d.eq_ignore_ascii_case(digest))
    }
}

/// The statement of the bundle's DSSE envelope: payload type in-toto, `_type` v1, the subjects' SHA-256
/// digests and the predicate type. Read before the signature is checked only to say clearly what is wrong;
/// nothing of it is returned unless the envelope verifies.
pub(super) fn statement(parsed: &Parsed) -> Result<Statement, AttestError> {
    use sigstore_verify::types::SignatureContent;
    let SignatureContent::DsseEnvelope(envelope) = &parsed.bundle.content else {
        return Err(AttestError::Statement(
            "the bundle holds a message signature, not a DSSE envelope".to_string(),
        ));
    };
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(AttestError::Statement(format!(
            "the envelope's payload type is `{}`, not `{IN_TOTO_PAYLOAD_TYPE}`",
            envelope.payload_type
        )));
    }
    let value: serde_json::Value = serde_json::from_slice(envelope.payload.as_bytes())
        .map_err(|e| AttestError::Statement(format!("the statement is not JSON: {e}")))?;
    let kind = value.get("_type").and_then(serde_json::Value::as_str);
    if kind != Some(IN_TOTO_STATEMENT_V1) {
        return Err(AttestError::Statement(format!(
            "the statement's `_type` is {}, not `{IN_TOTO_STATEMENT_V1}`",
            kind.map_or_else(|| "absent".to_string(), |k| format!("`{k}`"))
        )));
    }
    let predicate_type = value
        .get("predicateType")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| AttestError::Statement("the statement has no `predicateType`".to_string()))?
        .to_string();
    let subject_sha256 = value
        .get("subject")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            s.pointer("/digest/sha256")
                .and_then(serde_json::Value::as_str)
        })
        .map(str::to_string)
        .collect();
    Ok(Statement {
        predicate_type,
        subject_sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_bodies_decode_within_their_limits() {
        let bundle = br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}"#.repeat(50);
        let body = snap::raw::Encoder::new()
            .compress_vec(&bundle)
            .expect("compress");
        assert_eq!(decode_snappy(&body).ok(), Some(bundle));

        assert!(matches!(
            decode_snappy(b"\xff\xff\xff\xff\xff"),
            Err(AttestError::Snappy(_))
        ));
        let too_long_in = vec![0u8; MAX_SNAPPY_IN + 1];
        assert!(matches!(
            decode_snappy(&too_long_in),
            Err(AttestError::TooLarge { limit, .. }) if limit == MAX_SNAPPY_IN
        ));
        // A few bytes of zeros that say they decompress to 9 MiB: refused from the header alone.
        let bomb = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; MAX_BUNDLE_BYTES + 1024 * 1024])
            .expect("compress");
        assert!(bomb.len() < MAX_SNAPPY_IN);
        assert!(matches!(
            decode_snappy(&bomb),
            Err(AttestError::TooLarge { limit, .. }) if limit == MAX_BUNDLE_BYTES
        ));
    }

    #[test]
    fn a_bundle_over_the_limit_or_of_another_version_is_refused() {
        let big = vec![b' '; MAX_BUNDLE_BYTES + 1];
        assert!(matches!(parse(&big), Err(AttestError::TooLarge { .. })));
        let old = br#"{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.2"}"#;
        let e = parse(old).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "attestation: the bundle's media type is `application/vnd.dev.sigstore.bundle+json;version=0.2`, not `application/vnd.dev.sigstore.bundle.v0.3+json`"
            )
        );
        assert!(matches!(parse(b"[1"), Err(AttestError::NotABundle(_))));
    }
}
