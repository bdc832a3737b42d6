//! `aayu clean`: removes the build folders that local `verify --check` runs keep between runs
//! ([`crate::sandbox::build_cache`]): this repository's, or with `--all` every repository's. The gate
//! keeps none, so there is nothing of it to clean.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::floors::scan::mib;
use crate::sandbox::build_cache;

pub fn run(ctx: &mut Context, all: bool) -> Result<ExitStatus, Failure> {
    let roots = build_cache::roots(ctx.env);
    let (targets, whose): (Vec<PathBuf>, String) = if all {
        (roots, "any repository".to_string())
    } else {
        let repo = super::repo(ctx)?;
        let key = build_cache::repo_key(repo.root());
        (
            roots.iter().map(|r| r.join(&key)).collect(),
            format!(
                "`{}`",
                repo.root().components().collect::<PathBuf>().display()
            ),
        )
    };
    let mut text = String::new();
    for target in &targets {
        let Ok(meta) = std::fs::symlink_metadata(target) else {
            continue;
        };
        // A link in its place is removed as a link: what it points to is not aayu's.
        let size = if meta.is_dir() {
            build_cache::size(target)
        } else {
            0
        };
        let removed = if meta.is_dir() {
            std::fs::remove_dir_all(target)
        } else {
            std::fs::remove_file(target)
        };
        removed.map_err(|e| {
            Failure::new(
                ExitStatus::Failure,
                format!("cannot remove `{}`: {e}", target.display()),
            )
        })?;
        let _ = writeln!(text, "removed `{}` ({})", target.display(), mib(size));
    }
    if text.is_empty() {
        let _ = writeln!(
            text,
            "nothing to remove: no build folder is kept for {whose}"
        );
    }
    write_out(ctx.out, &text)?;
    Ok(ExitStatus::Ok)
}
