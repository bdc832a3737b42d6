//! `aayu ready <story>`: freezes a story's numbered Completion Goal into its Ready snapshot on the ledger
//! branch (`specs/<story>/ready.md`, SPEC §6), with its SHA-256, its labels and where it came from.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use crate::commands::{Context, Failure, short, write_out};
use crate::exit::ExitStatus;
use crate::ledger::store::{Existing, Ledger};
use crate::settings::options::ReadyOptions;
use crate::settings::remote::{self, Remote};
use crate::story::ready;

/// The story as it is frozen: from the issue, or from a local file.
struct Story {
    title: String,
    /// The Markdown the Completion Goal is taken from.
    body: String,
    labels: Vec<String>,
    /// `owner/name#131`, or `file:stories/131.md`.
    source: String,
    /// Where the story was read, in messages: `story #131`, `stories/131.md`.
    named: String,
}

/// The story from a Markdown file of the repository (`--file`): its first `# ` heading is the title (a
/// leading `Story N:` dropped), the first `Labels:` line outside the Completion Goal gives labels (comma-separated),
/// and `--label`s are added after them.
fn story_from_file(
    repo: &crate::git::Repo,
    start: &std::path::Path,
    file: &std::path::Path,
    story: u64,
    extra: &[String],
) -> Result<Story, Failure> {
    let path = start.join(file);
    let shown = file.display().to_string();
    let inside = std::fs::canonicalize(&path)
        .ok()
        .zip(std::fs::canonicalize(repo.root()).ok())
        .and_then(|(file, root)| {
            file.strip_prefix(&root)
                .ok()
                .map(|rel| rel.to_string_lossy().into_owned())
        });
    let Some(rel) = inside else {
        if !path.exists() {
            return Err(Failure::usage(format!(
                "cannot read the story file `{shown}`: no such file"
            )));
        }
        return Err(Failure::usage(format!(
            "the story file `{shown}` is outside the repository: the snapshot records its path in the repository"
        ))
        .with_hint("keep stories in the repository (for example `stories/<n>.md`)"));
    };
    // Read as a file of the repository: a regular file, at most 1 MiB, no link followed.
    let bytes = crate::safe_fs::read(repo.root(), &rel, 1 << 20)
        .map_err(|e| Failure::usage(format!("cannot read the story file `{rel}`: {e}")))?;
    let body = String::from_utf8(bytes)
        .map_err(|_| Failure::usage(format!("the story file `{rel}` is not UTF-8 text")))?;
    let title = body
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| {
            let t = t.trim();
            let prefix = format!("Story {story}:");
            t.strip_prefix(&prefix).unwrap_or(t).trim().to_string()
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| {
            std::path::Path::new(&rel)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    // The first `Labels:` line outside the Completion Goal (where it would be part of what is hashed).
    let mut labels: Vec<String> = Vec::new();
    let mut in_goal = false;
    for line in body.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with("## ") || line == "##" {
            in_goal = line.trim_end() == "## Completion Goal";
            continue;
        }
        if let Some(list) = line.trim().strip_prefix("Labels:").filter(|_| !in_goal) {
            labels.extend(
                list.split(',')
                    .map(|l| l.trim().trim_matches('`').trim().to_string())
                    .filter(|l| !l.is_empty()),
            );
            break;
        }
    }
    labels.extend(
        extra
            .iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty()),
    );
    let mut seen = std::collections::BTreeSet::new();
    labels.retain(|l| seen.insert(l.clone()));
    if let Some(bad) = labels.iter().find(|l| l.chars().any(char::is_control)) {
        return Err(Failure::usage(format!(
            "{rel}: the label {bad:?} holds a control character"
        )));
    }
    Ok(Story {
        title,
        body,
        labels,
        source: format!("file:{rel}"),
        named: format!("`{rel}`"),
    })
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
    let story = options.story;
    if options.file.is_none() && (options.print || !options.labels.is_empty()) {
        return Err(Failure::usage(
            "`--label` and `--print` go with `--file`: a story frozen from its issue takes the issue's labels",
        )
        .with_hint(format!("aayu ready {story} --file STORY.md --label type:bug")));
    }
    // From a file nothing needs the network: no remote, no token.
    let (found, remote) = match &options.file {
        Some(file) => {
            let start = super::start_dir(ctx);
            (
                story_from_file(&repo, &start, file, story, &options.labels)?,
                None,
            )
        }
        None => {
            let (found, remote) = story_from_issue(ctx, &repo, &options)?;
            (found, Some(remote))
        }
    };
    let (goal, criteria) = goal_and_criteria(&found, options.file.is_some())?;
    let hash = ready::goal_hash(&goal);
    let now = ctx.env.now()?;
    let frozen_at = crate::clock::utc_stamp(now, false);

    let path = crate::story::ready_path(story);
    let mut meta = json!({
        "story": story,
        "completion_goal_hash": hash,
        "labels": found.labels,
        "source": found.source,
        "frozen_at": frozen_at,
    });
    if options.print {
        // For `verify --ci --ready FILE`: the snapshot as it would be written, and nothing written.
        let text = snapshot_text(story, &found.title, &meta, &goal, &path)?;
        write_out(ctx.out, &text)?;
        return Ok(ExitStatus::Ok);
    }
    let ledger = open_ledger(&repo, &config.ledger.branch, remote.as_ref())?;
    let refrozen = previous_snapshot(&ledger, &config.ledger.branch, &path, &hash)?;
    if let Some(previous) = &refrozen {
        if !options.refreeze {
            return Err(previous.refused(story, &config.ledger.branch));
        }
        meta["refrozen"] = json!({
            "previous_completion_goal_hash": previous.hash(),
        });
    }
    let text = snapshot_text(story, &found.title, &meta, &goal, &path)?;
    let author = author(ctx, &ledger, remote.as_ref())?;
    let files = BTreeMap::from([(path.clone(), text.into_bytes())]);
    let message = if refrozen.is_some() {
        format!(
            "ready: story #{story} refrozen (Completion Goal {})",
            short(&hash)
        )
    } else {
        format!("ready: story #{story} (Completion Goal {})", short(&hash))
    };
    let commit = ledger
        .write(&files, Existing::Replace, &message, &author)
        .map_err(Failure::from)?;
    let local = if remote.is_none() {
        " (this clone's branch; push it to share it)"
    } else {
        ""
    };
    let line = format!(
        "story #{story} is Ready: {} {}, Completion Goal sha256 {hash}\n  {}:{path} at {}{local}\n",
        criteria.len(),
        if criteria.len() == 1 {
            "criterion"
        } else {
            "criteria"
        },
        config.ledger.branch,
        short(&commit.to_string())
    );
    write_out(ctx.out, &line)?;
    Ok(ExitStatus::Ok)
}

