//! Python's harness files, read as data (no Python parser, nothing run): every `conftest.py` the change
//! adds, changes or removes; the keys of a pytest section that change what is collected or how it runs;
//! what runs at install (`setup.py`, `[build-system]` and its `backend-path` files, hatch's build hooks,
//! the package's own `pytest11` entry point); the interpreter's start-up files (`sitecustomize.py`,
//! `usercustomize.py`, a `.pth`); and a file that would be imported in place of pytest, pluggy or aayu's
//! plugin. See `docs/proof-packs.md#the-harness-floor`.

use std::collections::BTreeMap;

use crate::runners::harness::{Change, Diff, Kind, Read, Tree, line_of, text};

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

/// The top-level modules a pytest run imports (the standard library's among them, pytest, its
/// dependencies and aayu's plugin): a module of one of these names at the top of a package folder is
/// imported in their place (`python -m pytest` puts the folder first on `sys.path`).
const IMPORTED: &str = include_str!("imported.txt");

/// The files pytest reads its configuration from, in its order: the first of them in the folder of a
/// test (or any folder above it) that has a pytest section decides; `pytest.toml`, `.pytest.toml`,
/// `pytest.ini` and `.pytest.ini` decide even when empty.
const CONFIG_FILES: [&str; 7] = [
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];

/// Every Python harness change of the diff.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut found = Vec::new();
    let (backend, hooks) = build_code(diff);
    for path in diff.changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        let shadowed = shadows(diff, path);
        let startup_package = path
            .split('/')
            .rev()
            .skip(1)
            .any(|p| p == "sitecustomize" || p == "usercustomize");
        let read = |tree: &dyn Tree| text(tree, path, STACK, diff.cap);
        let (base, head) = match (read(diff.base), read(diff.head)) {
            (Ok(base), Ok(head)) => (base, head),
            (Err(finding), _) | (_, Err(finding)) => {
                // A `.pth` that is not text is a model's weights, never read by `site`.
                let pth = name.ends_with(".pth");
                if (is_harness_name(name) && !pth)
                    || shadowed.is_some()
                    || startup_package
                    || hooks.contains(path)
                {
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
            _ if name.ends_with(".pth")
                && (executes(base.as_deref()) || executes(head.as_deref())) =>
            {
                found.push(changed(
                    Kind::Startup,
                    "a .pth file: its `import` lines run at the interpreter's start-up",
                ));
            }
            "pyproject.toml" => found.extend(pyproject(path, base.as_deref(), head.as_deref())),
            "pytest.toml" | ".pytest.toml" => {
                found.extend(pytest_toml(path, name, base.as_deref(), head.as_deref()));
            }
            "pytest.ini" | ".pytest.ini" | "tox.ini" | "setup.cfg" => {
                found.extend(ini(path, name, base.as_deref(), head.as_deref()));
            }
            _ if name.ends_with(".py") => {
                found.extend(test_module_plugins(path, base.as_deref(), head.as_deref()));
            }
            _ => {}
        }
        if startup_package {
            found.push(changed(
                Kind::Startup,
                "a file of a `sitecustomize` / `usercustomize` package: the interpreter imports it at start-up",
            ));
        }
        if hooks.contains(path) {
            found.push(changed(
                Kind::Build,
                "a build hook the package's configuration names",
            ));
        }
        if let Some(module) = shadowed {
            found.push(changed(
                Kind::Shadow,
                &format!("`{module}`: imported in place of the `{module}` the test run imports"),
            ));
        }
        if head.is_some()
            && let Some(backend) = backend.iter().find(|b| b.holds(path))
        {
            found.push(changed(
                Kind::Build,
                &format!(
                    "a file of the build backend's `backend-path` (`{}`)",
                    if backend.dir.is_empty() {
                        "."
                    } else {
                        backend.dir.as_str()
                    }
                ),
            ));
        }
    }
    found
}

fn is_harness_name(name: &str) -> bool {
    matches!(
        name,
        "conftest.py" | "setup.py" | "hatch_build.py" | "sitecustomize.py" | "usercustomize.py"
    ) || CONFIG_FILES.contains(&name)
        || name.ends_with(".pth")
}

