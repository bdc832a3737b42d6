//! The ledger branch: where Ready snapshots (`crate::story::ready`), landed packs, ship records and the
//! gate's timings sidecars live.

pub(crate) mod store;
// Its reader is the sharded gate's plan job (`crate::shard`), which is not built on this branch yet.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "read by the sharded gate's plan job; drop this once it calls `authoritative`"
    )
)]
pub(crate) mod timings;
