//! The registration of `aayu mcp` with the agent apps: the `aayudha` entry `aayu install` merges into the
//! files where an app reads a project's MCP servers — Claude Code's `.mcp.json`, Cursor's `.cursor/mcp.json`,
//! both `{"mcpServers": {"aayudha": {…}}}` — and the snippets it prints for the apps that keep their servers
//! in the user's home folder (Codex, Amp); read back by `aayu doctor`.
//!
//! A project file is committed: it runs on every contributor's machine. So the entry runs `aayu mcp` as it
//! is — read-only, no GitHub token — never with `--allow-write` or `--github`.

use serde_json::{Map, Value};

/// The server's name in every app's list.
pub const SERVER: &str = "aayudha";
/// The program the entry runs, found on `PATH`: a committed file cannot name a path on one machine.
pub const COMMAND: &str = "aayu";
/// The `aayu mcp` flags that widen what the server may do: never in a committed registration.
pub const ELEVATED: [&str; 2] = ["--allow-write", "--github"];
/// The most of a host's file aayu reads.
const CAP: u64 = 1 << 20;

/// An agent app that reads a project's MCP servers from a file in the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// The app, as people name it.
    pub app: &'static str,
    /// Its file, relative to the repository root.
    pub path: &'static str,
    /// The arguments of `aayu` in its entry.
    pub args: &'static [&'static str],
}

/// Claude Code starts a project's servers in the folder it runs in, inside the repository: `aayu mcp`
/// finds the repository from there as any command does (<https://code.claude.com/docs/en/mcp>; it expands
/// only `${VAR}` environment variables, no project folder).
pub const CLAUDE_CODE: Host = Host {
    app: "Claude Code",
    path: ".mcp.json",
    args: &["mcp"],
};

/// Cursor does not document the folder a server starts in (editors built on VS Code have been seen to use
/// `/` or the home folder), but replaces `${workspaceFolder}` in `args` with the project's root
/// (<https://cursor.com/docs/mcp>): the server is told its root with `-C`.
pub const CURSOR: Host = Host {
    app: "Cursor",
    path: ".cursor/mcp.json",
    args: &["mcp", "-C", "${workspaceFolder}"],
};

/// The apps whose project file `aayu install` writes.
pub const HOSTS: [Host; 2] = [CLAUDE_CODE, CURSOR];

impl Host {
    /// The entry `aayu install` writes for a server not there yet.
    pub fn entry(&self) -> Value {
        serde_json::json!({"type": "stdio", "command": COMMAND, "args": self.args})
    }

    /// The host whose file is `path`.
    pub fn at(path: &str) -> Option<Host> {
        HOSTS.into_iter().find(|h| h.path == path)
    }
}

/// What a host's file says of the `aayudha` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// No file, or no `aayudha` server in it.
    Absent,
    /// The command and arguments install writes (other keys of the entry, `env` say, are the user's).
    Current,
    /// Another command or other arguments.
    Differs {
        /// What it runs, as a command line.
        runs: String,
        /// The flags of [`ELEVATED`] among its arguments.
        elevated: Vec<&'static str>,
    },
}

/// Why a host's file cannot be read or merged into. Nothing is written then.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("`{path}` is not JSON: {reason} (line {line}, column {column})")]
    NotJson {
        path: String,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error(
        "`{path}` is not the JSON aayu can merge into: {reason} (line {line}, column {column})"
    )]
    Shape {
        path: String,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error(transparent)]
    File(#[from] crate::safe_fs::Refused),
}

