//! Benchmark: uploading a 200 MB pack to the local (fake) results service with aayu's native client,
//! beside the official `@actions/artifact` client doing the same (when `tests/interop` is installed).
//!
//!     cargo bench --bench upload                 # 200 MB
//!     AAYU_BENCH_MB=50 cargo bench --bench upload

// The tests' fakes (a `mod.rs`, so that its modules resolve the same from here and from the tests).
#[path = "../tests/it/support/mod.rs"]
#[allow(dead_code)]
mod support;

use support::fake_results;

use std::io::Write;
use std::time::Instant;

use base64::Engine as _;

fn main() -> std::io::Result<()> {
    let megabytes: usize = std::env::var("AAYU_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let e = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    let token = format!(
        "{}.{}.sig",
        e(b"{}"),
        e(br#"{"scp":"Actions.Results:run:job"}"#)
    );
    let server = fake_results::Server::start(&token);

    // A pack folder: pack.json and 20 artifacts of pseudo-random bytes.
    let pack = tempfile::tempdir()?;
    std::fs::create_dir_all(pack.path().join("artifacts"))?;
    std::fs::write(pack.path().join("pack.json"), "{\"schema_version\": 1}\n")?;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let per_file = megabytes * 1_000_000 / 20;
    let mut files = Vec::new();
    for i in 0..20 {
        let path = pack.path().join(format!("artifacts/part-{i:02}.bin"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for _ in 0..per_file / 8 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.write_all(&state.to_le_bytes())?;
        }
        out.flush()?;
        files.push(path);
    }

    let started = Instant::now();
    let zip = tempfile::NamedTempFile::new()?;
    aayudha::publish::archive::build(pack.path(), std::fs::File::create(zip.path())?)
        .map_err(std::io::Error::other)?;
    let client = aayudha::publish::results::Results::new(&server.url, &token)
        .map_err(std::io::Error::other)?;
    let uploaded = client
        .upload("aayu", zip.path(), None, time::OffsetDateTime::now_utc())
        .map_err(std::io::Error::other)?;
    let ours = started.elapsed();
    println!(
        "aayu (zip + upload)             {:>7.2} s  {:>7.1} MB/s  zip {} bytes",
        ours.as_secs_f64(),
        megabytes as f64 / ours.as_secs_f64(),
        uploaded.size
    );

    let interop = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    if !interop.join("node_modules/@actions/artifact").is_dir() {
        println!(
            "the official client is not installed (npm ci --prefix tests/interop): no reference time"
        );
        return Ok(());
    }
    let started = Instant::now();
    let status = std::process::Command::new("node")
        .arg(interop.join("artifact.mjs"))
        .args(["upload", "official"])
        .arg(pack.path())
        .args(&files)
        .env("ACTIONS_RUNTIME_TOKEN", &token)
        .env("ACTIONS_RESULTS_URL", format!("{}/", server.url))
        .env("GITHUB_SERVER_URL", "https://github.com")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    let theirs = started.elapsed();
    if status.success() {
        println!(
            "@actions/artifact (zip + upload) {:>7.2} s  {:>7.1} MB/s",
            theirs.as_secs_f64(),
            megabytes as f64 / theirs.as_secs_f64()
        );
        println!(
            "ratio                            {:>7.2}x",
            ours.as_secs_f64() / theirs.as_secs_f64()
        );
    } else {
        println!("the official client failed");
    }
    Ok(())
}
