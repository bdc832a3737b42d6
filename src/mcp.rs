//! The MCP server of `aayu mcp` (SPEC §11), on the official Rust SDK (`rmcp`) through its manual
//! `ServerHandler`: the tools listed are the registry's ([`registry::mcp::tools`]), and a call is checked
//! against the tool's input schema, turned into the command line the registry declares and run in this
//! process as the CLI runs it (so the CLI and MCP cannot drift). The result is the command's `--json`
//! document as `structuredContent`, and the same JSON as text; a command that fails is a result with
//! `isError` and its error, causes and hint as text; only an unknown tool or invalid arguments are
//! protocol errors. `commands/mcp.rs` starts it: the root, the environment and where stdout goes.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::exit::ExitStatus;
use crate::failure::Failure;
use crate::log::Log;
use crate::registry::mcp::{self as tools, Listing};
use crate::registry::{Command, InputType};
use crate::settings::Env;

/// Runs one command line in this process (the CLI's own parse and dispatch), writing its stdout to `out`
/// and its log to `err`; a parse error is clap's.
pub type Execute = fn(
    Vec<OsString>,
    Env,
    &mut dyn Write,
    &mut Log,
) -> Result<Result<ExitStatus, Failure>, clap::Error>;

/// What the server is started with.
pub struct Setup {
    /// The repository the tools work on, fixed at start (`-C DIR`); every path input lies beneath it.
    pub root: PathBuf,
    pub listing: Listing,
    /// The environment the commands see (without the tokens unless `--github`).
    pub env: Env,
    /// Values no result may hold: every token of the environment aayu started with.
    pub secrets: Vec<String>,
    /// Said in `initialize`'s instructions: whether GitHub is reachable, and with which token.
    pub github: String,
    pub execute: Execute,
    /// A tool whose call panics on purpose (debug builds only: the tests' way to prove that a panic in a
    /// tool call leaves the protocol whole).
    pub panic_in: Option<String>,
}

/// The server: one per `aayu mcp`.
pub struct Server {
    setup: Setup,
    tools: Vec<Tool>,
    /// One call at a time: a check uses every core, and a run's clean-up is registered process-wide.
    turn: tokio::sync::Mutex<()>,
    busy: Arc<AtomicBool>,
}

