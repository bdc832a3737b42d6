//! The Markdown aayu writes for people on GitHub: the merge gate's job summary (and the one when it made no
//! pack), the nightly sweep's, and the proof comment's text (also the pack job's summary). Every text from a pull request or a pack is code
//! ([`super::markdown`]).

use std::fmt::Write as _;

use crate::floors::behaviour::CheckResult;
use crate::output::markdown::{block, cell, code};
use crate::pack::ARTIFACT;
use crate::pack::Pack;

/// The criteria that screenshots evidence, each screenshot with its hash and a link to the run's
/// `aayudha-pack` artifact, which holds their bytes (media are `store: none` or `bucket` in pack.json:
/// never in git). Empty when no criterion has a screenshot.
pub fn screenshots(pack: &Pack, artifact_url: Option<&str>) -> String {
    let mut rows = String::new();
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
            let _ = writeln!(
                rows,
                "| {} | {shown} | {} | {} |",
                criterion.id,
                artifact.size,
                code(&artifact.sha256)
            );
        }
    }
    if rows.is_empty() {
        return rows;
    }
    let whence = match artifact_url {
        Some(url) => format!("[`{ARTIFACT}`]({url})"),
        None => format!("`{ARTIFACT}`"),
    };
    format!(
        "
**Screenshots** — in the run's {whence} artifact under `artifacts/` (kept for the artifact's retention; pack.json keeps their hashes):

| Criterion | Screenshot | Bytes | sha256 |
|---|---|---|---|
{rows}"
    )
}

/// The merge gate's summary: the verdict, the floors, the criteria (and their screenshots, linked to
/// `artifact_url`), and the findings past GitHub's ten annotations of a level. `run` names the run and
/// the artifact; `fork` adds a note that the code came from a fork.
pub fn gate(
    pack: &Pack,
    pack_sha256: &str,
    run: &str,
    artifact_url: Option<&str>,
    fork: bool,
    overflow: &[String],
    coverage: Option<&crate::floors::coverage::Report>,
) -> String {
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
    floor_rows(
        &mut text,
        "| Floor | Result | Value | Threshold | Detail |",
        &pack.checks,
    );
    text.push_str(&most_uncovered(coverage));
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
        text.push_str(&screenshots(pack, artifact_url));
    }
    if !overflow.is_empty() {
        text.push_str("\n**More findings** (GitHub shows 10 annotations of each level):\n\n");
        for line in overflow {
            let _ = writeln!(text, "- {}", code(line));
        }
    }
    text
}

/// The coverage floor's five files with the most uncovered changed lines, as a table (none: nothing).
pub fn most_uncovered(report: Option<&crate::floors::coverage::Report>) -> String {
    let Some(files) = report
        .map(|r| r.most_uncovered(5))
        .filter(|f| !f.is_empty())
    else {
        return String::new();
    };
    let mut text = "\n| file (most uncovered changed lines) | uncovered | changed executable |\n|---|---|---|\n".to_string();
    for file in files {
        let _ = writeln!(
            text,
            "| {} | {} | {} |",
            cell(&file.path),
            file.uncovered.len(),
            file.changed_executable.len()
        );
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
    pub pack_json: &'a str,
    pub zip: &'a str,
    pub run_url: Option<&'a str>,
    /// The run's `aayudha-pack` artifact, which screenshots link to.
    pub artifact_url: Option<&'a str>,
    /// The coverage floor's report, read from the verified artifact.
    pub coverage: Option<&'a crate::floors::coverage::Report>,
}

/// The floors table of a pack under `header` (the job summary's and the comment's differ in case only):
/// a row per check, every cell escaped.
fn floor_rows(text: &mut String, header: &str, checks: &[crate::pack::Check]) {
    let _ = writeln!(text, "{header}\n|---|---|---|---|---|");
    for c in checks {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            cell(&c.floor),
            cell(c.result.as_str()),
            c.value,
            c.threshold,
            cell(&c.detail)
        );
    }
}

/// The proof comment's text (after its hidden marker): the verdict, what does not verify, the floors, the
/// criteria, the hashes and the run.
pub fn proof(p: &Proof) -> String {
    let verdict = match (p.verifies, p.holds) {
        (true, true) => "proven: the pack verifies and every floor holds",
        (true, false) => "not proven: a floor does not hold",
        (false, _) => "not proven: the pack does not verify",
    };
    let mut text = format!("### aayudha proof — {verdict}\n\nHead: `{}`\n\n", p.head);
    if !p.problems.is_empty() {
        text.push_str("**Does not verify:**\n\n");
        for problem in p.problems {
            let _ = writeln!(text, "- {}", code(problem));
        }
        text.push('\n');
    }
    if let Some(pack) = p.pack {
        floor_rows(
            &mut text,
            "| floor | result | value | threshold | detail |",
            &pack.checks,
        );
        text.push_str(&most_uncovered(p.coverage));
        if !p.criteria.is_empty() {
            text.push_str("\n| criterion | verdict | text |\n|---|---|---|\n");
            for line in p.criteria {
                let _ = writeln!(text, "{line}");
            }
        }
        text.push_str(&screenshots(pack, p.artifact_url));
    }
    let _ = write!(
        text,
        "\npack.json sha256 `{}` · artifact zip sha256 `{}`",
        p.pack_json, p.zip
    );
    if let Some(url) = p.run_url {
        let _ = write!(text, " · [run and artifact]({url})");
    }
    text
}

#[cfg(test)]
mod tests {
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
        let text = super::most_uncovered(Some(&report));
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
        assert_eq!(super::most_uncovered(None), "");
    }
}
