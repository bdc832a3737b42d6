//! The integration tests, one binary (each extra test binary would link git2, octocrab, rustls and
//! jsonschema again): a module per area, through the real `aayu` binary, with the helpers in `common` and
//! the fakes of GitHub and of the Actions results service in `support`.

mod common;
mod support;

mod action;
mod archive;
mod artifact;
mod behaviour;
mod bounds;
mod browser;
mod build_cache;
mod canary;
mod ci;
mod comment;
mod contract_errors;
mod coverage;
mod doctor;
mod generated;
mod github_client;
mod github_conformance;
mod harness;
mod hostile_input;
mod image;
mod init;
mod install;
mod js;
mod ledger;
mod local_loop;
mod maintain;
mod mcp;
mod media;
mod no_root;
mod proof_comment;
mod proof_push;
mod proof_verify;
mod python;
mod real_layouts;
mod registry;
mod release;
mod select;
mod ship;
mod step_runner;
mod texts;
mod this_repository;
mod verify_map;
mod weakening;
