//! Which lines of a Rust file are test code, left out of the coverage floor's changed lines: whole files
//! under a package's `tests/`, `benches/` and `examples/` and its `build.rs`; `#[cfg(test)]` items (an
//! inline `mod tests { … }`, a test helper); and module files that only `#[cfg(test)] mod tests;`
//! declarations bring in (with every module below them). Files are parsed with `syn`, as data, and as
//! root: each file is read without following a link and at most [`FILE_CAP`], refused when its brackets
//! nest deeper than [`NESTING`], parsed on a thread of its own (a large stack, and proc-macro2's record of
//! the file's text freed with the thread), each at most once per call, and no more than [`BUDGET`] bytes
//! in all. A file that cannot be read as code excludes nothing, and says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::spanned::Spanned;

use super::super::{Package, TestCode, join};
use super::cfg::Cfg;
use crate::sandbox::toolchain::relative_join;

/// The largest source file parsed (a larger one is generated code, and excludes nothing).
const FILE_CAP: u64 = 1 << 20;

/// How deep brackets may nest in a file that is parsed.
const NESTING: usize = 256;

/// How much source one call parses in all.
const BUDGET: u64 = 32 << 20;

/// How many module levels a file's declaration is looked for above it.
const DEPTH: usize = 8;

/// The stack of the thread a file is parsed on.
const STACK: usize = 64 << 20;

/// The test code of each of `paths` (repository paths of `package`'s).
pub(in crate::runners) fn test_code(
    root: &Path,
    package: &Package,
    paths: &[String],
) -> BTreeMap<String, TestCode> {
    let mut reader = Reader {
        root,
        package: package.dir,
        files: BTreeMap::new(),
        parsed: 0,
        mentions: None,
    };
    paths
        .iter()
        .map(|path| (path.clone(), reader.test_code(path)))
        .collect()
}

/// What a parsed file says: its module declarations (the files each may be, and whether it is only
/// under `test`) and the lines of its `#[cfg(test)]` items.
#[derive(Debug, Clone, Default)]
struct Facts {
    declarations: Vec<(Vec<String>, bool)>,
    lines: BTreeSet<u32>,
}

/// A file as read: its facts, or why it cannot be read as code; `None` when there is no such file.
type Read = Option<Result<Facts, Unparsed>>;

/// Why a Rust file's `#[cfg(test)]` items cannot be told apart: they are then counted as product code.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unparsed {
    #[error("`{path}` cannot be read: its `#[cfg(test)]` items are counted as product code")]
    Unreadable { path: String },
    #[error(
        "`{path}` is over {mib} MiB, which aayu does not parse: its `#[cfg(test)]` items are counted as product code"
    )]
    TooLarge { path: String, mib: u64 },
    #[error(
        "`{path}` was not parsed (aayu parses at most {mib} MiB of a change's Rust files): its `#[cfg(test)]` items are counted as product code"
    )]
    OverBudget { path: String, mib: u64 },
    #[error("`{path}` is not UTF-8: its `#[cfg(test)]` items are counted as product code")]
    NotUtf8 { path: String },
    #[error(
        "`{path}` nests brackets deeper than {NESTING}, which aayu does not parse: its `#[cfg(test)]` items are counted as product code"
    )]
    TooDeep { path: String },
    #[error(
        "`{path}` does not parse as Rust (line {line}): its `#[cfg(test)]` items are counted as product code"
    )]
    NotRust { path: String, line: usize },
    /// The parser's thread could not start (the system's words).
    #[error("`{path}` could not be parsed: {why}")]
    NoThread { path: String, why: String },
    #[error("`{path}` could not be parsed")]
    Crashed { path: String },
}

struct Reader<'a> {
    root: &'a Path,
    package: &'a str,
    files: BTreeMap<String, Read>,
    parsed: u64,
    /// Each Rust file of the package with its lines that hold `include!` or `#[path` (read once).
    mentions: Option<Vec<(String, Vec<String>)>>,
}

/// How many Rust files of a package are read for `include!` and `#[path` lines.
const MENTION_FILES: usize = 5000;

