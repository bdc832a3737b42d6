//! Which lines of a Rust file are test code, left out of the coverage floor's changed lines: whole files
//! under a package's `tests/`, `benches/` and `examples/` and its `build.rs`; `#[cfg(test)]` items (an
//! inline `mod tests { … }`, a test helper); and module files that a `#[cfg(test)] mod tests;` brings in
//! (with every module below them). Files are parsed with `syn`, as data; a file that does not parse
//! excludes nothing, and says so.

use std::collections::BTreeSet;
use std::path::Path;

use syn::spanned::Spanned;

use super::super::{Package, TestCode, join};
use super::cfg::Cfg;

/// How much of a source file is read.
const FILE_CAP: u64 = 8 << 20;

/// How many module levels a file's declaration is looked for above it.
const DEPTH: usize = 8;

/// The test code of `path` (a repository path of `package`'s).
pub(in crate::runners) fn test_code(root: &Path, package: &Package, path: &str) -> TestCode {
    let Some(rel) = within(package.dir, path) else {
        return TestCode::None;
    };
    if !rel.ends_with(".rs") {
        return TestCode::None;
    }
    let first = rel.split('/').next().unwrap_or("");
    if rel.contains('/') && matches!(first, "tests" | "benches" | "examples") || rel == "build.rs" {
        return TestCode::Whole;
    }
    match declared_for_tests(root, package.dir, path, DEPTH) {
        Ok(true) => return TestCode::Whole,
        Ok(false) => {}
        Err(why) => return TestCode::Unread(why),
    }
    let text = match read(root, path) {
        Some(text) => text,
        None => return TestCode::None,
    };
    match syn::parse_file(&text) {
        Ok(file) => {
            let mut lines = BTreeSet::new();
            items_lines(&file.items, &mut lines);
            if lines.is_empty() {
                TestCode::None
            } else {
                TestCode::Lines(lines)
            }
        }
        Err(e) => TestCode::Unread(not_parsed(path, &e)),
    }
}

fn not_parsed(path: &str, e: &syn::Error) -> String {
    let at = e.span().start();
    format!(
        "`{path}` does not parse as Rust (line {}): its `#[cfg(test)]` items are counted as product code",
        at.line
    )
}

/// `path` relative to the package folder `dir`, when it is inside it.
fn within<'a>(dir: &str, path: &'a str) -> Option<&'a str> {
    if dir.is_empty() {
        Some(path)
    } else {
        path.strip_prefix(dir)?.strip_prefix('/')
    }
}

fn read(root: &Path, path: &str) -> Option<String> {
    let bytes = crate::safe_fs::read(root, path, FILE_CAP).ok()?;
    String::from_utf8(bytes).ok()
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

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
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

/// Whether a module file (`src/store/tests.rs`, `src/tests/mod.rs`) is brought in by a `#[cfg(test)]
/// mod …;` — in the file that declares it, through inline modules, or by a module file that is itself
/// test code. The declaring files looked at are those that can name it: `lib.rs`, `main.rs` and `mod.rs`
/// of a folder above it, and a `<folder>.rs` beside that folder. A declaring file that does not parse is
/// `Err` (nothing excluded, said).
fn declared_for_tests(
    root: &Path,
    package: &str,
    path: &str,
    depth: usize,
) -> Result<bool, String> {
    if depth == 0 {
        return Ok(false);
    }
    let Some(rel) = within(package, path) else {
        return Ok(false);
    };
    // The folder the module's file sits in.
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let mut ancestors = vec![dir.to_string()];
    let mut at = dir;
    while let Some((parent, _)) = at.rsplit_once('/') {
        ancestors.push(parent.to_string());
        at = parent;
    }
    if !dir.is_empty() {
        ancestors.push(String::new());
    }
    for folder in ancestors {
        let mut declarers: Vec<(String, String)> = ["lib.rs", "main.rs", "mod.rs"]
            .iter()
            .map(|name| (join(&folder, name), folder.clone()))
            .collect();
        // `src/store.rs` declares the modules of `src/store/`.
        if !folder.is_empty() {
            declarers.push((format!("{folder}.rs"), folder.clone()));
        }
        // A file beside it may name it with `#[path = "…"]`.
        if folder == dir {
            declarers.extend(siblings(root, &join(package, dir)).into_iter().map(|name| {
                let stem = name.trim_end_matches(".rs").to_string();
                (join(&folder, &name), join(&folder, &stem))
            }));
        }
        for (declarer, children) in declarers {
            let full = join(package, &declarer);
            if full == path || !crate::safe_fs::is_regular(root, &full) {
                continue;
            }
            let Some(text) = read(root, &full) else {
                continue;
            };
            let file = match syn::parse_file(&text) {
                Ok(file) => file,
                Err(e) => {
                    // A file that does not parse may still declare it: say so only when it could.
                    let name = module_name(rel);
                    if text.contains(&format!("mod {name}")) {
                        return Err(not_parsed(&full, &e));
                    }
                    continue;
                }
            };
            let declarer_dir = declarer.rsplit_once('/').map_or("", |(d, _)| d);
            match declares(&file.items, &children, declarer_dir, rel, false) {
                Some(true) => return Ok(true),
                Some(false) => {
                    return declared_for_tests(root, package, &full, depth - 1);
                }
                None => {}
            }
        }
    }
    Ok(false)
}

/// The `.rs` files of a folder other than `lib.rs`, `main.rs` and `mod.rs` (at most 200, by name).
fn siblings(root: &Path, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".rs") && !matches!(n.as_str(), "lib.rs" | "main.rs" | "mod.rs"))
        .collect();
    names.sort();
    names.truncate(200);
    names
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

/// Whether `items` (of a file whose modules live in `children`, the file itself in `own_dir`) declare the
/// module whose file is `target`: `Some(test)` when one does, `test` saying whether that declaration (or
/// an inline module around it) is `#[cfg(test)]`.
fn declares(
    items: &[syn::Item],
    children: &str,
    own_dir: &str,
    target: &str,
    inherited: bool,
) -> Option<bool> {
    for item in items {
        let syn::Item::Mod(m) = item else {
            continue;
        };
        let test = inherited || cfg_test(&m.attrs);
        let name = m.ident.to_string();
        let name = name.trim_start_matches("r#");
        match &m.content {
            Some((_, inner)) => {
                if let Some(found) = declares(
                    inner,
                    &join(children, name),
                    &join(children, name),
                    target,
                    test,
                ) {
                    return Some(found);
                }
            }
            None => {
                let candidates = match path_attr(&m.attrs) {
                    Some(p) => vec![normalise(&join(own_dir, &p))],
                    None => vec![
                        join(children, &format!("{name}.rs")),
                        join(children, &format!("{name}/mod.rs")),
                    ],
                };
                if candidates.iter().any(|c| c == target) {
                    return Some(test);
                }
            }
        }
    }
    None
}

/// `a/./b/../c.rs` → `a/c.rs`.
fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runners::RUNNERS;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    fn code(root: &Path, dir: &str, path: &str) -> TestCode {
        let package = Package {
            runner: RUNNERS[0],
            dir,
            home: dir,
        };
        test_code(root, &package, path)
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
        // A `tests` folder inside `src` is nothing special: only what declares it decides.
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
        assert_eq!(normalise("a/./b/../c.rs"), "a/c.rs");
    }
}
