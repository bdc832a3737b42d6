//! Where GitHub is and what the runner says of this run, read once from [`Env`] into [`GitHubEnv`]; and
//! the one order in which each context looks for a token ([`token`], written in `docs/github.md`).
//! GitHub Enterprise is `GITHUB_API_URL` and `GITHUB_SERVER_URL`, the same for every command.

use std::path::PathBuf;

use super::Env;

/// github.com's REST API, when `GITHUB_API_URL` is not set.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// github.com, when `GITHUB_SERVER_URL` is not set.
pub const DEFAULT_SERVER_URL: &str = "https://github.com";

/// The GitHub half of the environment: every variable the runner sets that aayu reads, each trimmed and
/// empty treated as unset.
#[derive(Debug, Clone, Default)]
pub struct GitHubEnv {
    /// `GITHUB_API_URL`, else github.com's.
    pub api_url: String,
    /// `GITHUB_SERVER_URL`, else github.com.
    pub server_url: String,
    /// `GITHUB_REPOSITORY` (`owner/name`).
    pub repository: Option<String>,
    pub run_id: Option<u64>,
    pub run_attempt: Option<u64>,
    /// `ACTIONS_RESULTS_URL` and `ACTIONS_RUNTIME_TOKEN`: the artifact service of this run.
    pub results_url: Option<String>,
    pub runtime_token: Option<String>,
    /// `GITHUB_RETENTION_DAYS`: the longest an artifact may be kept.
    pub retention_max: Option<u32>,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub event_name: Option<String>,
    pub event_path: Option<PathBuf>,
    /// `GITHUB_WORKFLOW_REF`: `owner/repo/.github/workflows/f.yml@ref`.
    pub workflow_ref: Option<String>,
    pub workspace: Option<PathBuf>,
    pub runner_temp: Option<PathBuf>,
    /// `GITHUB_SHA`: under `pull_request_target`, the default branch's head.
    pub sha: Option<String>,
    /// git may ask the user's credential helpers (not under `aayu mcp`: [`Env::no_gh`]).
    pub credential_helpers: bool,
}

impl GitHubEnv {
    pub fn from_env(env: &Env) -> GitHubEnv {
        let number = |name: &str| env.var(name).and_then(|v| v.parse().ok());
        let path = |name: &str| env.var(name).map(PathBuf::from);
        GitHubEnv {
            api_url: env
                .var("GITHUB_API_URL")
                .unwrap_or_else(|| DEFAULT_API_URL.into()),
            server_url: env
                .var("GITHUB_SERVER_URL")
                .unwrap_or_else(|| DEFAULT_SERVER_URL.into()),
            repository: env.var("GITHUB_REPOSITORY"),
            run_id: number("GITHUB_RUN_ID"),
            run_attempt: number("GITHUB_RUN_ATTEMPT"),
            results_url: env.var("ACTIONS_RESULTS_URL"),
            runtime_token: env.var("ACTIONS_RUNTIME_TOKEN"),
            retention_max: number("GITHUB_RETENTION_DAYS").and_then(|d: u64| u32::try_from(d).ok()),
            step_summary: path("GITHUB_STEP_SUMMARY"),
            output: path("GITHUB_OUTPUT"),
            event_name: env.var("GITHUB_EVENT_NAME"),
            event_path: path("GITHUB_EVENT_PATH"),
            workflow_ref: env.var("GITHUB_WORKFLOW_REF"),
            workspace: path("GITHUB_WORKSPACE"),
            runner_temp: path("RUNNER_TEMP"),
            sha: env.var("GITHUB_SHA"),
            credential_helpers: !env.no_gh,
        }
    }

    /// The page of a run of `repository`.
    pub fn run_url_of(&self, repository: &str, run_id: u64) -> String {
        format!(
            "{}/{repository}/actions/runs/{run_id}",
            self.server_url.trim_end_matches('/')
        )
    }

    /// This run's page, when the repository and the run are known.
    pub fn run_url(&self) -> Option<String> {
        Some(self.run_url_of(self.repository.as_deref()?, self.run_id?))
    }

    /// The server's host (`github.com`, or an Enterprise host): the name a pack gives a repository that
    /// has no `GITHUB_REPOSITORY`.
    pub fn server_host(&self) -> Option<String> {
        let (_, rest) = self.server_url.split_once("://")?;
        Some(rest.split(['/', ':']).next().unwrap_or(rest).to_string())
    }

    /// The workflow file of this run (`.github/workflows/f.yml`), from `GITHUB_WORKFLOW_REF`.
    pub fn workflow_file(&self) -> String {
        let Some(reference) = &self.workflow_ref else {
            return String::new();
        };
        let path = reference.split('@').next().unwrap_or(reference);
        match path.find(".github/workflows/") {
            Some(i) => path[i..].to_string(),
            None => path.to_string(),
        }
    }
}

