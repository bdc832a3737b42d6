//! The built-in step runner: runs a check's typed [`Step`]s from the repository root, in order, until
//! one does not hold, and keeps a transcript of every step (the check's `api-trace` artifact). It runs
//! inside the check's sandbox, as the slot uid: every process it starts is a plain child, and a `test`
//! step is run and read by the package's runner ([`crate::runners`]), the same code as the tests floor.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::browser::{self, BrowserStep};
use super::{Request, Run, Set, Step, TestStep};
use crate::runners::scrub;
use crate::runners::{self, Job, LaunchError, Launcher, Outcome, Ran as Launched, TestId};
use crate::sandbox::said;
use crate::sandbox::toolchain::shown_dir;

/// How much of a step's output the transcript keeps.
const KEEP: usize = 64 * 1024;

/// How a check ended.
pub enum Verdict {
    Passed,
    Failed(String),
    Unreachable(String),
}

/// What a check's run left: its verdict, the transcript, and the screenshots it wrote to `out`.
pub struct Ran {
    pub verdict: Verdict,
    pub transcript: Vec<Value>,
    pub screenshots: Vec<String>,
    /// Why Chromium's own sandbox was off, when it was.
    pub no_sandbox: Option<String>,
}

/// Runs `steps` (read and checked when the map loaded, or from the request) against the repository at
/// `root`, writing artifacts to `out`.
pub fn run(steps: &[Step], root: &Path, out: &Path, base_url: &str) -> Ran {
    let mut runner = StepRunner {
        root: root.to_path_buf(),
        out: out.to_path_buf(),
        base_url: base_url.trim_end_matches('/').to_string(),
        env: BTreeMap::new(),
        cwd: root.to_path_buf(),
        bins: Vec::new(),
        transcript: Vec::new(),
        browser: None,
        no_sandbox: None,
        screenshots: Vec::new(),
    };
    let mut verdict = Verdict::Passed;
    for (i, step) in steps.iter().enumerate() {
        let this = runner.step(i + 1, step);
        if !matches!(this, Verdict::Passed) {
            verdict = this;
            break;
        }
    }
    if let Some(session) = runner.browser.take() {
        session.stop();
    }
    Ran {
        verdict,
        transcript: runner.transcript,
        screenshots: runner.screenshots,
        no_sandbox: runner.no_sandbox,
    }
}

struct StepRunner {
    root: PathBuf,
    out: PathBuf,
    base_url: String,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    /// Folders of built binaries, first on `PATH`.
    bins: Vec<PathBuf>,
    transcript: Vec<Value>,
    /// The browser, from the first browser step on.
    browser: Option<browser::Session>,
    no_sandbox: Option<String>,
    screenshots: Vec<String>,
}

impl StepRunner {
    fn step(&mut self, n: usize, step: &Step) -> Verdict {
        let set = match step {
            Step::Browser(browser) => return self.browser_step(n, browser),
            Step::Set(set) => {
                self.apply(set);
                self.transcript
                    .push(json!({"step": n, "set": {"env": set.env, "cwd": set.cwd}}));
                return Verdict::Passed;
            }
            Step::Build { set, .. } | Step::Test { set, .. } => Some(set),
            Step::Run(run) => Some(&run.set),
            Step::Request(_) => None,
        };
        // Beside an action, `env` and `cwd` hold for that step only.
        let saved = (self.env.clone(), self.cwd.clone());
        if let Some(set) = set {
            self.apply(set);
        }
        let verdict = match step {
            Step::Build { package, .. } => self.build(n, package),
            Step::Run(run) => self.run(n, run),
            Step::Request(request) => self.request(n, request),
            Step::Test { test, .. } => self.test(n, test),
            Step::Browser(_) | Step::Set(_) => Verdict::Passed,
        };
        (self.env, self.cwd) = saved;
        verdict
    }

