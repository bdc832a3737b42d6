//! The steps of the built-in step runner (SPEC §2), typed: what a check of a map whose control is
//! `["aayu", "control"]` may say, read once when the map loads — so that a malformed step is a contract
//! error at its file and line (exit 2), never a failure halfway through a run.
//!
//! A step is an object with exactly one action and only the keys that action takes:
//! - `{"build": "<package dir>", "env"?, "cwd"?}` — build a cargo package's binaries or a Go package;
//! - `{"run": [argv…], "stdin"?, "exit"?, "stdout"?, "stderr"?, "env"?, "cwd"?}`;
//! - `{"request": {"method", "path", "headers", "json"}, "expect"?: {"status", "json", "text"}}`;
//! - `{"test": {"package": "<dir>", "test": "<name>"}, "env"?, "cwd"?}` — one test, by the package's
//!   runner ([`crate::runners`]);
//! - `{"env": {…}}` and/or `{"cwd": "<dir>"}` alone — the state of the steps that follow;
//! - the browser steps of `ui` checks ([`browser`]).
//!
//! Only the built-in runner's maps are read this way: a map's own control tool gets its steps as they are
//! written, and aayu takes nothing from them but their handles.
//!
//! [`runner`] runs typed steps; `aayu control check` only reads the request and prints the result.

pub(crate) mod browser;
pub(crate) mod runner;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::sandbox::toolchain::package_dir;

/// What a step may hold, in one place: each action that is not a browser step ([`browser`] has its own
/// table) and the keys it takes beside itself, in the order the contract error names them. `env` and
/// `cwd` alone are the [`SET`] step.
const ACTIONS: [(&str, &[&str]); 4] = [
    ("build", &["env"]),
    ("run", &["stdin", "exit", "stdout", "stderr", "env", "cwd"]),
    ("request", &["expect"]),
    ("test", &["env"]),
];

/// The keys of a step that sets the state of the steps after it.
const SET: [&str; 2] = ["env", "cwd"];

/// One step, read.
#[derive(Debug, Clone)]
pub enum Step {
    /// Build a package: its binaries come first on `PATH` for later `run` steps.
    Build {
        package: String,
        set: Set,
    },
    Run(Run),
    Request(Request),
    /// One test of a package, by the package's runner.
    Test {
        test: TestStep,
        set: Set,
    },
    /// `env` and/or `cwd` alone: the state of the steps that follow.
    Set(Set),
    Browser(browser::BrowserStep),
}

/// `env` and `cwd`: beside an action they hold for that step only; alone, for every step after.
#[derive(Debug, Clone, Default)]
pub struct Set {
    pub env: Option<BTreeMap<String, String>>,
    /// A folder of the repository, normalised.
    pub cwd: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Run {
    pub argv: Vec<String>,
    pub stdin: Option<String>,
    pub exit: i64,
    /// Substrings that must appear in stdout and stderr.
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
    pub set: Set,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub http: HttpRequest,
    pub expect: Expect,
}

/// An HTTP request against the check's `base_url`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRequest {
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body (sent with `content-type: application/json`).
    #[serde(default)]
    pub json: Option<Value>,
}

/// What the response must be: a status, a JSON subset of the body, a substring of it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub json: Option<Value>,
    #[serde(default)]
    pub text: Option<String>,
}

/// `{"package": "<dir>", "test": "<name>"}`: the package folder, normalised (`""` is the root).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestStep {
    pub package: String,
    pub test: String,
}

impl Step {
    /// The package folder a `build` or `test` step works in (normalised), for the fetch and the preflight.
    pub fn package(&self) -> Option<&str> {
        match self {
            Step::Build { package, .. } => Some(package),
            Step::Test { test, .. } => Some(&test.package),
            _ => None,
        }
    }

    pub fn is_browser(&self) -> bool {
        matches!(self, Step::Browser(_))
    }
}

