//! The Markdown aayu writes for people on GitHub: the merge gate's job summary (and the one when it made no
//! pack), the nightly sweep's, and the proof comment's text (also the pack job's summary). Every text from a pull request or a pack is code
//! ([`super::markdown`]).

use std::io::{self, Write};

use crate::floors::behaviour::CheckResult;
use crate::output::markdown::{block, cell, code};
use crate::pack::ARTIFACT;
use crate::pack::Pack;

/// The criteria that screenshots evidence, each screenshot with its hash and a link to the run's
/// `aayudha-pack` artifact, which holds their bytes (media are `store: none` or `bucket` in pack.json:
/// never in git). Nothing when no criterion has a screenshot.
fn screenshots(pack: &Pack, artifact_url: Option<&str>, text: &mut impl Write) -> io::Result<()> {
    let mut rows = Vec::new();
    for criterion in &pack.criteria {
        for path in &criterion.evidence {
            let Some(artifact) = pack.artifacts.iter().find(|a| {
                a.path == *path && a.kind == crate::maps::blocks::ArtifactKind::Screenshot
            }) else {
                continue;
            };
            let shown = match artifact_url {
                Some(url) => format!("[{}]({url})", code(path)),
                None => code(path),
            };
            rows.push(format!(
                "| {} | {shown} | {} | {} |",
                criterion.id,
                artifact.size,
                code(&artifact.sha256)
            ));
        }
    }
    if rows.is_empty() {
        return Ok(());
    }
    let whence = match artifact_url {
        Some(url) => format!("[`{ARTIFACT}`]({url})"),
        None => format!("`{ARTIFACT}`"),
    };
    writeln!(
        text,
        "\n**Screenshots** — in the run's {whence} artifact under `artifacts/` (kept for the artifact's retention; pack.json keeps their hashes):\n\n| Criterion | Screenshot | Bytes | sha256 |\n|---|---|---|---|"
    )?;
    for row in rows {
        writeln!(text, "{row}")?;
    }
    Ok(())
}

/// What the merge gate's job summary says of its run.
pub struct Gate<'a> {
    pub pack: &'a Pack,
    pub pack_sha256: &'a str,
    /// The run and the artifact, named (`run 7 attempt 1, artifact 9`).
    pub run: &'a str,
    /// The run's `aayudha-pack` artifact, which screenshots link to.
    pub artifact_url: Option<&'a str>,
    /// The code came from a fork.
    pub fork: bool,
    /// The findings past GitHub's ten annotations of a level.
    pub overflow: &'a [String],
    pub coverage: Option<&'a crate::floors::coverage::Report>,
    pub harness: Option<&'a crate::floors::harness::Report>,
}

/// The merge gate's summary: the verdict, the floors, the criteria (and their screenshots), and the
/// findings past GitHub's ten annotations of a level.
pub fn gate(g: &Gate, text: &mut impl Write) -> io::Result<()> {
    let pack = g.pack;
    let holds = pack.checks.iter().all(crate::pack::Check::holds);
    write!(
        text,
        "### aayudha merge gate — {}\n\nHead `{}` · base `{}` · story {} · pack.json sha256 `{}` · `{ARTIFACT}` of {}\n\n",
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
        g.pack_sha256,
        g.run,
    )?;
    if g.fork {
        text.write_all(b"From a fork: its code ran in aayu's sandbox as an unprivileged user, with no token in its environment.\n\n")?;
    }
    floor_rows(
        text,
        "| Floor | Result | Value | Threshold | Detail |",
        &pack.checks,
    )?;
    most_uncovered(g.coverage, text)?;
    harness(g.harness, text)?;
    if !pack.criteria.is_empty() {
        text.write_all(b"\n| Criterion | Evidence |\n|---|---|\n")?;
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
            writeln!(text, "| {} | {evidence} |", c.id)?;
        }
        screenshots(pack, g.artifact_url, text)?;
    }
    if !g.overflow.is_empty() {
        text.write_all(b"\n**More findings** (GitHub shows 10 annotations of each level):\n\n")?;
        for line in g.overflow {
            writeln!(text, "- {}", code(line))?;
        }
    }
    Ok(())
}