    fn apply(&mut self, set: &Set) {
        if let Some(env) = &set.env {
            self.env
                .extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(dir) = &set.cwd {
            self.cwd = self.root.join(dir);
        }
    }

    /// One browser step; a failed one takes a screenshot that its reason names.
    fn browser_step(&mut self, n: usize, step: &BrowserStep) -> Verdict {
        let action = step.action;
        if self.browser.is_none() {
            let Some(chromium) = browser::find_chromium() else {
                return Verdict::Failed(format!(
                    "step {n} ({action}): Chromium is not installed: install it (apt-get install chromium) or name it in `[verify] chromium`"
                ));
            };
            match browser::Session::start(&chromium, &self.base_url) {
                Ok(session) => {
                    self.no_sandbox.clone_from(&session.no_sandbox);
                    self.browser = Some(session);
                }
                Err(why) => return Verdict::Failed(format!("step {n} ({action}): {why}")),
            }
        }
        let Some(session) = self.browser.as_mut() else {
            return Verdict::Failed(format!("step {n}: no browser"));
        };
        let label = format!("step {n} ({action} {})", step_target(&step.value));
        match session.step(step, &self.out) {
            Ok(did) => {
                if let browser::What::Screenshot(name) = &step.what {
                    self.screenshots.push(name.clone());
                }
                self.transcript
                    .push(json!({"step": n, action: step.value, "did": did}));
                Verdict::Passed
            }
            Err(error) => {
                let why = error.to_string();
                let name = format!("failed-step-{n}.png");
                let url = session.current_url();
                let shot = match session.screenshot(&self.out.join(&name)) {
                    Ok(()) => {
                        self.screenshots.push(name.clone());
                        format!("; screenshot {name}")
                    }
                    Err(e) => format!("; no screenshot ({e})"),
                };
                self.transcript.push(
                    json!({"step": n, action: step.value, "error": why, "url": url, "screenshot": name}),
                );
                if matches!(error, browser::StepError::Open { .. }) {
                    return Verdict::Unreachable(format!("{label}: {why}{shot}"));
                }
                Verdict::Failed(format!("{label}: {why}{shot}"))
            }
        }
    }

    /// `PATH` with the built binaries first.
    fn path(&self) -> (Vec<PathBuf>, OsString) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = self.bins.clone();
        dirs.extend(std::env::split_paths(&path));
        let joined = std::env::join_paths(&dirs).unwrap_or(path);
        (dirs, joined)
    }

    fn command(&self, argv: &[String]) -> Option<Command> {
        let program = argv.first()?;
        let (dirs, joined) = self.path();
        let resolved = if program.contains('/') {
            self.cwd.join(program)
        } else {
            dirs.iter()
                .map(|d| d.join(program))
                .find(|p| p.is_file())
                .unwrap_or_else(|| PathBuf::from(program))
        };
        let mut command = Command::new(resolved);
        command
            .args(&argv[1..])
            .current_dir(&self.cwd)
            .env("PATH", joined)
            .envs(&self.env);
        Some(command)
    }

    fn build(&mut self, n: usize, package: &str) -> Verdict {
        let dir = self.root.join(package);
        let package = shown_dir(package);
        if dir.join("Cargo.toml").is_file() {
            let argv = cargo_build_argv(&dir.join("Cargo.toml"));
            let Some(mut command) = self.command(&argv) else {
                return Verdict::Failed(format!("step {n}: cannot run cargo"));
            };
            let ran = match capture(&mut command, None) {
                Ok(ran) => ran,
                Err(e) => {
                    return Verdict::Failed(format!(
                        "step {n} (build {package}): cannot run cargo: {e}"
                    ));
                }
            };
            for line in ran.stdout.lines() {
                if let Ok(message) = serde_json::from_str::<Value>(line)
                    && let Some(exe) = message.get("executable").and_then(Value::as_str)
                    && let Some(parent) = Path::new(exe).parent()
                    && !self.bins.iter().any(|b| b == parent)
                {
                    self.bins.insert(0, parent.to_path_buf());
                }
            }
            self.transcript.push(json!({"step": n, "build": package, "tool": "cargo", "exit": ran.code, "stderr": scrub(tail(&ran.stderr), &self.root)}));
            if ran.code != Some(0) {
                return Verdict::Failed(format!(
                    "step {n} (build {package}): cargo build exited {}: {}",
                    code(ran.code),
                    scrub(&said(ran.stderr.as_bytes(), &self.root), &self.root)
                ));
            }
            Verdict::Passed
        } else if dir.is_dir() {
            let bin = std::env::var_os("TMPDIR")
                .map_or_else(std::env::temp_dir, PathBuf::from)
                .join("aayu-bin");
            let _ = std::fs::create_dir_all(&bin);
            let target = go_package(package);
            let argv = [
                "go".to_string(),
                "build".to_string(),
                "-o".to_string(),
                format!("{}/", bin.display()),
                target,
            ];
            let Some(mut command) = self.command(&argv) else {
                return Verdict::Failed(format!("step {n}: cannot run go"));
            };
            command.current_dir(&self.root);
            let ran = match capture(&mut command, None) {
                Ok(ran) => ran,
                Err(e) => {
                    return Verdict::Failed(format!(
                        "step {n} (build {package}): cannot run go: {e}"
                    ));
                }
            };
            self.transcript.push(json!({"step": n, "build": package, "tool": "go", "exit": ran.code, "stderr": scrub(tail(&ran.stderr), &self.root)}));
            if ran.code != Some(0) {
                return Verdict::Failed(format!(
                    "step {n} (build {package}): go build exited {}: {}",
                    code(ran.code),
                    scrub(&said(ran.stderr.as_bytes(), &self.root), &self.root)
                ));
            }
            if !self.bins.contains(&bin) {
                self.bins.insert(0, bin);
            }
            Verdict::Passed
        } else {
            Verdict::Failed(format!(
                "step {n}: `build` `{package}` is not a folder of the repository"
            ))
        }
    }

