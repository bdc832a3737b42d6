//! JavaScript's harness files, read as data (nothing run): a jest or vitest configuration file (it is
//! code the runner imports, so any change counts), `package.json`'s `jest` and `babel` keys, a babel
//! configuration, the files a configuration names as setup, reporters, transforms or environments,
//! `package.json`'s install-time scripts (`preinstall`, `install`, `postinstall`, `prepare`) of any
//! package of the tree, and a lock entry that gains `hasInstallScript`. See
//! `docs/proof-packs.md#the-harness-floor`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::runners::harness::{Change, Diff, Kind, Tree, text};
use crate::runners::join;

const STACK: &str = "js";

/// The install-time scripts npm runs (`npm rebuild` runs them before the seal).
const INSTALL_SCRIPTS: [&str; 4] = ["preinstall", "install", "postinstall", "prepare"];

/// The configuration keys whose value names code the runner loads into the test process.
const LOADING_KEYS: [&str; 14] = [
    "setupFiles",
    "setupFilesAfterEnv",
    "globalSetup",
    "globalTeardown",
    "reporters",
    "testResultsProcessor",
    "transform",
    "moduleNameMapper",
    "testEnvironment",
    "runner",
    "testRunner",
    "snapshotResolver",
    "pool",
    "environment",
];

/// A jest or vitest configuration file, by name (`jest.config.ts`, `vitest.workspace.mjs`), or vite's,
/// which vitest reads.
fn runner_config(name: &str) -> Option<&'static str> {
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let stem = stem.strip_suffix(".test").unwrap_or(stem);
    match stem {
        "jest.config" => Some("jest"),
        "vitest.config" | "vitest.workspace" | "vitest.projects" => Some("vitest"),
        "vite.config" => Some("vite"),
        _ => None,
    }
}

fn is_babel_config(name: &str) -> bool {
    name == ".babelrc"
        || name.starts_with(".babelrc.")
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, _)| stem == "babel.config")
}

/// Every JavaScript harness change of the diff.
pub fn changes(diff: &Diff) -> Vec<Change> {
    let mut found = Vec::new();
    let loaded = loaded_files(diff);
    for path in diff.changed {
        let name = path.rsplit('/').next().unwrap_or(path);
        let folder = path.rsplit_once('/').map_or("", |(d, _)| d);
        let read = |tree: &dyn Tree| text(tree, path, STACK, diff.cap);
        let named = runner_config(name).is_some()
            || is_babel_config(name)
            || name == "package.json"
            || name == "package-lock.json"
            || name == "npm-shrinkwrap.json"
            || loaded.contains_key(path.as_str());
        if !named {
            continue;
        }
        let (base, head) = match (read(diff.base), read(diff.head)) {
            (Ok(b), Ok(h)) => (b, h),
            (Err(finding), _) | (_, Err(finding)) => {
                found.push(finding);
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
        if let Some(runner) = runner_config(name) {
            // vite's configuration is vitest's only where the package runs vitest.
            if runner != "vite" || uses_vitest(diff, folder) {
                found.push(whole(
                    Kind::Config,
                    &format!(
                        "a {runner} configuration: code the test runner imports, and what it loads"
                    ),
                ));
            }
        } else if is_babel_config(name) {
            found.push(whole(
                Kind::Config,
                "a babel configuration: it transforms every test before it runs",
            ));
        } else if name == "package.json" {
            found.extend(package_json(path, base.as_deref(), head.as_deref()));
        } else if name == "package-lock.json" || name == "npm-shrinkwrap.json" {
            found.extend(lock(path, base.as_deref(), head.as_deref()));
        }
        if let Some(by) = loaded.get(path.as_str()) {
            found.push(whole(
                Kind::Setup,
                &format!("a file `{by}` names: the test runner loads it into the test process"),
            ));
        }
    }
    found
}

/// Whether the package of `folder` (its `package.json`, in either tree) names vitest.
fn uses_vitest(diff: &Diff, folder: &str) -> bool {
    let manifest = join(folder, "package.json");
    [diff.base, diff.head].iter().any(|tree| {
        text(*tree, &manifest, STACK, diff.cap)
            .ok()
            .flatten()
            .is_some_and(|t| t.contains("\"vitest\""))
    })
}

/// The files a runner's configuration names as code it loads (a relative path in a string of a
/// configuration file or of `package.json`'s `jest` key, in either tree), each with the file that
/// names it. A conservative text read: every `./…` or `<rootDir>/…` string of the configuration.
fn loaded_files(diff: &Diff) -> BTreeMap<String, String> {
    static PATH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"["'`](?:\./|<rootDir>/)([^"'`\s]+)["'`]"#).expect("a valid pattern")
    });
    // The configuration files of every folder at or above a changed file (its package's).
    let folders = crate::runners::harness::folders_above(diff.changed);
    let mut configs: BTreeSet<String> = BTreeSet::new();
    for dir in folders {
        for tree in [diff.base, diff.head] {
            for name in tree.files_in(dir) {
                if runner_config(&name).is_some() || name == "package.json" {
                    configs.insert(join(dir, &name));
                }
            }
        }
    }
    let mut found = BTreeMap::new();
    for config in configs {
        let folder = config.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        for tree in [diff.base, diff.head] {
            let Ok(Some(source)) = text(tree, &config, STACK, diff.cap) else {
                continue;
            };
            let source = if config.ends_with("package.json") {
                match serde_json::from_str::<Value>(&source) {
                    Ok(v) => v.get("jest").map(Value::to_string).unwrap_or_default(),
                    Err(_) => String::new(),
                }
            } else {
                source
            };
            if !LOADING_KEYS.iter().any(|k| source.contains(k)) {
                continue;
            }
            for capture in PATH.captures_iter(&source) {
                let rel = capture[1].trim_end_matches('/');
                if rel.split('/').any(|p| p == ".." || p.is_empty()) {
                    continue;
                }
                found
                    .entry(join(&folder, rel))
                    .or_insert_with(|| config.clone());
            }
        }
    }
    found
}

