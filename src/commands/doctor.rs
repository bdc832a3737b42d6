//! `aayu doctor [--fix] [--json]`: what is missing or out of date in a repository's aayudha setup, one
//! line per problem — `<where>: <problem>: <what to do>` — exit 3 when any is found, 0 when none. `--fix`
//! fixes what it safely can (the `.gitignore` entries, a Claude Code pointer's description, an `aayu mcp`
//! registration that fell behind, a missing ledger branch, created locally) and reports the rest; a
//! workflow is never edited (its difference from this release's template is printed instead), nor a
//! registration that runs with writes or a GitHub token (a person chose those flags).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::settings::github::TokenFor;
use crate::settings::options::DoctorOptions;

/// One problem found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    /// Which check found it: `config`, `gate-workflow`, `nightly-workflow`, `ledger`, `shallow`, `maps`,
    /// `pointer`, `mcp-registration`, `mcp-elevated`, `toolchain`, `gitignore`, `layers`, `token`,
    /// `attestation`.
    pub check: &'static str,
    /// The file (and line) or thing it is about.
    #[serde(rename = "where")]
    pub place: String,
    pub problem: String,
    pub fix: String,
    /// Whether `--fix` fixes it.
    pub fixable: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    schema_version: u32,
    problems: &'a [Problem],
}

fn problem(
    check: &'static str,
    place: impl Into<String>,
    what: impl Into<String>,
    fix: impl Into<String>,
    fixable: bool,
) -> Problem {
    Problem {
        check,
        place: place.into(),
        problem: what.into(),
        fix: fix.into(),
        fixable,
    }
}

pub fn run(ctx: &mut Context, options: DoctorOptions) -> Result<ExitStatus, Failure> {
    let repo = crate::commands::repo(ctx)?;
    let root = repo.root().to_path_buf();
    let mut found: Vec<Problem> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let config = config_problems(ctx, &root, &mut found);
    // The workflows.
    let gate_path = config.gate.workflow.clone();
    workflow_checks(
        &root,
        &gate_path,
        "gate-workflow",
        crate::setup::GATE_TEMPLATE,
        true,
        &mut found,
        &mut notes,
    );
    workflow_checks(
        &root,
        ".github/workflows/aayudha-nightly.yml",
        "nightly-workflow",
        crate::setup::NIGHTLY_TEMPLATE,
        false,
        &mut found,
        &mut notes,
    );

    attestation_problems(&root, &config, &mut found);
    history_and_ledger(&repo, &root, &config.ledger.branch, &mut found);
    let loaded = map_problems(&repo, &root, &mut found);
    mcp_problems(&root, &mut found, &mut notes);
    ignore_problems(&repo, &mut found);
    layers_problems(&repo, &root, &mut found);
    toolchain_problems(ctx, &root, &config, loaded.as_ref(), &mut found, &mut notes);
    build_folder_notes(ctx, &root, &mut notes);

    // Online: the token, and the required status.
    online_checks(ctx, &repo, &mut found, &mut notes);

    let ledger = &config.ledger.branch;
    // --fix: what can be fixed safely.
    let mut fixed = Vec::new();
    if options.fix {
        let mut left = Vec::new();
        for p in found {
            if !p.fixable {
                left.push(p);
                continue;
            }
            match fix_one(&root, &repo, &p, ledger) {
                Ok(()) => fixed.push(p),
                Err(e) => {
                    notes.push(format!("note: could not fix {}: {e}", p.place));
                    left.push(p);
                }
            }
        }
        found = left;
    }

    let mut text = String::new();
    if options.json {
        let report = Report {
            schema_version: 1,
            problems: &found,
        };
        text = crate::output::text(|w| crate::output::json::write(w, &report));
        text.push('\n');
    } else {
        for p in &fixed {
            let _ = writeln!(text, "fixed: {}: {}", p.place, p.problem);
        }
        for p in &found {
            let _ = writeln!(text, "{}: {}: {}", p.place, p.problem, p.fix);
        }
        if found.is_empty() {
            text.push_str(if fixed.is_empty() {
                "no problem found\n"
            } else {
                "no problem left\n"
            });
        }
    }
    write_out(ctx.out, &text)?;
    for note in &notes {
        let _ = std::io::Write::write_fmt(ctx.err, format_args!("{note}\n"));
    }
    Ok(if found.is_empty() {
        ExitStatus::Ok
    } else {
        ExitStatus::FloorFails
    })
}

