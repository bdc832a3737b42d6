//! Python's harness files, read as data (no Python parser, nothing run): every `conftest.py` the change
//! adds, changes or removes; the keys of a pytest section that change what is collected or how it runs;
//! what runs at install (`setup.py`, `[build-system]` and its `backend-path` files, hatch's build hooks,
//! the package's own `pytest11` entry point); the interpreter's start-up files (`sitecustomize.py`,
//! `usercustomize.py`, a `.pth`); and a file that would be imported in place of pytest, pluggy or aayu's
//! plugin. See `docs/proof-packs.md#the-harness-floor`.

use std::collections::BTreeMap;

use crate::runners::harness::{Change, Diff, Kind, Tree, first_difference, line_of, text};

const STACK: &str = "python";

/// The pytest keys that change nothing about which tests run or how they end (a marker's description,
/// the oldest pytest allowed, how output and logs look): every other key of a pytest section counts,
/// an unknown one included (a plugin's).
const INERT_KEYS: [&str; 26] = [
    "markers",
    "minversion",
    "console_output_style",
    "log_auto_indent",
    "log_cli",
    "log_cli_date_format",
    "log_cli_format",
    "log_cli_level",
    "log_date_format",
    "log_file",
    "log_file_date_format",
    "log_file_format",
    "log_file_level",
    "log_file_mode",
    "log_format",
    "log_level",
    "junit_duration_report",
    "junit_family",
    "junit_log_passing_tests",
    "junit_logging",
    "junit_suite_name",
    "cache_dir",
    "truncation_limit_chars",
    "truncation_limit_lines",
    "verbosity_assertions",
    "verbosity_test_cases",
];

/// The modules a file of the tree would replace on `sys.path` (pytest's own, its hook library, aayu's
/// plugin): as `<name>.py` or a folder `<name>/`.
const SHADOWED: [&str; 5] = ["pytest", "_pytest", "pluggy", "py", "aayu_pytest"];

/// Every Python harness change of the diff.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut found = Vec::new();
    let backend_paths = backend_paths(diff.head, diff.cap);
    for path in diff.changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        let read = |tree: &dyn Tree| text(tree, path, STACK, diff.cap);
        let (base, head) = match (read(diff.base), read(diff.head)) {
            (Ok(base), Ok(head)) => (base, head),
            (Err(finding), _) | (_, Err(finding)) => {
                if is_harness_name(path, name) {
                    found.push(finding);
                }
                continue;
            }
        };
        let changed = |kind: Kind, what: &str| {
            file_change(path, base.as_deref(), head.as_deref(), kind, what)
        };
        match name {
            "conftest.py" => found.push(changed(
                Kind::Conftest,
                "a conftest: code pytest runs before any test of its folder",
            )),
            "setup.py" => found.push(changed(Kind::Build, "setup.py: code that runs at install")),
            "hatch_build.py" => found.push(changed(Kind::Build, "a hatch build hook")),
            "sitecustomize.py" | "usercustomize.py" => found.push(changed(
                Kind::Startup,
                "a start-up file the interpreter runs before pytest",
            )),
            _ if name.ends_with(".pth") => found.push(changed(
                Kind::Startup,
                "a .pth file: its `import` lines run at the interpreter's start-up",
            )),
            "pyproject.toml" => found.extend(pyproject(path, base.as_deref(), head.as_deref())),
            "pytest.ini" | "tox.ini" | "setup.cfg" => {
                found.extend(ini(path, name, base.as_deref(), head.as_deref()));
            }
            _ => {}
        }
        if let Some(module) = shadows(path) {
            found.push(changed(
                Kind::Shadow,
                &format!("`{module}`: imported in place of the installed `{module}`"),
            ));
        }
        if head.is_some()
            && let Some(dir) = backend_paths.iter().find(|d| within(d, path))
        {
            found.push(changed(
                Kind::Build,
                &format!("a file of the build backend's `backend-path` (`{dir}`)"),
            ));
        }
    }
    found
}

fn is_harness_name(path: &str, name: &str) -> bool {
    matches!(
        name,
        "conftest.py"
            | "setup.py"
            | "hatch_build.py"
            | "sitecustomize.py"
            | "usercustomize.py"
            | "pyproject.toml"
            | "pytest.ini"
            | "tox.ini"
            | "setup.cfg"
    ) || name.ends_with(".pth")
        || shadows(path).is_some()
}