impl RegistrationError {
    /// Whether it is the repository's to fix (a usage error to `aayu install`), not a failure to read.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            RegistrationError::File(crate::safe_fs::Refused::Io { .. })
        )
    }

    /// How to fix it, for install's hint and doctor's fix.
    pub fn fix(&self) -> String {
        let how = match self {
            RegistrationError::NotJson { .. } => "correct the JSON there (or move the file away)",
            RegistrationError::Shape { .. } => {
                "make it one JSON object with the servers in the object `mcpServers`, and `mcpServers.aayudha` an object (or move the file away)"
            }
            RegistrationError::File(crate::safe_fs::Refused::Link { .. }) => {
                "put the file itself there, not a link"
            }
            RegistrationError::File(_) => "make it a regular file (or move it away)",
        };
        format!("{how}, then run `aayu install` again")
    }

    /// What is wrong, without the file's name (doctor says it first).
    pub fn problem(&self) -> String {
        match self {
            RegistrationError::NotJson {
                line,
                column,
                reason,
                ..
            } => format!("it is not JSON: {reason} (line {line}, column {column})"),
            RegistrationError::Shape {
                line,
                column,
                reason,
                ..
            } => format!(
                "it is not the JSON aayu can merge into: {reason} (line {line}, column {column})"
            ),
            RegistrationError::File(e) => e.to_string(),
        }
    }
}

/// What `aayu install` does to a host's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub host: Host,
    /// The whole file to write; `None` when the entry is current already.
    pub text: Option<String>,
    /// Whether the file exists.
    pub existed: bool,
    /// The flags of [`ELEVATED`] the entry ran with, which the written entry no longer has.
    pub dropped: Vec<&'static str>,
}

/// The shape a host's file must have to be merged into, checked by serde so that a wrong type is said
/// with its line and column: an object, whose `mcpServers` (when there) is an object, whose `aayudha` (when
/// there) is an object.
#[derive(serde::Deserialize)]
#[serde(expecting = "a JSON object")]
struct Shape {
    #[serde(rename = "mcpServers", default)]
    _servers: Option<Servers>,
    #[serde(flatten)]
    _rest: Map<String, Value>,
}

#[derive(serde::Deserialize)]
#[serde(expecting = "an object of servers by name")]
struct Servers {
    #[serde(rename = "aayudha", default)]
    _aayudha: Option<EntryShape>,
    #[serde(flatten)]
    _rest: Map<String, Value>,
}

#[derive(serde::Deserialize)]
#[serde(expecting = "an object (`command`, `args`, …)")]
struct EntryShape {
    // A map, not an empty struct: serde would take an empty struct from an array.
    #[serde(flatten)]
    _keys: Map<String, Value>,
}

/// The file of `host` as a JSON object; `None` when there is no file. A file of only white space is
/// an empty object.
fn read(
    root: &std::path::Path,
    host: Host,
) -> Result<Option<Map<String, Value>>, RegistrationError> {
    let bytes = match crate::safe_fs::read(root, host.path, CAP) {
        Ok(bytes) => bytes,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Some(Map::new()));
    }
    let located = |e: serde_json::Error| {
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let reason = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
        // A value refused before anything of it was read is at column 0: people count from 1.
        let (path, line, column) = (host.path.to_string(), e.line(), e.column().max(1));
        if e.is_data() {
            RegistrationError::Shape {
                path,
                line,
                column,
                reason,
            }
        } else {
            RegistrationError::NotJson {
                path,
                line,
                column,
                reason,
            }
        }
    };
    serde_json::from_slice::<Shape>(&bytes).map_err(located)?;
    serde_json::from_slice::<Map<String, Value>>(&bytes)
        .map(Some)
        .map_err(located)
}

/// The `aayudha` entry of a file read, when there is one.
fn entry(document: &Map<String, Value>) -> Option<&Map<String, Value>> {
    document
        .get("mcpServers")
        .and_then(Value::as_object)
        .and_then(|servers| servers.get(SERVER))
        .and_then(Value::as_object)
}

/// What an entry says, against what install writes for `host`: a `type` absent or `stdio` (each app's
/// default), `command` and `args` exactly.
fn registration(host: Host, entry: Option<&Map<String, Value>>) -> Registration {
    let Some(entry) = entry else {
        return Registration::Absent;
    };
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("?")).collect())
        .unwrap_or_default();
    let stdio = entry.get("type").is_none_or(|t| t == "stdio");
    let command = entry.get("command").and_then(Value::as_str);
    if stdio && command == Some(COMMAND) && args == host.args {
        return Registration::Current;
    }
    let mut runs = std::iter::once(command.unwrap_or("?"))
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    if !stdio {
        runs.push_str(&format!(
            " (type {})",
            entry.get("type").unwrap_or(&Value::Null)
        ));
    }
    Registration::Differs {
        runs,
        elevated: ELEVATED
            .into_iter()
            .filter(|flag| args.contains(flag))
            .collect(),
    }
}

