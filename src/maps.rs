//! Feature maps (SPEC §2): finding them by git's rules, and reading each map and its feature files into
//! plain data. Everything a map says that breaks the contract becomes a [`ContractError`] naming file,
//! line and field; a map with any contract error is not judged for drift.

pub(crate) mod blocks;
pub(crate) mod glob;
pub(crate) mod markdown;

use std::path::Path;

use serde::Serialize;

use blocks::{ArtifactKind, CheckBlock, CheckKind, FeatureBlock, MapBlock};
use markdown::Block;

/// The four H2s of a feature file, in order.
pub const FEATURE_SECTIONS: [&str; 4] = [
    "Sub-features",
    "How to reach it",
    "Behaviour checks",
    "Gotchas",
];

/// Step fields whose string value (in a step's action object) is a handle.
pub const HANDLE_FIELDS: [&str; 4] = ["name", "label", "within", "test"];

/// A map or feature file that breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ContractError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Something worth saying that is neither drift nor a contract error.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// One product's map: the README's map block and index, and its feature files.
#[derive(Debug)]
pub struct Map {
    /// `…/.agents/skills/verify-<product>/features/README.md`, relative to the repository root.
    pub file: String,
    /// The `features/` folder.
    pub dir: String,
    pub product: String,
    pub control: Vec<String>,
    pub block_line: usize,
    /// The line of the map block's `control` (the block's line when it cannot be told).
    pub control_line: usize,
    pub rules: Vec<Rule>,
    pub index: Vec<IndexLink>,
    pub features: Vec<Feature>,
    /// Whether any contract error was found in the map or its features.
    pub broken: bool,
}

#[derive(Debug)]
pub struct Rule {
    pub kind: String,
    pub files: Vec<String>,
    pub regex: regex::bytes::Regex,
    /// The line of the rule's pattern in the README.
    pub line: usize,
}

#[derive(Debug)]
pub struct IndexLink {
    /// The linked file name, as it sits in `features/`.
    pub name: String,
    pub line: usize,
}

/// A value and the line it was written on.
#[derive(Debug, Clone)]
pub struct Located<T> {
    pub value: T,
    pub line: usize,
}

#[derive(Debug)]
pub struct Feature {
    pub file: String,
    /// The file's name in `features/`.
    pub name: String,
    pub id: Located<String>,
    #[expect(
        dead_code,
        reason = "the feature block declares it (SPEC §2); the pack's footprint comes from LAYERS.md, and nothing reads a feature's own layers yet"
    )]
    pub layers: Vec<String>,
    pub sources: Vec<Located<String>>,
    /// Claimed surfaces: kind, name, line.
    pub surfaces: Vec<(String, Located<String>)>,
    pub verified_at: Located<String>,
    pub checks: Vec<Check>,
}

#[derive(Debug)]
pub struct Check {
    pub id: Located<String>,
    pub kind: CheckKind,
    #[expect(
        dead_code,
        reason = "the check block declares it (SPEC §2); a criterion's evidence kind comes from the Completion Goal, and nothing compares the two yet"
    )]
    pub evidence: ArtifactKind,
    pub handles: Vec<Handle>,
    /// The check block as written: what the control tool receives as `spec`.
    pub spec: serde_json::Value,
    /// The steps, read, when the map's control is the built-in step runner (empty otherwise, and when a
    /// step breaks the contract).
    pub steps: Vec<crate::steps::Step>,
}

/// A handle of a step: `{"click": {"name": "Ask"}}` gives action `click`, field `name`, value `Ask`.
#[derive(Debug, Clone)]
pub struct Handle {
    pub action: String,
    pub field: &'static str,
    pub value: String,
    pub line: usize,
}

impl Handle {
    /// A `test` handle matches as a whole word; the others quoted or as element text.
    pub fn whole_word(&self) -> bool {
        self.field == "test"
    }
}

impl Map {
    /// Whether the map's control tool is the built-in step runner, `["aayu", "control"]` exactly: then
    /// its checks' steps are typed ([`Check::steps`]) and aayu's own code runs them; any other control
    /// tool gets its steps as written.
    pub fn uses_step_runner(&self) -> bool {
        uses_step_runner(&self.control)
    }
}

/// [`Map::uses_step_runner`], for a control argv.
pub fn uses_step_runner(control: &[String]) -> bool {
    matches!(control, [program, op] if program == "aayu" && op == "control")
}

/// Every map of a repository's working tree, with the files git sees there.
pub struct Loaded {
    pub listed: crate::git::WorktreeFiles,
    pub maps: Vec<Map>,
    pub errors: Vec<ContractError>,
    pub warnings: Vec<Warning>,
}

/// Lists the working tree by git's rules and reads every map in it.
pub fn load_repo(repo: &crate::git::Repo) -> Result<Loaded, crate::git::GitError> {
    load_repo_timed(repo, &mut crate::timing::Phases::start())
}