/// The configuration: it parses and names no unknown key (else the defaults, and the problem), and the
/// values its types allow but aayu cannot use — said now, not when `--maintain` or a ship runs.
fn config_problems(ctx: &Context, root: &Path, found: &mut Vec<Problem>) -> crate::config::Config {
    let start = crate::commands::start_dir(ctx);
    let config = match crate::config::Config::load(root, None, &start) {
        Ok(config) => config,
        Err(e) => {
            let text = e.to_string();
            let (place, what) = text.split_once(": ").map_or(
                (crate::config::CONFIG_PATH.to_string(), text.clone()),
                |(p, w)| (p.to_string(), w.to_string()),
            );
            found.push(problem(
                "config",
                place,
                what,
                e.hint()
                    .unwrap_or_else(|| "correct it (docs/configuration.md)".to_string()),
                false,
            ));
            crate::config::Config::defaults()
        }
    };
    if let Err(why) = crate::maintain::Maintainer::parse(&config.verify.maintainer) {
        found.push(problem(
            "config",
            crate::config::CONFIG_PATH,
            why.to_string(),
            "set `[verify] maintainer` to amp, cursor, claude-code or codex, or \"\"",
            false,
        ));
    }
    if !config.proof.media.trim().is_empty()
        && let Err(e) = crate::publish::bucket::parse(config.proof.media.trim())
    {
        found.push(problem(
            "config",
            crate::config::CONFIG_PATH,
            format!("`[proof] media`: {e}"),
            e.hint()
                .unwrap_or_else(|| "correct `[proof] media` (docs/ledger.md#media-buckets)".into()),
            false,
        ));
    }

    config
}

