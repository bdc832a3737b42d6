//! Shared test helpers: a git repository in a temp dir with a fixed author and dates and no access to
//! the user's git config, and the real `aayu` binary run with a scrubbed environment.

#![allow(dead_code)]

pub mod hostile;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use tempfile::TempDir;

/// A git repository made in a temp dir.
pub struct TestRepo {
    dir: TempDir,
}

/// `git` with no global or system config and fixed identities and dates.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    scrubbed(&mut cmd, dir)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
    cmd
}

impl TestRepo {
    pub fn new() -> TestRepo {
        let dir = tempfile::Builder::new()
            .prefix("aayu-test-")
            .tempdir()
            .expect("temp dir");
        let repo = TestRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file (creating folders).
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &TestRepo {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write");
        self
    }

    pub fn remove(&self, rel: &str) -> &TestRepo {
        std::fs::remove_file(self.path(rel)).expect("remove");
        self
    }

    /// Runs git in the repository; panics with its output when it fails.
    pub fn git(&self, args: &[&str]) -> String {
        let output = git_command(self.root())
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Stages everything and commits; returns the new commit's SHA.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `aayu` started in the repository's root.
    pub fn aayu(&self) -> Command {
        aayu_in(self.root())
    }
}

/// An empty bare repository in a temporary folder (an `origin` to push to), and its path as a URL.
pub fn bare_repo() -> (TempDir, String) {
    let dir = tempfile::tempdir().expect("temp");
    let status = git_command(dir.path())
        .args(["init", "-q", "--bare", "-b", "main"])
        .status()
        .expect("git init");
    assert!(status.success(), "git init --bare");
    let url = dir.path().display().to_string();
    (dir, url)
}

/// The real binary with a scrubbed environment: nothing of CI, GitHub or the runner leaks in. A local
/// run's kept build folders go inside the repository's `.git` (`AAYUDHA_BUILD_CACHE`), so they go with
/// the test's repository and never into the machine's `/var/cache` or a home.
pub fn aayu_in(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("aayu").expect("the aayu binary is built");
    scrubbed(&mut cmd, dir).env("NO_COLOR", "1");
    if dir.join(".git").is_dir() {
        cmd.env("AAYUDHA_BUILD_CACHE", build_cache(dir));
    }
    cmd
}

/// Where a repository's local runs keep their build folders in the tests.
pub fn build_cache(repo: &Path) -> PathBuf {
    repo.join(".git/aayu-build-cache")
}

/// An empty environment but for `PATH`, a `HOME` of `dir`, and no git config outside the repository.
fn scrubbed<'a>(cmd: &'a mut Command, dir: &Path) -> &'a mut Command {
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
}

/// stdout, stderr and the exit code of a finished command.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    let output = cmd.output().expect("aayu runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The path of a map in a skill for `product` under `base` (`""` for the root).
pub fn skill(base: &str, product: &str) -> String {
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{base}/")
    };
    format!("{prefix}.agents/skills/verify-{product}/features")
}

/// A map README with the given map block and index links.
pub fn map_readme(block: &str, links: &[&str]) -> String {
    let index: String = links.iter().map(|l| format!("- [{l}]({l})\n")).collect();
    format!("# Map\n\nThe product.\n\n```json\n{block}\n```\n\n## Index\n\n{index}")
}

/// A feature file with the given feature block and check blocks, in the contract's shape.
pub fn feature_md(block: &str, checks: &[&str]) -> String {
    let checks: String = checks
        .iter()
        .map(|c| format!("```json\n{c}\n```\n\n"))
        .collect();
    format!(
        "# Feature\n\nWhat it does.\n\n```json\n{block}\n```\n\n## Sub-features\n\n- one\n\n## How to reach it\n\nRun it.\n\n## Behaviour checks\n\n{checks}## Gotchas\n\nNone.\n"
    )
}

/// A program some tests need, how to tell it is there, and how to install it.
struct Tool {
    name: &'static str,
    probe: &'static [&'static str],
    install: &'static str,
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "go",
        probe: &["go", "version"],
        install: "apt-get install golang-go",
    },
    Tool {
        name: "perl",
        probe: &["perl", "-MJSON::PP", "-e", "1"],
        install: "apt-get install perl",
    },
    Tool {
        name: "python3",
        probe: &["python3", "--version"],
        install: "apt-get install python3",
    },
    Tool {
        name: "cc",
        probe: &["cc", "--version"],
        install: "apt-get install gcc",
    },
    Tool {
        name: "mmdebstrap",
        probe: &["mmdebstrap", "--version"],
        install: "apt-get install mmdebstrap",
    },
    Tool {
        name: "chromium",
        probe: &["chromium", "--headless", "--no-sandbox", "--version"],
        install: "apt-get install chromium fonts-liberation",
    },
    Tool {
        name: "node",
        probe: &["node", "--version"],
        install: "apt-get install nodejs npm && npm ci --prefix tests/interop",
    },
];

