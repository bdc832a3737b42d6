//! The weakening floor (the seed's invariant 8): the maps at a change's base and at its head, compared for
//! what a change could do to turn the gate green without making the product right — a feature file
//! deleted or dropped from the index, a check removed, an assertion removed or shortened — and for what a
//! reviewer must look at because the floor cannot judge it: a new control tool (its argv or one of its
//! files changed), a surface rule removed, a feature's `sources` narrowed.
//!
//! A changed value (a renamed handle, another expected text) is not a weakening, and neither is a check
//! moved to another feature of the same map with the same id and the same assertions. Removed things are
//! reported where they were at the base; loosened ones where they are at the head.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::config::BlockingDate;
use crate::floors::{Floor, FloorResult, Verdict};
use crate::git::{GitError, Repo};
use crate::maps::{self, Check, Feature, Map};

/// The story label that waives the floor: the change reshapes the maps on purpose.
pub const WAIVER: &str = "map:reshape";

/// SPEC §2's assertion keys.
const ASSERTIONS: [&str; 10] = [
    "exit", "stdout", "stderr", "status", "json", "expect", "see", "contains", "count", "url",
];

/// The kinds of weakening, as reports name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A feature file deleted (its feature is in no file of the map at the head).
    FeatureDeleted,
    /// A feature file the base's index linked, still there, no longer linked.
    RemovedFromIndex,
    /// A check block removed (not moved to another feature of the map).
    FewerChecks,
    /// An assertion key removed, or an assertion's array (or expected object) shortened.
    FewerAssertions,
    /// The map's `control` argv changed: a new control tool.
    ControlChanged,
    /// A file of the control tool changed.
    ControlFileChanged,
    /// A surface rule removed, or one of its `files` globs.
    SurfaceRuleRemoved,
    /// A feature's `sources` lost a path.
    SourcesNarrowed,
    /// A surface rule's `files` gained a `!` entry (or one of its `!` entries changed): it excludes files.
    SurfaceRuleNarrowed,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::FeatureDeleted => "feature-deleted",
            Kind::RemovedFromIndex => "removed-from-index",
            Kind::FewerChecks => "fewer-checks",
            Kind::FewerAssertions => "fewer-assertions",
            Kind::ControlChanged => "control-changed",
            Kind::ControlFileChanged => "control-file-changed",
            Kind::SurfaceRuleRemoved => "surface-rule-removed",
            Kind::SourcesNarrowed => "sources-narrowed",
            Kind::SurfaceRuleNarrowed => "surface-rule-narrowed",
        }
    }
}

/// One weakening: where, what kind, and what was removed or loosened.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Weakening {
    pub file: String,
    pub line: usize,
    pub kind: Kind,
    pub product: String,
    pub feature: Option<String>,
    pub check: Option<String>,
    pub detail: String,
}

/// `reports/weakening.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub base: String,
    pub head: String,
    pub weakenings: Vec<Weakening>,
}

/// Compares the maps at `base` and `head` (full SHAs).
pub fn compare(repo: &Repo, base: &str, head: &str) -> Result<Report, GitError> {
    let before = maps::load_at(repo, base)?;
    let after = maps::load_at(repo, head)?;
    let mut found = Vec::new();
    for old in &before {
        if old.product.is_empty() {
            continue;
        }
        let new = after.iter().find(|m| m.product == old.product);
        compare_map(repo, base, head, old, new, &mut found);
    }
    found.sort();
    found.dedup();
    Ok(Report {
        schema_version: 1,
        base: base.to_string(),
        head: head.to_string(),
        weakenings: found,
    })
}

fn compare_map(
    repo: &Repo,
    base: &str,
    head: &str,
    old: &Map,
    new: Option<&Map>,
    found: &mut Vec<Weakening>,
) {
    let Some(new) = new else {
        map_deleted(old, found);
        return;
    };
    control_changed(repo, (base, head), old, new, found);
    rules_weakened(old, new, found);
    for feature in &old.features {
        feature_weakened(repo, head, (old, new), feature, found);
    }
}

