//! Where a local command's GitHub comes from (the same for every command that talks to GitHub): the
//! repository from `--repo OWNER/NAME`, else `GH_REPO`, else `GITHUB_REPOSITORY`, else the `origin` remote's
//! GitHub URL; the token from `GITHUB_TOKEN`, else `GH_TOKEN`, else `gh auth token` when `gh` is installed
//! (never inside GitHub Actions);
//! the API from `GITHUB_API_URL` (GitHub Enterprise too).

use crate::failure::Failure;

use super::Env;
use super::github::{GitHubEnv, TokenFor};
use crate::git::Network;
use crate::github::{Client, RepoSlug, Token};

/// A repository on GitHub and a client for it.
pub struct Remote {
    pub repo: RepoSlug,
    pub client: Client,
    pub network: Network,
}

/// The repository: `--repo`, `GH_REPO`, `GITHUB_REPOSITORY`, then `origin`.
pub fn repository(
    flag: Option<&str>,
    env: &Env,
    origin: Option<String>,
) -> Result<RepoSlug, Failure> {
    let (slug, from) = if let Some(flag) = flag {
        (flag.to_string(), "--repo")
    } else if let Some(v) = env.var("GH_REPO") {
        (v, "GH_REPO")
    } else if let Some(v) = env.var("GITHUB_REPOSITORY") {
        (v, "GITHUB_REPOSITORY")
    } else if let Some(v) = origin {
        (v, "the origin remote")
    } else {
        return Err(Failure::usage("which GitHub repository? none is given")
            .with_hint("pass `--repo OWNER/NAME`, set GH_REPO or GITHUB_REPOSITORY, or run inside a clone whose `origin` is on GitHub"));
    };
    // `gh` also accepts HOST/OWNER/NAME in GH_REPO: keep the last two parts.
    let slug = slug.trim_end_matches('/').to_string();
    let tail: Vec<&str> = slug.rsplitn(3, '/').collect();
    let slug = if tail.len() == 3 {
        format!("{}/{}", tail[1], tail[0])
    } else {
        slug
    };
    RepoSlug::parse(&slug).ok_or_else(|| {
        Failure::usage(format!(
            "`{slug}` (from {from}) is not a repository: write OWNER/NAME"
        ))
    })
}

/// The token: `GITHUB_TOKEN`, `GH_TOKEN`, then `gh auth token` (not inside GitHub Actions): the order of
/// [`TokenFor::Remote`].
pub fn token(env: &Env) -> Result<Token, Failure> {
    super::github::token(env, TokenFor::Remote)
        .map(|(t, _)| Token::new(t))
        .ok_or_else(|| no_token(env))
}

/// The error of a missing token, naming the ways to give one where aayu runs: inside GitHub Actions the
/// workflow's token (`gh` is never asked there), elsewhere a variable or `gh`'s login.
pub fn no_token(env: &Env) -> Failure {
    let hint = if env.no_gh {
        "this MCP server reaches GitHub only when a person starts it with `aayu mcp --github` (it then reads GITHUB_TOKEN, then GH_TOKEN)"
    } else if env.github_actions {
        "inside GitHub Actions, give the step the workflow's token (`env:` `GITHUB_TOKEN: ${{ github.token }}`) and the job the `permissions:` the command needs"
    } else {
        "set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login` so that `gh auth token` gives one"
    };
    Failure::usage("no GitHub token").with_hint(hint)
}

/// How git reaches the server (`GITHUB_SERVER_URL`), with the token when there is one.
pub fn network(github: &GitHubEnv, token: Option<&Token>) -> Network {
    Network {
        server_url: github.server_url.clone(),
        token: token.map(|t| t.expose().to_string()),
        credential_helpers: github.credential_helpers,
    }
}

/// The repository, a client with the token, and how git reaches the server.
pub fn resolve(
    flag: Option<&str>,
    env: &Env,
    github: &GitHubEnv,
    origin: Option<String>,
) -> Result<Remote, Failure> {
    resolve_with(flag, env, github, origin, &token(env)?)
}

/// [`resolve`] with a token already found.
pub fn resolve_with(
    flag: Option<&str>,
    env: &Env,
    github: &GitHubEnv,
    origin: Option<String>,
    token: &Token,
) -> Result<Remote, Failure> {
    let repo = repository(flag, env, origin)?;
    let network = network(github, Some(token));
    let client = Client::new(&github.api_url, token).map_err(Failure::from)?;
    Ok(Remote {
        repo,
        client,
        network,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::with_vars(vars)
    }

    #[test]
    fn the_repository_comes_from_the_first_of_four_places() {
        let all = env(&[("GH_REPO", "a/gh"), ("GITHUB_REPOSITORY", "a/actions")]);
        assert_eq!(
            repository(Some("a/flag"), &all, Some("a/origin".into()))
                .expect("flag")
                .to_string(),
            "a/flag"
        );
        assert_eq!(
            repository(None, &all, None).expect("gh").to_string(),
            "a/gh"
        );
        assert_eq!(
            repository(None, &env(&[("GITHUB_REPOSITORY", "a/actions")]), None)
                .expect("actions")
                .to_string(),
            "a/actions"
        );
        assert_eq!(
            repository(None, &env(&[]), Some("a/origin".into()))
                .expect("origin")
                .to_string(),
            "a/origin"
        );
        assert_eq!(
            repository(None, &env(&[("GH_REPO", "github.example.com/a/b")]), None)
                .expect("host")
                .to_string(),
            "a/b"
        );
        let none = repository(None, &env(&[]), None).expect_err("none");
        let hint = none.hint.expect("hint");
        for way in ["--repo", "GH_REPO", "GITHUB_REPOSITORY", "origin"] {
            assert!(hint.contains(way), "{hint}");
        }
        assert!(repository(Some("not a slug"), &all, None).is_err());
    }
}
