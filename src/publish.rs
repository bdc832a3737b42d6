//! Publishing a pack: the `aayudha-pack` zip (built streaming, read back safely) and the workflow
//! artifact protocol that uploads and downloads it; and the media bucket of `[proof] media`.

pub mod archive;
pub mod bucket;
pub mod comment;
pub(crate) mod gate;
pub(crate) mod job;
pub(crate) mod media;
pub(crate) mod proof;
pub mod results;
