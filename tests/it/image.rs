//! The full image's runtime as GitHub's runner runs it. No container engine exists on the project's
//! machines, so the runtime root filesystem is built from Debian packages with `mmdebstrap` — the same
//! package list as the `Dockerfile`'s `full` stage (a test fails when the two differ) — with the host's Rust
//! toolchain and Go bind-mounted read-only where the image keeps its own, and the built `aayu`. The gate and
//! then the comment job run in it with `unshare` + `chroot` as root: the runner's mounts (`/github/workspace`
//! and `/github/file_commands/*` owned by 1001, `/github/home`, `/github/workflow`, `/github/runner_temp`),
//! the runner's environment and the image's `ENV`, against the fake GitHub, on `examples/notes` with its bug
//! story 901. With `AAYU_IMAGE=<image>` the same runs in a real image with Docker instead (CI on GitHub).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::action::{Origin, pr_event, publish, runtime_token};
use crate::common::{self, TestRepo, copy_tree, example};
use crate::support::{fake_github, fake_results};
use fake_github::{FakeIssue, FakePull};

/// The `full` stage's runtime packages, as this test installs them.
const RUNTIME_PACKAGES: [&str; 12] = [
    "ca-certificates",
    "chromium",
    "fonts-liberation",
    "gcc",
    "git",
    "libc6-dev",
    "llvm-22",
    "make",
    "pkg-config",
    "python3",
    "python3-pip",
    "python3-venv",
];

/// What the `full` stage runs after installing the packages (besides linking and modes of the toolchains,
/// which this test mounts from the host).
const IMAGE_SETUP: &str = "git config --system --add safe.directory '*'";

/// The Debian release the image's base is.
const SUITE: &str = "bookworm";

/// Where the root filesystem's packages come from: the release and its security updates, as the image's
/// base has them (`llvm-22` is only in `bookworm-security`).
const MIRRORS: [&str; 2] = [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
];

const REPO: &str = "Codertocat/Hello-World";

/// The packages the `full` stage's `apt-get install` names, in order.
fn dockerfile_packages() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile"))
        .expect("Dockerfile");
    let stage = text
        .split("\nFROM ")
        .find(|s| s.split_whitespace().nth(2) == Some("full"))
        .expect("a `full` stage");
    let install = stage
        .split("apt-get install -y --no-install-recommends")
        .nth(1)
        .expect("an apt-get install");
    install
        .split("&&")
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter(|w| *w != "\\")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_runtime_packages_are_the_dockerfiles() {
    assert_eq!(
        dockerfile_packages(),
        RUNTIME_PACKAGES,
        "the Dockerfile's `full` stage and tests/it/image.rs install different packages: change both"
    );
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile"))
        .expect("Dockerfile");
    assert!(
        text.contains(&format!("ARG DEBIAN_IMAGE=debian:{SUITE}-slim@sha256:")),
        "the image's base is Debian {SUITE}, as this test's root filesystem"
    );
    // The image's environment, as this test sets it.
    // The llvm tools are those of the image's rustc's LLVM: rust 1.95 (this machine's) is LLVM 22.
    let rustc = String::from_utf8_lossy(
        &Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc")
            .stdout,
    )
    .into_owned();
    let field = |name: &str| {
        rustc
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .expect("rustc -vV")
    };
    let release = field("release:");
    let minor: String = release.split('.').take(2).collect::<Vec<_>>().join(".");
    assert!(
        text.contains(&format!("ARG RUST_IMAGE=rust:{minor}-{SUITE}@sha256:")),
        "the image's Rust is this machine's ({release}), whose LLVM the tests check"
    );
    let major = field("LLVM version:")
        .split('.')
        .next()
        .unwrap_or("")
        .to_string();
    assert!(
        RUNTIME_PACKAGES.contains(&format!("llvm-{major}").as_str()),
        "rustc {release} is LLVM {major}: the image needs llvm-{major}'s llvm-cov"
    );
    for line in [
        "ENV RUSTUP_HOME=/usr/local/rustup",
        "    CARGO_HOME=/usr/local/cargo",
        "    GOROOT=/usr/local/go",
        "    COREPACK_HOME=/usr/local/share/corepack",
        "    COREPACK_ENABLE_NETWORK=0",
        "    COREPACK_ENABLE_DOWNLOAD_PROMPT=0",
        "    PATH=/usr/local/cargo/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENTRYPOINT [\"/usr/local/bin/aayu\", \"action\"]",
        IMAGE_SETUP,
    ] {
        assert!(text.contains(line), "the Dockerfile lacks {line:?}");
    }
}

