//! The `aayudha-pack` zip: built from a pack folder while it is hashed (never holding the pack in
//! memory), and read back in memory with an allow-list — never extracted with a library's extract-all
//! (`reference/artifact-protocol.md`, "Reading an artifact safely").

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;

use unicode_normalization::UnicodeNormalization;
use zip::write::SimpleFileOptions;

use crate::pack::{self, Pack};

/// Limits on what a zip may hold, against zip bombs and forged size fields.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub entries: usize,
    pub entry_bytes: u64,
    pub total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            entries: 10_000,
            entry_bytes: 256 << 20,
            total_bytes: 1 << 30,
        }
    }
}

/// Why a zip was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArchiveError {
    #[error("the artifact is not a readable zip: {0}")]
    NotZip(String),
    #[error("entry `{name}`: {why}")]
    Entry { name: String, why: String },
    #[error("the zip has more than {0} entries")]
    TooManyEntries(usize),
    #[error("the zip has no pack.json")]
    NoPack,
    #[error("pack.json: {0}")]
    Pack(String),
    #[error("`{0}` is in the zip but pack.json does not list it")]
    NotInManifest(String),
    #[error("artifact `{0}` is listed in pack.json but missing from the zip")]
    Missing(String),
    #[error(
        "artifact `{path}`: expected sha256 {expected} and {expected_size} bytes, found sha256 {actual} and {actual_size} bytes"
    )]
    Mismatch {
        path: String,
        expected: String,
        expected_size: u64,
        actual: String,
        actual_size: u64,
    },
    #[error("cannot write the zip: {0}")]
    Write(String),
}

/// Zips a pack folder (`pack.json` and `artifacts/**`) into `out`, streaming every file, and returns the
/// zip's size and SHA-256. Entries are relative, sorted, without directory entries, deflated at level 6,
/// with a fixed time, so the same folder gives the same bytes.
pub fn build(dir: &Path, out: impl Write) -> Result<(u64, String), ArchiveError> {
    let write_err = |e: &dyn std::fmt::Display| ArchiveError::Write(e.to_string());
    let files = pack::files_under(dir).map_err(|e| write_err(&e))?;
    let mut zip = zip::ZipWriter::new_stream(crate::hash::Writer::new(out));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644)
        .large_file(true);
    for rel in files {
        zip.start_file(rel.as_str(), options)
            .map_err(|e| write_err(&e))?;
        let mut file = std::fs::File::open(dir.join(&rel)).map_err(|e| write_err(&e))?;
        std::io::copy(&mut file, &mut zip).map_err(|e| write_err(&e))?;
    }
    let (_, sha256, size) = zip
        .finish()
        .map_err(|e| write_err(&e))?
        .into_inner()
        .finish();
    Ok((size, sha256))
}

/// A pack read from a zip: its manifest and the bytes of every artifact it holds.
#[derive(Debug)]
pub struct Unpacked {
    pub pack: Pack,
    /// The SHA-256 of pack.json's bytes as stored: the hash the comment, the status and `aayu ship` name.
    pub pack_sha256: String,
    /// pack.json's bytes as stored: what the gate's attestation signs, and what ship lands as
    /// `gate/pack.json`.
    pub pack_bytes: Vec<u8>,
    pub artifacts: BTreeMap<String, Vec<u8>>,
}

/// Reads a pack zip in memory. Every entry must be a plain file with a safe, unique name; pack.json must
/// decode (its schema version first); every other entry must be `artifacts/<path>` of an artifact that
/// pack.json lists, with its SHA-256 and size; and every listed artifact with stored bytes must be there.
pub fn read(bytes: &[u8], limits: Limits) -> Result<Unpacked, ArchiveError> {
    let mut files = entries(bytes, limits)?;
    let manifest = files.remove("pack.json").ok_or(ArchiveError::NoPack)?;
    unpacked(manifest, files)
}