/// Whether a tool a test needs is there. Missing, the test fails with the line that installs it — never a
/// silent skip; only `AAYU_SKIP_<TOOL>=1`, set by a person, makes it a skip, said on stderr.
pub fn tool(name: &str) -> bool {
    let Some(tool) = TOOLS.iter().find(|t| t.name == name) else {
        panic!("no tool `{name}` is known to the tests (common::TOOLS)");
    };
    let there = Command::new(tool.probe[0])
        .args(&tool.probe[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if there {
        return true;
    }
    let skip = format!("AAYU_SKIP_{}", name.to_uppercase());
    if std::env::var(&skip).as_deref() == Ok("1") {
        eprintln!("skipped: `{name}` is not installed and {skip}=1");
        return false;
    }
    panic!(
        "`{name}` is not installed: {} (or set {skip}=1 to skip the tests that need it)",
        tool.install
    );
}

/// A finished command whole, as a person reads it: its exit code, then stdout and stderr, each redacted
/// ([`redact`]). What [`aayu_snapshot!`] snapshots.
pub fn whole(run: &Run) -> String {
    format!(
        "exit: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        run.code,
        redact(&run.stdout),
        redact(&run.stderr)
    )
}

/// [`whole`] without stderr (a gate's progress log).
pub fn whole_stdout(run: &Run) -> String {
    format!(
        "exit: {}\n----- stdout -----\n{}",
        run.code,
        redact(&run.stdout)
    )
}

/// Snapshots a finished command whole — exit code, stdout, stderr, redacted — as uv's `uv_snapshot!`
/// does: a user-facing text is asserted as it is, never by a substring of it.
/// `aayu_snapshot!(name, stdout run)` leaves stderr out: a gate's progress log (builds, heartbeats) is not a
/// text to freeze.
#[macro_export]
macro_rules! aayu_snapshot {
    ($name:expr, stdout $run:expr) => {
        insta::assert_snapshot!($name, $crate::common::whole_stdout(&$run))
    };
    ($name:expr, $run:expr) => {
        insta::assert_snapshot!($name, $crate::common::whole(&$run))
    };
}

/// Returns from the test when a tool it needs is missing and skipping was asked for (see [`tool`]).
#[macro_export]
macro_rules! needs {
    ($($tool:ident),+) => {
        $(
            if !$crate::common::tool(stringify!($tool)) {
                return;
            }
        )+
    };
}

/// The result of floor `name` in a pack's `checks`.
pub fn floor<'a>(pack: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    pack["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["floor"] == name))
        .unwrap_or_else(|| panic!("no floor {name}: {pack:#}"))
}

/// The wheelhouse the Python tests install from (`AAYU_TEST_WHEELS`, or `~/.cache/aayu-test-wheels`),
/// which `scripts/test` fills once: pytest and what it needs, setuptools and wheel. Missing, the test
/// fails with the command that fills it — the tests never install from PyPI.
pub fn wheels() -> PathBuf {
    let dir = std::env::var_os("AAYU_TEST_WHEELS").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/aayu-test-wheels")
        },
        PathBuf::from,
    );
    let filled = std::fs::read_dir(&dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("pytest-"))
    });
    assert!(
        filled,
        "no wheelhouse at `{}`: run scripts/test once (it fills it), or `python3 -m pip download --only-binary=:all: -d {} pytest==9.2.0 setuptools wheel packaging`",
        dir.display(),
        dir.display()
    );
    dir
}

/// The npm cache the JavaScript tests install from (`AAYU_TEST_NPM_CACHE`, or `~/.cache/aayu-test-npm`),
/// which `scripts/test` fills once from `tests/data/js/*/package-lock.json`. Missing, the test fails with
/// how to fill it — the tests never install from the registry.
pub fn npm_cache() -> PathBuf {
    let dir = std::env::var_os("AAYU_TEST_NPM_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/aayu-test-npm"),
        PathBuf::from,
    );
    assert!(
        dir.join("_cacache").is_dir(),
        "no npm cache at `{}`: run scripts/test once (it fills it from tests/data/js)",
        dir.display()
    );
    dir
}