/// The Rust files under a package's folder (hidden folders, `target/` and other packages' folders left
/// out; no link followed) and, of each, the lines that hold `include!` or `#[path`.
fn mentions(root: &Path, package: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut folders = vec![package.to_string()];
    let mut seen = 0usize;
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&folder)) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let rel = join(&folder, &name);
            if kind.is_dir() {
                let other_package = crate::safe_fs::is_regular(root, &join(&rel, "Cargo.toml"));
                if !name.starts_with('.') && name != "target" && !other_package {
                    folders.push(rel);
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                seen += 1;
                if seen > MENTION_FILES {
                    return found;
                }
                let Ok(bytes) = crate::safe_fs::read(root, &rel, FILE_CAP) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&bytes);
                let lines: Vec<String> = text
                    .lines()
                    .filter(|l| l.contains("include!") || l.contains("#[path"))
                    .map(str::to_string)
                    .collect();
                if !lines.is_empty() {
                    found.push((rel, lines));
                }
            }
        }
    }
    found
}

impl Reader<'_> {
    fn test_code(&mut self, path: &str) -> TestCode {
        let Some(rel) = within(self.package, path) else {
            return TestCode::None;
        };
        if !rel.ends_with(".rs") {
            return TestCode::None;
        }
        let first = rel.split('/').next().unwrap_or("");
        if rel.contains('/') && matches!(first, "tests" | "benches" | "examples")
            || rel == "build.rs"
        {
            return TestCode::Whole;
        }
        match self.declared_for_tests(path, DEPTH) {
            Ok(true) => return TestCode::Whole,
            Ok(false) => {}
            Err(why) => return TestCode::Unread(why.to_string()),
        }
        match self.facts(path) {
            None => TestCode::None,
            Some(Err(why)) => TestCode::Unread(why.to_string()),
            Some(Ok(facts)) if facts.lines.is_empty() => TestCode::None,
            Some(Ok(facts)) => TestCode::Lines(facts.lines),
        }
    }

    /// A file's facts, read and parsed once.
    fn facts(&mut self, path: &str) -> Read {
        if let Some(known) = self.files.get(path) {
            return known.clone();
        }
        let read = self.read(path);
        self.files.insert(path.to_string(), read.clone());
        read
    }

    fn read(&mut self, path: &str) -> Read {
        if !crate::safe_fs::is_regular(self.root, path) {
            return None;
        }
        let bytes = match crate::safe_fs::read(self.root, path, FILE_CAP + 1) {
            Ok(bytes) => bytes,
            Err(_) => {
                return Some(Err(Unparsed::Unreadable {
                    path: path.to_string(),
                }));
            }
        };
        if bytes.len() as u64 > FILE_CAP {
            return Some(Err(Unparsed::TooLarge {
                path: path.to_string(),
                mib: FILE_CAP >> 20,
            }));
        }
        if self.parsed + bytes.len() as u64 > BUDGET {
            return Some(Err(Unparsed::OverBudget {
                path: path.to_string(),
                mib: BUDGET >> 20,
            }));
        }
        self.parsed += bytes.len() as u64;
        let Ok(text) = String::from_utf8(bytes) else {
            return Some(Err(Unparsed::NotUtf8 {
                path: path.to_string(),
            }));
        };
        if super::super::nesting(&text) > NESTING {
            return Some(Err(Unparsed::TooDeep {
                path: path.to_string(),
            }));
        }
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        let name = path.rsplit('/').next().unwrap_or(path);
        // `lib.rs`, `main.rs` and `mod.rs` declare the modules of their own folder; `store.rs` those of
        // `store/`.
        let children = if matches!(name, "lib.rs" | "main.rs" | "mod.rs") {
            dir.clone()
        } else {
            join(&dir, name.trim_end_matches(".rs"))
        };
        let shown = path.to_string();
        let parsed = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || parse(&text, &children, &dir).map_err(|line| not_parsed(&shown, line)))
            .map_err(|e| Unparsed::NoThread {
                path: path.to_string(),
                why: e.to_string(),
            })
            .and_then(|thread| {
                thread.join().unwrap_or_else(|_| {
                    Err(Unparsed::Crashed {
                        path: path.to_string(),
                    })
                })
            });
        Some(parsed)
    }

    /// Whether a module file (`src/store/tests.rs`, `src/tests/mod.rs`) is brought in only by `#[cfg(test)]
    /// mod …;` declarations — in the files that declare it, through inline modules, or by module files
    /// that are themselves test code: every declaration of it must be test-only. The declaring files
    /// looked at are those that can name it: `lib.rs`, `main.rs` and `mod.rs` of a folder above it, a
    /// `<folder>.rs` beside that folder, and the files beside it that hold a `#[path]` attribute. A
    /// declaring file that cannot be parsed and may declare it is `Err` (nothing excluded, said).
    fn declared_for_tests(&mut self, path: &str, depth: usize) -> Result<bool, Unparsed> {
        if depth == 0 {
            return Ok(false);
        }
        let Some(rel) = within(self.package, path) else {
            return Ok(false);
        };
        let package = self.package;
        let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        let mut folders = vec![dir.to_string()];
        let mut at = dir;
        while let Some((parent, _)) = at.rsplit_once('/') {
            folders.push(parent.to_string());
            at = parent;
        }
        if !dir.is_empty() {
            folders.push(String::new());
        }
        let mut declarers: Vec<String> = Vec::new();
        for folder in &folders {
            for name in ["lib.rs", "main.rs", "mod.rs"] {
                declarers.push(join(folder, name));
            }
            if !folder.is_empty() {
                declarers.push(format!("{folder}.rs"));
            }
        }
        declarers.extend(self.path_siblings(&join(package, dir)));
        let name = module_name(rel);
        let mut declared = Vec::new();
        for declarer in declarers {
            let full = join(package, &declarer);
            if full == path || declared.iter().any(|(d, _)| *d == full) {
                continue;
            }
            let facts = match self.facts(&full) {
                None => continue,
                Some(Ok(facts)) => facts,
                Some(Err(why)) => {
                    // A file that cannot be read may still declare it: said only when it could.
                    let text = crate::safe_fs::read(self.root, &full, FILE_CAP).unwrap_or_default();
                    if memchr::memmem::find(&text, format!("mod {name}").as_bytes()).is_some()
                        || memchr::memmem::find(&text, b"#[path").is_some()
                    {
                        return Err(why);
                    }
                    continue;
                }
            };
            for (candidates, test) in &facts.declarations {
                // The candidates are repository paths (the declarer's own folder is one).
                if candidates.iter().any(|c| c == path) {
                    declared.push((full.clone(), *test));
                }
            }
        }
        if declared.is_empty() {
            return Ok(false);
        }
        // Test code only when every declaration is: a `#[cfg(test)]` one, or one in test code.
        for (declarer, test) in &declared {
            if !test && !self.declared_for_tests(declarer, depth - 1)? {
                return Ok(false);
            }
        }
        // Nor may any other file bring it in where the declarers above were not looked for: an
        // `include!` of it anywhere, or a `#[path]` naming it in a file not read above.
        let parsed: Vec<&str> = declared.iter().map(|(d, _)| d.as_str()).collect();
        Ok(!self.named_elsewhere(path, &parsed))
    }

    /// Whether a line of another Rust file of the package names `path`'s file name in an `include!`,
    /// or in a `#[path]` outside the files in `parsed` (read as text: each line that holds either, in
    /// at most [`MENTION_FILES`] files of the package, read once).
    fn named_elsewhere(&mut self, path: &str, parsed: &[&str]) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let mentions = self
            .mentions
            .get_or_insert_with(|| mentions(self.root, self.package));
        mentions.iter().any(|(file, lines)| {
            file != path
                && lines.iter().any(|line| {
                    line.contains(name)
                        && (line.contains("include!")
                            || (line.contains("#[path") && !parsed.contains(&file.as_str())))
                })
        })
    }

    /// The files of a folder (repository path) other than `lib.rs`, `main.rs` and `mod.rs` that hold a
    /// `#[path` attribute (at most 64, by name), as paths relative to the package.
    fn path_siblings(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| {
                n.ends_with(".rs") && !matches!(n.as_str(), "lib.rs" | "main.rs" | "mod.rs")
            })
            .collect();
        names.sort();
        names
            .into_iter()
            .filter(|name| {
                crate::safe_fs::read(self.root, &join(dir, name), FILE_CAP)
                    .is_ok_and(|b| memchr::memmem::find(&b, b"#[path").is_some())
            })
            .take(64)
            .filter_map(|name| within(self.package, &join(dir, &name)).map(str::to_string))
            .collect()
    }
}

