//! `aayu init --verify-skill`: a starter verify skill for the stack found at `--root` — `SKILL.md`, a map
//! with no features (which passes `aayu verify --map`) and the control tool: the built-in step runner for
//! Rust, Go, Python and Node (with its browser steps), and for anything else a stub that blocks every
//! check until it is replaced, so that nothing passes by accident.

use std::path::Path;

/// A stack a starter skill is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    Rust,
    Go,
    Python,
    Node,
    None,
}

impl Stack {
    pub fn name(self) -> &'static str {
        match self {
            Stack::Rust => "rust",
            Stack::Go => "go",
            Stack::Python => "python",
            Stack::Node => "node",
            Stack::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<Stack> {
        [
            Stack::Rust,
            Stack::Go,
            Stack::Python,
            Stack::Node,
            Stack::None,
        ]
        .into_iter()
        .find(|s| s.name() == text)
    }

    /// The files that say a folder is of this stack (any one of them), as the test runners read them.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            Stack::Rust => &["Cargo.toml"],
            Stack::Go => &["go.mod"],
            Stack::Python => &[
                "pyproject.toml",
                "setup.cfg",
                "setup.py",
                "pytest.ini",
                "tox.ini",
            ],
            Stack::Node => &["package.json"],
            Stack::None => &[],
        }
    }

    /// The marker of this stack that `dir` holds, else its first.
    pub fn marker_in(self, dir: &Path) -> Option<&'static str> {
        let markers = self.markers();
        markers
            .iter()
            .copied()
            .find(|m| dir.join(m).is_file())
            .or_else(|| markers.first().copied())
    }
}

/// The stacks whose marker file is in `dir`, in the order they are preferred (Cargo.toml, go.mod, the
/// Python markers, package.json — the test runners' order).
pub fn detect(dir: &Path) -> Vec<Stack> {
    [Stack::Rust, Stack::Go, Stack::Python, Stack::Node]
        .into_iter()
        .filter(|s| s.markers().iter().any(|m| dir.join(m).is_file()))
        .collect()
}

/// The agent apps that can maintain a map, as `[verify] maintainer` names them.
pub const MAINTAINERS: [(&str, &str); 4] = [
    ("amp", "Amp"),
    ("cursor", "Cursor"),
    ("claude-code", "Claude Code"),
    ("codex", "Codex"),
];

/// The maintainers found for this repository and machine: an app's folder in the repository or its home
/// folder, or its program on `PATH`.
pub fn detect_maintainers(
    repo_root: &Path,
    home: Option<&Path>,
    path: Option<&str>,
) -> Vec<&'static str> {
    let on_path = |program: &str| {
        path.is_some_and(|p| std::env::split_paths(p).any(|d| d.join(program).is_file()))
    };
    let folder =
        |name: &str| repo_root.join(name).is_dir() || home.is_some_and(|h| h.join(name).is_dir());
    MAINTAINERS
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| match *id {
            "amp" => on_path("amp") || home.is_some_and(|h| h.join(".config/amp").is_dir()),
            "cursor" => on_path("cursor") || folder(".cursor"),
            "claude-code" => on_path("claude") || folder(".claude"),
            "codex" => on_path("codex") || folder(".codex"),
            _ => false,
        })
        .collect()
}

/// A product name from a folder name: lower case letters, digits and `-`.
pub fn product_name(folder: &str) -> String {
    let mut name = String::new();
    for c in folder.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
    }
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        "app".to_string()
    } else {
        name
    }
}

/// Whether a product name is one a skill folder can carry.
pub fn valid_product(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
}

/// The files of a starter skill, relative to the repository root: (path, text, executable).
pub fn files(product: &str, root: &str, stack: Stack) -> Vec<(String, String, bool)> {
    let base = if root.is_empty() || root == "." {
        String::new()
    } else {
        format!("{}/", root.trim_end_matches('/'))
    };
    let skill = format!("{base}.agents/skills/verify-{product}");
    let control: Vec<String> = match stack {
        Stack::Rust | Stack::Node | Stack::Go | Stack::Python => {
            vec!["aayu".into(), "control".into()]
        }
        Stack::None => vec!["sh".into(), format!("{skill}/control/check")],
    };
    let map = serde_json::json!({"product": product, "control": control, "surfaces": []});
    let readme = format!(
        "# {product}: feature map\n\n`{product}` has no features mapped yet. Each feature gets a file in this folder (see \
         `SKILL.md`) and a link in the index below; each kind of surface (route, command, flag, exported function) \
         a rule in the map block.\n\n```json\n{}\n```\n\n## Features\n",
        serde_json::to_string_pretty(&map).unwrap_or_default()
    );
    let mut out = vec![
        (
            format!("{skill}/SKILL.md"),
            skill_md(product, root, stack),
            false,
        ),
        (format!("{skill}/features/README.md"), readme, false),
    ];
    if stack == Stack::None {
        out.push((format!("{skill}/control/check"), STUB.to_string(), true));
    }
    out
}

