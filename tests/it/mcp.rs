//! `aayu mcp` through the real binary: rmcp's own client drives it over a child process (initialize, the
//! listings, calls and their errors), and a raw client reads every byte of its stdout where the protocol's
//! purity is the point (a printing control tool, a panic in a call, a client that leaves mid-call).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::common::{self, TestRepo, run};

type Client = RunningService<RoleClient, ()>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// `aayu mcp` with `args` in `repo`, its environment the tests' scrubbed one plus `env`.
fn server(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let mut cmd = common::aayu_in(repo);
    cmd.arg("mcp").args(args).envs(env.iter().copied());
    cmd
}

/// An rmcp client connected to `aayu mcp` (initialized).
async fn connect(cmd: std::process::Command) -> Client {
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .expect("aayu mcp starts");
    ().serve(transport).await.expect("initialize")
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
}

/// The JSON-RPC error code of a protocol error.
fn protocol_error(result: Result<CallToolResult, ServiceError>) -> (i32, String) {
    match result {
        Err(ServiceError::McpError(e)) => (e.code.0, e.message.to_string()),
        other => panic!("a protocol error, not {other:?}"),
    }
}

/// The text of a result's first content block.
fn text(result: &CallToolResult) -> String {
    result.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .expect("text content")
}

/// What `aayu <args>` prints on stdout, as JSON.
fn cli_json(repo: &TestRepo, args: &[&str]) -> Value {
    let out = run(repo.aayu().args(args));
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`aayu {args:?}` printed JSON ({e}): {}{}",
            out.stdout, out.stderr
        )
    })
}

/// The tools listed, driven on `rt`, the runtime the client runs on.
fn listed(rt: &tokio::runtime::Runtime, client: &Client) -> Vec<Value> {
    rt.block_on(async {
        client
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| serde_json::to_value(t).expect("json"))
            .collect()
    })
}

fn property_names(tool: &Value) -> Vec<String> {
    tool["inputSchema"]["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn the_default_listing_is_the_generated_one_read_only_and_small() {
    let (repo, _) = crate::verify_map::shop();
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &[], &[])));
    let info = client.peer_info().expect("initialized");
    // The SDK negotiates; asked for 2025-11-25 (the client's latest with `initialize`), it answers it.
    assert_eq!(info.protocol_version.as_str(), "2025-11-25");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("GitHub: off"), "{instructions}");
    let tools = rt.block_on(client.list_tools(None)).expect("tools/list");
    // The whole answer, as the agent pays for it in context on every turn: under 12 KB.
    let size = serde_json::to_vec(&tools).expect("json").len();
    assert!(size < 12 * 1024, "tools/list is {size} bytes");
    let tools: Vec<Value> = tools
        .tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .collect();
    // Exactly the generated listing (`aayu generate --check` holds that file to the registry).
    let file: Value = serde_json::from_slice(
        &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/mcp/tools.json"))
            .expect("tools.json"),
    )
    .expect("json");
    assert_eq!(Value::Array(tools.clone()), file["tools"]);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["doctor", "verify", "proof_verify"]);
    for tool in &tools {
        for (name, property) in tool["inputSchema"]["properties"]
            .as_object()
            .expect("properties")
        {
            assert_eq!(
                property["x-aayu-exposure"], "read",
                "{name} of {}",
                tool["name"]
            );
        }
    }
    let verify = &tools[1];
    for absent in ["maintain", "ci", "json"] {
        assert!(
            !property_names(verify).contains(&absent.to_string()),
            "{absent}"
        );
    }
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], json!(true));
    rt.block_on(client.cancel()).expect("close");
}