    fn run(&mut self, n: usize, step: &Run) -> Verdict {
        let argv = &step.argv;
        let Some(mut command) = self.command(argv) else {
            return Verdict::Failed(format!("step {n}: empty argv"));
        };
        let ran = match capture(&mut command, step.stdin.as_deref()) {
            Ok(ran) => ran,
            Err(e) => {
                self.transcript
                    .push(json!({"step": n, "run": argv, "error": e.to_string()}));
                return Verdict::Failed(format!(
                    "step {n} (run {}): cannot start `{}`: {e}",
                    argv.join(" "),
                    argv[0]
                ));
            }
        };
        self.transcript.push(json!({
            "step": n, "run": argv, "stdin": step.stdin, "exit": ran.code,
            "stdout": scrub(tail(&ran.stdout), &self.root), "stderr": scrub(tail(&ran.stderr), &self.root),
        }));
        let label = format!("step {n} (run {})", argv.join(" "));
        if ran.code.map(i64::from) != Some(step.exit) {
            return Verdict::Failed(format!(
                "{label}: expected exit {}, got {}; stderr: {}",
                step.exit,
                code(ran.code),
                last_lines(&scrub(&ran.stderr, &self.root))
            ));
        }
        for (stream, text, expected) in [
            ("stdout", &ran.stdout, &step.stdout),
            ("stderr", &ran.stderr, &step.stderr),
        ] {
            if let Some(missing) = expected.iter().find(|e| !text.contains(e.as_str())) {
                return Verdict::Failed(format!(
                    "{label}: {stream} lacks `{missing}`; it was: {}",
                    quote_end(&scrub(text, &self.root))
                ));
            }
        }
        Verdict::Passed
    }

