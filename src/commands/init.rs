//! `aayu init`: sets a repository up for aayudha — `.aayudha/config.toml` (every key, commented), the
//! merge-gate and nightly workflows pinned to this binary's release, and `.gitignore` lines for the local
//! packs and runs — and prints the next steps. It never overwrites a file (`--force` does, and lists what
//! it replaced), `--dry-run` writes nothing, and it never prompts without a terminal.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::settings::github::TokenFor;

mod skill;
use skill::Stack;

/// The templates users copy, as this binary ships them.
pub(crate) const GATE_TEMPLATE: &str = include_str!("../../workflows/aayudha-merge-gate.yml");
pub(crate) const NIGHTLY_TEMPLATE: &str = include_str!("../../workflows/aayudha-nightly.yml");
/// What the templates say where a release's commit goes.
const PLACEHOLDER: &str =
    "1111111111111111111111111111111111111111 # replace with a release's commit SHA";
/// The repository whose release tags the workflows name.
const ACTION_REPO: &str = "aayudha/verify";
/// The lines `.gitignore` needs: local packs and run folders are never committed.
const IGNORED: [&str; 2] = [".aayudha/proof/", ".aayudha/runs/"];

/// What `aayu init` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub yes: bool,
    pub dry_run: bool,
    pub force: bool,
    pub verify_skill: bool,
    pub product: Option<String>,
    pub root: Option<std::path::PathBuf>,
    pub stack: Option<String>,
    pub maintainer: Option<String>,
}

impl InitOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> InitOptions {
        InitOptions {
            yes: m.get_flag("yes"),
            dry_run: m.get_flag("dry-run"),
            force: m.get_flag("force"),
            verify_skill: m.get_flag("verify-skill"),
            product: m.get_one::<String>("product").cloned(),
            root: m.get_one::<std::path::PathBuf>("root").cloned(),
            stack: m.get_one::<String>("stack").cloned(),
            maintainer: m.get_one::<String>("maintainer").cloned(),
        }
    }
}

/// How the workflows name the action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// What follows `@` in `uses:`.
    pub reference: String,
    /// The comment after it.
    pub comment: String,
    /// Why it is not a commit SHA, when it is not.
    pub unpinned_because: Option<String>,
}

/// The release tag of this binary: `v` and its version.
pub fn release_tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// The release commit and tag a release build carries, set when it was built (`AAYU_RELEASE_SHA`, a full
/// commit SHA, and `AAYU_RELEASE_TAG`, `v<version>`, in the release workflow): the one place that reads
/// them. `None` for any other build (`cargo install --git`, a checkout), or when either is malformed.
pub fn built_release() -> Option<(&'static str, &'static str)> {
    release_of(
        option_env!("AAYU_RELEASE_SHA"),
        option_env!("AAYU_RELEASE_TAG"),
    )
}

fn release_of<'a>(sha: Option<&'a str>, tag: Option<&'a str>) -> Option<(&'a str, &'a str)> {
    let (sha, tag) = (sha?.trim(), tag?.trim());
    let full_sha = crate::git::is_full_sha(sha) && !sha.bytes().any(|b| b.is_ascii_uppercase());
    (full_sha && tag.starts_with('v') && tag.len() > 1).then_some((sha, tag))
}

/// The pin of this binary's release. A release build pins itself, with no network: the commit and tag it
/// was built with ([`built_release`]). Any other build looks the tag's commit up, `GET
/// /repos/aayudha/verify/git/ref/tags/<tag>` (an annotated tag is followed to its commit with `GET
/// /git/tags/<sha>`); when that fails — offline, or a development build whose version has no tag — the
/// tag, with a comment to pin it.
pub fn resolve_pin(api_url: &str, token: Option<&str>) -> Pin {
    pin_for(built_release(), api_url, token)
}