/// Why a step of a check block breaks the step runner's contract. The text names the step (1-based) and
/// the key, and carries its cause's text too: it lands whole in one line (a map's contract error, or
/// `aayu control`'s usage error), which no renderer walks the causes of.
#[derive(Debug, thiserror::Error)]
pub enum StepContractError {
    #[error("the check has no `steps` list")]
    NoSteps,
    #[error("step {n} is not an object")]
    NotAnObject { n: usize },
    #[error("step {n} is empty: it needs an action ({})", known_actions())]
    Empty { n: usize },
    #[error(
        "step {n}: unknown key `{key}` (the step runner knows {}; beside them {})",
        known_actions(),
        modifiers().join(", ")
    )]
    UnknownKey { n: usize, key: String },
    #[error(
        "step {n}: two actions, `{first}` and `{second}`: a step does one thing (split it into two steps)"
    )]
    TwoActions {
        n: usize,
        first: String,
        second: String,
    },
    #[error("step {n} ({action}): {source}")]
    Browser {
        n: usize,
        action: &'static str,
        #[source]
        source: browser::BrowserStepError,
    },
    #[error(
        "step {n} ({label}): `{key}` goes beside an action; `env` and `cwd` alone set the environment and folder of the steps after"
    )]
    NotAlone {
        n: usize,
        label: String,
        key: String,
    },
    #[error(
        "step {n} ({label}): `{key}` does not go beside `{action}` (a `{action}` step takes {})",
        takes(action)
    )]
    NotBeside {
        n: usize,
        label: String,
        key: String,
        action: &'static str,
    },
    #[error("step {n} ({label}): {source}")]
    Key {
        n: usize,
        label: String,
        #[source]
        source: KeyError,
    },
}

/// What is wrong with one key of a step.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("`{key}` is {what}: {source}")]
    Type {
        key: &'static str,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("`run` is an argv: a non-empty list of strings")]
    EmptyArgv,
    #[error(
        "`cwd`: `{}` is not a folder inside the repository (write `.` for the root, `a/b` for a folder in it)",
        .dir.escape_debug()
    )]
    Cwd { dir: String },
    /// A `build` or `test` step's package folder, refused in the sandbox's words.
    #[error("`{action}`: {why}")]
    Package { action: &'static str, why: String },
    #[error(
        "`test`: `{}` is not a test name (the part of a test id after its `:`, without control characters)",
        .name.escape_debug()
    )]
    TestName { name: String },
}

/// Every step of a check block, each read against the contract; the error names the step (1-based, the
/// index is 0-based beside it) and the key.
pub fn parse(spec: &Value) -> Result<Vec<Step>, (usize, StepContractError)> {
    let Some(steps) = spec.get("steps").and_then(Value::as_array) else {
        return Err((0, StepContractError::NoSteps));
    };
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| parse_step(i + 1, step).map_err(|why| (i, why)))
        .collect()
}

fn parse_step(n: usize, step: &Value) -> Result<Step, StepContractError> {
    let Some(step) = step.as_object() else {
        return Err(StepContractError::NotAnObject { n });
    };
    let actions: Vec<&'static str> = step.keys().filter_map(|k| known_action(k)).collect();
    let action = match actions.as_slice() {
        [one] => *one,
        [] if SET.iter().any(|k| step.contains_key(*k)) => "env",
        [] => {
            // A step whose first key is `""` is as empty as one with no key.
            return Err(match step.keys().next() {
                Some(unknown) if !unknown.is_empty() => StepContractError::UnknownKey {
                    n,
                    key: unknown.clone(),
                },
                _ => StepContractError::Empty { n },
            });
        }
        [first, second, ..] => {
            return Err(StepContractError::TwoActions {
                n,
                first: first.to_string(),
                second: second.to_string(),
            });
        }
    };
    if browser::is_action(action) {
        return browser::parse(action, step)
            .map(Step::Browser)
            .map_err(|source| StepContractError::Browser { n, action, source });
    }
    // The set step is named by the keys it has.
    let label = if action == "env" {
        SET.iter()
            .filter(|k| step.contains_key(**k))
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        action.to_string()
    };
    let beside = ACTIONS
        .iter()
        .find(|(a, _)| *a == action)
        .map_or(&SET[..], |(_, keys)| *keys);
    if let Some(extra) = step
        .keys()
        .find(|k| k.as_str() != action && !beside.contains(&k.as_str()))
    {
        let key = extra.clone();
        return Err(if !is_known_key(extra) {
            StepContractError::UnknownKey { n, key }
        } else if action == "env" {
            StepContractError::NotAlone { n, label, key }
        } else {
            StepContractError::NotBeside {
                n,
                label,
                key,
                action,
            }
        });
    }
    read_action(action, step).map_err(|source| StepContractError::Key { n, label, source })
}

