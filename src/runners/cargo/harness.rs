//! cargo's harness files, read as data (nothing built): cargo's configuration (`.cargo/config.toml`,
//! whose `rustc-wrapper`, `rustc`, `linker` and `rustflags` run before or around every test), a package's
//! build script (`build.rs` or `package.build`), an in-tree proc-macro crate's code (it runs inside the
//! compiler), `[patch]` and `[replace]` (code built in place of a dependency), and, read with `syn`, what
//! runs before or instead of libtest's `main`: `#![no_main]`, a `#[no_mangle]` / `#[export_name]`
//! `main`, a `#[link_section]` static (an `.init_array` entry), a `#[ctor]`. aayu launches the test
//! executables itself, so `target.*.runner` is no vector, and `harness = false` is already refused.
//! See `docs/proof-packs.md#the-harness-floor`.

use std::collections::BTreeSet;

use crate::runners::harness::{Change, Diff, Kind, Tree, line_of, text};
use crate::runners::join;

const STACK: &str = "cargo";

/// The tables of cargo's configuration that change nothing about what is built or run.
const INERT_TABLES: [&str; 7] = [
    "alias",
    "term",
    "cargo-new",
    "http",
    "net",
    "registries",
    "registry",
];

/// Every cargo harness change of the diff.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut found = Vec::new();
    for path in diff.changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
        let is_config =
            folder.rsplit('/').next() == Some(".cargo") && matches!(name, "config" | "config.toml");
        let crate_dir = crate_of(diff, path);
        let interesting = is_config || name == "Cargo.toml" || crate_dir.is_some();
        if !interesting {
            continue;
        }
        let read = |tree: &dyn Tree| text(tree, path, STACK, diff.cap);
        let (base, head) = match (read(diff.base), read(diff.head)) {
            (Ok(b), Ok(h)) => (b, h),
            (Err(finding), _) | (_, Err(finding)) => {
                if is_config || name == "Cargo.toml" || name == "build.rs" {
                    found.push(finding);
                }
                continue;
            }
        };
        let whole = |kind: Kind, what: &str| {
            crate::runners::harness::whole_file(
                path,
                (base.as_deref(), head.as_deref()),
                STACK,
                kind,
                what,
            )
        };
        if is_config {
            if let Some(change) = config(path, base.as_deref(), head.as_deref()) {
                found.push(change);
            }
            continue;
        }
        if name == "Cargo.toml" {
            found.extend(manifest(path, base.as_deref(), head.as_deref()));
            continue;
        }
        let Some(dir) = crate_dir else {
            continue;
        };
        if name.ends_with(".rs") {
            let rest = path.strip_prefix(&format!("{dir}/")).unwrap_or(path);
            if build_script(diff.head, &dir, diff.cap).as_deref() == Some(rest)
                || build_script(diff.base, &dir, diff.cap).as_deref() == Some(rest)
            {
                found.push(whole(
                    Kind::Build,
                    "a build script: code that runs at build time, before any test",
                ));
            } else if is_proc_macro(diff, &dir) {
                found.push(whole(
                    Kind::Build,
                    "a proc-macro crate's code: it runs inside the compiler, and writes the code it expands to",
                ));
            }
            found.extend(startup(path, base.as_deref(), head.as_deref()));
        }
    }
    found
}

/// The crate folder a path lies in (its nearest folder with a `Cargo.toml`, in either tree).
fn crate_of(diff: &Diff, path: &str) -> Option<String> {
    let mut dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    loop {
        let manifest = join(dir, "Cargo.toml");
        if diff.head.has(&manifest) || diff.base.has(&manifest) {
            return Some(dir.to_string());
        }
        if dir.is_empty() {
            return None;
        }
        dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
    }
}

fn manifest_table(tree: &dyn Tree, dir: &str, cap: u64) -> Option<toml::Table> {
    text(tree, &join(dir, "Cargo.toml"), STACK, cap)
        .ok()
        .flatten()?
        .parse::<toml::Table>()
        .ok()
}

/// A crate's build script, relative to its folder: `package.build`, else `build.rs` when there is one.
fn build_script(tree: &dyn Tree, dir: &str, cap: u64) -> Option<String> {
    let table = manifest_table(tree, dir, cap)?;
    match table.get("package").and_then(|p| p.get("build")) {
        Some(toml::Value::String(path)) => Some(path.trim_start_matches("./").to_string()),
        Some(toml::Value::Boolean(false)) => None,
        _ => Some("build.rs".to_string()),
    }
}

/// Whether a crate is a proc-macro crate (`[lib] proc-macro = true`) in either tree.
fn is_proc_macro(diff: &Diff, dir: &str) -> bool {
    [diff.base, diff.head].iter().any(|tree| {
        manifest_table(*tree, dir, diff.cap).is_some_and(|t| {
            t.get("lib")
                .and_then(|l| l.get("proc-macro").or_else(|| l.get("proc_macro")))
                .and_then(toml::Value::as_bool)
                == Some(true)
        })
    })
}

