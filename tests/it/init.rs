//! `aayu init`, `aayu init --verify-skill` and `aayu install` on fresh repositories: an empty one, a Rust
//! crate, a Go module, a Node package and one with none of these. After them `verify --map` passes, the
//! written workflows are actionlint- and zizmor-clean (but `dangerous-triggers` on the gate), a second run
//! changes nothing, the stub blocks a check, the Go control tool runs one, and `install` writes one pointer
//! per root skill and one Cursor rule. `--shards N` writes the sharded gate, which doctor accepts. The
//! gate's signing job is written for a public repository on github.com only (or with `--attest`), and
//! left out, said in one line, otherwise.

use crate::common::{self, TestRepo, run};
use crate::support::fake_github;

use std::path::{Path, PathBuf};

/// The commit of this binary's release tag on the fake GitHub.
pub(crate) const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// How `aayudha/verify` on the fake GitHub has this binary's release tag.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// A lightweight tag: the ref names [`SHA`].
    Tagged,
    /// An annotated tag: the ref names a tag object, which names [`SHA`].
    Annotated,
    /// No such tag (a development build).
    Untagged,
}

/// A fake GitHub serving `aayudha/verify` to the token `ghp_user`, with this binary's release as `release`.
pub(crate) fn release_github(release: Release) -> fake_github::Server {
    let server = fake_github::Server::start();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.repo = "aayudha/verify".into();
        fake.tokens.insert("ghp_user".into(), "octocat".into());
        let tag = format!("tags/v{}", env!("CARGO_PKG_VERSION"));
        match release {
            Release::Tagged => {
                fake.refs.insert(tag, SHA.to_string());
            }
            Release::Annotated => {
                fake.refs.insert(tag, "a".repeat(40));
                fake.annotated_tags.insert("a".repeat(40), SHA.to_string());
            }
            Release::Untagged => {}
        }
    }
    server
}

fn github() -> fake_github::Server {
    release_github(Release::Tagged)
}

/// `aayu …` in `repo` with GitHub at `api` (a closed port when `None`: offline) and no terminal.
fn aayu(repo: &TestRepo, api: Option<&str>, args: &[&str]) -> common::Run {
    let mut cmd = repo.aayu();
    cmd.env("GITHUB_API_URL", api.unwrap_or("http://127.0.0.1:9"))
        .env("GITHUB_TOKEN", "ghp_user")
        // No agent app is detected unless a test makes one.
        .env("HOME", repo.path(".home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args);
    run(&mut cmd)
}

/// Every file under `dir` with its bytes, for "nothing changed".
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = common::files(dir)
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == ".git"))
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The workflow linters scripts/test installs; a test that needs them fails without them, saying how to
/// get them (`AAYU_SKIP_LINTERS=1` skips, said on stderr).
fn linters() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = std::env::var_os("AAYUDHA_LINT_VENV")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/var/tmp/aayudha-lint")])
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/aayudha-lint")))
        .collect();
    if let Some(venv) = candidates
        .into_iter()
        .find(|v| v.join("bin/zizmor").is_file() && v.join("bin/actionlint").is_file())
    {
        return Some(venv);
    }
    if std::env::var("AAYU_SKIP_LINTERS").as_deref() == Ok("1") {
        eprintln!("skipped: the workflow linters are not installed and AAYU_SKIP_LINTERS=1");
        return None;
    }
    panic!(
        "the workflow linters are not installed: run scripts/test once (it installs them), or set AAYU_SKIP_LINTERS=1"
    );
}

fn lint_workflows(repo: &TestRepo) {
    let Some(venv) = linters() else { return };
    let workflows = repo.path(".github/workflows");
    let files: Vec<PathBuf> = ["aayudha-merge-gate.yml", "aayudha-nightly.yml"]
        .iter()
        .map(|f| workflows.join(f))
        .collect();
    lint(&venv, &files);
}

/// actionlint and zizmor on `files`: no finding but zizmor's `dangerous-triggers` on the merge gate.
fn lint(venv: &Path, files: &[PathBuf]) {
    let actionlint = std::process::Command::new(venv.join("bin/actionlint"))
        .args(files)
        .output()
        .expect("actionlint");
    assert!(
        actionlint.status.success(),
        "actionlint: {}",
        String::from_utf8_lossy(&actionlint.stdout)
    );
    let zizmor = std::process::Command::new(venv.join("bin/zizmor"))
        .args(["--offline", "--format", "json"])
        .args(files)
        .output()
        .expect("zizmor");
    let findings: serde_json::Value =
        serde_json::from_slice(&zizmor.stdout).expect("zizmor's JSON");
    let found: Vec<(String, String)> = findings
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["ident"].as_str().unwrap_or("").to_string(),
                f["locations"][0]["symbolic"]["key"]["Local"]["given_path"]
                    .as_str()
                    .or(f["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"].as_str())
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert!(
        found
            .iter()
            .all(|(ident, path)| ident == "dangerous-triggers"
                && path.ends_with("aayudha-merge-gate.yml")),
        "zizmor: {found:?}"
    );
}

