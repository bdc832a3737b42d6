//! Reads the source files the maps point at, each file once however many rules and features name it, in
//! parallel across cores; finds surfaces, looks for handles and computes git blob ids for the stale check.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use git2::Oid;
use rayon::prelude::*;

use nix::fcntl::OFlag;

use crate::git::WorktreeFiles;
use crate::maps::{Map, Warning};

/// How many leading bytes decide that a file is binary (a NUL among them), as git and ripgrep do.
const BINARY_PROBE: usize = 8000;

/// A surface found in source.
#[derive(Debug, Clone)]
pub struct Found {
    pub name: String,
    pub file: String,
    pub line: usize,
}

/// What the scan learnt, indexed like the maps: `surfaces[map][rule]`, `handles[map][feature][handle]`.
pub struct Scan {
    pub surfaces: Vec<Vec<Vec<Found>>>,
    pub handles: Vec<Vec<Vec<bool>>>,
    /// The git blob id of every source file that was read, for the stale check.
    /// The git blob id of each file (by its position in the sorted list) that a stale check needs.
    pub blobs: Vec<Option<Oid>>,
    pub warnings: Vec<Warning>,
    /// Per `[map][rule]`: whether a file the rule matches was left out of the search (over
    /// `max_source_bytes`): a claimed surface it does not find is then no drift.
    pub unsearched: Vec<Vec<bool>>,
    /// Whether the scan ran out of its time budget, and where the time went.
    pub stopped: Option<Stopped>,
}

/// What the scan may take (`[verify] scan_timeout_s`, `[verify] max_source_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub budget: std::time::Duration,
    pub max_source_bytes: u64,
}

impl Bounds {
    /// What the configuration's `[verify]` gives the scan.
    pub fn of(verify: &crate::config::Verify) -> Bounds {
        Bounds {
            budget: std::time::Duration::from_secs(verify.scan_timeout_s),
            max_source_bytes: verify.max_source_bytes,
        }
    }
}

/// A scan stopped at its budget: the rule that took longest (map, rule, time) and the file that did.
#[derive(Debug, Clone)]
pub struct Stopped {
    pub budget: std::time::Duration,
    pub rule: Option<(usize, usize, std::time::Duration)>,
    pub file: Option<(String, std::time::Duration)>,
}

/// The scan's clock, shared by its threads: the deadline, whether it passed, and where the time went.
struct Clock {
    deadline: std::time::Instant,
    stop: std::sync::atomic::AtomicBool,
    /// Nanoseconds per (map, rule), flattened by [`Clock::rule_index`].
    rule_nanos: Vec<std::sync::atomic::AtomicU64>,
    rule_offsets: Vec<usize>,
    /// The file that took longest: (nanoseconds, file).
    slowest: std::sync::Mutex<(u64, usize)>,
    done: std::sync::atomic::AtomicUsize,
}

