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

/// The allowed import directions (`docs/architecture.md`): only `src/commands/` and `src/cli.rs` import
/// `crate::commands`; `runners` imports neither `floors` nor `steps`; `steps` does not import `floors`.
/// Paths are matched (`crate::commands::…`, `crate::{…, commands, …}`), so `registry::commands`, another
/// module, is not one.
#[test]
fn stages_import_only_in_the_allowed_directions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path_of = |module: &str| {
        regex::Regex::new(&format!(
            r"\bcrate::{module}\b|\bcrate::\{{[^}}]*\b{module}\b"
        ))
        .expect("re")
    };
    // (files it holds, module they may not import)
    type Holds = fn(&str) -> bool;
    let rules: [(Holds, &str); 4] = [
        (
            |f: &str| {
                f != "src/commands.rs" && !f.starts_with("src/commands/") && f != "src/cli.rs"
            },
            "commands",
        ),
        (
            |f: &str| f == "src/runners.rs" || f.starts_with("src/runners/"),
            "floors",
        ),
        (
            |f: &str| f == "src/runners.rs" || f.starts_with("src/runners/"),
            "steps",
        ),
        (
            |f: &str| f == "src/steps.rs" || f.starts_with("src/steps/"),
            "floors",
        ),
    ];
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 50, "src/**/*.rs was read");
    let mut found = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(path).expect("read");
        for (holds, module) in &rules {
            if !holds(&rel) {
                continue;
            }
            let re = path_of(module);
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if re.is_match(code) {
                    found.push(format!(
                        "{rel}:{}: imports `crate::{module}`: {}",
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The rule is real: it finds an import of the kind it forbids.
    assert!(path_of("commands").is_match("use crate::commands::control::validate;"));
    assert!(path_of("commands").is_match("use crate::{maps, commands};"));
    assert!(!path_of("commands").is_match("use crate::registry::commands;"));
}
