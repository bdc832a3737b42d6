//! `aayu action`'s inputs: each from its flag or its `INPUT_*` variable, parsed by the same clap
//! definition as the flag, so an error names the input it comes from.

use std::path::PathBuf;

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::Env;
use super::github::{GitHubEnv, TokenFor, token};
use crate::failure::Failure;
use crate::registry::CommandId;

/// What the action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionMode {
    Gate,
    Comment,
    Sweep,
    Maintain,
    /// A sharded gate's first job: the units and their split.
    Plan,
    /// One matrix leg of a sharded gate.
    Shard,
    /// A sharded gate's merge of its legs into the one pack.
    Merge,
}

/// The action's inputs and the runner's environment, resolved once.
#[derive(Debug, Clone, Default)]
pub struct ActionOptions {
    pub mode: Option<ActionMode>,
    pub token: Option<String>,
    pub story: Option<u64>,
    pub config: Option<PathBuf>,
    pub working_directory: Option<PathBuf>,
    pub retention_days: Option<u32>,
    pub bot_login: Option<String>,
    pub gate_result: Option<String>,
    /// comment mode of a sharded gate: the merge job's one-line reason.
    pub gate_reason: Option<String>,
    /// plan: how many legs; shard: the matrix entry's `of`.
    pub shards: Option<u32>,
    /// shard: this leg (1-based).
    pub shard: Option<u32>,
    /// shard: the plan job's `plan_digest` output.
    pub plan_digest: Option<String>,
    /// `GITHUB_EVENT_NAME`, which decides the mode when the input does not.
    pub event_name: String,
    /// `GITHUB_WORKSPACE`, else the folder aayu runs in.
    pub workspace: PathBuf,
}

/// The action.yml name of a registry input: `working-directory` is declared as `working_directory`.
pub fn input_name(registry_name: &str) -> String {
    registry_name.replace('-', "_")
}

/// The `INPUT_*` variable of an input: upper-cased, spaces as `_`, hyphens kept (as the runner does).
fn input_var(name: &str) -> String {
    format!("INPUT_{}", name.to_uppercase().replace(' ', "_"))
}

