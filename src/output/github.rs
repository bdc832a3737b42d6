//! Annotations: the workflow commands that report findings (`::error file=…,line=…,title=…::message`),
//! escaped by [`crate::log`]'s rules, at most ten of each level per step. The log itself — groups, the
//! fence around every text from a pull request — is [`crate::log`].
//! <https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>

use crate::log::{escape_data, escape_property};

/// GitHub shows at most 10 annotations of each level per step.
pub const ANNOTATIONS_PER_LEVEL: usize = 10;

/// The level of an annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Notice,
    Warning,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// `::warning file=F,line=L,endLine=E,title=T::message`, one line; `file` and the lines left out when there
/// is none, `endLine` only when the range is more than one line.
pub fn annotation_of(
    level: Level,
    file: Option<(&str, usize, usize)>,
    title: &str,
    message: &str,
) -> String {
    let mut properties = Vec::new();
    if let Some((file, line, end)) = file {
        properties.push(format!("file={}", escape_property(file)));
        if line > 0 {
            properties.push(format!("line={line}"));
            if end > line {
                properties.push(format!("endLine={end}"));
            }
        }
    }
    properties.push(format!("title={}", escape_property(title)));
    // GitHub cuts a message at 4096 characters; cut it first, on a character boundary.
    let message: String = message.chars().take(4000).collect();
    format!(
        "::{} {}::{}\n",
        level.as_str(),
        properties.join(","),
        escape_data(&message)
    )
}

/// Annotations of one step: at most [`ANNOTATIONS_PER_LEVEL`] of each level are printed; the rest are
/// kept for the summary.
#[derive(Debug, Default, Clone)]
pub struct Annotations {
    printed: [usize; 3],
    /// Print every annotation (`verify --map`, which has no summary to keep the rest in).
    uncapped: bool,
    pub lines: String,
    pub overflow: Vec<String>,
}

impl Annotations {
    /// Annotations that are all printed, none kept for a summary.
    pub fn uncapped() -> Annotations {
        Annotations {
            uncapped: true,
            ..Annotations::default()
        }
    }

    pub fn add(&mut self, level: Level, file: Option<(&str, usize)>, title: &str, message: &str) {
        self.add_lines(level, file.map(|(f, l)| (f, l, l)), title, message);
    }

    /// [`Annotations::add`] of a range of lines.
    pub fn add_lines(
        &mut self,
        level: Level,
        file: Option<(&str, usize, usize)>,
        title: &str,
        message: &str,
    ) {
        let slot = level as usize;
        if !self.uncapped && self.printed[slot] >= ANNOTATIONS_PER_LEVEL {
            let place = file
                .map(|(f, l, e)| {
                    if e > l {
                        format!("{f}:{l}-{e}: ")
                    } else {
                        format!("{f}:{l}: ")
                    }
                })
                .unwrap_or_default();
            self.overflow
                .push(format!("{}: {place}{title}: {message}", level.as_str()));
            return;
        }
        self.printed[slot] += 1;
        self.lines
            .push_str(&annotation_of(level, file, title, message));
    }
}

/// The annotations of a feature-map report, the same for `verify --map` and the merge gate: each drift
/// titled `aayudha drift: <kind>` (an error once the feature-map floor blocks on it, a warning while it is
/// advisory) and each contract error titled `aayudha contract error`, at its file and line.
pub fn map_annotations(
    report: &crate::floors::feature_map::MapReport,
    blocking: bool,
    notes: &mut Annotations,
) {
    let level = if blocking {
        Level::Error
    } else {
        Level::Warning
    };
    for d in &report.drift {
        let title = format!("aayudha drift: {}", d.kind.as_str());
        notes.add(level, Some((&d.file, d.line)), &title, &d.detail);
    }
    for e in &report.errors {
        notes.add(
            Level::Error,
            Some((&e.file, e.line)),
            "aayudha contract error",
            &e.message,
        );
    }
}

