//! `aayu proof push <story>`: lands the local pack (`.aayudha/proof/<story>/`, from `aayu verify --ci`) on
//! the ledger as advisory — data artifacts only, every hash checked first — under
//! `proof/<story>/<head>/advisory/<created_at>/`, and leaves its own comment on the pull request, which
//! never replaces the gate's. Never from CI.

use std::collections::BTreeMap;
use std::path::Path;

use crate::commands::{Context, Failure, short, write_out};
use crate::exit::ExitStatus;
use crate::ledger::store::{Existing, Ledger};
use crate::pack::{self, AuthorityKind, Pack, Store};
use crate::settings::options::ProofPushOptions;
use crate::settings::remote::{self, Remote};

/// The marker of the advisory comment: another marker than the gate's, so neither replaces the other.
pub const ADVISORY_MARKER: &str = "<!-- aayudha:advisory -->";

pub fn run(ctx: &mut Context, options: ProofPushOptions) -> Result<ExitStatus, Failure> {
    if ctx.env.in_ci() {
        return Err(Failure::usage(
            "`aayu proof push` lands a local, advisory pack: it does not run in CI",
        )
        .with_hint(
            "in CI the merge gate uploads its pack, and `aayu ship` lands it as authoritative",
        ));
    }
    let (repo, config) = super::repo_and_config(ctx)?;
    let story = options.story;
    let local = repo.root().join(format!(".aayudha/proof/{story}"));
    let mut pack = local_pack(&local, story)?;

    // `--media` needs a bucket: said before anything is read or written.
    if options.media && config.proof.media.trim().is_empty() {
        return Err(Failure::usage("media need a bucket: set `[proof] media`")
            .with_hint("e.g. `[proof] media = \"s3://my-bucket/aayudha\"` in .aayudha/config.toml (docs/ledger.md#media-buckets); without `--media` the media stay `store: none`"));
    }
    let (files, media) = checked_artifacts(&mut pack, &local, options.media)?;

    let remote = remote::resolve(
        options.repo.as_deref(),
        ctx.env,
        ctx.github,
        repo.origin_slug(),
    )?;
    let (login, id) = remote
        .client
        .user()
        .map_err(Failure::from)?
        .ok_or_else(|| {
            Failure::usage("the token has no user: `aayu proof push` needs a person's token")
        })?;
    // The media go to the bucket before anything lands: a pack says `bucket` only for what is there.
    let uploaded = crate::publish::media::upload(
        ctx.env,
        ctx.err,
        &config.proof.media,
        config.proof.retention_days,
        &mut pack,
        &media,
    )?;
    pack.authority = pack::Authority {
        kind: AuthorityKind::Advisory,
        workflow: String::new(),
        run_id: 0,
        writer: format!("{login} (aayu proof push)"),
    };
    let (dir, pack_sha256, landed) = advisory_files(&pack, files, story)?;
    let ledger = Ledger::open(repo.root(), &config.ledger.branch, remote.network.clone())
        .map_err(Failure::from)?;
    let author = ledger.author(&login, id);
    ledger
        .write(
            &landed,
            Existing::Refuse,
            &format!(
                "proof push: story #{story} at {} (advisory)",
                short(&pack.pr_head_sha)
            ),
            &author,
        )
        .map_err(Failure::from)?;

    // Its own comment on the pull request, when there is one.
    let pr = pull_request_of(&remote, &pack)?;
    let mut said = format!(
        "story #{story}: the local pack landed as advisory on `{}` at {dir}/ (pack.json sha256 {pack_sha256})\n",
        config.ledger.branch
    );
    if options.media {
        said.push_str(&format!(
            "  {} uploaded to {}\n",
            crate::log::count(uploaded, "media file", "media files"),
            config.proof.media
        ));
    }
    match pr {
        Some(pr) => {
            comment(&remote, pr, &pack, &login, (&dir, &pack_sha256))?;
            said.push_str(&format!("  commented on pull request #{pr}\n"));
        }
        None => said.push_str("  no open pull request has this head: no comment\n"),
    }
    write_out(ctx.out, &said)?;
    Ok(ExitStatus::Ok)
}

/// Files by their paths, and their bytes.
type Files = BTreeMap<String, Vec<u8>>;

/// The local pack of `story`, in `local` (`.aayudha/proof/<story>/`): it must read and be the story's.
fn local_pack(local: &Path, story: u64) -> Result<Pack, Failure> {
    let bytes = std::fs::read(local.join("pack.json")).map_err(|e| {
        Failure::usage(format!(
            "story #{story} has no local pack: `{}` cannot be read",
            local.join("pack.json").display()
        ))
        .caused_by(e)
        .with_hint(format!(
            "make one with `aayu verify --ci --base <base> --head HEAD --story {story}`"
        ))
    })?;
    let pack = pack::decode(&bytes).map_err(|e| {
        Failure::new(
            ExitStatus::ProofFails,
            format!("{}: {e}", local.join("pack.json").display()),
        )
    })?;
    if pack.story != story {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!("the local pack is story #{}'s, not #{story}'s", pack.story),
        ));
    }
    Ok(pack)
}

