//! `aayu generate [--check]`: regenerates every file derived from the registry in the repository aayu runs
//! in (aayudha's own source tree), writing only what differs; `--check` writes nothing and exits 3 when a
//! file is out of date. `aayu completions <shell>`: the completion script, from the same clap command.

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::generate;
use crate::git::Repo;

pub fn run(ctx: &mut Context, check: bool) -> Result<ExitStatus, Failure> {
    let start = super::start_dir(ctx);
    let repo = Repo::discover(&start).map_err(|e| Failure::from_error(ExitStatus::Usage, &e))?;
    let root = repo.root();
    if !root.join("src/registry/commands.rs").is_file() {
        return Err(Failure::usage(format!(
            "`{}` is not aayudha's source tree: `aayu generate` regenerates its docs, skills and schemas",
            root.display()
        )));
    }
    let rendered = generate::render(root, &generate::registry())
        .map_err(|e| Failure::from_error(ExitStatus::Usage, &e))?;
    if check {
        let drift = generate::drift(root, &rendered);
        if drift.is_empty() {
            write_out(ctx.out, "every generated file is up to date\n")?;
            return Ok(ExitStatus::Ok);
        }
        let mut text = String::from("out of date:\n");
        for path in &drift {
            text.push_str(&format!("  {path}\n"));
        }
        text.push_str("run `cargo run -- generate` and commit the result\n");
        write_out(ctx.out, &text)?;
        return Ok(ExitStatus::FloorFails);
    }
    let changed = generate::write(root, &rendered)
        .map_err(|e| Failure::from_error(ExitStatus::Failure, &e))?;
    let text = if changed.is_empty() {
        "every generated file is up to date\n".to_string()
    } else {
        changed.iter().map(|p| format!("wrote {p}\n")).collect()
    };
    write_out(ctx.out, &text)?;
    Ok(ExitStatus::Ok)
}

pub fn completions(ctx: &mut Context, shell: &str) -> Result<ExitStatus, Failure> {
    use clap_complete::Shell;
    let shell = match shell {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        "elvish" => Shell::Elvish,
        "powershell" => Shell::PowerShell,
        other => {
            return Err(Failure::usage(format!(
                "no completions for the shell `{other}`"
            )));
        }
    };
    let mut command = crate::registry::clap::build();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "aayu", &mut out);
    write_out(ctx.out, &String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Ok)
}
