//! `aayu init`: sets a repository up for aayudha — `.aayudha/config.toml` (every key, commented), the
//! merge-gate (single-job, or with `--shards N` the sharded one; its signing job only for a public
//! repository on github.com, `init/attest.rs`) and nightly workflows pinned to this binary's release, and
//! `.gitignore` lines for the local packs and runs — and prints the next steps. It never overwrites a file
//! (`--force` does, and lists what it replaced), `--dry-run` writes nothing, and it never prompts without
//! a terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::settings::github::TokenFor;
use crate::settings::options::InitOptions;
use crate::setup::{
    ACTION_REPO, GATE_TEMPLATE, MAX_SHARDS, NIGHTLY_TEMPLATE, commented_config, resolve_pin,
    sharded_gate, without_attest, workflow,
};

mod attest;
mod layers;
mod skill;
use skill::Stack;

/// Where init writes the merge gate.
const GATE_PATH: &str = ".github/workflows/aayudha-merge-gate.yml";

/// The lines `.gitignore` needs: local packs and run folders are never committed.
const IGNORED: [&str; 2] = [".aayudha/proof/", ".aayudha/runs/"];

/// One file init writes, and what happened to it.
struct Planned {
    path: String,
    text: String,
    executable: bool,
    /// The user's once written: kept even with `--force` (`LAYERS.md`, edited to fit the repository).
    never_replaced: bool,
}

enum Done {
    Wrote,
    Replaced,
    Kept,
}

pub fn run(ctx: &mut Context, options: InitOptions) -> Result<ExitStatus, Failure> {
    if !options.verify_skill {
        refuse_skill_flags(&options)?;
    }
    attest::refuse_both(&options)?;
    let gate_template = gate_template(options.shards)?;
    let repo = crate::commands::repo(ctx).map_err(|f| {
        f.with_hint("aayu init sets up a git repository: run it inside one (or `git init` first)")
    })?;
    let root = repo.root().to_path_buf();
    let token = crate::settings::github::token(ctx.env, TokenFor::Read).map(|(t, _)| t);
    let pin = resolve_pin(&ctx.github.api_url, token.as_deref());
    let mut gate_text = workflow(&gate_template, &pin);
    // The signing job is decided only for a gate init writes: a kept file is the user's.
    let gate_written = options.force || std::fs::symlink_metadata(root.join(GATE_PATH)).is_err();
    let mut attest_notice = String::new();
    if gate_written {
        match attest::decide(ctx, &options, &repo) {
            attest::Attest::Written => {}
            attest::Attest::Omitted => gate_text = without_attest(&gate_text),
            attest::Attest::LeftOut(why) => {
                gate_text = without_attest(&gate_text);
                attest_notice = attest::notice(&why);
            }
        }
    }
    let mut report = String::new();
    let mut config_text = commented_config();
    let mut planned = Vec::new();
    // What was found of the agent apps is said where it was found, but only when init writes or changes
    // something: a second init that changes nothing prints no detection.
    let mut maintainer_note = (0, String::new());
    let mut changed = false;
    if options.verify_skill {
        let (files, maintainer) =
            plan_skill(ctx, &options, &root, &mut report, &mut maintainer_note)?;
        if let Some(id) = maintainer {
            changed = true;
            config_text =
                config_text.replace("# maintainer = \"\"", &format!("maintainer = \"{id}\""));
            set_maintainer(&root, id, options.dry_run, &mut report)?;
        }
        planned.extend(files);
    }
    planned.splice(
        0..0,
        [
            Planned {
                path: crate::config::CONFIG_PATH.to_string(),
                text: config_text,
                executable: false,
                never_replaced: false,
            },
            Planned {
                path: GATE_PATH.to_string(),
                text: gate_text,
                executable: false,
                never_replaced: false,
            },
            Planned {
                path: ".github/workflows/aayudha-nightly.yml".to_string(),
                text: workflow(NIGHTLY_TEMPLATE, &pin),
                executable: false,
                never_replaced: false,
            },
            Planned {
                path: layers::PATH.to_string(),
                text: layers::starter(skill::detect(&root).first().copied().unwrap_or(Stack::None)),
                executable: false,
                never_replaced: true,
            },
        ],
    );
    changed |= write_planned(&root, &planned, &options, &mut report)?;
    changed |= add_ignored(&root, options.dry_run, &mut report)?;
    report.push_str(&attest_notice);
    say_pin(&pin, &mut report);
    if !options.dry_run {
        say_next_steps(options.verify_skill, &mut report);
    }
    if changed {
        let (at, note) = maintainer_note;
        report.insert_str(at.min(report.len()), &note);
    }
    write_out(ctx.out, &report)?;
    Ok(ExitStatus::Ok)
}

