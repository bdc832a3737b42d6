//! Publishing a pack: the `aayudha-pack` zip (built streaming, read back safely) and the workflow
//! artifact protocol that uploads and downloads it; and the media bucket of `[proof] media`.

/// The workflow artifact the merge gate uploads and the comment job and `aayu ship` read.
pub const ARTIFACT: &str = "aayudha-pack";

pub mod archive;
pub mod bucket;
pub mod comment;
pub mod results;