#[test]
fn allow_write_adds_the_write_inputs_and_never_a_never_one() {
    let (repo, _) = crate::verify_map::shop();
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &["--allow-write"], &[])));
    let tools = listed(&rt, &client);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["doctor", "verify", "proof_verify"]);
    let verify = property_names(&tools[1]);
    assert!(verify.contains(&"maintain".to_string()), "{verify:?}");
    assert!(property_names(&tools[0]).contains(&"fix".to_string()));
    for tool in &tools {
        for absent in ["ci", "json", "solo-bypass"] {
            assert!(
                !property_names(tool).contains(&absent.to_string()),
                "{absent}"
            );
        }
    }
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["maintain"]["x-aayu-exposure"],
        "write"
    );
    rt.block_on(client.cancel()).expect("close");
}

#[test]
fn drift_is_a_result_equal_to_verify_map_json() {
    let (repo, _) = crate::verify_map::shop();
    repo.write(
        "src/main.rs",
        crate::verify_map::SOURCE.replace(
            "    cmd(\"sell\");\n",
            "    cmd(\"sell\");\n    cmd(\"refund\");\n",
        ),
    );
    let expected = cli_json(&repo, &["verify", "--map", "--json"]);
    assert_eq!(expected["drift"][0]["kind"], "unmapped-surface");
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &[], &[])));
    let result = rt
        .block_on(call(&client, "verify", json!({"map": true})))
        .expect("a result");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content.as_ref(), Some(&expected));
    // The same JSON as text, and the exit (3: a floor fails) beside it.
    assert_eq!(
        serde_json::from_str::<Value>(&text(&result)).expect("json"),
        expected
    );
    let meta = serde_json::to_value(&result.meta).expect("meta");
    assert_eq!(meta["aayudha/exit"]["code"], 3, "{meta}");
    rt.block_on(client.cancel()).expect("close");
}

#[test]
fn select_is_the_plan_verify_select_prints() {
    let marks = common::shared_dir();
    let (repo, base, head) = crate::select::shop(marks.path(), true, Some(crate::select::EVIDENCE));
    // (The evidence map is read at the head; the Ready snapshot is not needed to plan checks and tests.)
    let expected = cli_json(
        &repo,
        &[
            "verify", "--select", "--base", &base, "--head", &head, "--json",
        ],
    );
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &[], &[])));
    let result = rt
        .block_on(call(
            &client,
            "verify",
            json!({"select": true, "base": base, "head": head}),
        ))
        .expect("a result");
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(result.structured_content.as_ref(), Some(&expected));
    assert!(!expected["checks"].as_array().expect("checks").is_empty());
    assert!(!marks.path().join("ran").exists(), "nothing ran");
    rt.block_on(client.cancel()).expect("close");
}

#[test]
fn bad_arguments_and_unknown_tools_are_protocol_errors() {
    let (repo, _) = crate::verify_map::shop();
    let outside = tempfile::tempdir().expect("temp");
    std::os::unix::fs::symlink(outside.path(), repo.path("away")).expect("link");
    // A FIFO would block the command reading it, and every call after it.
    assert!(
        std::process::Command::new("mkfifo")
            .arg(repo.path("fifo"))
            .status()
            .expect("mkfifo")
            .success()
    );
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &[], &[])));
    let mut answers = Vec::new();
    for (tool, arguments) in [
        (
            "verify",
            json!({"ci": true, "base": "HEAD", "head": "HEAD"}),
        ),
        ("verify", json!({"map": true, "maintain": "always"})),
        ("verify", json!({"map": true, "jobs": "many"})),
        ("verify", json!({"map": true, "story": "7; rm -rf /"})),
        ("verify", json!({"map": true, "out": "../elsewhere"})),
        ("verify", json!({"map": true, "config": "/etc/passwd"})),
        ("verify", json!({"map": true, "out": "away/run"})),
        ("verify", json!({"map": true, "config": "fifo"})),
        ("verify", json!({"check": "all", "out": ".git/runs"})),
        ("install", json!({})),
        ("proof verify", json!({"story": "7"})),
    ] {
        let (code, message) = protocol_error(rt.block_on(call(&client, tool, arguments.clone())));
        assert_eq!(code, -32602, "{tool} {arguments}: {message}");
        answers.push(format!("{tool} {arguments}\n  {message}"));
    }
    // Nothing was written outside the root.
    assert!(common::all_paths(outside.path()).is_empty());
    let root = repo.root().display().to_string();
    insta::assert_snapshot!(
        "mcp_protocol_errors",
        answers
            .join("\n")
            .replace(root.trim_end_matches('/'), "[root]")
    );
    rt.block_on(client.cancel()).expect("close");
}