/// [`load_repo`], timing the listing and the reading of the maps as two phases.
pub(crate) fn load_repo_timed(
    repo: &crate::git::Repo,
    phases: &mut crate::timing::Phases,
) -> Result<Loaded, crate::git::GitError> {
    let listed = repo.worktree_files()?;
    phases.end("list the working tree (walk and index)");
    let mut errors = Vec::new();
    let mut warnings: Vec<Warning> = listed
        .not_utf8
        .iter()
        .map(|path| Warning {
            file: path.clone(),
            line: 1,
            message: "the path is not UTF-8: no map can name it, so it is not read".to_string(),
        })
        .collect();
    let maps = load_all(repo.root(), &listed.files, &mut errors, &mut warnings);
    phases.end("read the maps");
    errors.sort();
    Ok(Loaded {
        listed,
        maps,
        errors,
        warnings,
    })
}

/// Every map of the commit `rev`, read from git's objects (the working tree is not looked at): the
/// weakening floor compares the maps at a change's base and head.
pub fn load_at(repo: &crate::git::Repo, rev: &str) -> Result<Vec<Map>, crate::git::GitError> {
    let files = repo.files_at(rev, MAP_FILE_CAP, |path| {
        is_map_path(path)
            || path
                .rsplit_once('/')
                .is_some_and(|(dir, _)| is_map_path(&format!("{dir}/README.md")))
    })?;
    // The parser reads files under a root: the maps and their feature files are written to a temporary
    // one (they are small), never into the checkout.
    let dir = tempfile::tempdir().map_err(|source| crate::git::GitError::Io {
        what: "create a folder for the maps of a commit".into(),
        source,
    })?;
    let mut paths = Vec::with_capacity(files.len());
    for (path, bytes) in &files {
        let target = dir.path().join(path);
        let written = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, bytes));
        written.map_err(|source| crate::git::GitError::Io {
            what: format!("write `{path}` of {rev} to a temporary folder"),
            source,
        })?;
        paths.push(path.clone());
    }
    // Contract errors are the feature-map floor's to report (at the head, from the checkout).
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    Ok(load_all(dir.path(), &paths, &mut errors, &mut warnings))
}

/// Whether a repository path is a map: `<any>/.agents/skills/verify-<product>/features/README.md`.
pub fn is_map_path(path: &str) -> bool {
    let Some(rest) = path.strip_suffix("/features/README.md") else {
        return false;
    };
    let (parent, skill) = match rest.rsplit_once('/') {
        Some((parent, skill)) => (parent, skill),
        None => return false,
    };
    let skills_dir = parent == ".agents/skills" || parent.ends_with("/.agents/skills");
    skills_dir && skill.len() > "verify-".len() && skill.starts_with("verify-")
}

/// Reads every map among `files` (sorted repository paths). Contract errors go to `errors`.
pub fn load_all(
    root: &Path,
    files: &[String],
    errors: &mut Vec<ContractError>,
    warnings: &mut Vec<Warning>,
) -> Vec<Map> {
    use rayon::prelude::*;
    let paths: Vec<&String> = files.iter().filter(|f| is_map_path(f)).collect();
    let loaded: Vec<(Map, Vec<ContractError>, Vec<Warning>)> = paths
        .par_iter()
        .map(|file| {
            let (mut errors, mut warnings) = (Vec::new(), Vec::new());
            let map = load_map(root, files, file, &mut errors, &mut warnings);
            (map, errors, warnings)
        })
        .collect();
    let mut maps = Vec::with_capacity(loaded.len());
    for (map, map_errors, map_warnings) in loaded {
        maps.push(map);
        errors.extend(map_errors);
        warnings.extend(map_warnings);
    }
    // Products are how results are keyed: two maps may not share one.
    let mut seen: Vec<(String, String)> = Vec::new();
    for map in &mut maps {
        if map.product.is_empty() {
            continue;
        }
        if let Some((_, first)) = seen.iter().find(|(p, _)| *p == map.product) {
            errors.push(ContractError {
                file: map.file.clone(),
                line: map.block_line,
                message: format!(
                    "map block: `product`: `{}` is also the product of {first}; each product has one map",
                    map.product
                ),
            });
            map.broken = true;
        } else {
            seen.push((map.product.clone(), map.file.clone()));
        }
    }
    maps
}

/// How large a map or feature file may be.
const MAP_FILE_CAP: u64 = 4 << 20;

/// Why a map or feature file could not be read; said as a contract error on its line 1.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(
        "the file is a symbolic link (or lies behind one), which aayu does not follow: commit the file itself"
    )]
    Link,
    #[error("the file is {what}, not a regular file")]
    NotRegular { what: &'static str },
    #[error("the file is larger than {cap} bytes")]
    TooLarge { cap: u64 },
    #[error("cannot read the file: {0}")]
    Unreadable(crate::safe_fs::Refused),
    #[error("the file is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
}