/// The settings of the gate's signature that would make every ship fail: `[proof] attestation = "require"`
/// with a gate workflow that has no attest job (ship would pass over every run), and a `[proof]
/// trusted_root` that is not there or does not parse (ship and `proof verify` would stop).
fn attestation_problems(root: &Path, config: &crate::config::Config, found: &mut Vec<Problem>) {
    use crate::config::Attestation;
    let gate = crate::safe_fs::read(root, &config.gate.workflow, 1 << 20)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    if config.proof.attestation == Attestation::Require
        && let Ok(text) = &gate
        && !text.contains("uses: actions/attest@")
    {
        found.push(problem(
            "attestation",
            crate::config::CONFIG_PATH,
            format!(
                "`[proof] attestation` is \"require\", but {} has no attest job: `aayu ship` would pass over every run",
                config.gate.workflow
            ),
            "add the `attest` job of this release's template (docs/action.md, \"The signing job\"), or set `attestation = \"check\"`",
            false,
        ));
    }
    let file = config.proof.trusted_root.trim();
    if config.proof.attestation == Attestation::Off || file.is_empty() {
        return;
    }
    let why = match crate::safe_fs::read(root, file, crate::attest::TRUSTED_ROOT_MAX_BYTES) {
        Ok(bytes) => crate::attest::TrustedRoots::from_json_lines(&String::from_utf8_lossy(&bytes))
            .err()
            .map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = why {
        found.push(problem(
            "attestation",
            file,
            format!("`[proof] trusted_root`: {why}"),
            "commit the file `gh attestation trusted-root` prints (a path from the repository's root), or empty the setting",
            false,
        ));
    }
}

/// The history (a shallow clone has no `verified_at` commits and no merge base) and the ledger branch.
fn history_and_ledger(
    repo: &crate::git::Repo,
    root: &Path,
    ledger: &str,
    found: &mut Vec<Problem>,
) {
    if repo.is_shallow() {
        found.push(problem(
            "shallow",
            root.display().to_string(),
            "the clone is shallow: stale features read as missing-commit and red-on-base is inconclusive",
            "`git fetch --unshallow` (in a workflow: `fetch-depth: 0` on actions/checkout)",
            false,
        ));
    }

    if !repo.has_branch(ledger) {
        found.push(problem(
            "ledger",
            format!("branch `{ledger}`"),
            "the ledger branch does not exist (locally or at origin): `aayu ready` and `aayu ship` write to it",
            format!("`aayu doctor --fix` creates it locally (an empty first commit); then `git push origin {ledger}`"),
            true,
        ));
    }
}

/// The maps (the contract checks of `verify --map`) and the Claude Code pointers (their description is
/// their skill's); the maps, for the toolchains they need.
fn map_problems(
    repo: &crate::git::Repo,
    root: &Path,
    found: &mut Vec<Problem>,
) -> Option<crate::maps::Loaded> {
    let loaded = crate::maps::load_repo(repo).ok();
    if let Some(loaded) = &loaded {
        for e in &loaded.errors {
            found.push(problem(
                "maps",
                format!("{}:{}", e.file, e.line),
                e.message.clone(),
                "fix the map (`aayu verify --map` lists every contract error; docs/feature-maps.md)",
                false,
            ));
        }
    }

    // The Claude Code pointers: their description is their skill's.
    let files = loaded
        .as_ref()
        .map_or(&[][..], |l| l.listed.files.as_slice());
    for (pointer, skill_md, wanted) in crate::setup::pointers::pointers(root, files) {
        let Ok(bytes) = crate::safe_fs::read(root, &pointer, 1 << 20) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if crate::setup::pointers::description_of(&text).as_deref() != Some(wanted.as_str()) {
            found.push(problem(
                "pointer",
                pointer,
                format!("its description is not that of `{skill_md}` any more"),
                "`aayu doctor --fix` (or `aayu install`) writes it again",
                true,
            ));
        }
    }

    loaded
}

/// The `aayu mcp` registrations in the apps' project files: each as `aayu install` writes it, and none
/// running with writes or a GitHub token on every contributor's machine. None at all is no problem (a
/// note says how to register it).
fn mcp_problems(root: &Path, found: &mut Vec<Problem>, notes: &mut Vec<String>) {
    use crate::setup::mcp_registration::{self, Registration};
    let mut absent = 0;
    for host in mcp_registration::HOSTS {
        let path = host.path;
        match mcp_registration::check(root, host) {
            Ok(Registration::Absent) => absent += 1,
            Ok(Registration::Current) => {}
            Ok(Registration::Differs { runs, elevated }) if !elevated.is_empty() => {
                let gives = match (
                    elevated.contains(&"--allow-write"),
                    elevated.contains(&"--github"),
                ) {
                    (true, true) => "writes and a GitHub token",
                    (true, false) => "writes",
                    _ => "a GitHub token",
                };
                found.push(problem(
                    "mcp-elevated",
                    path,
                    format!(
                        "its `aayudha` server runs `{runs}`: a committed file gives {gives} to the agent on every contributor's machine"
                    ),
                    format!(
                        "`aayu install` writes this entry without {}; to keep {}, register the server in your own {} settings, not in the repository (docs/setup.md)",
                        elevated.join(" and "),
                        if elevated.len() == 1 { "it" } else { "them" },
                        host.app
                    ),
                    false,
                ));
            }
            Ok(Registration::Differs { runs, .. }) => found.push(problem(
                "mcp-registration",
                path,
                format!(
                    "its `aayudha` server runs `{runs}`, not `aayu {}` as this aayu registers it for {}",
                    host.args.join(" "),
                    host.app
                ),
                "`aayu doctor --fix` (or `aayu install`) writes it again",
                true,
            )),
            Err(e) => found.push(problem(
                "mcp-registration",
                path,
                e.problem(),
                e.fix(),
                false,
            )),
        }
    }
    if absent == mcp_registration::HOSTS.len() {
        notes.push(
            "note: no agent app has `aayu mcp` registered (.mcp.json, .cursor/mcp.json): `aayu install` registers it, read-only".to_string(),
        );
    }
}

/// `.gitignore`: the local packs and runs are never committed.
fn ignore_problems(repo: &crate::git::Repo, found: &mut Vec<Problem>) {
    for path in [".aayudha/proof/", ".aayudha/runs/"] {
        if !repo.is_ignored(&format!("{path}x")) {
            found.push(problem(
                "gitignore",
                ".gitignore",
                format!("`{path}` is not ignored: local packs and run folders could be committed"),
                format!("`aayu doctor --fix` adds `{path}`"),
                true,
            ));
        }
    }
}

/// `LAYERS.md`, when there is one: some glob of it matches a file of the repository (tracked, or
/// untracked and not ignored), else the file is for another layout and every pack's `footprint` is
/// empty. One layer matching nothing is normal (a small repository has no data layer); only a file none
/// of whose globs matches is reported. `LAYERS.md` itself and the files `aayu init` writes do not count:
/// the starter names them, and they are in every set-up repository.
fn layers_problems(repo: &crate::git::Repo, root: &Path, found: &mut Vec<Problem>) {
    let Ok(bytes) = crate::safe_fs::read(root, "LAYERS.md", 1 << 20) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = globset::GlobSetBuilder::new();
    let mut any = false;
    for line in text.lines() {
        let names_layer = line
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w.len() == 3 && w.starts_with("L0") && w.as_bytes()[2].is_ascii_digit());
        if !names_layer {
            continue;
        }
        for glob in line.split('`').skip(1).step_by(2) {
            if let Ok(g) = crate::maps::glob::compile(glob) {
                builder.add(g);
                any = true;
            }
        }
    }
    let Ok(set) = builder.build() else {
        return;
    };
    let Ok(files) = repo.worktree_files() else {
        return;
    };
    let ours = |p: &str| {
        p == "LAYERS.md"
            || p == ".gitignore"
            || p.starts_with(".aayudha/")
            || p.starts_with(".github/workflows/aayudha-")
    };
    let own: Vec<&String> = files.files.iter().filter(|p| !ours(p)).collect();
    // A repository with no file of its own yet (just after `aayu init`) has nothing to judge the globs by.
    if own.is_empty() || (any && own.iter().any(|p| set.is_match(p.as_str()))) {
        return;
    }
    found.push(problem(
        "layers",
        "LAYERS.md",
        if any {
            "no path glob of it matches a file of this repository: every pack's `footprint` is empty"
        } else {
            "no row of it names a layer (L01…L09) with a path glob in backticks: every pack's `footprint` is empty"
        },
        "edit its globs to fit this repository's layout (docs/proof-packs.md, `footprint`), or delete it and run `aayu init` for a starter",
        false,
    ));
}