/// Whether a `.pth` file's text has a line `site` executes (`import …`, after a byte-order mark).
fn executes(text: Option<&str>) -> bool {
    text.is_some_and(|t| {
        t.lines().any(|l| {
            let l = l.trim_start_matches('\u{feff}');
            l.starts_with("import ") || l.starts_with("import\t")
        })
    })
}

/// A module's `pytest_plugins`: plugins pytest loads when it imports a test module (or one a test
/// module imports `*` from), whose hooks run for every test after it. Any line that names it, in any
/// Python file (a `python_files` setting may make any file a test module): only a change of those
/// lines counts.
fn test_module_plugins(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let lines = |text: Option<&str>| -> Vec<String> {
        text.unwrap_or("")
            .lines()
            .filter(|l| l.contains("pytest_plugins"))
            .map(str::to_string)
            .collect()
    };
    if lines(base) == lines(head) {
        return Vec::new();
    }
    vec![Change::new(
        path,
        line_of(head.unwrap_or(""), |l| l.contains("pytest_plugins")),
        STACK,
        Kind::Config,
        "`pytest_plugins`: plugins pytest loads with a test module",
    )]
}

/// A whole file added, changed or removed.
fn file_change(
    path: &str,
    base: Option<&str>,
    head: Option<&str>,
    kind: Kind,
    what: &str,
) -> Change {
    crate::runners::harness::whole_file(path, (base, head), STACK, kind, what)
}

/// The module a path would be imported as in place of one pytest imports: `<name>.py`, a byte-code or
/// extension module (`<name>.pyc`, `<name>.<tag>.so`), or a file of a package `<name>/` that has an
/// `__init__.py`, at the top of a package folder (the repository's root, or a folder with a Python
/// marker in either tree).
fn shadows(diff: &Diff, path: &str) -> Option<&'static str> {
    let (folder, rest) = top_of_package(diff, path);
    let module = match rest.split_once('/') {
        Some((first, _)) => {
            // A regular package: an `__init__` as source, byte code or an extension module.
            let package = crate::runners::join(folder, first);
            let init = diff.head.files_in(&package).into_iter().any(|f| {
                f.strip_prefix("__init__.").is_some_and(|ext| {
                    matches!(ext, "py" | "pyc" | "so" | "pyd") || ext.ends_with(".so")
                })
            }) || diff
                .head
                .has(&crate::runners::join(&package, "__init__.py"));
            init.then_some(first)?
        }
        // A link named as a module (`logging -> evil/`): it may be a package.
        None if !rest.contains('.') => {
            matches!(diff.head.read(path), Read::NotRegular).then_some(rest)?
        }
        None => {
            let (stem, ext) = rest.split_once('.')?;
            let module = matches!(ext, "py" | "pyc" | "pyd" | "so")
                || ext.ends_with(".so")
                || ext.ends_with(".pyd");
            module.then_some(stem)?
        }
    };
    IMPORTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|m| *m == module)
}

/// The package folder a path lies in (its nearest folder with a Python marker in either tree, or the
/// root) and the path within it.
fn top_of_package<'p>(diff: &Diff, path: &'p str) -> (&'p str, &'p str) {
    let mut folder = path.rsplit_once('/').map_or("", |(d, _)| d);
    loop {
        let is_package = folder.is_empty()
            || super::MARKERS.iter().any(|m| {
                let marker = crate::runners::join(folder, m);
                diff.head.has(&marker) || diff.base.has(&marker)
            });
        if is_package {
            let rest = if folder.is_empty() {
                path
            } else {
                &path[folder.len() + 1..]
            };
            return (folder, rest);
        }
        folder = folder.rsplit_once('/').map_or("", |(d, _)| d);
    }
}

/// A `backend-path` folder of the root's `pyproject.toml`: a file there is the build backend's own
/// code. At the root (`"."`) only the backend's module is (the rest of the root is the package).
struct BackendPath {
    /// The folder, from the repository's root.
    dir: String,
    /// Whether it is the package's own folder (`backend-path = ["."]`).
    root: bool,
    module: Option<String>,
}

impl BackendPath {
    fn holds(&self, path: &str) -> bool {
        let rest = if self.dir.is_empty() {
            path
        } else {
            match path.strip_prefix(&format!("{}/", self.dir)) {
                Some(rest) => rest,
                None => return false,
            }
        };
        !self.root
            || self.module.as_ref().is_some_and(|module| {
                rest == format!("{module}.py") || rest.starts_with(&format!("{module}/"))
            })
    }
}

