//! In-process fakes of what aayu talks to: GitHub's REST API (`fake_github`) and the Actions results
//! service with its blob store (`fake_results`), S3 (`moto`), and a Sigstore trust domain that signs like
//! GitHub's attest job (`sigstore`). A `mod.rs`, unlike the rest: the upload benchmark includes
//! it by path, and only a `mod.rs` resolves its modules' files the same way from there and from the tests.

pub mod fake_github;
pub mod fake_results;
pub mod moto;
pub mod sigstore;
