//! A gate spread over an Actions matrix (`aayu action --mode plan|shard|merge`): the split of the plan's
//! units over the legs by measured time, and the timings sidecars it reads.

pub mod split;
pub mod timings;