/// The image's `ENV`.
fn image_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("RUSTUP_HOME", "/usr/local/rustup"),
        ("CARGO_HOME", "/usr/local/cargo"),
        ("GOROOT", "/usr/local/go"),
        ("COREPACK_HOME", "/usr/local/share/corepack"),
        ("COREPACK_ENABLE_NETWORK", "0"),
        ("COREPACK_ENABLE_DOWNLOAD_PROMPT", "0"),
        (
            "PATH",
            "/usr/local/cargo/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ),
    ]
}

/// The root filesystem's tarball, built once per package list and kept outside the clone.
fn rootfs_tarball() -> PathBuf {
    let key = aayudha::hash::bytes(
        format!(
            "{SUITE} {} {} {IMAGE_SETUP}",
            MIRRORS.join(","),
            RUNTIME_PACKAGES.join(",")
        )
        .as_bytes(),
    );
    let dir = PathBuf::from(
        std::env::var_os("AAYU_ROOTFS_CACHE").unwrap_or_else(|| "/var/tmp/aayudha-rootfs".into()),
    );
    let tarball = dir.join(format!("{SUITE}-{}.tar", &key[..16]));
    if tarball.is_file() {
        return tarball;
    }
    std::fs::create_dir_all(&dir).expect("the rootfs cache folder");
    let partial = dir.join(format!(".{}.partial", &key[..16]));
    let out = Command::new("mmdebstrap")
        .args(["--variant=apt", "--format=tar", "--quiet"])
        .arg(format!("--include={}", RUNTIME_PACKAGES.join(",")))
        // The full stage's own configuration, as its RUN does.
        .arg(format!("--customize-hook=chroot \"$1\" {IMAGE_SETUP}"))
        .arg(SUITE)
        .arg(&partial)
        .args(MIRRORS)
        .output()
        .expect("mmdebstrap");
    assert!(
        out.status.success(),
        "mmdebstrap failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&partial, &tarball).expect("rename");
    tarball
}

/// Where the gate's repository lives in the root filesystem, as GitHub lays it out.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel.trim_start_matches('/'))
    }

    fn chown_1001(&self, rel: &str) {
        let status = Command::new("chown")
            .args(["-R", "1001:1001"])
            .arg(self.path(rel))
            .status()
            .expect("chown");
        assert!(status.success());
    }
}

/// The notes example with its bug on `main` and the fix on `refs/pull/3/head`, story 901's Ready snapshot on
/// the ledger.
fn notes_origin() -> Origin {
    let repo = TestRepo::new();
    copy_tree(&example("notes"), &repo, "examples/notes");
    let fixed = std::fs::read_to_string(repo.path("examples/notes/src/store.rs")).expect("read");
    let buggy = fixed.replace("        .filter(|line| !line.trim().is_empty())\n", "");
    assert_ne!(
        fixed, buggy,
        "the example's fix is where the test expects it"
    );
    let blank =
        std::fs::read_to_string(repo.path("examples/notes/tests/blank_lines.rs")).expect("read");
    repo.remove("examples/notes/tests/blank_lines.rs");
    repo.write("examples/notes/src/store.rs", &buggy);
    // Sandbox uids of its own: aayu's uid locks live in the image's /tmp, and the tests on the host use
    // the default range at the same time — a machine that runs gates outside containers side by side gives
    // each its own range the same way.
    repo.write(
        ".aayudha/config.toml",
        "[verify]\nsandbox_uids = [62000, 62063]\n",
    );
    let base = repo.commit("notes with the bug");
    repo.write("examples/notes/src/store.rs", &fixed);
    repo.write("examples/notes/tests/blank_lines.rs", &blank);
    repo.write(
        ".aayudha/evidence/901.toml",
        "[[criterion]]\nid = 1\ntests = [\"examples/notes:a_blank_line_in_the_store_is_skipped\"]\n",
    );
    let head = repo.commit("fix: skip blank lines in the store");
    repo.git(&["switch", "-q", "--orphan", "ledger"]);
    let snapshot =
        std::fs::read_to_string(example("notes").join("stories/901.ready.md")).expect("the story");
    repo.write("specs/901/ready.md", snapshot);
    repo.commit("ready: story 901");
    repo.git(&["switch", "-q", "main"]);
    publish(repo, base, head)
}