/// The step of one action (or the set step, `env`), its keys read; the error names the key.
fn read_action(action: &str, step: &Map<String, Value>) -> Result<Step, KeyError> {
    let set = read_set(step)?;
    let package = |action: &'static str, dir: String| {
        package_dir(&dir).map_err(|why| KeyError::Package {
            action,
            why: why.to_string(),
        })
    };
    Ok(match action {
        "build" => Step::Build {
            package: package(
                "build",
                field(step, "build", "a package folder (a string)")?,
            )?,
            set,
        },
        "run" => {
            let argv = strings(step, "run", "an argv: a non-empty list of strings")?;
            if argv.is_empty() {
                return Err(KeyError::EmptyArgv);
            }
            let expected = |key: &'static str| {
                if step.contains_key(key) {
                    strings(step, key, "a list of expected substrings")
                } else {
                    Ok(Vec::new())
                }
            };
            Step::Run(Run {
                argv,
                stdin: optional::<String>(step, "stdin", "a string")?,
                exit: optional::<i64>(step, "exit", "a whole number")?.unwrap_or(0),
                stdout: expected("stdout")?,
                stderr: expected("stderr")?,
                set,
            })
        }
        "request" => Step::Request(Request {
            http: field::<HttpRequest>(
                step,
                "request",
                "an object with `method`, `path`, `headers`, `json`",
            )?,
            expect: optional::<Expect>(step, "expect", "an object with `status`, `json`, `text`")?
                .unwrap_or_default(),
        }),
        "test" => {
            let mut test = field::<TestStep>(
                step,
                "test",
                "an object with `package` (a folder) and `test` (a name)",
            )?;
            test.package = package("test", test.package)?;
            if test.test.is_empty() || test.test.chars().any(char::is_control) {
                return Err(KeyError::TestName { name: test.test });
            }
            Step::Test { test, set }
        }
        _ => Step::Set(set),
    })
}

fn read_set(step: &Map<String, Value>) -> Result<Set, KeyError> {
    let env = optional::<BTreeMap<String, String>>(step, "env", "an object of strings")?;
    let cwd = optional::<String>(step, "cwd", "a folder relative to the repository root")?
        .map(|dir| package_dir(&dir).map_err(|_| KeyError::Cwd { dir }))
        .transpose()?;
    Ok(Set { env, cwd })
}

/// A key's value, read as `T`; the error names the key and what it must be.
fn field<T: serde::de::DeserializeOwned>(
    step: &Map<String, Value>,
    key: &'static str,
    what: &'static str,
) -> Result<T, KeyError> {
    let value = step.get(key).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|source| KeyError::Type { key, what, source })
}

fn optional<T: serde::de::DeserializeOwned>(
    step: &Map<String, Value>,
    key: &'static str,
    what: &'static str,
) -> Result<Option<T>, KeyError> {
    match step.get(key) {
        None => Ok(None),
        Some(_) => field(step, key, what).map(Some),
    }
}

/// A string or a list of strings.
fn strings(
    step: &Map<String, Value>,
    key: &'static str,
    what: &'static str,
) -> Result<Vec<String>, KeyError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match field::<OneOrMany>(step, key, what)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(list) => list,
    })
}

/// The action a step key names, as the contract spells it, or `None` when the key is no action.
fn known_action(key: &str) -> Option<&'static str> {
    ACTIONS
        .iter()
        .map(|(action, _)| *action)
        .chain(browser::actions())
        .find(|action| *action == key)
}