/// The toolchains the maps and the evidence maps need, run as the sandbox uid (the gate's preflight).
fn toolchain_problems(
    ctx: &Context,
    root: &Path,
    config: &crate::config::Config,
    loaded: Option<&crate::maps::Loaded>,
    found: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) {
    if let Some(loaded) = loaded {
        let all: Vec<crate::select::Selected> =
            crate::select::explicit(&loaded.maps, "all").unwrap_or_default();
        let mut needs: BTreeSet<crate::sandbox::preflight::Tool> =
            crate::floors::behaviour::needs(&loaded.maps, &all, root);
        needs.extend(crate::floors::test_evidence::needs(
            root,
            &evidence_tests(root),
        ));
        if !needs.is_empty() {
            match crate::sandbox::Sandbox::new(&crate::gate::sandbox_settings(
                ctx.env,
                config,
                Some(1),
                root,
            )) {
                Ok(sandbox) => {
                    for line in sandbox.preflight(root, &needs) {
                        if let Some((tool, why)) = line.split_once(": blocked: ") {
                            let (what, fix) =
                                why.split_once(". ").map_or((why, ""), |(w, f)| (w, f));
                            found.push(problem(
                                "toolchain",
                                tool.to_string(),
                                what.to_string(),
                                if fix.is_empty() {
                                    "see docs/action.md, \"Preflight\"".to_string()
                                } else {
                                    fix.trim_end_matches('.').to_string()
                                },
                                false,
                            ));
                        }
                    }
                }
                Err(e) => notes.push(format!(
                    "note: the toolchains could not be checked: the sandbox did not start ({e})"
                )),
            }
        }
    }
}

/// The build folders local checks keep, and how to free them.
fn build_folder_notes(ctx: &Context, root: &Path, notes: &mut Vec<String>) {
    use crate::sandbox::build_cache;
    let key = build_cache::repo_key(root);
    for dir in build_cache::roots(ctx.env) {
        let kept = dir.join(&key);
        if std::fs::symlink_metadata(&kept).is_ok_and(|m| m.is_dir()) {
            notes.push(format!(
                "note: local checks keep their build folders in `{}` ({}): `aayu clean` removes them",
                kept.display(),
                crate::floors::scan::mib(build_cache::size(&kept))
            ));
        }
    }
}