#[test]
fn init_writes_the_config_the_workflows_and_gitignore_pinned_to_the_release() {
    let github = github();
    let repo = TestRepo::new();
    repo.write(".gitignore", "target/");
    let out = aayu(&repo, Some(&github.url), &["init"]);
    let version = env!("CARGO_PKG_VERSION");
    crate::aayu_snapshot!("init_writes", out);
    // Pinned by the tag's commit, through the API.
    let gate = std::fs::read_to_string(repo.path(".github/workflows/aayudha-merge-gate.yml"))
        .expect("gate");
    assert!(
        gate.contains(&format!("uses: aayudha/verify@{SHA} # v{version}")),
        "{gate}"
    );
    assert!(gate.contains(&format!("uses: aayudha/verify/slim@{SHA} # v{version}")));
    let nightly = std::fs::read_to_string(repo.path(".github/workflows/aayudha-nightly.yml"))
        .expect("nightly");
    assert!(
        nightly.contains(&format!("verify-sweep.yml@{SHA} # v{version}")),
        "{nightly}"
    );
    assert!(!gate.contains("111111") && !nightly.contains("111111"));
    assert!(
        github
            .state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .any(|r| r == &format!("GET ref tags/v{version}")),
    );
    // The config shows every key, commented: it changes nothing.
    let config = std::fs::read_to_string(repo.path(".aayudha/config.toml")).expect("config");
    assert!(config.contains("# check_timeout_s = 180"), "{config}");
    assert_eq!(
        std::fs::read_to_string(repo.path(".gitignore")).expect("gitignore"),
        "target/\n# aayudha: local proof packs and run folders\n.aayudha/proof/\n.aayudha/runs/\n"
    );
    lint_workflows(&repo);
    // verify reads the config and finds no map, saying how to start one.
    crate::aayu_snapshot!("init_then_map", run(repo.aayu().args(["verify", "--map"])));

    // A second run changes nothing and says so.
    let before = snapshot(repo.root());
    crate::aayu_snapshot!("init_again", aayu(&repo, Some(&github.url), &["init"]));
    assert_eq!(snapshot(repo.root()), before);

    // --force replaces, and lists what it replaced.
    repo.write(".aayudha/config.toml", "[verify]\ncheck_timeout_s = 5\n");
    crate::aayu_snapshot!(
        "init_forced",
        aayu(&repo, Some(&github.url), &["init", "--force"])
    );
    assert!(
        std::fs::read_to_string(repo.path(".aayudha/config.toml"))
            .expect("config")
            .contains("# check_timeout_s = 180")
    );
}

#[test]
fn offline_or_unreleased_the_workflows_name_the_tag_to_pin() {
    let repo = TestRepo::new();
    crate::aayu_snapshot!("init_dry_run", aayu(&repo, None, &["init", "--dry-run"]));
    assert!(
        !repo.path(".aayudha").exists()
            && !repo.path(".github").exists()
            && !repo.path(".gitignore").exists(),
        "--dry-run writes nothing"
    );
    crate::aayu_snapshot!("init_offline", aayu(&repo, None, &["init"]));
    let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
    let gate = std::fs::read_to_string(repo.path(".github/workflows/aayudha-merge-gate.yml"))
        .expect("gate");
    assert!(
        gate.contains(&format!(
            "uses: aayudha/verify@{tag} # pin this to its commit SHA"
        )),
        "{gate}"
    );
    // An annotated release tag is followed to its commit.
    let github = release_github(Release::Annotated);
    let annotated = TestRepo::new();
    crate::aayu_snapshot!(
        "init_annotated_tag",
        aayu(&annotated, Some(&github.url), &["init"])
    );
    // A version with no tag (a development build) says so.
    let github = release_github(Release::Untagged);
    let other = TestRepo::new();
    crate::aayu_snapshot!("init_untagged", aayu(&other, Some(&github.url), &["init"]));
}

/// A gate workflow without its signing job, the gate templates' last job (the job and the blank line
/// before it).
fn without_attest(text: &str) -> String {
    let at = text.find("\n  attest:\n").expect("the signing job");
    let job = &text[at + 1..];
    assert!(
        job.lines()
            .skip(1)
            .all(|l| l.is_empty() || l.starts_with("    ")),
        "the signing job is the last: {job}"
    );
    text[..at].to_string()
}