/// A weakening in map `old` (its product), at a file and line.
fn at(old: &Map, file: &str, line: usize, kind: Kind, detail: String) -> Weakening {
    Weakening {
        file: file.to_string(),
        line,
        kind,
        product: old.product.clone(),
        feature: None,
        check: None,
        detail,
    }
}

/// The whole map is gone: each of its features is.
fn map_deleted(old: &Map, found: &mut Vec<Weakening>) {
    for feature in &old.features {
        found.push(Weakening {
            feature: Some(feature.id.value.clone()),
            ..at(
                old,
                &feature.file,
                feature.id.line,
                Kind::FeatureDeleted,
                format!(
                    "feature `{}` deleted with the map `{}` (at the base)",
                    feature.id.value, old.file
                ),
            )
        });
    }
}

/// The control tool: a new argv, or a changed file it names. The floor cannot judge a new tool.
fn control_changed(
    repo: &Repo,
    (base, head): (&str, &str),
    old: &Map,
    new: &Map,
    found: &mut Vec<Weakening>,
) {
    if old.control != new.control {
        found.push(at(
            old,
            &new.file,
            new.control_line,
            Kind::ControlChanged,
            format!(
                "the control tool changed from `{}` to `{}`: review the new tool",
                old.control.join(" "),
                new.control.join(" ")
            ),
        ));
    }
    // The built-in step runner (`aayu control`) is aayu's own code: no file of the checkout runs it.
    let builtin = new.uses_step_runner();
    for arg in new.control.iter().filter(|_| !builtin) {
        let path = arg.trim_start_matches("./").trim_end_matches('/');
        if path.is_empty() || path.starts_with('/') || path.split('/').any(|c| c == "..") {
            continue;
        }
        let (was, is) = (repo.id_at(base, path), repo.id_at(head, path));
        if was.is_some() && is.is_some() && was != is {
            found.push(at(
                old,
                &new.file,
                new.control_line,
                Kind::ControlFileChanged,
                format!("`{path}`, a file of the control tool, changed: review it"),
            ));
        }
    }
}

/// Surface rules, by kind: a kind without a rule, or a rule that looks in fewer places.
fn rules_weakened(old: &Map, new: &Map, found: &mut Vec<Weakening>) {
    for rule in &old.rules {
        match new.rules.iter().find(|r| r.kind == rule.kind) {
            None => found.push(at(
                old,
                &old.file,
                rule.line,
                Kind::SurfaceRuleRemoved,
                format!(
                    "the surface rule `{}` (pattern `{}`) was removed (at the base)",
                    rule.kind,
                    rule.regex.as_str()
                ),
            )),
            Some(kept) => {
                // A `!` entry removed widens the rule: not a weakening.
                let lost: Vec<&String> = rule
                    .files
                    .iter()
                    .filter(|g| !g.starts_with('!') && !kept.files.contains(g))
                    .collect();
                // One added (or changed, which may exclude more), or one that now comes after an
                // include it came before: the rule looks in fewer files.
                let excluding = narrowing(&rule.files, &kept.files);
                if !excluding.is_empty() {
                    found.push(at(
                        old,
                        &new.file,
                        kept.line,
                        Kind::SurfaceRuleNarrowed,
                        format!(
                            "the surface rule `{}` now excludes {}: review what it no longer looks in",
                            rule.kind,
                            quoted(&excluding)
                        ),
                    ));
                }
                if !lost.is_empty() {
                    found.push(at(
                        old,
                        &new.file,
                        kept.line,
                        Kind::SurfaceRuleRemoved,
                        format!(
                            "the surface rule `{}` no longer looks in {}",
                            rule.kind,
                            quoted(&lost)
                        ),
                    ));
                }
            }
        }
    }
}