/// The coverage floor's five files with the most uncovered changed lines, as a table (none: nothing).
pub fn most_uncovered(
    report: Option<&crate::floors::coverage::Report>,
    text: &mut impl Write,
) -> io::Result<()> {
    let Some(files) = report
        .map(|r| r.most_uncovered(5))
        .filter(|f| !f.is_empty())
    else {
        return Ok(());
    };
    text.write_all(b"\n| file (most uncovered changed lines) | uncovered | changed executable |\n|---|---|---|\n")?;
    for file in files {
        writeln!(
            text,
            "| {} | {} | {} |",
            cell(&file.path),
            file.uncovered.len(),
            file.changed_executable.len()
        )?;
    }
    Ok(())
}

/// The merge gate's summary when it made no pack: why, as code.
pub fn no_pack(message: &str, text: &mut impl Write) -> io::Result<()> {
    write!(
        text,
        "### aayudha merge gate — no pack\n\n{}",
        block(message)
    )
}

/// The nightly sweep's summary: the verdict and a line per check.
pub fn sweep(
    verdict: &str,
    checks: &[CheckResult],
    overflow: &[String],
    text: &mut impl Write,
) -> io::Result<()> {
    write!(
        text,
        "### aayudha sweep — {verdict}\n\n| Check | Status | Reason |\n|---|---|---|\n"
    )?;
    for c in checks {
        writeln!(
            text,
            "| {} | {} | {} |",
            cell(&format!("{}.{}", c.feature, c.check)),
            cell(c.status.as_str()),
            cell(&c.reason)
        )?;
    }
    if !overflow.is_empty() {
        text.write_all(b"\n**More findings:**\n\n")?;
        for line in overflow {
            writeln!(text, "- {}", code(line))?;
        }
    }
    Ok(())
}

/// What the proof comment says.
pub struct Proof<'a> {
    pub pack: Option<&'a Pack>,
    pub head: &'a str,
    pub verifies: bool,
    pub holds: bool,
    /// Why the pack does not verify, each a line.
    pub problems: &'a [String],
    /// Table rows of the criteria, rendered by the caller (`| 1 | evidenced: … | … |`).
    pub criteria: &'a [String],
    /// The hashes of pack.json and of the artifact's zip: empty when there is no pack.
    pub pack_json: &'a str,
    pub zip: &'a str,
    pub run_url: Option<&'a str>,
    /// The run's `aayudha-pack` artifact, which screenshots link to.
    pub artifact_url: Option<&'a str>,
    /// The coverage floor's report, read from the verified artifact.
    pub coverage: Option<&'a crate::floors::coverage::Report>,
    /// The harness floor's report, read from the verified artifact.
    pub harness: Option<&'a crate::floors::harness::Report>,
}

/// The harness section under the floors: one line per change (`file:line: what`, as data), who
/// approved them, or what a maintainer does next. Nothing when the change has none.
pub fn harness(
    report: Option<&crate::floors::harness::Report>,
    text: &mut impl Write,
) -> io::Result<()> {
    let Some(report) = report.filter(|r| !r.changes.is_empty()) else {
        return Ok(());
    };
    text.write_all(b"\n**Harness changes** - this pull request changes how its tests run. Code in the test process can write its own result, so a maintainer reads these:\n\n")?;
    for c in &report.changes {
        writeln!(text, "- {}", code(&format!("{}: {}", c.place(), c.what)))?;
    }
    match &report.waived_by {
        Some(login) => writeln!(text, "\nApproved at the head by {}.", code(login)),
        None => text.write_all(b"\nTo accept them: a maintainer who is not the author approves the head, then re-runs the `aayudha/merge-gate` run (Re-run jobs).\n"),
    }
}

/// The floors table of a pack under `header` (the job summary's and the comment's differ in case only):
/// a row per check, every cell escaped.
fn floor_rows(
    text: &mut impl Write,
    header: &str,
    checks: &[crate::pack::Check],
) -> io::Result<()> {
    writeln!(text, "{header}\n|---|---|---|---|---|")?;
    for c in checks {
        writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            cell(&c.floor),
            cell(c.result.as_str()),
            c.value,
            c.threshold,
            cell(&c.detail)
        )?;
    }
    Ok(())
}