fn skill_md(product: &str, root: &str, stack: Stack) -> String {
    let place = if root.is_empty() || root == "." {
        "the repository".to_string()
    } else {
        format!("`{root}`")
    };
    let control = match stack {
        Stack::Rust => {
            "The checks run through the built-in step runner (`\"control\": [\"aayu\", \"control\"]`): `build`, `run`, `request` and `test` steps (docs/behaviour-checks.md)."
        }
        Stack::Node => {
            "The checks run through the built-in step runner (`\"control\": [\"aayu\", \"control\"]`): `ui` checks drive Chromium with its browser steps (`open`, `fill`, `click`, `see`, `screenshot`, …), `api` checks send `request` steps, `cli` and `lib` checks `run` steps, and a `test` step runs one test as the tests floor does — `{\"test\": {\"package\": \".\", \"test\": \"src/parse.test.ts::parse > rejects a trailing comma\"}}` (docs/behaviour-checks.md). For example:\n\n```json\n// {\"id\": \"home\", \"kind\": \"ui\", \"evidence\": \"screenshot\", \"steps\": [{\"open\": \"/\"}, {\"see\": {\"name\": \"Welcome\", \"role\": \"heading\"}}, {\"screenshot\": \"home.png\"}]}\n// {\"id\": \"version\", \"kind\": \"cli\", \"evidence\": \"cli-transcript\", \"steps\": [{\"run\": [\"node\", \"bin/cli.js\", \"--version\"], \"stdout\": [\".\"]}]}\n```"
        }
        Stack::Go => {
            "The checks run through the built-in step runner (`\"control\": [\"aayu\", \"control\"]`): `run` steps (an argv, `exit`, `stdout`), `request` steps, and `test` steps that run one Go test of a package as the tests floor does — `{\"test\": {\"package\": \".\", \"test\": \"TestAdd\"}}`, a subtest as `TestAdd/zero` (docs/behaviour-checks.md)."
        }
        Stack::Python => {
            "The checks run through the built-in step runner (`\"control\": [\"aayu\", \"control\"]`): `run` steps (an argv, `exit`, `stdout`), `request` steps, and `test` steps that run one pytest node id of a package as the tests floor does, in the package's own virtual environment — `{\"test\": {\"package\": \".\", \"test\": \"tests/test_parser.py::test_invalid_escape\"}}` (docs/behaviour-checks.md). A check that runs the package's code, for example (a `run` step runs its argv as it is, from the repository root, with the system's `python3`):\n\n```json\n// {\"id\": \"help\", \"kind\": \"cli\", \"evidence\": \"cli-transcript\", \"steps\": [{\"run\": [\"python3\", \"-m\", \"mypkg\", \"--help\"], \"stdout\": [\"usage:\"]}]}\n```"
        }
        Stack::None => {
            "`control/check` is a stub: it blocks every check (\"replace this control tool\") so that nothing passes by accident. Replace it with a tool that runs a check as docs/behaviour-checks.md describes, or use the built-in step runner (`\"control\": [\"aayu\", \"control\"]`)."
        }
    };
    let rules = match stack {
        Stack::Rust => {
            r#"{"kind": "command", "files": ["src/main.rs"], "pattern": "Some\\(\"([a-z-]+)\"\\) =>"}
{"kind": "func", "files": ["src/**/*.rs", "!**/tests.rs"], "pattern": "(?m)^pub fn ([a-z_][a-z0-9_]*)\\("}
{"kind": "route", "files": ["src/**/*.rs"], "pattern": "\\.route\\(\"([^\"]+)\""}"#
        }
        Stack::Go => {
            r#"{"kind": "func", "files": ["**/*.go", "!**/*_test.go", "!**/testdata/**"], "pattern": "(?m)^func ([A-Z][A-Za-z0-9_]*)\\("}
{"kind": "route", "files": ["**/*.go"], "pattern": "HandleFunc\\(\"([^\"]+)\""}"#
        }
        Stack::Python => {
            r#"{"kind": "func", "files": ["**/*.py", "!**/test_*.py", "!**/*_test.py", "!**/conftest.py", "!**/tests/**", "!**/test/**"], "pattern": "(?m)^def ([a-z][A-Za-z0-9_]*)\\("}
{"kind": "command", "files": ["pyproject.toml"], "pattern": "(?m)^([A-Za-z0-9][A-Za-z0-9_.-]*)\\s*=\\s*\"[A-Za-z0-9_.]+:[A-Za-z0-9_.]+\""}"#
        }
        Stack::Node => {
            r#"{"kind": "func", "files": ["src/**/*.{js,jsx,ts,tsx,mjs,cjs,mts,cts}", "!**/*.test.*", "!**/*.spec.*", "!**/__tests__/**"], "pattern": "(?m)^export (?:default )?(?:async )?(?:function\\*?|const|class) ([A-Za-z_$][A-Za-z0-9_$]*)"}
{"kind": "route", "files": ["src/**/*.{js,ts}", "!**/*.test.*", "!**/*.spec.*", "!**/__tests__/**"], "pattern": "\\.(?:get|post|put|delete)\\(['\"]([^'\"]+)['\"]"}
{"kind": "page", "files": ["src/pages/**/*.{jsx,tsx}"], "pattern": "export default function ([A-Z][A-Za-z0-9]*)"}"#
        }
        Stack::None => {
            r#"{"kind": "command", "files": ["bin/*"], "pattern": "case \"([a-z-]+)\""}"#
        }
    };
    let prefix = if root.is_empty() || root == "." {
        String::new()
    } else {
        format!("{}/", root.trim_end_matches('/'))
    };
    // Each glob under the package's folder, a `!` entry's after its `!`.
    let rules: String = rules
        .lines()
        .map(|l| {
            format!(
                "  {}\n",
                l.replace("\"files\": [\"", &format!("\"files\": [\"{prefix}"))
                    .replace(", \"!", &format!(", \"!{prefix}"))
            )
        })
        .collect();
    let mut text = format!(
        "---\nname: verify-{product}\ndescription: \"Check and keep {product}'s feature map honest: what it can do and the behaviour checks that prove it.\"\n---\n\n# Verify {product}\n\n\
         The feature map of {place} lives in `features/`: the map block and index in `features/README.md`, one file per \
         capability. `aayu verify --map` compares it with the source. {control}\n\n\
         When you change {product}:\n\n\
         1. Run `aayu verify --map` from the repository root and fix every drift line it prints: a new surface needs a \
         feature that claims it; a removed one must leave the map.\n\
         2. Add or update a behaviour check for the capability you touched. Never weaken a check to make it pass: a \
         failing check is a product bug until proven otherwise.\n\
         3. When the checks pass (`aayu verify --check <feature>`), set the feature's `verified_at` to the commit you verified.\n\n\
         ## Surface rules to enable\n\n\
         Suggested for {} (add them to the map block's `surfaces` as features land; each rule's pattern has one capture group):\n\n```json\n",
        stack.name()
    );
    text.push_str(&rules);
    text.push_str("```\n");
    let note = match stack {
        Stack::Rust => Some(
            "`!**/tests.rs` leaves out test modules kept in their own file; a `pub fn` inside a `#[cfg(test)] mod tests` block of another file is still matched (move the block to a `tests.rs`, or name such helpers without `pub`).",
        ),
        Stack::Go => Some(
            "The `func` rule leaves out tests (`_test.go`) and `testdata/`: they are no surface a user can reach.",
        ),
        Stack::Python => Some(
            "The `func` rule matches top-level functions of public names (`def parse(`, never `def _helper(`) and leaves out tests (`test_*.py`, `*_test.py`, `conftest.py`, `tests/`, `test/`); the `command` rule reads `[project.scripts]` entry points (`name = \"module:function\"`).",
        ),
        Stack::Node => Some(
            "The `func` and `route` rules leave out tests (`*.test.*`, `*.spec.*`, `__tests__/`): they are no surface a user can reach.",
        ),
        Stack::None => None,
    };
    if let Some(note) = note {
        text.push('\n');
        text.push_str(note);
        text.push('\n');
    }
    text
}

/// The stub of a repository whose stack aayu does not know: every check is blocked, saying why.
const STUB: &str = "#!/bin/sh\n\
# The control tool of this verify skill: a stub written by `aayu init --verify-skill`. It blocks every\n\
# check (a control tool that prints no result blocks its check) until it is replaced by one that runs the\n\
# check's steps and prints {\"status\", \"reason\", \"artifacts\"} (docs/behaviour-checks.md).\n\
echo \"replace this control tool: $0 is the stub aayu init wrote, and runs no check\" >&2\n\
exit 1\n";
