//! Go's harness files, read as data with a conservative text scan (no Go parser, nothing built): what
//! the test binary runs before any test — a `TestMain` and the package's own functions it calls, each
//! `init()` and each package-level `var` whose initialiser calls something in a `_test.go` file — compared
//! declaration by declaration with the merge base (a comment or blank line changes nothing); a
//! `replace` of `go.mod` that points into the tree, and a change under `vendor/` (code built in place of
//! a dependency). See `docs/proof-packs.md#the-harness-floor`.

use std::collections::{BTreeMap, BTreeSet};

use crate::runners::harness::{Change, Diff, Kind, Tree, text};
use crate::runners::join;

const STACK: &str = "go";

/// Every Go harness change of the diff.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut found = Vec::new();
    let mut folders: BTreeSet<String> = BTreeSet::new();
    let mut vendored: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for path in diff.changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
        if let Some(module) = vendored_module(diff, path) {
            let entry = vendored.entry(module).or_insert((path.clone(), 0));
            entry.1 += 1;
            continue;
        }
        if name == "go.mod" {
            found.extend(replaces(diff, path));
        } else if name.ends_with(".go")
            && !folder.split('/').any(|p| p == "testdata")
            && in_module(diff, folder)
        {
            folders.insert(folder.to_string());
        }
    }
    for (module, (first, count)) in vendored {
        found.push(Change::new(
            &first,
            1,
            STACK,
            Kind::Shadow,
            format!(
                "vendored `{module}` ({count} file{} changed): built in place of the dependency",
                if count == 1 { "" } else { "s" }
            ),
        ));
    }
    for folder in folders {
        found.extend(package(diff, &folder));
    }
    found
}

/// Whether a folder lies in a Go module (a `go.mod` at or above it, in either tree).
fn in_module(diff: &Diff, folder: &str) -> bool {
    let mut dir = folder;
    loop {
        let marker = join(dir, "go.mod");
        if diff.head.has(&marker) || diff.base.has(&marker) {
            return true;
        }
        if dir.is_empty() {
            return false;
        }
        dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
    }
}

/// The vendored module a path is a file of (`vendor/` beside a `go.mod`): its first three path parts
/// (`github.com/owner/name`), or `modules.txt`.
fn vendored_module(diff: &Diff, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts.iter().position(|p| *p == "vendor")?;
    let module_root = parts[..at].join("/");
    let marker = join(&module_root, "go.mod");
    if !(diff.head.has(&marker) || diff.base.has(&marker)) {
        return None;
    }
    let rest = &parts[at + 1..];
    let module = rest[..rest.len().saturating_sub(1).min(3)].join("/");
    Some(join(
        &join(&module_root, "vendor"),
        if module.is_empty() {
            rest.first().copied().unwrap_or_default()
        } else {
            &module
        },
    ))
}

/// A `go.mod`'s `replace` directives that point into the tree (a path, not a module version), compared.
fn replaces(diff: &Diff, path: &str) -> Vec<Change> {
    let read = |tree: &dyn Tree| text(tree, path, STACK, diff.cap);
    let (base, head) = match (read(diff.base), read(diff.head)) {
        (Ok(b), Ok(h)) => (b.unwrap_or_default(), h.unwrap_or_default()),
        (Err(finding), _) | (_, Err(finding)) => return vec![finding],
    };
    let local = |text: &str| -> BTreeMap<String, u32> {
        let mut found = BTreeMap::new();
        let mut block = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split("//").next().unwrap_or("").trim();
            if line.starts_with("replace") && line.ends_with('(') {
                block = true;
                continue;
            }
            if block && line == ")" {
                block = false;
                continue;
            }
            let directive = if block {
                line
            } else if let Some(rest) = line.strip_prefix("replace ") {
                rest.trim()
            } else {
                continue;
            };
            let Some((_, target)) = directive.split_once("=>") else {
                continue;
            };
            let target = target.trim();
            if target.starts_with("./") || target.starts_with("../") || target.starts_with('/') {
                let normalised = directive.split_whitespace().collect::<Vec<_>>().join(" ");
                found.insert(normalised, i as u32 + 1);
            }
        }
        found
    };
    let (b, h) = (local(&base), local(&head));
    let mut found = Vec::new();
    for (directive, line) in &h {
        if !b.contains_key(directive) {
            found.push(Change::new(
                path,
                *line,
                STACK,
                Kind::Shadow,
                format!(
                    "`replace {directive}`: a folder of the tree built in place of the dependency"
                ),
            ));
        }
    }
    for directive in b.keys().filter(|d| !h.contains_key(*d)) {
        found.push(Change::new(
            path,
            1,
            STACK,
            Kind::Shadow,
            format!("`replace {directive}` removed: the dependency is built from elsewhere"),
        ));
    }
    found
}

