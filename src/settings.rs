//! Flags and environment, resolved once into plain options structs: commands never read the process
//! environment or clap's matches themselves.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ArgMatches;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::failure::Failure;

pub(crate) mod action;
pub(crate) mod github;
pub(crate) mod mcp;
pub(crate) mod options;
pub(crate) mod remote;

/// What the process environment says, read once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `GITHUB_ACTIONS=true`: annotations are printed for the runner.
    pub github_actions: bool,
    /// `NO_COLOR` is set (to anything non-empty).
    pub no_color: bool,
    pub stdin_terminal: bool,
    pub stdout_terminal: bool,
    pub stderr_terminal: bool,
    /// `AAYUDHA_NOW` (RFC 3339): the clock, fixed for tests and reproductions of a dated rule.
    pub now_override: Option<String>,
    /// The directory aayu was started in.
    pub cwd: Option<PathBuf>,
    /// This binary, which a leading `aayu` in a control argv stands for.
    pub exe: Option<PathBuf>,
    /// The whole environment, from which the sandbox takes its allow-list (and nothing else).
    pub vars: std::collections::BTreeMap<String, String>,
    /// How many cores the machine has: the default number of parallel checks.
    pub cores: usize,
    /// `gh auth token` is never asked (`aayu mcp`: a server an agent drives runs no `gh`).
    pub no_gh: bool,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Env {
            github_actions: var("GITHUB_ACTIONS").as_deref() == Some("true"),
            no_color: var("NO_COLOR").is_some(),
            stdin_terminal: std::io::stdin().is_terminal(),
            stdout_terminal: std::io::stdout().is_terminal(),
            stderr_terminal: std::io::stderr().is_terminal(),
            now_override: var("AAYUDHA_NOW"),
            cwd: std::env::current_dir().ok(),
            exe: std::env::current_exe().ok(),
            vars: std::env::vars().collect(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            no_gh: false,
        }
    }

    /// An environment of exactly these variables (tests).
    #[cfg(test)]
    pub fn with_vars(vars: &[(&str, &str)]) -> Env {
        Env {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Env::default()
        }
    }

    /// A variable of the environment, trimmed; empty is unset.
    pub fn var(&self, name: &str) -> Option<String> {
        self.vars
            .get(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// Inside a CI system (`GITHUB_ACTIONS=true`, or `CI` set to anything).
    pub fn in_ci(&self) -> bool {
        self.github_actions || self.vars.contains_key("CI")
    }

    pub fn color_stderr(&self) -> bool {
        self.stderr_terminal && !self.no_color
    }

    /// The current time in UTC, or the fixed `AAYUDHA_NOW`.
    pub fn now(&self) -> Result<OffsetDateTime, Failure> {
        match &self.now_override {
            None => Ok(OffsetDateTime::now_utc()),
            Some(text) => OffsetDateTime::parse(text, &Rfc3339)
                .map(|t| t.to_offset(time::UtcOffset::UTC))
                .map_err(|e| {
                    Failure::usage(format!("`AAYUDHA_NOW` is not an RFC 3339 time: `{text}`"))
                        .caused_by(e)
                        .with_hint("write it like 2026-11-13T00:00:00Z, or unset it")
                }),
        }
    }
}

/// When `verify --maintain` posts a brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintainMode {
    /// Only when something drifted, failed or was blocked, and not when the newest brief says the same.
    Drift,
    /// Every time.
    Always,
}

impl MaintainMode {
    pub fn parse(text: &str) -> Option<MaintainMode> {
        match text {
            "drift" => Some(MaintainMode::Drift),
            "always" => Some(MaintainMode::Always),
            _ => None,
        }
    }
}

/// Options every command shares.
#[derive(Debug, Clone, Default)]
pub struct Global {
    /// `-C DIR`: where to start looking for the repository.
    pub directory: Option<PathBuf>,
}

impl Global {
    pub fn from_matches(m: &ArgMatches) -> Global {
        Global {
            directory: m.get_one::<PathBuf>("directory").cloned(),
        }
    }
}

/// What `aayu verify` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub map: bool,
    pub json: bool,
    pub config: Option<PathBuf>,
    /// `--check <feature>|<feature>.<check>|all`.
    pub check: Option<String>,
    pub base: Option<String>,
    pub head: Option<String>,
    pub story: Option<u64>,
    pub out: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub ci: bool,
    /// `--select`: print the plan of the change, run nothing.
    pub select: bool,
    pub red_on_base: bool,
    pub ready: Option<PathBuf>,
    /// `--maintain drift|always`: post the maintain brief after the run.
    pub maintain: Option<MaintainMode>,
}

impl VerifyOptions {
    pub fn from_matches(m: &ArgMatches) -> Result<VerifyOptions, Failure> {
        Ok(VerifyOptions {
            map: m.get_flag("map"),
            json: m.get_flag("json"),
            config: m.get_one::<PathBuf>("config").cloned(),
            check: m.get_one::<String>("check").cloned(),
            base: m.get_one::<String>("base").cloned(),
            head: m.get_one::<String>("head").cloned(),
            story: m.get_one::<u64>("story").copied(),
            out: m.get_one::<PathBuf>("out").cloned(),
            jobs: m
                .get_one::<u64>("jobs")
                .map(|&n| usize::try_from(n).unwrap_or(usize::MAX)),
            ci: m.get_flag("ci"),
            select: m.get_flag("select"),
            red_on_base: m.get_flag("red-on-base"),
            ready: m.get_one::<PathBuf>("ready").cloned(),
            maintain: m
                .get_one::<String>("maintain")
                .and_then(|v| MaintainMode::parse(v)),
        })
    }
}

/// What `aayu proof comment` was asked to do (the run it is in is [`github::GitHubEnv`]).
#[derive(Debug, Clone, Default)]
pub struct ProofCommentOptions {
    pub pr: Option<u64>,
    pub pack: Option<PathBuf>,
    pub bot_login: Option<String>,
    pub token: Option<String>,
    /// The configuration file in the default branch (the action's `config` input); `None`: the usual one.
    pub config_path: Option<String>,
    /// The merge-gate job's result (`success`, `failure`, `cancelled`, `skipped`), when the workflow
    /// passes it: what the status says when the gate made no pack.
    pub gate_result: Option<String>,
    /// A sharded gate's merge job's one-line reason (the `gate_reason` input), said in the status when
    /// the gate made no pack.
    pub gate_reason: Option<String>,
}

impl ProofCommentOptions {
    pub fn from_matches(m: &ArgMatches, env: &Env) -> ProofCommentOptions {
        ProofCommentOptions {
            pr: m.get_one::<u64>("pr").copied(),
            pack: m.get_one::<PathBuf>("pack").cloned(),
            bot_login: m
                .get_one::<String>("bot-login")
                .cloned()
                .or_else(|| env.var("INPUT_BOT_LOGIN")),
            token: github::token(env, github::TokenFor::Action).map(|(t, _)| t),
            config_path: None,
            gate_result: None,
            gate_reason: None,
        }
    }
}