impl Clock {
    fn over(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        if std::time::Instant::now() >= self.deadline {
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn rule_index(&self, m: usize, r: usize) -> usize {
        self.rule_offsets[m] + r
    }
}

/// A file and everything to do with it.
struct Job {
    /// The file's position in the sorted list.
    file: usize,
    /// Whether a feature's stale check needs its blob id.
    need_blob: bool,
    /// Its (map, rule) pairs whose globs match the file: a range of [`Plan::rules`].
    rules: std::ops::Range<usize>,
    /// The features whose sources include the file: an index into [`Plan::feature_sets`].
    features: usize,
}

/// What each file is read for, built without an allocation per file: the rule matches of all files in one
/// sorted list, and the features of a file by the run of the sorted list it lies in (a feature's source is
/// a file or a folder, so the files of each source are one run).
struct Plan {
    jobs: Vec<Job>,
    /// (file, map, rule), sorted by file.
    rules: Vec<(usize, usize, usize)>,
    /// Sets of (map, feature) pairs; set 0 is empty.
    feature_sets: Vec<Vec<(usize, usize)>>,
    /// Per (map, rule): which distinct pattern it runs (rules of several maps often share one, which then
    /// runs once per file and keeps one cache per thread).
    pattern_of: Vec<Vec<usize>>,
}

/// Every handle of every feature, searched in one pass per file (Aho-Corasick): a quoted handle as `"v"`,
/// `'v'` or `>v<`; a `test` handle as the bare word, checked for word boundaries at each occurrence.
struct Handles {
    automaton: Option<AhoCorasick>,
    /// Pattern id → needle id.
    needle_of: Vec<usize>,
    /// Per needle: whether it must stand as a whole word, and its length.
    whole_word: Vec<(bool, usize)>,
    /// `[map][feature][handle]` → needle id.
    ids: Vec<Vec<Vec<usize>>>,
}

impl Handles {
    fn new(maps: &[Map]) -> Handles {
        let mut needles: HashMap<(String, bool), usize> = HashMap::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut needle_of = Vec::new();
        let mut whole_word = Vec::new();
        let mut ids = Vec::new();
        for map in maps {
            let mut per_feature = Vec::new();
            for feature in &map.features {
                let mut per_handle = Vec::new();
                for handle in feature.checks.iter().flat_map(|c| c.handles.iter()) {
                    let key = (handle.value.clone(), handle.whole_word());
                    let next = whole_word.len();
                    let id = *needles.entry(key).or_insert_with(|| {
                        let forms = if handle.whole_word() {
                            vec![handle.value.clone()]
                        } else {
                            vec![
                                format!("\"{}\"", handle.value),
                                format!("'{}'", handle.value),
                                format!(">{}<", handle.value),
                            ]
                        };
                        for form in forms.into_iter().filter(|f| !f.is_empty()) {
                            patterns.push(form);
                            needle_of.push(next);
                        }
                        whole_word.push((handle.whole_word(), handle.value.len()));
                        next
                    });
                    per_handle.push(id);
                }
                per_feature.push(per_handle);
            }
            ids.push(per_feature);
        }
        let automaton = if patterns.is_empty() {
            None
        } else {
            // A contiguous NFA: built in time linear in the patterns (the DFA the builder picks for a few
            // patterns grows with their length times the alphabet), and searched nearly as fast.
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
                .build(&patterns)
                .ok()
        };
        Handles {
            automaton,
            needle_of,
            whole_word,
            ids,
        }
    }

    /// The needles present in `bytes`, as a set of ids.
    fn found_in(&self, bytes: &[u8]) -> Vec<bool> {
        let mut found = vec![false; self.whole_word.len()];
        let Some(automaton) = &self.automaton else {
            return found;
        };
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        for m in automaton.find_overlapping_iter(bytes) {
            let needle = self.needle_of[m.pattern().as_usize()];
            if found[needle] {
                continue;
            }
            let (whole, _) = self.whole_word[needle];
            if whole {
                let before = m.start().checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(m.end()).copied();
                if before.is_some_and(is_word) || after.is_some_and(is_word) {
                    continue;
                }
            }
            found[needle] = true;
        }
        found
    }
}

/// The folder part of a glob before its first wildcard, with a final `/` (`src/` of `src/**/*.rs`);
/// empty when the glob starts with a wildcard.
fn literal_prefix(glob: &str) -> String {
    let mut prefix = String::new();
    let components: Vec<&str> = glob.split('/').collect();
    for component in &components[..components.len().saturating_sub(1)] {
        if component.contains(['*', '?', '[', '{', '\\']) {
            break;
        }
        prefix.push_str(component);
        prefix.push('/');
    }
    prefix
}

/// The positions of the files of a sorted list that start with `prefix`.
fn under(files: &[String], prefix: &str) -> std::ops::Range<usize> {
    let start = files.partition_point(|f| f.as_str() < prefix);
    let len = files[start..]
        .iter()
        .take_while(|f| f.starts_with(prefix))
        .count();
    start..start + len
}

/// The positions of the worktree files a feature's source path stands for: the file itself, or every
/// file under a folder.
pub fn source_range(files: &[String], source: &str) -> std::ops::Range<usize> {
    match files.binary_search_by(|f| f.as_str().cmp(source)) {
        Ok(i) => i..i + 1,
        Err(_) => under(files, &format!("{source}/")),
    }
}

/// The worktree files a feature's source path stands for: the file itself, or every file under a folder.
pub fn files_of_source<'a>(files: &'a [String], source: &str) -> &'a [String] {
    &files[source_range(files, source)]
}

/// Scans `files` (sorted repository paths, with the ids git already knows) under `root` for every map that
/// is not broken. `need_blobs[map][feature]` says whose source files need a blob id (for the stale check).
pub fn scan(
    root: &Path,
    listed: &WorktreeFiles,
    maps: &[Map],
    need_blobs: &[Vec<bool>],
    bounds: Bounds,
    heartbeat: &mut dyn FnMut(usize, usize, std::time::Duration),
) -> Scan {
    let started = std::time::Instant::now();
    let files = &listed.files;
    let (plan, mut warnings) = plan(files, maps, need_blobs);
    let handles = Handles::new(maps);
    let mut scan = Scan::nothing_found(maps, &handles, files.len());
    let root_dir = match crate::safe_fs::open_root(root) {
        Ok(dir) => dir,
        Err(e) => {
            warnings.push(Warning {
                file: ".".to_string(),
                line: 1,
                message: format!("cannot open the repository: {e}"),
            });
            scan.warnings = warnings;
            return scan;
        }
    };
    let clock = Clock::new(started + bounds.budget, maps);
    let context = Context {
        root: root_dir.as_fd(),
        listed,
        maps,
        handles: &handles,
        plan: &plan,
        clock: &clock,
        max_source_bytes: bounds.max_source_bytes,
    };
    let runs = scan_jobs(&context, started, heartbeat);
    scan.gather(runs, files, &mut warnings);
    scan.warnings = warnings;
    if clock.stop.load(std::sync::atomic::Ordering::Relaxed) {
        scan.stopped = Some(clock.stopped(maps, files, bounds.budget));
    }
    scan
}

