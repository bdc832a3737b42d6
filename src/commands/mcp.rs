//! `aayu mcp`: the registry's MCP-surface commands served to a coding agent over stdio ([`crate::mcp`]).
//! A person (or the agent host, from a registration `aayu install` wrote) starts it; what it serves is
//! fixed at start: the repository (`-C DIR`, default the current one), read-only unless `--allow-write`,
//! and no GitHub token unless `--github` — `gh` is never run either way. stdout is the protocol's alone:
//! it is moved to a private descriptor at start and fd 1 becomes stderr, so nothing a command or a child
//! prints can reach the client as protocol.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt as _;

use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::mcp::{Execute, Server, Setup};
use crate::registry::mcp::Listing;
use crate::settings::Env;
use crate::settings::options::McpOptions;

/// The variables that carry a GitHub token (`INPUT_*` are the action's inputs, its token among them).
const TOKENS: [&str; 5] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

pub fn run(
    ctx: &mut Context,
    options: McpOptions,
    execute: Execute,
) -> Result<ExitStatus, Failure> {
    // The tokens leave the process itself, not only what the commands read: a `git` a command runs
    // would hand them (and run `gh`) through the user's credential helpers.
    let current: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let wanted = process_environment(&current, options.github);
    if wanted != current {
        let error =
            std::process::Command::new(ctx.env.exe.clone().unwrap_or_else(|| "aayu".into()))
                .arg0(std::env::args_os().next().unwrap_or_else(|| "aayu".into()))
                .args(std::env::args_os().skip(1))
                .env_clear()
                .envs(wanted)
                .exec();
        return Err(
            Failure::unexpected("cannot restart `aayu mcp` without the GitHub tokens")
                .caused_by(error),
        );
    }
    let repo = crate::commands::repo(ctx).map_err(|f| {
        f.with_hint("`aayu mcp` serves one repository: start it inside one, or pass `-C DIR`")
    })?;
    let (env, secrets, github) = environment(ctx.env, options.github);
    let listing = if options.allow_write {
        Listing::AllowWrite
    } else {
        Listing::ReadOnly
    };
    let server = Server::new(Setup {
        // (`components` drops the trailing `/` git gives a work tree.)
        root: repo.root().components().collect(),
        listing,
        env,
        secrets,
        github,
        execute,
        panic_in: if cfg!(debug_assertions) {
            ctx.env.var("AAYU_MCP_TEST_PANIC")
        } else {
            None
        },
    });
    let (requests, protocol) = protocol_streams().map_err(|e| {
        Failure::unexpected("cannot set stdin and stdout aside for the MCP protocol").caused_by(e)
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::unexpected("cannot start the MCP server").caused_by(e))?;
    let busy = server.busy();
    let served = runtime.block_on(async move {
        let reader = tokio::fs::File::from_std(std::fs::File::from(requests));
        let writer = tokio::fs::File::from_std(std::fs::File::from(protocol));
        let running = rmcp::ServiceExt::serve(server, (reader, writer)).await?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    if busy.load(std::sync::atomic::Ordering::SeqCst) {
        // The client went away during a call: nobody reads its result, and its processes and folders
        // must not outlive the server.
        crate::sandbox::cleanup::now();
    }
    // The blocking thread of stdin, or of a call, is not waited for.
    runtime.shutdown_background();
    match served {
        Ok(()) => Ok(ExitStatus::Ok),
        // A client that closes before `initialize` completes has asked for nothing.
        Err(e) => {
            let _ = writeln!(
                ctx.err,
                "notice: the MCP client left before the session began ({e})"
            );
            Ok(ExitStatus::Ok)
        }
    }
}

/// The process environment `aayu mcp` serves in: without the token variables (but `GITHUB_TOKEN` and
/// `GH_TOKEN` with `--github`), with git's credential helpers reset (`credential.helper` set empty, the
/// way git documents to clear the list: `gh auth setup-git` makes `gh` one) and git never prompting.
fn process_environment(
    current: &[(OsString, OsString)],
    github: bool,
) -> Vec<(OsString, OsString)> {
    let removed = |k: &str| {
        let kept = github && (k == "GITHUB_TOKEN" || k == "GH_TOKEN");
        !kept && (TOKENS.contains(&k) || k.starts_with("INPUT_"))
    };
    let mut wanted: Vec<(OsString, OsString)> = current
        .iter()
        .filter(|(k, _)| !removed(&k.to_string_lossy()))
        .cloned()
        .collect();
    let var = |wanted: &[(OsString, OsString)], name: &str| {
        wanted
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    let count: usize = var(&wanted, "GIT_CONFIG_COUNT")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let reset = (0..count).rev().any(|n| {
        var(&wanted, &format!("GIT_CONFIG_KEY_{n}")).as_deref() == Some("credential.helper")
            && var(&wanted, &format!("GIT_CONFIG_VALUE_{n}")).as_deref() == Some("")
    });
    if !reset {
        wanted.retain(|(k, _)| k != "GIT_CONFIG_COUNT");
        wanted.push(("GIT_CONFIG_COUNT".into(), (count + 1).to_string().into()));
        wanted.push((
            format!("GIT_CONFIG_KEY_{count}").into(),
            "credential.helper".into(),
        ));
        wanted.push((format!("GIT_CONFIG_VALUE_{count}").into(), "".into()));
    }
    if var(&wanted, "GIT_TERMINAL_PROMPT").as_deref() != Some("0") {
        wanted.retain(|(k, _)| k != "GIT_TERMINAL_PROMPT");
        wanted.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
    }
    wanted
}

/// The environment the tools see: without `--github`, no token at all; with it, `GITHUB_TOKEN` then
/// `GH_TOKEN`. Never the action's inputs. Also the token values no result may hold, and what
/// `initialize` says of GitHub.
fn environment(env: &Env, github: bool) -> (Env, Vec<String>, String) {
    let mut served = env.clone();
    served.no_gh = true;
    let secrets: Vec<String> = env
        .vars
        .iter()
        .filter(|(k, _)| TOKENS.contains(&k.as_str()) || k.starts_with("INPUT_"))
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    served.vars.retain(|k, _| {
        let kept = github && (k == "GITHUB_TOKEN" || k == "GH_TOKEN");
        kept || !(TOKENS.contains(&k.as_str()) || k.starts_with("INPUT_"))
    });
    let said = if !github {
        "off (started without --github: the GitHub tokens were removed from the environment and `gh` is never run; a tool that needs GitHub says so)".to_string()
    } else {
        match ["GITHUB_TOKEN", "GH_TOKEN"]
            .into_iter()
            .find(|name| served.var(name).is_some())
        {
            Some(name) => format!("on, with the token of {name} (never `gh auth token`)"),
            None => "on, but neither GITHUB_TOKEN nor GH_TOKEN is set (and `gh` is never asked)"
                .to_string(),
        }
    };
    (served, secrets, said)
}

/// The protocol's own descriptors (closed in children): stdin (the CLI holds `Stdin`'s lock) and stdout
/// set aside, fd 0 then reading `/dev/null` and fd 1 pointing at stderr.
fn protocol_streams() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    let requests = nix::unistd::dup(std::io::stdin())?;
    fcntl(&requests, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    nix::unistd::dup2_stdin(std::fs::File::open("/dev/null")?)?;
    let protocol = nix::unistd::dup(std::io::stdout())?;
    fcntl(&protocol, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    nix::unistd::dup2_stdout(std::io::stderr())?;
    Ok((requests, protocol))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::with_vars(&[
            ("GITHUB_TOKEN", "ghp_canary_one_1234"),
            ("GH_TOKEN", "gho_canary_two_1234"),
            ("GH_ENTERPRISE_TOKEN", "ghe_canary_three"),
            ("INPUT_TOKEN", "input_canary_four"),
            ("HOME", "/home/a"),
        ])
    }

    #[test]
    fn without_github_every_token_is_removed_and_gh_is_never_asked() {
        let (served, secrets, said) = environment(&env(), false);
        assert_eq!(served.vars.keys().collect::<Vec<_>>(), ["HOME"]);
        assert!(served.no_gh);
        assert_eq!(secrets.len(), 4, "{secrets:?}");
        assert!(said.starts_with("off"), "{said}");
    }

    #[test]
    fn the_process_environment_loses_the_tokens_and_git_its_credential_helpers() {
        let current: Vec<(OsString, OsString)> = [
            ("GITHUB_TOKEN", "a"),
            ("GH_TOKEN", "b"),
            ("INPUT_TOKEN", "c"),
            ("PATH", "/bin"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "user.name"),
            ("GIT_CONFIG_VALUE_0", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let wanted = process_environment(&current, false);
        let names: Vec<String> = wanted
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(
            names,
            [
                "PATH=/bin",
                "GIT_CONFIG_KEY_0=user.name",
                "GIT_CONFIG_VALUE_0=x",
                "GIT_CONFIG_COUNT=2",
                "GIT_CONFIG_KEY_1=credential.helper",
                "GIT_CONFIG_VALUE_1=",
                "GIT_TERMINAL_PROMPT=0"
            ]
        );
        // Once restarted with it, nothing changes: no second restart.
        assert_eq!(process_environment(&wanted, false), wanted);
        let kept = process_environment(&current, true);
        assert!(kept.iter().any(|(k, _)| k == "GITHUB_TOKEN"));
        assert!(!kept.iter().any(|(k, _)| k == "INPUT_TOKEN"));
    }

    #[test]
    fn with_github_the_token_order_is_github_token_then_gh_token() {
        let (served, _, said) = environment(&env(), true);
        assert_eq!(
            served.vars.keys().collect::<Vec<_>>(),
            ["GH_TOKEN", "GITHUB_TOKEN", "HOME"]
        );
        assert!(said.contains("GITHUB_TOKEN"), "{said}");
        let only_gh = Env::with_vars(&[("GH_TOKEN", "gho_x_1234567")]);
        assert!(environment(&only_gh, true).2.contains("GH_TOKEN"));
        assert!(environment(&Env::default(), true).2.contains("neither"));
    }
}