/// Marks a call as running while it lives.
struct Busy(Arc<AtomicBool>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Server {
    pub fn new(setup: Setup) -> Server {
        // The registry's tools are valid MCP tools: a test holds the listing to `tools/list`'s shape.
        let tools = tools::tools(setup.listing)
            .into_iter()
            .filter_map(|tool| serde_json::from_value(tool).ok())
            .collect();
        Server {
            setup,
            tools,
            turn: tokio::sync::Mutex::new(()),
            busy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether a tool call is running now (its processes and folders are cleaned up if the client goes).
    pub fn busy(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.busy)
    }

    fn instructions(&self) -> String {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
        let writes = match self.setup.listing {
            Listing::ReadOnly => {
                "read-only: inputs that write are not served (a person starts `aayu mcp --allow-write` to add them)"
            }
            Listing::AllowWrite => "with the inputs that write (started with --allow-write)",
        };
        format!(
            "aayu verify for the repository at {}: tools {}; {writes}. GitHub: {}. Paths are relative to the repository, without `..` or links. `verify` with `select: true` and `base`/`head` says which checks, tests and packages a change would run without running them; with `map: true` it checks the feature maps against the source (drift is a result, not an error). Errors and hints name the command line: `--name` is the input `name`.",
            self.setup.root.display().to_string().trim_end_matches('/'),
            names.join(", "),
            self.setup.github,
        )
    }

    /// The command line of a call: the arguments checked against the tool's input schema, each input
    /// rendered as the registry declares it, `--json` always, paths resolved beneath the root.
    fn command_line(&self, c: &Command, arguments: &Value) -> Result<Vec<OsString>, String> {
        let schema = tools::input_schema(c, self.setup.listing);
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        if let Some(error) = validator.iter_errors(arguments).next() {
            let at = error.instance_path().to_string();
            return Err(if at.is_empty() {
                format!("the arguments of `{}`: {error}", tools::tool_name(c))
            } else {
                format!("`{}` of `{}`: {error}", &at[1..], tools::tool_name(c))
            });
        }
        let mut argv: Vec<OsString> =
            vec!["aayu".into(), "-C".into(), self.setup.root.clone().into()];
        argv.extend(c.words().into_iter().map(OsString::from));
        let mut positionals: Vec<OsString> = Vec::new();
        for input in tools::inputs(c, self.setup.listing) {
            let Some(value) = arguments.get(input.name) else {
                continue;
            };
            let values: Vec<OsString> = match (input.ty, value) {
                (InputType::Bool, Value::Bool(true)) => {
                    argv.push(format!("--{}", input.name).into());
                    continue;
                }
                (InputType::Bool, _) => continue,
                (InputType::Strings, Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(OsString::from)
                    .collect(),
                (InputType::Path, Value::String(rel)) => {
                    if rel.split('/').next() == Some(".git") {
                        return Err(format!(
                            "`{}`: `{rel}` is in `.git`, which no tool reads or writes",
                            input.name
                        ));
                    }
                    let path = crate::safe_fs::beneath(&self.setup.root, rel).map_err(|e| {
                        format!(
                            "`{}`: {e}; paths are taken beneath the repository {}",
                            input.name,
                            self.setup.root.display()
                        )
                    })?;
                    vec![path.into_os_string()]
                }
                (_, Value::String(text)) => vec![text.into()],
                (_, Value::Number(n)) => vec![n.to_string().into()],
                (_, other) => return Err(format!("`{}`: {other} is not accepted", input.name)),
            };
            for value in values {
                if input.positional {
                    positionals.push(value);
                } else {
                    // `--name=value`: a value that starts with `-` stays a value.
                    let mut flag = OsString::from(format!("--{}=", input.name));
                    flag.push(value);
                    argv.push(flag);
                }
            }
        }
        argv.push("--json".into());
        if !positionals.is_empty() {
            argv.push("--".into());
            argv.extend(positionals);
        }
        Ok(argv)
    }

    /// Runs a command line on a blocking thread, one call at a time.
    async fn run(&self, tool: &str, argv: Vec<OsString>) -> Result<CallToolResult, ErrorData> {
        let _turn = self.turn.lock().await;
        self.busy.store(true, Ordering::SeqCst);
        let busy = Busy(Arc::clone(&self.busy));
        let env = self.setup.env.clone();
        let execute = self.setup.execute;
        let panic_here = cfg!(debug_assertions) && self.setup.panic_in.as_deref() == Some(tool);
        let logged = Arc::new(std::sync::Mutex::new(Vec::new()));
        let tee = Tee(Arc::clone(&logged));
        let ran = tokio::task::spawn_blocking(move || {
            assert!(!panic_here, "a panic asked for by AAYU_MCP_TEST_PANIC");
            let mut out = Vec::new();
            let mut log = Log::new(Box::new(tee), env.github_actions);
            let ended = execute(argv, env, &mut out, &mut log);
            let _ = log.close();
            (ended, out)
        })
        .await;
        let notices = notices(&logged.lock().map(|l| l.clone()).unwrap_or_default());
        drop(busy);
        let result = match ran {
            Err(_) => CallToolResult::error(vec![ContentBlock::text(format!(
                "error: aayu stopped on a bug in `{tool}` (a panic; its message is on the server's stderr)\n  hint: report it with the server's stderr at https://github.com/aayudha/verify/issues\n"
            ))]),
            Ok((Err(clap), _)) => {
                return Err(ErrorData::invalid_params(clap.render().to_string(), None));
            }
            Ok((Ok(Err(failure)), _)) => {
                CallToolResult::error(vec![ContentBlock::text(failure.render())])
            }
            Ok((Ok(Ok(status)), out)) => completed(status, &out),
        };
        Ok(self.redacted(with_notices(result, notices)))
    }

    /// The result without any secret of the environment in it.
    fn redacted(&self, result: CallToolResult) -> CallToolResult {
        let Ok(mut text) = serde_json::to_string(&result) else {
            return result;
        };
        let mut found = false;
        for secret in self.setup.secrets.iter().filter(|s| s.len() >= 8) {
            // As JSON writes it (a token is plain ASCII, so its JSON form is itself).
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "***");
                found = true;
            }
        }
        if !found {
            return result;
        }
        serde_json::from_str(&text).unwrap_or_else(|_| {
            CallToolResult::error(vec![ContentBlock::text(
                "error: the result held a token and was withheld\n",
            )])
        })
    }
}

/// The call's log goes to the server's stderr, and is kept to find its notices in.
struct Tee(Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Tee {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut kept) = self.0.lock() {
            // A bound: progress of a long run is not kept past 1 MiB.
            if kept.len() < 1 << 20 {
                kept.extend_from_slice(bytes);
            }
        }
        let _ = std::io::stderr().write_all(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The lines of a call's log an agent must read beside the result (they change what it means): notices,
/// notes, warnings and hints — not progress.
fn notices(log: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(log)
        .lines()
        .filter(|l| {
            ["notice:", "note:", "warning:", "hint:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect()
}

/// The notices as a second text block after the result's own (the JSON stays the first).
fn with_notices(mut result: CallToolResult, notices: Vec<String>) -> CallToolResult {
    if !notices.is_empty() {
        result.content.push(ContentBlock::text(format!(
            "aayu also said:\n{}\n",
            notices.join("\n")
        )));
    }
    result
}

/// A command that ran to its end: its `--json` document, whatever its exit (drift and failing floors are
/// verdicts, not errors); the exit is in `_meta`.
fn completed(status: ExitStatus, out: &[u8]) -> CallToolResult {
    let result = match serde_json::from_slice::<Value>(out) {
        Ok(document) if document.is_object() => CallToolResult::structured(document),
        // A command with nothing to report (no check selected) says so in a line.
        _ => CallToolResult::success(vec![ContentBlock::text(String::from_utf8_lossy(out))]),
    };
    let mut meta = serde_json::Map::new();
    meta.insert(
        "aayudha/exit".into(),
        json!({"code": status.code(), "meaning": status.meaning()}),
    );
    result.with_meta(Some(MetaObject(meta)))
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("aayu", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(command) = tools::command_of(&request.name, self.setup.listing) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool `{}`: this server serves {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let argv = self
            .command_line(command, &arguments)
            .map_err(|why| ErrorData::invalid_params(why, None))?;
        Ok(self.run(&request.name, argv).await?.into())
    }
}