impl Scan {
    /// A scan of `maps` over `files` files that has found nothing yet.
    fn nothing_found(maps: &[Map], handles: &Handles, files: usize) -> Scan {
        Scan {
            surfaces: maps
                .iter()
                .map(|m| vec![Vec::new(); m.rules.len()])
                .collect(),
            handles: maps
                .iter()
                .enumerate()
                .map(|(m, map)| {
                    (0..map.features.len())
                        .map(|f| vec![false; handles.ids[m][f].len()])
                        .collect()
                })
                .collect(),
            blobs: vec![None; files],
            warnings: Vec::new(),
            unsearched: maps.iter().map(|m| vec![false; m.rules.len()]).collect(),
            stopped: None,
        }
    }

    /// Adds what each run of files found; each file skipped is a warning.
    fn gather(&mut self, runs: Vec<Finds>, files: &[String], warnings: &mut Vec<Warning>) {
        for finds in runs {
            for (m, r, found) in finds.surfaces {
                self.surfaces[m][r].push(found);
            }
            for (m, f, h) in finds.handles {
                self.handles[m][f][h] = true;
            }
            for (file, blob) in finds.blobs {
                self.blobs[file] = Some(blob);
            }
            for (file, message) in finds.skipped {
                warnings.push(Warning {
                    file: files[file].clone(),
                    line: 1,
                    message,
                });
            }
            for (m, r) in finds.unsearched {
                self.unsearched[m][r] = true;
            }
        }
    }
}