/// Data artifacts go to the ledger, media (by kind or by content) never (with `media`, to the bucket):
/// each file is checked against pack.json before anything is written. The data files and the media, by
/// their paths in the pack.
fn checked_artifacts(
    pack: &mut Pack,
    local: &Path,
    with_media: bool,
) -> Result<(Files, Files), Failure> {
    let mut files = BTreeMap::new();
    let mut media = BTreeMap::new();
    for i in 0..pack.artifacts.len() {
        let a = &pack.artifacts[i];
        if a.tombstone.is_some() || !matches!(a.store, Store::Git | Store::None) {
            continue;
        }
        if a.store == Store::None && !with_media {
            continue;
        }
        if !pack::safe_path(&a.path) {
            return Err(Failure::new(
                ExitStatus::ProofFails,
                format!("artifact `{}` escapes the pack", a.path),
            ));
        }
        let data = std::fs::read(local.join("artifacts").join(&a.path)).map_err(|e| {
            Failure::new(
                ExitStatus::ProofFails,
                format!("artifact `{}` is listed but cannot be read", a.path),
            )
            .caused_by(e)
        })?;
        let actual = crate::hash::bytes(&data);
        if actual != a.sha256 || data.len() as u64 != a.size {
            return Err(Failure::new(
                ExitStatus::ProofFails,
                format!(
                    "artifact `{}`: pack.json says sha256 {} and {} bytes, the file has sha256 {actual} and {} bytes",
                    a.path,
                    a.sha256,
                    a.size,
                    data.len()
                ),
            ));
        }
        if a.store == Store::None || crate::publish::media::is_media(a, &data) {
            // Never in git, whatever pack.json said.
            pack.artifacts[i].store = Store::None;
            if with_media {
                media.insert(pack.artifacts[i].path.clone(), data);
            }
            continue;
        }
        files.insert(pack.artifacts[i].path.clone(), data);
    }
    Ok((files, media))
}

/// What lands on the ledger: the folder `proof/<story>/<head>/advisory/<created_at>`, the sha256 of the
/// pack.json written there, and the files by their ledger paths.
fn advisory_files(
    pack: &Pack,
    files: Files,
    story: u64,
) -> Result<(String, String, Files), Failure> {
    let stamp: String = pack
        .created_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let dir = format!("proof/{story}/{}/advisory/{stamp}", pack.pr_head_sha);
    let mut landed: BTreeMap<String, Vec<u8>> = files
        .into_iter()
        .map(|(path, data)| (format!("{dir}/artifacts/{path}"), data))
        .collect();
    let mut json = serde_json::to_vec_pretty(pack)
        .map_err(|e| Failure::unexpected("cannot write the pack").caused_by(e))?;
    json.push(b'\n');
    let pack_sha256 = crate::hash::bytes(&json);
    landed.insert(format!("{dir}/pack.json"), json);
    Ok((dir, pack_sha256, landed))
}

/// The pull request the pack proves, or else the open one whose head it is.
fn pull_request_of(remote: &Remote, pack: &Pack) -> Result<Option<u64>, Failure> {
    if pack.pr > 0 {
        return Ok(Some(pack.pr));
    }
    Ok(remote
        .client
        .pulls(&remote.repo, "open", None)
        .map_err(Failure::from)?
        .into_iter()
        .find(|p| p.head_sha == pack.pr_head_sha)
        .map(|p| p.number))
}

/// The advisory comment on pull request `pr`, once per pack (a repeated push of the same pack does not
/// comment twice).
fn comment(
    remote: &Remote,
    pr: u64,
    pack: &Pack,
    login: &str,
    (dir, pack_sha256): (&str, &str),
) -> Result<(), Failure> {
    let holds = pack.checks.iter().all(pack::Check::holds);
    let body = format!(
        "{ADVISORY_MARKER}\n### aayudha advisory pack — {}\n\nLanded by {} from a local run on `{}`; pack.json sha256 `{pack_sha256}`, on the ledger at `{dir}/`. Advisory: only the merge gate's pack can ship.\n",
        if holds {
            "every floor holds"
        } else {
            "a floor does not hold"
        },
        crate::output::markdown::code(login),
        pack.pr_head_sha
    );
    let already = remote
        .client
        .comments(&remote.repo, pr)
        .map_err(Failure::from)?
        .iter()
        .any(|c| {
            c.login == login && c.body.starts_with(ADVISORY_MARKER) && c.body.contains(pack_sha256)
        });
    if !already {
        remote
            .client
            .create_comment(&remote.repo, pr, &body)
            .map_err(Failure::from)?;
    }
    Ok(())
}