/// cargo's configuration, compared without its inert tables.
fn config(path: &str, base: Option<&str>, head: Option<&str>) -> Option<Change> {
    let (mut b, mut h) = match crate::runners::harness::parsed_pair(
        path,
        (base, head),
        (STACK, "TOML", "how the tests are built"),
        crate::runners::harness::toml_table,
    ) {
        Ok(tables) => tables,
        Err(finding) => return Some(finding),
    };
    for table in INERT_TABLES {
        b.remove(table);
        h.remove(table);
    }
    if b == h {
        return None;
    }
    let keys: BTreeSet<&String> = b
        .keys()
        .chain(h.keys())
        .filter(|k| b.get(*k) != h.get(*k))
        .collect();
    let first = keys.iter().next().map(|k| k.as_str()).unwrap_or_default();
    let head_text = head.unwrap_or("");
    Some(Change::new(
        path,
        line_of(head_text, |l| {
            let l = l.trim_start();
            l.starts_with(&format!("[{first}")) || l.starts_with(first)
        }),
        STACK,
        Kind::Config,
        format!(
            "cargo's configuration (`{}`): its wrapper, compiler, linker and flags run before or around every test",
            keys.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join("`, `")
        ),
    ))
}

/// A `Cargo.toml`'s harness keys, compared: `package.build`, `lib.proc-macro`, `[patch]` and `[replace]`.
fn manifest(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let parse = |t: Option<&str>| {
        t.and_then(|t| t.parse::<toml::Table>().ok())
            .unwrap_or_default()
    };
    let (b, h) = (parse(base), parse(head));
    let at = |t: &toml::Table, keys: &[&str]| -> Option<toml::Value> {
        let mut v = t.get(keys[0])?;
        for k in &keys[1..] {
            v = v.get(k)?;
        }
        Some(v.clone())
    };
    let head_text = head.unwrap_or("");
    let mut found = Vec::new();
    for (keys, needle, kind, what) in [
        (
            &["package", "build"][..],
            "build",
            Kind::Build,
            "`package.build`: the build script that runs before any test",
        ),
        (
            &["lib", "proc-macro"][..],
            "proc-macro",
            Kind::Build,
            "`lib.proc-macro`: a crate whose code runs inside the compiler",
        ),
        (
            &["patch"][..],
            "[patch",
            Kind::Shadow,
            "`[patch]`: code built in place of a dependency",
        ),
        (
            &["replace"][..],
            "[replace",
            Kind::Shadow,
            "`[replace]`: code built in place of a dependency",
        ),
    ] {
        if at(&b, keys) != at(&h, keys) {
            found.push(Change::new(
                path,
                line_of(head_text, |l| l.trim_start().starts_with(needle)),
                STACK,
                kind,
                what,
            ));
        }
    }
    found
}

/// What a Rust file holds that runs before or in place of libtest's `main`, by item, compared: each the
/// head adds or changes.
fn startup(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let (Some(head), before) = (head, base.map(startup_items).unwrap_or_default()) else {
        return Vec::new();
    };
    startup_items(head)
        .into_iter()
        .filter(|(_, what, text)| !before.iter().any(|(_, w, t)| w == what && t == text))
        .map(|(line, what, _)| {
            Change::new(
                path,
                line,
                STACK,
                Kind::Setup,
                format!("{what}: it runs before or in place of the tests"),
            )
        })
        .collect()
}

/// A file's start-up items: (line, what, the item's source lines). A file `syn` cannot parse has none
/// (it does not build).
fn startup_items(source: &str) -> Vec<(u32, String, String)> {
    // Parsed apart (as root, the pull request's text); a file aayu will not parse is one item, whole.
    crate::runners::parse_apart(source.to_string(), |text| parsed_startup_items(&text))
        .unwrap_or_else(|why| {
            vec![(
                1,
                format!("a file aayu cannot read for start-up items: {why}"),
                source.to_string(),
            )]
        })
}

