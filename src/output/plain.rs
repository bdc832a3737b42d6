//! The readable report of `verify --map`: drift grouped by product and feature, each line
//! `file:line: kind: detail`; then stale features, contract errors, warnings and a one-line summary.
//! Quiet when all is well: one line. Beside it the behaviour report of `verify --check`, the table of
//! `verify --ci`, and the plan of `verify --select`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::floors::feature_map::MapReport;

pub fn map_report(report: &MapReport, text: &mut impl Write) -> io::Result<()> {
    for product in report.products() {
        writeln!(text, "{product}")?;
        let mut by_feature: BTreeMap<Option<&str>, Vec<String>> = BTreeMap::new();
        for d in report.drift.iter().filter(|d| d.product == product) {
            by_feature
                .entry(d.feature.as_deref())
                .or_default()
                .push(format!(
                    "{}:{}: {}: {}",
                    d.file,
                    d.line,
                    d.kind.as_str(),
                    d.detail
                ));
        }
        for (feature, lines) in by_feature {
            writeln!(text, "  {}", feature.unwrap_or("(no feature)"))?;
            for line in lines {
                writeln!(text, "    {line}")?;
            }
        }
        for s in report.stale.iter().filter(|s| s.product == product) {
            writeln!(
                text,
                "  stale: {} ({}): {}",
                s.feature,
                s.reason.as_str(),
                s.detail
            )?;
        }
    }
    if !report.errors.is_empty() {
        writeln!(
            text,
            "contract errors (the maps below are not judged until they are fixed)"
        )?;
        for e in &report.errors {
            writeln!(text, "  {}:{}: {}", e.file, e.line, e.message)?;
        }
    }
    if !report.warnings.is_empty() {
        writeln!(text, "warnings")?;
        for w in &report.warnings {
            writeln!(text, "  {}:{}: {}", w.file, w.line, w.message)?;
        }
    }
    if let Some(stopped) = &report.scan_stopped {
        writeln!(text, "scan stopped: {}", stopped.sentence())?;
    }
    writeln!(text, "{}", summary(report))
}

/// `2 maps, 9 features: 3 drift, 1 stale` or `… : in sync`.
fn summary(report: &MapReport) -> String {
    let plural = crate::log::count;
    let head = format!(
        "{}, {}",
        plural(report.maps, "map", "maps"),
        plural(report.features, "feature", "features")
    );
    if report.maps == 0 {
        return "no feature map found (looked for .agents/skills/verify-<product>/features/README.md): nothing to check\nto start one: `aayu init --verify-skill` writes a starter skill for this repository's stack".to_string();
    }
    let mut parts = Vec::new();
    if !report.errors.is_empty() {
        parts.push(plural(
            report.errors.len(),
            "contract error",
            "contract errors",
        ));
    }
    if !report.drift.is_empty() {
        parts.push(format!("{} drift", report.drift.len()));
    }
    if parts.is_empty() {
        parts.push("in sync".to_string());
    }
    if !report.stale.is_empty() {
        parts.push(format!("{} stale", report.stale.len()));
    }
    format!("{head}: {}", parts.join(", "))
}

/// The readable summary of a behaviour run: one line per check, then where the report is.
pub fn behaviour_report(
    report: &crate::floors::behaviour::BehaviourReport,
    out: &std::path::Path,
    text: &mut impl Write,
) -> io::Result<()> {
    for c in &report.checks {
        let reason = if c.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", c.reason)
        };
        writeln!(
            text,
            "{} {}.{} ({}, network {}): {}{reason}",
            c.product,
            c.feature,
            c.check,
            c.kind.as_str(),
            c.network.as_str(),
            c.status.as_str()
        )?;
        writeln!(text, "  selected because {}", c.selected_because.join("; "))?;
    }
    let count = |s: crate::floors::behaviour::Status| {
        report.checks.iter().filter(|c| c.status == s).count()
    };
    use crate::floors::behaviour::Status;
    writeln!(
        text,
        "{}: {} passed, {} failed, {} blocked, {} unreachable; report: {}",
        crate::log::count(report.checks.len(), "check", "checks"),
        count(Status::Passed),
        count(Status::Failed),
        count(Status::Blocked),
        count(Status::Unreachable),
        out.join("reports/behaviour.json").display()
    )
}

