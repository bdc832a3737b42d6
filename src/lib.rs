//! aayudha verify: turns "done" into a checkable claim.
//!
//! The modules follow the pipeline: `maps` reads the feature maps, `floors` judges them against the source,
//! `output` renders what was found. Beside them: `registry` (every command, as data), `cli` (the clap
//! front end built from the registry), `settings` (flags and environment resolved once), `config`
//! (`.aayudha/config.toml` over the embedded defaults), `git` (git2 helpers) and `commands` (one module per
//! command, each taking a context and plain options).

pub(crate) mod cleanup;
pub mod cli;
pub(crate) mod commands;
pub mod config;
pub mod exit;
pub(crate) mod failure;
pub(crate) mod floors;
pub(crate) mod gate;
pub mod generate;
pub(crate) mod git;
pub mod github;
pub(crate) mod ledger;
pub(crate) mod maps;
pub(crate) mod output;
pub mod pack;
pub mod publish;
pub mod registry;
pub(crate) mod safe_fs;
pub(crate) mod sandbox;
pub(crate) mod select;
pub(crate) mod settings;