/// The flags of `--verify-skill` without it are a usage error.
fn refuse_skill_flags(options: &InitOptions) -> Result<(), Failure> {
    for (flag, given) in [
        ("--product", options.product.is_some()),
        ("--root", options.root.is_some()),
        ("--stack", options.stack.is_some()),
        ("--maintainer", options.maintainer.is_some()),
    ] {
        if given {
            return Err(Failure::usage(format!(
                "`{flag}` goes with `--verify-skill`"
            )));
        }
    }
    Ok(())
}

/// The merge gate's template for `--shards`: the single-job one for none or 1, the sharded one with its
/// number of legs for 2 to 64; any other number is a usage error.
fn gate_template(shards: Option<u64>) -> Result<String, Failure> {
    match shards {
        None | Some(1) => Ok(GATE_TEMPLATE.to_string()),
        Some(n @ 2..=MAX_SHARDS) => Ok(sharded_gate(n)),
        Some(n) => Err(Failure::usage(format!(
            "`--shards {n}`: the merge gate is split into 1 to {MAX_SHARDS} legs"
        ))),
    }
}

/// Writes each planned file that is not there (or, with `--force`, replaces it; with `--dry-run`, says
/// what it would write), one report line each; whether anything was or would be written.
fn write_planned(
    root: &Path,
    planned: &[Planned],
    options: &InitOptions,
    report: &mut String,
) -> Result<bool, Failure> {
    let mut changed = false;
    for file in planned {
        // Anything there — a file, a folder, a link — is the user's.
        let exists = std::fs::symlink_metadata(root.join(&file.path)).is_ok();
        let done = match (exists, options.force && !file.never_replaced) {
            (true, false) => Done::Kept,
            (true, true) => Done::Replaced,
            (false, _) => Done::Wrote,
        };
        if options.dry_run {
            let verb = match done {
                Done::Kept => {
                    let _ = writeln!(report, "would keep {} ({})", file.path, kept_why(file));
                    continue;
                }
                Done::Replaced => "would replace",
                Done::Wrote => "would write",
            };
            changed = true;
            let _ = writeln!(report, "{verb} {}:", file.path);
            for line in file.text.lines() {
                let _ = writeln!(report, "    {line}");
            }
            continue;
        }
        match done {
            Done::Kept => {
                let _ = writeln!(report, "kept     {} ({})", file.path, kept_why(file));
            }
            Done::Wrote | Done::Replaced => {
                changed = true;
                let mode = if file.executable { 0o755 } else { 0o644 };
                crate::safe_fs::write_mode(root, &file.path, file.text.as_bytes(), mode).map_err(
                    |e| Failure::unexpected(format!("cannot write `{}`: {e}", file.path)),
                )?;
                let verb = if matches!(done, Done::Replaced) {
                    "replaced"
                } else {
                    "wrote   "
                };
                let _ = writeln!(report, "{verb} {}", file.path);
            }
        }
    }
    Ok(changed)
}

/// Why a file that exists is kept.
fn kept_why(file: &Planned) -> &'static str {
    if file.never_replaced {
        "it exists; it is yours, never replaced"
    } else {
        "it exists; --force replaces it"
    }
}

/// .gitignore: the lines that are missing, appended (the file is the user's: never replaced); whether
/// any were or would be added.
fn add_ignored(root: &Path, dry_run: bool, report: &mut String) -> Result<bool, Failure> {
    let current = match crate::safe_fs::read(root, ".gitignore", 1 << 20) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.is_missing() => String::new(),
        Err(e) => return Err(Failure::usage(format!("`.gitignore`: {e}"))),
    };
    let missing: Vec<&str> = IGNORED
        .iter()
        .copied()
        .filter(|line| {
            !current
                .lines()
                .any(|l| l.trim() == *line || l.trim() == line.trim_end_matches('/'))
        })
        .collect();
    if missing.is_empty() {
        let _ = writeln!(
            report,
            "kept     .gitignore (it ignores {} already)",
            IGNORED.join(" and ")
        );
        return Ok(false);
    }
    if dry_run {
        let _ = writeln!(report, "would add to .gitignore: {}", missing.join(", "));
        return Ok(true);
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# aayudha: local proof packs and run folders\n");
    for line in &missing {
        text.push_str(line);
        text.push('\n');
    }
    write_file(root, ".gitignore", &text)?;
    let _ = writeln!(report, "added to .gitignore: {}", missing.join(", "));
    Ok(true)
}