/// One top-level declaration of a Go file: its first line, its text with comments removed and blank
/// space collapsed (what is compared), the name of a `func` (a method has none), and the names it calls.
#[derive(Debug, Clone)]
struct Decl {
    file: String,
    line: u32,
    text: String,
    func: Option<String>,
    calls: BTreeSet<String>,
}

/// The harness of one package folder in one tree: `TestMain` and the package's functions it calls (by
/// name), and each `init()` and calling `var` of a `_test.go` file (by file, as a multiset of texts).
#[derive(Debug, Default)]
struct Harness {
    main: BTreeMap<String, Decl>,
    setup: BTreeMap<String, Vec<Decl>>,
    unreadable: Vec<Change>,
}

fn harness_of(tree: &dyn Tree, folder: &str, cap: u64) -> Harness {
    let mut all: Vec<Decl> = Vec::new();
    let mut harness = Harness::default();
    for file in tree.files_in(folder) {
        if !file.ends_with(".go") {
            continue;
        }
        let path = join(folder, &file);
        match text(tree, &path, STACK, cap) {
            Ok(Some(source)) => all.extend(decls(&path, &source)),
            Ok(None) => {}
            Err(finding) => {
                if file.ends_with("_test.go") {
                    harness.unreadable.push(finding);
                }
            }
        }
    }
    let funcs: BTreeMap<&str, &Decl> = all
        .iter()
        .filter_map(|d| d.func.as_deref().map(|f| (f, d)))
        .filter(|(f, _)| *f != "init")
        .collect();
    let mut queue: Vec<&str> = funcs
        .get("TestMain")
        .filter(|d| d.file.ends_with("_test.go"))
        .map(|_| "TestMain")
        .into_iter()
        .collect();
    while let Some(name) = queue.pop() {
        if harness.main.contains_key(name) {
            continue;
        }
        let Some(decl) = funcs.get(name) else {
            continue;
        };
        harness.main.insert(name.to_string(), (*decl).clone());
        queue.extend(decl.calls.iter().map(String::as_str));
    }
    for decl in all.iter().filter(|d| d.file.ends_with("_test.go")) {
        let is_init = decl.func.as_deref() == Some("init");
        // A call, a conversion or a function literal run in place (`var _ = func() int { … }()`):
        // anything with a parenthesis after the `=` may run code.
        let calling_var = decl.text.starts_with("var")
            && decl
                .text
                .split_once('=')
                .is_some_and(|(_, rhs)| rhs.contains('('));
        if is_init || calling_var {
            harness
                .setup
                .entry(decl.file.clone())
                .or_default()
                .push(decl.clone());
        }
    }
    harness
}

