//! The ledger branch: where Ready snapshots (`crate::story::ready`), landed packs, ship records and the
//! gate's timings sidecars live.

pub(crate) mod store;
pub(crate) mod timings;
