//! The proof pack (SPEC §5): `pack.json` schema version 1 and the artifacts it names, with their SHA-256
//! and size. Decoding reads `schema_version` first, validates the document against that version's JSON
//! Schema (`schemas/pack.v1.json`, embedded), and refuses a newer version.

pub(crate) mod build;
pub(crate) mod verify;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::floors::Verdict;
use crate::maps::blocks::ArtifactKind;

/// The workflow artifact the merge gate uploads and the comment job and `aayu ship` read.
pub const ARTIFACT: &str = "aayudha-pack";

/// The schema version this binary writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of version 1, as shipped in `schemas/pack.v1.json`.
pub const SCHEMA_V1: &str = include_str!("../schemas/pack.v1.json");

/// `pack.json` v1, field for field as the Go struct of the seed (`omitempty` fields are skipped when empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pack {
    pub schema_version: u32,
    pub repo: String,
    pub story: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pr: u64,
    pub pr_head_sha: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_sha: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkpoint: String,
    pub seat: String,
    pub host: Host,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    pub identity: Identity,
    pub authority: Authority,
    pub completion_goal_hash: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub footprint: Vec<String>,
    pub criteria: Vec<Criterion>,
    pub artifacts: Vec<Artifact>,
    pub checks: Vec<Check>,
    pub cost: Cost,
    pub links: Links,
    pub created_at: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authority {
    pub kind: AuthorityKind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workflow: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub run_id: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub writer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    pub id: u32,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Relative to the pack's `artifacts/` folder, always `/`-separated.
    pub path: String,
    pub kind: ArtifactKind,
    pub sha256: String,
    pub size: u64,
    pub store: Store,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub object: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstone: Option<Tombstone>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tombstone {
    pub purged_at: String,
    pub reason: String,
}

/// One floor's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub floor: String,
    pub result: Verdict,
    pub value: f64,
    pub threshold: f64,
    pub tool: String,
    pub version: String,
    pub detail: String,
    pub network: String,
}

impl Check {
    /// Whether the floor holds: everything but `fail` and `blocked`.
    pub fn holds(&self) -> bool {
        self.result.holds()
    }
}

/// Where an artifact's bytes are: in git (the ledger), nowhere (media the gate kept out of git), in the
/// media bucket (`object` names it), or Git LFS (packs from before 0.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    Git,
    None,
    Bucket,
    Lfs,
}

/// Where the pack was made: the merge gate (the action) or the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Action,
    Cli,
}

/// Who made it (SPEC §5): a bot, a person, a person standing in for a bot, or CI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Identity {
    Bot,
    Human,
    HumanFallback,
    Ci,
}

/// Whether the pack is the ledger's word (`aayu ship` writes `authoritative`) or advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthorityKind {
    Advisory,
    Authoritative,
}

impl AuthorityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorityKind::Advisory => "advisory",
            AuthorityKind::Authoritative => "authoritative",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub usd: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Links {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub issue: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pr: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ready_snapshot: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run: String,
}

/// Media kinds never go to git: without a bucket their bytes are not stored.
pub fn is_media(kind: ArtifactKind) -> bool {
    matches!(
        kind,
        ArtifactKind::Screenshot | ArtifactKind::Recording | ArtifactKind::SrTranscript
    )
}

/// How many leading bytes [`media_type`] looks at.
pub const SNIFF_BYTES: usize = 8192;

/// The media type of a file whose content is an image, video, audio or PDF — told from its first bytes
/// (the `infer` crate's signatures), whatever kind it was declared as — or `None` for anything else.
pub fn media_type(head: &[u8]) -> Option<&'static str> {
    let found = infer::get(head)?;
    let media = matches!(
        found.matcher_type(),
        infer::MatcherType::Image | infer::MatcherType::Video | infer::MatcherType::Audio
    ) || found.mime_type() == "application/pdf";
    media.then(|| found.mime_type())
}

/// Whether an artifact is media: by its declared kind, or by its content (a PNG declared as `report` is
/// media all the same, and keeps its kind).
pub fn is_media_file(kind: ArtifactKind, head: &[u8]) -> bool {
    is_media(kind) || media_type(head).is_some()
}

