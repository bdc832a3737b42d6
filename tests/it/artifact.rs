//! The workflow-artifact protocol against the fake results service: uploads in blocks with a block list,
//! retries that never make a second artifact, retention, duplicate names, expiry, and the same run's
//! download of what was uploaded.

use crate::support::fake_results;

use aayudha::publish::results::{self, ArtifactError, Results};
use base64::Engine as _;
use fake_results::Server;

fn token() -> String {
    let e = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    format!(
        "{}.{}.sig",
        e(b"{\"alg\":\"RS256\"}"),
        e(br#"{"scp":"Actions.GenericRead:x Actions.Results:run-1:job-2"}"#)
    )
}

fn now() -> time::OffsetDateTime {
    time::macros::datetime!(2026-11-29 10:00:00 UTC)
}

fn file_of(bytes: &[u8]) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(file.path(), bytes).expect("write");
    file
}

/// Bytes that differ from block to block.
fn data(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i / 4096) as u8)
        .collect()
}

#[test]
fn uploads_of_every_size_around_the_block_boundary_round_trip() {
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&format!("{}/some/path", server.url), &token).expect("client");
    for (i, len) in [
        0,
        1,
        results::BLOCK - 1,
        results::BLOCK,
        results::BLOCK + 1,
        2 * results::BLOCK + 7,
    ]
    .into_iter()
    .enumerate()
    {
        let bytes = data(len);
        let name = format!("pack-{i}");
        let before = server.state.lock().expect("lock").block_puts;
        let uploaded = client
            .upload(&name, file_of(&bytes).path(), None, now())
            .expect("upload");
        assert_eq!(uploaded.size, len as u64);
        assert_eq!(uploaded.sha256, aayudha::hash::bytes(&bytes));
        let blocks = server.state.lock().expect("lock").block_puts - before;
        assert_eq!(
            blocks,
            len.div_ceil(results::BLOCK).max(1),
            "{len} bytes in {blocks} blocks"
        );
        assert_eq!(
            client.download(&name).expect("download"),
            bytes,
            "{len} bytes come back the same"
        );
    }
    server.assert_clean();
}

#[test]
fn a_failed_block_is_retried_and_makes_no_second_artifact() {
    let token = token();
    let server = Server::start(&token);
    server.state.lock().expect("lock").fail_block = Some(1);
    let client = Results::new(&server.url, &token).expect("client");
    let bytes = data(2 * results::BLOCK + 5);
    client
        .upload("aayudha-pack", file_of(&bytes).path(), None, now())
        .expect("upload despite one 500");
    let state = server.state.lock().expect("lock");
    assert_eq!(state.artifacts.len(), 1);
    assert_eq!(state.block_puts, 4, "three blocks, one of them twice");
    assert!(state.artifacts[0].finalized);
    drop(state);
    assert_eq!(client.download("aayudha-pack").expect("download"), bytes);
    server.assert_clean();
}

#[test]
fn a_duplicate_name_is_refused() {
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&server.url, &token).expect("client");
    let file = file_of(b"zip bytes");
    client
        .upload("aayudha-pack", file.path(), None, now())
        .expect("first");
    let err = client
        .upload("aayudha-pack", file.path(), None, now())
        .expect_err("second");
    assert_eq!(err, ArtifactError::Duplicate("aayudha-pack".into()));
    assert_eq!(server.state.lock().expect("lock").artifacts.len(), 1);
    server.assert_clean();
}

#[test]
fn retention_sets_expires_at_and_none_leaves_the_default() {
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&server.url, &token).expect("client");
    let (days, warning) = results::retention(400, Some(90));
    assert!(warning.is_some());
    client
        .upload("capped", file_of(b"x").path(), Some(days), now())
        .expect("upload");
    client
        .upload("default", file_of(b"x").path(), None, now())
        .expect("upload");
    let state = server.state.lock().expect("lock");
    assert_eq!(
        state.artifacts[0].expires_at.as_deref(),
        Some("2027-02-27T10:00:00Z")
    );
    assert_eq!(state.artifacts[1].expires_at, None);
}

#[test]
fn an_expired_or_missing_artifact_is_a_clear_refusal() {
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&server.url, &token).expect("client");
    assert_eq!(
        client.download("aayudha-pack").expect_err("none"),
        ArtifactError::NotFound("aayudha-pack".into())
    );
    client
        .upload("aayudha-pack", file_of(b"x").path(), None, now())
        .expect("upload");
    server.state.lock().expect("lock").artifacts[0].expired = true;
    let err = client.download("aayudha-pack").expect_err("expired");
    insta::assert_snapshot!("expired_download", err.to_string());
}

