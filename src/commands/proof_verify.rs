//! `aayu proof verify <story>`: the story's best pack on the ledger (the newest authoritative, else the
//! newest advisory), checked as SPEC §6 says. Exit 4 when it does not verify; floors are reported, not
//! integrity.

use std::fmt::Write as _;
use std::io::Write as _;

use serde::Serialize;

use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::ledger::store::Ledger;
use crate::pack::Store;
use crate::pack::verify::{self, Finding, Stored};
use crate::pack::{self, Pack};
use crate::settings::options::ProofVerifyOptions;
use crate::settings::remote;
use crate::story::ready;

/// `--json`: one object, schema_version 1.
#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    story: u64,
    /// The ledger path of the pack verified.
    pack: String,
    authority: String,
    pr: u64,
    pr_head_sha: String,
    verifies: bool,
    failures: Vec<Finding>,
    artifacts_checked: usize,
    artifacts_not_stored: usize,
    floors_hold: bool,
    notes: Vec<String>,
}

/// A pack on the ledger: where, whether it is authoritative, and the pack or why it does not read.
struct Candidate {
    dir: String,
    authoritative: bool,
    decoded: Result<Pack, Undecoded>,
}

/// Why a pack.json on the ledger gives no pack.
#[derive(Debug, thiserror::Error)]
enum Undecoded {
    #[error(transparent)]
    Decode(#[from] pack::DecodeError),
    #[error("pack.json cannot be read")]
    Missing,
    #[error(transparent)]
    Ledger(#[from] crate::ledger::store::LedgerError),
}

/// An LFS pointer's bytes, read through `git lfs smudge` when git-lfs is installed.
fn through_lfs(root: &std::path::Path, pointer: &[u8]) -> Stored {
    let child = std::process::Command::new("git")
        .current_dir(root)
        .env("LC_ALL", "C")
        .args(["lfs", "smudge"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return Stored::Elsewhere("an LFS object, and git cannot run here".into());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(pointer);
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => Stored::Bytes(out.stdout),
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("is not a git command") => {
            Stored::Elsewhere("an LFS object: install git-lfs to check its bytes".into())
        }
        Ok(out) => Stored::Elsewhere(format!(
            "an LFS object git-lfs could not fetch: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Stored::Elsewhere(format!("an LFS object: {e}")),
    }
}

pub fn run(ctx: &mut Context, options: ProofVerifyOptions) -> Result<ExitStatus, Failure> {
    let (repo, config) = super::repo_and_config(ctx)?;
    let story = options.story;
    // The token is looked for once (it may run `gh auth token`): for the fetch, and for the PR's head.
    let token = remote::token(ctx.env).ok();
    let network = remote::network(ctx.github, token.as_ref());
    let ledger =
        Ledger::open(repo.root(), &config.ledger.branch, network).map_err(Failure::from)?;
    ledger.fetch().map_err(Failure::from)?;

    let (dir, pack) = best_pack(&ledger, story, &config.ledger.branch)?;
    let snapshot = snapshot(&ledger, story, &config.ledger.branch)?;
    let pr_head = if pack.pr == 0 {
        Ok(None)
    } else {
        pr_head(ctx, &options, &repo, token.as_ref(), pack.pr).map_err(|e| e.to_string())
    };
    let root = repo.root().to_path_buf();
    let env = ctx.env;
    let read = |a: &pack::Artifact| stored(&ledger, &dir, &root, env, a);
    let outcome = verify::verify(&pack, &read, Some(&snapshot), &pr_head);
    let report = Report {
        schema_version: 1,
        story,
        pack: format!("{dir}/pack.json"),
        authority: pack.authority.kind.as_str().to_string(),
        pr: pack.pr,
        pr_head_sha: pack.pr_head_sha.clone(),
        verifies: outcome.failures.is_empty(),
        failures: outcome.failures,
        artifacts_checked: outcome.artifacts_checked,
        artifacts_not_stored: outcome.artifacts_not_stored,
        floors_hold: pack.checks.iter().all(pack::Check::holds),
        notes: outcome.notes,
    };
    let written = if options.json {
        super::write_json(ctx.out, &report)?
    } else {
        super::write_report(ctx, &render(&report))?
    };
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(if report.verifies {
        ExitStatus::Ok
    } else {
        ExitStatus::ProofFails
    })
}

/// The story's best pack on the ledger, and its folder: of the candidates
/// `proof/<story>/<head>/authoritative/` and `proof/<story>/<head>/advisory/<stamp>/`, the newest
/// authoritative first, else the newest advisory; a pack that does not decode comes first of its kind, so
/// that damage is reported rather than passed over (exit 4).
fn best_pack(ledger: &Ledger, story: u64, branch: &str) -> Result<(String, Pack), Failure> {
    let mut candidates: Vec<Candidate> = ledger
        .list(&format!("proof/{story}"))
        .map_err(Failure::from)?
        .into_iter()
        .filter_map(|path| {
            let dir = path.strip_suffix("/pack.json")?.to_string();
            let parts: Vec<&str> = dir.split('/').collect();
            let authoritative = match parts.as_slice() {
                [_, _, _, "authoritative"] => true,
                [_, _, _, "advisory", _] => false,
                _ => return None,
            };
            let decoded = match ledger.read(&path) {
                Ok(Some(bytes)) => pack::decode(&bytes).map_err(Undecoded::from),
                Ok(None) => Err(Undecoded::Missing),
                Err(e) => Err(Undecoded::from(e)),
            };
            Some(Candidate {
                dir,
                authoritative,
                decoded,
            })
        })
        .collect();
    candidates.sort_by(|a, b| {
        let key = |c: &Candidate| {
            (
                c.authoritative,
                c.decoded.is_err(),
                c.decoded
                    .as_ref()
                    .map(|p| p.created_at.clone())
                    .unwrap_or_default(),
                c.dir.clone(),
            )
        };
        key(b).cmp(&key(a))
    });
    let Some(best) = candidates.into_iter().next() else {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!("story #{story} has no pack on the `{branch}` branch"),
        )
        .with_hint(
            "the merge gate's pack lands with `aayu ship`; a local one with `aayu proof push`",
        ));
    };
    match best.decoded {
        Ok(pack) => Ok((best.dir, pack)),
        Err(e) => Err(Failure::new(
            ExitStatus::ProofFails,
            format!("{}/pack.json does not verify: {e}", best.dir),
        )),
    }
}

/// The story's Ready snapshot on the ledger branch, or why there is none to check the pack against.
fn snapshot(
    ledger: &Ledger,
    story: u64,
    branch: &str,
) -> Result<Result<ready::Snapshot, String>, Failure> {
    let snapshot_path = crate::story::ready_path(story);
    Ok(match ledger.read(&snapshot_path).map_err(Failure::from)? {
        Some(bytes) => ready::parse(
            &String::from_utf8_lossy(&bytes),
            &format!("{branch}:{snapshot_path}"),
        )
        .map_err(|e| e.to_string()),
        None => Err(format!(
            "story #{story} has no Ready snapshot (`{snapshot_path}`) on the `{branch}` branch"
        )),
    })
}

/// Why the pull request's head cannot be had (said in the report, not failed on).
#[derive(Debug, thiserror::Error)]
enum NoPrHead {
    /// No repository on GitHub to ask: what resolving it said, its hint in parentheses.
    #[error("{message}{}", .hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    NoRemote {
        message: String,
        hint: Option<String>,
    },
    #[error(transparent)]
    GitHub(#[from] crate::github::GitHubError),
}

/// The head of pull request `pr` on GitHub, or why it cannot be had.
fn pr_head(
    ctx: &Context,
    options: &ProofVerifyOptions,
    repo: &crate::git::Repo,
    token: Option<&crate::github::Token>,
    pr: u64,
) -> Result<Option<String>, NoPrHead> {
    let remote = token
        .ok_or_else(|| remote::no_token(ctx.env))
        .and_then(|t| {
            remote::resolve_with(
                options.repo.as_deref(),
                ctx.env,
                ctx.github,
                repo.origin_slug(),
                t,
            )
        })
        .map_err(|f| NoPrHead::NoRemote {
            message: f.message,
            hint: f.hint,
        })?;
    Ok(Some(remote.client.pull(&remote.repo, pr)?.head_sha))
}

/// An artifact of the pack in folder `dir` as it is stored: in the bucket, on the ledger, or an LFS
/// object read through git-lfs.
fn stored(
    ledger: &Ledger,
    dir: &str,
    root: &std::path::Path,
    env: &crate::settings::Env,
    a: &pack::Artifact,
) -> Stored {
    if a.store == Store::Bucket {
        return from_bucket(a, env);
    }
    match ledger.read(&format!("{dir}/artifacts/{}", a.path)) {
        Ok(Some(bytes))
            if a.store == Store::Lfs || bytes.starts_with(b"version https://git-lfs") =>
        {
            if bytes.starts_with(b"version https://git-lfs") {
                through_lfs(root, &bytes)
            } else {
                Stored::Bytes(bytes)
            }
        }
        Ok(Some(bytes)) => Stored::Bytes(bytes),
        _ => Stored::Missing,
    }
}

fn render(r: &Report) -> String {
    let mut text = format!(
        "story #{}: {} ({}{})\n",
        r.story,
        r.pack,
        r.authority,
        if r.pr > 0 {
            format!(", pull request #{}", r.pr)
        } else {
            String::new()
        }
    );
    if r.verifies {
        let _ = writeln!(
            text,
            "  verifies: {} checked, {} not stored; {}",
            crate::log::count(r.artifacts_checked, "artifact", "artifacts"),
            r.artifacts_not_stored,
            if r.floors_hold {
                "every floor holds"
            } else {
                "a floor does not hold"
            }
        );
    } else {
        let _ = writeln!(text, "  does not verify:");
        for f in &r.failures {
            let _ = writeln!(text, "    {}", f.said());
        }
    }
    for note in &r.notes {
        let _ = writeln!(text, "  note: {note}");
    }
    text
}

/// A media file in the bucket its `object` names, read with the environment's credential; when it cannot
/// be read it is counted as not stored, and why is said.
fn from_bucket(a: &pack::Artifact, env: &crate::settings::Env) -> Stored {
    use crate::publish::bucket::Bucket;
    if a.object.is_empty() {
        return Stored::Elsewhere("`store: bucket` without an `object`: not checked".into());
    }
    let read = Bucket::open_object(&a.object, env).and_then(|(bucket, key)| bucket.read(&key));
    match read {
        Ok(bytes) => Stored::Bytes(bytes),
        Err(e) => Stored::Elsewhere(format!(
            "in the bucket, not readable here ({e}); not checked"
        )),
    }
}
