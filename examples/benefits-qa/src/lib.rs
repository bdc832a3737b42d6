//! benefits-qa answers questions about a benefits plan from a handful of plan passages: the passage is
//! quoted and cited. It refuses, before any lookup, questions about another person's records and
//! questions that ask for advice.

pub mod answer;
pub mod page;