/// Parses a file (whose modules live in `children`, the file itself in `own_dir`) into its facts; `Err`
/// is the line where it does not parse.
fn parse(text: &str, children: &str, own_dir: &str) -> Result<Facts, usize> {
    let file = syn::parse_file(text).map_err(|e| e.span().start().line)?;
    let mut facts = Facts::default();
    items_lines(&file.items, &mut facts.lines);
    declarations(
        &file.items,
        children,
        own_dir,
        false,
        &mut facts.declarations,
    );
    Ok(facts)
}

fn not_parsed(path: &str, line: usize) -> Unparsed {
    Unparsed::NotRust {
        path: path.to_string(),
        line,
    }
}

/// `path` relative to the package folder `dir`, when it is inside it.
fn within<'a>(dir: &str, path: &'a str) -> Option<&'a str> {
    if dir.is_empty() {
        Some(path)
    } else {
        path.strip_prefix(dir)?.strip_prefix('/')
    }
}

/// Whether an attribute list holds a `#[cfg(…)]` true only under `test`.
fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let syn::Meta::List(list) = &attr.meta else {
            return false;
        };
        list.path.is_ident("cfg")
            && Cfg::parse(&list.tokens.to_string()).is_some_and(|cfg| cfg.only_under("test"))
    })
}