/// A line per criterion for a person: its evidence or why it has none, then each criterion's verdict on
/// the base, then each run of changed lines no test ran.
fn criteria_lines(run: &crate::gate::GateRun) -> Vec<String> {
    use crate::floors::red_on_base::Verdict as OnBase;
    use crate::floors::test_evidence::Said;
    let mut lines = Vec::new();
    for c in &run.criteria {
        let id = c.id;
        match &c.said {
            Said::NoMap => {}
            Said::Unmapped => lines.push(format!(
                "criterion {id}: no evidence — the evidence map does not name it"
            )),
            Said::Evidenced { notes } => {
                let noted = if notes.is_empty() {
                    String::new()
                } else {
                    format!("; {}", notes.join("; "))
                };
                lines.push(format!(
                    "criterion {id}: evidenced ({}){noted}",
                    c.evidence.join(", ")
                ));
            }
            Said::Missing { problems } => lines.push(format!(
                "criterion {id}: no evidence — {}",
                problems.join("; ")
            )),
            Said::NotInSnapshot => lines.push(format!(
                "criterion {id}: the evidence map names it, but the Ready snapshot has no such criterion"
            )),
        }
    }
    for c in run.red_on_base.iter().flat_map(|r| &r.criteria) {
        let word = match c.verdict {
            OnBase::Red => "red",
            OnBase::Green => "green",
            OnBase::Inconclusive => "inconclusive",
        };
        lines.push(format!("criterion {}: {word} on base — {}", c.id, c.reason));
    }
    for (file, start, end) in run.coverage.iter().flat_map(|r| r.uncovered_runs()) {
        if start == end {
            lines.push(format!("{file}:{start}: uncovered"));
        } else {
            lines.push(format!("{file}:{start}-{end}: uncovered"));
        }
    }
    lines
}

/// The table `aayu verify --ci` prints: a line per floor, a line per weakening (`file:line: weakening:
/// …`), a line per criterion, and where the pack is.
pub fn gate_table(run: &crate::gate::GateRun, text: &mut impl Write) -> io::Result<()> {
    let (pack, weakenings) = (&run.pack, &run.weakening.weakenings);
    let (dir, pack_sha256) = (&run.pack_dir, &run.pack_sha256);
    writeln!(
        text,
        "{:<12} {:<8} {:>6} {:>9}  detail",
        "floor", "result", "value", "threshold"
    )?;
    for c in &pack.checks {
        writeln!(
            text,
            "{:<12} {:<8} {:>6} {:>9}  {}",
            c.floor, c.result, c.value, c.threshold, c.detail
        )?;
    }
    for w in weakenings {
        writeln!(text, "{}:{}: weakening: {}", w.file, w.line, w.detail)?;
    }
    for c in &run.harness.changes {
        writeln!(text, "{}: harness: {}", c.place(), c.what)?;
    }
    for line in criteria_lines(run) {
        writeln!(text, "{line}")?;
    }
    writeln!(
        text,
        "pack: {} (sha256 {pack_sha256})",
        dir.join("pack.json").display()
    )
}

/// What `aayu verify --select` prints: the checks with why each was selected, the mapped tests with the
/// criterion each evidences, the touched packages with their runner — or a line saying none is, and why
/// when it is for want of a story.
pub fn plan(
    plan: &crate::gate::plan::Document,
    story: bool,
    text: &mut impl Write,
) -> io::Result<()> {
    let none = if story { "" } else { " (no `--story`)" };
    let checks: Vec<String> = plan
        .checks
        .iter()
        .map(|c| format!("{} — {}", c.id, c.selected_because.join("; ")))
        .collect();
    section(text, ("check", "checks"), &checks, "")?;
    let tests: Vec<String> = plan
        .tests
        .iter()
        .map(|t| format!("{} — criterion {}", t.id, t.criterion))
        .collect();
    section(text, ("mapped test", "mapped tests"), &tests, none)?;
    let packages: Vec<String> = plan
        .packages
        .iter()
        .map(|p| format!("{} ({})", p.dir, p.runner))
        .collect();
    section(
        text,
        ("touched package", "touched packages"),
        &packages,
        none,
    )
}

/// One section of the plan: `N things:` and a line each, or `things: nothing selected`.
fn section(
    text: &mut impl Write,
    (one, many): (&str, &str),
    lines: &[String],
    none: &str,
) -> io::Result<()> {
    if lines.is_empty() {
        return writeln!(text, "{many}: nothing selected{none}");
    }
    writeln!(text, "{}:", crate::log::count(lines.len(), one, many))?;
    for line in lines {
        writeln!(text, "  {line}")?;
    }
    Ok(())
}