/// A feature of the base's map against the head's: gone (or unreadable), unlinked from the index,
/// fewer sources, and each of its checks.
fn feature_weakened(
    repo: &Repo,
    head: &str,
    (old, new): (&Map, &Map),
    feature: &Feature,
    found: &mut Vec<Weakening>,
) {
    let indexed = |map: &Map, name: &str| map.index.iter().any(|l| l.name == name);
    let id = &feature.id.value;
    let with = |w: Weakening| Weakening {
        feature: Some(id.clone()),
        ..w
    };
    let Some(kept) = new.features.iter().find(|f| f.id.value == *id) else {
        // Its file may still be there but unreadable at the head (too large, not UTF-8, no feature
        // block): as good as gone for the gate, and said as it is.
        let detail = if repo.id_at(head, &feature.file).is_some() {
            format!(
                "feature `{id}` cannot be read at the head (`{}` is there, but the feature-map floor's contract errors say why)",
                feature.name
            )
        } else {
            format!("feature `{id}` deleted (`{}` at the base)", feature.name)
        };
        found.push(with(at(
            old,
            &feature.file,
            feature.id.line,
            Kind::FeatureDeleted,
            detail,
        )));
        return;
    };
    if indexed(old, &feature.name) && !indexed(new, &kept.name) {
        let line = old
            .index
            .iter()
            .find(|l| l.name == feature.name)
            .map_or(1, |l| l.line);
        found.push(with(at(
            old,
            &old.file,
            line,
            Kind::RemovedFromIndex,
            format!(
                "`{}` is no longer linked from the map's index (line {line} at the base)",
                kept.name
            ),
        )));
    }
    let lost: Vec<&String> = feature
        .sources
        .iter()
        .map(|s| &s.value)
        .filter(|s| !kept.sources.iter().any(|k| k.value == **s))
        .collect();
    if !lost.is_empty() {
        found.push(with(at(
            old,
            &kept.file,
            kept.id.line,
            Kind::SourcesNarrowed,
            format!("feature `{id}`'s `sources` lost {}", quoted(&lost)),
        )));
    }
    for check in &feature.checks {
        compare_check(old, new, feature, kept, check, found);
    }
}

/// A check at the base against the same check at the head: in the same feature, or moved to another
/// feature of the map.
fn compare_check(
    old: &Map,
    new: &Map,
    feature: &Feature,
    kept: &Feature,
    check: &Check,
    found: &mut Vec<Weakening>,
) {
    let id = &check.id.value;
    let before = assertions(&check.spec);
    let same_feature = kept.checks.iter().find(|c| c.id.value == *id);
    // Moved: the same id in another feature of the map, with assertions no weaker.
    let moved = || {
        new.features
            .iter()
            .filter(|f| f.id.value != kept.id.value)
            .flat_map(|f| f.checks.iter().map(move |c| (f, c)))
            .find(|(_, c)| c.id.value == *id && loosened(&before, &assertions(&c.spec)).is_empty())
    };
    let weakening = |file: &str, line: usize, kind: Kind, detail: String| Weakening {
        file: file.to_string(),
        line,
        kind,
        product: old.product.clone(),
        feature: Some(feature.id.value.clone()),
        check: Some(id.clone()),
        detail,
    };
    match same_feature {
        Some(now) => {
            for what in loosened(&before, &assertions(&now.spec)) {
                found.push(weakening(
                    &kept.file,
                    now.id.line,
                    Kind::FewerAssertions,
                    format!("check `{}.{id}`: {what}", feature.id.value),
                ));
            }
        }
        None if moved().is_some() => {}
        None => found.push(weakening(
            &kept.file,
            kept.id.line,
            Kind::FewerChecks,
            format!(
                "feature `{}` has {}, had {}: `{id}` was removed",
                kept.id.value,
                crate::log::count(kept.checks.len(), "check block", "check blocks"),
                feature.checks.len()
            ),
        )),
    }
}

