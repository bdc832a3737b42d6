//! The test trust domain of the unit tests: the file the integration tests sign with too, and what ship
//! expects of its hand-made repository.

#[path = "../../tests/it/support/sigstore.rs"]
mod shared;

pub(crate) use shared::*;

/// What ship expects of `acme/shop`'s gate (run 77, its first attempt).
pub(crate) fn expected() -> super::Expected {
    super::Expected {
        server_origin: "https://github.com".to_string(),
        repo: "acme/shop".to_string(),
        default_branch: "main".to_string(),
        repository_id: 1001,
        owner_id: 2002,
        workflow_path: ".github/workflows/aayudha.yml".to_string(),
        run_id: 77,
        latest_attempt: 1,
        self_hosted_runners: false,
    }
}