#[test]
fn a_pack_zip_survives_the_trip() {
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&server.url, &token).expect("client");
    let dir = tempfile::tempdir().expect("temp");
    let artifact = b"{\"schema_version\":1}\n";
    std::fs::create_dir_all(dir.path().join("artifacts/reports")).expect("mkdir");
    std::fs::write(
        dir.path().join("artifacts/reports/behaviour.json"),
        artifact,
    )
    .expect("write");
    let pack = serde_json::json!({
        "schema_version": 1, "repo": "o/r", "story": 3, "pr_head_sha": "0123456789abcdef0123456789abcdef01234567",
        "seat": "ai-native-engineer", "host": "action", "identity": "ci", "authority": {"kind": "advisory"},
        "completion_goal_hash": "", "criteria": [],
        "artifacts": [{"path": "reports/behaviour.json", "kind": "report", "sha256": aayudha::hash::bytes(artifact), "size": artifact.len(), "store": "git"}],
        "checks": [], "cost": {"tokens_in": 0, "tokens_out": 0, "usd": 0}, "links": {}, "created_at": "2026-11-29T10:00:00Z"
    });
    std::fs::write(dir.path().join("pack.json"), pack.to_string()).expect("write");
    let zip = tempfile::NamedTempFile::new().expect("temp");
    let (size, hash) = aayudha::publish::archive::build(
        dir.path(),
        std::fs::File::create(zip.path()).expect("create"),
    )
    .expect("zip");
    let uploaded = client
        .upload("aayudha-pack", zip.path(), Some(30), now())
        .expect("upload");
    assert_eq!(
        (uploaded.size, uploaded.sha256.as_str()),
        (size, hash.as_str())
    );
    let bytes = client.download("aayudha-pack").expect("download");
    let unpacked =
        aayudha::publish::archive::read(&bytes, aayudha::publish::archive::Limits::default())
            .expect("a valid pack");
    assert_eq!(unpacked.pack.story, 3);
    server.assert_clean();
}

/// The official `@actions/artifact` client (npm, installed into `tests/interop/` by `scripts/test`); `None`
/// only when a person set `AAYU_SKIP_NODE=1`.
fn official_client() -> Option<std::path::PathBuf> {
    if !crate::common::tool("node") {
        return None;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    assert!(
        dir.join("node_modules/@actions/artifact").is_dir(),
        "the official artifact client is not installed: npm ci --prefix tests/interop (scripts/test does)"
    );
    Some(dir)
}

fn node(dir: &std::path::Path, server: &Server, token: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("node")
        .arg(dir.join("artifact.mjs"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ACTIONS_RUNTIME_TOKEN", token)
        .env("ACTIONS_RESULTS_URL", format!("{}/", server.url))
        .env("GITHUB_SERVER_URL", "https://github.com")
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "the official client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_official_client_and_aayu_read_each_others_artifacts() {
    let Some(dir) = official_client() else { return };
    let token = token();
    let server = Server::start(&token);
    let client = Results::new(&server.url, &token).expect("client");

    // aayu uploads a pack zip; the official client downloads and unzips it: the same files come out.
    let pack = tempfile::tempdir().expect("temp");
    std::fs::create_dir_all(pack.path().join("artifacts/reports")).expect("mkdir");
    std::fs::write(pack.path().join("pack.json"), "{\"schema_version\": 1}\n").expect("write");
    std::fs::write(
        pack.path().join("artifacts/reports/r\u{e9}sum\u{e9}.json"),
        data(3 * results::BLOCK / 2),
    )
    .expect("write");
    let zip = tempfile::NamedTempFile::new().expect("temp");
    aayudha::publish::archive::build(
        pack.path(),
        std::fs::File::create(zip.path()).expect("create"),
    )
    .expect("zip");
    client
        .upload("from-aayu", zip.path(), Some(7), now())
        .expect("upload");
    let out = tempfile::tempdir().expect("temp");
    node(
        &dir,
        &server,
        &token,
        &["download", "from-aayu", &out.path().display().to_string()],
    );
    for rel in ["pack.json", "artifacts/reports/r\u{e9}sum\u{e9}.json"] {
        assert_eq!(
            std::fs::read(out.path().join(rel)).expect("unzipped"),
            std::fs::read(pack.path().join(rel)).expect("original"),
            "{rel}"
        );
    }

    // The official client uploads; aayu downloads the zip and finds the same bytes in it.
    let files = tempfile::tempdir().expect("temp");
    let big = data(2 * results::BLOCK + 3);
    std::fs::write(files.path().join("big.bin"), &big).expect("write");
    std::fs::write(files.path().join("small.txt"), "hello\n").expect("write");
    let printed = node(
        &dir,
        &server,
        &token,
        &[
            "upload",
            "from-official",
            &files.path().display().to_string(),
            &files.path().join("big.bin").display().to_string(),
            &files.path().join("small.txt").display().to_string(),
        ],
    );
    // What the official toolkit printed: its answer holds an id (the rest is the toolkit's).
    assert!(printed.contains("\"id\""), "{printed}");
    let bytes = client.download("from-official").expect("download");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    let mut read = |name: &str| {
        let mut entry = archive.by_name(name).expect("entry");
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut content).expect("read");
        content
    };
    assert_eq!(read("big.bin"), big);
    assert_eq!(read("small.txt"), b"hello\n");
    server.assert_clean();
}