/// The COREPACK_HOME with the pnpm and yarn 1 the JavaScript tests install with (`AAYU_TEST_COREPACK`, or
/// `~/.cache/aayu-test-corepack`), which `scripts/test` prepares once. Missing, the test fails with how
/// to prepare it.
pub fn corepack_home() -> PathBuf {
    let dir = std::env::var_os("AAYU_TEST_COREPACK").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/aayu-test-corepack")
        },
        PathBuf::from,
    );
    assert!(
        dir.join("v1/pnpm").is_dir() && dir.join("v1/yarn").is_dir(),
        "no pnpm and yarn prepared in `{}`: run scripts/test once (corepack prepares them)",
        dir.display()
    );
    dir
}

/// Whether the tests run as root: then aayu runs product code as the sandbox's own uids.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Whether a test that needs root may run: `true` as root. Without root it says that it skipped, on
/// stderr (never silently), and returns `false` — unless `AAYU_REQUIRE_ROOT_TESTS=1` (CI sets it), under
/// which it fails instead.
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var("AAYU_REQUIRE_ROOT_TESTS").as_deref() != Ok("1"),
        "{test} needs root, and AAYU_REQUIRE_ROOT_TESTS=1 says the root tests must run: run the suite as root"
    );
    eprintln!("skipped: {test} needs root (the sandbox's uids); run the suite as root to cover it");
    false
}

/// Whether a process is alive (a zombie is not).
pub fn alive(pid: &str) -> bool {
    let pid = pid.trim();
    assert!(
        !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()),
        "not a pid: {pid:?}"
    );
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// The pid a control tool writes to `file`, once it is there whole (the file exists a moment before the
/// number is written); panics after `limit`.
pub fn pid_in(file: &Path, limit: std::time::Duration) -> String {
    let started = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pid = text.trim();
            if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
                return pid.to_string();
            }
        }
        assert!(
            started.elapsed() < limit,
            "no pid in {} within {limit:?}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A folder anyone may write, for a control tool to leave notes the test reads (pids, marks).
pub fn shared_dir() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("aayu-shared-")
        .tempdir()
        .expect("temp dir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

/// Passes the test's own Rust toolchain to aayu, as a developer's shell would have it: the scrubbed
/// environment has a HOME of its own, where rustup would find no toolchain.
pub fn with_toolchain(cmd: &mut Command) -> &mut Command {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let rustup_home =
        std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
    let cargo_home =
        std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    cmd.env("RUSTUP_HOME", rustup_home)
        .env("CARGO_HOME", &cargo_home);
    if let Some(toolchain) = std::env::var_os("RUSTUP_TOOLCHAIN") {
        cmd.env("RUSTUP_TOOLCHAIN", toolchain);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![cargo_home.join("bin")];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    cmd
}

pub fn copy_tree(from: &Path, repo: &TestRepo, rel: &str) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "target" || name == "stories" {
            continue;
        }
        let rel = format!("{rel}/{name}");
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), repo, &rel);
        } else {
            repo.write(&rel, std::fs::read(entry.path()).expect("read"));
        }
    }
}

pub fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// The tally example with its bug at the base commit and the fix (and its test) at the head.
pub fn tally(evidence: &str, config: &str) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    copy_tree(&example("tally"), &repo, "examples/tally");
    let fixed = std::fs::read_to_string(repo.path("examples/tally/tally.go")).expect("read");
    let buggy = fixed.replace(
        "\t\tif strings.TrimSpace(line) == \"\" {\n\t\t\tcontinue\n\t\t}\n",
        "",
    );
    assert_ne!(
        fixed, buggy,
        "the example's fix is where the test expects it"
    );
    let blank_test =
        std::fs::read_to_string(repo.path("examples/tally/blank_test.go")).expect("read");
    repo.remove("examples/tally/blank_test.go");
    repo.write("examples/tally/tally.go", &buggy);
    repo.write(".aayudha/config.toml", config);
    let base = repo.commit("tally with the bug");
    repo.write("examples/tally/tally.go", &fixed);
    repo.write("examples/tally/blank_test.go", &blank_test);
    repo.write(".aayudha/evidence/902.toml", evidence);
    let head = repo.commit("fix: skip blank lines");
    (repo, base, head)
}

