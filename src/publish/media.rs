//! Media on their way to the ledger, for `aayu ship` and `aayu proof push --media`: never into git (a media
//! kind, or content that is an image, video, audio or PDF, whatever its kind), `none` without a bucket, and
//! `bucket` with its `object` only once the upload read back whole.

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::exit::ExitStatus;
use crate::failure::Failure;
use crate::log::Log;
use crate::pack::{self, Pack};
use crate::publish::bucket::{Bucket, BucketError, Retention};
use crate::settings::Env;

/// Whether an artifact's bytes are media.
pub(crate) fn is_media(artifact: &pack::Artifact, bytes: &[u8]) -> bool {
    pack::is_media_file(artifact.kind, &bytes[..bytes.len().min(pack::SNIFF_BYTES)])
}

/// A bucket error as a failure: a `[proof] media` that is not a bucket URL is the user's to fix (exit 2),
/// anything the store refused is exit 1; both with the hint.
pub(crate) fn bucket_failure(e: BucketError) -> Failure {
    let status = match e {
        BucketError::Url { .. } => ExitStatus::Usage,
        _ => ExitStatus::Failure,
    };
    let hint = e.hint();
    Failure::from_error(status, &e).with_optional_hint(hint)
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
    let bucket = Bucket::open(url, env).map_err(bucket_failure)?;
    let (story, head) = (pack.story, pack.pr_head_sha.clone());
    for a in pack.artifacts.iter_mut() {
        let Some(bytes) = media.get(&a.path) else {
            continue;
        };
        let key = bucket.key(story, &head, &a.path);
        bucket.upload(&key, bytes).map_err(bucket_failure)?;
        a.store = "bucket".into();
        a.object = bucket.object_url(&key);
    }
    match bucket.retention(retention_days) {
        Retention::Set { kept } => {
            let _ = writeln!(
                log,
                "media: the lifecycle rule `{}` expires `{}/` in {retention_days} days (the bucket's {kept} other rule(s) kept)",
                crate::publish::bucket::RULE_ID,
                bucket.prefix
            );
        }
        Retention::Unchanged => {}
        Retention::ByHand { why, rule } => {
            let _ = writeln!(
                log,
                "note: the media retention ({retention_days} days, `[proof] retention_days`) was not set: {why}\n  set this rule on `{}` yourself:\n  {rule}",
                bucket.bucket
            );
        }
    }
    Ok(media.len())
}
