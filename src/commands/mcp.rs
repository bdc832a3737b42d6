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
use crate::settings::mcp::{environment, process_environment};
use crate::settings::options::McpOptions;

/// Set on the copy of `aayu mcp` that restarted without the tokens.
const RESTARTED: &str = "AAYU_MCP_RESTARTED";

pub fn run(
    ctx: &mut Context,
    options: McpOptions,
    execute: Execute,
) -> Result<ExitStatus, Failure> {
    // The tokens leave the process itself, not only what the commands read: a `git` a command runs
    // would hand them (and run `gh`) through the user's credential helpers.
    let mut current: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let mut wanted = process_environment(&current, options.github);
    current.sort();
    wanted.sort();
    if wanted != current {
        // Once only: a restarted server whose environment still differs is a bug, not a loop.
        if current.iter().any(|(k, _)| k == RESTARTED) {
            return Err(Failure::unexpected(
                "`aayu mcp` restarted without the GitHub tokens, but its environment still holds one",
            ));
        }
        let error =
            std::process::Command::new(ctx.env.exe.clone().unwrap_or_else(|| "aayu".into()))
                .arg0(std::env::args_os().next().unwrap_or_else(|| "aayu".into()))
                .args(std::env::args_os().skip(1))
                .env_clear()
                .envs(wanted)
                .env(RESTARTED, "1")
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