/// The tests every evidence map names (`.aayudha/evidence/*.toml`), for the toolchains they need.
fn evidence_tests(root: &Path) -> Vec<crate::floors::test_evidence::TestId> {
    let mut ids = Vec::new();
    let Ok(entries) = std::fs::read_dir(root.join(".aayudha/evidence")) else {
        return ids;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".toml") {
            continue;
        }
        let rel = format!(".aayudha/evidence/{name}");
        let Ok(bytes) = crate::safe_fs::read(root, &rel, 1 << 20) else {
            continue;
        };
        if let Ok(map) = crate::story::evidence_map::parse(&String::from_utf8_lossy(&bytes), &rel) {
            for criterion in &map.criterion {
                ids.extend(
                    criterion
                        .tests
                        .iter()
                        .filter_map(|t| crate::floors::test_evidence::TestId::parse(t).ok()),
                );
            }
        }
    }
    ids
}

/// The workflow at `path`: there (when `required`), triggered by `pull_request_target` (the gate),
/// pinned to a commit SHA, checking out without persisted credentials, and this release's template.
fn workflow_checks(
    root: &Path,
    path: &str,
    check: &'static str,
    template: &str,
    gate: bool,
    found: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) {
    let text = match crate::safe_fs::read(root, path, 1 << 20) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.is_missing() => {
            if gate {
                found.push(problem(
                    check,
                    path,
                    "the merge-gate workflow is missing: no pull request is gated",
                    "`aayu init` writes it",
                    false,
                ));
            }
            return;
        }
        Err(e) => {
            found.push(problem(
                check,
                path,
                e.to_string(),
                "make it a regular file",
                false,
            ));
            return;
        }
    };
    if gate && !text.contains("pull_request_target") {
        found.push(problem(
            check,
            path,
            "it is not triggered by `pull_request_target`: the pull request's own copy of the workflow and config would gate it",
            "use `on: pull_request_target` as the template does (workflows/README.md explains why)",
            false,
        ));
    }
    let mut pin = None;
    for (n, line) in text.lines().enumerate() {
        let Some(at) = line.find("uses: aayudha/verify") else {
            continue;
        };
        let used = &line[at + "uses: ".len()..];
        let reference = used
            .split_once('@')
            .map(|(_, r)| r.split_whitespace().next().unwrap_or(""))
            .unwrap_or("");
        let sha = crate::git::is_full_sha(reference);
        if sha {
            pin.get_or_insert_with(|| {
                line[line.find('@').map_or(0, |a| a + 1)..]
                    .trim()
                    .to_string()
            });
        } else {
            found.push(problem(
                check,
                format!("{path}:{}", n + 1),
                format!("`{}` is not pinned to a commit SHA: a tag or branch can be moved under you", used.split_whitespace().next().unwrap_or(used)),
                format!(
                    "pin it to the release's commit: `git ls-remote https://github.com/aayudha/verify refs/tags/{}`",
                    if reference.is_empty() { "<version>" } else { reference }
                ),
                false,
            ));
        }
    }
    if gate {
        for (n, line) in text.lines().enumerate() {
            if line.contains("uses: actions/checkout") {
                let step: String = text
                    .lines()
                    .skip(n)
                    .take(8)
                    .take_while(|l| {
                        !l.trim_start().starts_with("- ") || l.contains("actions/checkout")
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                if !step.contains("persist-credentials: false") {
                    found.push(problem(
                        check,
                        format!("{path}:{}", n + 1),
                        "actions/checkout keeps the token in .git/config (`persist-credentials: false` is missing)",
                        "add `persist-credentials: false` under its `with:`",
                        false,
                    ));
                }
            }
        }
    }
    // This release's template, pinned as the file is: what differs is shown, never written over.
    if let Some(pin) = pin {
        let (reference, comment) = pin
            .split_once(" # ")
            .map_or((pin.as_str(), ""), |(r, c)| (r, c));
        let expected = crate::setup::workflow(
            &crate::setup::template_for(template, &text),
            &crate::setup::Pin {
                reference: reference.to_string(),
                comment: comment.to_string(),
                unpinned_because: None,
            },
        );
        if expected != text {
            found.push(problem(
                check,
                path,
                "it differs from this release's template (edited, or from another release)",
                "compare it with the diff aayu doctor prints on stderr; `aayu init --force` writes the template",
                false,
            ));
            notes.push(format!(
                "--- {path} (this release's template)\n+++ {path} (the repository's)\n{}",
                diff(&expected, &text)
            ));
        }
    }
}

/// The lines that differ between `a` and `b`, as a unified diff's body (by longest common subsequence).
pub fn diff(a: &str, b: &str) -> String {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            let _ = writeln!(out, "+{}", b[j]);
            j += 1;
        } else {
            let _ = writeln!(out, "-{}", a[i]);
            i += 1;
        }
    }
    out
}

