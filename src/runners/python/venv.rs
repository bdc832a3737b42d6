//! A package's installed environment read as data, as the harness floor needs it (never run, never
//! imported): what it loads into every test process — each `pytest11` entry point and each executing
//! line of a `.pth` file, with the distribution whose `RECORD` lists it — each distribution's
//! requirements (to follow a changed requirement to the plugin it brought), and whether the installed
//! files of pytest and pluggy, and aayu's plugin, are what their records say (a `data_files` entry or a
//! build hook could overwrite them).
//!
//! A byte-code cache cannot be checked against a record (pip records none of its hashes): the tests run
//! with `PYTHONPYCACHEPREFIX` in a folder that cannot exist, so every module is compiled from its source.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::runners::harness::{Environment, Load};

/// The most of one metadata file read.
const META_CAP: u64 = 4 << 20;
/// The most of one checked file read.
const FILE_CAP: u64 = 64 << 20;
/// The distributions whose installed files must match their records: pytest and what it imports.
const CHECKED: [&str; 8] = [
    "pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "pygments",
    "exceptiongroup",
    "tomli",
    "colorama",
];

/// The environment of `env`'s venv (`VIRTUAL_ENV`), or `None` when it has none.
pub fn inspect(env: &[(String, OsString)], plugin: &str) -> Option<Environment> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let venv = PathBuf::from(var("VIRTUAL_ENV")?);
    let site = site_packages(&venv)?;
    let mut found = Environment::default();
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    let mut records: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for info in dist_infos(&site) {
        let meta = read_text(&site, &format!("{info}/METADATA"));
        let name = meta
            .lines()
            .find_map(|l| l.strip_prefix("Name:"))
            .map(|n| super::normalised(n.trim()))
            .unwrap_or_else(|| super::normalised(info.split('-').next().unwrap_or(&info)));
        let requires: Vec<String> = meta
            .lines()
            // An extra's requirement too: whether it was asked for, the install does not record, and
            // following one too many only matters for a distribution that is installed.
            .filter_map(|l| l.strip_prefix("Requires-Dist:"))
            .map(|r| super::normalised(super::requirement_name(r.trim())))
            .collect();
        found.requires.insert(name.clone(), requires);
        let record = read_text(&site, &format!("{info}/RECORD"));
        let rows: Vec<(String, String)> = record
            .lines()
            .filter_map(|l| {
                let mut parts = l.rsplitn(3, ',');
                let (_size, hash, path) = (parts.next()?, parts.next()?, parts.next()?);
                Some((path.trim_matches('"').to_string(), hash.to_string()))
            })
            .collect();
        for (path, _) in &rows {
            // A file of the test runner another distribution also lists: the later install wrote
            // over it (a namespace package's shared `__init__.py` elsewhere is no concern of ours).
            if let Some(first) = owners.insert(path.clone(), name.clone())
                && first != name
                && (CHECKED.contains(&first.as_str()) || CHECKED.contains(&name.as_str()))
            {
                found.overwritten.push(format!(
                    "`{path}` is listed by both `{first}` and `{name}`: one install wrote over the other's file"
                ));
            }
        }
        // Installed from a folder (the checkout: the pull request's own files), not from an index.
        let local = read_text(&site, &format!("{info}/direct_url.json"))
            .parse::<serde_json::Value>()
            .ok()
            .and_then(|v| v.get("url").and_then(|u| u.as_str()).map(str::to_string))
            .is_some_and(|url| url.starts_with("file:"));
        if local {
            found.local.insert(name.clone());
        }
        records.insert(name.clone(), rows);
        for line in section(
            &read_text(&site, &format!("{info}/entry_points.txt")),
            "pytest11",
        ) {
            found.loads.push(Load {
                distribution: Some(name.clone()),
                kind: "pytest11".into(),
                what: line,
            });
        }
    }
    for (file, line) in startup_lines(&site) {
        found.loads.push(Load {
            distribution: owners.get(&file).cloned(),
            kind: "pth".into(),
            what: format!("{file}: {line}"),
        });
    }
    for name in CHECKED {
        for (path, hash) in records.get(name).into_iter().flatten() {
            if let Some(why) = mismatch(&site, path, hash) {
                found.overwritten.push(format!("{name}'s `{path}` {why}"));
            }
        }
    }
    let own = var("AAYU_PYTEST_PLUGIN").map(PathBuf::from);
    let matches = own.is_some_and(|dir| {
        crate::safe_fs::read(&dir, "aayu_pytest.py", FILE_CAP).is_ok_and(|b| b == plugin.as_bytes())
    });
    if !matches {
        found
            .overwritten
            .push("aayu's pytest plugin is not the one aayu wrote".to_string());
    }
    Some(found)
}

/// `lib/python3.*/site-packages` of a venv.
fn site_packages(venv: &Path) -> Option<PathBuf> {
    let lib = venv.join("lib");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .collect();
    found.sort();
    found.into_iter().next()
}

/// The `*.dist-info` folders of site-packages, sorted.
fn dist_infos(site: &Path) -> Vec<String> {
    let mut infos: Vec<String> = std::fs::read_dir(site)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".dist-info"))
        .collect();
    infos.sort();
    infos
}