/// The proof comment's text (after its hidden marker): the verdict, what does not verify, the floors, the
/// criteria, then the hashes (when there is a pack) and the run.
pub fn proof(p: &Proof, text: &mut impl Write) -> io::Result<()> {
    let verdict = match (p.verifies, p.holds) {
        (true, true) => "proven: the pack verifies and every floor holds",
        (true, false) => "not proven: a floor does not hold",
        (false, _) => "not proven: the pack does not verify",
    };
    write!(
        text,
        "### aayudha proof — {verdict}\n\nHead: `{}`\n\n",
        p.head
    )?;
    if !p.problems.is_empty() {
        text.write_all(b"**Does not verify:**\n\n")?;
        for problem in p.problems {
            writeln!(text, "- {}", code(problem))?;
        }
        text.write_all(b"\n")?;
    }
    if let Some(pack) = p.pack {
        floor_rows(
            text,
            "| floor | result | value | threshold | detail |",
            &pack.checks,
        )?;
        most_uncovered(p.coverage, text)?;
        harness(p.harness, text)?;
        if !p.criteria.is_empty() {
            text.write_all(b"\n| criterion | verdict | text |\n|---|---|---|\n")?;
            for line in p.criteria {
                writeln!(text, "{line}")?;
            }
        }
        screenshots(pack, p.artifact_url, text)?;
        // The tables end on a line of their own; the sections above end on a blank one.
        text.write_all(b"\n")?;
    }
    let mut footer = Vec::new();
    if !p.pack_json.is_empty() {
        footer.push(format!("pack.json sha256 `{}`", p.pack_json));
    }
    if !p.zip.is_empty() {
        footer.push(format!("artifact zip sha256 `{}`", p.zip));
    }
    if let Some(url) = p.run_url {
        footer.push(format!("[run and artifact]({url})"));
    }
    write!(text, "{}", footer.join(" · "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_harness_section_is_data_and_says_what_to_do() {
        use crate::floors::harness::Report;
        use crate::floors::harness::{Change, Kind};
        let mut report = Report {
            schema_version: 1,
            changes: vec![
                Change::new(
                    "tests/conftest.py",
                    3,
                    "python",
                    Kind::Conftest,
                    "a conftest (changed)",
                ),
                Change::new(
                    "x|`y`<b>.pth",
                    1,
                    "python",
                    Kind::Startup,
                    "a .pth file (added)",
                ),
            ],
            ..Report::default()
        };
        let text = |r: &Report| crate::output::text(|w| super::harness(Some(r), w));
        assert_eq!(text(&Report::default()), "");
        let waiting = text(&report);
        report.waived_by = Some("hubot".into());
        let approved = text(&report);
        insta::assert_snapshot!(
            "comment_harness_section",
            format!("{waiting}---\n{approved}")
        );
    }

    use crate::floors::coverage::{FileReport, Report};

    fn file(path: &str, uncovered: &[u32], changed: &[u32]) -> FileReport {
        FileReport {
            path: path.to_string(),
            changed_executable: changed.to_vec(),
            uncovered: uncovered.to_vec(),
            partial: Vec::new(),
        }
    }

    #[test]
    fn the_five_files_with_most_uncovered_lines_are_a_table_of_data() {
        let report = Report {
            schema_version: 1,
            base: "b".into(),
            head: "h".into(),
            tool: "t".into(),
            changed_executable: 0,
            covered: 0,
            files: vec![
                file("a.go", &[1], &[1, 2]),
                file("b.go", &[1, 2, 3], &[1, 2, 3]),
                file("c.go", &[], &[1]),
                file("d|<img src=x>`.go", &[4, 5], &[4, 5]),
                file("e.go", &[1], &[1]),
                file("f.go", &[1], &[1]),
                file("g.go", &[1], &[1]),
            ],
        };
        let text = crate::output::text(|w| super::most_uncovered(Some(&report), w));
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| file"))
            .collect();
        assert_eq!(rows.len(), 5, "{text}");
        assert!(
            rows[0].contains("b.go") && rows[0].ends_with("| 3 | 3 |"),
            "{text}"
        );
        // A path is data: no cell break, no HTML.
        assert!(!rows[1].contains("d|<img"), "{text}");
        assert!(rows[2].contains("a.go"), "ties by path: {text}");
        assert!(!text.contains("c.go"), "a fully covered file is not listed");
        assert_eq!(crate::output::text(|w| super::most_uncovered(None, w)), "");
    }
}