/// The build's own code at the head: each `backend-path` folder (with the backend's module) of the
/// `pyproject.toml` of every folder at or above a changed file, and each file a hatch hook's `path`
/// names there (its default, `hatch_build.py`, is found by name).
fn build_code(diff: &Diff) -> (Vec<BackendPath>, std::collections::BTreeSet<String>) {
    let folders = crate::runners::harness::folders_above(diff.changed);
    let mut backends = Vec::new();
    let mut hooks = std::collections::BTreeSet::new();
    for folder in folders {
        let manifest = crate::runners::join(folder, "pyproject.toml");
        let Ok(Some(text)) = text(diff.head, &manifest, STACK, diff.cap) else {
            continue;
        };
        let Ok(table) = text.parse::<toml::Table>() else {
            continue;
        };
        let system = table.get("build-system");
        let module = system
            .and_then(|b| b.get("build-backend"))
            .and_then(toml::Value::as_str)
            .and_then(|b| b.split([':', '.']).next())
            .map(str::to_string);
        for dir in system
            .and_then(|b| b.get("backend-path"))
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_str)
        {
            let dir = dir.trim_start_matches("./").trim_end_matches('/');
            backends.push(BackendPath {
                dir: if dir == "." || dir.is_empty() {
                    folder.to_string()
                } else {
                    crate::runners::join(folder, dir)
                },
                root: dir == "." || dir.is_empty(),
                module: module.clone(),
            });
        }
        let hatch = toml_at(&table, &["tool", "hatch"]);
        let mut hook_tables: Vec<toml::Value> = Vec::new();
        if let Some(hatch) = &hatch {
            for keys in [&["build", "hooks"][..], &["metadata", "hooks"][..]] {
                let mut v = Some(hatch);
                for k in keys {
                    v = v.and_then(|v| v.get(k));
                }
                hook_tables.extend(v.cloned());
            }
            if let Some(targets) = hatch
                .get("build")
                .and_then(|b| b.get("targets"))
                .and_then(toml::Value::as_table)
            {
                hook_tables.extend(targets.values().filter_map(|t| t.get("hooks").cloned()));
            }
        }
        for table in hook_tables.iter().filter_map(toml::Value::as_table) {
            for hook in table.values() {
                if let Some(path) = hook.get("path").and_then(toml::Value::as_str) {
                    hooks.insert(crate::runners::join(folder, path.trim_start_matches("./")));
                }
            }
        }
    }
    (backends, hooks)
}

/// A TOML file's two tables (none for a missing file), or the finding that one does not parse.
fn toml_pair(
    path: &str,
    base: Option<&str>,
    head: Option<&str>,
) -> Result<(toml::Table, toml::Table), Change> {
    crate::runners::harness::parsed_pair(
        path,
        (base, head),
        (STACK, "TOML", "its test and build settings"),
        crate::runners::harness::toml_table,
    )
}

/// The value at a path of keys of a TOML table.
fn toml_at(table: &toml::Table, keys: &[&str]) -> Option<toml::Value> {
    let mut value = table.get(keys[0])?;
    for key in &keys[1..] {
        value = value.get(key)?;
    }
    Some(value.clone())
}

/// The line of a TOML or ini file where `key` is set (`key =` or `key:` at a line's start), or 1.
fn key_line(text: &str, key: &str) -> u32 {
    line_of(text, |l| {
        l.trim_start()
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with(['=', ':']))
    })
}