/// A map or feature file, read without following a link (a pull request may commit one to `/dev/zero` or
/// `/proc/1/environ`), non-blocking, capped.
fn read_text(root: &Path, file: &str) -> Result<String, ReadError> {
    let bytes = crate::safe_fs::read(root, file, MAP_FILE_CAP).map_err(|e| match e {
        crate::safe_fs::Refused::Link { .. } => ReadError::Link,
        crate::safe_fs::Refused::NotRegular { what, .. } => ReadError::NotRegular { what },
        crate::safe_fs::Refused::TooLarge { cap, .. } => ReadError::TooLarge { cap },
        other => ReadError::Unreadable(other),
    })?;
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

fn load_map(
    root: &Path,
    files: &[String],
    file: &str,
    errors: &mut Vec<ContractError>,
    warnings: &mut Vec<Warning>,
) -> Map {
    let dir = file.trim_end_matches("/README.md").to_string();
    let before = errors.len();
    let mut map = Map {
        file: file.to_string(),
        dir: dir.clone(),
        product: String::new(),
        control: Vec::new(),
        block_line: 1,
        control_line: 1,
        rules: Vec::new(),
        index: Vec::new(),
        features: Vec::new(),
        broken: false,
    };
    let mut error = |line: usize, message: String| {
        errors.push(ContractError {
            file: file.to_string(),
            line,
            message,
        })
    };
    match read_text(root, file) {
        Err(why) => error(1, why.to_string()),
        Ok(text) => {
            let doc = markdown::parse(&text);
            let json_blocks: Vec<(&str, usize)> = doc
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Code { lang, text, line } if lang == "json" => {
                        Some((text.as_str(), *line))
                    }
                    _ => None,
                })
                .collect();
            match json_blocks.as_slice() {
                [] => error(1, "no map block: the README needs one fenced ```json block with `product`, `control` and `surfaces`".to_string()),
                [(block, line)] => {
                    map.block_line = *line;
                    read_map_block(&mut map, block, *line, &mut error);
                }
                [(_, first), (_, second), ..] => error(
                    *second,
                    format!("a second map block (the first is on line {first}); a map has exactly one fenced ```json block"),
                ),
            }
            map.index = doc
                .links
                .iter()
                .filter_map(|link| {
                    index_target(&link.dest).map(|name| IndexLink {
                        name,
                        line: link.line,
                    })
                })
                .collect();
        }
    }
    // Every Markdown file directly in features/ other than the README is a feature file.
    let prefix = format!("{dir}/");
    let start = files.partition_point(|f| f.as_str() < prefix.as_str());
    for path in files[start..].iter().take_while(|f| f.starts_with(&prefix)) {
        let name = &path[prefix.len()..];
        if name.contains('/') || !name.ends_with(".md") || name == "README.md" {
            continue;
        }
        let builtin = map.uses_step_runner();
        if let Some(feature) = load_feature(root, path, name, builtin, errors, warnings) {
            map.features.push(feature);
        }
    }
    // Every handle of every map is a literal of one Aho-Corasick automaton searched in every source file:
    // their number and length are bounded per map.
    let handles: Vec<&Handle> = map
        .features
        .iter()
        .flat_map(|f| f.checks.iter().flat_map(|c| c.handles.iter()))
        .collect();
    let long = map.features.iter().flat_map(|f| {
        f.checks
            .iter()
            .flat_map(|c| c.handles.iter())
            .filter(|h| h.value.len() > MAX_HANDLE_LEN)
            .map(move |h| (f.file.as_str(), h))
    });
    for (feature_file, handle) in long {
        errors.push(ContractError {
            file: feature_file.to_string(),
            line: handle.line,
            message: format!(
                "a `{}` handle of `{}` is {} bytes long: a handle names an element in at most {MAX_HANDLE_LEN} bytes",
                handle.field,
                handle.action,
                handle.value.len()
            ),
        });
    }
    let total: usize = handles.iter().map(|h| h.value.len()).sum();
    if handles.len() > MAX_HANDLES || total > MAX_HANDLE_BYTES {
        errors.push(ContractError {
            file: file.to_string(),
            line: 1,
            message: format!(
                "the map's checks name {} handles of {} bytes in all: at most {MAX_HANDLES} handles and {} KiB per map (split the product's map, or name fewer elements)",
                handles.len(),
                total,
                MAX_HANDLE_BYTES >> 10
            ),
        });
    }
    map.broken = errors.len() > before;
    map
}

/// How many handles (the `name`, `label`, `within` and `test` strings of the checks' steps) one map may
/// name, and how long they may be together.
pub const MAX_HANDLES: usize = 4096;
/// How long one handle may be: element names, labels and test ids are short, and the automaton's build
/// time grows with the longest literal.
pub const MAX_HANDLE_LEN: usize = 512;
pub const MAX_HANDLE_BYTES: usize = 256 << 10;

/// The feature file an index link names, or `None` for a link that is not one (a URL, another folder).
fn index_target(dest: &str) -> Option<String> {
    let dest = dest.split(['#', '?']).next().unwrap_or("");
    let dest = dest.strip_prefix("./").unwrap_or(dest);
    if dest.is_empty() || dest.contains(':') || dest.contains('/') || dest.contains('\\') {
        return None;
    }
    if !dest.ends_with(".md") || dest == "README.md" {
        return None;
    }
    Some(dest.to_string())
}

