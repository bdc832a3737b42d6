//! `aayu install`: makes the verify skills visible to the agent apps that do not read
//! `.agents/skills/` themselves. Claude Code gets a pointer command per root `verify-*` skill,
//! `.claude/commands/aayudha/verify-<product>.md` (it runs as `/aayudha:verify-<product>`), carrying the
//! skill's description and sending Claude Code to the skill's `SKILL.md` — so it follows the skill without a
//! re-sync; Cursor gets one rule, `.cursor/rules/aayudha-verify.mdc`, listing each verify skill once. Amp
//! and Codex read `.agents/skills/` as it is. Running it again changes nothing unless a skill changed.

use std::fmt::Write as _;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::setup::pointers::{pointer, skills};

pub fn run(ctx: &mut Context) -> Result<ExitStatus, Failure> {
    let repo = crate::commands::repo(ctx)?;
    let root = repo.root().to_path_buf();
    let listed = repo
        .worktree_files()
        .map_err(|e| Failure::unexpected("cannot list the repository's files").caused_by(e))?;
    let skills = skills(&root, &listed.files);
    let mut report = String::new();
    if skills.is_empty() {
        write_out(
            ctx.out,
            "no verify skill found (.agents/skills/verify-<product>/): nothing to install; `aayu init --verify-skill` writes one\n",
        )?;
        return Ok(ExitStatus::Ok);
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for skill in &skills {
        if !skill.root {
            let _ = writeln!(
                report,
                "no Claude Code pointer for {} (a nested skill: Claude Code runs only the repository root's as commands; open {}/SKILL.md there)",
                skill.dir, skill.dir
            );
            continue;
        }
        files.push(pointer(skill));
    }
    let mut rule = String::from(
        "---\ndescription: \"aayudha verify skills: keep each product's feature map and behaviour checks honest\"\nalwaysApply: false\n---\n\nWhen you change a product below, follow its verify skill (read its SKILL.md first), then run `aayu verify --map` from the repository root.\n\n",
    );
    for skill in &skills {
        let _ = writeln!(
            rule,
            "- `{}/SKILL.md` — {}",
            skill.dir,
            skill.description.replace('\n', " ")
        );
    }
    files.push((".cursor/rules/aayudha-verify.mdc".to_string(), rule));
    for (path, text) in &files {
        let current = crate::safe_fs::read(&root, path, 1 << 20).ok();
        if current.as_deref() == Some(text.as_bytes()) {
            let _ = writeln!(report, "unchanged {path}");
            continue;
        }
        crate::safe_fs::write(&root, path, text.as_bytes())
            .map_err(|e| Failure::unexpected(format!("cannot write `{path}`: {e}")))?;
        let verb = if current.is_some() {
            "updated  "
        } else {
            "wrote    "
        };
        let _ = writeln!(report, "{verb} {path}");
    }
    write_out(ctx.out, &report)?;
    Ok(ExitStatus::Ok)
}