/// The story from its issue on GitHub (never a pull request), and the remote it was read from.
fn story_from_issue(
    ctx: &mut Context,
    repo: &crate::git::Repo,
    options: &ReadyOptions,
) -> Result<(Story, Remote), Failure> {
    let story = options.story;
    let remote = remote::resolve(
        options.repo.as_deref(),
        ctx.env,
        ctx.github,
        repo.origin_slug(),
    )?;
    let issue = remote
        .client
        .issue(&remote.repo, story)
        .map_err(Failure::from)?;
    if issue.is_pull_request {
        return Err(Failure::usage(format!(
            "#{story} is a pull request, not a story: give the issue the pull request implements"
        )));
    }
    let found = Story {
        title: issue.title.clone(),
        body: issue.body.clone().unwrap_or_default(),
        labels: issue.labels.clone(),
        source: format!("{}#{story}", remote.repo),
        named: format!("story #{story}"),
    };
    Ok((found, remote))
}

/// The story's Completion Goal and its numbered criteria (at least one); `from_file` chooses the hint.
fn goal_and_criteria(
    found: &Story,
    from_file: bool,
) -> Result<(String, Vec<ready::Criterion>), Failure> {
    let named = &found.named;
    let goal = ready::completion_goal(&found.body).ok_or_else(|| {
        let failure = Failure::usage(format!("{named} has no `## Completion Goal` section"));
        if from_file {
            failure.with_hint("add the line `## Completion Goal` to the file, then a numbered list of what done means: `1. The total skips blank lines.`")
        } else {
            failure.with_hint(
                "add one to the issue: `## Completion Goal`, then a numbered list of what done means",
            )
        }
    })?;
    let criteria = ready::criteria(&goal).map_err(|e| Failure::usage(format!("{named}: {e}")))?;
    if criteria.is_empty() {
        return Err(Failure::usage(format!(
            "{named}'s Completion Goal has no numbered criteria"
        ))
        .with_hint("write each criterion as a numbered line: `1. The total skips blank lines.`"));
    }
    Ok((goal, criteria))
}

