//! aayudha verify: turns "done" into a checkable claim.
//!
//! The modules follow the pipeline `event → story → select → floors → pack → publish → ledger`
//! (`docs/architecture.md`, whose table the import test enforces): `event` parses the runner's event once,
//! `story` is the story a change is for (its Ready snapshot and evidence map), `maps` reads the feature
//! maps, `select` chooses the checks a change needs, `floors` judge it (feature map, weakening, behaviour
//! checks in the `sandbox`, coverage, test evidence, red-on-base) with `steps` (the built-in step runner's
//! typed steps) and `runners` (one module per test stack behind one trait), `pack` builds and verifies the
//! hashed proof pack, `gate` runs one change (its trust setup, its plan, the floors, the pack), `publish`
//! uploads it and keeps the comment, `ledger` keeps the ledger branch (Ready snapshots, landed packs), and
//! `output` renders what was found (plain text, JSON, annotations, Markdown). Beside them: `log` (the log
//! as the runner reads it, every text from a pull request fenced), `registry` (every command, as data, and
//! the clap tree built from it), `cli` (the front end and the one error renderer), `settings` (flags and
//! environment resolved once, where GitHub is, the token orders), `config` (`.aayudha/config.toml` over
//! the embedded defaults), `git` (git2 helpers), `github` (the REST client), `hash` (SHA-256), `safe_fs`
//! (files of untrusted trees, never through a link), `clock` (UTC stamps), `machine_paths` (a machine's
//! paths written the same on every machine), `failure` (what a command returns when it cannot do its
//! work), `timing` (where a run's time goes, on request), `setup` (what `init` and `install` write),
//! `maintain` (the maintain brief), `shard` (a sharded gate's split by measured time and its timings
//! sidecar), `attest` (the attest job's Sigstore bundles verified offline, and ship's policy over the
//! verified certificate) and `commands` (one module per command, each taking a context and plain options).

pub mod attest;
pub mod cli;
pub(crate) mod clock;
pub(crate) mod commands;
pub mod config;
pub(crate) mod event;
pub mod exit;
pub(crate) mod failure;
pub(crate) mod floors;
pub(crate) mod gate;
pub mod generate;
pub(crate) mod git;
pub mod github;
pub mod hash;
pub(crate) mod ledger;
pub(crate) mod log;
pub(crate) mod machine_paths;
pub(crate) mod maintain;
pub(crate) mod maps;
pub(crate) mod mcp;
pub(crate) mod output;
pub mod pack;
pub mod publish;
pub mod registry;
pub(crate) mod retry;
pub(crate) mod runners;
pub(crate) mod safe_fs;
pub(crate) mod sandbox;
pub(crate) mod select;
pub(crate) mod settings;
pub(crate) mod setup;
pub mod shard;
pub(crate) mod steps;
pub(crate) mod story;
pub(crate) mod timing;
