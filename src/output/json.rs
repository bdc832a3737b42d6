//! JSON documents: pretty-printed, one object, a final newline.

use std::io::{self, Write};

use serde::Serialize;

/// Writes `document` pretty-printed, with a final newline. Our documents are plain structs of strings and
/// numbers: serialising them cannot fail, so an error is the writer's.
pub fn write<T: Serialize>(out: &mut (impl Write + ?Sized), document: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, document)?;
    out.write_all(b"\n")
}
