//! Publishing a pack: the `aayudha-pack` zip (built streaming, read back safely).

pub mod archive;