/// The tables of a `pyproject.toml` that change what runs at install or which plugins load, each
/// compared whole: its header's start, the kind and what it is.
const PYPROJECT_TABLES: [(&[&str], &str, Kind, &str); 11] = [
    (
        &["tool", "setuptools", "cmdclass"],
        "cmdclass",
        Kind::Build,
        "`[tool.setuptools] cmdclass`: commands that run at install",
    ),
    (
        &["tool", "setuptools", "dynamic"],
        "[tool.setuptools.dynamic",
        Kind::Build,
        "`[tool.setuptools.dynamic]`: an `attr:` is imported at install",
    ),
    (
        &["tool", "hatch", "metadata", "hooks"],
        "[tool.hatch.metadata",
        Kind::Build,
        "`[tool.hatch.metadata.hooks]`: a metadata hook that runs at install",
    ),
    (
        &["tool", "hatch", "version"],
        "[tool.hatch.version",
        Kind::Build,
        "`[tool.hatch.version]`: a version source that may run code at install",
    ),
    (
        &["build-system"],
        "[build-system]",
        Kind::Build,
        "`[build-system]`: the backend that runs at install",
    ),
    (
        &["tool", "hatch", "build"],
        "[tool.hatch.build",
        Kind::Build,
        "`[tool.hatch.build]`: what hatch's install runs and writes (hooks, force-include)",
    ),
    (
        &["tool", "setuptools", "data-files"],
        "[tool.setuptools",
        Kind::Build,
        "`[tool.setuptools] data-files`: files the install writes",
    ),
    (
        &["tool", "poetry", "build"],
        "[tool.poetry",
        Kind::Build,
        "`[tool.poetry] build`: a build script that runs at install",
    ),
    (
        &["tool", "pdm", "build"],
        "[tool.pdm.build",
        Kind::Build,
        "`[tool.pdm.build]`: what pdm's install runs and writes",
    ),
    (
        &["project", "entry-points", "pytest11"],
        "[project.entry-points",
        Kind::Config,
        "`[project.entry-points.pytest11]`: a pytest plugin the package installs",
    ),
    (
        &["tool", "poetry", "plugins", "pytest11"],
        "[tool.poetry.plugins",
        Kind::Config,
        "`[tool.poetry.plugins.pytest11]`: a pytest plugin the package installs",
    ),
];