impl Clock {
    /// A clock with nothing timed yet, that stops at `deadline`.
    fn new(deadline: std::time::Instant, maps: &[Map]) -> Clock {
        let mut rule_offsets = Vec::with_capacity(maps.len());
        let mut rules_total = 0;
        for map in maps {
            rule_offsets.push(rules_total);
            rules_total += map.rules.len();
        }
        Clock {
            deadline,
            stop: std::sync::atomic::AtomicBool::new(false),
            rule_nanos: (0..rules_total)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
            rule_offsets,
            slowest: std::sync::Mutex::new((0, 0)),
            done: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Where the time went, once the scan stopped: the rule that took longest, and the slowest file.
    fn stopped(&self, maps: &[Map], files: &[String], budget: std::time::Duration) -> Stopped {
        let rule = maps
            .iter()
            .enumerate()
            .flat_map(|(m, map)| (0..map.rules.len()).map(move |r| (m, r)))
            .map(|(m, r)| {
                let nanos = self.rule_nanos[self.rule_index(m, r)]
                    .load(std::sync::atomic::Ordering::Relaxed);
                (m, r, std::time::Duration::from_nanos(nanos))
            })
            .max_by_key(|&(_, _, took)| took);
        let (nanos, file) = self.slowest.lock().map(|s| *s).unwrap_or((0, 0));
        Stopped {
            budget,
            rule,
            file: (nanos > 0)
                .then(|| (files[file].clone(), std::time::Duration::from_nanos(nanos))),
        }
    }
}

/// Scans every file of the plan, in runs of neighbouring files, which mostly share a folder: each run
/// opens each folder once, reads every file of it into one buffer, and keeps only what it finds (not a
/// record per file). The scan works on a thread of its own while this one says, every 10 s, how far it is.
fn scan_jobs(
    context: &Context,
    started: std::time::Instant,
    heartbeat: &mut dyn FnMut(usize, usize, std::time::Duration),
) -> Vec<Finds> {
    const RUN: usize = 128;
    let total = context.plan.jobs.len();
    std::thread::scope(|scope| {
        let (sent, received) = std::sync::mpsc::channel();
        let jobs = &context.plan.jobs;
        let worker = scope.spawn(move || {
            let runs: Vec<Finds> = jobs
                .par_chunks(RUN)
                .map(|run| {
                    let (mut reader, mut finds) = (Reader::default(), Finds::default());
                    for job in run {
                        if context.clock.over() {
                            break;
                        }
                        scan_file(context, &mut reader, job, &mut finds);
                        context
                            .clock
                            .done
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    finds
                })
                .collect();
            let _ = sent.send(());
            runs
        });
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            received.recv_timeout(std::time::Duration::from_secs(10))
        {
            heartbeat(
                context
                    .clock
                    .done
                    .load(std::sync::atomic::Ordering::Relaxed),
                total,
                started.elapsed(),
            );
        }
        // A panic of the scan is aayu's bug: it ends aayu, never an empty (in sync) scan.
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Which files are read for what, and a warning for each glob that matches no file.
fn plan(files: &[String], maps: &[Map], need_blobs: &[Vec<bool>]) -> (Plan, Vec<Warning>) {
    let mut warnings = Vec::new();
    let pattern_of = distinct_patterns(maps);
    let rules = rule_matches(files, maps, &mut warnings);
    let (feature_sets, pieces) = feature_pieces(files, maps, need_blobs);
    let jobs = jobs(files.len(), &rules, &pieces);
    (
        Plan {
            jobs,
            rules,
            feature_sets,
            pattern_of,
        },
        warnings,
    )
}

/// Per (map, rule): its distinct pattern, by the pattern's text.
fn distinct_patterns(maps: &[Map]) -> Vec<Vec<usize>> {
    let mut pattern_ids: HashMap<&str, usize> = HashMap::new();
    maps.iter()
        .map(|map| {
            map.rules
                .iter()
                .map(|rule| {
                    let next = pattern_ids.len();
                    *pattern_ids.entry(rule.regex.as_str()).or_insert(next)
                })
                .collect()
        })
        .collect()
}

/// The (file, map, rule) of every file each rule of a map that is not broken reads, sorted; a warning for
/// each entry of a rule's `files` that changes nothing.
///
/// Each glob is tried only on the files under its literal folder prefix (`src/` of `src/**/*.rs`),
/// found by binary search in the sorted list. A rule's entries apply in order, as in gitignore: a glob
/// adds the files it matches, a `!glob` removes them again, so the last entry that matches a file
/// decides; an excluded file is never read for that rule.
fn rule_matches(
    files: &[String],
    maps: &[Map],
    warnings: &mut Vec<Warning>,
) -> Vec<(usize, usize, usize)> {
    let mut rules: Vec<(usize, usize, usize)> = Vec::new();
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (r, rule) in map.rules.iter().enumerate() {
            let mut included: std::collections::BTreeSet<usize> = Default::default();
            for (g, entry) in rule.files.iter().enumerate() {
                let (excludes, glob) = match entry.strip_prefix('!') {
                    Some(glob) => (true, glob),
                    None => (false, entry.as_str()),
                };
                let Ok(compiled) = crate::maps::glob::compile(glob) else {
                    continue;
                };
                let matcher = compiled.compile_matcher();
                let mut changed = false;
                for i in under(files, &literal_prefix(glob)) {
                    if matcher.is_match(files[i].as_str()) {
                        changed |= if excludes {
                            included.remove(&i)
                        } else {
                            included.insert(i);
                            true
                        };
                    }
                }
                if !changed {
                    let what = if excludes {
                        "excludes no file the entries before it include"
                    } else {
                        "matches no file"
                    };
                    warnings.push(Warning {
                        file: map.file.clone(),
                        line: rule.line,
                        message: format!(
                            "surface rule {r} (`{}`): `files[{g}]` `{entry}` {what}",
                            rule.kind
                        ),
                    });
                }
            }
            rules.extend(included.into_iter().map(|i| (i, m, r)));
        }
    }
    rules.sort_unstable();
    rules.dedup();
    rules
}

/// A run of files that belong to the same features: (start, end, feature set, whether any of its
/// features needs blob ids).
type Piece = (usize, usize, usize, bool);

/// The sets of (map, feature) pairs (set 0 empty) and the pieces of the file list that belong to each.
///
/// The run of files of each feature source, then the runs cut where any of them starts or ends: within
/// a piece every file belongs to the same features. A sweep over the starts and ends, keeping the
/// features whose runs are open.
fn feature_pieces(
    files: &[String],
    maps: &[Map],
    need_blobs: &[Vec<bool>],
) -> (Vec<Vec<(usize, usize)>>, Vec<Piece>) {
    let mut events: Vec<(usize, bool, usize, usize)> = Vec::new();
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (f, feature) in map.features.iter().enumerate() {
            for source in &feature.sources {
                let range = source_range(files, &source.value);
                if !range.is_empty() {
                    events.push((range.start, true, m, f));
                    events.push((range.end, false, m, f));
                }
            }
        }
    }
    events.sort_unstable();
    let need_blob_of = |m: usize, f: usize| {
        need_blobs
            .get(m)
            .and_then(|n| n.get(f))
            .copied()
            .unwrap_or(false)
    };
    let mut feature_sets: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    let mut set_ids: HashMap<Vec<(usize, usize)>, usize> = HashMap::new();
    let mut pieces: Vec<Piece> = Vec::new();
    // (map, feature) → how many of its sources' runs are open (a feature may name overlapping sources).
    let mut open: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut e = 0;
    while e < events.len() {
        let at = events[e].0;
        while e < events.len() && events[e].0 == at {
            let (_, starts, m, f) = events[e];
            if starts {
                *open.entry((m, f)).or_insert(0) += 1;
            } else if let Some(count) = open.get_mut(&(m, f)) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&(m, f));
                }
            }
            e += 1;
        }
        let Some(&(end, ..)) = events.get(e) else {
            break;
        };
        if open.is_empty() {
            continue;
        }
        let set: Vec<(usize, usize)> = open.keys().copied().collect();
        let need_blob = set.iter().any(|&(m, f)| need_blob_of(m, f));
        let next = feature_sets.len();
        let id = *set_ids.entry(set.clone()).or_insert_with(|| {
            feature_sets.push(set);
            next
        });
        pieces.push((at, end, id, need_blob));
    }
    (feature_sets, pieces)
}

/// One job per file that a rule matches or a feature's source includes, in file order (the pieces are
/// sorted and do not overlap).
fn jobs(files: usize, rules: &[(usize, usize, usize)], pieces: &[Piece]) -> Vec<Job> {
    let mut jobs = Vec::new();
    let (mut r, mut p, mut i) = (0, 0, 0);
    while i < files {
        while pieces.get(p).is_some_and(|&(_, end, _, _)| end <= i) {
            p += 1;
        }
        let piece = pieces.get(p).filter(|&&(start, _, _, _)| start <= i);
        let matched = rules.get(r).is_some_and(|&(file, _, _)| file == i);
        if piece.is_none() && !matched {
            // Nothing for this file: on to the next file a rule matches or a piece starts at.
            let next_rule = rules.get(r).map(|&(file, _, _)| file);
            let next_piece = pieces.get(p).map(|&(start, _, _, _)| start);
            match next_rule.into_iter().chain(next_piece).min() {
                Some(next) => i = next,
                None => break,
            }
            continue;
        }
        let (features, need_blob) = piece.map_or((0, false), |&(_, _, id, need)| (id, need));
        let first_rule = r;
        while rules.get(r).is_some_and(|&(file, _, _)| file == i) {
            r += 1;
        }
        jobs.push(Job {
            file: i,
            need_blob,
            rules: first_rule..r,
            features,
        });
        i += 1;
    }
    jobs
}

/// What a run of files gave, in file order.
#[derive(Default)]
struct Finds {
    /// (map, rule, surface).
    surfaces: Vec<(usize, usize, Found)>,
    /// (map, feature, handle) found.
    handles: Vec<(usize, usize, usize)>,
    /// (file, blob id).
    blobs: Vec<(usize, Oid)>,
    /// (file, why it was not read).
    skipped: Vec<(usize, String)>,
    /// (map, rule) whose search left a file out.
    unsearched: Vec<(usize, usize)>,
}

/// What every file's scan shares.
struct Context<'a> {
    root: BorrowedFd<'a>,
    listed: &'a WorktreeFiles,
    maps: &'a [Map],
    handles: &'a Handles,
    plan: &'a Plan,
    clock: &'a Clock,
    max_source_bytes: u64,
}