/// The annotations of a gate run: first each floor that does not hold (so that the ten errors GitHub shows
/// always hold them, however many findings follow), then the map's ([`map_annotations`], blocking when
/// the feature-map floor fails), each weakening (`aayudha weakening: <kind>`, an error once its floor
/// fails, a warning while advisory or waived), each harness change (`aayudha harness: <kind>`, the same
/// levels), and the changed lines no test ran (warnings, as ranges).
pub fn annotations(run: &crate::gate::GateRun, notes: &mut Annotations) {
    use crate::floors::Floor;
    for floor in run.floors.iter().filter(|f| !f.verdict.holds()) {
        let title = format!("aayudha {} floor: {}", floor.floor.as_str(), floor.verdict);
        notes.add(Level::Error, None, &title, &floor.detail);
    }
    let fails = |floor: Floor| {
        run.floors
            .iter()
            .any(|f| f.floor == floor && !f.verdict.holds())
    };
    map_annotations(&run.map, fails(Floor::FeatureMap), notes);
    let level = if fails(Floor::Weakening) {
        Level::Error
    } else {
        Level::Warning
    };
    for w in &run.weakening.weakenings {
        let title = format!("aayudha weakening: {}", w.kind.as_str());
        notes.add(level, Some((w.file.as_str(), w.line)), &title, &w.detail);
    }
    let level = if fails(Floor::Harness) {
        Level::Error
    } else {
        Level::Warning
    };
    for c in &run.harness.changes {
        let title = format!("aayudha harness: {}", c.kind.as_str());
        notes.add(
            level,
            Some((c.file.as_str(), c.line as usize)),
            &title,
            &c.what,
        );
    }
    if let Some(report) = &run.coverage {
        for (file, first, last) in report.uncovered_runs() {
            notes.add_lines(
                Level::Warning,
                Some((file, first as usize, last as usize)),
                "aayudha coverage",
                "changed executable lines no test ran",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_cannot_be_broken_out_of() {
        let line = annotation_of(
            Level::Warning,
            Some(("src/a,b.rs", 3, 3)),
            "drift: x",
            "evil\n::error::forged",
        );
        assert_eq!(
            line,
            "::warning file=src/a%2Cb.rs,line=3,title=drift%3A x::evil%0A::error::forged\n"
        );
        assert_eq!(line.matches('\n').count(), 1);
    }

    #[test]
    fn a_range_of_lines_is_one_annotation_within_the_same_budget() {
        let mut a = Annotations::default();
        a.add_lines(
            Level::Warning,
            Some(("calc/calc.go", 9, 12)),
            "aayudha coverage",
            "changed executable lines no test ran",
        );
        a.add_lines(Level::Warning, Some(("calc/calc.go", 20, 20)), "t", "m");
        assert_eq!(
            a.lines,
            "::warning file=calc/calc.go,line=9,endLine=12,title=aayudha coverage::changed executable lines no test ran\n::warning file=calc/calc.go,line=20,title=t::m\n"
        );
        for _ in 0..9 {
            a.add(Level::Warning, Some(("x", 1)), "drift", "d");
        }
        a.add_lines(Level::Warning, Some(("calc/calc.go", 30, 31)), "t", "m");
        assert_eq!(
            a.overflow.last().map(String::as_str),
            Some("warning: calc/calc.go:30-31: t: m")
        );
    }

    /// A gate run whose feature-map floor fails on `drifts` drifts.
    fn failing_run(drifts: usize) -> crate::gate::GateRun {
        use crate::floors::feature_map::{Drift, DriftKind, MapReport};
        use crate::floors::{Floor, FloorResult, Verdict};
        let pack = serde_json::from_slice(include_bytes!(
            "../../tests/data/packs/seeds-story-131.json"
        ))
        .expect("the seed's pack");
        let drift = (1..=drifts)
            .map(|line| Drift {
                product: "shop".into(),
                feature: Some("buy".into()),
                file: "src/buy.rs".into(),
                line,
                kind: DriftKind::UnmappedSurface,
                detail: "a route the map does not name".into(),
            })
            .collect();
        crate::gate::GateRun {
            pack,
            pack_dir: "proof".into(),
            pack_sha256: String::new(),
            floors: vec![FloorResult::new(
                Floor::FeatureMap,
                Verdict::Fail,
                "aayu",
                format!("{drifts} drift"),
            )],
            map: MapReport {
                schema_version: 1,
                maps: 1,
                features: 1,
                drift,
                stale: Vec::new(),
                errors: Vec::new(),
                warnings: Vec::new(),
                scan_stopped: None,
            },
            harness: Default::default(),
            weakening: crate::floors::weakening::Report {
                schema_version: 1,
                base: String::new(),
                head: String::new(),
                weakenings: Vec::new(),
            },
            red_on_base: None,
            criteria: Vec::new(),
            coverage: None,
        }
    }

    /// However many findings a run has, the floors that do not hold are among the ten errors GitHub shows:
    /// the findings past the cap go to the summary, never the verdict.
    #[test]
    fn a_failing_floor_is_annotated_first_and_never_capped_away() {
        let mut notes = Annotations::default();
        annotations(&failing_run(12), &mut notes);
        let errors: Vec<&str> = notes
            .lines
            .lines()
            .filter(|l| l.starts_with("::error "))
            .collect();
        assert_eq!(errors.len(), ANNOTATIONS_PER_LEVEL);
        assert_eq!(
            errors[0],
            "::error title=aayudha feature-map floor%3A fail::12 drift"
        );
        assert_eq!(notes.overflow.len(), 3, "{:?}", notes.overflow);
        assert!(notes.overflow.iter().all(|o| o.contains("aayudha drift")));
    }

    #[test]
    fn at_most_ten_annotations_a_level_the_rest_kept() {
        let mut a = Annotations::default();
        for i in 0..12 {
            a.add(
                Level::Error,
                Some(("src/a,b.rs", i + 1)),
                "drift",
                "msg\n::error::x",
            );
        }
        a.add(Level::Warning, None, "t", "w");
        assert_eq!(
            a.lines
                .lines()
                .filter(|l| l.starts_with("::error "))
                .count(),
            10
        );
        assert_eq!(
            a.lines
                .lines()
                .filter(|l| l.starts_with("::warning "))
                .count(),
            1
        );
        assert_eq!(a.overflow.len(), 2);
        assert!(
            a.lines
                .contains("file=src/a%2Cb.rs,line=1,title=drift::msg%0A::error::x")
        );
    }
}