/// Every entry of a zip, in memory, by name: each a plain file with a safe, unique name (no `..`, no
/// absolute or backslashed name, no link, no directory, no encryption, no two names one case or Unicode
/// normalisation apart) within `limits`. What the names may be is the caller's allow-list.
pub fn entries(bytes: &[u8], limits: Limits) -> Result<BTreeMap<String, Vec<u8>>, ArchiveError> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| ArchiveError::NotZip(e.to_string()))?;
    if zip.len() > limits.entries {
        return Err(ArchiveError::TooManyEntries(limits.entries));
    }
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut folded: BTreeMap<String, String> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| ArchiveError::NotZip(e.to_string()))?;
        let raw = entry.name_raw().to_vec();
        let name = String::from_utf8(raw).map_err(|_| ArchiveError::Entry {
            name: String::from_utf8_lossy(entry.name_raw()).into_owned(),
            why: "the name is not UTF-8".into(),
        })?;
        let refuse = |why: &str| ArchiveError::Entry {
            name: name.clone(),
            why: why.to_string(),
        };
        if name.contains('\0') {
            return Err(refuse("the name holds a NUL byte"));
        }
        if name.contains('\\') {
            return Err(refuse("the name holds a backslash"));
        }
        if name.starts_with('/') || name.as_bytes().get(1) == Some(&b':') {
            return Err(refuse("the name is absolute"));
        }
        if !pack::safe_path(&name) {
            return Err(refuse("the name has `..`, `.` or an empty part"));
        }
        if entry.is_dir() {
            return Err(refuse("a directory entry"));
        }
        if entry.is_symlink() {
            return Err(refuse("a symbolic link"));
        }
        if entry.encrypted() {
            return Err(refuse("an encrypted entry"));
        }
        if !seen.insert(name.clone()) {
            return Err(refuse("the name appears twice"));
        }
        // Names that are one file on a case-insensitive or normalising file system collide.
        let key: String = name.nfc().collect::<String>().to_lowercase();
        if let Some(first) = folded.insert(key, name.clone()) {
            // Two names one normalisation apart look the same printed: their code points show the difference.
            let spelled = if name.is_ascii() && first.is_ascii() {
                String::new()
            } else {
                format!(": `{}` and `{}`", code_points(&name), code_points(&first))
            };
            return Err(refuse(&format!(
                "collides with `{first}` (case or Unicode normalisation{spelled})"
            )));
        }
        let declared = entry.size();
        if declared > limits.entry_bytes {
            return Err(refuse(&format!(
                "declares {declared} bytes, over the limit of {}",
                limits.entry_bytes
            )));
        }
        let mut data = Vec::new();
        (&mut entry)
            .take(limits.entry_bytes + 1)
            .read_to_end(&mut data)
            .map_err(|e| refuse(&format!("cannot be read: {e}")))?;
        if data.len() as u64 != declared {
            return Err(refuse(&format!(
                "declares {declared} bytes but holds {} (a forged size)",
                data.len()
            )));
        }
        total += declared;
        if total > limits.total_bytes {
            return Err(refuse(&format!(
                "the zip holds more than {} bytes",
                limits.total_bytes
            )));
        }
        files.insert(name, data);
    }
    Ok(files)
}

/// A pack from its manifest's bytes and the zip's other entries: each must be a listed artifact with its
/// hash and size.
fn unpacked(manifest: Vec<u8>, files: BTreeMap<String, Vec<u8>>) -> Result<Unpacked, ArchiveError> {
    let pack = pack::decode(&manifest).map_err(|e| ArchiveError::Pack(e.to_string()))?;
    let pack_sha256 = crate::hash::bytes(&manifest);
    let mut listed = BTreeSet::new();
    for artifact in &pack.artifacts {
        if !pack::safe_path(&artifact.path) || !listed.insert(artifact.path.as_str()) {
            return Err(ArchiveError::Pack(format!(
                "artifact `{}` is listed twice or escapes the pack",
                artifact.path
            )));
        }
    }
    let mut artifacts = BTreeMap::new();
    for (name, data) in files {
        let Some(path) = name
            .strip_prefix("artifacts/")
            .filter(|p| listed.contains(p))
        else {
            return Err(ArchiveError::NotInManifest(name));
        };
        artifacts.insert(path.to_string(), data);
    }
    for artifact in &pack.artifacts {
        let Some(data) = artifacts.get(&artifact.path) else {
            if artifact.store == crate::pack::Store::None || artifact.tombstone.is_some() {
                continue;
            }
            return Err(ArchiveError::Missing(artifact.path.clone()));
        };
        let actual = crate::hash::bytes(data);
        if actual != artifact.sha256 || data.len() as u64 != artifact.size {
            return Err(ArchiveError::Mismatch {
                path: artifact.path.clone(),
                expected: artifact.sha256.clone(),
                expected_size: artifact.size,
                actual,
                actual_size: data.len() as u64,
            });
        }
    }
    for criterion in &pack.criteria {
        if let Some(missing) = criterion
            .evidence
            .iter()
            .find(|p| !listed.contains(p.as_str()))
        {
            return Err(ArchiveError::Pack(format!(
                "criterion {}: evidence `{missing}` names no artifact",
                criterion.id
            )));
        }
    }
    Ok(Unpacked {
        pack,
        pack_sha256,
        pack_bytes: manifest,
        artifacts,
    })
}

/// A name with every character outside printable ASCII written as its code point (`caf\u{e9}`), so two
/// names that print the same can be told apart.
fn code_points(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c.to_string()
            } else {
                c.escape_unicode().to_string()
            }
        })
        .collect()
}