/// The ledger branch: origin's, fetched, when the story came from GitHub; else this clone's.
fn open_ledger(
    repo: &crate::git::Repo,
    branch: &str,
    remote: Option<&Remote>,
) -> Result<Ledger, Failure> {
    Ok(match remote {
        Some(remote) => {
            let ledger =
                Ledger::open(repo.root(), branch, remote.network.clone()).map_err(Failure::from)?;
            ledger.fetch().map_err(Failure::from)?;
            ledger
        }
        None => Ledger::open_local(repo.root(), branch).map_err(Failure::from)?,
    })
}

/// A Ready snapshot already on the ledger: read, or why it does not read.
struct Previous {
    snapshot: Result<ready::Snapshot, ready::SnapshotError>,
    /// The hash of the Completion Goal being frozen now.
    hash: String,
}

impl Previous {
    /// The hash of the previous snapshot's Completion Goal (empty when it does not read).
    fn hash(&self) -> String {
        self.snapshot
            .as_ref()
            .map(|s| s.meta.completion_goal_hash.clone())
            .unwrap_or_default()
    }

    /// Freezing again without `--refreeze`: refused, with what is there.
    fn refused(&self, story: u64, branch: &str) -> Failure {
        let said = match &self.snapshot {
            Ok(s) if s.meta.completion_goal_hash == self.hash => {
                "with this same Completion Goal".to_string()
            }
            Ok(s) => format!(
                "with another Completion Goal ({})",
                short(&s.meta.completion_goal_hash)
            ),
            Err(e) => format!("but it does not read: {e}"),
        };
        Failure::usage(format!(
            "story #{story} is already Ready on `{branch}` {said}"
        ))
        .with_hint("pass `--refreeze` to replace its snapshot (recorded in the new one)")
    }
}

/// The story's snapshot already at `path` on the ledger branch, if any (`hash`: the goal's now).
fn previous_snapshot(
    ledger: &Ledger,
    branch: &str,
    path: &str,
    hash: &str,
) -> Result<Option<Previous>, Failure> {
    Ok(ledger
        .read(path)
        .map_err(Failure::from)?
        .map(|bytes| Previous {
            snapshot: ready::parse(
                &String::from_utf8_lossy(&bytes),
                &format!("{branch}:{path}"),
            ),
            hash: hash.to_string(),
        }))
}

/// The ledger commit's author: the token's user when the story came from GitHub (the Actions bot when
/// the token has none); else git's own order, the repository's configuration, then the variables git
/// reads.
fn author(
    ctx: &Context,
    ledger: &Ledger,
    remote: Option<&Remote>,
) -> Result<crate::ledger::store::Author, Failure> {
    Ok(match remote {
        Some(remote) => {
            let (login, id) = remote
                .client
                .user()
                .map_err(Failure::from)?
                .unwrap_or_else(|| ("github-actions[bot]".into(), 41898282));
            ledger.author(&login, id)
        }
        None => ledger.git_author().or_else(|| {
            Some(crate::ledger::store::Author {
                name: ctx.env.var("GIT_AUTHOR_NAME")?,
                email: ctx.env.var("GIT_AUTHOR_EMAIL")?,
            })
        }).ok_or_else(|| {
            Failure::usage("git has no `user.name` and `user.email` here: the ledger commit needs an author")
                .with_hint("git config user.name \"Your Name\" && git config user.email you@example.com")
        })?,
    })
}

/// The snapshot file: its title line, the metadata line, the Completion Goal; checked to read back.
fn snapshot_text(
    story: u64,
    title: &str,
    meta: &serde_json::Value,
    goal: &str,
    path: &str,
) -> Result<String, Failure> {
    let mut text = format!("# Story {story}: {}\n\n", title.replace(['\n', '\r'], " "));
    let _ = writeln!(text, "<!-- aayudha:ready {} -->\n", spaced(meta));
    let _ = writeln!(text, "## Completion Goal\n\n{goal}");
    // What was written must read back as the same snapshot.
    ready::parse(&text, path).map_err(|e| {
        Failure::unexpected(format!(
            "the snapshot aayu made does not read back (a bug): {e}"
        ))
    })?;
    Ok(text)
}