/// [`startup_items`], on the parse's own thread.
fn parsed_startup_items(source: &str) -> Vec<(u32, String, String)> {
    use syn::spanned::Spanned as _;
    let Ok(file) = syn::parse_file(source) else {
        return Vec::new();
    };
    let lines: Vec<&str> = source.lines().collect();
    let text_of = |span: proc_macro2::Span| -> String {
        let (start, end) = (span.start().line, span.end().line);
        lines
            .get(start.saturating_sub(1)..end.min(lines.len()))
            .map(|l| l.join("\n"))
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for attr in &file.attrs {
        if matches!(attr.style, syn::AttrStyle::Inner(_)) && attr_named(attr, "no_main") {
            found.push((
                attr.span().start().line as u32,
                "`#![no_main]`".to_string(),
                text_of(attr.span()),
            ));
        }
    }
    let mut items: Vec<&syn::Item> = file.items.iter().collect();
    while let Some(item) = items.pop() {
        if let syn::Item::Mod(m) = item
            && let Some((_, inner)) = &m.content
        {
            items.extend(inner.iter());
        }
        let attrs = super::test_code::item_attrs(item);
        let line = item.span().start().line as u32;
        let has = |name: &str| attrs.iter().any(|a| attr_named(a, name));
        let is_main = matches!(item, syn::Item::Fn(f) if f.sig.ident == "main");
        let exported_main = attrs
            .iter()
            .any(|a| attr_named(a, "export_name") && text_of(a.span()).contains("\"main\""));
        let what = if (is_main && has("no_mangle")) || exported_main {
            "an exported `main`"
        } else if matches!(item, syn::Item::Static(_)) && has("link_section") {
            "a `#[link_section]` static (the loader runs it)"
        } else if has("ctor") || has("dtor") {
            "a `#[ctor]` / `#[dtor]` function"
        } else {
            continue;
        };
        found.push((line, what.to_string(), text_of(item.span())));
    }
    found.sort();
    found
}

/// Whether an attribute is `name`, as itself, inside `unsafe(…)`, or as a path ending in it
/// (`ctor::ctor`).
fn attr_named(attr: &syn::Attribute, name: &str) -> bool {
    let path = attr.path();
    if path.segments.last().is_some_and(|s| s.ident == name) {
        return true;
    }
    path.is_ident("unsafe")
        && matches!(&attr.meta, syn::Meta::List(list) if list
            .tokens
            .to_string()
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(base: &[(&str, &str)], head: &[(&str, &str)]) -> Vec<String> {
        crate::runners::harness::test_tree::scan(changes, base, head)
    }

    const MANIFEST: (&str, &str) = (
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );

    #[test]
    fn cargo_configuration_build_scripts_and_patches_are_the_harness() {
        let patched = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[patch.crates-io]\nserde = { path = \"vendor/serde\" }\n";
        let found = scan(
            &[MANIFEST, (".cargo/config.toml", "[alias]\nt = \"test\"\n")],
            &[
                ("Cargo.toml", patched),
                (
                    ".cargo/config.toml",
                    "[alias]\nt = \"test\"\n\n[build]\nrustc-wrapper = \"./wrap.sh\"\n",
                ),
                ("build.rs", "fn main() {}\n"),
                ("src/lib.rs", "pub fn add() {}\n"),
            ],
        );
        assert_eq!(
            found,
            [
                ".cargo/config.toml:4 config cargo's configuration (`build`): its wrapper, compiler, linker and flags run before or around every test",
                "Cargo.toml:6 shadow `[patch]`: code built in place of a dependency",
                "build.rs:1 build a build script: code that runs at build time, before any test (added)",
            ]
        );
        // An alias is no harness change.
        assert!(
            scan(
                &[MANIFEST, (".cargo/config.toml", "[alias]\nt = \"test\"\n")],
                &[
                    MANIFEST,
                    (".cargo/config.toml", "[alias]\nt = \"test --all\"\n")
                ],
            )
            .is_empty()
        );
    }

    #[test]
    fn a_proc_macro_crate_and_what_runs_before_main_are_shown() {
        let derive = (
            "derive/Cargo.toml",
            "[package]\nname = \"d\"\nversion = \"0.1.0\"\n\n[lib]\nproc-macro = true\n",
        );
        let found = scan(
            &[MANIFEST, derive, ("derive/src/lib.rs", "// x\n")],
            &[
                MANIFEST,
                derive,
                ("derive/src/lib.rs", "// y\n"),
                (
                    "tests/it.rs",
                    "#[unsafe(link_section = \".init_array\")]\nstatic INIT: extern \"C\" fn() = init;\n\nmod inner {\n    #[ctor::ctor]\n    fn early() {}\n}\n\n#[test]\nfn t() {}\n",
                ),
                (
                    "src/main.rs",
                    "#![no_main]\n\n#[unsafe(no_mangle)]\npub extern \"C\" fn main() {}\n",
                ),
            ],
        );
        assert_eq!(
            found,
            [
                "derive/src/lib.rs:1 build a proc-macro crate's code: it runs inside the compiler, and writes the code it expands to (changed)",
                "src/main.rs:1 setup `#![no_main]`: it runs before or in place of the tests",
                "src/main.rs:3 setup an exported `main`: it runs before or in place of the tests",
                "tests/it.rs:1 setup a `#[link_section]` static (the loader runs it): it runs before or in place of the tests",
                "tests/it.rs:5 setup a `#[ctor]` / `#[dtor]` function: it runs before or in place of the tests",
            ]
        );
    }
}
