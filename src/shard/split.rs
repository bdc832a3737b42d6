//! The split of units over shards (placeholder until the real one lands; replaced whole).

/// A group of units that share a shard, and its estimated duration.
pub struct Item<'a> {
    pub key: &'a str,
    pub ms: u64,
}

/// The shard (1-based) of each item, in input order.
pub fn split(items: &[Item], shards: u32) -> Vec<u32> {
    let shards = shards.max(1);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        items[b]
            .ms
            .cmp(&items[a].ms)
            .then(items[a].key.cmp(items[b].key))
    });
    let mut totals = vec![0u64; shards as usize];
    let mut out = vec![1u32; items.len()];
    for i in order {
        let (leg, _) = totals
            .iter()
            .enumerate()
            .min_by_key(|(n, t)| (**t, *n))
            .unwrap_or((0, &0));
        totals[leg] += items[i].ms;
        out[i] = leg as u32 + 1;
    }
    out
}
