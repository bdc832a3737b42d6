//! Benchmark: hashing 1 GiB of artifacts as the pack does (streamed SHA-256, never a whole file in
//! memory), beside `openssl dgst -sha256` on the same files in the same run, with this process's peak
//! memory before and after. The goal (docs/performance.md): at least 0.9x openssl's throughput, memory flat.
//!
//!     cargo bench --bench hash            # 1 GiB in 64 files, 5 paired rounds, medians
//!     AAYU_BENCH_MIB=256 AAYU_BENCH_ROUNDS=3 cargo bench --bench hash

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
    let rounds: usize = std::env::var("AAYU_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let before = peak_kib();
    let mib = (per_file * files) as f64 / 1048576.0;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Paired, in alternating order, on the same bytes (in the page cache after the first pass).
        let mut pair = [None, None];
        for side in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            if side == 0 {
                let mut bytes = 0u64;
                for path in &paths {
                    bytes += aayudha::hash::file(path)?.1;
                }
                assert_eq!(bytes as usize, per_file * files);
            } else {
                let status = std::process::Command::new("openssl")
                    .args(["dgst", "-sha256"])
                    .args(&paths)
                    .stdout(std::process::Stdio::null())
                    .status();
                if !status.is_ok_and(|s| s.success()) {
                    println!("openssl is not available (apt-get install openssl): no reference");
                    return Ok(());
                }
            }
            pair[side] = Some(started.elapsed().as_secs_f64());
        }
        ours.push(pair[0].unwrap_or_default());
        theirs.push(pair[1].unwrap_or_default());
    }
    let peak = peak_kib();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ours, theirs) = (median(&mut ours), median(&mut theirs));
    println!(
        "aayu (crate::hash::file)  {ours:>7.3} s  {:>7.1} MiB/s   (median of {rounds})",
        mib / ours
    );
    println!(
        "openssl dgst -sha256    {theirs:>7.3} s  {:>7.1} MiB/s   (median of {rounds})",
        mib / theirs
    );
    println!(
        "peak memory             {peak} KiB after hashing, {before} KiB before   (goal: flat) {}",
        if peak <= before + 1024 {
            "ok"
        } else {
            "MISSED"
        }
    );
    let ratio = theirs / ours;
    println!(
        "throughput ratio        {ratio:>7.2}x openssl   (goal: >= 0.90x) {}",
        if ratio >= 0.9 { "ok" } else { "MISSED" }
    );
    Ok(())
}
