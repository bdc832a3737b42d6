//! The globs of the maps (surface rules' `files`) and of `LAYERS.md`, with git's meaning of `*` (not across
//! `/`) and `**` (any depth).

use globset::{Glob, GlobBuilder};

/// Compiles one glob.
pub fn compile(glob: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}