/// A `package.json`'s harness keys, compared: `jest` and `babel` (configuration), and each
/// install-time script.
fn package_json(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let (b, h) = match crate::runners::harness::parsed_pair(
        path,
        (base, head),
        (STACK, "JSON", "its test and install settings"),
        |t| serde_json::from_str::<Value>(t).map_err(|e| e.to_string()),
    ) {
        Ok(values) => values,
        Err(finding) => return vec![finding],
    };
    let head_text = head.unwrap_or("");
    let line = |key: &str| {
        crate::runners::harness::line_of(head_text, |l| l.contains(&format!("\"{key}\"")))
    };
    let mut found = Vec::new();
    for (key, what) in [
        ("jest", "`package.json`'s `jest`: jest's configuration"),
        (
            "babel",
            "`package.json`'s `babel`: it transforms every test before it runs",
        ),
    ] {
        if b.get(key) != h.get(key) {
            found.push(Change::new(path, line(key), STACK, Kind::Config, what));
        }
    }
    for script in INSTALL_SCRIPTS {
        let at = |v: &Value| v.pointer(&format!("/scripts/{script}")).cloned();
        if at(&b) != at(&h) {
            found.push(Change::new(
                path,
                line(script),
                STACK,
                Kind::Build,
                format!(
                    "the `{script}` script: it runs at install, before the tests and their seal"
                ),
            ));
        }
    }
    found
}