/// The token (when there is one) can read the repository, and `aayudha/proof` is a required status of the
/// default branch; offline or without access, a note says what could not be checked.
fn online_checks(
    ctx: &Context,
    repo: &crate::git::Repo,
    found: &mut Vec<Problem>,
    notes: &mut Vec<String>,
) {
    let Some((token, source)) = crate::settings::github::token(ctx.env, TokenFor::Read) else {
        notes.push("note: no GITHUB_TOKEN or GH_TOKEN: the token and the required status `aayudha/proof` were not checked".to_string());
        return;
    };
    let Some(slug) = ctx.github.repository.clone().or_else(|| repo.origin_slug()) else {
        notes.push("note: no GitHub repository (GITHUB_REPOSITORY or an origin on GitHub): the required status was not checked".to_string());
        return;
    };
    let api_url = &ctx.github.api_url;
    let Some(slug) = crate::github::RepoSlug::parse(&slug) else {
        return;
    };
    let client = match crate::github::Client::new(api_url, &crate::github::Token::new(token)) {
        Ok(client) => client,
        Err(e) => {
            notes.push(format!("note: GitHub could not be reached ({e}): the token and the required status were not checked"));
            return;
        }
    };
    let branch = match client.repository(&slug) {
        Ok(r) => r.default_branch,
        Err(e) => {
            let fix = e
                .hint()
                .unwrap_or_else(|| "check the token and the repository".to_string());
            // The error names the repository; the place is the token, by the variable it came from.
            let place = match source {
                crate::settings::github::TokenSource::Variable(name) => name,
                crate::settings::github::TokenSource::Gh => "gh auth token",
            };
            found.push(problem("token", place, e.to_string(), fix, false));
            return;
        }
    };
    match client.required_status_contexts(&slug, &branch) {
        Ok((contexts, _)) if contexts.iter().any(|c| c == "aayudha/proof") => {}
        Ok((_, false)) => notes.push(format!(
            "note: `aayudha/proof` is not in the rules of `{branch}`, and its branch protection could not be read with this token (it needs admin access): check that `aayudha/proof` is required"
        )),
        Ok((_, true)) => {
            {
                found.push(problem(
                    "required-status",
                    format!("{slug} branch `{branch}`"),
                    "`aayudha/proof` is not a required status: a pull request can be merged unproven",
                    "require the status `aayudha/proof` in a ruleset or the branch protection of the default branch",
                    false,
                ));
            }
        }
        Err(e) => notes.push(format!(
            "note: the required statuses of `{branch}` could not be checked ({e})"
        )),
    }
}

/// Why a problem `--fix` takes on could not be fixed (said in a note).
#[derive(Debug, thiserror::Error)]
enum FixError {
    #[error(transparent)]
    File(#[from] crate::safe_fs::Refused),
    #[error(transparent)]
    Pointers(#[from] crate::setup::pointers::PointerError),
    #[error(transparent)]
    Registration(#[from] crate::setup::mcp_registration::RegistrationError),
    #[error(transparent)]
    Ledger(#[from] git2::Error),
    #[error("not fixable")]
    NotFixable,
}

fn fix_one(
    root: &Path,
    repo: &crate::git::Repo,
    p: &Problem,
    ledger: &str,
) -> Result<(), FixError> {
    match p.check {
        "gitignore" => {
            let path = if p.problem.contains(".aayudha/proof/") {
                ".aayudha/proof/"
            } else {
                ".aayudha/runs/"
            };
            let mut text = match crate::safe_fs::read(root, ".gitignore", 1 << 20) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) if e.is_missing() => String::new(),
                Err(e) => return Err(e.into()),
            };
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(path);
            text.push('\n');
            Ok(crate::safe_fs::write(root, ".gitignore", text.as_bytes())?)
        }
        "pointer" => {
            crate::setup::pointers::write_pointers(root)?;
            Ok(())
        }
        "mcp-registration" => {
            let host =
                crate::setup::mcp_registration::Host::at(&p.place).ok_or(FixError::NotFixable)?;
            crate::setup::mcp_registration::register(root, host)?;
            Ok(())
        }
        "ledger" => Ok(repo.create_empty_branch(ledger)?),
        _ => Err(FixError::NotFixable),
    }
}
