//! The feature-map check (SPEC §3): drift between each map and the source, and stale features. No
//! product code runs and the control tool is neither run nor checked.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use std::path::Path;

use git2::{Oid, Tree};
use serde::Serialize;

use crate::exit::ExitStatus;
use crate::floors::scan::{self, Found};
use crate::git::{GitError, Repo, WorktreeFiles};
use crate::maps::{self, ContractError, Feature, Map, Warning};

/// The kinds of drift, exactly as reports and annotations name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftKind {
    UnmappedSurface,
    MissingSurface,
    MissingHandle,
    MissingSource,
    Index,
}

impl DriftKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::UnmappedSurface => "unmapped-surface",
            DriftKind::MissingSurface => "missing-surface",
            DriftKind::MissingHandle => "missing-handle",
            DriftKind::MissingSource => "missing-source",
            DriftKind::Index => "index",
        }
    }
}

/// One disagreement between a map and the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Drift {
    pub product: String,
    /// The feature concerned; `null` for what belongs to no feature (an unmapped surface, an index link).
    pub feature: Option<String>,
    pub file: String,
    pub line: usize,
    pub kind: DriftKind,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StaleReason {
    Changed,
    NeverVerified,
    MissingCommit,
}

impl StaleReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StaleReason::Changed => "changed",
            StaleReason::NeverVerified => "never-verified",
            StaleReason::MissingCommit => "missing-commit",
        }
    }
}

/// A feature whose sources may have moved on since it was last verified: reported, never drift.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Stale {
    pub product: String,
    pub feature: String,
    pub reason: StaleReason,
    pub detail: String,
    /// Where the feature's `verified_at` is written (not part of the JSON shape).
    #[serde(skip)]
    pub file: String,
    #[serde(skip)]
    pub line: usize,
}

/// Everything `verify --map` found: the `--json` document (SPEC §3, schema_version 1).
#[derive(Debug, Clone, Serialize)]
pub struct MapReport {
    pub schema_version: u32,
    pub maps: usize,
    pub features: usize,
    pub drift: Vec<Drift>,
    pub stale: Vec<Stale>,
    pub errors: Vec<ContractError>,
    /// Said but not judged: a glob that matches nothing, a binary or unreadable source, a feature without
    /// checks. An addition to the documented shape; scripts may ignore it.
    pub warnings: Vec<Warning>,
    /// Set when the scan ran out of its time budget: nothing it did not reach is judged, and the floor is
    /// blocked. Only present then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_stopped: Option<ScanStopped>,
}