    fn request(&mut self, n: usize, step: &Request) -> Verdict {
        let req = &step.http;
        let method = req.method.as_deref().unwrap_or("GET").to_ascii_uppercase();
        let path = req.path.as_deref().unwrap_or("/");
        let url = format!(
            "{}{}",
            self.base_url,
            if path.starts_with('/') {
                path.to_string()
            } else {
                format!("/{path}")
            }
        );
        let mut builder = ureq::http::Request::builder()
            .method(method.as_str())
            .uri(&url);
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let body = match &req.json {
            Some(json) => {
                builder = builder.header("content-type", "application/json");
                json.to_string()
            }
            None => String::new(),
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let request = match builder.body(body.clone()) {
            Ok(request) => request,
            Err(e) => return Verdict::Failed(format!("step {n}: not a valid request: {e}")),
        };
        let label = format!("step {n} ({method} {path})");
        let mut response = match agent.run(request) {
            Ok(response) => response,
            Err(e) => {
                self.transcript.push(json!({"step": n, "request": {"method": method, "url": url, "body": body}, "error": e.to_string()}));
                return Verdict::Unreachable(format!(
                    "{label}: the app did not answer at {}: {e}",
                    self.base_url
                ));
            }
        };
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        self.transcript.push(json!({
            "step": n,
            "request": {"method": method, "url": url, "body": body},
            "response": {"status": status, "body": tail(&text)},
        }));
        let expect = &step.expect;
        if let Some(want) = expect.status
            && status != want
        {
            return Verdict::Failed(format!(
                "{label}: expected status {want}, got {status}; body: {}",
                quote(&text)
            ));
        }
        if let Some(want) = &expect.text
            && !text.contains(want.as_str())
        {
            return Verdict::Failed(format!(
                "{label}: the body lacks `{want}`; it was: {}",
                quote(&text)
            ));
        }
        if let Some(want) = &expect.json {
            let got: Value = match serde_json::from_str(&text) {
                Ok(got) => got,
                Err(_) => {
                    return Verdict::Failed(format!(
                        "{label}: the body is not JSON: {}",
                        quote(&text)
                    ));
                }
            };
            if let Some(at) = difference(&got, want, "") {
                return Verdict::Failed(format!(
                    "{label}: the JSON body does not match at `{at}`: {}",
                    quote(&text)
                ));
            }
        }
        Verdict::Passed
    }

    /// One test, by the package's runner — the code the tests floor runs it with — as plain children with
    /// this check's environment.
    fn test(&mut self, n: usize, step: &TestStep) -> Verdict {
        let shown = shown_dir(&step.package).to_string();
        let label = format!("step {n} (test {})", step.test);
        let id = TestId {
            package: step.package.clone(),
            rest: step.test.clone(),
        };
        let Some(found) = runners::package_of(&self.root, &id) else {
            let outcome = Outcome::NotFound(runners::unclaimed(&step.package));
            self.transcript.push(json!({"step": n, "test": {"package": shown, "test": step.test}, "tool": Value::Null, "result": outcome.word(), "detail": outcome.detail()}));
            return Verdict::Failed(format!("{label}: {}", outcome.detail()));
        };
        let package = found.package();
        let (_, path) = self.path();
        let launcher = Child {
            env: self.env.clone(),
            path,
        };
        let run = runners::Run {
            root: &self.root,
            launcher: &launcher,
            // The check's own time limit ends the whole check; a test gets all of it.
            timeout: std::time::Duration::from_secs(24 * 3600),
            env: installed_env(&step.package),
        };
        let outcome = match package.runner.check_id(&self.root, &package, &step.test) {
            Err(why) => Outcome::NotFound(why.to_string()),
            Ok(()) => runners::run_named(&run, &package, &[&id])
                .remove(&id)
                .map_or_else(|| Outcome::NotRun("no result".to_string()), |r| r.outcome),
        };
        self.transcript.push(json!({
            "step": n,
            "test": {"package": shown, "test": step.test},
            "tool": package.runner.name(),
            "result": outcome.word(),
            "detail": outcome.detail(),
        }));
        match outcome {
            Outcome::Passed => Verdict::Passed,
            other => Verdict::Failed(format!(
                "{label}: `{id}` {}: {}",
                other.words(),
                other.detail()
            )),
        }
    }
}

/// The step runner's launcher: a plain child (the step runner already runs in the check's sandbox, as
/// the slot uid) with the check's environment and the built binaries first on `PATH`.
/// The variable the check's control process is given the step packages' installs in (see
/// `floors::behaviour`): `{"<package>": {"VAR": "value", …}, …}`.
pub const INSTALLED: &str = "AAYU_INSTALLED";

/// What the install of a step package gave it, from [`INSTALLED`].
fn installed_env(package: &str) -> Vec<(String, OsString)> {
    let Some(text) = std::env::var_os(INSTALLED) else {
        return Vec::new();
    };
    let Ok(Value::Object(all)) = serde_json::from_str::<Value>(&text.to_string_lossy()) else {
        return Vec::new();
    };
    match all.get(package) {
        Some(Value::Object(vars)) => vars
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), OsString::from(v.as_str()?))))
            .collect(),
        _ => Vec::new(),
    }
}

struct Child {
    env: BTreeMap<String, String>,
    path: OsString,
}

/// The step runner's child says what it could not do in the runners' own words ([`LaunchError`]).
impl Launcher for Child {
    fn launch(&self, job: Job) -> Result<Launched, LaunchError> {
        self.run(job)
    }
}

