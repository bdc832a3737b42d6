//! The ledger branch: Ready snapshots, landed packs and ship records. For now, reading Ready snapshots.

pub(crate) mod ready;