/// How the workflows name the action: by its commit, or by its tag with why and how to pin it.
fn say_pin(pin: &crate::setup::Pin, report: &mut String) {
    match &pin.unpinned_because {
        None => {
            let _ = writeln!(
                report,
                "the workflows use {ACTION_REPO}@{} ({}).",
                pin.reference, pin.comment
            );
        }
        Some(why) => {
            let _ = writeln!(
                report,
                "note: the workflows name {ACTION_REPO}@{} by its tag, not its commit: {why}. Pin each `uses: aayudha/verify…@{}` to the tag's commit SHA (`git ls-remote https://github.com/{ACTION_REPO} refs/tags/{}`): a tag can be moved, a commit cannot.",
                pin.reference, pin.reference, pin.reference
            );
        }
    }
}

/// The next steps after a real init.
fn say_next_steps(verify_skill: bool, report: &mut String) {
    let third = if verify_skill {
        "3. Map the first feature: a file in the skill's `features/` folder and a link in its README (docs/feature-maps.md), then `aayu verify --map` and `aayu verify --check <feature>`.\n"
    } else {
        "3. Start the feature map: `aayu init --verify-skill`, then `aayu verify --map`.\n"
    };
    report.push_str(
        "\nNext steps:\n\
         1. Commit these files to the default branch: the gate runs the default branch's workflow and configuration.\n\
         2. In the repository's branch protection (or a ruleset), require the status `aayudha/proof`.\n",
    );
    report.push_str(third);
}

