//! The split of units over shards (being built).
