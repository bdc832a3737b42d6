//! The Fulcio extensions of a leaf certificate, `1.3.6.1.4.1.57264.1.8` to `.22`, each a DER UTF8String
//! ([Fulcio's OID registry](https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md)).

use super::AttestError;
use std::collections::BTreeMap;
use x509_cert::der::Decode;
use x509_cert::der::asn1::{ObjectIdentifier, Utf8StringRef};

/// The Fulcio arc: extension `.N` is `1.3.6.1.4.1.57264.1.N`.
const FULCIO_ARC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1");

/// The extensions read: `.8` (issuer) to `.22` (visibility), the ones GitHub Actions fills.
const ARCS: std::ops::RangeInclusive<u32> = 8..=22;

/// The Fulcio extensions `.8` to `.22` of `leaf`, by their last arc. An extension in that range that is
/// not a DER UTF8String, or that appears twice, is an error: a policy must never read a value two parsers
/// could read differently.
pub(super) fn fulcio_claims(
    leaf: &x509_cert::Certificate,
) -> Result<BTreeMap<u32, String>, AttestError> {
    let mut claims = BTreeMap::new();
    for ext in leaf.tbs_certificate.extensions.iter().flatten() {
        let Some(arc) = fulcio_arc(&ext.extn_id).filter(|a| ARCS.contains(a)) else {
            continue;
        };
        let value = Utf8StringRef::from_der(ext.extn_value.as_bytes()).map_err(|e| {
            AttestError::Certificate(format!(
                "extension 1.3.6.1.4.1.57264.1.{arc} is not a DER UTF8String: {e}"
            ))
        })?;
        if claims.insert(arc, value.as_str().to_string()).is_some() {
            return Err(AttestError::Certificate(format!(
                "extension 1.3.6.1.4.1.57264.1.{arc} appears twice"
            )));
        }
    }
    Ok(claims)
}

/// `N` when `oid` is `1.3.6.1.4.1.57264.1.N`.
fn fulcio_arc(oid: &ObjectIdentifier) -> Option<u32> {
    (oid.parent()? == FULCIO_ARC).then(|| oid.arc(FULCIO_ARC.len()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_children_of_the_fulcio_arc_count() {
        let oid = |s: &str| ObjectIdentifier::new(s).expect("oid");
        assert_eq!(fulcio_arc(&oid("1.3.6.1.4.1.57264.1.18")), Some(18));
        assert_eq!(fulcio_arc(&oid("1.3.6.1.4.1.57264.1.18.1")), None);
        assert_eq!(fulcio_arc(&oid("1.3.6.1.4.1.57264.2.18")), None);
    }
}
