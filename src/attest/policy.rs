//! Ship's policy over a verified bundle: the leaf certificate must name the gate's own workflow, on the
//! default branch, run by `pull_request_target` in this repository (not a fork), on a GitHub-hosted runner,
//! in the run ship chose (issue 41, "The policy reads the verified leaf certificate"; the extensions are
//! [Fulcio's](https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md)).

use super::Verified;

/// The predicate type `actions/attest` writes in provenance mode.
pub const SLSA_PROVENANCE_V1: &str = "https://slsa.dev/provenance/v1";

/// The OIDC issuer of GitHub Actions tokens (`.8`).
pub const ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// What the gate's own signature must say, from the repository record and the run ship chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// `S`: the origin of the repository record's `html_url`, such as `https://github.com`.
    pub server_origin: String,
    /// `R`: `owner/name`.
    pub repo: String,
    /// `D`: the repository's default branch.
    pub default_branch: String,
    /// The repository record's `id` (`.15`).
    pub repository_id: u64,
    /// The repository record's `owner.id` (`.17`).
    pub owner_id: u64,
    /// The gate workflow's path, such as `.github/workflows/aayudha.yml`.
    pub workflow_path: String,
    /// The run ship chose (`.21`).
    pub run_id: u64,
    /// The run's latest attempt: any attempt from 1 to this one may have signed.
    pub latest_attempt: u64,
    /// `[proof] self_hosted_runners`: accept `.11 = self-hosted`.
    pub self_hosted_runners: bool,
}

/// A value of the certificate the policy compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `.8`, the OIDC issuer.
    Issuer,
    /// The URI subject alternative name.
    San,
    /// `.9`, the build signer URI.
    BuildSignerUri,
    /// `.11`, the runner environment.
    RunnerEnvironment,
    /// `.12`, the source repository URI.
    SourceRepositoryUri,
    /// `.14`, the source repository ref.
    SourceRepositoryRef,
    /// `.15`, the source repository id.
    SourceRepositoryId,
    /// `.17`, the source repository owner's id.
    SourceRepositoryOwnerId,
    /// `.18`, the build config URI.
    BuildConfigUri,
    /// `.20`, the build trigger.
    Trigger,
    /// `.21`, the run invocation URI.
    RunInvocationUri,
    /// The in-toto statement's predicate type.
    PredicateType,
}

impl Field {
    /// How the field is named in a refusal: the extension's last arc, `SAN`, `trigger` or `predicate
    /// type`.
    pub fn name(self) -> &'static str {
        match self {
            Field::Issuer => ".8",
            Field::San => "SAN",
            Field::BuildSignerUri => ".9",
            Field::RunnerEnvironment => ".11",
            Field::SourceRepositoryUri => ".12",
            Field::SourceRepositoryRef => ".14",
            Field::SourceRepositoryId => ".15",
            Field::SourceRepositoryOwnerId => ".17",
            Field::BuildConfigUri => ".18",
            Field::Trigger => "trigger",
            Field::RunInvocationUri => ".21",
            Field::PredicateType => "predicate type",
        }
    }
}

/// The first value that is not what the gate's own signature says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct Mismatch {
    field: Field,
    actual: Option<String>,
    expected: String,
}

impl Mismatch {
    /// Which value differs.
    pub fn field(&self) -> Field {
        self.field
    }

    /// What the certificate says, `None` when it lacks the extension.
    pub fn actual(&self) -> Option<&str> {
        self.actual.as_deref()
    }

    /// What the policy wants.
    pub fn expected(&self) -> &str {
        &self.expected
    }

    /// `.18 is <actual>, not <expected>`; the trigger reads `trigger: push, not pull_request_target`.
    fn render(&self) -> String {
        let actual = self.actual.as_deref().unwrap_or("absent");
        match self.field {
            Field::Trigger => format!("trigger: {actual}, not {}", self.expected),
            field => format!("{} is {actual}, not {}", field.name(), self.expected),
        }
    }
}