#[test]
fn a_failing_command_is_an_error_result_with_its_hint() {
    let (repo, _) = crate::verify_map::shop();
    let rt = runtime();
    let client = rt.block_on(connect(server(repo.root(), &[], &[])));
    let result = rt
        .block_on(call(&client, "verify", json!({"check": "nothing.here"})))
        .expect("a result, not a protocol error");
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    insta::assert_snapshot!("mcp_failing_command", text(&result));
    // The server goes on serving.
    let again = rt
        .block_on(call(&client, "verify", json!({"map": true})))
        .expect("a result");
    assert_eq!(again.is_error, Some(false));
    rt.block_on(client.cancel()).expect("close");
}

/// A `gh` on `PATH` that records every call in `calls` and answers a token.
fn gh_shim(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> {}/calls\necho gho_canary_from_gh_0123456789\n",
        dir.display()
    );
    std::fs::write(bin.join("gh"), script).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("gh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A git server that answers every request 401 (so git asks its credential helpers), recording the
/// requests; its `http://` URL.
fn unauthorized_server(requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/octo/shop.git",
        listener.local_addr().expect("addr")
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match std::io::Read::read(&mut stream, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            if let Ok(mut seen) = requests.lock() {
                seen.push(String::from_utf8_lossy(&request).into_owned());
            }
            let _ = stream.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    url
}

#[test]
fn no_token_reaches_a_result_and_gh_never_runs() {
    let (repo, _) = crate::verify_map::shop();
    let shim = tempfile::tempdir().expect("temp");
    let path = gh_shim(shim.path());
    // `gh auth setup-git` makes `gh` git's credential helper; the origin asks for credentials.
    let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let origin = unauthorized_server(std::sync::Arc::clone(&requests));
    repo.git(&["remote", "add", "origin", &origin]);
    let helper = format!("!{}/bin/gh auth git-credential", shim.path().display());
    repo.git(&["config", "credential.helper", &helper]);
    let canaries = [
        ("GITHUB_TOKEN", "ghp_canary_github_token_0123456789"),
        ("GH_TOKEN", "gho_canary_gh_token_0123456789"),
        ("GH_ENTERPRISE_TOKEN", "ghe_canary_enterprise_0123456789"),
        ("INPUT_TOKEN", "ghs_canary_input_token_0123456789"),
    ];
    let mut env: Vec<(&str, &str)> = canaries.to_vec();
    env.push(("PATH", &path));
    // Nothing listens here: a command that asks GitHub fails at once.
    env.push(("GITHUB_API_URL", "http://127.0.0.1:9"));
    env.push(("GH_REPO", "octo/shop"));
    let rt = runtime();
    for args in [&[][..], &["--github", "--allow-write"][..]] {
        let client = rt.block_on(connect(server(repo.root(), args, &env)));
        let instructions = client
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .unwrap_or_default();
        let mut seen = vec![instructions.clone()];
        for (tool, arguments) in [
            ("doctor", json!({})),
            ("proof_verify", json!({"story": "7"})),
            ("verify", json!({"map": true})),
        ] {
            let result = rt
                .block_on(call(&client, tool, arguments))
                .expect("a result");
            seen.push(serde_json::to_string(&result).expect("json"));
        }
        if args.is_empty() {
            assert!(instructions.contains("GitHub: off"), "{instructions}");
        } else {
            assert!(
                instructions.contains("with the token of GITHUB_TOKEN"),
                "{instructions}"
            );
        }
        for (name, value) in canaries {
            for text in &seen {
                assert!(!text.contains(value), "{name} in {text}");
            }
        }
        assert!(
            !seen.iter().any(|t| t.contains("gho_canary_from_gh")),
            "a token from gh: {seen:#?}"
        );
        rt.block_on(client.cancel()).expect("close");
    }
    assert!(!shim.path().join("calls").exists(), "gh ran");
    // git asked the origin (proof verify fetches the ledger), and never with a token.
    let requests = requests.lock().expect("requests");
    assert!(!requests.is_empty(), "the origin was never asked");
    for request in requests.iter() {
        assert!(
            !request.to_ascii_lowercase().contains("authorization:"),
            "{request}"
        );
    }
}

/// A raw MCP client: every line `aayu mcp` writes on stdout, read as it comes.
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Raw {
    fn start(mut cmd: std::process::Command) -> Raw {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("aayu mcp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut raw = Raw {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        };
        raw.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        raw.answer(0);
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}));
        self.answer(id)
    }

    /// Reads lines until the answer to `id`; every line must be a JSON-RPC message.
    fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(240))
                .expect("an answer");
            self.seen.push(line.clone());
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds only protocol ({e}): {line:?}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Closes stdin and waits for the server to end (at most `limit`); the rest of stdout must be
    /// protocol too.
    fn close(mut self, limit: Duration) -> (std::process::ExitStatus, Duration) {
        let start = Instant::now();
        drop(self.stdin.take());
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("aayu mcp did not end within {limit:?} of its stdin closing");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("stdout holds only protocol ({e}): {line:?}"));
        }
        (status, start.elapsed())
    }
}