/// A whole file added, changed or removed: where the head's first changed line is.
fn file_change(
    path: &str,
    base: Option<&str>,
    head: Option<&str>,
    kind: Kind,
    what: &str,
) -> Change {
    let (line, how) = match (base, head) {
        (None, _) => (1, "added"),
        (Some(_), None) => (1, "removed"),
        (Some(b), Some(h)) => (first_difference(b, h), "changed"),
    };
    Change::new(path, line, STACK, kind, format!("{what} ({how})"))
}

/// The module a path would be imported as in place of pytest's own (`pytest.py`, `_pytest/…`).
fn shadows(path: &str) -> Option<&'static str> {
    let parts: Vec<&str> = path.split('/').collect();
    let (name, dirs) = parts.split_last()?;
    SHADOWED
        .iter()
        .copied()
        .find(|m| dirs.contains(m) && name.ends_with(".py") || *name == format!("{m}.py"))
}

fn within(dir: &str, path: &str) -> bool {
    dir.is_empty() || path.starts_with(&format!("{dir}/"))
}

/// The head's `backend-path` folders of every `pyproject.toml` it changed or not: a file there is the
/// build backend's own code. Only the root's is read (a nested package's backend path is rare, and its
/// `pyproject.toml`'s `[build-system]` change is found on its own).
fn backend_paths(head: &dyn Tree, cap: u64) -> Vec<String> {
    let Ok(Some(text)) = text(head, "pyproject.toml", STACK, cap) else {
        return Vec::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    table
        .get("build-system")
        .and_then(|b| b.get("backend-path"))
        .and_then(toml::Value::as_array)
        .map(|dirs| {
            dirs.iter()
                .filter_map(toml::Value::as_str)
                .map(|d| d.trim_start_matches("./").trim_end_matches('/').to_string())
                .map(|d| if d == "." { String::new() } else { d })
                .collect()
        })
        .unwrap_or_default()
}

/// A `pyproject.toml`'s harness tables, compared: `[build-system]`, hatch's build hooks, the project's
/// own `pytest11` entry point, and the counted keys of `[tool.pytest.ini_options]` / `[tool.pytest]`.
fn pyproject(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let parse = |text: Option<&str>| -> Result<toml::Table, String> {
        match text {
            None => Ok(toml::Table::new()),
            Some(t) => t
                .parse::<toml::Table>()
                .map_err(|e| e.message().to_string()),
        }
    };
    let (base_table, head_table) = match (parse(base), parse(head)) {
        (Ok(b), Ok(h)) => (b, h),
        (_, Err(why)) | (Err(why), _) => {
            return vec![Change::new(
                path,
                1,
                STACK,
                Kind::Unreadable,
                format!(
                    "does not parse as TOML ({why}): its test and build settings may be anything"
                ),
            )];
        }
    };
    let at = |keys: &[&str], table: &toml::Table| -> Option<toml::Value> {
        let mut value = table.get(keys[0])?;
        for key in &keys[1..] {
            value = value.get(key)?;
        }
        Some(value.clone())
    };
    let head_text = head.unwrap_or("");
    let header_line = |header: &str| line_of(head_text, |l| l.trim_start().starts_with(header));
    let mut found = Vec::new();
    for (keys, header, kind, what) in [
        (
            &["build-system"][..],
            "[build-system]",
            Kind::Build,
            "`[build-system]`: the backend that runs at install",
        ),
        (
            &["tool", "hatch", "build", "hooks"][..],
            "[tool.hatch.build",
            Kind::Build,
            "`[tool.hatch.build.hooks]`: a build hook that runs at install",
        ),
        (
            &["project", "entry-points", "pytest11"][..],
            "[project.entry-points",
            Kind::Config,
            "`[project.entry-points.pytest11]`: a pytest plugin the package installs",
        ),
    ] {
        if at(keys, &base_table) != at(keys, &head_table) {
            found.push(Change::new(path, header_line(header), STACK, kind, what));
        }
    }
    for (keys, header) in [
        (
            &["tool", "pytest", "ini_options"][..],
            "[tool.pytest.ini_options]",
        ),
        (&["tool", "pytest"][..], "[tool.pytest]"),
    ] {
        let section = |table: &toml::Table| -> BTreeMap<String, String> {
            at(keys, table)
                .and_then(|v| v.as_table().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, v)| !(keys.len() == 2 && k == "ini_options" && v.is_table()))
                .map(|(k, v)| (k, v.to_string()))
                .collect()
        };
        for key in counted_changes(&section(&base_table), &section(&head_table)) {
            let line = line_of(head_text, |l| {
                l.trim_start().starts_with(&key) && l[l.find(&key).unwrap_or(0)..].contains('=')
            });
            let line = if line == 1 { header_line(header) } else { line };
            found.push(Change::new(
                path,
                line,
                STACK,
                Kind::Config,
                format!("pytest's `{key}` in `{header}`"),
            ));
        }
    }
    found
}