/// Whether `verified` is the gate's own signature as `expected` describes it: `.8` the Actions issuer;
/// `.12` `S/R`, `.15` and `.17` this repository and its owner (a fork running the same file differs
/// here); the SAN, `.9` and `.18` all `S/R/<workflow>@refs/heads/D` (no reusable workflow between);
/// `.20` `pull_request_target`; `.14` `refs/heads/D`; `.11` `github-hosted` unless self-hosted runners are
/// allowed; `.21` an attempt from 1 to the latest of the run; the predicate type SLSA provenance v1. `.13`
/// and `.19` are recorded, never compared. The first difference is the answer.
pub fn policy(verified: &Verified, expected: &Expected) -> Result<(), Mismatch> {
    let repo_uri = format!("{}/{}", expected.server_origin, expected.repo);
    let workflow = format!(
        "{repo_uri}/{}@refs/heads/{}",
        expected.workflow_path, expected.default_branch
    );
    let claim = |arc: u32| verified.claim(arc).map(str::to_string);
    let exact = [
        (Field::Issuer, claim(8), ACTIONS_ISSUER.to_string()),
        (Field::SourceRepositoryUri, claim(12), repo_uri.clone()),
        (
            Field::SourceRepositoryId,
            claim(15),
            expected.repository_id.to_string(),
        ),
        (
            Field::SourceRepositoryOwnerId,
            claim(17),
            expected.owner_id.to_string(),
        ),
        (
            Field::San,
            Some(verified.san().to_string()),
            workflow.clone(),
        ),
        (Field::BuildSignerUri, claim(9), workflow.clone()),
        (Field::BuildConfigUri, claim(18), workflow),
        (Field::Trigger, claim(20), "pull_request_target".to_string()),
        (
            Field::SourceRepositoryRef,
            claim(14),
            format!("refs/heads/{}", expected.default_branch),
        ),
    ];
    for (field, actual, wanted) in exact {
        if actual.as_deref() != Some(wanted.as_str()) {
            return Err(Mismatch {
                field,
                actual,
                expected: wanted,
            });
        }
    }
    let runner = verified.claim(11);
    let hosted_or_allowed = runner == Some("github-hosted")
        || (expected.self_hosted_runners && runner == Some("self-hosted"));
    if !hosted_or_allowed {
        return Err(Mismatch {
            field: Field::RunnerEnvironment,
            actual: claim(11),
            expected: if expected.self_hosted_runners {
                "github-hosted or self-hosted".to_string()
            } else {
                "github-hosted".to_string()
            },
        });
    }
    check_run(verified, expected, &repo_uri)?;
    if verified.predicate_type() != SLSA_PROVENANCE_V1 {
        return Err(Mismatch {
            field: Field::PredicateType,
            actual: Some(verified.predicate_type().to_string()),
            expected: SLSA_PROVENANCE_V1.to_string(),
        });
    }
    Ok(())
}

