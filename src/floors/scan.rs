//! Reads the source files the maps point at, each file once however many rules and features name it, in
//! parallel across cores; finds surfaces, looks for handles and computes git blob ids for the stale check.

use std::collections::HashMap;
use std::path::Path;

use git2::Oid;
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use memchr::memmem::Finder;
use rayon::prelude::*;

use crate::maps::{Map, Warning};

/// How many leading bytes decide that a file is binary (a NUL among them), as git and ripgrep do.
const BINARY_PROBE: usize = 8000;

/// A glob of a surface rule, with git's meaning of `*` (not across `/`) and `**` (any depth).
pub fn compile_glob(glob: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

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
    pub blobs: HashMap<String, Oid>,
    pub warnings: Vec<Warning>,
}

/// A file and everything to do with it.
struct Job<'a> {
    path: &'a str,
    /// (map, rule) pairs whose globs match the file.
    rules: Vec<(usize, usize)>,
    /// (map, feature) pairs whose sources include the file.
    features: Vec<(usize, usize)>,
}

struct HandleMatcher {
    quoted: [Finder<'static>; 3],
    word: Finder<'static>,
    whole_word: bool,
}

impl HandleMatcher {
    fn new(value: &str, whole_word: bool) -> HandleMatcher {
        let finder = |text: String| Finder::new(text.as_bytes()).into_owned();
        HandleMatcher {
            quoted: [
                finder(format!("\"{value}\"")),
                finder(format!("'{value}'")),
                finder(format!(">{value}<")),
            ],
            word: finder(value.to_string()),
            whole_word,
        }
    }

    fn is_in(&self, bytes: &[u8]) -> bool {
        if !self.whole_word {
            return self.quoted.iter().any(|f| f.find(bytes).is_some());
        }
        let len = self.word.needle().len();
        if len == 0 {
            return false;
        }
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        self.word.find_iter(bytes).any(|at| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + len).copied();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        })
    }
}

/// The worktree files a feature's source path stands for: the file itself, or every file under a folder.
pub fn files_of_source<'a>(files: &'a [String], source: &str) -> &'a [String] {
    if let Ok(i) = files.binary_search_by(|f| f.as_str().cmp(source)) {
        return &files[i..=i];
    }
    let prefix = format!("{source}/");
    let start = files.partition_point(|f| f.as_str() < prefix.as_str());
    let len = files[start..]
        .iter()
        .take_while(|f| f.starts_with(&prefix))
        .count();
    &files[start..start + len]
}