/// The files of the starter skill, and the maintainer chosen; what was found and taken goes to `report`.
fn plan_skill(
    ctx: &mut Context,
    options: &InitOptions,
    root: &Path,
    report: &mut String,
    maintainer_note: &mut (usize, String),
) -> Result<(Vec<Planned>, Option<&'static str>), Failure> {
    // `--root` is relative to where aayu started, and must lie in the repository.
    let start = crate::commands::start_dir(ctx);
    let dir = match &options.root {
        Some(dir) => start.join(dir),
        None => root.to_path_buf(),
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let (Some(dir_abs), Some(root_abs)) = (canonical(&dir), canonical(root)) else {
        return Err(Failure::usage(format!(
            "`--root {}`: no such folder",
            dir.display()
        )));
    };
    let Ok(rel) = dir_abs.strip_prefix(&root_abs) else {
        return Err(Failure::usage(format!(
            "`--root {}` is outside the repository `{}`",
            dir.display(),
            root.display()
        )));
    };
    let rel = rel.to_string_lossy().into_owned();
    let rel_shown = if rel.is_empty() {
        ".".to_string()
    } else {
        rel.clone()
    };
    let found = skill::detect(&dir_abs);
    let stack = match options.stack.as_deref() {
        Some(name) => Stack::parse(name).ok_or_else(|| {
            Failure::usage(format!(
                "`--stack {name}`: choose rust, go, python, node or none"
            ))
        })?,
        None => found.first().copied().unwrap_or(Stack::None),
    };
    let why = match (options.stack.is_some(), found.len()) {
        (true, _) => "chosen with --stack".to_string(),
        (false, 0) => "no Cargo.toml, go.mod, pyproject.toml (setup.cfg, setup.py, pytest.ini, tox.ini) or package.json there: the control tool is a stub that blocks every check until you replace it".to_string(),
        (false, 1) => format!("found {}", stack.marker_in(&dir_abs).unwrap_or("nothing")),
        (false, _) => format!(
            "found {} (also {}: choose another with --stack)",
            stack.marker_in(&dir_abs).unwrap_or("nothing"),
            found[1..].iter().map(|s| s.marker_in(&dir_abs).unwrap_or("nothing")).collect::<Vec<_>>().join(", ")
        ),
    };
    let _ = writeln!(report, "stack {} at {rel_shown}: {why}", stack.name());
    let product = match &options.product {
        Some(name) if skill::valid_product(name) => name.clone(),
        Some(name) => {
            return Err(Failure::usage(format!(
                "`--product {name}`: a product name is lower-case letters, digits and `-`"
            )));
        }
        None => skill::product_name(
            &dir_abs
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    };
    // Its line belongs here, after the stack's; the caller keeps it only when init changes something.
    maintainer_note.0 = report.len();
    let maintainer = choose_maintainer(ctx, options, root, &mut maintainer_note.1)?;
    let files = skill::files(&product, &rel, stack)
        .into_iter()
        .map(|(path, text, executable)| Planned {
            path,
            text,
            executable,
            never_replaced: false,
        })
        .collect();
    Ok((files, maintainer))
}

/// The agent app that maintains the map: `--maintainer`, else asked (only with a terminal and without
/// `--yes`) among those detected, else none — said either way.
fn choose_maintainer(
    ctx: &mut Context,
    options: &InitOptions,
    root: &Path,
    report: &mut String,
) -> Result<Option<&'static str>, Failure> {
    let known = |id: &str| {
        skill::MAINTAINERS
            .iter()
            .find(|(k, _)| *k == id)
            .map(|(k, _)| *k)
    };
    if let Some(id) = &options.maintainer {
        return known(id).map(Some).ok_or_else(|| {
            Failure::usage(format!(
                "`--maintainer {id}`: choose amp, cursor, claude-code or codex"
            ))
        });
    }
    let home = ctx.env.var("HOME").map(std::path::PathBuf::from);
    let path = ctx.env.var("PATH");
    let detected = skill::detect_maintainers(root, home.as_deref(), path.as_deref());
    let names = |ids: &[&str]| {
        ids.iter()
            .filter_map(|id| skill::MAINTAINERS.iter().find(|(k, _)| k == id))
            .map(|(k, name)| format!("{name} (`{k}`)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if detected.is_empty() {
        let _ = writeln!(
            report,
            "maintainer: none detected (Amp, Cursor, Claude Code or Codex); set `[verify] maintainer` when you choose one"
        );
        return Ok(None);
    }
    let interactive = ctx.env.stdin_terminal && ctx.env.stdout_terminal && !options.yes;
    if !interactive {
        let _ = writeln!(
            report,
            "maintainer: none chosen (nothing is asked without a terminal, or with --yes); detected {}: pass --maintainer to choose",
            names(&detected)
        );
        return Ok(None);
    }
    let mut question = String::from(
        "Which agent app maintains the feature map?
",
    );
    for (n, id) in detected.iter().enumerate() {
        let _ = writeln!(question, "  {}. {}", n + 1, names(&[id]));
    }
    question.push_str(
        "  0. none for now
Choose a number: ",
    );
    write_out(ctx.out, &question)?;
    let mut answer = String::new();
    let mut byte = [0u8; 1];
    while let Ok(1) = std::io::Read::read(ctx.input, &mut byte) {
        if byte[0] == b'\n' {
            break;
        }
        answer.push(byte[0] as char);
    }
    let chosen = answer
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| detected.get(n).copied());
    let _ = writeln!(
        report,
        "maintainer: {}",
        chosen.map_or("none".to_string(), |id| names(&[id]))
    );
    Ok(chosen)
}

/// Sets `[verify] maintainer` in an existing configuration whose line is the default (commented or not);
/// otherwise says what to set.
fn set_maintainer(
    root: &Path,
    id: &str,
    dry_run: bool,
    report: &mut String,
) -> Result<(), Failure> {
    let path = crate::config::CONFIG_PATH;
    let text = match crate::safe_fs::read(root, path, 1 << 20) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.is_missing() => return Ok(()),
        Err(e) => return Err(Failure::usage(format!("`{path}`: {e}"))),
    };
    let line = format!("maintainer = \"{id}\"");
    if text.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    let default = text
        .lines()
        .find(|l| matches!(l.trim(), "# maintainer = \"\"" | "maintainer = \"\""));
    match default {
        Some(old) if !dry_run => {
            let new = text.replacen(old, &line, 1);
            crate::config::Config::from_text(&new, path)
                .map_err(|e| Failure::usage(format!("`{path}`: {e}")))?;
            write_file(root, path, &new)?;
            let _ = writeln!(report, "set      `[verify] {line}` in {path}");
        }
        Some(_) => {
            let _ = writeln!(report, "would set `[verify] {line}` in {path}");
        }
        None => {
            let _ = writeln!(
                report,
                "note: {path} sets `maintainer` already: set `[verify] {line}` there yourself"
            );
        }
    }
    Ok(())
}

/// Writes a file of the repository whole (a temporary file, then a rename), creating its folders, never
/// through a link.
fn write_file(root: &Path, rel: &str, text: &str) -> Result<(), Failure> {
    crate::safe_fs::write(root, rel, text.as_bytes())
        .map_err(|e| Failure::unexpected(format!("cannot write `{rel}`: {e}")))
}