/// A file of site-packages as text (nothing when it is not a regular file, or too large).
fn read_text(site: &Path, rel: &str) -> String {
    crate::safe_fs::read(site, rel, META_CAP)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The `name = value` lines of one `[section]` of an ini-like file.
fn section(text: &str, wanted: &str) -> Vec<String> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == wanted;
        } else if inside && line.contains('=') {
            lines.push(line.to_string());
        }
    }
    lines
}

/// The lines Python's `site` module runs at start-up: a `.pth` line that starts with `import`, and a
/// `sitecustomize.py` or `usercustomize.py` of site-packages (its whole file).
fn startup_lines(site: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(site)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if name.ends_with(".pth") {
            for line in read_text(site, &name).lines() {
                // `site` reads a `.pth` as `utf-8-sig` (3.13): a byte-order mark before `import`.
                let line = line.trim_start_matches('\u{feff}');
                if line.starts_with("import ") || line.starts_with("import\t") {
                    found.push((name.clone(), line.trim().to_string()));
                }
            }
        } else if matches!(name.as_str(), "sitecustomize.py" | "usercustomize.py") {
            found.push((name.clone(), "(the whole file)".to_string()));
        }
    }
    found
}

/// Why an installed file does not match its `RECORD` row's `sha256=` (`None`: it matches, or the row
/// has no hash, or names a file outside site-packages).
fn mismatch(site: &Path, path: &str, hash: &str) -> Option<String> {
    let want = hash.strip_prefix("sha256=")?;
    if path.split('/').any(|p| p == "..") || path.starts_with('/') {
        return None;
    }
    match crate::safe_fs::read(site, path, FILE_CAP) {
        Ok(bytes) => {
            let got =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&bytes));
            (got != want).then(|| "does not match its RECORD hash".to_string())
        }
        Err(e) => Some(format!("cannot be read ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn venv(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        for (path, text) in files {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        }
        dir
    }

    fn hash(text: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
    }

    #[test]
    fn plugins_pth_lines_requirements_and_records_are_read_as_data() {
        let sp = "lib/python3.11/site-packages";
        let main = "def main(): pass\n";
        let record = format!(
            "_pytest/main.py,sha256={},17\npytest-9.2.0.dist-info/RECORD,,\n",
            hash(main)
        );
        let dir = venv(&[
            (&format!("{sp}/_pytest/main.py"), "import os; os._exit(0)\n"),
            (
                &format!("{sp}/pytest-9.2.0.dist-info/METADATA"),
                "Name: pytest\nRequires-Dist: pluggy>=1.5\nRequires-Dist: xmlschema; extra == \"dev\"\n",
            ),
            (&format!("{sp}/pytest-9.2.0.dist-info/RECORD"), &record),
            (
                &format!("{sp}/pytest_evil-1.0.dist-info/METADATA"),
                "Name: pytest_evil\n",
            ),
            (
                &format!("{sp}/pytest_evil-1.0.dist-info/RECORD"),
                "evil.pth,,\n",
            ),
            (
                &format!("{sp}/pytest_evil-1.0.dist-info/entry_points.txt"),
                "[console_scripts]\nx = y\n[pytest11]\nevil = evil_plugin\n",
            ),
            (
                &format!("{sp}/pytest_evil-1.0.dist-info/direct_url.json"),
                r#"{"url": "file:///work/checkout", "dir_info": {"editable": true}}"#,
            ),
            (&format!("{sp}/evil.pth"), "/some/path\nimport evil_start\n"),
            (
                &format!("{sp}/other-1.0.dist-info/RECORD"),
                "_pytest/main.py,,\nshared/__init__.py,,\n",
            ),
            (
                &format!("{sp}/third-1.0.dist-info/RECORD"),
                "shared/__init__.py,,\n",
            ),
            ("plugin/aayu_pytest.py", "mine"),
        ]);
        let env = vec![
            ("VIRTUAL_ENV".to_string(), dir.path().as_os_str().to_owned()),
            (
                "AAYU_PYTEST_PLUGIN".to_string(),
                dir.path().join("plugin").into_os_string(),
            ),
        ];
        let found = inspect(&env, "mine").expect("a venv");
        let loads: Vec<String> = found
            .loads
            .iter()
            .map(|l| format!("{:?} {} {}", l.distribution, l.kind, l.what))
            .collect();
        assert_eq!(
            loads,
            [
                "Some(\"pytest-evil\") pytest11 evil = evil_plugin",
                "Some(\"pytest-evil\") pth evil.pth: import evil_start",
            ]
        );
        assert_eq!(found.requires["pytest"], ["pluggy", "xmlschema"]);
        assert_eq!(found.local.iter().collect::<Vec<_>>(), ["pytest-evil"]);
        // A file of pytest's another install also lists, and one whose hash is not its record's; a
        // namespace package's shared file is no concern.
        assert_eq!(
            found.overwritten,
            [
                "`_pytest/main.py` is listed by both `other` and `pytest`: one install wrote over the other's file",
                "pytest's `_pytest/main.py` does not match its RECORD hash",
            ]
        );
        let other = inspect(&env, "another plugin").expect("a venv");
        assert!(
            other
                .overwritten
                .iter()
                .any(|o| o.contains("aayu's pytest plugin"))
        );
    }
}
