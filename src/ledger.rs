//! The ledger branch: Ready snapshots, landed packs and ship records.

pub(crate) mod ready;
pub(crate) mod store;
pub(crate) mod verify;