/// Per assertion key of a check: how many times it is asserted, and how many items those assertions
/// hold (an array's elements, an expected object's fields, else one). `"exit": 0` — the default — is not
/// counted; an `expect` object's own assertion keys are counted as assertions.
fn assertions(spec: &Value) -> BTreeMap<&'static str, (usize, usize)> {
    let mut counts: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    fn add(
        counts: &mut BTreeMap<&'static str, (usize, usize)>,
        object: &serde_json::Map<String, Value>,
    ) {
        for (key, value) in object {
            let Some(name) = ASSERTIONS.iter().find(|a| **a == key) else {
                continue;
            };
            if *name == "exit" && value.as_i64() == Some(0) {
                continue;
            }
            if *name == "expect"
                && let Some(inner) = value.as_object()
            {
                add(counts, inner);
            }
            let items = match value {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                _ => 1,
            };
            let entry = counts.entry(name).or_default();
            entry.0 += 1;
            entry.1 += items;
        }
    }
    for step in spec
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(object) = step.as_object() {
            add(&mut counts, object);
        }
    }
    counts
}

/// What the head's assertions lost against the base's, a phrase each.
fn loosened(
    before: &BTreeMap<&'static str, (usize, usize)>,
    after: &BTreeMap<&'static str, (usize, usize)>,
) -> Vec<String> {
    let mut lost = Vec::new();
    for (key, &(times, items)) in before {
        let (now_times, now_items) = after.get(key).copied().unwrap_or_default();
        if now_times < times {
            lost.push(if now_times == 0 {
                format!("the assertion `{key}` was removed")
            } else {
                format!(
                    "the assertion `{key}` is made {}, was {times}",
                    crate::log::count(now_times, "time", "times")
                )
            });
        } else if now_items < items {
            lost.push(format!(
                "the assertion `{key}` was shortened from {} to {}",
                crate::log::count(items, "item", "items"),
                crate::log::count(now_items, "item", "items")
            ));
        }
    }
    lost
}

/// The `!` entries of `head` (a surface rule's `files`) that narrow it against `base`: entries apply in
/// order and the last match decides, so a `!` entry narrows when it is new (or there more times than at the
/// base), or when an include of the base now comes before it that came after it (or was not before it) at
/// the base — moved, not added. An include that is new at the head widens the rule whatever follows it.
fn narrowing<'a>(base: &[String], head: &'a [String]) -> Vec<&'a String> {
    let includes_before = |files: &[String], at: usize| -> Vec<String> {
        files[..at]
            .iter()
            .filter(|g| !g.starts_with('!'))
            .cloned()
            .collect()
    };
    let base_includes: Vec<&String> = base.iter().filter(|g| !g.starts_with('!')).collect();
    let mut found = Vec::new();
    for (i, entry) in head.iter().enumerate() {
        if !entry.starts_with('!') {
            continue;
        }
        // The same occurrence of this entry at the base (the 2nd `!x` of the head is the base's 2nd).
        let nth = head[..i].iter().filter(|g| *g == entry).count();
        let Some(at) = base
            .iter()
            .enumerate()
            .filter(|(_, g)| *g == entry)
            .nth(nth)
            .map(|(j, _)| j)
        else {
            found.push(entry);
            continue;
        };
        let before_at_base = includes_before(base, at);
        let moved_over = includes_before(head, i)
            .iter()
            .any(|g| base_includes.contains(&g) && !before_at_base.contains(g));
        if moved_over {
            found.push(entry);
        }
    }
    found
}