/// What a step of `action` takes: the action and the keys beside it, for the contract error.
fn takes(action: &str) -> String {
    let beside = ACTIONS
        .iter()
        .find(|(a, _)| *a == action)
        .map_or(&SET[..], |(_, keys)| *keys);
    std::iter::once(action)
        .chain(beside.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

fn is_known_key(key: &str) -> bool {
    SET.contains(&key)
        || ACTIONS
            .iter()
            .any(|(action, keys)| *action == key || keys.contains(&key))
        || browser::is_action(key)
}

/// What a step of the built-in runner can be, for the contract error.
fn known_actions() -> String {
    ACTIONS
        .iter()
        .map(|(action, _)| *action)
        .chain(SET)
        .chain(browser::actions())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The keys that go beside an action (and not alone), for the contract error.
fn modifiers() -> Vec<&'static str> {
    let mut keys: Vec<&str> = Vec::new();
    for key in ACTIONS.iter().flat_map(|(_, keys)| keys.iter()) {
        if !SET.contains(key) && !keys.contains(key) {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(step: Value) -> Result<Step, StepContractError> {
        parse(&json!({"steps": [step]}))
            .map(|mut s| s.remove(0))
            .map_err(|(_, why)| why)
    }

    #[test]
    fn a_step_is_one_action_with_the_keys_it_takes() {
        assert!(
            matches!(one(json!({"build": "./x/"})), Ok(Step::Build { package, .. }) if package == "x")
        );
        assert!(
            matches!(one(json!({"run": "ls", "exit": 1})), Ok(Step::Run(r)) if r.argv == ["ls"] && r.exit == 1)
        );
        assert!(
            matches!(one(json!({"env": {"A": "1"}, "cwd": "sub"})), Ok(Step::Set(s)) if s.cwd.as_deref() == Some("sub"))
        );
        let three = one(json!({"build": 3})).expect_err("a number").to_string();
        assert!(
            three.starts_with(
                "step 1 (build): `build` is a package folder (a string): invalid type: integer `3`"
            ),
            "{three}"
        );
        let two = one(json!({"build": "a", "test": {"package": "a", "test": "t"}}))
            .expect_err("two")
            .to_string();
        assert_eq!(
            two,
            "step 1: two actions, `build` and `test`: a step does one thing (split it into two steps)"
        );
        let beside = one(json!({"build": "a", "stdout": ["x"]}))
            .expect_err("beside")
            .to_string();
        assert_eq!(
            beside,
            "step 1 (build): `stdout` does not go beside `build` (a `build` step takes build, env)"
        );
        let alone = one(json!({"cwd": "x", "stdout": "y"}))
            .expect_err("alone")
            .to_string();
        assert_eq!(
            alone,
            "step 1 (cwd): `stdout` goes beside an action; `env` and `cwd` alone set the environment and folder of the steps after"
        );
        let up = one(json!({"cwd": "../x"})).expect_err("cwd").to_string();
        assert!(
            up.starts_with("step 1 (cwd): `cwd`: `../x` is not a folder inside"),
            "{up}"
        );
        let control = one(json!({"test": {"package": ".", "test": "a\u{0}b"}}))
            .expect_err("nul")
            .to_string();
        assert!(control.contains("`a\\0b` is not a test name"), "{control}");
        let unknown = one(json!({"biuld": "a"})).expect_err("unknown").to_string();
        assert!(
            unknown.starts_with("step 1: unknown key `biuld` (the step runner knows build, run"),
            "{unknown}"
        );
        let nested = one(json!({"test": {"package": ".", "name": "t"}}))
            .expect_err("nested")
            .to_string();
        assert!(nested.contains("unknown field `name`"), "{nested}");
        let env = one(json!({"run": ["x"], "env": {"A": 1}}))
            .expect_err("env")
            .to_string();
        assert!(
            env.starts_with("step 1 (run): `env` is an object of strings"),
            "{env}"
        );
        let up = one(json!({"test": {"package": "../x", "test": "t"}}))
            .expect_err("up")
            .to_string();
        assert!(up.starts_with("step 1 (test): `test`:"), "{up}");
        let (at, _) =
            parse(&json!({"steps": [{"build": "a"}, {"open": "x"}]})).expect_err("second");
        assert_eq!(at, 1);
    }
}