/// The lock's entries that run an install script (`hasInstallScript`), each the head adds.
fn lock(path: &str, base: Option<&str>, head: Option<&str>) -> Vec<Change> {
    let scripted = |t: &str| -> Result<BTreeSet<String>, String> {
        let v: Value = serde_json::from_str(t).map_err(|e| e.to_string())?;
        Ok(v.get("packages")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter(|(_, e)| e.get("hasInstallScript") == Some(&Value::Bool(true)))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default())
    };
    let (b, h) = match crate::runners::harness::parsed_pair(
        path,
        (base, head),
        (STACK, "JSON", "the install scripts it runs"),
        scripted,
    ) {
        Ok(sets) => sets,
        Err(finding) => return vec![finding],
    };
    let head_text = head.unwrap_or("");
    h.difference(&b)
        .map(|entry| {
            Change::new(
                path,
                crate::runners::harness::line_of(head_text, |l| l.contains(&format!("\"{entry}\""))),
                STACK,
                Kind::Build,
                format!("`{entry}` runs an install script (`hasInstallScript`): before the tests and their seal"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(base: &[(&str, &str)], head: &[(&str, &str)]) -> Vec<String> {
        crate::runners::harness::test_tree::scan(changes, base, head)
    }

    const PACKAGE: &str = "{\"name\": \"web\", \"scripts\": {\"build\": \"tsc\"}, \"devDependencies\": {\"vitest\": \"^3\"}}";

    #[test]
    fn a_runner_configuration_and_the_setup_it_names_are_the_harness() {
        let config = "export default { test: { setupFiles: ['./test/setup.ts'] } };\n";
        let found = scan(
            &[
                ("web/package.json", PACKAGE),
                ("web/vite.config.ts", config),
                ("web/test/setup.ts", "export {};\n"),
            ],
            &[
                ("web/package.json", PACKAGE),
                (
                    "web/vite.config.ts",
                    "import x from 'y';\nexport default { test: { setupFiles: ['./test/setup.ts'] } };\n",
                ),
                ("web/test/setup.ts", "process.on('exit', () => {});\n"),
                ("web/src/a.test.ts", "test('a', () => {});\n"),
            ],
        );
        assert_eq!(
            found,
            [
                "web/test/setup.ts:1 setup a file `web/vite.config.ts` names: the test runner loads it into the test process (changed)",
                "web/vite.config.ts:1 config a vite configuration: code the test runner imports, and what it loads (changed)",
            ]
        );
        // vite's configuration of a package that does not run vitest is the app's build.
        let jest = "{\"name\": \"web\", \"devDependencies\": {\"jest\": \"^30\"}}";
        assert!(
            scan(
                &[("web/package.json", jest), ("web/vite.config.ts", config)],
                &[
                    ("web/package.json", jest),
                    ("web/vite.config.ts", "export default {};\n")
                ],
            )
            .is_empty()
        );
    }

    #[test]
    fn install_scripts_configuration_keys_and_scripted_lock_entries_count() {
        let head = "{\n  \"name\": \"web\",\n  \"scripts\": {\n    \"build\": \"tsc\",\n    \"postinstall\": \"node patch.js\"\n  },\n  \"jest\": {\"reporters\": [\"default\"]}\n}\n";
        let base_lock = "{\"lockfileVersion\": 3, \"packages\": {\"\": {}, \"node_modules/a\": {\"version\": \"1.0.0\"}}}";
        let head_lock = "{\n\"lockfileVersion\": 3,\n\"packages\": {\"\": {},\n\"node_modules/a\": {\"version\": \"1.0.0\"},\n\"node_modules/evil\": {\"version\": \"1.0.0\", \"hasInstallScript\": true}}}";
        let found = scan(
            &[
                ("package.json", PACKAGE),
                ("package-lock.json", base_lock),
                (".babelrc", "{}"),
            ],
            &[
                ("package.json", head),
                ("package-lock.json", head_lock),
                (".babelrc", "{\"plugins\": [\"x\"]}"),
            ],
        );
        assert_eq!(
            found,
            [
                ".babelrc:1 config a babel configuration: it transforms every test before it runs (changed)",
                "package-lock.json:5 build `node_modules/evil` runs an install script (`hasInstallScript`): before the tests and their seal",
                "package.json:5 build the `postinstall` script: it runs at install, before the tests and their seal",
                "package.json:7 config `package.json`'s `jest`: jest's configuration",
            ]
        );
        // A script that does not run at install, and a dependency bump, are not the harness.
        let other = PACKAGE.replace("\"tsc\"", "\"tsc -b\"");
        assert!(scan(&[("package.json", PACKAGE)], &[("package.json", &other)]).is_empty());
    }
}