/// What `host`'s file in the repository at `root` says of the `aayudha` server.
pub fn check(root: &std::path::Path, host: Host) -> Result<Registration, RegistrationError> {
    let document = read(root, host)?;
    Ok(registration(host, document.as_ref().and_then(entry)))
}

/// What install writes to `host`'s file: the file as it is, but `mcpServers.aayudha`'s `command` and
/// `args` (and `type`, when there and not `stdio`) set to install's, every other key and its order kept.
pub fn plan(root: &std::path::Path, host: Host) -> Result<Plan, RegistrationError> {
    let document = read(root, host)?;
    let existed = document.is_some();
    let mut document = document.unwrap_or_default();
    let dropped = match registration(host, entry(&document)) {
        Registration::Current => {
            return Ok(Plan {
                host,
                text: None,
                existed,
                dropped: Vec::new(),
            });
        }
        Registration::Absent => Vec::new(),
        Registration::Differs { elevated, .. } => elevated,
    };
    let servers = document
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    if !servers.is_object() {
        // `null`: no servers yet.
        *servers = Value::Object(Map::new());
    }
    if let Value::Object(servers) = servers {
        let wanted = host.entry();
        match servers.get_mut(SERVER) {
            Some(Value::Object(present)) => {
                if present.get("type").is_some_and(|t| t != "stdio") {
                    present.insert("type".into(), wanted["type"].clone());
                }
                present.insert("command".into(), wanted["command"].clone());
                present.insert("args".into(), wanted["args"].clone());
            }
            _ => {
                servers.insert(SERVER.into(), wanted);
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(document))
        .unwrap_or_else(|_| String::from("{}"));
    text.push('\n');
    Ok(Plan {
        host,
        text: Some(text),
        existed,
        dropped,
    })
}

/// Writes a plan's file (whole or not at all, never through a link); whether it wrote.
pub fn write(root: &std::path::Path, plan: &Plan) -> Result<bool, RegistrationError> {
    let Some(text) = &plan.text else {
        return Ok(false);
    };
    crate::safe_fs::write(root, plan.host.path, text.as_bytes())?;
    Ok(true)
}

/// [`plan`] and [`write`]: `aayu doctor --fix`'s way to write an entry again.
pub fn register(root: &std::path::Path, host: Host) -> Result<bool, RegistrationError> {
    write(root, &plan(root, host)?)
}

/// What install prints for the apps that keep their servers in the user's home folder, which it never
/// writes: where each reads them, and the entry to add. They start a server in the folder they run in,
/// inside the repository, so `aayu mcp` needs no `-C`.
pub fn home_snippets() -> String {
    format!(
        "Codex and Amp keep their MCP servers in your home folder, which aayu does not write. To give them `aayu mcp`:\n\
         Codex, in ~/.codex/config.toml:\n\
         \x20   [mcp_servers.{SERVER}]\n\
         \x20   command = \"{COMMAND}\"\n\
         \x20   args = [\"mcp\"]\n\
         Amp, in ~/.config/amp/settings.json (for Amp in an editor, the editor's settings.json):\n\
         \x20   \"amp.mcpServers\": {{\n\
         \x20     \"{SERVER}\": {{\"command\": \"{COMMAND}\", \"args\": [\"mcp\"]}}\n\
         \x20   }}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(path: &str, text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
        dir
    }

    #[test]
    fn a_new_file_holds_the_entry_alone() {
        let dir = tempfile::tempdir().expect("temp");
        let plan = plan(dir.path(), CURSOR).expect("plan");
        assert!(!plan.existed);
        let written: Value =
            serde_json::from_str(plan.text.as_deref().expect("text")).expect("json");
        assert_eq!(
            written,
            serde_json::json!({"mcpServers": {"aayudha": {"type": "stdio", "command": "aayu", "args": ["mcp", "-C", "${workspaceFolder}"]}}})
        );
        assert!(write(dir.path(), &plan).expect("write"));
        assert_eq!(
            check(dir.path(), CURSOR).expect("check"),
            Registration::Current
        );
        assert_eq!(
            check(dir.path(), CLAUDE_CODE).expect("check"),
            Registration::Absent
        );
    }

    #[test]
    fn an_entry_is_merged_keeping_every_other_key_in_its_order() {
        let text = r#"{"z": 1, "mcpServers": {"other": {"command": "x"}, "aayudha": {"env": {"A": "1"}, "command": "aayu", "args": ["mcp", "--allow-write"]}}, "a": [1]}"#;
        let dir = root_with(".mcp.json", text);
        assert_eq!(
            check(dir.path(), CLAUDE_CODE).expect("check"),
            Registration::Differs {
                runs: "aayu mcp --allow-write".into(),
                elevated: vec!["--allow-write"],
            }
        );
        let plan = plan(dir.path(), CLAUDE_CODE).expect("plan");
        assert_eq!(plan.dropped, vec!["--allow-write"]);
        let merged = plan.text.expect("text");
        assert_eq!(
            merged,
            "{\n  \"z\": 1,\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    },\n    \"aayudha\": {\n      \"env\": {\n        \"A\": \"1\"\n      },\n      \"command\": \"aayu\",\n      \"args\": [\n        \"mcp\"\n      ]\n    }\n  },\n  \"a\": [\n    1\n  ]\n}\n"
        );
        // Another transport is not the entry either.
        let dir = root_with(
            ".mcp.json",
            r#"{"mcpServers": {"aayudha": {"type": "http", "command": "aayu", "args": ["mcp"]}}}"#,
        );
        assert_eq!(
            check(dir.path(), CLAUDE_CODE).expect("check"),
            Registration::Differs {
                runs: "aayu mcp (type \"http\")".into(),
                elevated: vec![],
            }
        );
        // Once written, current: nothing more to write. No `type` is current too (stdio is the default).
        let dir = root_with(".mcp.json", &merged);
        assert_eq!(
            check(dir.path(), CLAUDE_CODE).expect("check"),
            Registration::Current
        );
        assert_eq!(
            super::plan(dir.path(), CLAUDE_CODE).expect("plan").text,
            None
        );
    }

    #[test]
    fn what_cannot_be_merged_into_is_said_with_its_line_and_column() {
        for (text, line, column, shape) in [
            (
                "{\n  \"mcpServers\": {\n    \"a\": 1\n    \"b\": 2\n  }\n}\n",
                4,
                5,
                false,
            ),
            ("[1, 2]", 1, 1, true),
            ("{\n  \"mcpServers\": \"none\"\n}", 2, 22, true),
            ("{\"mcpServers\": {\"aayudha\": [\"aayu\"]}}", 1, 27, true),
        ] {
            let dir = root_with(".mcp.json", text);
            let e = check(dir.path(), CLAUDE_CODE).expect_err(text);
            match e {
                RegistrationError::NotJson {
                    line: l, column: c, ..
                } if !shape => {
                    assert_eq!((l, c), (line, column), "{text}");
                }
                RegistrationError::Shape {
                    line: l, column: c, ..
                } if shape => {
                    assert_eq!((l, c), (line, column), "{text}");
                }
                other => panic!("{text}: {other}"),
            }
        }
        // Only white space, or `null` servers: nothing there yet.
        let dir = root_with(".mcp.json", " \n");
        assert_eq!(
            check(dir.path(), CLAUDE_CODE).expect("check"),
            Registration::Absent
        );
        let dir = root_with(".mcp.json", "{\"mcpServers\": null}");
        assert!(plan(dir.path(), CLAUDE_CODE).expect("plan").text.is_some());
    }
}