/// Why a file's folder cannot be opened (the file is skipped with it). Cloned from the folder a thread
/// keeps open, so the underlying refusal is kept as its words.
#[derive(Debug, Clone, thiserror::Error)]
enum FolderError {
    #[error("lies behind a symbolic link, which is not followed")]
    Link,
    #[error("cannot read the file: {refused}")]
    Unreadable { refused: String },
    #[error("cannot read the file")]
    NotOpened,
}

/// What one thread keeps from file to file of a run: the folder it last opened and a read buffer.
#[derive(Default)]
struct Reader {
    folder: Option<(String, Result<OwnedFd, FolderError>)>,
    buffer: Vec<u8>,
}

impl Reader {
    /// The folder `path` lies in, opened beneath the root without following a link; the reason when it
    /// cannot be.
    fn folder<'a>(
        &'a mut self,
        root: BorrowedFd<'a>,
        folder: &str,
    ) -> Result<BorrowedFd<'a>, FolderError> {
        if folder.is_empty() {
            return Ok(root);
        }
        if self.folder.as_ref().is_none_or(|(open, _)| open != folder) {
            let opened = crate::safe_fs::open_dir_at(root, folder).map_err(|e| match e {
                crate::safe_fs::Refused::Link { .. } => FolderError::Link,
                other => FolderError::Unreadable {
                    refused: other.to_string(),
                },
            });
            self.folder = Some((folder.to_string(), opened));
        }
        match &self.folder {
            Some((_, Ok(fd))) => Ok(fd.as_fd()),
            Some((_, Err(why))) => Err(why.clone()),
            None => Err(FolderError::NotOpened),
        }
    }

    /// Reads the whole of an open file of `size` bytes (by `fstat`) into the buffer: one `read` when the
    /// file still has that size, more when it grew or the file system returns less.
    fn read(&mut self, file: &mut std::fs::File, size: u64) -> std::io::Result<&[u8]> {
        let want = usize::try_from(size)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        self.buffer.clear();
        self.buffer.resize(want, 0);
        let mut filled = 0;
        loop {
            if filled == self.buffer.len() {
                let more = self.buffer.len().max(4096);
                self.buffer.resize(self.buffer.len() + more, 0);
            }
            match file.read(&mut self.buffer[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    // The size `fstat` gave, and the read stopped short of the byte asked beyond it: the end.
                    if filled as u64 == size && filled < self.buffer.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(&self.buffer[..filled])
    }
}

/// A buffer larger than this is not kept from one file to the next.
const KEEP_BUFFER: usize = 1 << 20;

fn scan_file(context: &Context, reader: &mut Reader, job: &Job, finds: &mut Finds) {
    let started = std::time::Instant::now();
    scan_file_timed(context, reader, job, finds);
    if reader.buffer.capacity() > KEEP_BUFFER {
        reader.buffer = Vec::new();
    }
    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    if let Ok(mut slowest) = context.clock.slowest.lock()
        && nanos > slowest.0
    {
        *slowest = (nanos, job.file);
    }
}

/// `1.5 MiB`, `400 MiB`, `16 MiB`: a size for a person.
pub(crate) fn mib(bytes: u64) -> String {
    let mib = bytes as f64 / f64::from(1u32 << 20);
    if mib >= 10.0 || mib.fract() == 0.0 {
        format!("{mib:.0} MiB")
    } else {
        format!("{mib:.1} MiB")
    }
}

fn scan_file_timed(context: &Context, reader: &mut Reader, job: &Job, finds: &mut Finds) {
    let path = context.listed.files[job.file].as_str();
    let rules = &context.plan.rules[job.rules.clone()];
    let features = &context.plan.feature_sets[job.features];
    let Some(fd) = open_file(context.root, reader, path, job, !rules.is_empty(), finds) else {
        return;
    };
    let stat = match nix::sys::stat::fstat(&fd) {
        Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFREG => stat,
        Ok(_) => return finds.skip(job.file, "not a regular file".to_string()),
        Err(e) => return finds.skip(job.file, format!("cannot read the file: {e}")),
    };
    let mut blob = None;
    if job.need_blob {
        blob = context
            .listed
            .clean_id(job.file, &crate::git::FileStat::of_stat(&stat));
    }
    let wanted = Wanted {
        rules,
        features,
        look_for_handles: features
            .iter()
            .any(|&(m, f)| !context.handles.ids[m][f].is_empty()),
        hash: job.need_blob && blob.is_none(),
    };
    if rules.is_empty() && !wanted.look_for_handles && !wanted.hash {
        finds.blobs.extend(blob.map(|b| (job.file, b)));
        return;
    }
    let mut file = std::fs::File::from(fd);
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > context.max_source_bytes {
        return too_large(context, &mut file, size, &wanted, blob, job, finds);
    }
    // A binary file is told by its first bytes: only those are read, unless it must be hashed.
    if !wanted.hash {
        match starts_binary(&mut file) {
            Ok(false) => {}
            Ok(true) => {
                finds.blobs.extend(blob.map(|b| (job.file, b)));
                if !rules.is_empty() {
                    finds.skip(
                        job.file,
                        "a binary file: not searched for surfaces or handles".to_string(),
                    );
                }
                return;
            }
            Err(e) => return finds.skip(job.file, format!("cannot read the file: {e}")),
        }
    }
    let bytes = match reader.read(&mut file, size) {
        Ok(bytes) => bytes,
        Err(e) => return finds.skip(job.file, format!("cannot read the file: {e}")),
    };
    if wanted.hash {
        blob = crate::git::blob_id(bytes);
    }
    finds.blobs.extend(blob.map(|b| (job.file, b)));
    if memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_some() {
        if !rules.is_empty() {
            finds.skip(
                job.file,
                "a binary file: not searched for surfaces or handles".to_string(),
            );
        }
        return;
    }
    if !search_surfaces(context, rules, bytes, path, finds) {
        return;
    }
    if wanted.look_for_handles {
        search_handles(context.handles, features, bytes, finds);
    }
}

/// What a file is read for.
struct Wanted<'a> {
    /// Its (file, map, rule) matches.
    rules: &'a [(usize, usize, usize)],
    /// The (map, feature) pairs whose sources include it.
    features: &'a [(usize, usize)],
    /// Whether any of those features has handles.
    look_for_handles: bool,
    /// Whether its blob id must be computed (git does not know it clean).
    hash: bool,
}

impl Finds {
    /// The file is not read (or not searched), and why.
    fn skip(&mut self, file: usize, why: String) {
        self.skipped.push((file, why));
    }
}

/// Opens the file at `path` by name in its folder, without following a link and without blocking on a
/// FIFO: one open, one fstat, one read per file, as ripgrep does. `None` when it is not to be read (what
/// is to be said of it is said: a link is hashed for the stale check, and skipped when `searched`).
fn open_file(
    root: BorrowedFd<'_>,
    reader: &mut Reader,
    path: &str,
    job: &Job,
    searched: bool,
    finds: &mut Finds,
) -> Option<OwnedFd> {
    let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
    let folder = match reader.folder(root, folder) {
        Ok(folder) => folder,
        Err(why) => {
            finds.skip(job.file, why.to_string());
            return None;
        }
    };
    let opened = nix::fcntl::openat(
        folder,
        name,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    );
    match opened {
        Ok(fd) => Some(fd),
        Err(nix::errno::Errno::ELOOP) => {
            // A symbolic link. git stores a link as its target's text: hash that for the stale check,
            // but never follow a link out of the checkout (or into a loop) to look for surfaces.
            if job.need_blob {
                let target = nix::fcntl::readlinkat(folder, name);
                if let Some(blob) = target
                    .ok()
                    .and_then(|t| crate::git::blob_id(t.as_encoded_bytes()))
                {
                    finds.blobs.push((job.file, blob));
                }
            }
            if searched {
                finds.skip(
                    job.file,
                    "a symbolic link: not followed when looking for surfaces".to_string(),
                );
            }
            None
        }
        Err(e) => {
            finds.skip(job.file, format!("cannot read the file: {e}"));
            None
        }
    }
}

/// A file too large to search: left out of the surface and handle search (never drift: its rules' missing
/// surfaces and its features' handles are not judged), still hashed for the stale check, in blocks.
fn too_large(
    context: &Context,
    file: &mut std::fs::File,
    size: u64,
    wanted: &Wanted,
    mut blob: Option<Oid>,
    job: &Job,
    finds: &mut Finds,
) {
    if wanted.hash {
        match streamed_blob_id(file, size) {
            Ok(id) => blob = Some(id),
            Err(e) => return finds.skip(job.file, format!("cannot read the file: {e}")),
        }
    }
    finds.blobs.extend(blob.map(|b| (job.file, b)));
    if !wanted.rules.is_empty() || wanted.look_for_handles {
        finds.skip(
            job.file,
            format!(
                "skipped: {} is over max_source_bytes ({})",
                mib(size),
                mib(context.max_source_bytes)
            ),
        );
    }
    finds
        .unsearched
        .extend(wanted.rules.iter().map(|&(_, m, r)| (m, r)));
    for &(m, f) in wanted.features {
        finds
            .handles
            .extend((0..context.handles.ids[m][f].len()).map(|h| (m, f, h)));
    }
}

/// Whether the file's first bytes hold a NUL (a binary file); the file is left at its start.
fn starts_binary(file: &mut std::fs::File) -> std::io::Result<bool> {
    let mut probe = [0u8; BINARY_PROBE];
    let mut filled = 0;
    while filled < probe.len() {
        match file.read(&mut probe[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if memchr::memchr(0, &probe[..filled]).is_some() {
        return Ok(true);
    }
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(false)
}

/// Runs the file's rules over its bytes, each distinct pattern once (rules that share it share its
/// finds); `false` when the scan's time ran out.
fn search_surfaces(
    context: &Context,
    rules: &[(usize, usize, usize)],
    bytes: &[u8],
    path: &str,
    finds: &mut Finds,
) -> bool {
    let clock = context.clock;
    let mut ran: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for &(_, m, r) in rules {
        if clock.over() {
            return false;
        }
        let pattern = context.plan.pattern_of[m][r];
        if let Some((_, earlier)) = ran.iter().find(|(p, _)| *p == pattern) {
            let same: Vec<Found> = finds.surfaces[earlier.clone()]
                .iter()
                .map(|(_, _, found)| found.clone())
                .collect();
            finds
                .surfaces
                .extend(same.into_iter().map(|found| (m, r, found)));
            continue;
        }
        let start = finds.surfaces.len();
        let searching = std::time::Instant::now();
        surfaces_in(
            &context.maps[m].rules[r].regex,
            bytes,
            path,
            clock,
            |found| {
                finds.surfaces.push((m, r, found));
            },
        );
        clock.rule_nanos[clock.rule_index(m, r)].fetch_add(
            u64::try_from(searching.elapsed().as_nanos()).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
        ran.push((pattern, start..finds.surfaces.len()));
    }
    true
}

/// The handles of the file's features that its bytes hold.
fn search_handles(handles: &Handles, features: &[(usize, usize)], bytes: &[u8], finds: &mut Finds) {
    let found = handles.found_in(bytes);
    for &(m, f) in features {
        for (h, &needle) in handles.ids[m][f].iter().enumerate() {
            if found[needle] {
                finds.handles.push((m, f, h));
            }
        }
    }
}

/// A file's git blob id, read in fixed blocks (the file is never held whole): SHA-1 of `blob <size>\0` and
/// the bytes, as `git hash-object` computes it.
fn streamed_blob_id(file: &mut std::fs::File, size: u64) -> std::io::Result<Oid> {
    use sha1::Digest;
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    let mut block = vec![0u8; 256 << 10];
    let mut read = 0u64;
    loop {
        match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&block[..n]);
                read += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if read != size {
        return Err(std::io::Error::other(format!(
            "it changed while it was read ({size} bytes by fstat, {read} read)"
        )));
    }
    Oid::from_bytes(&hasher.finalize()).map_err(std::io::Error::other)
}

/// Every capture of a surface rule's group 1 in a file, with its line.
fn surfaces_in(
    regex: &regex::bytes::Regex,
    bytes: &[u8],
    path: &str,
    clock: &Clock,
    mut found: impl FnMut(Found),
) {
    let (mut counted_to, mut line) = (0usize, 1usize);
    for captures in regex.captures_iter(bytes) {
        // Between matches: one search overruns the budget by at most one rule over one capped file.
        if clock.over() {
            return;
        }
        let Some(group) = captures.get(1) else {
            continue;
        };
        line += memchr::memchr_iter(b'\n', &bytes[counted_to..group.start()]).count();
        counted_to = group.start();
        found(Found {
            name: String::from_utf8_lossy(group.as_bytes()).into_owned(),
            file: path.to_string(),
            line,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(value: &str, whole_word: bool) -> Handles {
        let mut needles = HashMap::new();
        needles.insert((value.to_string(), whole_word), 0);
        let patterns: Vec<String> = if whole_word {
            vec![value.to_string()]
        } else {
            vec![
                format!("\"{value}\""),
                format!("'{value}'"),
                format!(">{value}<"),
            ]
        };
        Handles {
            automaton: AhoCorasick::builder().build(&patterns).ok(),
            needle_of: vec![0; patterns.len()],
            whole_word: vec![(whole_word, value.len())],
            ids: Vec::new(),
        }
    }

    #[test]
    fn handles_match_quoted_or_as_element_text() {
        let m = needles("Ask", false);
        assert!(m.found_in(br#"button("Ask")"#)[0]);
        assert!(m.found_in(b"label = 'Ask'")[0]);
        assert!(m.found_in(b"<button>Ask</button>")[0]);
        assert!(!m.found_in(b"fn Ask() {}")[0]);
        assert!(!m.found_in(br#""Asked""#)[0]);
    }

    #[test]
    fn test_handles_match_whole_words_only() {
        let m = needles("done_marks", true);
        assert!(m.found_in(b"fn done_marks() {")[0]);
        assert!(m.found_in(b"done_marks")[0]);
        assert!(m.found_in(b"done_marks_all done_marks")[0]);
        assert!(!m.found_in(b"fn done_marks_all() {")[0]);
        assert!(!m.found_in(b"fn undone_marks() {")[0]);
    }

    #[test]
    fn a_source_is_a_file_or_every_file_under_a_folder() {
        let files: Vec<String> = ["a/b.rs", "a/c/d.rs", "a/cd.rs", "ab.rs"]
            .map(String::from)
            .to_vec();
        assert_eq!(files_of_source(&files, "a/b.rs"), &files[0..1]);
        assert_eq!(files_of_source(&files, "a/c"), &files[1..2]);
        assert_eq!(files_of_source(&files, "a"), &files[0..3]);
        assert!(files_of_source(&files, "a/x").is_empty());
    }

    #[test]
    fn a_glob_is_tried_under_its_literal_folder() {
        assert_eq!(literal_prefix("src/**/*.rs"), "src/");
        assert_eq!(literal_prefix("a/b/main.rs"), "a/b/");
        assert_eq!(literal_prefix("**/*.rs"), "");
        assert_eq!(literal_prefix("main.rs"), "");
        assert_eq!(literal_prefix("a/{b,c}/x.rs"), "a/");
        assert_eq!(literal_prefix("a/b[0-9]/x.rs"), "a/");
    }

    #[test]
    fn globs_keep_star_inside_a_folder() {
        let glob = crate::maps::glob::compile("src/*.rs")
            .expect("glob")
            .compile_matcher();
        assert!(glob.is_match("src/main.rs"));
        assert!(!glob.is_match("src/cli/mod.rs"));
        let deep = crate::maps::glob::compile("src/**/*.rs")
            .expect("glob")
            .compile_matcher();
        assert!(deep.is_match("src/cli/mod.rs"));
        assert!(deep.is_match("src/main.rs"));
    }
}