/// A workflow template as init writes it, pinned to the fake GitHub's release commit.
fn pinned(template: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(template))
        .expect(template);
    text.replace(
        "1111111111111111111111111111111111111111 # replace with a release's commit SHA",
        &format!("{SHA} # v{}", env!("CARGO_PKG_VERSION")),
    )
}

/// `--shards N`, 2 to 64, writes the sharded gate (plan, the legs, merge, pack) with N legs where the
/// single-job gate goes, and doctor takes it as this release's template, N and all; 1 or no flag writes
/// the single-job gate byte for byte; any other number writes nothing and says why, naming the flag.
#[test]
fn init_shards_writes_the_sharded_gate_with_that_many_legs() {
    let github = github();
    let gate_path = ".github/workflows/aayudha-merge-gate.yml";
    let single = pinned("workflows/aayudha-merge-gate.yml");
    for args in [&["init"][..], &["init", "--shards", "1"]] {
        let repo = TestRepo::new();
        let out = aayu(&repo, Some(&github.url), args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        // No origin: the signing job is left out.
        assert_eq!(
            std::fs::read_to_string(repo.path(gate_path)).expect("gate"),
            without_attest(&single),
            "{args:?}"
        );
    }

    let repo = TestRepo::new();
    let out = aayu(&repo, Some(&github.url), &["init", "--shards", "3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let gate = std::fs::read_to_string(repo.path(gate_path)).expect("gate");
    assert_eq!(
        gate,
        without_attest(
            &pinned("workflows/aayudha-merge-gate-sharded.yml").replacen(
                "          shards: 4 # ",
                "          shards: 3 # ",
                1
            )
        )
    );
    for needle in [
        "  plan:\n",
        "          mode: plan\n          shards: 3 # ",
        "  shard:\n",
        "  merge:\n",
        "  pack:\n",
    ] {
        assert!(gate.contains(needle), "{needle:?}: {gate}");
    }
    assert!(
        !gate.contains("111111") && !gate.contains("shards: 4"),
        "{gate}"
    );
    lint_workflows(&repo);

    // doctor compares the file with the sharded template of its own number of legs: the one line the
    // template asks you to change is yours; any other change is still shown.
    let doctor = gate_workflow_problems;
    assert_eq!(doctor(&repo), Vec::<serde_json::Value>::new());
    repo.write(gate_path, gate.replacen("shards: 3 # ", "shards: 12 # ", 1));
    assert_eq!(doctor(&repo), Vec::<serde_json::Value>::new());
    repo.write(
        gate_path,
        gate.replacen("fail-fast: false", "fail-fast: true", 1),
    );
    let found = doctor(&repo);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("differs from this release's template")),
        "{found:?}"
    );

    // Out of range: exit 2 naming the flag, nothing written.
    for n in ["0", "65"] {
        let repo = TestRepo::new();
        let out = aayu(&repo, Some(&github.url), &["init", "--shards", n]);
        crate::aayu_snapshot!(format!("init_shards_{n}"), out);
        assert!(
            !repo.path(".aayudha").exists() && !repo.path(".github").exists(),
            "--shards {n} writes nothing"
        );
    }
}

/// A repository whose `origin` is `aayudha/verify` on github.com: the one repository the fake GitHub of
/// [`release_github`] holds.
fn clone_of_the_release_repository() -> TestRepo {
    let repo = TestRepo::new();
    repo.git(&[
        "remote",
        "add",
        "origin",
        "https://github.com/aayudha/verify.git",
    ]);
    repo
}

/// The gate's signing job (issue 41) is written when `GET /repos/{o}/{r}` says the `origin`'s repository
/// is public on github.com; a private one, an offline init or no repository at all leave it out, saying
/// why in one line. `--attest` writes it anyway, `--no-attest` leaves it out saying nothing, and both are
/// a usage error. The sharded gate likewise; doctor takes the file with or without the job.
#[test]
fn init_writes_the_attest_job_for_a_public_repository_on_github_com_only() {
    let gate_path = ".github/workflows/aayudha-merge-gate.yml";
    let single = pinned("workflows/aayudha-merge-gate.yml");
    let sharded = pinned("workflows/aayudha-merge-gate-sharded.yml").replacen(
        "          shards: 4 # ",
        "          shards: 3 # ",
        1,
    );
    let gate = |repo: &TestRepo| std::fs::read_to_string(repo.path(gate_path)).expect("gate");
    let left_out = |why: &str| {
        format!("notice: the attest job is left out: {why} (--attest writes it anyway)\n")
    };
    let asked = |github: &fake_github::Server| {
        let fake = github.state.lock().expect("lock");
        fake.requests
            .iter()
            .filter(|r| r.as_str() == "GET repository")
            .count()
    };

    // Public: the whole template, nothing said.
    let github = github();
    let public = clone_of_the_release_repository();
    let out = aayu(&public, Some(&github.url), &["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&public), single);
    assert!(!out.stdout.contains("attest"), "{}", out.stdout);
    assert_eq!(asked(&github), 1);
    lint_workflows(&public);
    let sharded_public = clone_of_the_release_repository();
    let out = aayu(
        &sharded_public,
        Some(&github.url),
        &["init", "--shards", "3"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&sharded_public), sharded);
    lint_workflows(&sharded_public);

    // `--no-attest`: left out, nothing said, GitHub not asked.
    let omitted = clone_of_the_release_repository();
    let out = aayu(&omitted, Some(&github.url), &["init", "--no-attest"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&omitted), without_attest(&single));
    assert!(!out.stdout.contains("attest"), "{}", out.stdout);
    assert_eq!(asked(&github), 2, "--no-attest asks nothing");

    // Private: left out, and why.
    github.state.lock().expect("lock").visibility = "private".into();
    let private = clone_of_the_release_repository();
    let out = aayu(&private, Some(&github.url), &["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&private), without_attest(&single));
    assert!(
        out.stdout.contains(&left_out("`aayudha/verify` is not public (a private or internal repository's attestations come from GitHub's private Sigstore instance, which this version of aayu does not verify)")),
        "{}",
        out.stdout
    );
    lint_workflows(&private);
    let sharded_private = clone_of_the_release_repository();
    let out = aayu(
        &sharded_private,
        Some(&github.url),
        &["init", "--shards", "3"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&sharded_private), without_attest(&sharded));
    assert!(
        out.stdout
            .contains("notice: the attest job is left out: `aayudha/verify` is not public"),
        "{}",
        out.stdout
    );
    // `--attest` writes it all the same, without asking.
    let forced = clone_of_the_release_repository();
    let out = aayu(&forced, Some(&github.url), &["init", "--attest"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate(&forced), single);
    assert!(!out.stdout.contains("attest"), "{}", out.stdout);

    // Offline: left out, and why; `--attest` writes it, with the sharded gate too.
    let offline = clone_of_the_release_repository();
    let out = aayu(&offline, None, &["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!gate(&offline).contains("  attest:"), "{}", gate(&offline));
    assert!(
        out.stdout.contains("notice: the attest job is left out: GitHub could not say whether `aayudha/verify` is public (cannot reach GitHub for the repository aayudha/verify: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(") (--attest writes it anyway)\n"),
        "{}",
        out.stdout
    );
    let offline_forced = clone_of_the_release_repository();
    let out = aayu(
        &offline_forced,
        None,
        &["init", "--attest", "--shards", "3"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let written = gate(&offline_forced);
    assert!(
        written.contains("\n  attest:\n    name: aayudha/attest\n    needs: [merge]\n"),
        "{written}"
    );
    assert!(written.contains("          shards: 3 # "), "{written}");
    assert!(!out.stdout.contains("attest"), "{}", out.stdout);

    // No token, no repository, another server: left out, each said.
    let no_token = clone_of_the_release_repository();
    let out = run(no_token
        .aayu()
        .env("GITHUB_API_URL", &github.url)
        .env("HOME", no_token.path(".home"))
        .arg("init"));
    assert!(
        out.stdout.contains(&left_out(
            "no GITHUB_TOKEN or GH_TOKEN to ask GitHub whether `aayudha/verify` is public"
        )),
        "{}",
        out.stdout
    );
    let nowhere = TestRepo::new();
    let out = aayu(&nowhere, Some(&github.url), &["init"]);
    assert!(
        out.stdout.contains(&left_out("no GitHub repository to ask about (GH_REPO, GITHUB_REPOSITORY or an `origin` on GitHub)")),
        "{}",
        out.stdout
    );
    let enterprise = clone_of_the_release_repository();
    let out = run(enterprise
        .aayu()
        .env("GITHUB_API_URL", &github.url)
        .env("GITHUB_SERVER_URL", "https://ghe.example")
        .env("GITHUB_TOKEN", "ghp_user")
        .env("HOME", enterprise.path(".home"))
        .arg("init"));
    assert!(
        out.stdout.contains(&left_out(
            "GitHub here is `ghe.example` (GITHUB_SERVER_URL), not github.com"
        )),
        "{}",
        out.stdout
    );
    assert_eq!(asked(&github), 4, "only the public and private inits asked");

    // Both flags: a usage error, nothing written.
    let both = TestRepo::new();
    crate::aayu_snapshot!(
        "init_attest_and_no_attest",
        aayu(&both, None, &["init", "--attest", "--no-attest"])
    );
    assert!(!both.path(".github").exists() && !both.path(".aayudha").exists());

    // doctor takes the gate with or without the job, single-job or sharded.
    // The offline init's workflows name the tag: only the template's difference counts here.
    let doctor = |repo: &TestRepo| -> Vec<serde_json::Value> {
        gate_workflow_problems(repo)
            .into_iter()
            .filter(|p| {
                p["problem"]
                    .as_str()
                    .is_some_and(|t| t.contains("differs from this release's template"))
            })
            .collect()
    };
    for repo in [
        &public,
        &sharded_public,
        &private,
        &sharded_private,
        &offline_forced,
    ] {
        assert_eq!(
            doctor(repo),
            Vec::<serde_json::Value>::new(),
            "{}",
            gate(repo)
        );
    }
    // Half a job is not the template.
    public.write(
        gate_path,
        gate(&public).replace("          subject-name: pack.json\n", ""),
    );
    assert_eq!(doctor(&public).len(), 1);
}

/// `init` writes a `LAYERS.md` starter with globs for the stack at the root (so a pack gets a
/// `footprint`), and never replaces one, not even with `--force`.
#[test]
fn init_writes_a_layers_md_starter_for_the_stack_it_finds() {
    let rust = TestRepo::new();
    rust.write(
        "Cargo.toml",
        "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    let out = aayu(&rust, None, &["init"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    insta::assert_snapshot!(
        "layers_rust",
        std::fs::read_to_string(rust.path("LAYERS.md")).expect("LAYERS.md")
    );
    let go = TestRepo::new();
    go.write("go.mod", "module example.com/shop\n\ngo 1.19\n");
    let out = aayu(&go, None, &["init"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    insta::assert_snapshot!(
        "layers_go",
        std::fs::read_to_string(go.path("LAYERS.md")).expect("LAYERS.md")
    );
    // The user's own is kept, --force or not.
    go.write("LAYERS.md", "# our layers\n");
    let out = aayu(&go, None, &["init", "--force"]);
    assert!(
        out.stdout
            .contains("kept     LAYERS.md (it exists; it is yours, never replaced)\n"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(go.path("LAYERS.md")).expect("LAYERS.md"),
        "# our layers\n"
    );
}

/// `init --verify-skill` on a repository of this stack: the map passes `verify --map`; a second run
/// changes nothing.
fn starter(marker: Option<(&str, &str)>, extra: &[&str]) -> (TestRepo, common::Run) {
    let repo = TestRepo::new();
    if let Some((file, text)) = marker {
        repo.write(file, text);
    }
    let mut args = vec!["init", "--verify-skill", "--product", "shop"];
    args.extend(extra);
    let out = aayu(&repo, None, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // Every stack's starter map reads the same way.
    crate::aayu_snapshot!("starter_map", run(repo.aayu().args(["verify", "--map"])));
    let before = snapshot(repo.root());
    let again = aayu(&repo, None, &args);
    assert_eq!(again.code, 0);
    assert_eq!(
        snapshot(repo.root()),
        before,
        "a second init changes nothing"
    );
    (repo, out)
}

fn map_block(repo: &TestRepo) -> serde_json::Value {
    let readme =
        std::fs::read_to_string(repo.path(".agents/skills/verify-shop/features/README.md"))
            .expect("README");
    let block = readme
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("map block");
    serde_json::from_str(block).expect("json")
}

/// A feature `add` with one check, for a starter map.
fn add_feature(repo: &TestRepo, steps: &str) {
    let dir = ".agents/skills/verify-shop/features";
    repo.write(
        &format!("{dir}/add.md"),
        common::feature_md(
            r#"{"id": "add", "layers": ["L02"], "sources": [], "surfaces": {}, "verified_at": ""}"#,
            &[&format!(
                r#"{{"id": "sums", "kind": "lib", "evidence": "api-trace", "steps": {steps}}}"#
            )],
        ),
    );
    let readme = std::fs::read_to_string(repo.path(&format!("{dir}/README.md"))).expect("README");
    repo.write(
        &format!("{dir}/README.md"),
        format!("{readme}\n1. [Add](add.md)\n"),
    );
}

#[test]
fn a_repository_of_no_known_stack_gets_a_stub_that_blocks_every_check() {
    let (repo, out) = starter(None, &[]);
    crate::aayu_snapshot!("starter_no_stack", out);
    assert_eq!(
        map_block(&repo)["control"],
        serde_json::json!(["sh", ".agents/skills/verify-shop/control/check"])
    );
    add_feature(&repo, r#"[{"run": ["true"]}]"#);
    let check = run(repo
        .aayu()
        .args(["verify", "--check", "add", "--json", "--out", "run"]));
    assert_eq!(check.code, 3, "{}", check.stderr);
    let report: serde_json::Value = serde_json::from_str(&check.stdout).expect("json");
    assert_eq!(report["checks"][0]["status"], "blocked");
    assert!(
        report["checks"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("replace this control tool")),
        "{report:#}"
    );
}

#[test]
fn a_rust_crate_and_a_node_package_use_the_built_in_step_runner() {
    let (rust, out) = starter(
        Some((
            "Cargo.toml",
            "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )),
        &[],
    );
    crate::aayu_snapshot!("starter_rust", out);
    assert_eq!(
        map_block(&rust)["control"],
        serde_json::json!(["aayu", "control"])
    );
    let skill = std::fs::read_to_string(rust.path(".agents/skills/verify-shop/SKILL.md"))
        .expect("SKILL.md");
    assert!(
        skill.starts_with("---\nname: verify-shop\ndescription: \""),
        "{skill}"
    );
    assert!(skill.contains("## Surface rules to enable"), "{skill}");
    let (node, out) = starter(Some(("package.json", "{\"name\": \"shop\"}\n")), &[]);
    crate::aayu_snapshot!("starter_node", out);
    assert_eq!(
        map_block(&node)["control"],
        serde_json::json!(["aayu", "control"])
    );
    assert!(
        std::fs::read_to_string(node.path(".agents/skills/verify-shop/SKILL.md"))
            .expect("SKILL.md")
            .contains("browser steps"),
    );
    // Both: Cargo.toml first, and the other named.
    let both = TestRepo::new();
    both.write(
        "Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
    )
    .write("package.json", "{}\n");
    crate::aayu_snapshot!(
        "starter_both_stacks",
        aayu(&both, None, &["init", "--verify-skill", "--yes"])
    );
    let chosen = aayu(
        &both,
        None,
        &[
            "init",
            "--verify-skill",
            "--stack",
            "node",
            "--product",
            "web",
        ],
    );
    crate::aayu_snapshot!("starter_stack_chosen", chosen);
}

/// The suggested rule of `kind` in the starter's `SKILL.md`, as JSON.
fn suggested_rule(repo: &TestRepo, kind: &str) -> serde_json::Value {
    let skill = std::fs::read_to_string(repo.path(".agents/skills/verify-shop/SKILL.md"))
        .expect("SKILL.md");
    let line = skill
        .lines()
        .find(|l| l.contains(&format!("\"kind\": \"{kind}\"")))
        .unwrap_or_else(|| panic!("no {kind} rule in {skill}"));
    serde_json::from_str(line.trim()).expect("a rule")
}

#[test]
fn a_go_module_gets_the_built_in_runner_and_a_func_rule_in_sync_with_its_tests() {
    crate::needs!(go);
    let (repo, out) = starter(
        Some(("go.mod", "module example.com/shop\n\ngo 1.19\n")),
        &[],
    );
    crate::aayu_snapshot!("starter_go", out);
    assert_eq!(
        map_block(&repo)["control"],
        serde_json::json!(["aayu", "control"])
    );
    assert!(
        !repo.path(".agents/skills/verify-shop/control").exists(),
        "no control tool of its own"
    );
    repo.write("add.go", "package shop\n\nfunc Add(a, b int) int { return a + b }\n")
        .write(
            "add_test.go",
            "package shop\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n",
        )
        .write("testdata/fixture.go", "package fixture\n\nfunc Fixture() {}\n");
    // The suggested `func` rule, enabled: the module's tests and testdata are no surfaces.
    let rule = suggested_rule(&repo, "func");
    let dir = ".agents/skills/verify-shop/features";
    let block =
        serde_json::json!({"product": "shop", "control": ["aayu", "control"], "surfaces": [rule]});
    repo.write(
        &format!("{dir}/README.md"),
        common::map_readme(&block.to_string(), &["add.md"]),
    );
    let write_check = |steps: &str, verified_at: &str| {
        repo.write(
            &format!("{dir}/add.md"),
            common::feature_md(
                &format!(r#"{{"id": "add", "layers": ["L02"], "sources": ["add.go", "add_test.go"], "surfaces": {{"func": ["Add"]}}, "verified_at": "{verified_at}"}}"#),
                &[&format!(
                    r#"{{"id": "sums", "kind": "lib", "evidence": "api-trace", "steps": {steps}}}"#
                )],
            ),
        );
    };
    let steps = r#"[{"test": {"package": ".", "test": "TestAdd"}}, {"run": ["go", "version"], "stdout": ["go version"]}]"#;
    write_check(steps, "");
    let sha = repo.commit("add");
    write_check(steps, &sha);
    repo.commit("verified");
    crate::aayu_snapshot!(
        "go_func_rule_map",
        run(repo.aayu().args(["verify", "--map"]))
    );
    let check = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--check", "add", "--json", "--out", "run"]));
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let report: serde_json::Value = serde_json::from_str(&check.stdout).expect("json");
    assert_eq!(report["checks"][0]["status"], "passed", "{report:#}");
    assert_eq!(report["checks"][0]["artifacts"][0]["kind"], "api-trace");
    // A test that is not there fails the check, with the step.
    write_check(
        r#"[{"test": {"package": ".", "test": "TestMissing"}}]"#,
        &sha,
    );
    let missing = run(common::with_toolchain(&mut repo.aayu())
        .args(["verify", "--check", "add", "--json", "--out", "run2"]));
    assert_eq!(missing.code, 3, "{}", missing.stderr);
}

#[test]
fn a_python_package_gets_the_built_in_runner_and_rules_in_sync_with_its_tests() {
    crate::needs!(python3);
    let pyproject = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"shop\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntest = [\"pytest\"]\n\n[project.scripts]\nshop = \"shop:main\"\n\n[tool.setuptools]\npy-modules = [\"shop\"]\n";
    let (repo, out) = starter(Some(("pyproject.toml", pyproject)), &[]);
    crate::aayu_snapshot!("starter_python", out);
    assert_eq!(
        map_block(&repo)["control"],
        serde_json::json!(["aayu", "control"])
    );
    let skill = std::fs::read_to_string(repo.path(".agents/skills/verify-shop/SKILL.md"))
        .expect("SKILL.md");
    assert!(
        skill.contains("// {\"id\": \"help\""),
        "a commented run step: {skill}"
    );
    repo.write(
        ".aayudha/config.toml",
        format!("[verify]\npython_wheels = \"{}\"\n", common::wheels().display()),
    )
    .write(
        "shop.py",
        "def add(a, b):\n    return a + b\n\n\ndef _helper():\n    pass\n\n\ndef main():\n    print(add(2, 3))\n",
    )
    .write(
        "tests/test_add.py",
        "from shop import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef helper_in_tests():\n    pass\n",
    )
    .write("conftest.py", "def fixture_helper():\n    pass\n")
    .write(".gitignore", "*.egg-info/\n__pycache__/\n.aayudha/runs/\n");
    // The suggested rules, enabled: test files are no surfaces, `_helper` is private, the entry point is
    // the command.
    let rules = [
        suggested_rule(&repo, "func"),
        suggested_rule(&repo, "command"),
    ];
    let dir = ".agents/skills/verify-shop/features";
    let block =
        serde_json::json!({"product": "shop", "control": ["aayu", "control"], "surfaces": rules});
    repo.write(
        &format!("{dir}/README.md"),
        common::map_readme(&block.to_string(), &["add.md"]),
    );
    let write_check = |steps: &str, verified_at: &str| {
        repo.write(
            &format!("{dir}/add.md"),
            common::feature_md(
                &format!(r#"{{"id": "add", "layers": ["L02"], "sources": ["shop.py", "tests/test_add.py"], "surfaces": {{"func": ["add", "main"], "command": ["shop"]}}, "verified_at": "{verified_at}"}}"#),
                &[&format!(
                    r#"{{"id": "sums", "kind": "lib", "evidence": "api-trace", "steps": {steps}}}"#
                )],
            ),
        );
    };
    let steps = r#"[{"test": {"package": ".", "test": "tests/test_add.py::test_add"}}, {"run": ["python3", "-c", "print('ok')"], "stdout": ["ok"]}]"#;
    write_check(steps, "");
    let sha = repo.commit("add");
    write_check(steps, &sha);
    repo.commit("verified");
    let map = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(map.code, 0, "in sync: {}{}", map.stdout, map.stderr);
    let check = run(repo
        .aayu()
        .env("PIP_NO_INDEX", "1")
        .args(["verify", "--check", "add", "--json", "--out", "run"]));
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let report: serde_json::Value = serde_json::from_str(&check.stdout).expect("json");
    assert_eq!(report["checks"][0]["status"], "passed", "{report:#}");
    // A node id that is not there fails the check, with the step.
    write_check(
        r#"[{"test": {"package": ".", "test": "tests/test_add.py::test_missing"}}]"#,
        &sha,
    );
    let missing = run(repo
        .aayu()
        .env("PIP_NO_INDEX", "1")
        .args(["verify", "--check", "add", "--json", "--out", "run2"]));
    assert_eq!(missing.code, 3, "{}\n{}", missing.stdout, missing.stderr);
    let report: serde_json::Value = serde_json::from_str(&missing.stdout).expect("json");
    assert_eq!(
        report["checks"][0]["reason"],
        "step 1 (test tests/test_add.py::test_missing): `.:tests/test_add.py::test_missing` was not found: pytest found no such test",
        "{report:#}"
    );
    let status = repo.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ]);
    assert!(
        !status.contains("egg-info") && !status.contains("__pycache__"),
        "{status}"
    );
}

#[test]
fn the_rust_starter_s_func_rule_leaves_out_test_modules_in_their_own_file() {
    let (repo, _) = starter(
        Some((
            "Cargo.toml",
            "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )),
        &[],
    );
    let rule = suggested_rule(&repo, "func");
    assert_eq!(
        rule["files"],
        serde_json::json!(["src/**/*.rs", "!**/tests.rs"])
    );
    let skill = std::fs::read_to_string(repo.path(".agents/skills/verify-shop/SKILL.md"))
        .expect("SKILL.md");
    assert!(
        skill.contains(
            "a `pub fn` inside a `#[cfg(test)] mod tests` block of another file is still matched"
        ),
        "{skill}"
    );
}

#[test]
fn the_maintainer_is_written_when_chosen_and_only_detected_apps_are_offered() {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.path(".cursor")).expect("mkdir");
    let out = aayu(
        &repo,
        None,
        &["init", "--verify-skill", "--product", "shop"],
    );
    crate::aayu_snapshot!("starter_maintainer_detected", out);
    // Run again, nothing to write: the detection is not said again.
    let again = aayu(
        &repo,
        None,
        &["init", "--verify-skill", "--product", "shop"],
    );
    crate::aayu_snapshot!("starter_maintainer_not_said_again", again);
    let chosen = aayu(
        &repo,
        None,
        &[
            "init",
            "--verify-skill",
            "--product",
            "shop",
            "--maintainer",
            "amp",
        ],
    );
    crate::aayu_snapshot!("starter_maintainer_chosen", chosen);
    let config = std::fs::read_to_string(repo.path(".aayudha/config.toml")).expect("config");
    assert!(config.contains("\nmaintainer = \"amp\"\n"), "{config}");
    let check = run(repo.aayu().args(["verify", "--map"]));
    assert_eq!(check.code, 0, "the config still reads: {}", check.stderr);
    let bad = aayu(
        &repo,
        None,
        &["init", "--verify-skill", "--maintainer", "vim"],
    );
    crate::aayu_snapshot!("init_unknown_maintainer", bad);
    crate::aayu_snapshot!(
        "init_stack_without_verify_skill",
        aayu(&repo, None, &["init", "--stack", "go"])
    );
}

#[test]
fn install_points_claude_code_at_each_root_skill_and_gives_cursor_one_rule() {
    let repo = TestRepo::new();
    aayu(
        &repo,
        None,
        &["init", "--verify-skill", "--product", "shop", "--yes"],
    );
    std::fs::create_dir_all(repo.path("web")).expect("mkdir");
    aayu(
        &repo,
        None,
        &[
            "init",
            "--verify-skill",
            "--root",
            "web",
            "--product",
            "web",
            "--yes",
        ],
    );
    assert!(
        repo.path("web/.agents/skills/verify-web/features/README.md")
            .is_file()
    );
    let out = run(repo.aayu().arg("install"));
    crate::aayu_snapshot!("install_two_skills", out);
    let pointers: Vec<String> = std::fs::read_dir(repo.path(".claude/commands/aayudha"))
        .expect("pointers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        pointers,
        vec!["verify-shop.md".to_string()],
        "one pointer per root skill"
    );
    let pointer = std::fs::read_to_string(repo.path(".claude/commands/aayudha/verify-shop.md"))
        .expect("pointer");
    assert!(
        pointer.starts_with("---\ndescription: \"Check and keep shop's feature map honest"),
        "{pointer}"
    );
    assert!(
        pointer.contains("`.agents/skills/verify-shop/SKILL.md`"),
        "{pointer}"
    );
    let rule =
        std::fs::read_to_string(repo.path(".cursor/rules/aayudha-verify.mdc")).expect("rule");
    assert_eq!(rule.matches("/SKILL.md` — ").count(), 2, "{rule}");
    assert!(
        rule.contains("- `web/.agents/skills/verify-web/SKILL.md`"),
        "{rule}"
    );
    let before = snapshot(repo.root());
    crate::aayu_snapshot!("install_again", run(repo.aayu().arg("install")));
    assert_eq!(snapshot(repo.root()), before, "install is idempotent");
}

/// `aayu doctor --json`'s problems with the gate workflow, without a token.
fn gate_workflow_problems(repo: &TestRepo) -> Vec<serde_json::Value> {
    let out = run(repo
        .aayu()
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .args(["doctor", "--json"]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["check"] == "gate-workflow")
        .cloned()
        .collect()
}
