//! `aayu mcp`: the registry's MCP-surface commands served to a coding agent over stdio ([`crate::mcp`]).
//! A person (or the agent host, from a registration `aayu install` wrote) starts it; what it serves is
//! fixed at start: the repository (`-C DIR`, default the current one), read-only unless `--allow-write`,
//! and no GitHub token unless `--github` — `gh` is never run either way. stdout is the protocol's alone:
//! it is moved to a private descriptor at start and fd 1 becomes stderr, so nothing a command or a child
//! prints can reach the client as protocol.

use std::io::Write as _;
use std::os::fd::OwnedFd;

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
        root: repo.root().to_path_buf(),
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

/// The protocol's own descriptors (closed in children): a copy of stdin (the CLI holds `Stdin`'s lock)
/// and stdout set aside, fd 1 then pointing at stderr.
fn protocol_streams() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    let requests = nix::unistd::dup(std::io::stdin())?;
    fcntl(&requests, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
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