/// Scans `files` (sorted repository paths) under `root` for every map that is not broken.
pub fn scan(root: &Path, files: &[String], maps: &[Map]) -> Scan {
    let mut warnings = Vec::new();

    // One glob set for every rule of every map; each glob remembers its (map, rule, glob) owner.
    let mut builder = GlobSetBuilder::new();
    let mut owners: Vec<(usize, usize, usize)> = Vec::new();
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (r, rule) in map.rules.iter().enumerate() {
            for (g, glob) in rule.files.iter().enumerate() {
                if let Ok(compiled) = compile_glob(glob) {
                    builder.add(compiled);
                    owners.push((m, r, g));
                }
            }
        }
    }
    let set = builder.build().unwrap_or_else(|_| GlobSet::empty());

    let mut jobs: HashMap<&str, Job> = HashMap::new();
    let mut glob_used = vec![false; owners.len()];
    let mut hits = Vec::new();
    for path in files {
        set.matches_into(path.as_str(), &mut hits);
        if hits.is_empty() {
            continue;
        }
        let job = jobs.entry(path.as_str()).or_insert_with(|| Job {
            path,
            rules: Vec::new(),
            features: Vec::new(),
        });
        for &h in &hits {
            glob_used[h] = true;
            let (m, r, _) = owners[h];
            if !job.rules.contains(&(m, r)) {
                job.rules.push((m, r));
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

    // Each feature's handles, and the files of its sources.
    let mut matchers: Vec<Vec<Vec<HandleMatcher>>> = Vec::new();
    for (m, map) in maps.iter().enumerate() {
        let mut per_feature = Vec::new();
        for (f, feature) in map.features.iter().enumerate() {
            let handles = feature
                .checks
                .iter()
                .flat_map(|c| c.handles.iter())
                .map(|h| HandleMatcher::new(&h.value, h.whole_word()))
                .collect();
            per_feature.push(handles);
            if map.broken {
                continue;
            }
            for source in &feature.sources {
                for path in files_of_source(files, &source.value) {
                    let job = jobs.entry(path.as_str()).or_insert_with(|| Job {
                        path,
                        rules: Vec::new(),
                        features: Vec::new(),
                    });
                    if !job.features.contains(&(m, f)) {
                        job.features.push((m, f));
                    }
                }
            }
        }
        matchers.push(per_feature);
    }

    let mut jobs: Vec<Job> = jobs.into_values().collect();
    jobs.sort_unstable_by(|a, b| a.path.cmp(b.path));
    let results: Vec<FileResult> = jobs
        .par_iter()
        .map(|job| scan_file(root, job, maps, &matchers))
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
                    .map(|f| vec![false; matchers[m][f].len()])
                    .collect()
            })
            .collect(),
        blobs: HashMap::new(),
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
            scan.blobs.insert(job.path.to_string(), blob);
        }
        if let Some(message) = result.skipped {
            scan.warnings.push(Warning {
                file: job.path.to_string(),
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

fn scan_file(
    root: &Path,
    job: &Job,
    maps: &[Map],
    matchers: &[Vec<Vec<HandleMatcher>>],
) -> FileResult {
    let mut result = FileResult::default();
    let full = root.join(job.path);
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) => {
            result.skipped = Some(format!("cannot read the file: {e}"));
            return result;
        }
    };
    if meta.file_type().is_symlink() {
        // git stores a link as its target's text; hash that for the stale check, but never follow a link
        // out of the checkout (or into a loop) to look for surfaces.
        if let Ok(target) = std::fs::read_link(&full) {
            result.blob = crate::git::blob_id(target.as_os_str().as_encoded_bytes());
        }
        if !job.rules.is_empty() {
            result.skipped =
                Some("a symbolic link: not followed when looking for surfaces".to_string());
        }
        return result;
    }
    if !meta.is_file() {
        result.skipped = Some("not a regular file".to_string());
        return result;
    }
    let bytes = match std::fs::read(&full) {
        Ok(bytes) => bytes,
        Err(e) => {
            result.skipped = Some(format!("cannot read the file: {e}"));
            return result;
        }
    };
    if !job.features.is_empty() {
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
                file: job.path.to_string(),
                line,
            });
        }
        if !found.is_empty() {
            result.surfaces.push(((m, r), found));
        }
    }
    for &(m, f) in &job.features {
        for (h, matcher) in matchers[m][f].iter().enumerate() {
            if matcher.is_in(&bytes) {
                result.handles.push((m, f, h));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_match_quoted_or_as_element_text() {
        let m = HandleMatcher::new("Ask", false);
        assert!(m.is_in(br#"button("Ask")"#));
        assert!(m.is_in(b"label = 'Ask'"));
        assert!(m.is_in(b"<button>Ask</button>"));
        assert!(!m.is_in(b"fn Ask() {}"));
        assert!(!m.is_in(br#""Asked""#));
    }

    #[test]
    fn test_handles_match_whole_words_only() {
        let m = HandleMatcher::new("done_marks", true);
        assert!(m.is_in(b"fn done_marks() {"));
        assert!(m.is_in(b"done_marks"));
        assert!(!m.is_in(b"fn done_marks_all() {"));
        assert!(!m.is_in(b"fn undone_marks() {"));
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
    fn globs_keep_star_inside_a_folder() {
        let glob = compile_glob("src/*.rs").expect("glob").compile_matcher();
        assert!(glob.is_match("src/main.rs"));
        assert!(!glob.is_match("src/cli/mod.rs"));
        let deep = compile_glob("src/**/*.rs").expect("glob").compile_matcher();
        assert!(deep.is_match("src/cli/mod.rs"));
        assert!(deep.is_match("src/main.rs"));
    }
}