fn pin_for(built: Option<(&str, &str)>, api_url: &str, token: Option<&str>) -> Pin {
    if let Some((sha, tag)) = built {
        return Pin {
            reference: sha.to_string(),
            comment: tag.to_string(),
            unpinned_because: None,
        };
    }
    let tag = release_tag();
    match tag_commit(api_url, token, &tag) {
        Ok(sha) => Pin {
            reference: sha,
            comment: tag,
            unpinned_because: None,
        },
        Err(why) => Pin {
            reference: tag.clone(),
            comment: "pin this to its commit SHA".to_string(),
            unpinned_because: Some(why),
        },
    }
}

fn tag_commit(api_url: &str, token: Option<&str>, tag: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into();
    let get = |path: &str| -> Result<serde_json::Value, String> {
        let url = format!(
            "{}/repos/{ACTION_REPO}{path}",
            api_url.trim_end_matches('/')
        );
        let mut request = agent
            .get(&url)
            .header("accept", "application/vnd.github+json")
            .header("user-agent", concat!("aayu/", env!("CARGO_PKG_VERSION")));
        if let Some(token) = token {
            request = request.header("authorization", &format!("Bearer {token}"));
        }
        let mut response = request
            .call()
            .map_err(|e| format!("GitHub could not be reached ({e})"))?;
        match response.status().as_u16() {
            200 => {
                let text = response
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| format!("GitHub's answer could not be read ({e})"))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("GitHub's answer is not JSON ({e})"))
            }
            404 => Err(format!(
                "{ACTION_REPO} has no tag {tag} (a development build?)"
            )),
            status => Err(format!("GitHub answered {status} for {url}")),
        }
    };
    let reference = get(&format!("/git/ref/tags/{tag}"))?;
    let object = &reference["object"];
    let sha = object["sha"].as_str().unwrap_or_default().to_string();
    let sha = if object["type"] == "tag" {
        let annotated = get(&format!("/git/tags/{sha}"))?;
        annotated["object"]["sha"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    } else {
        sha
    };
    if crate::git::is_full_sha(&sha) {
        Ok(sha.to_ascii_lowercase())
    } else {
        Err(format!("GitHub gave no commit for {tag}"))
    }
}

/// A workflow template with the action pinned.
pub fn workflow(template: &str, pin: &Pin) -> String {
    template.replace(PLACEHOLDER, &format!("{} # {}", pin.reference, pin.comment))
}

/// `defaults.toml` with every key commented out: the file shows every setting and its default, and
/// changes none.
pub fn commented_config() -> String {
    let mut text = String::from(
        "# aayudha configuration. Every key is shown with its default, commented out: uncomment a key to\n\
         # change it. The merge gate reads this file from the default branch (a pull request cannot change\n\
         # its own gate). Every key: https://github.com/aayudha/verify/blob/main/docs/configuration.md\n",
    );
    let defaults = crate::config::DEFAULTS;
    // The defaults file's own header (up to the first section) is about the embedded file: left out.
    let body = defaults
        .find("\n[")
        .map_or(defaults, |at| &defaults[at + 1..]);
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('[') {
            text.push_str(line);
        } else {
            text.push_str("# ");
            text.push_str(line);
        }
        text.push('\n');
    }
    text.insert(text.find("\n[").map_or(text.len(), |at| at + 1), '\n');
    text
}

/// One file init writes, and what happened to it.
struct Planned {
    path: String,
    text: String,
    executable: bool,
}

enum Done {
    Wrote,
    Replaced,
    Kept,
}