/// A `#[path = "…"]` attribute's value.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        let syn::Meta::NameValue(nv) = &attr.meta else {
            return None;
        };
        if !nv.path.is_ident("path") {
            return None;
        }
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

/// The lines of every `#[cfg(test)]` item among `items`, inline modules and impl and trait bodies
/// looked into.
fn items_lines(items: &[syn::Item], lines: &mut BTreeSet<u32>) {
    for item in items {
        let attrs = item_attrs(item);
        if cfg_test(attrs) {
            span_lines(item.span(), attrs, lines);
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    items_lines(inner, lines);
                }
            }
            syn::Item::Impl(i) => {
                for inner in &i.items {
                    let attrs = impl_item_attrs(inner);
                    if cfg_test(attrs) {
                        span_lines(inner.span(), attrs, lines);
                    }
                }
            }
            syn::Item::Trait(t) => {
                for inner in &t.items {
                    let attrs = trait_item_attrs(inner);
                    if cfg_test(attrs) {
                        span_lines(inner.span(), attrs, lines);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every line an item spans, from its first attribute to its end.
fn span_lines(span: proc_macro2::Span, attrs: &[syn::Attribute], lines: &mut BTreeSet<u32>) {
    let start = attrs
        .iter()
        .map(|a| a.pound_token.span.start().line)
        .chain(std::iter::once(span.start().line))
        .min()
        .unwrap_or(0);
    let end = span.end().line;
    if start == 0 || end < start {
        return;
    }
    for n in start..=end {
        if let Ok(n) = u32::try_from(n) {
            lines.insert(n);
        }
    }
}

pub(super) fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &syn::ImplItem) -> &[syn::Attribute] {
    match item {
        syn::ImplItem::Const(i) => &i.attrs,
        syn::ImplItem::Fn(i) => &i.attrs,
        syn::ImplItem::Type(i) => &i.attrs,
        syn::ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn trait_item_attrs(item: &syn::TraitItem) -> &[syn::Attribute] {
    match item {
        syn::TraitItem::Const(i) => &i.attrs,
        syn::TraitItem::Fn(i) => &i.attrs,
        syn::TraitItem::Type(i) => &i.attrs,
        syn::TraitItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// The module name a file path gives (`src/store/tests.rs` → `tests`, `src/tests/mod.rs` → `tests`).
fn module_name(rel: &str) -> &str {
    let mut parts = rel.rsplit('/');
    let file = parts.next().unwrap_or(rel);
    if file == "mod.rs" {
        parts.next().unwrap_or(file)
    } else {
        file.strip_suffix(".rs").unwrap_or(file)
    }
}

/// Every `mod x;` among `items` (of a file whose modules live in `children`, the file itself in
/// `own_dir`), inline modules looked into: the files it may be, and whether it (or an inline module
/// around it) is `#[cfg(test)]`.
fn declarations(
    items: &[syn::Item],
    children: &str,
    own_dir: &str,
    inherited: bool,
    found: &mut Vec<(Vec<String>, bool)>,
) {
    for item in items {
        let syn::Item::Mod(m) = item else {
            continue;
        };
        let test = inherited || cfg_test(&m.attrs);
        let name = m.ident.to_string();
        let name = name.trim_start_matches("r#");
        match &m.content {
            Some((_, inner)) => {
                let inside = join(children, name);
                declarations(inner, &inside, &inside, test, found);
            }
            None => {
                let candidates = match path_attr(&m.attrs) {
                    Some(p) => relative_join(own_dir, &p).into_iter().collect(),
                    None => vec![
                        join(children, &format!("{name}.rs")),
                        join(children, &format!("{name}/mod.rs")),
                    ],
                };
                found.push((candidates, test));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runners::RUNNERS;
    use crate::runners::tests::tree;

    fn code(root: &Path, dir: &str, path: &str) -> TestCode {
        let package = Package {
            runner: RUNNERS[0],
            dir,
            home: dir,
        };
        test_code(root, &package, &[path.to_string()])
            .remove(path)
            .expect("asked")
    }

    #[test]
    fn cfg_test_items_and_the_module_files_they_bring_in_are_test_code() {
        let lib = "//! A crate.\n\npub mod store;\nmod util;\n\n#[cfg(test)]\nmod tests;\n\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(all(test, feature = \"x\"))]\nfn helper() -> u32 {\n    1\n}\n\n#[cfg(any(test, unix))]\nfn both() {}\n\nmod inner {\n    #[cfg(test)]\n    mod checks;\n\n    pub struct S;\n\n    impl S {\n        #[cfg(test)]\n        fn probe(&self) {}\n\n        pub fn real(&self) {}\n    }\n}\n";
        let store = "pub fn put() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn puts() {\n        super::put();\n    }\n}\n\n#[cfg(test)]\n#[path = \"store_more.rs\"]\nmod more;\n";
        let dir = tree(&[
            ("crates/a/Cargo.toml", "[package]\nname = \"a\"\n"),
            ("crates/a/src/lib.rs", lib),
            ("crates/a/src/store.rs", store),
            ("crates/a/src/store_more.rs", "fn x() {}\n"),
            ("crates/a/src/util.rs", "pub fn u() {}\n"),
            ("crates/a/src/tests.rs", "mod deep;\n#[test]\nfn t() {}\n"),
            ("crates/a/src/tests/deep.rs", "fn d() {}\n"),
            ("crates/a/src/inner/checks.rs", "fn c() {}\n"),
            ("crates/a/tests/cli.rs", "#[test]\nfn cli() {}\n"),
            ("crates/a/build.rs", "fn main() {}\n"),
            ("crates/a/src/broken.rs", "fn (\n"),
        ]);
        let root = dir.path();
        let at = |p: &str| code(root, "crates/a", p);
        let TestCode::Lines(lines) = at("crates/a/src/lib.rs") else {
            panic!("{:?}", at("crates/a/src/lib.rs"));
        };
        let want: BTreeSet<u32> = [6, 7, 13, 14, 15, 16, 22, 23, 28, 29].into_iter().collect();
        assert_eq!(lines, want);
        let TestCode::Lines(lines) = at("crates/a/src/store.rs") else {
            panic!("store");
        };
        assert_eq!(
            lines,
            (3..=9).chain(11..=13).collect::<BTreeSet<u32>>(),
            "the inline module and the #[path] declaration"
        );
        for whole in [
            "crates/a/src/tests.rs",
            "crates/a/src/tests/deep.rs",
            "crates/a/src/inner/checks.rs",
            "crates/a/src/store_more.rs",
            "crates/a/tests/cli.rs",
            "crates/a/build.rs",
        ] {
            assert_eq!(at(whole), TestCode::Whole, "{whole}");
        }
        assert_eq!(at("crates/a/src/util.rs"), TestCode::None);
        assert!(
            matches!(at("crates/a/src/broken.rs"), TestCode::Unread(why) if why.contains("`crates/a/src/broken.rs` does not parse as Rust (line 1)")),
            "{:?}",
            at("crates/a/src/broken.rs")
        );
        assert_eq!(at("crates/a/Cargo.toml"), TestCode::None);
    }

    #[test]
    fn a_non_mod_rs_parent_names_its_folder() {
        let dir = tree(&[
            ("src/main.rs", "mod cli;\nfn main() {}\n"),
            ("src/cli.rs", "pub fn run() {}\n#[cfg(test)]\nmod tests;\n"),
            ("src/cli/tests.rs", "#[test]\nfn runs() {}\n"),
            ("src/cli/parse.rs", "fn p() {}\n"),
        ]);
        assert_eq!(code(dir.path(), "", "src/cli/tests.rs"), TestCode::Whole);
        assert_eq!(code(dir.path(), "", "src/cli/parse.rs"), TestCode::None);
    }

    /// A file some declaration brings in as product code is product code, whatever a `#[cfg(test)]`
    /// alias of it says; a file too deep or too large to parse excludes nothing, said, and does not
    /// bring the parser down.
    #[test]
    fn product_code_stays_product_code() {
        let nested = format!(
            "fn f() {{ {}1{} }}\n",
            "(".repeat(200_000),
            ")".repeat(200_000)
        );
        let dir = tree(&[
            (
                "src/lib.rs",
                "#[cfg(test)]\n#[path = \"engine.rs\"]\nmod engine_shadow;\npub mod engine;\n",
            ),
            ("src/engine.rs", "pub fn run() -> u32 {\n    7\n}\n"),
            ("src/deep.rs", nested.as_str()),
        ]);
        assert_eq!(code(dir.path(), "", "src/engine.rs"), TestCode::None);
        // An `include!` of it is a product declaration too, wherever it is.
        let dir_inc = tree(&[
            (
                "src/lib.rs",
                "#[cfg(test)]\n#[path = \"engine.rs\"]\nmod engine_shadow;\npub mod glue;\n",
            ),
            (
                "src/glue.rs",
                "pub mod engine {\n    include!(\"../src/engine.rs\");\n}\n",
            ),
            ("src/engine.rs", "pub fn run() -> u32 {\n    7\n}\n"),
        ]);
        assert_eq!(code(dir_inc.path(), "", "src/engine.rs"), TestCode::None);
        let dir = tree(&[
            (
                "src/lib.rs",
                "#[cfg(test)]\n#[path = \"engine.rs\"]\nmod engine_shadow;\npub mod engine;\n",
            ),
            ("src/engine.rs", "pub fn run() -> u32 {\n    7\n}\n"),
            ("src/deep.rs", nested.as_str()),
        ]);
        assert!(
            matches!(code(dir.path(), "", "src/deep.rs"), TestCode::Unread(why) if why.contains("nests brackets deeper than 256")),
            "{:?}",
            code(dir.path(), "", "src/deep.rs")
        );
        // Under the nesting limit, deep expressions still parse (on the parser's own large stack).
        let deep_ok = format!(
            "fn f() -> u32 {{ {}1{} }}\n",
            "(".repeat(250),
            ")".repeat(250)
        );
        let dir = tree(&[
            ("src/lib.rs", "#[cfg(test)]\nmod t {}\n"),
            ("src/ok.rs", deep_ok.as_str()),
        ]);
        assert_eq!(code(dir.path(), "", "src/ok.rs"), TestCode::None);
    }
}
