//! Benchmark: hashing 1 GiB of artifacts as the pack does (streamed SHA-256, never a whole file in
//! memory), beside `sha256sum` on the same files, with this process's peak memory.
//!
//!     cargo bench --bench hash            # 1 GiB in 64 files
//!     AAYU_BENCH_MIB=256 cargo bench --bench hash

use std::io::Write;
use std::time::Instant;

fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> std::io::Result<()> {
    let total_mib: usize = std::env::var("AAYU_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let files = 64usize;
    let per_file = total_mib * 1024 * 1024 / files;
    let dir = tempfile::Builder::new()
        .prefix("aayu-bench-hash-")
        .tempdir()?;
    // Pseudo-random bytes (xorshift), so that nothing compresses or repeats in a way a hasher could exploit.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut chunk = vec![0u8; 1 << 20];
    let mut paths = Vec::new();
    for i in 0..files {
        let path = dir.path().join(format!("artifact-{i:02}.bin"));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let mut left = per_file;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                word.copy_from_slice(&state.to_le_bytes());
            }
            let n = left.min(chunk.len());
            file.write_all(&chunk[..n])?;
            left -= n;
        }
        file.flush()?;
        paths.push(path);
    }
    drop(chunk);
    let before = peak_kib();
    let started = Instant::now();
    let mut bytes = 0u64;
    for path in &paths {
        let (_, size) = aayudha::pack::hash_file(path)?;
        bytes += size;
    }
    let ours = started.elapsed();
    let peak = peak_kib();
    println!(
        "aayu (pack::hash_file)  {:>8.3} s  {:>7.1} MiB/s  peak RSS {} KiB (before hashing {} KiB)",
        ours.as_secs_f64(),
        bytes as f64 / 1048576.0 / ours.as_secs_f64(),
        peak,
        before
    );
    let started = Instant::now();
    match std::process::Command::new("sha256sum")
        .args(&paths)
        .stdout(std::process::Stdio::null())
        .status()
    {
        Ok(status) if status.success() => {
            let theirs = started.elapsed();
            println!(
                "sha256sum               {:>8.3} s  {:>7.1} MiB/s",
                theirs.as_secs_f64(),
                bytes as f64 / 1048576.0 / theirs.as_secs_f64()
            );
            println!(
                "ratio                   {:>8.2}x",
                ours.as_secs_f64() / theirs.as_secs_f64()
            );
        }
        _ => println!("sha256sum is not available: no reference time"),
    }
    Ok(())
}