pub fn run(ctx: &mut Context, options: InitOptions) -> Result<ExitStatus, Failure> {
    if !options.verify_skill {
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
    }
    let repo = crate::commands::repo(ctx).map_err(|f| {
        f.with_hint("aayu init sets up a git repository: run it inside one (or `git init` first)")
    })?;
    let root = repo.root().to_path_buf();
    let token = crate::settings::github::token(ctx.env, TokenFor::Read).map(|(t, _)| t);
    let pin = resolve_pin(&ctx.github.api_url, token.as_deref());
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
            },
            Planned {
                path: ".github/workflows/aayudha-merge-gate.yml".to_string(),
                text: workflow(GATE_TEMPLATE, &pin),
                executable: false,
            },
            Planned {
                path: ".github/workflows/aayudha-nightly.yml".to_string(),
                text: workflow(NIGHTLY_TEMPLATE, &pin),
                executable: false,
            },
        ],
    );
    for file in &planned {
        // Anything there — a file, a folder, a link — is the user's.
        let exists = std::fs::symlink_metadata(root.join(&file.path)).is_ok();
        let done = match (exists, options.force) {
            (true, false) => Done::Kept,
            (true, true) => Done::Replaced,
            (false, _) => Done::Wrote,
        };
        if options.dry_run {
            let verb = match done {
                Done::Kept => {
                    let _ = writeln!(
                        report,
                        "would keep {} (it exists; --force replaces it)",
                        file.path
                    );
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
                let _ = writeln!(
                    report,
                    "kept     {} (it exists; --force replaces it)",
                    file.path
                );
            }
            Done::Wrote | Done::Replaced => {
                changed = true;
                let mode = if file.executable { 0o755 } else { 0o644 };
                crate::safe_fs::write_mode(&root, &file.path, file.text.as_bytes(), mode).map_err(
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
    // .gitignore: the lines that are missing, appended (the file is the user's: never replaced).
    let current = match crate::safe_fs::read(&root, ".gitignore", 1 << 20) {
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
    } else if options.dry_run {
        changed = true;
        let _ = writeln!(report, "would add to .gitignore: {}", missing.join(", "));
    } else {
        changed = true;
        let mut text = current.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# aayudha: local proof packs and run folders\n");
        for line in &missing {
            text.push_str(line);
            text.push('\n');
        }
        write_file(&root, ".gitignore", &text)?;
        let _ = writeln!(report, "added to .gitignore: {}", missing.join(", "));
    }
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
    if !options.dry_run {
        let third = if options.verify_skill {
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
    if changed {
        let (at, note) = maintainer_note;
        report.insert_str(at.min(report.len()), &note);
    }
    write_out(ctx.out, &report)?;
    Ok(ExitStatus::Ok)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_build_pins_itself_with_no_network() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        // An API nobody answers: a release build never asks it.
        let pin = pin_for(
            release_of(Some(sha), Some("v0.4.2")),
            "http://127.0.0.1:9",
            None,
        );
        assert_eq!(pin.unpinned_because, None);
        let written = workflow(GATE_TEMPLATE, &pin);
        assert!(
            written.contains(&format!("uses: aayudha/verify@{sha} # v0.4.2")),
            "{written}"
        );
        assert!(!written.contains(PLACEHOLDER));
        // Anything else a build might carry is no release: the look-up (here: nobody answers) decides.
        for (sha, tag) in [
            (Some("0123456789abcdef"), Some("v0.4.2")),
            (
                Some("0123456789ABCDEF0123456789ABCDEF01234567"),
                Some("v0.4.2"),
            ),
            (Some(sha), Some("0.4.2")),
            (Some(sha), None),
            (None, Some("v0.4.2")),
        ] {
            assert_eq!(release_of(sha, tag), None, "{sha:?} {tag:?}");
        }
        let looked_up = pin_for(None, "http://127.0.0.1:9", None);
        assert_eq!(looked_up.reference, release_tag());
        assert!(looked_up.unpinned_because.is_some());
    }

    #[test]
    fn the_commented_configuration_is_the_defaults() {
        let text = commented_config();
        let parsed = crate::config::Config::from_text(&text, "config.toml").expect("it parses");
        assert_eq!(
            format!("{:?}", parsed),
            format!("{:?}", crate::config::Config::defaults())
        );
        assert!(text.contains("# check_timeout_s = 180\n"), "{text}");
        assert!(text.contains("\n[verify]\n"), "{text}");
    }

    #[test]
    fn the_templates_carry_the_placeholder_init_replaces() {
        let pin = Pin {
            reference: "a".repeat(40),
            comment: "v9.9.9".into(),
            unpinned_because: None,
        };
        for template in [GATE_TEMPLATE, NIGHTLY_TEMPLATE] {
            assert!(template.contains(PLACEHOLDER));
            let written = workflow(template, &pin);
            assert!(!written.contains("111111"), "{written}");
            assert!(written.contains(&format!("@{} # v9.9.9", "a".repeat(40))));
        }
    }
}
