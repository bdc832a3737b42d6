//! The `LAYERS.md` starter `aayu init` writes when the repository has none: the nine layers of the
//! registry (`crate::registry::LAYERS`: id, name, owner) with path globs for the stack found at the
//! repository's root, in the table the pack's `footprint` reads (a row naming `L01`…`L09`, its globs in
//! backticks).

use std::fmt::Write as _;

use super::skill::Stack;
use crate::registry::LAYERS;

/// Where the starter goes.
pub const PATH: &str = "LAYERS.md";

/// The globs of layer `id` for `stack`; `Stack::None` takes the registry's own, which mix the layouts.
fn globs(stack: Stack, id: &str) -> Vec<&'static str> {
    let common = match id {
        "L01" => Some(&["docs/specs/**", "stories/**", "**/*.ready.md"][..]),
        "L06" => Some(&[".agents/skills/**"][..]),
        "L07" => Some(&[".aayudha/config.toml", "LAYERS.md"][..]),
        _ => None,
    };
    if let Some(globs) = common {
        return globs.to_vec();
    }
    let by_stack: &[&str] = match (stack, id) {
        (Stack::Rust, "L02") => &["src/main.rs", "src/bin/**", "src/cli/**"],
        (Stack::Rust, "L03") => &["src/**", "crates/**"],
        (Stack::Rust, "L04") => &["migrations/**", "**/*.sql"],
        (Stack::Rust, "L05") => &[
            "tests/**",
            "benches/**",
            "**/testdata/**",
            ".aayudha/evidence/**",
        ],
        (Stack::Rust, "L08") => &[".github/**", "Dockerfile", ".ci/**"],
        (Stack::Rust, "L09") => &[
            "Cargo.toml",
            "Cargo.lock",
            "rust-toolchain.toml",
            "rust-toolchain",
        ],
        (Stack::Go, "L02") => &["cmd/**", "web/**", "ui/**"],
        (Stack::Go, "L03") => &["internal/**", "pkg/**", "*.go"],
        (Stack::Go, "L04") => &["migrations/**", "**/*.sql"],
        (Stack::Go, "L05") => &["**/*_test.go", "**/testdata/**", ".aayudha/evidence/**"],
        (Stack::Go, "L08") => &[".github/**", "Dockerfile", ".goreleaser.yaml", ".ci/**"],
        (Stack::Go, "L09") => &["go.mod", "go.sum"],
        (Stack::Python, "L02") => &["**/cli.py", "**/__main__.py", "**/templates/**"],
        (Stack::Python, "L03") => &["src/**", "lib/**"],
        (Stack::Python, "L04") => &["migrations/**", "alembic/**", "**/*.sql"],
        (Stack::Python, "L05") => &[
            "tests/**",
            "**/test_*.py",
            "**/*_test.py",
            "**/conftest.py",
            ".aayudha/evidence/**",
        ],
        (Stack::Python, "L08") => &[".github/**", "Dockerfile", ".ci/**"],
        (Stack::Python, "L09") => &[
            "pyproject.toml",
            "setup.cfg",
            "setup.py",
            "requirements*.txt",
            "poetry.lock",
            "uv.lock",
        ],
        (Stack::Node, "L02") => &[
            "bin/**",
            "app/**",
            "pages/**",
            "public/**",
            "src/pages/**",
            "src/routes/**",
        ],
        (Stack::Node, "L03") => &["src/**", "lib/**"],
        (Stack::Node, "L04") => &["migrations/**", "prisma/**", "**/*.sql"],
        (Stack::Node, "L05") => &[
            "test/**",
            "tests/**",
            "**/__tests__/**",
            "**/*.test.*",
            "**/*.spec.*",
            ".aayudha/evidence/**",
        ],
        (Stack::Node, "L08") => &[".github/**", "Dockerfile", ".ci/**"],
        (Stack::Node, "L09") => &[
            "package.json",
            "package-lock.json",
            "pnpm-lock.yaml",
            "yarn.lock",
            "tsconfig.json",
        ],
        _ => &[],
    };
    if by_stack.is_empty() {
        LAYERS
            .iter()
            .find(|l| l.id == id)
            .map_or_else(Vec::new, |l| l.globs.to_vec())
    } else {
        by_stack.to_vec()
    }
}

/// The starter for `stack`: a commented header, then one row per layer.
pub fn starter(stack: Stack) -> String {
    let mut text = String::from("# Layers\n\n");
    let found = match stack.markers().first() {
        Some(marker) => format!("for the {} stack ({marker} at the root)", stack.name()),
        None => "with the globs of several layouts (no stack found at the root)".to_string(),
    };
    let _ = writeln!(
        text,
        "<!-- Written by `aayu init` as a starter {found}; it is yours to edit."
    );
    text.push_str(
        "A proof pack's `footprint` lists the layers whose path globs (in backticks, on a layer's row)\n\
         match a file the change touched. Edit the globs to fit this repository's layout: add a folder,\n\
         remove what you do not have. Globs are matched from the repository's root; `*` stops at\n\
         `/`, `**` crosses it. `aayu doctor` says when no glob here matches any file. -->\n\n",
    );
    text.push_str("| layer | name | owner | paths |\n|---|---|---|---|\n");
    for l in LAYERS {
        let _ = writeln!(text, "{}", l.row(&globs(stack, l.id)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_starter_names_the_nine_layers_with_globs_that_compile() {
        for stack in [
            Stack::Rust,
            Stack::Go,
            Stack::Python,
            Stack::Node,
            Stack::None,
        ] {
            let text = starter(stack);
            for l in LAYERS {
                let row = text
                    .lines()
                    .find(|line| line.starts_with(&format!("| {} |", l.id)))
                    .expect("a row");
                let globs: Vec<&str> = row.split('`').skip(1).step_by(2).collect();
                assert!(!globs.is_empty(), "{row}");
                for g in globs {
                    crate::maps::glob::compile(g).expect("a glob");
                }
            }
            // The header names no layer id on a line of its own that the footprint would read as a row.
            assert_eq!(
                text.lines().filter(|line| line.contains("L0")).count(),
                9,
                "{text}"
            );
        }
    }
}