impl Child {
    fn run(&self, job: Job) -> Result<Launched, LaunchError> {
        let Some(program) = job.argv.first() else {
            return Err(LaunchError::EmptyArgv);
        };
        // A report file the process may write, in a folder of its own under the check's TMPDIR.
        let folder = match job.report {
            Some(_) => Some(
                match self.env.get("TMPDIR") {
                    Some(tmp) => tempfile::tempdir_in(tmp),
                    None => tempfile::tempdir(),
                }
                .map_err(|source| LaunchError::ReportFolder {
                    program: program.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        let report = folder.as_ref().map(|f| f.path().join("report"));
        let args = match &report {
            Some(file) => runners::with_report(&job.argv[1..], file),
            None => job.argv[1..].to_vec(),
        };
        let mut command = Command::new(program);
        command
            .args(&args)
            .current_dir(&job.cwd)
            .env("PATH", &self.path)
            .envs(&self.env)
            .envs(job.env.iter().map(|(k, v)| (k, v)));
        if let (Some(var), Some(file)) = (job.report, &report) {
            command.env(var, file);
        }
        let output = runners::output_with_stdin(&mut command, &job.stdin).map_err(|source| {
            LaunchError::Start {
                command: job.argv.join(" "),
                source,
            }
        })?;
        use std::os::unix::process::ExitStatusExt;
        Ok(Launched {
            code: output.status.code(),
            signal: output.status.signal(),
            timed_out: false,
            stdout: output.stdout,
            stderr: output.stderr,
            report: report.and_then(|file| runners::read_report(&file)),
            truncated: false,
        })
    }
}

/// Where `want` is not a subset of `got` (objects by key, arrays element by element, else equal): the
/// path of the first difference, or `None` when it is a subset.
fn difference(got: &Value, want: &Value, at: &str) -> Option<String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w.iter().find_map(|(k, wv)| {
            let path = format!("{at}.{k}");
            match g.get(k) {
                Some(gv) => difference(gv, wv, &path),
                None => Some(path),
            }
        }),
        (Value::Array(g), Value::Array(w)) if g.len() >= w.len() => g
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (gv, wv))| difference(gv, wv, &format!("{at}[{i}]"))),
        _ if got == want => None,
        _ => Some(if at.is_empty() {
            ".".to_string()
        } else {
            at.to_string()
        }),
    }
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn capture(command: &mut Command, stdin: Option<&str>) -> std::io::Result<Output> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let output = child.wait_with_output()?;
    Ok(Output {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// A step's target as its reason names it: a path, a key, or the handle's JSON.
fn step_target(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn code(code: Option<i32>) -> String {
    code.map_or_else(|| "by a signal".to_string(), |c| c.to_string())
}

fn tail(text: &str) -> &str {
    if text.len() <= KEEP {
        return text;
    }
    let mut start = text.len() - KEEP;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// A package folder as go names it from the repository root: `.` or `./a/b`.
fn go_package(shown: &str) -> String {
    if shown == "." {
        ".".to_string()
    } else {
        format!("./{shown}")
    }
}

/// The last few lines of a tool's output, for a reason: where a traceback or a panic ends, its cause is;
/// it says when it left lines out.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(3);
    let joined = lines[start..].join(" | ");
    if joined.is_empty() {
        "(nothing)".to_string()
    } else if start > 0 {
        format!("(the last 3 of {} lines) {joined}", lines.len())
    } else {
        joined
    }
}

/// A stream quoted for a reason: whole when short, else its last 300 characters (a traceback's exception
/// and a panic's message are at the end), saying that it cut.
fn quote_end(text: &str) -> String {
    let count = text.chars().count();
    if count <= 300 {
        return format!("{text:?}");
    }
    let tail: String = text.chars().skip(count - 300).collect();
    format!("(the last 300 of {count} characters) …{tail:?}")
}

fn quote(text: &str) -> String {
    let short: String = text.chars().take(300).collect();
    let more = if text.chars().count() > 300 {
        "…"
    } else {
        ""
    };
    format!("{:?}{more}", short)
}

/// The cargo command of a `build` step: the package's binaries, with cargo's JSON messages (the built
/// executables are put first on `PATH`). The behaviour floor runs the same command before the checks
/// ([`crate::floors::behaviour`]), so that a check's own build finds everything fresh.
pub fn cargo_build_argv(manifest: &Path) -> Vec<String> {
    [
        "cargo",
        "build",
        "--quiet",
        "--bins",
        "--message-format=json-render-diagnostics",
        "--manifest-path",
    ]
    .into_iter()
    .map(String::from)
    .chain(std::iter::once(manifest.display().to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::difference;
    use serde_json::json;

    #[test]
    fn a_long_stream_is_quoted_by_its_end() {
        let traceback: String = (0..40)
            .map(|i| format!("  File \"app.py\", line {i}, in f{i}\n"))
            .chain(["ValueError: the total is negative\n".to_string()])
            .collect();
        let quoted = super::quote_end(&traceback);
        assert!(quoted.starts_with("(the last 300 of "), "{quoted}");
        assert!(
            quoted.ends_with("ValueError: the total is negative\\n\""),
            "{quoted}"
        );
        assert_eq!(
            super::last_lines(&traceback),
            "(the last 3 of 41 lines) File \"app.py\", line 38, in f38 | File \"app.py\", line 39, in f39 | ValueError: the total is negative"
        );
        assert_eq!(super::quote_end("short"), "\"short\"");
        insta::assert_snapshot!(
            "traceback_quoted",
            format!("{quoted}\n{}", super::last_lines(&traceback))
        );
    }

    #[test]
    fn a_json_subset_matches_by_key_and_position() {
        let got = json!({"a": 1, "b": {"c": [1, 2, 3], "d": "x"}});
        assert_eq!(difference(&got, &json!({"b": {"c": [1, 2]}}), ""), None);
        assert_eq!(
            difference(&got, &json!({"b": {"d": "y"}}), ""),
            Some(".b.d".to_string())
        );
        assert_eq!(
            difference(&got, &json!({"z": 1}), ""),
            Some(".z".to_string())
        );
    }
}