/// Where a scan that ran out of its budget spent it.
#[derive(Debug, Clone, Serialize)]
pub struct ScanStopped {
    pub budget_s: u64,
    /// The surface rule that took longest: its map file and line, and the seconds it took.
    pub rule: Option<RuleTime>,
    /// The file that took longest.
    pub file: Option<String>,
    /// Whether the rules caused it (the longest took more than half the budget), or reading files did.
    pub rules_caused_it: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleTime {
    pub file: String,
    pub line: usize,
    pub seconds: f64,
}

impl ScanStopped {
    /// What the floor's detail and `verify --map` say.
    pub fn sentence(&self) -> String {
        let file = self
            .file
            .as_ref()
            .map(|f| format!(", longest over `{f}`"))
            .unwrap_or_default();
        match (&self.rule, self.rules_caused_it) {
            (Some(rule), true) => format!(
                "the scan ran past its budget of {} s (`[verify] scan_timeout_s`): the surface rule at `{}:{}` took {:.1} s{file}: simplify the rule or narrow its files",
                self.budget_s, rule.file, rule.line, rule.seconds
            ),
            _ => format!(
                "the scan ran out of time reading files ({} s, `[verify] scan_timeout_s`){file}: narrow the maps' sources and rules' files, or raise the budget",
                self.budget_s
            ),
        }
    }
}

impl MapReport {
    /// Products in report order, with their map file.
    pub fn products(&self) -> BTreeSet<&str> {
        self.drift
            .iter()
            .map(|d| d.product.as_str())
            .chain(self.stale.iter().map(|s| s.product.as_str()))
            .collect()
    }
}

/// Reads every map in the repository and compares it with the working tree, within the scan's bounds;
/// `heartbeat` is told every 10 s how many files of how many were scanned, after how long.
pub fn check(
    repo: &Repo,
    bounds: scan::Bounds,
    heartbeat: &mut dyn FnMut(usize, usize, std::time::Duration),
) -> Result<MapReport, GitError> {
    let mut phases = crate::timing::Phases::start();
    let maps::Loaded {
        listed,
        maps,
        mut errors,
        mut warnings,
    } = maps::load_repo_timed(repo, &mut phases)?;
    let files = &listed.files;

    // The verified commits first: only the sources of features that have one need their blob ids.
    let mut trees: HashMap<&str, Option<(Oid, Tree)>> = HashMap::new();
    for feature in maps.iter().flat_map(|m| m.features.iter()) {
        let verified = feature.verified_at.value.as_str();
        if !verified.is_empty() && !trees.contains_key(verified) {
            trees.insert(verified, repo.commit_tree(verified));
        }
    }
    let tree_of = |feature: &maps::Feature| {
        trees
            .get(feature.verified_at.value.as_str())
            .and_then(Option::as_ref)
    };
    let need_blobs: Vec<Vec<bool>> = maps
        .iter()
        .map(|m| m.features.iter().map(|f| tree_of(f).is_some()).collect())
        .collect();
    phases.end("open the verified commits");
    let scanned = scan::scan(repo.root(), &listed, &maps, &need_blobs, bounds, heartbeat);
    warnings.extend(scanned.warnings.iter().cloned());
    phases.end("scan the sources");

    let mut drift = Vec::new();
    let mut stale = Vec::new();
    let mut cache = ChangedCache::new();
    for (m, map) in maps.iter().enumerate() {
        if map.broken {
            continue;
        }
        drift.extend(map_drift(
            map,
            files,
            &scanned.surfaces[m],
            &scanned.handles[m],
            &scanned.unsearched[m],
        ));
        for feature in &map.features {
            let tree = tree_of(feature);
            if let Some(s) = stale_of(
                repo,
                map,
                feature,
                &listed,
                &scanned.blobs,
                tree,
                &mut cache,
            ) {
                stale.push(s);
            }
        }
    }
    drift.sort();
    stale.sort();
    errors.sort();
    warnings.sort();
    warnings.dedup();
    phases.end("drift and stale");
    let scan_stopped = scanned.stopped.as_ref().map(|stopped| {
        let rule = stopped.rule.map(|(m, r, took)| RuleTime {
            file: maps[m].file.clone(),
            line: maps[m].rules[r].line,
            seconds: took.as_secs_f64(),
        });
        ScanStopped {
            budget_s: stopped.budget.as_secs(),
            rules_caused_it: stopped
                .rule
                .is_some_and(|(_, _, took)| took > stopped.budget / 2),
            rule,
            file: stopped.file.as_ref().map(|(f, _)| f.clone()),
        }
    });
    if scan_stopped.is_some() {
        // What was not reached is not judged: no drift or stale from a half scan.
        drift.clear();
        stale.clear();
    }
    Ok(MapReport {
        schema_version: 1,
        maps: maps.len(),
        features: maps.iter().map(|m| m.features.len()).sum(),
        drift,
        stale,
        errors,
        warnings,
        scan_stopped,
    })
}

fn map_drift(
    map: &Map,
    files: &[String],
    surfaces: &[Vec<Found>],
    handles: &[Vec<bool>],
    unsearched: &[bool],
) -> Vec<Drift> {
    let mut out = DriftOf {
        map,
        drift: Vec::new(),
    };
    let found = found_surfaces(map, surfaces);
    unmapped_surfaces(map, &found, &mut out);
    for (f, feature) in map.features.iter().enumerate() {
        missing_surfaces(map, feature, &found, unsearched, &mut out);
        let existing = missing_sources(feature, files, &mut out);
        missing_handles(feature, &existing, handles.get(f), &mut out);
        twice_named_checks(feature, &mut out);
    }
    index_drift(map, &mut out);
    out.drift
}

/// The drift of one map as it is found, each item with the map's product.
struct DriftOf<'a> {
    map: &'a Map,
    drift: Vec<Drift>,
}

impl DriftOf<'_> {
    fn push(
        &mut self,
        feature: Option<&str>,
        file: &str,
        line: usize,
        kind: DriftKind,
        detail: String,
    ) {
        self.drift.push(Drift {
            product: self.map.product.clone(),
            feature: feature.map(str::to_string),
            file: file.to_string(),
            line,
            kind,
            detail,
        });
    }
}