pub const TALLY_EVIDENCE: &str =
    "[[criterion]]\nid = 1\ntests = [\"examples/tally:TestSumSkipsBlankLines\"]\n";

/// A Ready snapshot for `story` with this Completion Goal and labels, in a file inside `.git` (for
/// `verify --ci --ready FILE`); returns its path.
pub fn ready(repo: &TestRepo, story: u64, goal: &str, labels: &[&str]) -> String {
    let hash = aayudha::hash::bytes(goal.as_bytes());
    let labels: Vec<String> = labels.iter().map(|l| format!("\"{l}\"")).collect();
    let text = format!(
        "# Story {story}: t\n\n<!-- aayudha:ready {{\"story\": {story}, \"completion_goal_hash\": \"{hash}\", \"labels\": [{}]}} -->\n\n## Completion Goal\n\n{goal}\n",
        labels.join(", ")
    );
    let file = format!("ready-{story}.md");
    let path = repo.path(&format!(".git/{file}"));
    std::fs::write(&path, text).expect("write snapshot");
    path.display().to_string()
}

/// Every regular file under `dir`, recursively (links not followed).
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let kind = entry.file_type().expect("type");
        if kind.is_dir() {
            found.extend(files(&entry.path()));
        } else if kind.is_file() {
            found.push(entry.path());
        }
    }
    found
}

/// Runs a command like [`run`], but kills it and fails the test when it is still running after `limit`:
/// for fixtures that once made aayu hang.
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Run {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("aayu runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command was still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// The lines of a log that GitHub's runner would act on as workflow commands: those starting with `::`
/// outside every `::stop-commands::<token>` … `::<token>::` fence.
pub fn live_commands(log: &str) -> Vec<String> {
    let mut fence: Option<String> = None;
    let mut live = Vec::new();
    for line in log.lines() {
        match &fence {
            Some(token) => {
                if line == format!("::{token}::") {
                    fence = None;
                }
            }
            None => {
                if let Some(token) = line.strip_prefix("::stop-commands::") {
                    fence = Some(token.to_string());
                } else if line.starts_with("::") {
                    live.push(line.to_string());
                }
            }
        }
    }
    live
}

/// What a Markdown body renders to, as far as a hostile text could change it: its headings, its links and
/// images, its raw HTML, and the `@` mentions in its plain text (code is no text: GitHub links nothing
/// there).
#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    pub headings: Vec<String>,
    pub links: Vec<String>,
    pub images: Vec<String>,
    pub html: Vec<String>,
    pub mentions: Vec<String>,
    pub emphasis: usize,
}

pub fn rendered(markdown: &str) -> Rendered {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut out = Rendered::default();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => out.headings.extend(heading.take()),
            Event::Start(Tag::Link { dest_url, .. }) => out.links.push(dest_url.to_string()),
            Event::Start(Tag::Image { dest_url, .. }) => out.images.push(dest_url.to_string()),
            Event::Start(Tag::Emphasis | Tag::Strong) => out.emphasis += 1,
            Event::Html(h) | Event::InlineHtml(h) => out.html.push(h.trim().to_string()),
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                out.mentions.extend(
                    t.split_whitespace()
                        .filter(|w| w.starts_with('@') && w.len() > 1)
                        .map(str::to_string),
                );
            }
            Event::Code(c) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&c);
                }
            }
            _ => {}
        }
    }
    out
}

/// Every path under `dir` (folders and files, links not followed).
pub fn all_paths(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        found.push(entry.path());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(all_paths(&entry.path()));
        }
    }
    found
}

/// The pids of live (not zombie) processes running `program`.
pub fn processes_running(program: &Path) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                c.split(|b| *b == 0)
                    .next()
                    .is_some_and(|arg0| arg0 == program.as_os_str().as_encoded_bytes())
            }) && alive(&pid.to_string())
        })
        .collect()
}