fn quoted(items: &[&String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The floor: `value` is the number of weakenings, `threshold` 0; advisory before `rule`'s date, `fail`
/// from it; `waived` when the story carries [`WAIVER`].
pub fn floor(
    report: &Report,
    rule: BlockingDate,
    now: time::OffsetDateTime,
    waived: bool,
) -> FloorResult {
    let tool = "aayu verify --ci (weakening)";
    let n = report.weakenings.len();
    let result = |verdict, detail| {
        FloorResult::new(Floor::Weakening, verdict, tool, detail).numbers(n as f64, 0.0)
    };
    if n == 0 {
        return result(
            Verdict::Pass,
            "no feature, check or assertion removed or loosened".into(),
        );
    }
    let count = format!("{n} weakening{}", if n == 1 { "" } else { "s" });
    let waiver = waived.then(|| format!("waived by the story's label `{WAIVER}`"));
    let (verdict, detail) = super::dated(rule, now, &count, waiver, "");
    result(verdict, detail)
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_exclusion_narrows_when_it_is_new_repeated_or_moved_past_an_include() {
        let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let base = v(&["src/**", "!src/x/**", "src/x/api.rs"]);
        let narrowed = |head: &[&str]| {
            super::narrowing(&base, &v(head))
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert!(
            narrowed(&["src/**", "!src/x/**", "src/x/api.rs"]).is_empty(),
            "the same"
        );
        assert_eq!(
            narrowed(&["src/**", "src/x/api.rs", "!src/x/**"]),
            ["!src/x/**"],
            "moved last"
        );
        assert_eq!(
            narrowed(&["src/**", "!src/x/**", "src/x/api.rs", "!src/x/**"]),
            ["!src/x/**"],
            "repeated at the end"
        );
        assert_eq!(
            narrowed(&["src/**", "!src/x/**", "src/x/api.rs", "!**/*.rs"]),
            ["!**/*.rs"]
        );
        assert!(
            narrowed(&["src/**", "src/x/api.rs"]).is_empty(),
            "an exclusion removed widens"
        );
        assert!(
            narrowed(&["src/**", "lib/**", "!src/x/**", "src/x/api.rs"]).is_empty(),
            "a new include before it widens"
        );
        // The two-step: a leading `!src/**` (flagged when added), then moved last.
        let step = v(&["!src/**", "src/**"]);
        let last = v(&["src/**", "!src/**"]);
        assert_eq!(super::narrowing(&step, &last), [&"!src/**".to_string()]);
    }

    use super::*;
    use serde_json::json;

    fn of(steps: Value) -> BTreeMap<&'static str, (usize, usize)> {
        assertions(&json!({"steps": steps}))
    }

    #[test]
    fn assertions_are_counted_with_their_items() {
        let counts = of(json!([
            {"run": ["a"], "exit": 0, "stdout": ["x", "y"]},
            {"run": ["b"], "exit": 1},
            {"request": {"json": {"status": "data"}}, "expect": {"status": 200, "json": {"a": 1, "b": 2}}},
            {"see": {"name": "Ask"}, "contains": "hi"}
        ]));
        assert_eq!(
            counts.get("exit"),
            Some(&(1, 1)),
            "`exit: 0` is the default"
        );
        assert_eq!(counts.get("stdout"), Some(&(1, 2)));
        assert_eq!(
            counts.get("status"),
            Some(&(1, 1)),
            "a request body is data"
        );
        assert_eq!(counts.get("json"), Some(&(1, 2)));
        assert_eq!(counts.get("expect"), Some(&(1, 2)));
        assert_eq!(counts.get("see"), Some(&(1, 1)));
        assert_eq!(counts.get("contains"), Some(&(1, 1)));
    }

    #[test]
    fn removed_and_shortened_assertions_are_loosened_changed_values_are_not() {
        let base = of(json!([{"run": ["a"], "exit": 0, "stdout": ["x", "y"], "stderr": ["e"]}]));
        let renamed = of(json!([{"run": ["a"], "stdout": ["p", "q"], "stderr": ["f"]}]));
        assert!(
            loosened(&base, &renamed).is_empty(),
            "values changed, `exit: 0` dropped"
        );
        let weaker = of(json!([{"run": ["a"], "exit": 0, "stdout": ["x"]}]));
        assert_eq!(
            loosened(&base, &weaker),
            [
                "the assertion `stderr` was removed",
                "the assertion `stdout` was shortened from 2 items to 1 item"
            ]
        );
    }
}
