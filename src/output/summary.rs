//! The job summaries of `aayu action` (Markdown for `$GITHUB_STEP_SUMMARY`): the merge gate's, the gate's
//! when it made no pack, and the nightly sweep's. Every text from a pull request or a pack is code
//! ([`super::markdown`]).

use std::fmt::Write as _;

use crate::floors::behaviour::CheckResult;
use crate::output::markdown::{block, cell, code};
use crate::pack::Pack;
use crate::publish::ARTIFACT;

/// The merge gate's summary: the verdict, the floors, the criteria, and the findings past GitHub's ten
/// annotations of a level. `run` names the run and the artifact; `fork` adds a note that the code came
/// from a fork.
pub fn gate(pack: &Pack, pack_sha256: &str, run: &str, fork: bool, overflow: &[String]) -> String {
    let holds = pack.checks.iter().all(crate::pack::Check::holds);
    let mut text = format!(
        "### aayudha merge gate — {}\n\nHead `{}` · base `{}` · story {} · pack.json sha256 `{pack_sha256}` · `{ARTIFACT}` of {run}\n\n",
        if holds {
            "every floor holds"
        } else {
            "a floor does not hold"
        },
        pack.pr_head_sha,
        pack.base_sha,
        if pack.story > 0 {
            format!("#{}", pack.story)
        } else {
            "none".into()
        },
    );
    if fork {
        text.push_str("From a fork: its code ran in aayu's sandbox as an unprivileged user, with no token in its environment.\n\n");
    }
    text.push_str("| Floor | Result | Value | Threshold | Detail |\n|---|---|---|---|---|\n");
    for c in &pack.checks {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            cell(&c.floor),
            cell(&c.result),
            c.value,
            c.threshold,
            cell(&c.detail)
        );
    }
    if !pack.criteria.is_empty() {
        text.push_str("\n| Criterion | Evidence |\n|---|---|\n");
        for c in &pack.criteria {
            let evidence = if c.evidence.is_empty() {
                "none".to_string()
            } else {
                c.evidence
                    .iter()
                    .map(|e| cell(e))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(text, "| {} | {evidence} |", c.id);
        }
    }
    if !overflow.is_empty() {
        text.push_str("\n**More findings** (GitHub shows 10 annotations of each level):\n\n");
        for line in overflow {
            let _ = writeln!(text, "- {}", code(line));
        }
    }
    text
}

/// The merge gate's summary when it made no pack: why, as code.
pub fn no_pack(message: &str) -> String {
    format!("### aayudha merge gate — no pack\n\n{}", block(message))
}

/// The nightly sweep's summary: the verdict and a line per check.
pub fn sweep(verdict: &str, checks: &[CheckResult], overflow: &[String]) -> String {
    let mut text =
        format!("### aayudha sweep — {verdict}\n\n| Check | Status | Reason |\n|---|---|---|\n");
    for c in checks {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            cell(&format!("{}.{}", c.feature, c.check)),
            cell(c.status.as_str()),
            cell(&c.reason)
        );
    }
    if !overflow.is_empty() {
        text.push_str("\n**More findings:**\n\n");
        for line in overflow {
            let _ = writeln!(text, "- {}", code(line));
        }
    }
    text
}