#[test]
fn stdout_stays_protocol_through_a_printing_check_and_a_panic() {
    let marks = common::shared_dir();
    let (repo, _, _) = crate::select::shop(marks.path(), false, None);
    // The control tool prints freely on its stdout and stderr before its result.
    repo.write(
        ".agents/skills/verify-shop/control/mark.sh",
        "cat > /dev/null\necho 'not protocol 1'\necho 'not protocol 2' >&2\necho '{\"status\": \"passed\", \"reason\": \"\", \"artifacts\": []}'\n",
    );
    repo.commit("a chatty control tool");
    let mut raw = Raw::start(server(
        repo.root(),
        &[],
        &[("AAYU_MCP_TEST_PANIC", "doctor")],
    ));
    let checked = raw.call(1, "verify", json!({"check": "count.counts"}));
    assert_eq!(checked["result"]["isError"], json!(false), "{checked}");
    // A panic in a call (debug builds) is an error result, and the server goes on.
    let panicked = raw.call(2, "doctor", json!({}));
    assert_eq!(panicked["result"]["isError"], json!(true), "{panicked}");
    insta::assert_snapshot!(
        "mcp_panic",
        panicked["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
    );
    let map = raw.call(3, "verify", json!({"map": true}));
    assert!(map["result"]["structuredContent"].is_object(), "{map}");
    let (status, _) = raw.close(Duration::from_secs(10));
    assert!(status.success(), "{status}");
}

#[test]
fn a_client_that_leaves_mid_call_ends_the_server_and_its_check() {
    let marks = common::shared_dir();
    let (repo, _, _) = crate::select::shop(marks.path(), false, None);
    // The check writes its pid, then waits far longer than the test.
    repo.write(
        ".agents/skills/verify-shop/control/mark.sh",
        format!(
            "cat > /dev/null\necho $$ > {}/pid\nsleep 300\n",
            marks.path().display()
        ),
    );
    repo.commit("a slow control tool");
    let mut raw = Raw::start(server(repo.root(), &[], &[]));
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "verify", "arguments": {"check": "count.counts"}}}));
    let started = Instant::now();
    while !marks.path().join("pid").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the check never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = std::fs::read_to_string(marks.path().join("pid")).expect("pid");
    let (status, took) = raw.close(Duration::from_secs(30));
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(30));
    // The check's process did not outlive the server.
    let alive = Path::new("/proc").join(pid.trim());
    let gone = Instant::now();
    while alive.exists() && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !alive.exists(),
        "the check's process {} is still running",
        pid.trim()
    );
}
