//! SHA-256, hex: files streamed, bytes in memory, and a writer that hashes what passes through it.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Streams a file through SHA-256 (never whole in memory): its hex digest and size.
pub fn file(path: &Path) -> std::io::Result<(String, u64)> {
    let file = std::fs::File::open(path)?;
    reader(file)
}

/// How much is read at a time when hashing: large enough that the system calls cost little next to the
/// hashing (`openssl dgst` reads as much), small enough to stay in the CPU's cache and keep memory flat.
const HASH_CHUNK: usize = 256 * 1024;

/// SHA-256 (hex) and size of everything a reader gives.
fn reader(mut reader: impl std::io::Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; HASH_CHUNK];
    let mut size = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        size += n as u64;
    }
    Ok((hex(&hasher.finalize()), size))
}

/// SHA-256 of bytes in memory, hex.
pub fn bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A writer that hashes (SHA-256) and counts what passes through it, so that a copy or a zip is hashed
/// while it is written, never read back whole.
pub(crate) struct Writer<W> {
    pub inner: W,
    hash: Sha256,
    pub size: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(inner: W) -> Writer<W> {
        Writer {
            inner,
            hash: Sha256::new(),
            size: 0,
        }
    }

    /// The writer, the hex SHA-256 and the size of everything written.
    pub fn finish(self) -> (W, String, u64) {
        (self.inner, hex(&self.hash.finalize()), self.size)
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Lowercase hex of bytes (digests).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
