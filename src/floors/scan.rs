//! Reads the source files the maps point at, each file once however many rules and features name it, in
//! parallel across cores; finds surfaces, looks for handles and computes git blob ids for the stale check.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use git2::Oid;
use rayon::prelude::*;

use crate::git::{FileStat, WorktreeFiles};
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
}

/// A file and everything to do with it.
struct Job {
    /// The file's position in the sorted list.
    file: usize,
    /// Whether a feature's stale check needs its blob id.
    need_blob: bool,
    /// (map, rule) pairs whose globs match the file.
    rules: Vec<(usize, usize)>,
    /// (map, feature) pairs whose sources include the file.
    features: Vec<(usize, usize)>,
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
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
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
pub fn scan(root: &Path, listed: &WorktreeFiles, maps: &[Map], need_blobs: &[Vec<bool>]) -> Scan {
    let files = &listed.files;
    let mut warnings = Vec::new();

    // Each glob is tried only on the files under its literal folder prefix (`src/` of `src/**/*.rs`),
    // found by binary search in the sorted list: a file is matched against the few globs that can match
    // it rather than against every glob of every map.
    // Jobs by file position in the sorted list, so sources and globs reach them without hashing paths.
    let mut job_of: Vec<Option<usize>> = vec![None; files.len()];
    let mut jobs: Vec<Job> = Vec::new();
    let mut job_at = |i: usize, jobs: &mut Vec<Job>| -> usize {
        *job_of[i].get_or_insert_with(|| {
            jobs.push(Job::new(i));
            jobs.len() - 1
        })
    };
    let mut owners: Vec<(usize, usize, usize)> = Vec::new();
    let mut glob_used = Vec::new();
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (r, rule) in map.rules.iter().enumerate() {
            for (g, glob) in rule.files.iter().enumerate() {
                let Ok(compiled) = crate::maps::glob::compile(glob) else {
                    continue;
                };
                let matcher = compiled.compile_matcher();
                let mut used = false;
                let range = under(files, &literal_prefix(glob));
                for i in range {
                    if !matcher.is_match(files[i].as_str()) {
                        continue;
                    }
                    used = true;
                    let j = job_at(i, &mut jobs);
                    let job = &mut jobs[j];
                    if !job.rules.contains(&(m, r)) {
                        job.rules.push((m, r));
                    }
                }
                owners.push((m, r, g));
                glob_used.push(used);
            }
        }
    }
    for (h, &(m, r, g)) in owners.iter().enumerate() {
        if !glob_used[h] {
            warnings.push(Warning {
                file: maps[m].file.clone(),
                line: maps[m].rules[r].line,
                message: format!(
                    "surface rule {r} (`{}`): `files[{g}]` `{}` matches no file",
                    maps[m].rules[r].kind, maps[m].rules[r].files[g]
                ),
            });
        }
    }

    // The files of each feature's sources.
    let handles = Handles::new(maps);
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (f, feature) in map.features.iter().enumerate() {
            let need_blob = need_blobs
                .get(m)
                .and_then(|n| n.get(f))
                .copied()
                .unwrap_or(false);
            for source in &feature.sources {
                for i in source_range(files, &source.value) {
                    let j = job_at(i, &mut jobs);
                    let job = &mut jobs[j];
                    job.need_blob |= need_blob;
                    if !job.features.contains(&(m, f)) {
                        job.features.push((m, f));
                    }
                }
            }
        }
    }

    jobs.sort_unstable_by_key(|job| job.file);
    let results: Vec<FileResult> = jobs
        .par_iter()
        .map(|job| scan_file(root, listed, job, maps, &handles))
        .collect();

    let mut scan = Scan {
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
        blobs: vec![None; files.len()],
        warnings,
    };
    for (job, result) in jobs.iter().zip(results) {
        for ((m, r), found) in result.surfaces {
            scan.surfaces[m][r].extend(found);
        }
        for (m, f, h) in result.handles {
            scan.handles[m][f][h] = true;
        }
        if let Some(blob) = result.blob {
            scan.blobs[job.file] = Some(blob);
        }
        if let Some(message) = result.skipped {
            scan.warnings.push(Warning {
                file: files[job.file].clone(),
                line: 1,
                message,
            });
        }
    }
    scan
}

#[derive(Default)]
struct FileResult {
    surfaces: Vec<((usize, usize), Vec<Found>)>,
    handles: Vec<(usize, usize, usize)>,
    blob: Option<Oid>,
    skipped: Option<String>,
}

impl Job {
    fn new(file: usize) -> Job {
        Job {
            file,
            need_blob: false,
            rules: Vec::new(),
            features: Vec::new(),
        }
    }
}

fn scan_file(
    root: &Path,
    listed: &WorktreeFiles,
    job: &Job,
    maps: &[Map],
    handles: &Handles,
) -> FileResult {
    let path = listed.files[job.file].as_str();
    let mut result = FileResult::default();
    let full = root.join(path);
    // Opened without following a final symlink (and without blocking on a FIFO): one open, one fstat,
    // one read per file, as ripgrep does.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&full);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            // A symbolic link. git stores a link as its target's text: hash that for the stale check,
            // but never follow a link out of the checkout (or into a loop) to look for surfaces.
            if job.need_blob {
                if let Ok(target) = std::fs::read_link(&full) {
                    result.blob = crate::git::blob_id(target.as_os_str().as_encoded_bytes());
                }
            }
            if !job.rules.is_empty() {
                result.skipped =
                    Some("a symbolic link: not followed when looking for surfaces".to_string());
            }
            return result;
        }
        Err(e) => {
            result.skipped = Some(format!("cannot read the file: {e}"));
            return result;
        }
    };
    let size = match file.metadata() {
        Ok(meta) if meta.is_file() => {
            if job.need_blob {
                result.blob = listed.clean_id(job.file, &FileStat::of(&meta));
            }
            meta.len()
        }
        Ok(_) => {
            result.skipped = Some("not a regular file".to_string());
            return result;
        }
        Err(e) => {
            result.skipped = Some(format!("cannot read the file: {e}"));
            return result;
        }
    };
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    if let Err(e) = file.read_to_end(&mut bytes) {
        result.skipped = Some(format!("cannot read the file: {e}"));
        return result;
    }
    if job.need_blob && result.blob.is_none() {
        result.blob = crate::git::blob_id(&bytes);
    }
    if memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_some() {
        if !job.rules.is_empty() {
            result.skipped =
                Some("a binary file: not searched for surfaces or handles".to_string());
        }
        return result;
    }
    for &(m, r) in &job.rules {
        let regex = &maps[m].rules[r].regex;
        let mut found = Vec::new();
        let (mut counted_to, mut line) = (0usize, 1usize);
        for captures in regex.captures_iter(&bytes) {
            let Some(group) = captures.get(1) else {
                continue;
            };
            line += memchr::memchr_iter(b'\n', &bytes[counted_to..group.start()]).count();
            counted_to = group.start();
            found.push(Found {
                name: String::from_utf8_lossy(group.as_bytes()).into_owned(),
                file: path.to_string(),
                line,
            });
        }
        if !found.is_empty() {
            result.surfaces.push(((m, r), found));
        }
    }
    if job
        .features
        .iter()
        .any(|&(m, f)| !handles.ids[m][f].is_empty())
    {
        let found = handles.found_in(&bytes);
        for &(m, f) in &job.features {
            for (h, &needle) in handles.ids[m][f].iter().enumerate() {
                if found[needle] {
                    result.handles.push((m, f, h));
                }
            }
        }
    }
    result
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