/// The harness changes of a package folder: its harness at the head against the merge base's.
fn package(diff: &Diff, folder: &str) -> Vec<Change> {
    let (base, head) = (
        harness_of(diff.base, folder, diff.cap),
        harness_of(diff.head, folder, diff.cap),
    );
    let mut found = head.unreadable;
    let names: BTreeSet<&String> = base.main.keys().chain(head.main.keys()).collect();
    for name in names {
        let (b, h) = (base.main.get(name), head.main.get(name));
        if b.map(|d| &d.text) == h.map(|d| &d.text) {
            continue;
        }
        let what = if name == "TestMain" {
            "`TestMain`: it runs the package's tests, and anything before and after them"
                .to_string()
        } else {
            format!(
                "`{name}`, which `TestMain` calls: it runs before and around the package's tests"
            )
        };
        let (file, line, how) = match (b, h) {
            (_, Some(h)) if b.is_none() => (h.file.clone(), h.line, "added"),
            (_, Some(h)) => (h.file.clone(), h.line, "changed"),
            (Some(b), None) => (b.file.clone(), 1, "removed"),
            (None, None) => continue,
        };
        found.push(Change::new(
            &file,
            line,
            STACK,
            Kind::Setup,
            format!("{what} ({how})"),
        ));
    }
    let files: BTreeSet<&String> = base.setup.keys().chain(head.setup.keys()).collect();
    for file in files {
        let texts = |decls: Option<&Vec<Decl>>| -> Vec<String> {
            let mut t: Vec<String> = decls
                .into_iter()
                .flatten()
                .map(|d| d.text.clone())
                .collect();
            t.sort();
            t
        };
        let (b, h) = (base.setup.get(file), head.setup.get(file));
        let before = texts(b);
        for decl in h.into_iter().flatten() {
            if !before.contains(&decl.text) {
                found.push(Change::new(
                    file,
                    decl.line,
                    STACK,
                    Kind::Setup,
                    setup_words(decl, "added or changed"),
                ));
            }
        }
        let after = texts(h);
        // A removal that is not the other half of a change (fewer such declarations than before).
        let fewer = after.len() < before.len();
        for decl in b.into_iter().flatten() {
            if fewer && !after.contains(&decl.text) {
                found.push(Change::new(
                    file,
                    1,
                    STACK,
                    Kind::Setup,
                    setup_words(decl, "removed"),
                ));
            }
        }
    }
    found
}

fn setup_words(decl: &Decl, how: &str) -> String {
    if decl.func.is_some() {
        format!("an `init()` of a test file: it runs in the test binary before any test ({how})")
    } else {
        format!(
            "a package-level `var` of a test file whose initialiser calls code: it runs in the test binary before any test ({how})"
        )
    }
}

/// A Go file's top-level declarations, found by a scanner that knows strings, raw strings, runes and
/// comments: a declaration starts at a line that begins (at depth 0) with `func`, `var`, `const`,
/// `type` or `import`, and runs to the next.
fn decls(path: &str, source: &str) -> Vec<Decl> {
    let (clean, mask) = strip(source);
    let mut found: Vec<Decl> = Vec::new();
    let mut depth: i32 = 0;
    let mut current: Option<(u32, String, String)> = None;
    for (i, (line, text_line)) in mask.lines().zip(clean.lines()).enumerate() {
        let starts = depth == 0
            && ["func", "var", "const", "type", "import", "package"]
                .iter()
                .any(|k| line.starts_with(k) && line[k.len()..].starts_with([' ', '(', '\t']));
        if starts {
            if let Some((at, text, code)) = current.take() {
                found.push(decl(path, at, &text, &code));
            }
            current = Some((i as u32 + 1, String::new(), String::new()));
        }
        if let Some((_, text, code)) = current.as_mut() {
            text.push_str(text_line);
            text.push('\n');
            code.push_str(line);
            code.push('\n');
        }
        for c in line.chars() {
            match c {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                _ => {}
            }
        }
    }
    if let Some((at, text, code)) = current.take() {
        found.push(decl(path, at, &text, &code));
    }
    found
}