/// Who is asking for a token: each context has one order, and only the local commands ask `gh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFor {
    /// The action's jobs (the gate, the comment job, the sweep, maintain) and `aayu proof comment`: the
    /// `token` input (`INPUT_TOKEN`), then `GITHUB_TOKEN`. Never `GH_TOKEN`, never `gh`.
    Action,
    /// The commands that work on a repository on GitHub from a person's machine (`ship`, `ready`, `proof
    /// push`, `verify --maintain`): `GITHUB_TOKEN`, `GH_TOKEN`, then `gh auth token` — but never `gh`
    /// inside GitHub Actions, nor under `aayu mcp` ([`Env::no_gh`]).
    Remote,
    /// `doctor` and `init`, which only read: `GITHUB_TOKEN`, then `GH_TOKEN`; never `gh`.
    Read,
}

/// Where a token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    Variable(&'static str),
    Gh,
}

/// The token of a context, in its one order (see [`TokenFor`]), and where it came from.
pub fn token(env: &Env, context: TokenFor) -> Option<(String, TokenSource)> {
    let names: &[&'static str] = match context {
        TokenFor::Action => &["INPUT_TOKEN", "GITHUB_TOKEN"],
        TokenFor::Remote | TokenFor::Read => &["GITHUB_TOKEN", "GH_TOKEN"],
    };
    if let Some(found) = names
        .iter()
        .find_map(|&name| Some((env.var(name)?, TokenSource::Variable(name))))
    {
        return Some(found);
    }
    if context != TokenFor::Remote || env.github_actions || env.no_gh {
        return None;
    }
    gh_auth_token().map(|t| (t, TokenSource::Gh))
}

/// `gh auth token`, when `gh` is installed and logged in.
fn gh_auth_token() -> Option<String> {
    std::process::Command::new("gh")
        .args(["auth", "token"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::with_vars(vars)
    }

    #[test]
    fn each_context_has_one_token_order() {
        let all = env(&[
            ("INPUT_TOKEN", "input"),
            ("GITHUB_TOKEN", "github"),
            ("GH_TOKEN", "gh"),
        ]);
        let of = |e: &Env, c| token(e, c).map(|(t, _)| t);
        assert_eq!(of(&all, TokenFor::Action).as_deref(), Some("input"));
        assert_eq!(of(&all, TokenFor::Remote).as_deref(), Some("github"));
        assert_eq!(of(&all, TokenFor::Read).as_deref(), Some("github"));
        let no_input = env(&[
            ("INPUT_TOKEN", "  "),
            ("GITHUB_TOKEN", "github"),
            ("GH_TOKEN", "gh"),
        ]);
        assert_eq!(of(&no_input, TokenFor::Action).as_deref(), Some("github"));
        // The action never falls back to GH_TOKEN (a personal token a workflow may carry for another step).
        let gh_only = env(&[("GH_TOKEN", "gh")]);
        assert_eq!(of(&gh_only, TokenFor::Action), None);
        assert_eq!(
            token(&gh_only, TokenFor::Remote),
            Some(("gh".into(), TokenSource::Variable("GH_TOKEN")))
        );
        assert_eq!(of(&gh_only, TokenFor::Read).as_deref(), Some("gh"));
        // Inside Actions the local order stops before `gh`; `Read` never asks it.
        let mut actions = env(&[]);
        actions.github_actions = true;
        assert_eq!(token(&actions, TokenFor::Remote), None);
        assert_eq!(token(&env(&[]), TokenFor::Read), None);
        assert_eq!(token(&env(&[]), TokenFor::Action), None);
    }

    #[test]
    fn the_environment_is_read_trimmed_with_github_com_by_default() {
        let github = GitHubEnv::from_env(&env(&[
            ("GITHUB_REPOSITORY", " o/r "),
            ("GITHUB_RUN_ID", "42"),
            ("GITHUB_API_URL", ""),
            (
                "GITHUB_WORKFLOW_REF",
                "o/r/.github/workflows/gate.yml@refs/heads/main",
            ),
        ]));
        assert_eq!(github.api_url, DEFAULT_API_URL);
        assert_eq!(github.server_url, DEFAULT_SERVER_URL);
        assert_eq!(github.repository.as_deref(), Some("o/r"));
        assert_eq!(
            github.run_url().as_deref(),
            Some("https://github.com/o/r/actions/runs/42")
        );
        assert_eq!(github.workflow_file(), ".github/workflows/gate.yml");
        assert_eq!(github.server_host().as_deref(), Some("github.com"));
        let enterprise = GitHubEnv::from_env(&env(&[
            ("GITHUB_API_URL", "https://ghe.example/api/v3"),
            ("GITHUB_SERVER_URL", "https://ghe.example:8443/"),
        ]));
        assert_eq!(enterprise.api_url, "https://ghe.example/api/v3");
        assert_eq!(enterprise.server_host().as_deref(), Some("ghe.example"));
        assert_eq!(
            enterprise.run_url_of("o/r", 7),
            "https://ghe.example:8443/o/r/actions/runs/7"
        );
    }
}
