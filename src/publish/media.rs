//! Media on their way to the ledger, for `aayu ship` and `aayu proof push --media`: never into git (a media
//! kind, or content that is an image, video, audio or PDF, whatever its kind), `none` without a bucket, and
//! `bucket` with its `object` only once the upload read back whole.

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::failure::Failure;
use crate::log::Log;
use crate::pack::{self, Pack};
use crate::publish::bucket::{Bucket, Retention};
use crate::settings::Env;

/// Whether an artifact's bytes are media.
pub(crate) fn is_media(artifact: &pack::Artifact, bytes: &[u8]) -> bool {
    pack::is_media_file(artifact.kind, &bytes[..bytes.len().min(pack::SNIFF_BYTES)])
}

/// Uploads `media` (path → bytes, each an artifact of `pack`) to the bucket `[proof] media` names, under
/// `<prefix>/<story>/<head>/<path>`, and marks each `bucket` with its `object`. The retention is set once
/// (or the rule to set by hand is said once). Returns how many were uploaded.
pub(crate) fn upload(
    env: &Env,
    log: &mut Log,
    url: &str,
    retention_days: u32,
    pack: &mut Pack,
    media: &BTreeMap<String, Vec<u8>>,
) -> Result<usize, Failure> {
    if media.is_empty() {
        return Ok(0);
    }
    let bucket = Bucket::open(url, env).map_err(Failure::from)?;
    let (story, head) = (pack.story, pack.pr_head_sha.clone());
    for a in pack.artifacts.iter_mut() {
        let Some(bytes) = media.get(&a.path) else {
            continue;
        };
        let key = bucket.key(story, &head, &a.path);
        bucket.upload(&key, bytes).map_err(Failure::from)?;
        a.store = pack::Store::Bucket;
        a.object = bucket.object_url(&key);
    }
    match bucket.retention(retention_days) {
        Retention::Set { kept } => {
            let _ = writeln!(
                log,
                "media: the lifecycle rule `{}` expires `{}/` in {} (the bucket's {} kept)",
                crate::publish::bucket::RULE_ID,
                bucket.prefix,
                crate::log::count(retention_days as usize, "day", "days"),
                crate::log::count(kept, "other rule", "other rules")
            );
        }
        Retention::Unchanged => {}
        Retention::ByHand { why, rule } => {
            let _ = writeln!(
                log,
                "note: the media retention ({}, `[proof] retention_days`) was not set: {why}\n  set this rule on `{}` yourself:\n  {rule}",
                crate::log::count(retention_days as usize, "day", "days"),
                bucket.bucket
            );
        }
    }
    Ok(media.len())
}