/// A declaration from its text (comments removed) and its code (strings masked too: a name inside a
/// string is no call).
fn decl(path: &str, line: u32, text: &str, code: &str) -> Decl {
    static CALL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(").expect("a valid pattern")
    });
    static FUNC: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^func\s+([A-Za-z_][A-Za-z0-9_]*)\s*[\[(]").expect("a valid pattern")
    });
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let func = FUNC.captures(&collapsed).map(|c| c[1].to_string());
    // What it calls: each `name(` of its code after the declaration's own head (its name and
    // parameters).
    let code = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let body = match &func {
        Some(_) => code.find('{').map_or("", |at| &code[at..]),
        None => code.find('=').map_or("", |at| &code[at..]),
    };
    let calls = CALL
        .captures_iter(body)
        .map(|c| c[1].to_string())
        .filter(|n| !matches!(n.as_str(), "func" | "if" | "for" | "switch" | "return"))
        .collect();
    Decl {
        file: path.to_string(),
        line,
        text: collapsed,
        func,
        calls,
    }
}

/// Go source with comments removed (`clean`), and the same with each string, raw string and rune
/// literal's contents replaced by `_` (`mask`, for counting braces): both keep every newline.
fn strip(source: &str) -> (String, String) {
    #[derive(PartialEq)]
    enum In {
        Code,
        Line,
        Block,
        Str,
        Raw,
        Rune,
    }
    let mut clean = String::with_capacity(source.len());
    let mut mask = String::with_capacity(source.len());
    let mut both = |c: char, masked: char| {
        clean.push(c);
        mask.push(masked);
    };
    let mut state = In::Code;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            In::Code => match c {
                '/' if chars.peek() == Some(&'/') => state = In::Line,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    state = In::Block;
                }
                '"' => {
                    state = In::Str;
                    both(c, c);
                }
                '`' => {
                    state = In::Raw;
                    both(c, c);
                }
                '\'' => {
                    state = In::Rune;
                    both(c, c);
                }
                _ => both(c, c),
            },
            In::Line => {
                if c == '\n' {
                    both('\n', '\n');
                    state = In::Code;
                }
            }
            In::Block => {
                if c == '\n' {
                    both('\n', '\n');
                } else if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    both(' ', ' ');
                    state = In::Code;
                }
            }
            In::Str | In::Rune => {
                let end = if state == In::Str { '"' } else { '\'' };
                if c == '\\' {
                    both(c, '_');
                    if let Some(next) = chars.next() {
                        both(next, if next == '\n' { '\n' } else { '_' });
                    }
                } else if c == end {
                    both(c, c);
                    state = In::Code;
                } else if c == '\n' {
                    both('\n', '\n');
                    state = In::Code;
                } else {
                    both(c, '_');
                }
            }
            In::Raw => {
                if c == '`' {
                    both(c, c);
                    state = In::Code;
                } else if c == '\n' {
                    both('\n', '\n');
                } else {
                    both(c, '_');
                }
            }
        }
    }
    (clean, mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(base: &[(&str, &str)], head: &[(&str, &str)]) -> Vec<String> {
        crate::runners::harness::test_tree::scan(changes, base, head)
    }

    const GO_MOD: (&str, &str) = ("go.mod", "module example.com/calc\n\ngo 1.22\n");
    const CALC: (&str, &str) = (
        "calc/calc.go",
        "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    );

    #[test]
    fn a_test_main_an_init_and_a_calling_initialiser_are_the_harness() {
        let test = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n";
        let forged = format!(
            "{test}\nfunc TestMain(m *testing.M) {{\n\tflag.Set(\"test.run\", \"^$\")\n\tos.Exit(m.Run())\n}}\n\nvar _ = func() int {{\n\treturn 1\n}}()\n\nfunc init() {{ println(\"x\") }}\n\nvar plain = 3\n"
        );
        let found = scan(
            &[GO_MOD, CALC, ("calc/calc_test.go", test)],
            &[GO_MOD, CALC, ("calc/calc_test.go", &forged)],
        );
        assert_eq!(
            found,
            [
                "calc/calc_test.go:11 setup `TestMain`: it runs the package's tests, and anything before and after them (added)",
                "calc/calc_test.go:16 setup a package-level `var` of a test file whose initialiser calls code: it runs in the test binary before any test (added or changed)",
                "calc/calc_test.go:20 setup an `init()` of a test file: it runs in the test binary before any test (added or changed)",
            ]
        );
        // A comment or a blank line is no change; a test's own body is not the harness.
        let commented = forged.replace("func TestMain", "// runs all\nfunc TestMain");
        let body = commented.replace("t.Fatal(\"no\")", "t.Fatalf(\"no: %d\", Add(1, 2))");
        assert!(
            scan(
                &[GO_MOD, CALC, ("calc/calc_test.go", &forged)],
                &[GO_MOD, CALC, ("calc/calc_test.go", &body)],
            )
            .is_empty()
        );
    }

    #[test]
    fn an_unchanged_test_main_whose_helper_changes_is_shown_at_the_helper() {
        let main = "package calc\n\nimport \"testing\"\n\nfunc TestMain(m *testing.M) {\n\tsetup()\n\tos.Exit(m.Run())\n}\n";
        let helper = |body: &str| {
            format!("package calc\n\nfunc setup() {{\n\t{body}\n}}\n\nfunc other() {{}}\n")
        };
        let found = scan(
            &[
                GO_MOD,
                CALC,
                ("calc/main_test.go", main),
                ("calc/helpers.go", &helper("println(1)")),
            ],
            &[
                GO_MOD,
                CALC,
                ("calc/main_test.go", main),
                ("calc/helpers.go", &helper("flag.Set(\"test.run\", \"^$\")")),
            ],
        );
        assert_eq!(
            found,
            [
                "calc/helpers.go:3 setup `setup`, which `TestMain` calls: it runs before and around the package's tests (changed)"
            ]
        );
        // A function TestMain does not call is the product's code.
        let other = helper("println(1)").replace("func other() {}", "func other() { println(2) }");
        assert!(
            scan(
                &[
                    GO_MOD,
                    CALC,
                    ("calc/main_test.go", main),
                    ("calc/helpers.go", &helper("println(1)"))
                ],
                &[
                    GO_MOD,
                    CALC,
                    ("calc/main_test.go", main),
                    ("calc/helpers.go", &other)
                ],
            )
            .is_empty()
        );
    }

    #[test]
    fn a_replace_into_the_tree_and_vendored_code_are_shadows() {
        let with = "module example.com/calc\n\ngo 1.22\n\nreplace (\n\tgolang.org/x/text => ./third_party/text\n\texample.com/x v1.0.0 => example.com/y v1.1.0\n)\n";
        let found = scan(
            &[GO_MOD, CALC],
            &[
                ("go.mod", with),
                CALC,
                ("vendor/golang.org/x/text/a.go", "package text\n"),
                ("vendor/golang.org/x/text/b/c.go", "package b\n"),
                ("vendor/modules.txt", "# x\n"),
            ],
        );
        assert_eq!(
            found,
            [
                "go.mod:6 shadow `replace golang.org/x/text => ./third_party/text`: a folder of the tree built in place of the dependency",
                "vendor/golang.org/x/text/a.go:1 shadow vendored `vendor/golang.org/x/text` (2 files changed): built in place of the dependency",
                "vendor/modules.txt:1 shadow vendored `vendor/modules.txt` (1 file changed): built in place of the dependency",
            ]
        );
    }

    #[test]
    fn strings_and_comments_do_not_confuse_the_scanner() {
        let source = "package p\n\nvar s = \"}{ // not a comment\"\nvar r = '}'\n/* func init() {\n} */\nvar raw = `\n}\n`\n\nfunc init() {\n\tx := \"\\\"{\"\n\t_ = x\n}\n";
        let found = decls("p/a_test.go", source);
        let heads: Vec<(u32, Option<String>)> =
            found.iter().map(|d| (d.line, d.func.clone())).collect();
        assert_eq!(
            heads,
            [
                (1, None),
                (3, None),
                (4, None),
                (7, None),
                (11, Some("init".to_string())),
            ]
        );
        assert!(found[4].text.contains("\"\\\"{\""), "{}", found[4].text);
    }
}
