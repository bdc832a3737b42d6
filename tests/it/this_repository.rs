//! aayu's own repository: the bundled notes example's map is in sync with its source.

use crate::common::{aayu_in, run};

#[test]
fn verify_map_reports_no_drift_on_this_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join(".git").exists() {
        // A source tarball without history cannot be checked; a clone always can.
        return;
    }
    let out = run(aayu_in(root).args(["verify", "--map", "--json"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["drift"], serde_json::json!([]));
    assert_eq!(report["errors"], serde_json::json!([]));
    assert!(report["maps"].as_u64() >= Some(1));
    assert!(report["features"].as_u64() >= Some(4));
}

/// The table of allowed imports in `docs/architecture.md` (between `<!-- BEGIN imports -->` and
/// `<!-- END imports -->`): each top-level module and what it may import, the rows from the bottom layer
/// up. `every module above` in a cell is every row before it.
fn import_table(doc: &str) -> Vec<(String, std::collections::BTreeSet<String>)> {
    let start = doc
        .find("<!-- BEGIN imports -->")
        .expect("the table's start marker");
    let end = doc
        .find("<!-- END imports -->")
        .expect("the table's end marker");
    let mut rows: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    for line in doc[start..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| `name` | layer | may import |` splits into ["", name, layer, imports, ""].
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let allowed = if cells[3].contains("every module above") {
            rows.iter().map(|(n, _)| n.clone()).collect()
        } else {
            cells[3]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        rows.push((name, allowed));
    }
    rows
}

/// Every `crate::<module>` path of a file's code (comments left out), grouped imports
/// (`crate::{a, b::{c, d}}`) included: the top-level modules it names.
fn imported_modules(text: &str) -> std::collections::BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let single = regex::Regex::new(r"\bcrate::(\w+)").expect("re");
    let mut found: std::collections::BTreeSet<String> = single
        .captures_iter(&code)
        .map(|c| c[1].to_string())
        .collect();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::{") {
        let body = &rest[at + "crate::{".len()..];
        let (mut depth, mut token, mut end) = (0usize, String::new(), body.len());
        for (i, ch) in body.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = i;
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.extend(first_word(&token));
                    token.clear();
                    continue;
                }
                _ => {}
            }
            if depth == 0 || ch != '{' {
                token.push(ch);
            }
        }
        found.extend(first_word(&token));
        rest = &body[end..];
    }
    found
}

fn first_word(text: &str) -> Option<String> {
    let word: String = text
        .trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// What breaks the table: an edge it does not list, a module it does not name (or names but `src` lacks),
/// a row importing a row below it, and a cycle in the code. `files` are (path under `src/`, text).
fn import_violations(doc: &str, files: &[(String, String)]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let rows = import_table(doc);
    let mut found = Vec::new();
    let position: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut modules = BTreeSet::new();
    for (path, text) in files {
        let first = path.split('/').next().unwrap_or(path);
        let node = first.strip_suffix(".rs").unwrap_or(first).to_string();
        if node == "lib" || node == "main" {
            continue;
        }
        modules.insert(node.clone());
        for target in imported_modules(text) {
            if target != node && target != "self" && target != "super" {
                edges
                    .entry(node.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| path.clone());
            }
        }
    }
    for module in &modules {
        if !position.contains_key(module.as_str()) {
            found.push(format!("`{module}` has no row in the table"));
        }
    }
    for (i, (name, allowed)) in rows.iter().enumerate() {
        if !modules.contains(name) {
            found.push(format!(
                "the table names `{name}`, which src/ does not have"
            ));
        }
        for target in allowed {
            if position.get(target.as_str()).is_none_or(|&j| j >= i) {
                found.push(format!(
                    "the table lets `{name}` import `{target}`, which is not a row above it"
                ));
            }
        }
    }
    for (from, targets) in &edges {
        let allowed = rows.iter().find(|(n, _)| n == from).map(|(_, a)| a);
        for (to, file) in targets {
            if !modules.contains(to) {
                continue;
            }
            if !allowed.is_some_and(|a| a.contains(to)) {
                found.push(format!(
                    "src/{file} imports `crate::{to}`: `{from}` may not import `{to}`"
                ));
            }
        }
    }
    // Cycles in the code itself (the table's order already forbids them; this names one if it happens).
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| *n == node) {
            cycles.push(format!("a cycle: {} → {node}", path[at..].join(" → ")));
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in edges.get(node).into_iter().flat_map(|t| t.keys()) {
            visit(next, edges, path, done, cycles);
        }
        path.pop();
    }
    let (mut done, mut cycles) = (BTreeSet::new(), Vec::new());
    for node in edges.keys() {
        visit(node, &edges, &mut Vec::new(), &mut done, &mut cycles);
    }
    found.extend(cycles);
    found
}

/// The layers are enforced: every `crate::<module>` edge of `src/` is one the table in
/// `docs/architecture.md` allows, every module has a row, and there is no cycle.
#[test]
fn modules_import_only_what_the_architecture_table_allows() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("read the doc");
    let src = root.join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).expect("under src");
                let text = std::fs::read_to_string(&path).expect("read");
                files.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    assert!(files.len() > 50, "src/**/*.rs was read");
    assert!(import_table(&doc).len() > 25, "the table was read");
    let found = import_violations(&doc, &files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The checker is real: it finds an edge the table does not allow, a cycle, a module without a row and a
/// table row that imports downwards; it reads grouped imports and leaves comments and other modules'
/// `commands` alone.
#[test]
fn the_import_checker_finds_what_it_forbids() {
    let doc = "<!-- BEGIN imports -->\n| module | layer | may import |\n|---|---|---|\n| `low` | a | |\n| `high` | b | `low` |\n| `top` | c | every module above |\n<!-- END imports -->\n";
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let clean = [
        file(
            "low.rs",
            "// crate::high in a comment\nuse crate::registry::commands;",
        ),
        file("high/deep.rs", "use crate::{low::{self, x}, top::y};"),
        file("top.rs", "fn f() { crate::high::g(); crate::low::h(); }"),
    ];
    let found = import_violations(doc, &clean);
    assert_eq!(
        found,
        vec![
            "src/high/deep.rs imports `crate::top`: `high` may not import `top`".to_string(),
            "a cycle: high → top → high".to_string()
        ],
    );
    let upward = [
        file("low.rs", "use crate::high::Thing;"),
        file("high.rs", ""),
        file("top.rs", ""),
        file("stray.rs", ""),
    ];
    let found = import_violations(doc, &upward);
    assert!(
        found.contains(&"`stray` has no row in the table".to_string()),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("src/low.rs imports `crate::high`")),
        "{found:?}"
    );
    let bad_table = doc.replace("| `low` | a | |", "| `low` | a | `high` |");
    let found = import_violations(
        &bad_table,
        &[file("low.rs", ""), file("high.rs", ""), file("top.rs", "")],
    );
    assert_eq!(
        found,
        vec!["the table lets `low` import `high`, which is not a row above it".to_string()]
    );
    assert_eq!(
        imported_modules("use crate::{maps, commands::x};\nuse crate::registry::commands;"),
        ["commands", "maps", "registry"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}

/// Commands read the runner's environment through `ctx.github` (`settings::github::GitHubEnv`) and
/// `ctx.env.var`, never a GitHub variable or `env.vars` of their own, and `https://api.github.com` is
/// written once in `src/`.
#[test]
fn github_variables_are_read_once_in_settings() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let variable =
        regex::Regex::new(r#""(GITHUB_|ACTIONS_|INPUT_|RUNNER_|GH_)[A-Z_]*""#).expect("re");
    let mut found = Vec::new();
    let mut api = 0;
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("read");
            api += text.matches("https://api.github.com").count();
            if rel.starts_with("src/commands") || rel == "src/cli.rs" {
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    if variable.is_match(code) || code.contains("env.vars") {
                        found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert_eq!(
        api, 1,
        "`https://api.github.com` is written once, in settings/github.rs"
    );
}