/// The keys of a pytest section whose value the change adds, changes or removes, inert ones left out.
fn counted_changes(
    base: &BTreeMap<String, String>,
    head: &BTreeMap<String, String>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = base.keys().chain(head.keys()).collect();
    keys.into_iter()
        .filter(|k| base.get(*k) != head.get(*k))
        .filter(|k| !INERT_KEYS.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// An ini file's pytest section (`[pytest]` in `pytest.ini` and `tox.ini`, `[tool:pytest]` in
/// `setup.cfg`), compared key by key. A `pytest.ini` added or removed changes which file configures
/// pytest at all (an empty one hides `pyproject.toml`'s settings).
fn ini(path: &str, name: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let header = if name == "setup.cfg" {
        "tool:pytest"
    } else {
        "pytest"
    };
    let mut found = Vec::new();
    if name == "pytest.ini" && base.is_some() != head.is_some() {
        found.push(Change::new(
            path,
            1,
            STACK,
            Kind::Config,
            format!(
                "pytest.ini {}: it decides which file configures pytest",
                if head.is_some() { "added" } else { "removed" }
            ),
        ));
    }
    let (b, h) = (
        ini_section(base.unwrap_or(""), header),
        ini_section(head.unwrap_or(""), header),
    );
    for key in counted_changes(
        &b.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect(),
        &h.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect(),
    ) {
        let line = h.get(&key).map_or(1, |(_, line)| *line);
        found.push(Change::new(
            path,
            line,
            STACK,
            Kind::Config,
            format!("pytest's `{key}` in `[{header}]`"),
        ));
    }
    found
}

/// The keys of one section of an ini file, each with its value (continuation lines joined) and line.
fn ini_section(text: &str, wanted: &str) -> BTreeMap<String, (String, u32)> {
    let mut keys: BTreeMap<String, (String, u32)> = BTreeMap::new();
    let mut inside = false;
    let mut last: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(section) = trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            inside = section.trim() == wanted;
            last = None;
            continue;
        }
        if !inside {
            continue;
        }
        if line.starts_with([' ', '\t'])
            && let Some(key) = &last
        {
            if let Some((value, _)) = keys.get_mut(key) {
                value.push('\n');
                value.push_str(trimmed);
            }
            continue;
        }
        let (key, value) = trimmed
            .split_once(['=', ':'])
            .map_or((trimmed, ""), |(k, v)| (k.trim(), v.trim()));
        keys.insert(key.to_string(), (value.to_string(), i as u32 + 1));
        last = Some(key.to_string());
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runners::harness::Read;

    struct Files(BTreeMap<String, Vec<u8>>);

    impl Tree for Files {
        fn read(&self, path: &str) -> Read {
            match self.0.get(path) {
                Some(b) if b.len() > 128 => Read::TooLarge(b.len() as u64),
                Some(b) => Read::Bytes(b.clone()),
                None => Read::Missing,
            }
        }
    }

    fn files(list: &[(&str, &[u8])]) -> Files {
        Files(
            list.iter()
                .map(|(p, b)| (p.to_string(), b.to_vec()))
                .collect(),
        )
    }

    fn scan(base: &[(&str, &[u8])], head: &[(&str, &[u8])]) -> Vec<String> {
        let (b, h) = (files(base), files(head));
        let mut changed: Vec<String> = b.0.keys().chain(h.0.keys()).cloned().collect();
        changed.sort();
        changed.dedup();
        changed.retain(|p| b.0.get(p) != h.0.get(p));
        let diff = Diff {
            changed: &changed,
            base: &b,
            head: &h,
            cap: 128,
        };
        changes(&diff)
            .iter()
            .map(|c| format!("{}:{} {} {}", c.file, c.line, c.kind.as_str(), c.what))
            .collect()
    }

    #[test]
    fn conftests_startup_files_and_shadows_are_harness_files() {
        let found = scan(
            &[("tests/conftest.py", b"import os\n")],
            &[
                ("tests/conftest.py", b"import os\nos._exit(0)\n"),
                ("conftest.py", b""),
                ("src/sitecustomize.py", b"x = 1\n"),
                ("a.pth", b"import x\n"),
                ("pytest.py", b""),
                ("_pytest/x.py", b""),
                ("setup.py", b"setup()\n"),
                ("tests/test_x.py", b"def test(): pass\n"),
            ],
        );
        insta::assert_snapshot!(found.join("\n"), @r"
        _pytest/x.py:1 shadow `_pytest`: imported in place of the installed `_pytest` (added)
        a.pth:1 startup a .pth file: its `import` lines run at the interpreter's start-up (added)
        conftest.py:1 conftest a conftest: code pytest runs before any test of its folder (added)
        pytest.py:1 shadow `pytest`: imported in place of the installed `pytest` (added)
        setup.py:1 build setup.py: code that runs at install (added)
        src/sitecustomize.py:1 startup a start-up file the interpreter runs before pytest (added)
        tests/conftest.py:2 conftest a conftest: code pytest runs before any test of its folder (changed)
        ");
    }

    #[test]
    fn only_the_keys_that_change_a_run_count() {
        let base =
            b"[project]\nname='x'\n[tool.pytest.ini_options]\nmarkers = ['a']\naddopts = '-q'\n";
        let markers = b"[project]\nname='x'\n[tool.pytest.ini_options]\nmarkers = ['a','b']\naddopts = '-q'\n";
        assert!(scan(&[("pyproject.toml", base)], &[("pyproject.toml", markers)]).is_empty());
        let addopts =
            b"[project]\nname='x'\n[tool.pytest.ini_options]\nmarkers = ['a']\naddopts = '-p x'\n";
        assert_eq!(
            scan(&[("pyproject.toml", base)], &[("pyproject.toml", addopts)]),
            ["pyproject.toml:5 config pytest's `addopts` in `[tool.pytest.ini_options]`"]
        );
        let ini_base = b"[pytest]\nmarkers =\n  a: one\naddopts = -q\n";
        let ini_head = b"[pytest]\nmarkers =\n  a: one\n  b: two\naddopts = -q\n";
        assert!(scan(&[("pytest.ini", ini_base)], &[("pytest.ini", ini_head)]).is_empty());
        let cfg = b"[tool:pytest]\npython_files = check_*.py\n";
        assert_eq!(
            scan(
                &[("setup.cfg", b"[metadata]\nname = x\n")],
                &[("setup.cfg", cfg)]
            ),
            ["setup.cfg:2 config pytest's `python_files` in `[tool:pytest]`"]
        );
        assert_eq!(
            scan(&[], &[("pkg/pytest.ini", b"")]),
            ["pkg/pytest.ini:1 config pytest.ini added: it decides which file configures pytest"]
        );
    }

    #[test]
    fn the_build_backend_and_its_hooks_count() {
        let base = b"[build-system]\nrequires = ['setuptools']\n";
        let head = b"[build-system]\nrequires = ['setuptools']\nbackend-path = ['_b']\n";
        assert_eq!(
            scan(
                &[("pyproject.toml", base)],
                &[("pyproject.toml", head), ("_b/backend.py", b"")]
            ),
            [
                "_b/backend.py:1 build a file of the build backend's `backend-path` (`_b`) (added)",
                "pyproject.toml:1 build `[build-system]`: the backend that runs at install",
            ]
        );
    }

    #[test]
    fn what_cannot_be_read_is_a_finding() {
        let found = scan(
            &[],
            &[
                ("conftest.py", b"\xff\xfe"),
                ("tests/conftest.py", &[b'#'; 129]),
                ("pyproject.toml", b"[tool.pytest\n"),
                ("notes.txt", b"\xff"),
            ],
        );
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].starts_with("conftest.py:1 unreadable not valid UTF-8"),
            "{found:?}"
        );
        assert!(found[1].starts_with("pyproject.toml:1 unreadable does not parse as TOML"));
        assert!(found[2].contains("129 bytes, more than `[verify] harness_scan_bytes` (128)"));
    }
}
