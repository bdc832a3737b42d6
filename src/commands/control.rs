//! `aayu control check`: the built-in step runner, a control tool any map may name as
//! `"control": ["aayu", "control"]`. It reads one check request on stdin, runs the check's steps from the
//! repository root and prints one JSON result; a transcript of every step is its `api-trace` artifact.
//!
//! Steps (each an object with one action key):
//! - `{"build": "<package dir>"}` — `cargo build` (a dir with `Cargo.toml`) or `go build` (a Go package);
//!   the binaries it makes come first on `PATH` for later `run` steps. Cargo reuses the slot's build
//!   cache, so a package is built once per run.
//! - `{"run": [argv…], "stdin": "…", "exit": 0, "stdout": ["…"], "stderr": ["…"], "env": {…}, "cwd": "…"}`
//!   — `stdout` and `stderr` are substrings that must appear; `exit` defaults to 0.
//! - `{"request": {"method", "path", "headers", "json"}, "expect": {"status", "json", "text"}}` — an HTTP
//!   request against `base_url`; `json` is a subset the response body must contain.
//! - `{"test": {"package": "<dir>", "test": "<name>"}}` — one test of a cargo package or Go module.
//! - `{"env": {…}}`, `{"cwd": "<dir>"}` — set the environment or folder of the steps that follow.
//! - the browser steps of `ui` checks (SPEC §2): `open`, `fill`, `click`, `press`, `select`, `see`, `url`,
//!   `wait`, `screenshot` — see [`browser`]. Chromium is started at the first one; every failed step takes
//!   a screenshot (`failed-step-<n>.png`) that the reason names.
//!
//! Every step is checked before the first one runs: an unknown key is a contract error (exit 2) naming the
//! check, the step and the key — never silently skipped, and never half a check run.

mod browser;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::sandbox::said;
use crate::sandbox::toolchain::{package_dir, shown_dir};

/// The request a control tool receives (SPEC §4).
#[derive(Debug, Deserialize)]
struct Request {
    product: String,
    feature: String,
    check: String,
    out: PathBuf,
    #[serde(default)]
    base_url: String,
    root: PathBuf,
    spec: Value,
}

/// Keys a step may carry, beside its action.
const MODIFIERS: [&str; 7] = ["stdin", "exit", "stdout", "stderr", "env", "cwd", "expect"];
const ACTIONS: [&str; 6] = ["build", "run", "request", "test", "env", "cwd"];
/// What a step of the built-in runner can be, for the contract error.
fn known_actions() -> String {
    ACTIONS
        .iter()
        .chain(browser::STEPS.iter().map(|(a, _)| a))
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}
/// How much of a step's output the transcript keeps.
const KEEP: usize = 64 * 1024;

pub fn run(ctx: &mut Context, op: &str) -> Result<ExitStatus, Failure> {
    if op != "check" {
        return Err(Failure::usage(format!(
            "`aayu control {op}`: the only operation is `check`"
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(ctx.input, &mut text)
        .map_err(|e| Failure::usage("cannot read the check request on stdin").caused_by(e))?;
    let request: Request = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(
            "stdin is not a check request (product, feature, check, out, base_url, root, spec)",
        )
        .caused_by(e)
    })?;
    if let Err(why) = validate(&request.spec) {
        return Err(Failure::usage(format!(
            "contract error: check `{}.{}` of `{}`: {why}",
            request.feature, request.check, request.product
        )));
    }
    let mut runner = Runner::new(&request);
    let verdict = runner.run_steps(&request.spec);
    if let Some(session) = runner.browser.take() {
        session.stop();
    }
    let transcript = json!({
        "schema_version": 1,
        "product": request.product,
        "feature": request.feature,
        "check": request.check,
        "steps": runner.transcript,
    });
    let path = request.out.join("transcript.json");
    let written = serde_json::to_vec_pretty(&transcript)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&path, bytes));
    let (status, mut reason) = match verdict {
        Verdict::Passed => ("passed", String::new()),
        Verdict::Failed(reason) => ("failed", reason),
        Verdict::Unreachable(reason) => ("unreachable", reason),
    };
    if let Some(why) = &runner.no_sandbox {
        let note = format!("Chromium ran with --no-sandbox: {why}");
        reason = if reason.is_empty() {
            note
        } else {
            format!("{reason} ({note})")
        };
    }
    let mut artifacts: Vec<Value> = runner
        .screenshots
        .iter()
        .map(|name| json!({"path": name, "kind": "screenshot"}))
        .collect();
    if written.is_ok() {
        artifacts.push(json!({"path": "transcript.json", "kind": "api-trace"}));
    }
    let result = json!({"status": status, "reason": reason, "artifacts": artifacts});
    write_out(ctx.out, &format!("{result}\n"))?;
    Ok(ExitStatus::Ok)
}

