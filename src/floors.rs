//! The floors of the gate. For now the feature-map floor's engine: drift and stale features
//! (`feature_map`), over a scanner that reads each source file once (`scan`).

pub(crate) mod behaviour;
pub(crate) mod feature_map;
pub(crate) mod red_on_base;
pub(crate) mod scan;
pub(crate) mod test_evidence;