fn read_map_block(map: &mut Map, block: &str, fence: usize, error: &mut impl FnMut(usize, String)) {
    let parsed: MapBlock = match blocks::parse(block, "map block") {
        Ok(parsed) => parsed,
        Err(e) => return error(fence + e.line, e.message),
    };
    let mut cursor = Cursor::new(block, fence);
    if !is_id(&parsed.product) {
        error(
            cursor.line_of_string(&parsed.product),
            format!(
                "map block: `product`: `{}` is not a product name (letters, digits, `-` and `_`)",
                parsed.product
            ),
        );
    }
    map.product = parsed.product;
    map.control = parsed.control;
    map.control_line = block
        .lines()
        .position(|l| l.contains("\"control\""))
        .map_or(fence, |i| fence + 1 + i);
    // `aayu` as the program is this very binary: only the built-in step runner's argv may name it, so that
    // one predicate says which maps aayu's own code runs.
    if map.control.first().is_some_and(|p| p == "aayu") && !map.uses_step_runner() {
        error(
            map.control_line,
            format!(
                "map block: `control`: `{}` is not the built-in step runner, which is exactly [\"aayu\", \"control\"]: write that, or name a control tool of your own",
                map.control.join(" ")
            ),
        );
    }
    for (i, rule) in parsed.surfaces.into_iter().enumerate() {
        let kind_line = cursor.line_of_string(&rule.kind);
        if rule.kind.trim().is_empty() {
            error(
                kind_line,
                format!("map block: `surfaces[{i}].kind` is empty"),
            );
        }
        if rule.files.is_empty() {
            error(
                kind_line,
                format!("map block: `surfaces[{i}].files` is empty: name the files to look in"),
            );
        }
        if !rule.files.is_empty() && rule.files.iter().all(|g| g.starts_with('!')) {
            error(
                kind_line,
                format!(
                    "map block: `surfaces[{i}].files` has only `!` entries, which exclude: name the files to look in first"
                ),
            );
        }
        for (j, entry) in rule.files.iter().enumerate() {
            let line = cursor.line_of_string(entry);
            // `!glob` excludes what `glob` matches from what the entries before it include.
            let glob = entry.strip_prefix('!').unwrap_or(entry);
            if glob.is_empty() {
                error(
                    line,
                    format!(
                        "map block: `surfaces[{i}].files[{j}]`: `!` excludes nothing: write the glob after it (`!**/*_test.go`)"
                    ),
                );
            } else if let Err(e) = glob::compile(glob) {
                error(
                    line,
                    format!(
                        "map block: `surfaces[{i}].files[{j}]`: `{glob}` is not a valid glob: {e}"
                    ),
                );
            } else if glob.starts_with('/') || glob.split('/').any(|c| c == "..") {
                error(
                    line,
                    format!(
                        "map block: `surfaces[{i}].files[{j}]`: `{glob}` must be relative to the repository root, without `..`"
                    ),
                );
            }
        }
        let line = cursor.line_of_string(&rule.pattern);
        match surface_regex(&rule.pattern) {
            Err(regex::Error::CompiledTooBig(limit)) => error(
                line,
                format!(
                    "map block: `surfaces[{i}].pattern` compiles to more than {} KiB, the limit of one surface rule (a counted repetition of a class, such as `\\w{{200}}`, is the usual cause): simplify it",
                    limit >> 10
                ),
            ),
            Err(e) => error(
                line,
                format!(
                    "map block: `surfaces[{i}].pattern` is not a valid regular expression: {}",
                    one_line(&e.to_string())
                ),
            ),
            Ok(regex) => {
                let groups = regex.captures_len() - 1;
                if groups != 1 {
                    error(
                        line,
                        format!(
                            "map block: `surfaces[{i}].pattern` has {groups} capture groups; it needs exactly one, the surface (use `(?:…)` for other groups)"
                        ),
                    );
                } else {
                    map.rules.push(Rule {
                        kind: rule.kind,
                        files: rule.files,
                        regex,
                        line,
                    });
                }
            }
        }
    }
}

/// How large one surface rule's compiled program may be. Ordinary rules compile to under 64 KiB (a Unicode
/// `(\w+)` to 49 KiB); the slow shapes of a pull request that wants to keep the gate busy (`\w*a\w{20}(\s)`
/// and up) to 1 MiB and more. See `docs/security.md#bounds`.
pub const RULE_SIZE_LIMIT: usize = 512 << 10;

/// How much memory one surface rule's lazy DFA cache may take (per scan thread), counted in the scan's
/// memory bound: past it the regex crate clears its cache and goes on more slowly, which the scan's time
/// budget bounds.
pub const RULE_DFA_LIMIT: usize = 2 << 20;