/// The surfaces the map's rules find, by kind and name, each at the first place it is found. Hashed, not
/// ordered: the drift is sorted at the end, and a large map has tens of thousands of surfaces.
fn found_surfaces<'a>(
    map: &'a Map,
    surfaces: &'a [Vec<Found>],
) -> HashMap<(&'a str, &'a str), &'a Found> {
    let mut found: HashMap<(&str, &str), &Found> =
        HashMap::with_capacity(surfaces.iter().map(Vec::len).sum());
    for (r, hits) in surfaces.iter().enumerate() {
        let kind = map.rules[r].kind.as_str();
        for hit in hits {
            found
                .entry((kind, hit.name.as_str()))
                .and_modify(|first| {
                    if (hit.file.as_str(), hit.line) < (first.file.as_str(), first.line) {
                        *first = hit;
                    }
                })
                .or_insert(hit);
        }
    }
    found
}

/// Every surface found in source that no feature claims.
fn unmapped_surfaces(map: &Map, found: &HashMap<(&str, &str), &Found>, out: &mut DriftOf) {
    let claimed: HashSet<(&str, &str)> = map
        .features
        .iter()
        .flat_map(|f| {
            f.surfaces
                .iter()
                .map(|(kind, name)| (kind.as_str(), name.value.as_str()))
        })
        .collect();
    for ((kind, name), hit) in found {
        if !claimed.contains(&(*kind, *name)) {
            out.push(
                None,
                &hit.file,
                hit.line,
                DriftKind::UnmappedSurface,
                format!(
                    "{kind} `{name}` is found in source but no feature claims it: add it to a feature's `surfaces.{kind}`"
                ),
            );
        }
    }
}

/// Every surface a feature claims that no rule finds (unless a rule of its kind left a file out).
fn missing_surfaces(
    map: &Map,
    feature: &Feature,
    found: &HashMap<(&str, &str), &Found>,
    unsearched: &[bool],
    out: &mut DriftOf,
) {
    let id = Some(feature.id.value.as_str());
    for (kind, name) in &feature.surfaces {
        // A rule of its kind left a file out (over `max_source_bytes`): the surface may be there.
        let unknown = map
            .rules
            .iter()
            .zip(unsearched)
            .any(|(rule, &left_out)| left_out && rule.kind == *kind);
        if !unknown && !found.contains_key(&(kind.as_str(), name.value.as_str())) {
            let why = if map.rules.iter().any(|r| r.kind == *kind) {
                format!("no `{kind}` rule of the map finds it in source")
            } else {
                format!("the map has no `{kind}` surface rule")
            };
            out.push(
                id,
                &feature.file,
                name.line,
                DriftKind::MissingSurface,
                format!("{kind} `{}` is claimed, but {why}", name.value),
            );
        }
    }
}

/// Every source of a feature that does not exist; the files its sources hold.
fn missing_sources<'a>(feature: &Feature, files: &'a [String], out: &mut DriftOf) -> Vec<&'a str> {
    let mut existing = Vec::new();
    for source in &feature.sources {
        let under = scan::files_of_source(files, &source.value);
        if under.is_empty() {
            out.push(
                Some(feature.id.value.as_str()),
                &feature.file,
                source.line,
                DriftKind::MissingSource,
                format!("source `{}` does not exist", source.value),
            );
        }
        existing.extend(under.iter().map(String::as_str));
    }
    existing
}

/// Every handle of a feature's checks that the scan did not find in the feature's `existing` sources
/// (`found`: the scan's answer for each handle, in order).
fn missing_handles(
    feature: &Feature,
    existing: &[&str],
    found: Option<&Vec<bool>>,
    out: &mut DriftOf,
) {
    let all_handles = feature
        .checks
        .iter()
        .flat_map(|c| c.handles.iter().map(move |h| (c, h)));
    for (h, (check, handle)) in all_handles.enumerate() {
        if found
            .and_then(|found| found.get(h))
            .copied()
            .unwrap_or(false)
        {
            continue;
        }
        let how = if handle.whole_word() {
            "as a whole word"
        } else {
            "quoted or as element text"
        };
        let sources = if existing.is_empty() {
            "the feature has no existing sources".to_string()
        } else {
            format!("not in {}", short_list(existing))
        };
        out.push(
            Some(feature.id.value.as_str()),
            &feature.file,
            handle.line,
            DriftKind::MissingHandle,
            format!(
                "check `{}`: {}.{} `{}` is not found {how} in the feature's sources ({sources})",
                check.id.value, handle.action, handle.field, handle.value
            ),
        );
    }
}

