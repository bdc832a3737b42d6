//! In-process fakes of what aayu talks to: GitHub's REST API (`fake_github`) and the Actions results
//! service with its blob store (`fake_results`).

pub mod fake_github;
pub mod fake_results;
