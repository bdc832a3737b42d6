//! `aayu proof comment` (the gate's `pack` job): [`crate::publish::proof`] on this run's artifact or a
//! folder, its verdict fenced on stdout. Exit 4 when the pack does not verify, 3 when a floor does not hold.

use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::settings::ProofCommentOptions;

pub fn run(ctx: &mut Context, options: ProofCommentOptions) -> Result<ExitStatus, Failure> {
    super::publish_proof(ctx, &options)
}
