//! The timings sidecar (being built).
