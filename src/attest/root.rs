//! The trusted root a bundle is verified against: the production root embedded in `sigstore-trust-root`
//! (the version aayu was built with), or one or more roots as `gh attestation trusted-root` prints them,
//! one JSON document a line.

use super::{AttestError, verification_error};
use sigstore_verify::trust_root::{SIGSTORE_PRODUCTION_TRUSTED_ROOT, TrustedRoot};

/// The most a trusted root file read from a working tree may hold (the production root is about 10 KiB a
/// line).
pub const TRUSTED_ROOT_MAX_BYTES: u64 = 4 << 20;

/// One or more trusted roots, each with its verifier prepared.
pub struct TrustedRoots {
    verifiers: Vec<sigstore_verify::Verifier>,
}

impl std::fmt::Debug for TrustedRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TrustedRoots({} roots)", self.verifiers.len())
    }
}

impl TrustedRoots {
    /// Sigstore's public-good production root, as embedded in this build.
    pub fn production() -> Result<TrustedRoots, AttestError> {
        let root = TrustedRoot::from_json(SIGSTORE_PRODUCTION_TRUSTED_ROOT)
            .map_err(|e| AttestError::TrustedRoot(format!("the embedded root: {e}")))?;
        Ok(TrustedRoots {
            verifiers: vec![verifier(&root, None)?],
        })
    }

    /// The roots of a JSON Lines file (`gh attestation trusted-root > trusted_root.jsonl`); blank lines are
    /// skipped, and a line that does not parse is an error naming it (lines count from 1).
    pub fn from_json_lines(text: &str) -> Result<TrustedRoots, AttestError> {
        let mut verifiers = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let root = TrustedRoot::from_json(line).map_err(|e| AttestError::TrustedRootLine {
                line: index + 1,
                detail: e.to_string(),
            })?;
            verifiers.push(verifier(&root, Some(index + 1))?);
        }
        if verifiers.is_empty() {
            return Err(AttestError::TrustedRootEmpty);
        }
        Ok(TrustedRoots { verifiers })
    }

    /// Verifies `bundle` for the artifact `sha256_hex` with the default keyless policy (chain, SCT,
    /// inclusion proof and checkpoint, SET) against each root in turn; the first root's failure is the one
    /// returned when none verifies.
    pub(super) fn verify(
        &self,
        bundle: &sigstore_verify::types::Bundle,
        sha256_hex: &str,
    ) -> Result<sigstore_verify::VerificationResult, AttestError> {
        let digest = sigstore_verify::types::Sha256Hash::from_hex(sha256_hex)
            .map_err(|_| AttestError::PackDigest(sha256_hex.to_string()))?;
        let policy = sigstore_verify::VerificationPolicy::any_identity();
        let mut first_error = None;
        for verifier in &self.verifiers {
            match verifier.verify(digest, bundle, &policy) {
                Ok(result) => return Ok(result),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.map_or(AttestError::TrustedRootEmpty, verification_error))
    }
}

/// The verifier of one root; a root whose keys or certificates are unusable is refused here, before any
/// bundle is read.
fn verifier(
    root: &TrustedRoot,
    line: Option<usize>,
) -> Result<sigstore_verify::Verifier, AttestError> {
    sigstore_verify::Verifier::new(root).map_err(|e| match line {
        Some(line) => AttestError::TrustedRootLine {
            line,
            detail: e.to_string(),
        },
        None => AttestError::TrustedRoot(format!("the embedded root: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_production_root_loads() {
        assert!(TrustedRoots::production().is_ok());
    }

    #[test]
    fn a_line_that_does_not_parse_is_named() {
        let good = SIGSTORE_PRODUCTION_TRUSTED_ROOT.replace('\n', "");
        let text = format!("{good}\n\n{{\"mediaType\": 3}}\n");
        let e = TrustedRoots::from_json_lines(&text)
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.starts_with("trusted root: line 3 does not parse: ")),
            "{e:?}"
        );
        assert!(TrustedRoots::from_json_lines(&format!("{good}\n{good}\n")).is_ok());
        assert!(matches!(
            TrustedRoots::from_json_lines("\n  \n"),
            Err(AttestError::TrustedRootEmpty)
        ));
    }
}