/// A `pyproject.toml`'s harness tables, compared: the install's ([`PYPROJECT_TABLES`]), whether it
/// has a pytest section at all (it decides which file configures pytest), and the counted keys of
/// `[tool.pytest.ini_options]` / `[tool.pytest]`.
fn pyproject(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let (base_table, head_table) = match toml_pair(path, base, head) {
        Ok(tables) => tables,
        Err(finding) => return vec![finding],
    };
    let head_text = head.unwrap_or("");
    let header_line = |header: &str| line_of(head_text, |l| l.trim_start().starts_with(header));
    let mut found = Vec::new();
    for (keys, header, kind, what) in PYPROJECT_TABLES {
        if toml_at(&base_table, keys) != toml_at(&head_table, keys) {
            found.push(Change::new(path, header_line(header), STACK, kind, what));
        }
    }
    let has_section = |table: &toml::Table| toml_at(table, &["tool", "pytest"]).is_some();
    if has_section(&base_table) != has_section(&head_table) {
        found.push(Change::new(
            path,
            header_line("[tool.pytest"),
            STACK,
            Kind::Config,
            format!(
                "a pytest section {}: it decides which file configures pytest",
                if has_section(&head_table) {
                    "added"
                } else {
                    "removed"
                }
            ),
        ));
    }
    for (keys, header) in [
        (
            &["tool", "pytest", "ini_options"][..],
            "[tool.pytest.ini_options]",
        ),
        (&["tool", "pytest"][..], "[tool.pytest]"),
    ] {
        let section = |table: &toml::Table| -> BTreeMap<String, String> {
            toml_at(table, keys)
                .and_then(|v| v.as_table().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, v)| !(keys.len() == 2 && k == "ini_options" && v.is_table()))
                .map(|(k, v)| (k, v.to_string()))
                .collect()
        };
        for key in counted_changes(&section(&base_table), &section(&head_table)) {
            let line = key_line(head_text, &key);
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

/// A `pytest.toml` or `.pytest.toml`: it configures pytest even when empty (added or removed, it
/// decides which file does), and the counted keys of its `[pytest]` table.
fn pytest_toml(path: &str, name: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let (base_table, head_table) = match toml_pair(path, base, head) {
        Ok(tables) => tables,
        Err(finding) => return vec![finding],
    };
    let mut found = Vec::new();
    if base.is_some() != head.is_some() {
        found.push(decides(path, name, head.is_some()));
    }
    let section = |table: &toml::Table| -> BTreeMap<String, String> {
        toml_at(table, &["pytest"])
            .and_then(|v| v.as_table().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect()
    };
    let head_text = head.unwrap_or("");
    for key in counted_changes(&section(&base_table), &section(&head_table)) {
        found.push(Change::new(
            path,
            key_line(head_text, &key),
            STACK,
            Kind::Config,
            format!("pytest's `{key}` in `[pytest]`"),
        ));
    }
    found
}

/// A file that configures pytest whenever it is there, added or removed.
fn decides(path: &str, name: &str, added: bool) -> Change {
    Change::new(
        path,
        1,
        STACK,
        Kind::Config,
        format!(
            "{name} {}: it decides which file configures pytest",
            if added { "added" } else { "removed" }
        ),
    )
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

/// An ini file's pytest section (`[pytest]` in `pytest.ini`, `.pytest.ini` and `tox.ini`,
/// `[tool:pytest]` in `setup.cfg`), compared key by key. A `pytest.ini` or `.pytest.ini` added or
/// removed, or a section added to or removed from the others, changes which file configures pytest at
/// all (an empty one hides `pyproject.toml`'s settings). `setup.cfg`'s `[options.entry_points]`
/// `pytest11` and `[options.data_files]` count as `pyproject.toml`'s tables do.
fn ini(path: &str, name: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let header = if name == "setup.cfg" {
        "tool:pytest"
    } else {
        "pytest"
    };
    let mut found = Vec::new();
    let dedicated = matches!(name, "pytest.ini" | ".pytest.ini");
    if dedicated && base.is_some() != head.is_some() {
        found.push(decides(path, name, head.is_some()));
    }
    let (base, head) = (base.unwrap_or(""), head.unwrap_or(""));
    let (b, h) = (ini_section(base, header), ini_section(head, header));
    if !dedicated && b.is_some() != h.is_some() {
        found.push(Change::new(
            path,
            h.as_ref().map_or(1, |s| s.line),
            STACK,
            Kind::Config,
            format!(
                "a `[{header}]` section {}: it decides which file configures pytest",
                if h.is_some() { "added" } else { "removed" }
            ),
        ));
    }
    let (b, h) = (b.unwrap_or_default(), h.unwrap_or_default());
    for key in counted_changes(&b.values(), &h.values()) {
        found.push(Change::new(
            path,
            h.keys.get(&key).map_or(1, |(_, line)| *line),
            STACK,
            Kind::Config,
            format!("pytest's `{key}` in `[{header}]`"),
        ));
    }
    if name == "setup.cfg" {
        for (section, key, kind, what) in [
            (
                "options.entry_points",
                Some("pytest11"),
                Kind::Config,
                "`[options.entry_points] pytest11`: a pytest plugin the package installs",
            ),
            (
                "options.data_files",
                None,
                Kind::Build,
                "`[options.data_files]`: files the install writes",
            ),
            (
                "options",
                Some("cmdclass"),
                Kind::Build,
                "`[options] cmdclass`: commands that run at install",
            ),
        ] {
            let (b, h) = (ini_section(base, section), ini_section(head, section));
            let pick = |s: &Option<Section>| -> Option<BTreeMap<String, String>> {
                let values = s.as_ref()?.values();
                Some(match key {
                    Some(key) => values.into_iter().filter(|(k, _)| k == key).collect(),
                    None => values,
                })
            };
            if pick(&b) != pick(&h) {
                let line = match (key, &h) {
                    (Some(key), Some(s)) => s.keys.get(key).map_or(s.line, |(_, l)| *l),
                    (None, Some(s)) => s.line,
                    _ => 1,
                };
                found.push(Change::new(path, line, STACK, kind, what));
            }
        }
    }
    found
}

/// One section of an ini file: the line of its header, and its keys, each with its value
/// (continuation lines joined) and line.
#[derive(Default)]
struct Section {
    line: u32,
    keys: BTreeMap<String, (String, u32)>,
}

impl Section {
    fn values(&self) -> BTreeMap<String, String> {
        self.keys
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }
}

/// One section of an ini file as pytest's `iniconfig` reads it (a header's trailing `#` or `;`
/// comment dropped), or `None` when the file has no such section.
fn ini_section(text: &str, wanted: &str) -> Option<Section> {
    let mut found: Option<Section> = None;
    let mut inside = false;
    let mut last: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if trimmed.starts_with('[') {
            let header = trimmed.split(['#', ';']).next().unwrap_or("").trim_end();
            if let Some(section) = header.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                inside = section.trim() == wanted;
                if inside && found.is_none() {
                    found = Some(Section {
                        line: i as u32 + 1,
                        keys: BTreeMap::new(),
                    });
                }
                last = None;
                continue;
            }
        }
        let Some(section) = found.as_mut().filter(|_| inside) else {
            continue;
        };
        if line.starts_with([' ', '\t'])
            && let Some(key) = &last
        {
            if let Some((value, _)) = section.keys.get_mut(key) {
                value.push('\n');
                value.push_str(trimmed);
            }
            continue;
        }
        let (key, value) = trimmed
            .split_once(['=', ':'])
            .map_or((trimmed, ""), |(k, v)| (k.trim(), v.trim()));
        section
            .keys
            .insert(key.to_string(), (value.to_string(), i as u32 + 1));
        last = Some(key.to_string());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runners::harness::Read;

    struct Files(BTreeMap<String, Vec<u8>>);

    impl Tree for Files {
        fn files_in(&self, dir: &str) -> Vec<String> {
            self.0
                .keys()
                .filter_map(|p| {
                    let (folder, name) = p.rsplit_once('/').unwrap_or(("", p));
                    (folder == dir).then(|| name.to_string())
                })
                .collect()
        }

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
            &[
                ("tests/conftest.py", b"import os\n"),
                ("web/pyproject.toml", b""),
            ],
            &[
                ("tests/conftest.py", b"import os\nos._exit(0)\n"),
                ("conftest.py", b""),
                ("src/sitecustomize.py", b"x = 1\n"),
                ("a.pth", b"import x\n"),
                ("pytest.py", b""),
                ("_pytest/__init__.py", b""),
                ("json.pyc", b""),
                ("web/pyproject.toml", b""),
                ("web/inspect.cpython-311-x86_64-linux-gnu.so", b""),
                ("setup.py", b"setup()\n"),
                ("tests/test_x.py", b"def test(): pass\n"),
                ("tests/test_y.py", b"import x\npytest_plugins = ['evil']\n"),
            ],
        );
        insta::assert_snapshot!(found.join("\n"), @r"
        _pytest/__init__.py:1 shadow `_pytest`: imported in place of the `_pytest` the test run imports (added)
        a.pth:1 startup a .pth file: its `import` lines run at the interpreter's start-up (added)
        conftest.py:1 conftest a conftest: code pytest runs before any test of its folder (added)
        json.pyc:1 shadow `json`: imported in place of the `json` the test run imports (added)
        pytest.py:1 shadow `pytest`: imported in place of the `pytest` the test run imports (added)
        setup.py:1 build setup.py: code that runs at install (added)
        src/sitecustomize.py:1 startup a start-up file the interpreter runs before pytest (added)
        tests/conftest.py:2 conftest a conftest: code pytest runs before any test of its folder (changed)
        tests/test_y.py:2 config `pytest_plugins`: plugins pytest loads with a test module
        web/inspect.cpython-311-x86_64-linux-gnu.so:1 shadow `inspect`: imported in place of the `inspect` the test run imports (added)
        ");
    }

    #[test]
    fn a_module_of_a_name_pytest_imports_counts_only_at_the_top_of_a_package() {
        let found = scan(
            &[("pkg/setup.cfg", b"")],
            &[
                ("pkg/setup.cfg", b""),
                // A package of its own name, with an __init__.py, at a package's top: shadows.
                ("pkg/logging/__init__.py", b""),
                ("pkg/logging/handlers.py", b""),
                // A package whose `__init__` is byte code.
                ("pkg/re/__init__.pyc", b"\x00"),
                // A start-up package, anywhere; a model's weights and a path-only `.pth`: not run.
                ("pkg/src/sitecustomize/__init__.py", b""),
                ("pkg/tests/model.pth", b"\x80\x02"),
                ("pkg/paths.pth", b"/opt/x\n"),
                // Deeper, or a namespace folder, or a name pytest never imports: not.
                ("pkg/src/app/json.py", b""),
                ("pkg/tests/py/x.py", b""),
                ("html/page.py", b""),
                ("app.py", b""),
            ],
        );
        assert_eq!(
            found,
            [
                "pkg/logging/__init__.py:1 shadow `logging`: imported in place of the `logging` the test run imports (added)",
                "pkg/logging/handlers.py:1 shadow `logging`: imported in place of the `logging` the test run imports (added)",
                "pkg/re/__init__.pyc:1 shadow `re`: imported in place of the `re` the test run imports (added)",
                "pkg/src/sitecustomize/__init__.py:1 startup a file of a `sitecustomize` / `usercustomize` package: the interpreter imports it at start-up (added)",
            ]
        );
    }

    #[test]
    fn each_file_pytest_may_read_its_configuration_from_counts() {
        // pytest.toml and .pytest.ini decide even when empty; in any folder (pytest searches from each
        // test's folder upwards).
        assert_eq!(
            scan(&[], &[("tests/pytest.toml", b""), ("pkg/.pytest.ini", b"")]),
            [
                "pkg/.pytest.ini:1 config .pytest.ini added: it decides which file configures pytest",
                "tests/pytest.toml:1 config pytest.toml added: it decides which file configures pytest",
            ]
        );
        assert_eq!(
            scan(
                &[("pytest.toml", b"[pytest]\nminversion = '9'\n")],
                &[(
                    "pytest.toml",
                    b"[pytest]\nminversion = '9'\naddopts = ['-p', 'x']\n"
                )]
            ),
            ["pytest.toml:3 config pytest's `addopts` in `[pytest]`"]
        );
        // A section with only inert keys, added, hides a later file's settings.
        assert_eq!(
            scan(
                &[("pyproject.toml", b"[project]\nname = 'x'\n")],
                &[(
                    "pyproject.toml",
                    b"[project]\nname = 'x'\n[tool.pytest.ini_options]\nmarkers = ['a']\n"
                )]
            ),
            [
                "pyproject.toml:3 config a pytest section added: it decides which file configures pytest"
            ]
        );
        // A header's trailing comment does not hide the section (pytest's iniconfig drops it).
        assert_eq!(
            scan(
                &[("tox.ini", b"[pytest] # the tests\naddopts = -q\n")],
                &[("tox.ini", b"[pytest] # the tests\naddopts = -p evil\n")]
            ),
            ["tox.ini:2 config pytest's `addopts` in `[pytest]`"]
        );
        // A key is found at its own line, not at a longer key that starts the same.
        assert_eq!(
            scan(
                &[(
                    "pyproject.toml",
                    b"[tool.pytest.ini_options]\naddopts_x = 1\naddopts = '-q'\n"
                )],
                &[(
                    "pyproject.toml",
                    b"[tool.pytest.ini_options]\naddopts_x = 1\naddopts = '-x'\n"
                )]
            ),
            ["pyproject.toml:3 config pytest's `addopts` in `[tool.pytest.ini_options]`"]
        );
    }

    #[test]
    fn what_the_install_writes_and_the_plugins_it_declares_count() {
        let base =
            b"[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n  x = x:main\n";
        let head = b"[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n  x = x:main\npytest11 =\n  e = e\n";
        assert_eq!(
            scan(&[("setup.cfg", base)], &[("setup.cfg", head)]),
            [
                "setup.cfg:6 config `[options.entry_points] pytest11`: a pytest plugin the package installs"
            ]
        );
        let hatch = b"[tool.hatch.build.targets.wheel.force-include]\n'x.pth' = 'x.pth'\n";
        assert_eq!(
            scan(&[("pyproject.toml", b"")], &[("pyproject.toml", hatch)]),
            [
                "pyproject.toml:1 build `[tool.hatch.build]`: what hatch's install runs and writes (hooks, force-include)"
            ]
        );
        let poetry = b"[tool.poetry.plugins.pytest11]\ne = 'e'\n";
        assert_eq!(
            scan(&[("pyproject.toml", b"")], &[("pyproject.toml", poetry)]),
            [
                "pyproject.toml:1 config `[tool.poetry.plugins.pytest11]`: a pytest plugin the package installs"
            ]
        );
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
            [
                "setup.cfg:1 config a `[tool:pytest]` section added: it decides which file configures pytest",
                "setup.cfg:2 config pytest's `python_files` in `[tool:pytest]`",
            ]
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
        // At the root, only the backend's own module is the backend's code.
        let root = b"[build-system]\nbuild-backend = 'backend.hooks'\nbackend-path = ['.']\n";
        assert_eq!(
            scan(
                &[("pyproject.toml", root)],
                &[
                    ("pyproject.toml", root),
                    ("backend/hooks.py", b"x"),
                    ("app.py", b"x")
                ]
            ),
            ["backend/hooks.py:1 build a file of the build backend's `backend-path` (`.`) (added)"]
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