/// Every check id a feature names twice.
fn twice_named_checks(feature: &Feature, out: &mut DriftOf) {
    let mut seen_checks: BTreeMap<&str, usize> = BTreeMap::new();
    for check in &feature.checks {
        if let Some(first) = seen_checks.insert(&check.id.value, check.id.line) {
            out.push(
                Some(feature.id.value.as_str()),
                &feature.file,
                check.id.line,
                DriftKind::Index,
                format!(
                    "check id `{}` appears twice in the feature (first on line {first})",
                    check.id.value
                ),
            );
        }
    }
}

/// The index: every feature file listed once, every link to a file that exists, unique feature ids.
fn index_drift(map: &Map, out: &mut DriftOf) {
    let names: BTreeSet<&str> = map.features.iter().map(|f| f.name.as_str()).collect();
    // A map that is judged has no contract errors, so every feature file in its folder was read.
    let present = &names;
    let mut listed: BTreeMap<&str, usize> = BTreeMap::new();
    for link in &map.index {
        if let Some(first) = listed.insert(&link.name, link.line) {
            out.push(
                None,
                &map.file,
                link.line,
                DriftKind::Index,
                format!(
                    "`{}` is listed twice in the index (first on line {first})",
                    link.name
                ),
            );
        }
        if !present.contains(link.name.as_str()) {
            out.push(
                None,
                &map.file,
                link.line,
                DriftKind::Index,
                format!(
                    "the index links `{}`, which is not a file in `{}`",
                    link.name, map.dir
                ),
            );
        }
    }
    let add_at = map.index.last().map_or(map.block_line, |l| l.line);
    for name in &names {
        if !listed.contains_key(name) {
            let feature = map
                .features
                .iter()
                .find(|f| f.name == *name)
                .map(|f| f.id.value.as_str());
            out.push(
                feature,
                &map.file,
                add_at,
                DriftKind::Index,
                format!("feature file `{name}` is not in the index: link it from the README"),
            );
        }
    }
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for feature in &map.features {
        if let Some(first) = ids.insert(&feature.id.value, &feature.name) {
            out.push(
                Some(&feature.id.value),
                &feature.file,
                feature.id.line,
                DriftKind::Index,
                format!(
                    "feature id `{}` is also the id of `{first}`; ids are unique in a map",
                    feature.id.value
                ),
            );
        }
    }
}

/// The paths under `source` that differ between the tree of a verified commit and the working tree,
/// each with `(added)` or `(deleted)` where it exists on one side only. Several features often share a
/// source and a commit, so the answer is cached per (commit, source).
type ChangedCache = HashMap<(Oid, String), Vec<String>>;

fn changed_under(
    repo: &Repo,
    (commit, tree): &(Oid, Tree),
    source: &str,
    listed: &WorktreeFiles,
    blobs: &[Option<Oid>],
    cache: &mut ChangedCache,
) -> Vec<String> {
    let files = &listed.files;
    let key = (*commit, source.to_string());
    if let Some(found) = cache.get(&key) {
        return found.clone();
    }
    let range = scan::source_range(files, source);
    // The common case first: a folder whose tree, computed from the working tree's files, is the tree
    // the verified commit has there — nothing in it changed, and its history need not be read.
    if let Some(now) = worktree_tree(listed, blobs, range.clone(), source)
        && tree
            .get_path(Path::new(source))
            .is_ok_and(|then| then.id() == now)
    {
        cache.insert(key, Vec::new());
        return Vec::new();
    }
    let then = repo.blobs_under(tree, source);
    let mut changed = Vec::new();
    let (mut t, mut n) = (0, range.start);
    while t < then.len() || n < range.end {
        let order = match (then.get(t), files.get(n).filter(|_| n < range.end)) {
            (Some((old, _)), Some(now)) => old.as_str().cmp(now.as_str()),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Equal => {
                if blobs[n] != Some(then[t].1) {
                    changed.push(files[n].clone());
                }
                t += 1;
                n += 1;
            }
            std::cmp::Ordering::Less => {
                changed.push(format!("{} (deleted)", then[t].0));
                t += 1;
            }
            std::cmp::Ordering::Greater => {
                changed.push(format!("{} (added)", files[n]));
                n += 1;
            }
        }
    }
    cache.insert(key, changed.clone());
    changed
}

/// The id of the tree git would write for the working tree's files under the folder `source` (the files
/// at `range`), from their blob ids and the index's modes; `None` when that cannot be known — a file that
/// is not tracked, or whose blob id is not known — and the trees are then compared file by file.
fn worktree_tree(
    listed: &WorktreeFiles,
    blobs: &[Option<Oid>],
    range: std::ops::Range<usize>,
    source: &str,
) -> Option<Oid> {
    let skip = source.len() + 1;
    let mut entries = Vec::with_capacity(range.len());
    for i in range {
        let path = listed.files[i].get(skip..)?;
        let mode = listed.tracked[i]?.mode;
        entries.push((path, mode, blobs[i]?));
    }
    if entries.is_empty() {
        return None;
    }
    crate::git::tree_id(&entries)
}