/// Text as people read it, with what changes from run to run redacted: temporary paths, SHA-256 hashes,
/// commit SHAs (whole and short), fence tokens, timings, the machine's Go version and an uploaded pack's
/// size.
pub fn redact(text: &str) -> String {
    let rules = [
        (r#"(/var/tmp|/tmp)/[^\s/`'")]+"#, "[tmp]"),
        (r"\b[0-9a-f]{64}\b", "[sha256]"),
        (r"\b[0-9a-f]{40}\b", "[sha]"),
        (r"\b[0-9a-f]{32}\b", "[token]"),
        (r"\b[0-9a-f]{12}\b", "[short]"),
        (r"\(\d+\.\d s\)", "(T s)"),
        (r"127\.0\.0\.1:\d+", "[local]"),
        (r"\b\d{8}T\d{6}Z\b", "[stamp]"),
        // A temporary repository's random name, where a product name is taken from it.
        (r"aayu-test-[A-Za-z0-9]{6}", "aayu-test-[name]"),
        // The machine's Go, where a report names it.
        (r"\bgo1\.\d+(\.\d+)?\b", "go[version]"),
        // An uploaded pack's size: the pack holds durations and tool versions.
        (r"(uploaded as `[^`]+`) \(\d+ bytes\)", "$1 ([n] bytes)"),
    ];
    let mut text = text.to_string();
    // aayu's own version (init pins it, doctor reports it): a release bump changes no snapshot.
    text = text.replace(concat!("v", env!("CARGO_PKG_VERSION")), "v[version]");
    // Temporary folders where TMPDIR puts them, not only /tmp.
    let temp = std::env::temp_dir();
    let temp = temp.to_string_lossy();
    let temp = temp.trim_end_matches('/');
    if !temp.is_empty() && temp != "/tmp" && temp != "/var/tmp" {
        let re = regex::Regex::new(&format!(r#"{}/[^\s/`'")]+"#, regex::escape(temp)))
            .expect("a pattern");
        text = re.replace_all(&text, "[tmp]").into_owned();
    }
    for (pattern, with) in rules {
        let re = regex::Regex::new(pattern).expect("a pattern");
        text = re.replace_all(&text, with).into_owned();
    }
    text
}

/// A free loopback port for the app of one test (tests run side by side).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A temporary folder of `mode`, holding an empty file `name` every uid may write (as root, the sandbox
/// uids write there): a log that product code appends to, and the folder that keeps it.
pub fn shared_log(prefix: &str, mode: u32, name: &str) -> (TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("temp");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).expect("chmod");
    let file = dir.path().join(name);
    std::fs::write(&file, "").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    (dir, file)
}

/// A file that build scripts append a line to each time cargo runs them, in a folder every uid may write
/// in (as root, the sandbox uids run the build scripts): how often a crate was really built.
pub struct BuildCounter {
    _dir: TempDir,
    pub file: PathBuf,
}

impl BuildCounter {
    pub fn new() -> BuildCounter {
        let (dir, file) = shared_log("aayu-builds-", 0o777, "runs");
        BuildCounter { _dir: dir, file }
    }

    /// A `build.rs` that appends `word` to the counter, and reruns when any of `watched` changes.
    pub fn build_script(&self, word: &str, watched: &[&str]) -> String {
        let rerun: String = watched
            .iter()
            .map(|w| format!("    println!(\"cargo:rerun-if-changed={w}\");\n"))
            .collect();
        format!(
            "use std::io::Write;\n\nfn main() {{\n    let mut f = std::fs::OpenOptions::new().append(true).open({:?}).unwrap();\n    writeln!(f, {word:?}).unwrap();\n{rerun}}}\n",
            self.file.display().to_string()
        )
    }

    /// What the build scripts wrote, a line per build.
    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.file).expect("the counter")
    }

    /// How many times `word`'s build script ran.
    pub fn count(&self, word: &str) -> usize {
        self.text().lines().filter(|l| *l == word).count()
    }
}

/// The `llvm-profdata` and `llvm-cov` of the LLVM version `rustc -vV` prints, which read Rust's coverage
/// profiles. Missing, the test fails with the line that installs them: the coverage tests never skip.
pub fn llvm() -> (PathBuf, PathBuf) {
    let said = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let text = String::from_utf8_lossy(&said.stdout).into_owned();
    let llvm = text
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .expect("rustc -vV names its LLVM version")
        .trim()
        .to_string();
    let major = llvm.split('.').next().unwrap_or("").to_string();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let pair = (
            dir.join(format!("llvm-profdata-{major}")),
            dir.join(format!("llvm-cov-{major}")),
        );
        if pair.0.is_file() && pair.1.is_file() {
            return pair;
        }
    }
    panic!(
        "llvm-profdata-{major} and llvm-cov-{major} are not installed (this rustc is LLVM {llvm}): apt-get install llvm-{major} — scripts/test installs it as root (Debian has llvm-22 in bookworm-security); if Debian has no llvm-{major}, the coverage tests cannot run here"
    );
}