/// A surface rule's pattern compiled with the bounds above.
pub fn surface_regex(pattern: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(RULE_SIZE_LIMIT)
        .dfa_size_limit(RULE_DFA_LIMIT)
        .build()
}

fn load_feature(
    root: &Path,
    file: &str,
    name: &str,
    builtin: bool,
    errors: &mut Vec<ContractError>,
    warnings: &mut Vec<Warning>,
) -> Option<Feature> {
    let mut error = |line: usize, message: String| {
        errors.push(ContractError {
            file: file.to_string(),
            line,
            message,
        })
    };
    let text = match read_text(root, file) {
        Ok(text) => text,
        Err(why) => {
            error(1, why.to_string());
            return None;
        }
    };
    let doc = markdown::parse(&text);
    let outline = Outline::of(&doc, &mut error);
    if outline.h1.is_none() {
        error(
            1,
            "no H1: a feature file starts with `# <title>`".to_string(),
        );
    }
    check_sections(&outline.h2s, &mut error);
    let (block, fence) = outline.feature_block(&mut error)?;
    let head = read_feature_block(block, fence, &mut error)?;
    let checks: Vec<Check> = outline
        .check_blocks
        .iter()
        .filter_map(|&(block, fence)| {
            read_check(root, block, fence, &head.id.value, builtin, &mut error)
        })
        .collect();
    if checks.is_empty() && !outline.h2s.is_empty() {
        warnings.push(Warning {
            file: file.to_string(),
            line: outline
                .h2s
                .iter()
                .find(|(t, _)| t == FEATURE_SECTIONS[2])
                .map_or(1, |(_, l)| *l),
            message: "the feature has no behaviour checks".to_string(),
        });
    }
    Some(Feature {
        file: file.to_string(),
        name: name.to_string(),
        id: head.id,
        layers: head.layers,
        sources: head.sources,
        surfaces: head.surfaces,
        verified_at: head.verified_at,
        checks,
    })
}

/// A feature file's shape: its H1, its H2s, the JSON blocks before the first H2 (the feature block) and
/// those under `## Behaviour checks` (the check blocks).
struct Outline<'a> {
    h1: Option<usize>,
    h2s: Vec<(String, usize)>,
    feature_blocks: Vec<(&'a str, usize)>,
    check_blocks: Vec<(&'a str, usize)>,
}

impl<'a> Outline<'a> {
    /// The outline of a parsed feature file; a second H1, or an H1 that is not first, is an error.
    fn of(doc: &'a markdown::Doc, error: &mut impl FnMut(usize, String)) -> Outline<'a> {
        let mut outline = Outline {
            h1: None,
            h2s: Vec::new(),
            feature_blocks: Vec::new(),
            check_blocks: Vec::new(),
        };
        for block in &doc.blocks {
            match block {
                Block::Heading { level: 1, line, .. } => {
                    if let Some(first) = outline.h1 {
                        error(
                            *line,
                            format!(
                                "a second H1 (the first is on line {first}); a feature file has one"
                            ),
                        );
                    } else if let Some(first) = doc.blocks.first()
                        && !matches!(first, Block::Heading { level: 1, .. })
                    {
                        error(
                            *line,
                            "the H1 must come first in a feature file".to_string(),
                        );
                    }
                    outline.h1.get_or_insert(*line);
                }
                Block::Heading {
                    level: 2,
                    text,
                    line,
                } => outline.h2s.push((text.clone(), *line)),
                Block::Code { lang, text, line } if lang == "json" => {
                    if outline.h2s.is_empty() {
                        outline.feature_blocks.push((text, *line));
                    } else if outline
                        .h2s
                        .last()
                        .is_some_and(|(t, _)| t == FEATURE_SECTIONS[2])
                    {
                        outline.check_blocks.push((text, *line));
                    }
                }
                _ => {}
            }
        }
        outline
    }

    /// The one feature block and its fence line; none, or a second, is an error.
    fn feature_block(&self, error: &mut impl FnMut(usize, String)) -> Option<(&'a str, usize)> {
        match self.feature_blocks.as_slice() {
            [] => {
                error(self.h1.unwrap_or(1), "no feature block: a fenced ```json block with `id`, `layers`, `sources`, `surfaces` and `verified_at` must come before the first H2".to_string());
                None
            }
            [(block, fence)] => Some((*block, *fence)),
            [(_, first), (_, second), ..] => {
                error(
                    *second,
                    format!(
                        "a second feature block (the first is on line {first}); put check blocks under `## Behaviour checks`"
                    ),
                );
                None
            }
        }
    }
}

/// What a feature block declares, each value with its line.
struct FeatureHead {
    id: Located<String>,
    layers: Vec<String>,
    sources: Vec<Located<String>>,
    surfaces: Vec<(String, Located<String>)>,
    verified_at: Located<String>,
}

/// Reads the feature block at `fence`: every field that breaks the contract is an error at its line; a
/// block that does not parse gives no feature.
fn read_feature_block(
    block: &str,
    fence: usize,
    error: &mut impl FnMut(usize, String),
) -> Option<FeatureHead> {
    let parsed: FeatureBlock = match blocks::parse(block, "feature block") {
        Ok(parsed) => parsed,
        Err(e) => {
            error(fence + e.line, e.message);
            return None;
        }
    };
    let mut cursor = Cursor::new(block, fence);
    let id = Located {
        line: cursor.line_of_key_value("id", &parsed.id),
        value: parsed.id,
    };
    if !is_id(&id.value) {
        error(
            id.line,
            format!(
                "feature block: `id`: `{}` is not a feature id (letters, digits, `-` and `_`)",
                id.value
            ),
        );
    }
    for (i, layer) in parsed.layers.iter().enumerate() {
        if !is_layer(layer) {
            error(
                cursor.line_of_string(layer),
                format!("feature block: `layers[{i}]`: `{layer}` is not a layer (L01 to L09)"),
            );
        }
    }
    let sources = feature_sources(&parsed.sources, &mut cursor, error);
    let mut surfaces = Vec::new();
    for (kind, names) in &parsed.surfaces {
        for name in names {
            surfaces.push((
                kind.clone(),
                Located {
                    line: cursor.line_of_string(name),
                    value: name.clone(),
                },
            ));
        }
    }
    let verified_at = Located {
        line: cursor.line_of_key_value("verified_at", &parsed.verified_at),
        value: parsed.verified_at.trim().to_string(),
    };
    let v = &verified_at.value;
    let is_sha = (7..=40).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_hexdigit());
    if !v.is_empty() && !is_sha {
        error(
            verified_at.line,
            format!(
                "feature block: `verified_at`: `{v}` is not a commit SHA (7 to 40 hex digits), nor empty for never verified"
            ),
        );
    }
    Some(FeatureHead {
        id,
        layers: parsed.layers,
        sources,
        surfaces,
        verified_at,
    })
}

/// A feature block's `sources`, each a plain path relative to the repository root (a trailing `/` taken
/// off); any other is an error at its line, and left out.
fn feature_sources(
    sources: &[String],
    cursor: &mut Cursor,
    error: &mut impl FnMut(usize, String),
) -> Vec<Located<String>> {
    let mut plain = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        let line = cursor.line_of_string(source);
        let clean = source.trim_end_matches('/');
        if clean.is_empty()
            || clean.starts_with('/')
            || clean.contains('\\')
            || clean
                .split('/')
                .any(|c| c == ".." || c == "." || c.is_empty())
        {
            error(
                line,
                format!(
                    "feature block: `sources[{i}]`: `{source}` must be a plain path relative to the repository root"
                ),
            );
        } else {
            plain.push(Located {
                value: clean.to_string(),
                line,
            });
        }
    }
    plain
}

