//! The command-line front end: a clap `Command` built from the registry at start-up, and the one place
//! where errors are rendered and turned into an exit code.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::ArgMatches;

use crate::commands::{self, Context, Failure};
use crate::exit::ExitStatus;
use crate::registry::clap::build;
use crate::registry::{Command, CommandId};
use crate::settings::{self, Env};

/// Runs `aayu` with the process's arguments and environment.
pub fn main() -> ExitCode {
    // As root, what aayu writes for product code (red-on-base's copy of the base, the dependency caches,
    // a resolved lock file) must be readable by the sandbox uids: a root shell's umask `027` (common in
    // devcontainers and hardened images) would hide it. Write bits stay masked as they were.
    if nix::unistd::geteuid().is_root() {
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
        nix::sys::stat::umask(old & nix::sys::stat::Mode::from_bits_truncate(0o022));
    }
    let env = Env::from_process();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut err = crate::log::Log::new(Box::new(io::stderr()), env.github_actions);
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let status = run(std::env::args_os(), env, &mut input, &mut out, &mut err);
    let _ = err.close();
    // An interrupted run ends from the signal thread, once it has cleaned up, with 128 + the signal.
    while crate::sandbox::cleanup::interrupted() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    ExitCode::from(status)
}

/// Runs `aayu` with the given arguments, environment and streams; returns how it ended.
pub fn run(
    args: impl IntoIterator<Item = std::ffi::OsString>,
    env: Env,
    input: &mut dyn io::Read,
    out: &mut dyn Write,
    err: &mut crate::log::Log,
) -> ExitStatus {
    let color = env.color_stderr();
    match execute(args, env, input, out, err) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => render_failure(&failure, err),
        Err(e) => {
            let status = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitStatus::Ok
                }
                _ => ExitStatus::Usage,
            };
            // Help goes to stdout, usage errors to stderr, both rendered by clap.
            let rendered = if color {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let target: &mut dyn Write = if e.use_stderr() { err } else { out };
            // (stderr is a Log: inside Actions the usage error, which quotes the arguments, is fenced.)
            let _ = target.write_all(rendered.as_bytes());
            status
        }
    }
}

/// Parses `args` with the registry's clap tree and runs the command: the CLI and each tool call of `aayu
/// mcp` go through here. A parse error (`--help` included) is clap's, for the caller to render.
pub(crate) fn execute(
    args: impl IntoIterator<Item = std::ffi::OsString>,
    env: Env,
    input: &mut dyn io::Read,
    out: &mut dyn Write,
    err: &mut crate::log::Log,
) -> Result<Result<ExitStatus, Failure>, clap::Error> {
    let matches = build().try_get_matches_from(args)?;
    let Some((id, sub)) = find_command(&matches) else {
        // `aayu proof` alone: clap shows the group's help because the group requires a subcommand.
        return Ok(Ok(ExitStatus::Usage));
    };
    let global = settings::Global::from_matches(&matches);
    let github = settings::github::GitHubEnv::from_env(&env);
    let mut ctx = Context {
        input,
        out,
        err,
        env: &env,
        github: &github,
        global: &global,
    };
    Ok(dispatch(id, sub, &mut ctx))
}

/// One tool call of `aayu mcp`: a command line run in this process with nothing on stdin.
fn tool_call(
    args: Vec<std::ffi::OsString>,
    env: Env,
    out: &mut dyn Write,
    err: &mut crate::log::Log,
) -> Result<Result<ExitStatus, Failure>, clap::Error> {
    execute(args, env, &mut io::empty(), out, err)
}

/// Runs one command. Exhaustive over [`CommandId`]: a command cannot exist without its arm.
fn dispatch(id: CommandId, m: &ArgMatches, ctx: &mut Context) -> Result<ExitStatus, Failure> {
    if !id.spec().built {
        return Err(not_built(id.spec()));
    }
    match id {
        CommandId::Verify => commands::verify::run(ctx, settings::VerifyOptions::from_matches(m)?),
        CommandId::Control => {
            commands::control::run(ctx, m.get_one::<String>("op").map_or("", String::as_str))
        }
        CommandId::Action => {
            let options = settings::action::ActionOptions::resolve(m, ctx.env, ctx.github)?;
            commands::action::run(ctx, options)
        }
        CommandId::ProofVerify => {
            commands::proof_verify::run(ctx, settings::options::ProofVerifyOptions::from_matches(m))
        }
        CommandId::Ship => {
            commands::ship::run(ctx, settings::options::ShipOptions::from_matches(m))
        }
        CommandId::ProofPush => {
            commands::proof_push::run(ctx, settings::options::ProofPushOptions::from_matches(m))
        }
        CommandId::ProofComment => {
            let options = settings::ProofCommentOptions::from_matches(m, ctx.env);
            commands::proof_comment::run(ctx, options)
        }
        CommandId::Ready => {
            commands::ready::run(ctx, settings::options::ReadyOptions::from_matches(m))
        }
        CommandId::Generate => commands::generate::run(ctx, m.get_flag("check")),
        CommandId::Completions => commands::generate::completions(
            ctx,
            m.get_one::<String>("shell").map_or("", String::as_str),
        ),
        CommandId::Init => {
            commands::init::run(ctx, settings::options::InitOptions::from_matches(m))
        }
        CommandId::Install => commands::install::run(ctx),
        CommandId::Doctor => {
            commands::doctor::run(ctx, settings::options::DoctorOptions::from_matches(m))
        }
        CommandId::Clean => commands::clean::run(ctx, m.get_flag("all")),
        CommandId::Mcp => {
            let options = settings::options::McpOptions::from_matches(m);
            commands::mcp::run(ctx, options, tool_call)
        }
    }
}

fn not_built(command: &Command) -> Failure {
    Failure::usage(format!("`aayu {}` is not built yet", command.name))
        .with_hint(format!("it lands with {}", command.lands_with))
}

/// Prints a failure as `error:`, `caused by:` and `hint:` lines; a closed pipe is not an error. A message
/// may quote a pull request's text: on a [`Log`](crate::log::Log) it is fenced data in Actions.
pub(crate) fn render_failure(failure: &Failure, err: &mut dyn Write) -> ExitStatus {
    let _ = err.write_all(failure.render().as_bytes());
    failure.status
}

/// Finds which registry command the matches name, and that command's own matches.
fn find_command(matches: &ArgMatches) -> Option<(CommandId, &ArgMatches)> {
    let (first, sub) = matches.subcommand()?;
    for id in CommandId::ALL {
        let words = id.spec().words();
        match words.as_slice() {
            [only] if *only == first => return Some((id, sub)),
            [group, name] if *group == first => {
                if let Some((second, leaf)) = sub.subcommand()
                    && second == *name
                {
                    return Some((id, leaf));
                }
            }
            _ => {}
        }
    }
    None
}
