//! What `verify --ci` and `verify --select` read the same way for one change: where the checkout stands
//! against `--head`, the configuration of the base (or `--config`), and the story — its Ready snapshot
//! (from the ledger, or `--ready`) and the evidence map at the head.

use std::io::Write as _;
use std::path::Path;

use crate::commands::{Context, Failure};
use crate::config::{CONFIG_PATH, Config};
use crate::gate::inputs;
use crate::git::Repo;
use crate::settings::VerifyOptions;
use crate::story::Story;

/// The checkout against `--head`: the gate runs the checkout's files, and the plan reads its maps and
/// package manifests.
pub enum Checkout {
    AtHead,
    /// At another commit.
    Elsewhere {
        at: String,
    },
    /// At the head, with tracked files changed (the first few, shown for a person).
    Changed {
        shown: Vec<String>,
    },
}

impl Checkout {
    /// Where the checkout of `repo` stands against `head` (a full SHA).
    pub fn of(repo: &Repo, head: &str) -> Result<Checkout, Failure> {
        let at = repo.sha("HEAD").map_err(Failure::from)?;
        if at != head {
            return Ok(Checkout::Elsewhere { at });
        }
        let changed = repo.changed_tracked(4).map_err(Failure::from)?;
        if changed.is_empty() {
            return Ok(Checkout::AtHead);
        }
        let shown = changed
            .iter()
            .map(|p| format!("`{}`", p.escape_debug()))
            .collect();
        Ok(Checkout::Changed { shown })
    }
}

/// The configuration and the story of a change from `base` to `head` (full SHAs): the configuration is
/// never read from a tree the change wrote ("Trust in the gate") — the base commit's, or a file the user
/// names — and a change that edits it gets a notice on stderr.
pub fn config_and_story(
    ctx: &mut Context,
    repo: &Repo,
    options: &VerifyOptions,
    start: &Path,
    (base, head): (&str, &str),
) -> Result<(Config, Option<Story>), Failure> {
    let config = inputs::config_of_base(repo, base, options.config.as_deref(), start)?;
    if options.config.is_none() && inputs::config_changed(repo, base, head, CONFIG_PATH) {
        let _ = writeln!(
            ctx.err,
            "notice: this change edits {CONFIG_PATH}; the gate uses the base commit's until it merges"
        );
    }
    let story = match options.story {
        Some(number) => Some(inputs::story(
            repo,
            number,
            options.ready.as_deref(),
            start,
            &config.ledger.branch,
            head,
        )?),
        None => None,
    };
    Ok((config, story))
}

/// `--base` and `--head` as full SHAs (the caller said what a missing one means).
pub fn commits(repo: &Repo, base: &str, head: &str) -> Result<(String, String), Failure> {
    let base = repo.sha(base).map_err(Failure::from)?;
    let head = repo.sha(head).map_err(Failure::from)?;
    Ok((base, head))
}
