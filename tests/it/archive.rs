//! The `aayudha-pack` zip: built streaming and deterministic, read back with an allow-list that refuses
//! every hostile shape of `reference/security.md`.

use std::io::Write;

use aayudha::publish::archive::{self, ArchiveError, Limits};
use serde_json::{Value, json};
use zip::write::SimpleFileOptions;

/// A pack folder with these artifacts (path, bytes) and its pack.json.
fn pack_dir(artifacts: &[(&str, &[u8])]) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().expect("temp");
    let listed: Vec<Value> = artifacts
        .iter()
        .map(|(path, bytes)| {
            let file = dir.path().join("artifacts").join(path);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, bytes).expect("write");
            json!({"path": path, "kind": "report", "sha256": aayudha::hash::bytes(bytes), "size": bytes.len(), "store": "git"})
        })
        .collect();
    let pack = json!({
        "schema_version": 1, "repo": "o/r", "story": 7,
        "pr_head_sha": "0123456789abcdef0123456789abcdef01234567",
        "seat": "ai-native-engineer", "host": "action", "identity": "ci",
        "authority": {"kind": "advisory"},
        "completion_goal_hash": "8372bf1e543470d0824a6cec997a2e36b9206eca3075ca93c408ed20133a5862",
        "criteria": [], "artifacts": listed, "checks": [],
        "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0}, "links": {},
        "created_at": "2026-11-29T10:00:00Z"
    });
    std::fs::write(
        dir.path().join("pack.json"),
        serde_json::to_vec_pretty(&pack).expect("json"),
    )
    .expect("write");
    (dir, pack)
}

fn zip_of(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    let (size, hash) = archive::build(dir, &mut bytes).expect("build");
    assert_eq!(size, bytes.len() as u64);
    assert_eq!(
        hash,
        aayudha::hash::bytes(&bytes),
        "the hash is of the zip's own bytes"
    );
    bytes
}

/// A zip made by hand, entry by entry.
fn raw_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        zip.start_file(*name, SimpleFileOptions::default())
            .expect("start");
        zip.write_all(bytes).expect("write");
    }
    zip.finish().expect("finish").into_inner()
}

fn manifest(pack: &Value) -> Vec<u8> {
    serde_json::to_vec(pack).expect("json")
}

#[test]
fn a_pack_round_trips_and_builds_to_the_same_bytes() {
    let (dir, _) = pack_dir(&[
        ("reports/feature-map.json", b"{}\n"),
        ("evidence/criterion-1.jsonl", b"{\"event\":\"ok\"}\n"),
        (
            "behaviour/caf\u{e9}.check/r\u{e9}sum\u{e9} \u{1f600}.txt",
            "non-ASCII names".as_bytes(),
        ),
        ("behaviour/x.y/empty.txt", b""),
    ]);
    let bytes = zip_of(dir.path());
    assert_eq!(
        bytes,
        zip_of(dir.path()),
        "the same folder zips to the same bytes"
    );
    let unpacked = archive::read(&bytes, Limits::default()).expect("read");
    assert_eq!(unpacked.artifacts.len(), 4);
    assert_eq!(unpacked.artifacts["behaviour/x.y/empty.txt"], b"");
    assert_eq!(
        unpacked.artifacts["behaviour/caf\u{e9}.check/r\u{e9}sum\u{e9} \u{1f600}.txt"],
        "non-ASCII names".as_bytes()
    );
}

#[test]
fn a_large_pack_is_zipped_without_holding_it() {
    let big = vec![7u8; 20 << 20];
    let (dir, _) = pack_dir(&[("behaviour/a.b/big.bin", &big)]);
    let mut sink = std::io::sink();
    let (size, hash) = archive::build(dir.path(), &mut sink).expect("build");
    assert!(size > 0 && hash.len() == 64);
}

fn refused(bytes: &[u8]) -> ArchiveError {
    archive::read(bytes, Limits::default()).expect_err("refused")
}

#[test]
fn hostile_names_are_refused() {
    let (_, pack) = pack_dir(&[]);
    let m = manifest(&pack);
    // `..`, absolute, a backslash, `.`: each refusal as it is said.
    let said: Vec<String> = [
        "../evil",
        "artifacts/../../evil",
        "/etc/passwd",
        "C:/evil",
        "artifacts\\evil",
        "artifacts/./x",
    ]
    .iter()
    .map(|name| refused(&raw_zip(&[("pack.json", &m), (name, b"x")])).to_string())
    .collect();
    insta::assert_snapshot!("hostile_names", said.join("\n"));
    let err = refused(&raw_zip(&[("pack.json", &m), ("a\0b", b"x")]));
    assert!(
        matches!(err, ArchiveError::Entry { .. } | ArchiveError::NotZip(_)),
        "{err}"
    );
}

#[test]
fn links_directories_and_collisions_are_refused() {
    let (_, pack) = pack_dir(&[]);
    let m = manifest(&pack);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("pack.json", SimpleFileOptions::default())
        .expect("start");
    zip.write_all(&m).expect("write");
    zip.add_symlink(
        "artifacts/link",
        "/etc/passwd",
        SimpleFileOptions::default(),
    )
    .expect("link");
    let err = refused(&zip.finish().expect("finish").into_inner());
    insta::assert_snapshot!("symbolic_link", err.to_string());

    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.add_directory("artifacts/", SimpleFileOptions::default())
        .expect("dir");
    let err = refused(&zip.finish().expect("finish").into_inner());
    // Either check may see the entry first (a directory entry, or its name's empty last part).
    assert!(
        err.to_string().contains("a directory entry") || err.to_string().contains("`.`"),
        "{err}"
    );

    let err = refused(&raw_zip(&[
        ("pack.json", &m),
        ("artifacts/A.txt", b"x"),
        ("artifacts/a.txt", b"y"),
    ]));
    insta::assert_snapshot!("case_collision", err.to_string());
    let err = refused(&raw_zip(&[
        ("pack.json", &m),
        ("artifacts/caf\u{e9}", b"x"),
        ("artifacts/cafe\u{301}", b"y"),
    ]));
    insta::assert_snapshot!("normalisation_collision", err.to_string());
}

