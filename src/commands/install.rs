//! `aayu install`: makes the verify skills visible to the agent apps that do not read
//! `.agents/skills/` themselves. Claude Code gets a pointer command per root `verify-*` skill,
//! `.claude/commands/aayudha/verify-<product>.md` (it runs as `/aayudha:verify-<product>`), carrying the
//! skill's description and sending Claude Code to the skill's `SKILL.md` — so it follows the skill without a
//! re-sync; Cursor gets one rule, `.cursor/rules/aayudha-verify.mdc`, listing each verify skill once. Amp
//! and Codex read `.agents/skills/` as it is. It also registers `aayu mcp` — read-only, no GitHub token —
//! where Claude Code and Cursor read a project's MCP servers (`.mcp.json`, `.cursor/mcp.json`; see
//! `setup/mcp_registration.rs`), skills or not, and prints the entries Codex and Amp keep in the home
//! folder, which it never writes. Running it again changes nothing unless a skill or a registration changed.

use std::fmt::Write as _;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::setup::mcp_registration;
use crate::setup::pointers::{pointer, skills};

pub fn run(ctx: &mut Context) -> Result<ExitStatus, Failure> {
    let repo = crate::commands::repo(ctx)?;
    let root = repo.root().to_path_buf();
    let listed = repo
        .worktree_files()
        .map_err(|e| Failure::unexpected("cannot list the repository's files").caused_by(e))?;
    let skills = skills(&root, &listed.files);
    // The registrations first: a file that cannot be merged into stops install before it writes anything.
    let registrations = mcp_registration::HOSTS
        .into_iter()
        .map(|host| mcp_registration::plan(&root, host))
        .collect::<Result<Vec<_>, _>>()
        .map_err(refused)?;
    let mut report = String::new();
    let mut files: Vec<(String, String)> = Vec::new();
    if skills.is_empty() {
        report.push_str(
            "no verify skill found (.agents/skills/verify-<product>/): no Claude Code command or Cursor rule to write; `aayu init --verify-skill` writes one\n",
        );
    } else {
        pointer_files(&skills, &mut files, &mut report);
    }
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
    for plan in &registrations {
        let path = plan.host.path;
        let written = mcp_registration::write(&root, plan)
            .map_err(|e| Failure::unexpected(format!("cannot write `{path}`")).caused_by(e))?;
        let verb = match (written, plan.existed) {
            (false, _) => "unchanged",
            (true, true) => "updated  ",
            (true, false) => "wrote    ",
        };
        let _ = write!(report, "{verb} {path}");
        if !plan.dropped.is_empty() {
            let _ = write!(
                report,
                " ({} left out: a committed registration runs on every contributor's machine; docs/setup.md)",
                plan.dropped.join(" and ")
            );
        }
        report.push('\n');
    }
    report.push('\n');
    report.push_str(&mcp_registration::home_snippets());
    write_out(ctx.out, &report)?;
    Ok(ExitStatus::Ok)
}

/// A host's file install cannot merge into: exit 2 (1 when it could not be read at all), with how to
/// fix it.
fn refused(e: mcp_registration::RegistrationError) -> Failure {
    let status = if e.is_usage() {
        ExitStatus::Usage
    } else {
        ExitStatus::Failure
    };
    Failure::from_error(status, &e).with_hint(format!("{}; nothing was written", e.fix()))
}

/// The Claude Code pointer of each root skill and the one Cursor rule; a line in `report` for each nested
/// skill, which gets no pointer.
fn pointer_files(
    skills: &[crate::setup::pointers::Skill],
    files: &mut Vec<(String, String)>,
    report: &mut String,
) {
    for skill in skills {
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
    for skill in skills {
        let _ = writeln!(
            rule,
            "- `{}/SKILL.md` — {}",
            skill.dir,
            skill.description.replace('\n', " ")
        );
    }
    files.push((".cursor/rules/aayudha-verify.mdc".to_string(), rule));
}
