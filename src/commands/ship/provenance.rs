//! Ship's check of the gate's signed attestation of its pack (issue 41): the bundles GitHub lists for the
//! pack's SHA-256, verified offline against the trusted root, and the policy over the verified leaf
//! certificate. One bundle that verifies qualifies the run (anyone with `attestations: write` can add
//! bundles, so "all must verify" would be a denial of service); only an empty list or a 404 on the first
//! page means "no bundle", and any other failure of the API or the network stops ship (exit 1), never a
//! pass.

use crate::attest::{self, Expected, TrustedRoots, Verified};
use crate::commands::{Failure, short};
use crate::config::{Attestation, Config};
use crate::exit::ExitStatus;
use crate::github::{AttestationItem, GitHubError, Repository, WorkflowRun};
use crate::settings::remote::Remote;

/// What ship checks a run's attestations with: the mode, the trusted root, and what the gate's own
/// signature must say of this repository.
pub(super) struct Attestor {
    mode: Attestation,
    /// `None` when nothing is asked (`off`, or `check` where signed packs do not apply): no root is read.
    roots: Option<TrustedRoots>,
    repository: Repository,
    workflow_path: String,
    self_hosted_runners: bool,
}

/// What a run's attestations gave.
pub(super) enum Provenance {
    /// A bundle verified: its bytes (landed as `gate/attestation.sigstore.json`) and what it says.
    Verified { bundle: Vec<u8>, verified: Verified },
    /// `check` and no bundle for the digest: the plan says `provenance: none`.
    None,
    /// `check` in a repository whose gate cannot sign with Sigstore's public-good instance (private, or not
    /// on github.com): not asked; why.
    NotApplicable(&'static str),
    /// `[proof] attestation = "off"`: not looked at.
    Off,
}

impl Provenance {
    /// The ship record's `attestation`: the verified bundle's facts, else `null`.
    pub(super) fn record(&self) -> serde_json::Value {
        match self {
            Provenance::Verified { verified, .. } => serde_json::json!({
                "bundle_sha256": verified.bundle_sha256(),
                "instance": attest::PUBLIC_GOOD,
                "san": verified.san(),
                "run_invocation": verified.run_invocation(),
                "build_config_digest": verified.build_config_digest(),
                "source_digest": verified.source_digest(),
                "signed_at": verified.signed_at(),
            }),
            Provenance::None | Provenance::NotApplicable(_) | Provenance::Off => {
                serde_json::Value::Null
            }
        }
    }

    /// The plan's line: `provenance: verified (<san>, signed <time>)`, `provenance: none (…)` or nothing
    /// when not looked at.
    pub(super) fn plan_line(&self) -> Option<String> {
        match self {
            Provenance::Verified { verified, .. } => Some(format!(
                "provenance: verified ({}, signed {})",
                verified.san(),
                verified.signed_at()
            )),
            Provenance::None => Some(
                "provenance: none (no attestation of the pack; [proof] attestation = \"check\")"
                    .to_string(),
            ),
            Provenance::NotApplicable(why) => Some(format!(
                "provenance: not checked ({why}; [proof] attestation = \"check\")"
            )),
            Provenance::Off => None,
        }
    }
}

/// Why a run's attestations do not qualify it: each a line of its own after `run <id>: `.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unattested {
    #[error("no attestation of pack sha256 {} ([proof] attestation = \"require\")", short(.0))]
    None(String),
    #[error("{}", .0.join("\n"))]
    Refused(Vec<String>),
}

impl Attestor {
    /// The attestor of the default branch's configuration: the trusted root read now, when it will be
    /// used (the embedded one, or `[proof] trusted_root` from the default branch through the contents API;
    /// a missing file or a line that does not parse is exit 2).
    pub(super) fn new(
        config: &Config,
        remote: &Remote,
        repository: &Repository,
    ) -> Result<Attestor, Failure> {
        let mode = config.proof.attestation;
        let asks = match mode {
            Attestation::Off => false,
            Attestation::Check => not_applicable(repository).is_none(),
            Attestation::Require => true,
        };
        let roots = if asks {
            Some(trusted_roots(
                &config.proof.trusted_root,
                remote,
                &repository.default_branch,
            )?)
        } else {
            None
        };
        Ok(Attestor {
            mode,
            roots,
            repository: repository.clone(),
            workflow_path: config.gate.workflow.clone(),
            self_hosted_runners: config.proof.self_hosted_runners,
        })
    }