impl ActionOptions {
    /// Flags given on the command line win; otherwise each input comes from its `INPUT_*` variable (`""` is
    /// "not given", values trimmed) and is parsed by the same clap definition as the flag.
    pub fn resolve(
        m: &ArgMatches,
        env: &Env,
        github: &GitHubEnv,
    ) -> Result<ActionOptions, Failure> {
        let var = |name: &str| env.var(name);
        let mut argv: Vec<std::ffi::OsString> = vec!["aayu".into(), "action".into()];
        let mut sources: Vec<(String, String)> = Vec::new();
        for input in CommandId::Action.spec().inputs {
            if m.value_source(input.name) == Some(ValueSource::CommandLine) {
                if let Some(raw) = m.get_raw(input.name) {
                    for value in raw {
                        argv.push(format!("--{}", input.name).into());
                        argv.push(value.to_os_string());
                    }
                }
                continue;
            }
            let declared = input_var(&input_name(input.name));
            let hyphened = input_var(input.name);
            if let Some((variable, value)) = var(&declared)
                .map(|v| (declared.clone(), v))
                .or_else(|| var(&hyphened).map(|v| (hyphened.clone(), v)))
            {
                // Parse each input alone, so that an error names the input it comes from.
                let alone = crate::registry::clap::build().try_get_matches_from([
                    "aayu".into(),
                    "action".into(),
                    format!("--{}", input.name).into(),
                    std::ffi::OsString::from(&value),
                ]);
                if let Err(e) = alone {
                    let why = e
                        .to_string()
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .trim_start_matches("error: ")
                        .to_string();
                    return Err(Failure::usage(format!(
                        "the input `{}` ({variable}) is not valid: {why}",
                        input_name(input.name)
                    ))
                    .with_hint("fix the `with:` of the aayudha step in the workflow"));
                }
                argv.push(format!("--{}", input.name).into());
                argv.push(value.clone().into());
                sources.push((input.name.to_string(), variable));
            }
        }
        let matches = crate::registry::clap::build()
            .try_get_matches_from(argv)
            .map_err(|e| Failure::usage(e.to_string().trim().to_string()))?;
        let m = matches.subcommand_matches("action").ok_or_else(|| {
            Failure::unexpected("the action's inputs did not parse as `aayu action`")
        })?;
        let mode = match m.get_one::<String>("mode").map(String::as_str) {
            Some("gate") => Some(ActionMode::Gate),
            Some("comment") => Some(ActionMode::Comment),
            Some("sweep") => Some(ActionMode::Sweep),
            Some("maintain") => Some(ActionMode::Maintain),
            Some("plan") => Some(ActionMode::Plan),
            Some("shard") => Some(ActionMode::Shard),
            Some("merge") => Some(ActionMode::Merge),
            _ => None,
        };
        let workspace = github
            .workspace
            .clone()
            .or_else(|| env.cwd.clone())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(ActionOptions {
            mode,
            // The `token` input (or `--token`), else `GITHUB_TOKEN`: the action's one order.
            token: m
                .get_one::<String>("token")
                .cloned()
                .or_else(|| token(env, TokenFor::Action).map(|(t, _)| t)),
            story: m.get_one::<u64>("story").copied(),
            config: m.get_one::<PathBuf>("config").cloned(),
            working_directory: m.get_one::<PathBuf>("working-directory").cloned(),
            retention_days: m
                .get_one::<u64>("retention-days")
                .map(|&d| u32::try_from(d).unwrap_or(u32::MAX)),
            bot_login: m.get_one::<String>("bot-login").cloned(),
            gate_result: m.get_one::<String>("gate-result").cloned(),
            gate_reason: m.get_one::<String>("gate-reason").cloned(),
            shards: m
                .get_one::<u64>("shards")
                .map(|&n| u32::try_from(n).unwrap_or(u32::MAX)),
            shard: m
                .get_one::<u64>("shard")
                .map(|&n| u32::try_from(n).unwrap_or(u32::MAX)),
            plan_digest: m.get_one::<String>("plan-digest").cloned(),
            event_name: github.event_name.clone().unwrap_or_default(),
            workspace,
        })
    }

    /// The mode: the input, else from the event.
    pub fn mode(&self) -> Result<ActionMode, Failure> {
        if let Some(mode) = self.mode {
            return Ok(mode);
        }
        match self.event_name.as_str() {
            "pull_request_target" | "pull_request" => Ok(ActionMode::Gate),
            "schedule" | "workflow_dispatch" => Ok(ActionMode::Sweep),
            "" => Err(Failure::usage(
                "no mode: `GITHUB_EVENT_NAME` is not set and the input `mode` is not given",
            )
            .with_hint(
                "set `mode: gate`, `comment`, `sweep` or `maintain`; locally, `aayu action --mode sweep`",
            )),
            other => Err(
                Failure::usage(format!("the event `{other}` has no default mode"))
                    .with_hint("set the input `mode` to `gate`, `comment`, `sweep` or `maintain`"),
            ),
        }
    }

    /// The repository's folder: the workspace, or `working_directory` inside it.
    pub fn root(&self) -> Result<PathBuf, Failure> {
        let root = match &self.working_directory {
            Some(dir)
                if dir.is_absolute()
                    || dir
                        .components()
                        .any(|c| c == std::path::Component::ParentDir) =>
            {
                return Err(Failure::usage(format!(
                    "the input `working_directory` must be a folder inside the workspace, not `{}`",
                    dir.display()
                )));
            }
            Some(dir) => self.workspace.join(dir),
            None => self.workspace.clone(),
        };
        if !root.is_dir() {
            return Err(Failure::usage(format!(
                "the repository folder `{}` does not exist",
                root.display()
            ))
            .with_hint(
                "check out the repository first (actions/checkout), and check `working_directory`",
            ));
        }
        Ok(root)
    }
}