fn stale_of(
    repo: &Repo,
    map: &Map,
    feature: &maps::Feature,
    listed: &WorktreeFiles,
    blobs: &[Option<Oid>],
    tree: Option<&(Oid, Tree)>,
    cache: &mut ChangedCache,
) -> Option<Stale> {
    let verified = &feature.verified_at.value;
    let stale = |reason: StaleReason, detail: String| Stale {
        product: map.product.clone(),
        feature: feature.id.value.clone(),
        reason,
        detail,
        file: feature.file.clone(),
        line: feature.verified_at.line,
    };
    if verified.is_empty() {
        return Some(stale(
            StaleReason::NeverVerified,
            "`verified_at` is empty: the feature was never verified".to_string(),
        ));
    }
    let Some(verified_tree) = tree else {
        let why = if repo.is_shallow() {
            "this is a shallow clone; fetch the full history (`fetch-depth: 0` in actions/checkout)"
        } else {
            "check the SHA, or fetch the history that has it"
        };
        return Some(stale(
            StaleReason::MissingCommit,
            format!("commit `{verified}` is not in this repository: {why}"),
        ));
    };
    let mut changed: Vec<String> = Vec::new();
    for source in &feature.sources {
        changed.extend(changed_under(
            repo,
            verified_tree,
            &source.value,
            listed,
            blobs,
            cache,
        ));
    }
    if changed.is_empty() {
        return None;
    }
    changed.sort();
    changed.dedup();
    let short = &verified_tree.0.to_string()[..12];
    Some(stale(
        StaleReason::Changed,
        format!(
            "changed since {short}: {}",
            short_list(&changed.iter().map(String::as_str).collect::<Vec<_>>())
        ),
    ))
}

/// `a, b, c and 4 more`.
fn short_list(items: &[&str]) -> String {
    const SHOWN: usize = 3;
    let mut text = items
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// The feature-map floor's verdict: blocked by contract errors, skipped without maps, and drift advisory
/// until `drift_blocking_from`, failing from that UTC day on.
pub fn floor(
    report: &MapReport,
    rule: crate::config::BlockingDate,
    now: time::OffsetDateTime,
) -> crate::floors::FloorResult {
    use crate::floors::{Floor, FloorResult, Verdict};
    use crate::log::count;
    let tool = "aayu verify --map";
    let result = |verdict, detail| FloorResult::new(Floor::FeatureMap, verdict, tool, detail);
    if !report.errors.is_empty() {
        return result(
            Verdict::Blocked,
            format!(
                "{} in the maps",
                count(report.errors.len(), "contract error", "contract errors")
            ),
        )
        .numbers(report.errors.len() as f64, 0.0);
    }
    if let Some(stopped) = &report.scan_stopped {
        return result(Verdict::Blocked, stopped.sentence());
    }
    if report.maps == 0 {
        return result(Verdict::Skipped, "no feature map in the checkout".into());
    }
    if report.drift.is_empty() {
        return result(
            Verdict::Pass,
            format!(
                "{}, {} in sync",
                count(report.maps, "map", "maps"),
                count(report.features, "feature", "features")
            ),
        );
    }
    let drift = report.drift.len();
    if rule.blocks_at(now) {
        result(
            Verdict::Fail,
            format!(
                "{drift} drift (blocking since {})",
                rule.0.map(|d| d.to_string()).unwrap_or_default()
            ),
        )
        .numbers(drift as f64, 0.0)
    } else {
        result(
            Verdict::Pass,
            format!("{}: {drift} drift", rule.advisory_detail()),
        )
        .numbers(drift as f64, 0.0)
    }
}

impl MapReport {
    /// 2 for contract errors or a scan the map's rules made run out of time, 1 for one that ran out
    /// reading files, else 3 for drift, else 0. Stale is never drift.
    pub fn exit_status(&self) -> ExitStatus {
        let report = self;
        if let Some(stopped) = &report.scan_stopped {
            if stopped.rules_caused_it {
                ExitStatus::Usage
            } else {
                ExitStatus::Failure
            }
        } else if !report.errors.is_empty() {
            ExitStatus::Usage
        } else if !report.drift.is_empty() {
            ExitStatus::FloorFails
        } else {
            ExitStatus::Ok
        }
    }
}