    /// The run's provenance: a bundle for `pack_sha256` that verifies and passes the policy, `None` in
    /// `check` mode when there is none, `Off`; else why the run is passed over (`Ok(Err(_))`), or why
    /// ship must stop (`Err`).
    pub(super) fn check(
        &self,
        remote: &Remote,
        run: &WorkflowRun,
        pack_sha256: &str,
    ) -> Result<Result<Provenance, Unattested>, Failure> {
        if let (Attestation::Check, Some(why)) = (self.mode, not_applicable(&self.repository)) {
            return Ok(Ok(Provenance::NotApplicable(why)));
        }
        let Some(roots) = &self.roots else {
            return Ok(Ok(Provenance::Off));
        };
        let items = remote
            .client
            .attestations(&remote.repo, pack_sha256)
            .map_err(Failure::from)?;
        if items.is_empty() {
            return Ok(match self.mode {
                Attestation::Require => Err(Unattested::None(pack_sha256.to_string())),
                Attestation::Check | Attestation::Off => Ok(Provenance::None),
            });
        }
        let expected = self.expected(run);
        let mut refusals = Vec::new();
        for (index, item) in items.iter().enumerate() {
            // Whatever the bundle says is data: one line, no control character reaches the terminal.
            let said = |why: &str| {
                format!(
                    "attestation {} of {}: {}",
                    index + 1,
                    items.len(),
                    crate::log::controls_escaped(why)
                )
            };
            let bundle = match bundle_bytes(remote, item) {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(why)) => {
                    refusals.push(said(&why));
                    continue;
                }
                Err(e) => return Err(Failure::from(e)),
            };
            match attest::verify(&bundle, roots, pack_sha256) {
                Ok(verified) => match attest::policy(&verified, &expected) {
                    Ok(()) => return Ok(Ok(Provenance::Verified { bundle, verified })),
                    Err(mismatch) => refusals.push(said(&mismatch.to_string())),
                },
                Err(e) => refusals.push(said(&unprefixed(&e))),
            }
        }
        Ok(Err(Unattested::Refused(refusals)))
    }

    /// What the gate's own signature must say for `run`: this repository (its record's origin, name and
    /// ids), the gate workflow on the default branch, an attempt of this run.
    fn expected(&self, run: &WorkflowRun) -> Expected {
        Expected {
            server_origin: origin(&self.repository.html_url),
            repo: self.repository.full_name.clone(),
            default_branch: self.repository.default_branch.clone(),
            repository_id: self.repository.id,
            owner_id: self.repository.owner_id,
            workflow_path: self.workflow_path.clone(),
            run_id: run.id,
            latest_attempt: run.run_attempt,
            self_hosted_runners: self.self_hosted_runners,
        }
    }
}

/// Why the gate of `repository` cannot sign with Sigstore's public-good instance, if it cannot: signed
/// packs are for public repositories on github.com (a private repository's bundles come from GitHub's
/// private instance, which this version does not verify).
fn not_applicable(repository: &Repository) -> Option<&'static str> {
    if origin(&repository.html_url) != GITHUB_COM {
        Some("not on github.com: signed packs are for public repositories on github.com")
    } else if repository.private {
        Some("a private repository: signed packs are for public repositories on github.com")
    } else {
        None
    }
}

/// The origin of github.com's repositories: the only server whose public repositories sign with Sigstore's
/// public-good instance.
const GITHUB_COM: &str = "https://github.com";

/// `https://github.com` of `https://github.com/octo/shop`: scheme and host (and port) alone.
fn origin(html_url: &str) -> String {
    let after_scheme = html_url.find("://").map_or(0, |i| i + 3);
    match html_url[after_scheme..].find('/') {
        Some(slash) => html_url[..after_scheme + slash].to_string(),
        None => html_url.to_string(),
    }
}

/// An item's bundle as bytes: an inline bundle as compact JSON, a `bundle_url` fetched without the token
/// and snappy-decoded. `Ok(Err(why))` refuses this bundle alone (not HTTPS, too large, not snappy);
/// `Err` is a failure of the network or the blob store.
fn bundle_bytes(
    remote: &Remote,
    item: &AttestationItem,
) -> Result<Result<Vec<u8>, String>, GitHubError> {
    match item {
        AttestationItem::Bundle(value) => Ok(serde_json::to_vec(value).map_err(|e| e.to_string())),
        AttestationItem::Url(url) => {
            if !remote.client.may_fetch_bundle(url) {
                return Ok(Err(format!("`{url}` is not an HTTPS address")));
            }
            let body = remote
                .client
                .attestation_bundle(url, attest::MAX_SNAPPY_IN as u64)?;
            if body.len() > attest::MAX_SNAPPY_IN {
                return Ok(Err(format!(
                    "its bundle_url answers more than {} bytes",
                    attest::MAX_SNAPPY_IN
                )));
            }
            Ok(attest::decode_snappy(&body).map_err(|e| unprefixed(&e)))
        }
    }
}

/// A verifier's refusal without its leading `attestation: `: the line already says which attestation.
fn unprefixed(e: &attest::AttestError) -> String {
    let text = e.to_string();
    text.strip_prefix("attestation: ")
        .unwrap_or(&text)
        .to_string()
}

/// The trusted root: the one embedded in this build, or the JSON Lines file `[proof] trusted_root` names
/// in the default branch.
fn trusted_roots(path: &str, remote: &Remote, branch: &str) -> Result<TrustedRoots, Failure> {
    if path.trim().is_empty() {
        return TrustedRoots::production().map_err(|e| {
            Failure::unexpected("the embedded Sigstore trusted root does not load").caused_by(e)
        });
    }
    let bytes = match remote.client.file(&remote.repo, path, branch) {
        Ok(bytes) => bytes,
        Err(GitHubError::NotFound { .. }) => {
            return Err(Failure::usage(format!(
                "`[proof] trusted_root` names `{path}`, which is not on the default branch `{branch}`"
            ))
            .with_hint("commit the file `gh attestation trusted-root` prints, or empty the setting"));
        }
        Err(e) => return Err(Failure::from(e)),
    };
    TrustedRoots::from_json_lines(&String::from_utf8_lossy(&bytes)).map_err(|e| {
        Failure::new(ExitStatus::Usage, format!("{branch}:{path}: {e}")).with_hint(
            "write it as `gh attestation trusted-root` prints it: one JSON document a line",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_is_scheme_and_host() {
        assert_eq!(origin("https://github.com/octo/shop"), "https://github.com");
        assert_eq!(
            origin("https://ghe.example:8443/octo/shop"),
            "https://ghe.example:8443"
        );
        assert_eq!(origin("https://github.com"), "https://github.com");
    }
}
