//! The clap command tree, rendered from the registry at start-up: the CLI parses with it, `aayu action`
//! parses each action input with it, and `aayu generate` renders completions and the man page from it.

use clap::{Arg, ArgAction, value_parser};

use crate::registry::{Command, CommandId, InputType, Stage};

/// Builds the whole clap command tree from the registry.
pub fn build() -> clap::Command {
    let mut root = clap::Command::new("aayu")
        .version(env!("CARGO_PKG_VERSION"))
        .about("aayudha verify: turns \"done\" into a checkable claim.")
        .long_about(
            "aayudha verify: turns \"done\" into a checkable claim.\n\n\
             It checks each product's feature map against the source, drives the product through behaviour \
             checks, proves that a bug fix's tests fail on the base commit, and packs all of it into a hashed \
             proof pack.",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .help_template(HELP_TEMPLATE)
        .after_help(commands_help())
        .disable_help_subcommand(true)
        .arg(
            Arg::new("directory")
                .short('C')
                .value_name("DIR")
                .value_parser(value_parser!(std::path::PathBuf))
                .global(true)
                .help("Run as if aayu was started in DIR (like git -C)."),
        );

    let mut groups: Vec<(&'static str, clap::Command)> = Vec::new();
    for id in CommandId::ALL {
        let spec = id.spec();
        let words = spec.words();
        let leaf = leaf_command(spec, words[words.len() - 1]);
        match words.as_slice() {
            [_] => root = root.subcommand(leaf),
            [group, _] => match groups.iter_mut().find(|(name, _)| name == group) {
                Some((_, cmd)) => *cmd = cmd.clone().subcommand(leaf),
                None => groups.push((
                    group,
                    clap::Command::new(*group)
                        .about(group_about(group))
                        .subcommand_required(true)
                        .arg_required_else_help(true)
                        .subcommand(leaf),
                )),
            },
            _ => {}
        }
    }
    for (_, group) in groups {
        root = root.subcommand(group);
    }
    root
}

/// The root help lists the commands itself, grouped by stage (below), instead of clap's flat list.
const HELP_TEMPLATE: &str =
    "{about-with-newline}\n{usage-heading} {usage}\n\nOptions:\n{options}{after-help}";

fn group_about(group: &str) -> String {
    let names: Vec<String> = CommandId::ALL
        .iter()
        .map(|id| id.spec())
        .filter(|c| c.words()[0] == group && c.words().len() == 2)
        .map(|c| c.words()[1].to_string())
        .collect();
    format!("Plumbing: {}", names.join(", "))
}

/// The command list of `aayu --help`: every registry command, grouped by stage, with its reader sentence.
fn commands_help() -> String {
    let width = CommandId::ALL
        .iter()
        .map(|id| id.spec().name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for stage in Stage::ALL {
        let in_stage: Vec<&Command> = CommandId::ALL
            .iter()
            .map(|id| id.spec())
            .filter(|c| c.stage == stage)
            .collect();
        if in_stage.is_empty() {
            continue;
        }
        text.push_str(&format!("\n{}:\n", stage.title()));
        for c in in_stage {
            let mark = if c.built { "" } else { " (not built yet)" };
            let sentence = format!("{}{mark}", c.reader);
            let lines = wrap(&sentence, HELP_WIDTH.saturating_sub(width + 4));
            for (i, line) in lines.iter().enumerate() {
                let name = if i == 0 { c.name } else { "" };
                text.push_str(&format!("  {name:width$}  {line}\n"));
            }
        }
    }
    text.push_str("\nRun `aayu <command> --help` for a command's inputs.\n");
    text
}

/// The width the command list is wrapped to, so that clap never re-wraps it on an 80-column terminal.
const HELP_WIDTH: usize = 80;

/// Greedy word wrap.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn leaf_command(spec: &'static Command, name: &'static str) -> clap::Command {
    let mut long = format!("{}\n\n{}", spec.reader, spec.summary);
    if !spec.built {
        long.push_str(&format!(
            "\n\nNot built yet: it lands with {}.",
            spec.lands_with
        ));
    }
    let exits: Vec<String> = spec
        .exits
        .iter()
        .map(|s| format!("  {}  {}", s.code(), s.meaning()))
        .collect();
    let mut cmd = clap::Command::new(name)
        .about(spec.reader)
        .long_about(long)
        .after_long_help(format!("Exit codes:\n{}\n", exits.join("\n")));
    for input in spec.inputs {
        let mut arg = Arg::new(input.name).help(input.help);
        if input.positional {
            arg = arg.required(input.required);
        } else {
            arg = arg.long(input.name);
            if let Some(short) = input.short {
                arg = arg.short(short);
            }
        }
        if let Some(value_name) = input.value_name {
            arg = arg.value_name(value_name);
        }
        arg = match input.ty {
            InputType::Bool => arg.action(ArgAction::SetTrue),
            InputType::String => arg.value_parser(value_parser!(String)),
            InputType::Strings => arg
                .value_parser(value_parser!(String))
                .action(ArgAction::Append),
            InputType::Path => arg.value_parser(value_parser!(std::path::PathBuf)),
            InputType::Int => arg.value_parser(value_parser!(u64)),
            InputType::Enum(values) => arg.value_parser(clap::builder::PossibleValuesParser::new(
                values.iter().copied(),
            )),
            InputType::Issue | InputType::Pr => arg.value_parser(parse_number),
        };
        cmd = cmd.arg(arg);
    }
    cmd
}

/// A value that is no issue or pull request number (clap says it after the argument's name).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an issue or pull request number (write 131 or #131)")]
struct NotANumber {
    text: String,
}

/// An issue or pull request number, written `131` or `#131`.
fn parse_number(text: &str) -> Result<u64, NotANumber> {
    let digits = text.trim().strip_prefix('#').unwrap_or(text.trim());
    match digits.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(NotANumber {
            text: text.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_number;

    #[test]
    fn numbers_take_an_optional_hash() {
        assert_eq!(parse_number("131"), Ok(131));
        assert_eq!(parse_number("#7"), Ok(7));
        assert!(parse_number("0").is_err());
        assert!(parse_number("abc").is_err());
        assert!(parse_number("-3").is_err());
    }
}
