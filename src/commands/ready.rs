//! `aayu ready <story>`: freezes a story's numbered Completion Goal into its Ready snapshot on the ledger
//! branch (`specs/<story>/ready.md`, SPEC §6), with its SHA-256, its labels and where it came from.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use crate::commands::{Context, Failure, github_failure, ledger_failure, short, write_out};
use crate::exit::ExitStatus;
use crate::ledger::ready;
use crate::ledger::store::{Existing, Ledger};
use crate::settings::remote;

/// What `aayu ready` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ReadyOptions {
    pub story: u64,
    pub refreeze: bool,
    pub repo: Option<String>,
}

impl ReadyOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> ReadyOptions {
        ReadyOptions {
            story: m.get_one::<u64>("story").copied().unwrap_or(0),
            refreeze: m.get_flag("refreeze"),
            repo: m.get_one::<String>("repo").cloned(),
        }
    }
}

/// JSON as SPEC §6 writes the snapshot's line: `{"story": 131, "labels": ["type:bug"]}`.
fn spaced(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", serde_json::Value::String(k.clone()), spaced(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        serde_json::Value::Array(items) => format!(
            "[{}]",
            items.iter().map(spaced).collect::<Vec<_>>().join(", ")
        ),
        scalar => scalar.to_string(),
    }
}

pub fn run(ctx: &mut Context, options: ReadyOptions) -> Result<ExitStatus, Failure> {
    let (repo, config) = super::repo_and_config(ctx)?;
    let remote = remote::resolve(options.repo.as_deref(), ctx.env, repo.origin_slug())?;
    let story = options.story;

    let issue = remote
        .client
        .issue(&remote.repo, story)
        .map_err(github_failure)?;
    if issue.is_pull_request {
        return Err(Failure::usage(format!(
            "#{story} is a pull request, not a story: give the issue the pull request implements"
        )));
    }
    let body = issue.body.clone().unwrap_or_default();
    let goal = ready::completion_goal(&body).ok_or_else(|| {
        Failure::usage(format!(
            "story #{story} has no `## Completion Goal` section"
        ))
        .with_hint(
            "add one to the issue: `## Completion Goal`, then a numbered list of what done means",
        )
    })?;
    let criteria =
        ready::criteria(&goal).map_err(|e| Failure::usage(format!("story #{story}: {e}")))?;
    if criteria.is_empty() {
        return Err(Failure::usage(format!(
            "story #{story}'s Completion Goal has no numbered criteria"
        ))
        .with_hint("write each criterion as a numbered line: `1. The total skips blank lines.`"));
    }
    let hash = ready::goal_hash(&goal);
    let now = ctx.env.now()?;
    let frozen_at = crate::clock::utc_stamp(now, false);

    let ledger = Ledger::open(repo.root(), &config.ledger.branch, remote.network.clone())
        .map_err(ledger_failure)?;
    ledger.fetch().map_err(ledger_failure)?;
    let path = format!("specs/{story}/ready.md");
    let mut meta = json!({
        "story": story,
        "completion_goal_hash": hash,
        "labels": issue.labels,
        "source": format!("{}#{story}", remote.repo),
        "frozen_at": frozen_at,
    });
    let existing = match ledger.read(&path).map_err(ledger_failure)? {
        Some(bytes) => Some(ready::parse(
            &String::from_utf8_lossy(&bytes),
            &format!("{}:{path}", config.ledger.branch),
        )),
        None => None,
    };
    if let Some(previous) = &existing {
        if !options.refreeze {
            let said = match previous {
                Ok(s) if s.meta.completion_goal_hash == hash => {
                    "with this same Completion Goal".to_string()
                }
                Ok(s) => format!(
                    "with another Completion Goal ({})",
                    short(&s.meta.completion_goal_hash)
                ),
                Err(e) => format!("but it does not read: {e}"),
            };
            return Err(Failure::usage(format!(
                "story #{story} is already Ready on `{}` {said}",
                config.ledger.branch
            ))
            .with_hint("pass `--refreeze` to replace its snapshot (recorded in the new one)"));
        }
        meta["refrozen"] = json!({
            "previous_completion_goal_hash": previous
                .as_ref()
                .map(|s| s.meta.completion_goal_hash.clone())
                .unwrap_or_default(),
        });
    }
    let mut text = format!(
        "# Story {story}: {}\n\n",
        issue.title.replace(['\n', '\r'], " ")
    );
    let _ = writeln!(text, "<!-- aayudha:ready {} -->\n", spaced(&meta));
    let _ = writeln!(text, "## Completion Goal\n\n{goal}");
    // What was written must read back as the same snapshot.
    ready::parse(&text, &path).map_err(|e| {
        Failure::unexpected(format!(
            "the snapshot aayu made does not read back (a bug): {e}"
        ))
    })?;

    let (login, id) = remote
        .client
        .user()
        .map_err(github_failure)?
        .unwrap_or_else(|| ("github-actions[bot]".into(), 41898282));
    let author = ledger.author(&login, id);
    let files = BTreeMap::from([(path.clone(), text.into_bytes())]);
    let message = if existing.is_some() {
        format!(
            "ready: story #{story} refrozen (Completion Goal {})",
            short(&hash)
        )
    } else {
        format!("ready: story #{story} (Completion Goal {})", short(&hash))
    };
    let commit = ledger
        .write(&files, Existing::Replace, &message, &author)
        .map_err(ledger_failure)?;
    let line = format!(
        "story #{story} is Ready: {} criteria, Completion Goal sha256 {hash}\n  {}:{path} at {}\n",
        criteria.len(),
        config.ledger.branch,
        short(&commit.to_string())
    );
    write_out(ctx.out, &line)?;
    Ok(ExitStatus::Ok)
}