/// The first [`SNIFF_BYTES`] of a file, for [`media_type`].
pub fn file_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    std::fs::File::open(path)?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// Why a pack could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the pack is not JSON: {0}")]
    Json(String),
    #[error("the pack has no `schema_version`")]
    NoVersion,
    #[error(
        "the pack has schema_version {0}, newer than this aayu reads ({SCHEMA_VERSION}): update aayu"
    )]
    Newer(u64),
    #[error("the pack does not match schema version {version}: {errors}")]
    Schema { version: u64, errors: String },
}

/// Reads a pack: `schema_version` first, then validation against that version's schema, then the types.
pub fn decode(bytes: &[u8]) -> Result<Pack, DecodeError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| DecodeError::Json(e.to_string()))?;
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or(DecodeError::NoVersion)?;
    if version > u64::from(SCHEMA_VERSION) {
        return Err(DecodeError::Newer(version));
    }
    validate(&value).map_err(|errors| DecodeError::Schema {
        version,
        errors: errors.to_string(),
    })?;
    serde_json::from_value(value).map_err(|e| DecodeError::Schema {
        version,
        errors: e.to_string(),
    })
}

/// Why a pack document does not validate.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("the embedded schema: {0}")]
    EmbeddedJson(serde_json::Error),
    #[error("the embedded schema: {0}")]
    EmbeddedSchema(jsonschema::ValidationError<'static>),
    /// Every failure with its JSON pointer.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Validates a pack document against the v1 schema; the error lists every failure with its JSON pointer.
pub fn validate(value: &serde_json::Value) -> Result<(), SchemaError> {
    let schema: serde_json::Value =
        serde_json::from_str(SCHEMA_V1).map_err(SchemaError::EmbeddedJson)?;
    let validator = jsonschema::validator_for(&schema).map_err(SchemaError::EmbeddedSchema)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/".to_string() } else { at })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SchemaError::Invalid(errors))
    }
}

/// Every regular file under `root` (hidden names skipped), as sorted `/`-separated relative paths: what a
/// run folder or a pack folder holds.
pub(crate) fn files_under(root: &Path) -> std::io::Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, found: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(root, &entry.path(), found)?;
            } else if kind.is_file()
                && let Ok(rel) = entry.path().strip_prefix(root)
            {
                found.push(
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/"),
                );
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    walk(root, root, &mut found)?;
    found.sort();
    Ok(found)
}