#[test]
fn the_manifest_and_the_files_must_agree() {
    let (dir, pack) = pack_dir(&[("reports/a.json", b"{\"a\":1}")]);
    let m = manifest(&pack);
    let err = refused(&raw_zip(&[
        ("pack.json", &m),
        ("artifacts/reports/a.json", b"{\"a\":1}"),
        ("artifacts/extra.txt", b"x"),
    ]));
    assert_eq!(
        err,
        ArchiveError::NotInManifest("artifacts/extra.txt".into())
    );
    let err = refused(&raw_zip(&[("pack.json", &m)]));
    assert_eq!(err, ArchiveError::Missing("reports/a.json".into()));
    let err = refused(&raw_zip(&[
        ("pack.json", &m),
        ("artifacts/reports/a.json", b"{\"a\":2}"),
    ]));
    assert!(
        matches!(&err, ArchiveError::Mismatch { path, .. } if path == "reports/a.json"),
        "{err}"
    );
    insta::assert_snapshot!("content_mismatch", crate::common::redact(&err.to_string()));
    let err = refused(&raw_zip(&[
        ("pack.json", &m),
        ("artifacts/reports/a.json", b"{\"a\":1} "),
    ]));
    insta::assert_snapshot!("size_mismatch", crate::common::redact(&err.to_string()));
    let err = refused(&raw_zip(&[("artifacts/reports/a.json", b"{\"a\":1}")]));
    assert_eq!(err, ArchiveError::NoPack);
    // A tampered byte in a zip built from the folder.
    let mut bytes = zip_of(dir.path());
    let _ = archive::read(&bytes, Limits::default()).expect("intact");
    let last = bytes.len() / 3;
    bytes[last] ^= 0xff;
    assert!(
        archive::read(&bytes, Limits::default()).is_err(),
        "a flipped byte is caught"
    );
}

#[test]
fn packs_of_another_version_or_shape_are_refused() {
    let (_, mut pack) = pack_dir(&[]);
    pack["schema_version"] = 2.into();
    let err = refused(&raw_zip(&[("pack.json", &manifest(&pack))]));
    insta::assert_snapshot!("another_schema_version", err.to_string());
    let (_, mut pack) = pack_dir(&[("a", b"x")]);
    pack["artifacts"][0]["sha256"] = "not-hex".into();
    assert!(matches!(
        refused(&raw_zip(&[
            ("pack.json", &manifest(&pack)),
            ("artifacts/a", b"x")
        ])),
        ArchiveError::Pack(_)
    ));
    let (_, mut pack) = pack_dir(&[("a", b"x")]);
    pack["criteria"] = json!([{"id": 1, "evidence": ["evidence/criterion-1.jsonl"]}]);
    let err = refused(&raw_zip(&[
        ("pack.json", &manifest(&pack)),
        ("artifacts/a", b"x"),
    ]));
    insta::assert_snapshot!("evidence_names_no_artifact", err.to_string());
}

#[test]
fn zip_bombs_and_forged_sizes_are_refused() {
    let (_, pack) = pack_dir(&[]);
    let m = manifest(&pack);
    let zeros = vec![0u8; 4 << 20];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("pack.json", SimpleFileOptions::default())
        .expect("start");
    zip.write_all(&m).expect("write");
    zip.start_file(
        "artifacts/bomb",
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated),
    )
    .expect("start");
    zip.write_all(&zeros).expect("write");
    let bytes = zip.finish().expect("finish").into_inner();
    assert!(
        bytes.len() < 64 << 10,
        "4 MiB of zeros compress to almost nothing"
    );
    let err = archive::read(
        &bytes,
        Limits {
            entries: 10,
            entry_bytes: 1 << 20,
            total_bytes: 8 << 20,
        },
    )
    .expect_err("bomb");
    insta::assert_snapshot!("zip_bomb", err.to_string());

    // A stored entry whose size fields were rewritten to claim less than it holds.
    let mut bytes = raw_zip(&[("pack.json", &m), ("artifacts/f", b"0123456789")]);
    let stored = {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file("pack.json", SimpleFileOptions::default())
            .expect("start");
        zip.write_all(&m).expect("write");
        zip.start_file(
            "artifacts/f",
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored),
        )
        .expect("start");
        zip.write_all(b"0123456789").expect("write");
        zip.finish().expect("finish").into_inner()
    };
    bytes.clear();
    bytes.extend_from_slice(&stored);
    // Local header (PK\x03\x04) and central header (PK\x01\x02) of the second entry: uncompressed size := 3.
    let mut patched = 0;
    for (signature, offset) in [(b"PK\x03\x04", 22usize), (b"PK\x01\x02", 24usize)] {
        let positions: Vec<usize> = bytes
            .windows(4)
            .enumerate()
            .filter(|(_, w)| w == signature)
            .map(|(i, _)| i)
            .collect();
        if let Some(&at) = positions.get(1) {
            bytes[at + offset..at + offset + 4].copy_from_slice(&3u32.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(patched, 2);
    assert!(
        archive::read(&bytes, Limits::default()).is_err(),
        "a forged size is caught"
    );
}
