//! The ledger branch: where Ready snapshots (`crate::story::ready`), landed packs and ship records live.

pub(crate) mod store;