/// Reads the check block at `fence` of feature `feature_id`; one that does not parse is an error and no
/// check.
fn read_check(
    root: &Path,
    block: &str,
    fence: usize,
    feature_id: &str,
    builtin: bool,
    error: &mut impl FnMut(usize, String),
) -> Option<Check> {
    let parsed = match blocks::parse::<CheckBlock>(block, "check block") {
        Ok(parsed) => parsed,
        Err(e) => {
            error(fence + e.line, e.message);
            return None;
        }
    };
    let mut cursor = Cursor::new(block, fence);
    let id = Located {
        line: cursor.line_of_key_value("id", &parsed.id),
        value: parsed.id,
    };
    if !is_id(&id.value) {
        error(
            id.line,
            format!(
                "check block: `id`: `{}` is not a check id (letters, digits, `-` and `_`)",
                id.value
            ),
        );
    }
    let mut handles = handles_of(&parsed.steps, &mut cursor);
    let spec: serde_json::Value = serde_json::from_str(block).unwrap_or(serde_json::Value::Null);
    // The built-in runner's steps mean what it says: a step it cannot read is a contract
    // error at the step's line, found before anything runs.
    let steps = if builtin {
        let name = format!("{feature_id}.{}", id.value);
        let lines = step_lines(block, fence);
        builtin_steps(root, &spec, &lines, id.line, &name, &mut handles, error)
    } else {
        Vec::new()
    };
    Some(Check {
        id,
        kind: parsed.kind,
        evidence: parsed.evidence,
        handles,
        spec,
        steps,
    })
}