enum Verdict {
    Passed,
    Failed(String),
    Unreachable(String),
}

/// Checks every step of a check before any runs: each is an object with one known action and only the
/// keys that action takes. The error names the step and the key.
pub(crate) fn validate(spec: &Value) -> Result<(), String> {
    let Some(steps) = spec.get("steps").and_then(Value::as_array) else {
        return Err("the check has no `steps` list".to_string());
    };
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        let Some(step) = step.as_object() else {
            return Err(format!("step {n} is not an object"));
        };
        if let Some(action) = browser::action_of(step) {
            browser::validate(action, step).map_err(|why| format!("step {n} ({action}): {why}"))?;
            continue;
        }
        if let Some(unknown) = step
            .keys()
            .find(|k| !ACTIONS.contains(&k.as_str()) && !MODIFIERS.contains(&k.as_str()))
        {
            return Err(format!(
                "step {n}: unknown key `{unknown}` (the step runner knows {}; beside them {})",
                known_actions(),
                MODIFIERS
                    .iter()
                    .filter(|m| !ACTIONS.contains(m))
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

struct Runner {
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
    /// Why Chromium's own sandbox was off, when it was.
    no_sandbox: Option<String>,
    /// The screenshots written to `out`, in order.
    screenshots: Vec<String>,
}

impl Runner {
    fn new(request: &Request) -> Runner {
        Runner {
            root: request.root.clone(),
            out: request.out.clone(),
            base_url: request.base_url.trim_end_matches('/').to_string(),
            env: BTreeMap::new(),
            cwd: request.root.clone(),
            bins: Vec::new(),
            transcript: Vec::new(),
            browser: None,
            no_sandbox: None,
            screenshots: Vec::new(),
        }
    }

    /// Runs the steps of a check that [`validate`] accepted: a list of objects.
    fn run_steps(&mut self, spec: &Value) -> Verdict {
        let steps = spec.get("steps").and_then(Value::as_array);
        for (i, step) in steps
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .enumerate()
        {
            let verdict = self.step(i + 1, step);
            if !matches!(verdict, Verdict::Passed) {
                return verdict;
            }
        }
        Verdict::Passed
    }

    fn step(&mut self, n: usize, step: &serde_json::Map<String, Value>) -> Verdict {
        if let Some(action) = browser::action_of(step) {
            return self.browser_step(n, action, step);
        }
        let action = ["build", "run", "request", "test"]
            .into_iter()
            .find(|a| step.contains_key(*a));
        // `env` and `cwd` alone set the state of the steps that follow; beside an action, of that step only.
        let saved = (self.env.clone(), self.cwd.clone());
        if let Some(env) = step.get("env") {
            let Some(env) = env.as_object() else {
                return Verdict::Failed(format!("step {n}: `env` must be an object of strings"));
            };
            for (k, v) in env {
                self.env.insert(
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                );
            }
        }
        if let Some(cwd) = step.get("cwd") {
            let Some(dir) = cwd.as_str() else {
                return Verdict::Failed(format!(
                    "step {n}: `cwd` must be a folder relative to the repository root"
                ));
            };
            self.cwd = self.root.join(dir);
        }
        let verdict = match action {
            Some("build") => self.build(n, step),
            Some("run") => self.run(n, step),
            Some("request") => self.request(n, step),
            Some("test") => self.test(n, step),
            _ => {
                self.transcript.push(
                    json!({"step": n, "set": {"env": step.get("env"), "cwd": step.get("cwd")}}),
                );
                return Verdict::Passed;
            }
        };
        (self.env, self.cwd) = saved;
        verdict
    }

    /// One browser step; a failed one takes a screenshot that its reason names.
    fn browser_step(
        &mut self,
        n: usize,
        action: &str,
        step: &serde_json::Map<String, Value>,
    ) -> Verdict {
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
        let label = format!("step {n} ({action} {})", step_target(&step[action]));
        match session.step(action, step, &self.out) {
            Ok(did) => {
                if action == "screenshot" {
                    if let Some(name) = step[action].as_str() {
                        self.screenshots.push(name.to_string());
                    }
                }
                self.transcript
                    .push(json!({"step": n, action: step[action], "did": did}));
                Verdict::Passed
            }
            Err(browser::StepError(why)) => {
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
                    json!({"step": n, action: step[action], "error": why, "url": url, "screenshot": name}),
                );
                if why.starts_with("the page `") && why.contains("did not open") {
                    return Verdict::Unreachable(format!("{label}: {why}{shot}"));
                }
                Verdict::Failed(format!("{label}: {why}{shot}"))
            }
        }
    }

    fn command(&self, argv: &[String]) -> Option<Command> {
        let program = argv.first()?;
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = self.bins.clone();
        dirs.extend(std::env::split_paths(&path));
        let joined = std::env::join_paths(&dirs).ok()?;
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

    fn build(&mut self, n: usize, step: &serde_json::Map<String, Value>) -> Verdict {
        let Some(package) = step.get("build").and_then(Value::as_str) else {
            return Verdict::Failed(format!(
                "step {n}: `build` names a package folder (a string)"
            ));
        };
        let package = match package_dir(package) {
            Ok(dir) => dir,
            Err(why) => return Verdict::Failed(format!("step {n}: `build`: {why}")),
        };
        let dir = self.root.join(&package);
        let package = shown_dir(&package);
        if dir.join("Cargo.toml").is_file() {
            let manifest = dir.join("Cargo.toml").display().to_string();
            let argv = [
                "cargo",
                "build",
                "--quiet",
                "--bins",
                "--message-format=json-render-diagnostics",
                "--manifest-path",
                &manifest,
            ]
            .map(String::from);
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
                if let Ok(message) = serde_json::from_str::<Value>(line) {
                    if let Some(exe) = message.get("executable").and_then(Value::as_str) {
                        if let Some(parent) = Path::new(exe).parent() {
                            if !self.bins.iter().any(|b| b == parent) {
                                self.bins.insert(0, parent.to_path_buf());
                            }
                        }
                    }
                }
            }
            self.transcript.push(json!({"step": n, "build": package, "tool": "cargo", "exit": ran.code, "stderr": tail(&ran.stderr)}));
            if ran.code != Some(0) {
                return Verdict::Failed(format!(
                    "step {n} (build {package}): cargo build exited {}: {}",
                    code(ran.code),
                    said(ran.stderr.as_bytes(), &self.root)
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
            self.transcript.push(json!({"step": n, "build": package, "tool": "go", "exit": ran.code, "stderr": tail(&ran.stderr)}));
            if ran.code != Some(0) {
                return Verdict::Failed(format!(
                    "step {n} (build {package}): go build exited {}: {}",
                    code(ran.code),
                    said(ran.stderr.as_bytes(), &self.root)
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

    fn run(&mut self, n: usize, step: &serde_json::Map<String, Value>) -> Verdict {
        let Some(argv) = string_list(step.get("run")) else {
            return Verdict::Failed(format!(
                "step {n}: `run` is an argv: a non-empty list of strings"
            ));
        };
        if argv.is_empty() {
            return Verdict::Failed(format!(
                "step {n}: `run` is an argv: a non-empty list of strings"
            ));
        }
        let stdin = step
            .get("stdin")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(mut command) = self.command(&argv) else {
            return Verdict::Failed(format!("step {n}: empty argv"));
        };
        let ran = match capture(&mut command, stdin.as_deref()) {
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
            "step": n, "run": argv, "stdin": stdin, "exit": ran.code,
            "stdout": tail(&ran.stdout), "stderr": tail(&ran.stderr),
        }));
        let label = format!("step {n} (run {})", argv.join(" "));
        let want = step.get("exit").and_then(Value::as_i64).unwrap_or(0);
        if ran.code.map(i64::from) != Some(want) {
            return Verdict::Failed(format!(
                "{label}: expected exit {want}, got {}; stderr: {}",
                code(ran.code),
                last_lines(&ran.stderr)
            ));
        }
        for (stream, text) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
            let Some(expected) = string_list(step.get(stream)) else {
                if step.contains_key(stream) {
                    return Verdict::Failed(format!(
                        "step {n}: `{stream}` is a list of expected substrings"
                    ));
                }
                continue;
            };
            if let Some(missing) = expected.iter().find(|e| !text.contains(e.as_str())) {
                return Verdict::Failed(format!(
                    "{label}: {stream} lacks `{missing}`; it was: {}",
                    quote(text)
                ));
            }
        }
        Verdict::Passed
    }

    fn request(&mut self, n: usize, step: &serde_json::Map<String, Value>) -> Verdict {
        let Some(req) = step.get("request").and_then(Value::as_object) else {
            return Verdict::Failed(format!(
                "step {n}: `request` is an object with `method`, `path`, `headers`, `json`"
            ));
        };
        let method = req
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("GET")
            .to_ascii_uppercase();
        let path = req.get("path").and_then(Value::as_str).unwrap_or("/");
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
        if let Some(headers) = req.get("headers").and_then(Value::as_object) {
            for (k, v) in headers {
                builder = builder.header(k.as_str(), v.as_str().unwrap_or_default());
            }
        }
        let body = match req.get("json") {
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
        let expect = step
            .get("expect")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(want) = expect.get("status").and_then(Value::as_u64) {
            if u64::from(status) != want {
                return Verdict::Failed(format!(
                    "{label}: expected status {want}, got {status}; body: {}",
                    quote(&text)
                ));
            }
        }
        if let Some(want) = expect.get("text").and_then(Value::as_str) {
            if !text.contains(want) {
                return Verdict::Failed(format!(
                    "{label}: the body lacks `{want}`; it was: {}",
                    quote(&text)
                ));
            }
        }
        if let Some(want) = expect.get("json") {
            let got: Value = match serde_json::from_str(&text) {
                Ok(got) => got,
                Err(_) => {
                    return Verdict::Failed(format!(
                        "{label}: the body is not JSON: {}",
                        quote(&text)
                    ));
                }
            };
            if let Err(at) = contains(&got, want, "") {
                return Verdict::Failed(format!(
                    "{label}: the JSON body does not match at `{at}`: {}",
                    quote(&text)
                ));
            }
        }
        Verdict::Passed
    }

    fn test(&mut self, n: usize, step: &serde_json::Map<String, Value>) -> Verdict {
        let spec = step.get("test").and_then(Value::as_object);
        let (Some(package), Some(name)) = (
            spec.and_then(|s| s.get("package")).and_then(Value::as_str),
            spec.and_then(|s| s.get("test")).and_then(Value::as_str),
        ) else {
            return Verdict::Failed(format!(
                "step {n}: `test` is an object with `package` (a folder) and `test` (a name)"
            ));
        };
        let package = match package_dir(package) {
            Ok(dir) => dir,
            Err(why) => return Verdict::Failed(format!("step {n}: `test`: {why}")),
        };
        let dir = self.root.join(&package);
        let package = shown_dir(&package);
        let (argv, tool) = if dir.join("Cargo.toml").is_file() {
            let manifest = dir.join("Cargo.toml").display().to_string();
            (
                [
                    "cargo",
                    "test",
                    "--quiet",
                    "--manifest-path",
                    &manifest,
                    "--",
                    name,
                ]
                .map(String::from)
                .to_vec(),
                "cargo",
            )
        } else {
            (
                vec![
                    "go".into(),
                    "test".into(),
                    "-count=1".into(),
                    "-v".into(),
                    "-run".into(),
                    format!("^{name}$"),
                    go_package(package),
                ],
                "go",
            )
        };
        let Some(mut command) = self.command(&argv) else {
            return Verdict::Failed(format!("step {n}: cannot run {tool}"));
        };
        command.current_dir(&self.root);
        let ran = match capture(&mut command, None) {
            Ok(ran) => ran,
            Err(e) => {
                return Verdict::Failed(format!("step {n} (test {name}): cannot run {tool}: {e}"));
            }
        };
        self.transcript.push(json!({"step": n, "test": {"package": package, "test": name}, "tool": tool, "exit": ran.code, "stdout": tail(&ran.stdout), "stderr": tail(&ran.stderr)}));
        let ran_any = if tool == "cargo" {
            ran.stdout
                .lines()
                .filter_map(|l| l.strip_prefix("test result: "))
                .any(|l| {
                    l.split(". ")
                        .nth(1)
                        .and_then(|p| p.split(' ').next())
                        .and_then(|c| c.parse::<u32>().ok())
                        .is_some_and(|c| c > 0)
                })
        } else {
            ran.stdout.contains(&format!("--- PASS: {name}"))
        };
        if ran.code != Some(0) {
            return Verdict::Failed(format!(
                "step {n} (test {name}): {tool} test exited {}: {}",
                code(ran.code),
                said(
                    format!("{}{}", ran.stdout, ran.stderr).as_bytes(),
                    &self.root,
                )
            ));
        }
        if !ran_any {
            return Verdict::Failed(format!(
                "step {n} (test {name}): no test named `{name}` ran in `{package}`"
            ));
        }
        Verdict::Passed
    }
}

/// Whether `want` is a subset of `got` (objects by key, arrays element by element, else equal); the
/// error is the path where they differ.
fn contains(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let path = format!("{at}.{k}");
                contains(g.get(k).ok_or_else(|| path.clone())?, wv, &path)?;
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(w)) if g.len() >= w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                contains(gv, wv, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if got == want => Ok(()),
        _ => Err(if at.is_empty() {
            ".".to_string()
        } else {
            at.to_string()
        }),
    }
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn capture(command: &mut Command, stdin: Option<&str>) -> std::io::Result<Ran> {
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
    Ok(Ran {
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

fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => None,
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

/// The last few lines of a tool's output, for a reason.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    let joined = lines[start..].join(" | ");
    if joined.is_empty() {
        "(nothing)".to_string()
    } else {
        joined
    }
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

#[cfg(test)]
mod tests {
    use super::contains;
    use serde_json::json;

    #[test]
    fn a_json_subset_matches_by_key_and_position() {
        let got = json!({"a": 1, "b": {"c": [1, 2, 3], "d": "x"}});
        assert!(contains(&got, &json!({"b": {"c": [1, 2]}}), "").is_ok());
        assert_eq!(
            contains(&got, &json!({"b": {"d": "y"}}), ""),
            Err(".b.d".to_string())
        );
        assert_eq!(contains(&got, &json!({"z": 1}), ""), Err(".z".to_string()));
    }
}