/// Whether a pack path is safe: relative, `/`-separated, no `.`/`..`, no backslash, no control character
/// (a newline in a path would start a forged line wherever the path is printed).
pub fn safe_path(path: &str) -> bool {
    // Split by hand: `Path::components` silently drops an inner `.` and a doubled `/`.
    !path.is_empty()
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Writes the pack folder — `pack.json` and `artifacts/<path>` for every artifact, copied from `source` —
/// into `dir` atomically: everything is written beside it first, then renamed into place, so a reader sees
/// the old pack or the new one, never half of one. Media (`store: none`) are in the folder too: it is what
/// the gate uploads as the run artifact, which keeps their bytes until it expires; they never go to git.
pub fn write(dir: &Path, pack: &Pack, source: &Path) -> std::io::Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".pack-")
        .tempdir_in(parent)?;
    for artifact in pack
        .artifacts
        .iter()
        .filter(|a| a.tombstone.is_none() && a.store != Store::Lfs)
    {
        if !safe_path(&artifact.path) {
            return Err(std::io::Error::other(format!(
                "unsafe artifact path `{}`",
                artifact.path
            )));
        }
        let target = staging.path().join("artifacts").join(&artifact.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(source.join(&artifact.path), &target)?;
    }
    let mut json = serde_json::to_vec_pretty(pack).map_err(std::io::Error::other)?;
    json.push(b'\n');
    let mut file = std::fs::File::create(staging.path().join("pack.json"))?;
    file.write_all(&json)?;
    file.sync_all()?;
    if crate::sandbox::cleanup::interrupted() {
        return Err(std::io::Error::other(
            "interrupted: no pack is written for a run that did not finish",
        ));
    }
    let staged = staging.keep();
    let old = parent.join(format!(".old-{}", std::process::id()));
    if dir.exists() {
        std::fs::rename(dir, &old)?;
    }
    std::fs::rename(&staged, dir)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> serde_json::Value {
        serde_json::json!({
            "schema_version": 1, "repo": "o/r", "story": 7, "pr": 3,
            "pr_head_sha": "0123456789abcdef0123456789abcdef01234567",
            "seat": "ai-native-engineer", "host": "cli", "identity": "human",
            "authority": {"kind": "advisory"},
            "completion_goal_hash": "8372bf1e543470d0824a6cec997a2e36b9206eca3075ca93c408ed20133a5862",
            "criteria": [{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}],
            "artifacts": [{"path": "evidence/criterion-1.jsonl", "kind": "api-trace",
                           "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "size": 5, "store": "git"}],
            "checks": [{"floor": "tests", "result": "pass", "value": 1, "threshold": 1, "tool": "cargo test",
                        "version": "1.95", "detail": "", "network": "isolated"}],
            "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0},
            "links": {"issue": "o/r#7"},
            "created_at": "2026-11-29T10:00:00Z"
        })
    }

    #[test]
    fn a_valid_pack_decodes_and_round_trips() {
        let bytes = serde_json::to_vec(&sample()).expect("json");
        let pack = decode(&bytes).expect("valid");
        assert_eq!(pack.story, 7);
        let again = serde_json::to_value(&pack).expect("json");
        assert!(validate(&again).is_ok());
    }

    #[test]
    fn the_seeds_pack_with_a_coverage_check_decodes() {
        // proof-packs.txt's story-131 pack, its `…` entries removed.
        let bytes = include_bytes!("../tests/data/packs/seeds-story-131.json");
        let pack = decode(bytes).expect("the seeds' pack reads");
        assert_eq!(pack.checks[0].floor, "coverage");
        assert_eq!(pack.checks[0].version, "go1.25.14");
        // A floor name is a pattern, not any string.
        let mut v = sample();
        v["checks"][0]["floor"] = "Not A Floor".into();
        assert!(validate(&v).is_err());
    }

    #[test]
    fn a_newer_version_is_refused_with_the_hint() {
        let mut v = sample();
        v["schema_version"] = 2.into();
        let err = decode(&serde_json::to_vec(&v).expect("json")).expect_err("newer");
        assert_eq!(
            err.to_string(),
            "the pack has schema_version 2, newer than this aayu reads (1): update aayu"
        );
    }

    #[test]
    fn the_schema_is_strict() {
        let mut v = sample();
        v["surprise"] = true.into();
        let err = decode(&serde_json::to_vec(&v).expect("json")).expect_err("unknown");
        assert!(err.to_string().contains("surprise"), "{err}");
        let mut v = sample();
        v["artifacts"][0]["kind"] = "photo".into();
        assert!(decode(&serde_json::to_vec(&v).expect("json")).is_err());
        let mut v = sample();
        v.as_object_mut().expect("object").remove("seat");
        assert!(
            decode(&serde_json::to_vec(&v).expect("json"))
                .expect_err("missing")
                .to_string()
                .contains("seat")
        );
        let mut v = sample();
        v["checks"][0]["result"] = "ok".into();
        assert!(decode(&serde_json::to_vec(&v).expect("json")).is_err());
        let mut v = sample();
        v["artifacts"][0]["sha256"] = "xyz".into();
        assert!(decode(&serde_json::to_vec(&v).expect("json")).is_err());
    }

    #[test]
    fn pack_paths_stay_inside() {
        assert!(safe_path("evidence/criterion-1.jsonl"));
        for bad in [
            "",
            "../x",
            "/etc/passwd",
            "a/../b",
            "a\\b",
            "./a",
            "a\0b",
            "a/./b",
            "a//b",
            "a/",
        ] {
            assert!(!safe_path(bad), "{bad:?}");
        }
    }
}
