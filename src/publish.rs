//! Publishing a pack: the `aayudha-pack` zip (built streaming, read back safely) and the workflow
//! artifact protocol that uploads and downloads it.

pub mod archive;
pub mod comment;
pub mod results;