/// `.21` is `S/R/actions/runs/<run>/attempts/<k>` with `1 ≤ k ≤ latest_attempt`, `k` written as GitHub
/// writes it (decimal, no sign, no leading zero).
fn check_run(verified: &Verified, expected: &Expected, repo_uri: &str) -> Result<(), Mismatch> {
    let prefix = format!("{repo_uri}/actions/runs/{}/attempts/", expected.run_id);
    let actual = verified.claim(21);
    let attempt_ok = actual
        .and_then(|a| a.strip_prefix(&prefix))
        .and_then(|k| k.parse::<u64>().ok().filter(|n| n.to_string() == k))
        .is_some_and(|k| (1..=expected.latest_attempt).contains(&k));
    if attempt_ok {
        return Ok(());
    }
    let attempts = if expected.latest_attempt <= 1 {
        "1".to_string()
    } else {
        format!("<1 to {}>", expected.latest_attempt)
    };
    Err(Mismatch {
        field: Field::RunInvocationUri,
        actual: actual.map(str::to_string),
        expected: format!("{prefix}{attempts}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::attest::test_domain::{expected, gate_claims};

    fn with(changes: &[(u32, &str)], san: Option<&str>) -> Verified {
        let mut claims = gate_claims();
        for (arc, value) in changes {
            claims.insert(*arc, (*value).to_string());
        }
        let san = san.map_or_else(|| claims[&9].clone(), str::to_string);
        Verified::for_test(claims, &san, SLSA_PROVENANCE_V1)
    }

    fn refusal(v: &Verified, e: &Expected) -> String {
        policy(v, e)
            .err()
            .map(|m| m.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_gates_own_signature_passes() {
        assert_eq!(policy(&with(&[], None), &expected()), Ok(()));
    }

    #[test]
    fn each_field_is_named_with_both_values() {
        let e = expected();
        let other_wf = "https://github.com/acme/shop/.github/workflows/release.yml@refs/heads/main";
        let cases: Vec<(Verified, String)> = vec![
            (
                with(&[(8, "https://accounts.google.com")], None),
                ".8 is https://accounts.google.com, not https://token.actions.githubusercontent.com".into(),
            ),
            (
                with(&[(12, "https://github.com/evil/shop"), (15, "9"), (17, "8")], None),
                ".12 is https://github.com/evil/shop, not https://github.com/acme/shop".into(),
            ),
            (with(&[(15, "9")], None), ".15 is 9, not 1001".into()),
            (with(&[(17, "8")], None), ".17 is 8, not 2002".into()),
            (
                with(&[(9, other_wf), (18, other_wf)], Some(other_wf)),
                format!(
                    "SAN is {other_wf}, not https://github.com/acme/shop/.github/workflows/aayudha.yml@refs/heads/main"
                ),
            ),
            (
                with(&[(18, other_wf)], None),
                format!(
                    ".18 is {other_wf}, not https://github.com/acme/shop/.github/workflows/aayudha.yml@refs/heads/main"
                ),
            ),
            (
                with(&[(20, "push")], None),
                "trigger: push, not pull_request_target".into(),
            ),
            (
                with(&[(14, "refs/heads/feature")], None),
                ".14 is refs/heads/feature, not refs/heads/main".into(),
            ),
            (
                with(&[(11, "self-hosted")], None),
                ".11 is self-hosted, not github-hosted".into(),
            ),
            (
                with(&[(21, "https://github.com/acme/shop/actions/runs/78/attempts/1")], None),
                ".21 is https://github.com/acme/shop/actions/runs/78/attempts/1, not https://github.com/acme/shop/actions/runs/77/attempts/1".into(),
            ),
        ];
        for (verified, line) in cases {
            assert_eq!(refusal(&verified, &e), line);
        }
        let mut absent = gate_claims();
        absent.remove(&20);
        let v = Verified::for_test(absent, &gate_claims()[&9], SLSA_PROVENANCE_V1);
        assert_eq!(refusal(&v, &e), "trigger: absent, not pull_request_target");
        let v = Verified::for_test(gate_claims(), &gate_claims()[&9], "https://example.com/x");
        assert_eq!(
            refusal(&v, &e),
            "predicate type is https://example.com/x, not https://slsa.dev/provenance/v1"
        );
    }

    #[test]
    fn a_self_hosted_runner_passes_only_with_the_setting() {
        let v = with(&[(11, "self-hosted")], None);
        let allowed = Expected {
            self_hosted_runners: true,
            ..expected()
        };
        assert_eq!(policy(&v, &allowed), Ok(()));
        assert_eq!(
            policy(&with(&[(11, "other")], None), &allowed).map_err(|m| m.field()),
            Err(Field::RunnerEnvironment)
        );
    }

    #[test]
    fn any_attempt_up_to_the_latest_passes() {
        let attempt = |k: &str| {
            with(
                &[(
                    21,
                    &format!("https://github.com/acme/shop/actions/runs/77/attempts/{k}"),
                )],
                None,
            )
        };
        let e = Expected {
            latest_attempt: 2,
            ..expected()
        };
        assert_eq!(policy(&attempt("2"), &e), Ok(()));
        assert_eq!(policy(&attempt("1"), &e), Ok(()));
        for bad in ["3", "0", "02", "+2", "2/x", ""] {
            assert_eq!(
                refusal(&attempt(bad), &e),
                format!(
                    ".21 is https://github.com/acme/shop/actions/runs/77/attempts/{bad}, not https://github.com/acme/shop/actions/runs/77/attempts/<1 to 2>"
                )
            );
        }
    }

    #[test]
    fn the_recorded_commits_are_never_compared() {
        let v = with(&[(13, "ffff"), (19, "eeee")], None);
        assert_eq!(policy(&v, &expected()), Ok(()));
        assert_eq!(v.source_digest(), Some("ffff"));
        assert_eq!(v.build_config_digest(), Some("eeee"));
    }
}