/// The typed steps of check `name` for the built-in step runner (`lines`: each step's line; `id_line`
/// the check id's, for a step without one). A step it cannot read is an error; a test step's test is
/// read by its package's runner now, as an evidence map's is in the gate, and its handle becomes the
/// name its runner finds it by in the source.
fn builtin_steps(
    root: &Path,
    spec: &serde_json::Value,
    lines: &[usize],
    id_line: usize,
    name: &str,
    handles: &mut [Handle],
    error: &mut impl FnMut(usize, String),
) -> Vec<crate::steps::Step> {
    let steps = match crate::steps::parse(spec) {
        Ok(read) => read,
        Err((at, why)) => {
            error(
                lines.get(at).copied().unwrap_or(id_line),
                format!(
                    "check `{name}`: {why} (this map's control tool is the built-in step runner, `aayu control`)"
                ),
            );
            Vec::new()
        }
    };
    for (i, step) in steps.iter().enumerate() {
        let crate::steps::Step::Test { test, .. } = step else {
            continue;
        };
        let id_of = crate::runners::TestId {
            package: test.package.clone(),
            rest: test.test.clone(),
        };
        let Some(found) = crate::runners::package_of(root, &id_of) else {
            continue;
        };
        let package = found.package();
        if let Err(why) = found.runner.check_id(root, &package, &test.test) {
            error(
                lines.get(i).copied().unwrap_or(id_line),
                format!(
                    "check `{name}`: step {} (test): `{}`: {why} (this map's control tool is the built-in step runner, `aayu control`)",
                    i + 1,
                    test.test
                ),
            );
            continue;
        }
        let found_by = found.runner.found_by(&test.test).to_string();
        for handle in handles
            .iter_mut()
            .filter(|h| h.action == "test" && h.field == "test" && h.value == test.test)
        {
            handle.value.clone_from(&found_by);
        }
    }
    steps
}

/// The four H2s, exactly, in order.
fn check_sections(h2s: &[(String, usize)], error: &mut impl FnMut(usize, String)) {
    let expected = FEATURE_SECTIONS.map(|s| format!("`{s}`")).join(", ");
    for (i, (text, line)) in h2s.iter().enumerate() {
        match FEATURE_SECTIONS.get(i) {
            Some(want) if text == want => {}
            Some(want) => {
                let hint = if FEATURE_SECTIONS.contains(&text.as_str()) {
                    " (out of order)".to_string()
                } else {
                    String::new()
                };
                error(
                    *line,
                    format!(
                        "H2 {} is `{text}`{hint}, expected `{want}`: the H2s of a feature file are exactly {expected}, in this order",
                        i + 1
                    ),
                );
                return;
            }
            None => {
                error(
                    *line,
                    format!(
                        "an extra H2 `{text}`: the H2s of a feature file are exactly {expected}; use H3 inside a section"
                    ),
                );
                return;
            }
        }
    }
    if h2s.len() < FEATURE_SECTIONS.len() {
        let missing: Vec<String> = FEATURE_SECTIONS[h2s.len()..]
            .iter()
            .map(|s| format!("`{s}`"))
            .collect();
        let line = h2s.last().map_or(1, |(_, l)| *l);
        error(
            line,
            format!(
                "missing H2 {}: the H2s of a feature file are exactly {expected}, in this order",
                missing.join(", ")
            ),
        );
    }
}

/// The handles of a check's steps: `name`, `label`, `within` and `test` strings of each action object.
/// Anything deeper (a request body's `"name"`) is data.
fn handles_of(
    steps: &[serde_json::Map<String, serde_json::Value>],
    cursor: &mut Cursor,
) -> Vec<Handle> {
    let mut handles = Vec::new();
    for step in steps {
        for (action, value) in step {
            let serde_json::Value::Object(object) = value else {
                continue;
            };
            for field in HANDLE_FIELDS {
                if let Some(serde_json::Value::String(text)) = object.get(field) {
                    handles.push(Handle {
                        action: action.clone(),
                        field,
                        value: text.clone(),
                        line: cursor.line_of_key_value(field, text),
                    });
                }
            }
        }
    }
    handles
}

/// The line of each element of a check block's `steps` list, in order (the block's lines are counted from
/// `fence`): the line where the element starts.
fn step_lines(block: &str, fence: usize) -> Vec<usize> {
    let bytes = block.as_bytes();
    let line = |at: usize| fence + 1 + memchr::memchr_iter(b'\n', &bytes[..at]).count();
    // Walk the block's JSON: strings, nesting, and the key `"steps"` of the top-level object.
    let (mut depth, mut i) = (0usize, 0usize);
    let mut list: Option<usize> = None;
    let mut lines = Vec::new();
    let mut want = false;
    let mut after_steps_key = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let in_list = list.is_some_and(|d| depth == d);
        if in_list && want && b != b']' {
            lines.push(line(i));
            want = false;
        }
        match b {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(bytes.len());
                let text = std::str::from_utf8(&bytes[start.min(end)..end]).unwrap_or("");
                // A key of the top-level object is followed by `:`.
                let next = bytes
                    .get(i + 1..)
                    .unwrap_or(&[])
                    .iter()
                    .find(|c| !c.is_ascii_whitespace());
                after_steps_key =
                    depth == 1 && list.is_none() && text == "steps" && next == Some(&b':');
            }
            b'[' => {
                depth += 1;
                if after_steps_key && list.is_none() {
                    list = Some(depth);
                    want = true;
                }
                after_steps_key = false;
            }
            b'{' => {
                depth += 1;
                after_steps_key = false;
            }
            b']' if list == Some(depth) => return lines,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if in_list => want = true,
            b':' => {}
            _ => after_steps_key = false,
        }
        i += 1;
    }
    lines
}