/// What the runner passes to the container: its environment (paths as the container sees them), the inputs
/// as `INPUT_*`, and the image's `ENV`.
fn runner_env(
    github: &str,
    results: &str,
    run_id: u64,
    sha: &str,
    mode: &str,
    gate_result: &str,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = [
        ("HOME", "/github/home".to_string()),
        ("CI", "true".into()),
        ("GITHUB_ACTIONS", "true".into()),
        ("GITHUB_EVENT_NAME", "pull_request_target".into()),
        ("GITHUB_EVENT_PATH", "/github/workflow/event.json".into()),
        ("GITHUB_REPOSITORY", REPO.into()),
        ("GITHUB_REPOSITORY_OWNER", "Codertocat".into()),
        ("GITHUB_RUN_ID", run_id.to_string()),
        ("GITHUB_RUN_NUMBER", "1".into()),
        ("GITHUB_RUN_ATTEMPT", "1".into()),
        ("GITHUB_WORKFLOW", "aayudha merge gate".into()),
        (
            "GITHUB_WORKFLOW_REF",
            format!("{REPO}/.github/workflows/aayudha-merge-gate.yml@refs/heads/main"),
        ),
        ("GITHUB_SHA", sha.to_string()),
        ("GITHUB_REF", "refs/heads/main".into()),
        ("GITHUB_WORKSPACE", "/github/workspace".into()),
        ("GITHUB_API_URL", github.to_string()),
        ("GITHUB_SERVER_URL", "https://github.com".into()),
        ("ACTIONS_RUNTIME_URL", format!("{results}/runtime/")),
        ("ACTIONS_RUNTIME_TOKEN", runtime_token(run_id)),
        ("ACTIONS_RESULTS_URL", format!("{results}/")),
        ("GITHUB_RETENTION_DAYS", "90".into()),
        ("GITHUB_OUTPUT", "/github/file_commands/set_output".into()),
        (
            "GITHUB_STEP_SUMMARY",
            "/github/file_commands/step_summary".into(),
        ),
        ("GITHUB_ENV", "/github/file_commands/set_env".into()),
        ("GITHUB_PATH", "/github/file_commands/add_path".into()),
        ("GITHUB_STATE", "/github/file_commands/save_state".into()),
        ("RUNNER_TEMP", "/github/runner_temp".into()),
        ("RUNNER_OS", "Linux".into()),
        ("INPUT_MODE", mode.into()),
        ("INPUT_TOKEN", "ghs_job".into()),
        ("INPUT_STORY", String::new()),
        ("INPUT_CONFIG", String::new()),
        ("INPUT_WORKING_DIRECTORY", String::new()),
        ("INPUT_RETENTION_DAYS", String::new()),
        ("INPUT_BOT_LOGIN", String::new()),
        ("INPUT_GATE_RESULT", gate_result.into()),
        // Where the gate's time goes, on stderr (aayu's own lines).
        ("AAYU_TIMINGS", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    env.extend(
        image_env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// The host's toolchains, mounted read-only where the full image keeps its own.
fn toolchain_mounts() -> Vec<(PathBuf, &'static str)> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let rustup =
        std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
    let cargo = std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    let go = Command::new("go")
        .args(["env", "GOROOT"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .and_then(|p| p.canonicalize().ok())
        .expect("Debian's Go (apt-get install golang-go)");
    vec![
        (rustup, "/usr/local/rustup"),
        (cargo, "/usr/local/cargo"),
        (go, "/usr/local/go"),
    ]
}

/// Runs `aayu action` in the root filesystem as the runner runs the container: a new mount and process
/// namespace, the toolchains bind-mounted read-only, `chroot`, `/github/workspace` as the working directory
/// and exactly `env` as the environment. Returns the exit code and what it printed.
fn run_in_root(root: &Root, env: &BTreeMap<String, String>) -> common::Run {
    let script = r#"
set -eu
root="$1"; shift
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
while [ "$1" != "--" ]; do
  from="$1"; to="$2"; shift 2
  mkdir -p "$root$to"
  mount --bind "$from" "$root$to"
  mount -o remount,bind,ro "$root$to"
done
shift
exec chroot "$root" /bin/sh -c 'cd /github/workspace && exec /usr/bin/env -i "$@" /usr/local/bin/aayu action' sh "$@"
"#;
    let mut command = Command::new("unshare");
    command
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--propagation",
            "private",
            "--",
        ])
        .args(["/bin/sh", "-c", script, "sh"])
        .arg(root.dir.path());
    for (from, to) in toolchain_mounts() {
        command.arg(from).arg(to);
    }
    command.arg("--");
    for (k, v) in env {
        command.arg(format!("{k}={v}"));
    }
    common::run_within(&mut command, std::time::Duration::from_secs(900))
}

/// The same in a real image, with Docker (`AAYU_IMAGE`), the runner's mounts as volumes.
fn run_in_image(image: &str, root: &Root, env: &BTreeMap<String, String>) -> common::Run {
    let mut command = Command::new("docker");
    command.args([
        "run",
        "--rm",
        "--network",
        "host",
        "--workdir",
        "/github/workspace",
    ]);
    for folder in [
        "workspace",
        "home",
        "workflow",
        "file_commands",
        "runner_temp",
    ] {
        command.arg("-v").arg(format!(
            "{}:/github/{folder}",
            root.path(&format!("github/{folder}")).display()
        ));
    }
    command.arg("-v").arg(format!(
        "{}:/srv/origin.git",
        root.path("srv/origin.git").display()
    ));
    for (k, v) in env {
        // The image's own ENV is the image's, not the test's.
        if !image_env().iter().any(|(name, _)| name == k) {
            command.arg("-e").arg(format!("{k}={v}"));
        }
    }
    command.arg(image);
    common::run_within(&mut command, std::time::Duration::from_secs(900))
}

/// The pnpm and yarn 1 versions the `node` stage prepares, as `(pnpm, yarn)`.
fn prepared_managers(text: &str) -> (String, String) {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("RUN corepack install -g "))
        .expect("the Dockerfile prepares pnpm and yarn with corepack");
    let version = |tool: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{tool}@")))
            .unwrap_or_else(|| panic!("the Dockerfile prepares no {tool}"))
            .to_string()
    };
    (version("pnpm"), version("yarn"))
}

#[test]
fn the_image_prepares_the_pnpm_and_yarn_the_tests_install_with() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("Dockerfile");
    let (pnpm, yarn) = prepared_managers(&dockerfile);
    assert!(yarn.starts_with("1."), "yarn 1: {yarn}");
    let script = std::fs::read_to_string(root.join("scripts/test")).expect("scripts/test");
    assert!(
        script.contains(&format!("pnpm_version={pnpm}\n"))
            && script.contains(&format!("yarn_version={yarn}\n")),
        "scripts/test prepares other versions than the image's pnpm {pnpm} and yarn {yarn}: change both"
    );
    let lock =
        std::fs::read_to_string(root.join("tests/data/js/pnpm/package.json")).expect("fixture");
    assert!(
        lock.contains(&format!("\"pnpm@{pnpm}\"")),
        "the pnpm fixture names the image's pnpm"
    );
    for copied in [
        "COPY --from=node /usr/local/share/corepack /usr/local/share/corepack",
        "/usr/local/share/corepack\n",
    ] {
        assert!(
            dockerfile.contains(copied),
            "the Dockerfile lacks {copied:?}"
        );
    }
    // In a real image (CI on GitHub): node ≥ 20, and pnpm and yarn from what is prepared, offline.
    let Some(image) = std::env::var("AAYU_IMAGE").ok().filter(|v| !v.is_empty()) else {
        return;
    };
    let out = Command::new("docker")
        .args(["run", "--rm", "--network", "none", "--entrypoint", "/bin/sh"])
        .arg(&image)
        .args([
            "-c",
            "cd /tmp && node --version && pnpm --version && yarn --version && test -f \"$COREPACK_HOME/v1/pnpm/$(pnpm --version)/bin/pnpm.cjs\"",
        ])
        .output()
        .expect("docker");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = said.lines().collect();
    let major: u32 = lines[0]
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    assert!(major >= 20, "{said}");
    assert_eq!(lines[1..3], [pnpm.as_str(), yarn.as_str()], "{said}");
}

#[test]
fn the_gate_and_the_comment_job_prove_a_bug_fix_inside_the_image() {
    let image = std::env::var("AAYU_IMAGE").ok().filter(|v| !v.is_empty());
    if !common::root_or_skip("the_gate_and_the_comment_job_prove_a_bug_fix_inside_the_image") {
        return;
    }
    if image.is_none() {
        crate::needs!(mmdebstrap);
        crate::needs!(go);
    }
    let started = std::time::Instant::now();
    let origin = notes_origin();

    // The root filesystem (or, with Docker, just the runner's folders) and the runner's layout in it.
    let root = Root {
        dir: tempfile::Builder::new()
            .prefix("aayu-image-")
            .tempdir_in("/var/tmp")
            .expect("temp"),
    };
    if image.is_none() {
        let status = Command::new("tar")
            .arg("-xf")
            .arg(rootfs_tarball())
            .arg("-C")
            .arg(root.dir.path())
            .status()
            .expect("tar");
        assert!(status.success(), "the root filesystem unpacks");
        // What Docker writes into every container.
        std::fs::write(
            root.path("etc/hosts"),
            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        )
        .expect("/etc/hosts");
        let aayu = assert_cmd::cargo::cargo_bin("aayu");
        std::fs::copy(&aayu, root.path("usr/local/bin/aayu")).expect("aayu into the image");
        // What a Python package's install needs: a venv made without pip, the interpreter's pip.
        let python = Command::new("chroot")
            .arg(root.dir.path())
            .args([
                "/bin/sh",
                "-c",
                "python3 -m venv --without-pip /tmp/venv && python3 -m pip --python /tmp/venv/bin/python --version && rm -rf /tmp/venv",
            ])
            .output()
            .expect("chroot");
        assert!(
            python.status.success(),
            "the image's python3 makes a venv and has pip: {}",
            String::from_utf8_lossy(&python.stderr)
        );
        // The image's llvm-cov is the LLVM of the rustc it runs (the host's, mounted where the image keeps
        // its own).
        let (_, host_cov) = common::llvm();
        let name = host_cov
            .file_name()
            .and_then(|n| n.to_str())
            .expect("llvm-cov-N")
            .to_string();
        let inside = Command::new("chroot")
            .arg(root.dir.path())
            .arg(format!("/usr/bin/{name}"))
            .arg("--version")
            .output()
            .expect("chroot");
        let said = String::from_utf8_lossy(&inside.stdout);
        let major = name.trim_start_matches("llvm-cov-");
        assert!(
            inside.status.success() && said.contains(&format!("LLVM version {major}.")),
            "the image's {name} says: {said}"
        );
    }
    let built = started.elapsed();
    for folder in [
        "github/home",
        "github/workflow",
        "github/file_commands",
        "github/runner_temp",
        "srv",
    ] {
        std::fs::create_dir_all(root.path(folder)).expect("mkdir");
    }
    // The origin inside the image, and the workspace as actions/checkout leaves it (the base, `origin` set).
    let status = common::git_command(root.dir.path())
        .args(["clone", "-q", "--mirror"])
        .arg(origin.bare.path())
        .arg(root.path("srv/origin.git"))
        .status()
        .expect("clone");
    assert!(status.success());
    let status = common::git_command(root.dir.path())
        .args(["clone", "-q", "--branch", "main"])
        .arg(root.path("srv/origin.git"))
        .arg(root.path("github/workspace"))
        .status()
        .expect("clone");
    assert!(status.success());
    let ws = root.path("github/workspace");
    let git = |args: &[&str]| {
        let out = common::git_command(&ws).args(args).output().expect("git");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["remote", "set-url", "origin", "/srv/origin.git"]);
    git(&["checkout", "-q", &origin.base]);
    let event = pr_event(
        "opened",
        0,
        &origin,
        Some("Fixes the blank lines.\n\nStory: #901\n"),
    );
    std::fs::write(
        root.path("github/workflow/event.json"),
        serde_json::to_vec_pretty(&event).expect("json"),
    )
    .expect("event");
    for name in [
        "set_output",
        "step_summary",
        "set_env",
        "add_path",
        "save_state",
    ] {
        std::fs::write(root.path(&format!("github/file_commands/{name}")), "")
            .expect("file command");
    }
    root.chown_1001("github/workspace");
    root.chown_1001("github/file_commands");

    let github = fake_github::Server::start();
    {
        let mut fake = github.state.lock().expect("lock");
        fake.repo = REPO.into();
        fake.tokens
            .insert("ghs_job".into(), "github-actions[bot]".into());
        fake.no_user.push("ghs_job".into());
        let snapshot = std::fs::read_to_string(example("notes").join("stories/901.ready.md"))
            .expect("the story");
        let goal = snapshot
            .split("## Completion Goal")
            .nth(1)
            .expect("a Completion Goal")
            .trim()
            .to_string();
        fake.issues.insert(
            901,
            FakeIssue {
                title: "notes cannot read a store file with a blank line".into(),
                body: Some(format!(
                    "A hand-edited store breaks `notes list`.\n\n## Completion Goal\n\n{goal}\n"
                )),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
        fake.pulls.insert(3, FakePull::open(&origin.head));
        fake.files.insert(
            ("ledger".into(), "specs/901/ready.md".into()),
            snapshot.into_bytes(),
        );
    }
    let results = fake_results::Server::start(&runtime_token(4401));
    let run = |mode: &str, gate_result: &str| {
        let env = runner_env(
            &github.url,
            &results.url,
            4401,
            &origin.base,
            mode,
            gate_result,
        );
        match &image {
            Some(image) => run_in_image(image, &root, &env),
            None => run_in_root(&root, &env),
        }
    };

    let gate_started = std::time::Instant::now();
    let gate = run("gate", "");
    let gate_took = gate_started.elapsed();
    // aayu's own share of the gate: everything but the time product code ran (AAYU_TIMINGS=1).
    let product_ms: f64 = gate
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("aayu timing: product code (fetches, builds, tests, checks) "))
        .and_then(|rest| rest.strip_suffix(" ms"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0.0);
    let summary =
        std::fs::read_to_string(root.path("github/file_commands/step_summary")).unwrap_or_default();
    let outputs =
        std::fs::read_to_string(root.path("github/file_commands/set_output")).unwrap_or_default();
    assert_eq!(
        gate.code, 0,
        "the gate inside the image\n--- stdout\n{}\n--- stderr\n{}\n--- summary\n{summary}",
        gate.stdout, gate.stderr
    );
    // The output file's heredoc delimiter is random: the name and the value are looked for.
    assert!(
        outputs.contains("result<<") && outputs.contains("\nproven\n"),
        "{outputs}"
    );
    // The image's gate, in a root filesystem of its own: its heading and a row are looked for (the whole
    // summary is frozen by `action`'s `gate_summary`).
    assert!(
        summary.contains("### aayudha merge gate — every floor holds"),
        "{summary}"
    );
    assert!(summary.contains("| `red-on-base` | `pass` |"), "{summary}");
    assert_eq!(results.state.lock().expect("lock").artifacts.len(), 1);

    let comment = run("comment", "success");
    assert_eq!(comment.code, 0, "{}\n{}", comment.stdout, comment.stderr);
    {
        let fake = github.state.lock().expect("lock");
        let status = fake.statuses.last().expect("a status");
        assert_eq!(
            (
                status.sha.as_str(),
                status.state.as_str(),
                status.context.as_str()
            ),
            (origin.head.as_str(), "success", "aayudha/proof")
        );
    }
    assert_eq!(github.comments().len(), 1);
    eprintln!(
        "image test: root filesystem ready in {:.1} s; the gate took {:.1} s, of which product code {:.1} s and aayu's own overhead {:.1} s; all {:.1} s",
        built.as_secs_f64(),
        gate_took.as_secs_f64(),
        product_ms / 1000.0,
        gate_took.as_secs_f64() - product_ms / 1000.0,
        started.elapsed().as_secs_f64()
    );
    github.assert_clean();
    results.assert_clean();
}