fn is_id(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn is_layer(text: &str) -> bool {
    matches!(text.as_bytes(), [b'L', b'0', b'1'..=b'9'])
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Finds the line of a value inside a JSON block, walking forward so that repeated values in a list are
/// placed on successive occurrences. serde_json keeps no positions, so the block's text is searched for
/// the value's JSON encoding.
struct Cursor<'a> {
    text: &'a str,
    fence: usize,
    pos: usize,
    /// An offset whose line is known, and the number of line breaks before it: lines are counted on from
    /// there (a block names hundreds of values, mostly in order).
    counted: (usize, usize),
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, fence: usize) -> Cursor<'a> {
        Cursor {
            text,
            fence,
            pos: 0,
            counted: (0, 0),
        }
    }

    fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        let (from, breaks) = if offset >= self.counted.0 {
            self.counted
        } else {
            (0, 0)
        };
        let breaks =
            breaks + memchr::memchr_iter(b'\n', &self.text.as_bytes()[from..offset]).count();
        self.counted = (offset, breaks);
        self.fence + breaks + 1
    }

    fn find(&mut self, needle: &str) -> usize {
        let found = self.text[self.pos..]
            .find(needle)
            .map(|i| self.pos + i)
            .or_else(|| self.text.find(needle));
        match found {
            Some(at) => {
                self.pos = at + needle.len();
                self.line_at(at)
            }
            None => self.line_at(0),
        }
    }

    fn line_of_string(&mut self, value: &str) -> usize {
        let encoded = serde_json::Value::String(value.to_string()).to_string();
        self.find(&encoded)
    }

    /// The line of `"key": "value"`: the value's own occurrence after the key.
    fn line_of_key_value(&mut self, key: &str, value: &str) -> usize {
        let key = format!("\"{key}\"");
        self.find(&key);
        self.line_of_string(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_paths_sit_in_a_verify_skill_at_any_depth() {
        assert!(is_map_path(
            ".agents/skills/verify-notes/features/README.md"
        ));
        assert!(is_map_path(
            "a/b/.agents/skills/verify-x/features/README.md"
        ));
        assert!(!is_map_path(".agents/skills/verify-/features/README.md"));
        assert!(!is_map_path(".agents/skills/notes/features/README.md"));
        assert!(!is_map_path("x.agents/skills/verify-n/features/README.md"));
        assert!(!is_map_path(
            ".agents/skills/verify-n/features/sub/README.md"
        ));
    }

    #[test]
    fn index_links_are_sibling_markdown_files() {
        assert_eq!(index_target("add.md"), Some("add.md".into()));
        assert_eq!(index_target("./add.md#checks"), Some("add.md".into()));
        assert_eq!(index_target("../SKILL.md"), None);
        assert_eq!(index_target("https://example.com/a.md"), None);
        assert_eq!(index_target("README.md"), None);
        assert_eq!(index_target("notes.txt"), None);
    }

    #[test]
    fn each_step_is_placed_on_the_line_it_starts() {
        let block = "{\"id\": \"x\", \"steps\": [\n  {\"build\": \"a\"},\n  {\"run\": [\"x\", \"]\"],\n   \"exit\": 1}, {\"cwd\": \"b\"}\n]}";
        assert_eq!(step_lines(block, 10), vec![12, 13, 14]);
        // Only the top-level key counts: not a value `"steps"`, nor a list before it.
        let decoy = "{\"id\": \"steps\",\n \"requires\": [\n  \"a\"\n ],\n \"x\": {\"steps\": [1]},\n \"steps\": [\n  {\"build\": 3}\n]}";
        assert_eq!(step_lines(decoy, 0), vec![7]);
        for cut in [
            "{\"steps\": [\"",
            "{\"steps",
            "{\"a\\",
            "[[[",
            "{\"steps\": [{\"é\\é",
        ] {
            step_lines(cut, 0);
        }
    }

    #[test]
    fn only_action_object_fields_are_handles() {
        let steps: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(
            r#"[{"click": {"name": "Ask", "nth": 2}},
                {"request": {"method": "POST", "body": {"name": "data"}}},
                {"fill": {"label": "Question", "within": "Form"}, "wait": 3},
                {"test": "not-an-action-object"},
                {"go": {"test": "TestAnswer"}}]"#,
        )
        .expect("json");
        let text = "";
        let mut cursor = Cursor::new(text, 0);
        let handles: Vec<(String, &str, String)> = handles_of(&steps, &mut cursor)
            .into_iter()
            .map(|h| (h.action, h.field, h.value))
            .collect();
        assert_eq!(
            handles,
            vec![
                ("click".into(), "name", "Ask".into()),
                ("fill".into(), "label", "Question".into()),
                ("fill".into(), "within", "Form".into()),
                ("go".into(), "test", "TestAnswer".into()),
            ]
        );
    }
}
