//! Every command `aayu` has, declared once as data (SPEC §8).
//!
//! The clap front end, `--help`, and (later) the generated docs, skill frontmatter, MCP schemas and the
//! inputs of `action.yml` are all renderings of this one table. A command cannot exist without its entry:
//! [`CommandId`] is the closed list, [`command`] maps each id to its data with an exhaustive `match`, and
//! the dispatcher in `cli` matches on the same enum.

pub mod clap;
mod commands;
pub mod mcp;
mod raci;

use crate::exit::ExitStatus;

pub use commands::command;
pub use raci::{HOSTS, Host, LAYERS, Layer, raci, raci_lint};

/// The closed list of commands. Adding a variant forces an entry in [`command`] and a dispatch arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommandId {
    Verify,
    Ready,
    Ship,
    Init,
    Install,
    Doctor,
    Clean,
    ProofVerify,
    ProofPush,
    ProofComment,
    Action,
    Control,
    Generate,
    Completions,
    Mcp,
}

impl CommandId {
    /// Every command, in the order `--help` and the docs list them.
    pub const ALL: [CommandId; 15] = [
        CommandId::Init,
        CommandId::Install,
        CommandId::Mcp,
        CommandId::Doctor,
        CommandId::Clean,
        CommandId::Ready,
        CommandId::Verify,
        CommandId::Ship,
        CommandId::ProofVerify,
        CommandId::ProofPush,
        CommandId::ProofComment,
        CommandId::Action,
        CommandId::Control,
        CommandId::Generate,
        CommandId::Completions,
    ];

    /// The command's data.
    pub fn spec(self) -> &'static Command {
        command(self)
    }
}

/// One command: a verb people and agents use, or a plumbing command the action and tools use.
#[derive(Debug, Clone)]
pub struct Command {
    pub id: CommandId,
    /// The full name as typed after `aayu`; plumbing groups use a space (`proof verify`).
    pub name: &'static str,
    /// One line for agents (≤ 200 characters): the skill description and the MCP tool description.
    pub summary: &'static str,
    /// One plain sentence for people new to aayudha (< 160 characters), different from the summary.
    pub reader: &'static str,
    pub stage: Stage,
    /// The single accountable seat.
    pub seat: Seat,
    /// The seat that owns the thresholds or policy, when it is not the accountable one.
    pub owns: Option<Seat>,
    pub inputs: &'static [Input],
    pub outputs: &'static [&'static str],
    /// The exit codes this command can end with.
    pub exits: &'static [ExitStatus],
    pub gates: &'static [Gate],
    pub identity: Identity,
    pub mode: Mode,
    pub exposure: Exposure,
    /// Never writes anything.
    pub read_only: bool,
    /// What an MCP host is told of the command's effects, beyond `read_only`.
    pub hints: Hints,
    /// The kind of work, as the seeds' model lanes name it; plumbing has none.
    pub lane: Option<Lane>,
    /// The product layers the command works on (`LAYERS.md`).
    pub layers: Layers,
    /// Qualifies `mode` in the generated docs (empty: nothing to add).
    pub mode_note: &'static str,
    /// Globs that limit when a host loads the command's skill on its own (SKILL.md `paths`); empty: no
    /// restriction, and the key is left out.
    pub paths: &'static [&'static str],
    pub surfaces: &'static [Surface],
    /// Whether the command does its work in this build; an unbuilt command exits 2 and says so.
    pub built: bool,
    /// For an unbuilt command: what it waits for, said to the user.
    pub lands_with: &'static str,
}

impl Command {
    /// The words after `aayu`: `["proof", "verify"]` for a plumbing group.
    pub fn words(&self) -> Vec<&'static str> {
        self.name.split(' ').collect()
    }

    pub fn input(&self, name: &str) -> Option<&'static Input> {
        self.inputs.iter().find(|i| i.name == name)
    }
}

/// One argument or flag of a command.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: &'static str,
    pub ty: InputType,
    pub positional: bool,
    pub short: Option<char>,
    pub required: bool,
    /// Never exposed to agents over MCP: only a person may pass it.
    pub human_only: bool,
    /// What an agent may do with this input over MCP: `Read` (as its command), `Write` (listed only with
    /// `aayu mcp --allow-write`), or `Never` (not an MCP input, e.g. `--ci` or `--json`).
    pub exposure: Exposure,
    pub help: &'static str,
    /// A value name for help (`REV`, `DIR`), when the type's own is not clear enough.
    pub value_name: Option<&'static str>,
}

/// The type of an input; parsing and the generated schemas follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputType {
    String,
    /// A string given any number of times (`--label a --label b`).
    Strings,
    Path,
    Int,
    Bool,
    Enum(&'static [&'static str]),
    /// A GitHub issue number (`131` or `#131`).
    Issue,
    /// A pull request number (`42` or `#42`).
    Pr,
}

impl InputType {
    pub fn name(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Strings => "strings",
            InputType::Path => "path",
            InputType::Int => "int",
            InputType::Bool => "bool",
            InputType::Enum(_) => "enum",
            InputType::Issue => "issue",
            InputType::Pr => "pr",
        }
    }
}

/// The journey stages, in reading order; every command has exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    Setup,
    Define,
    Verify,
    Ship,
    Plumbing,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::Setup,
        Stage::Define,
        Stage::Verify,
        Stage::Ship,
        Stage::Plumbing,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Stage::Setup => "Set up",
            Stage::Define => "Define the story",
            Stage::Verify => "Verify",
            Stage::Ship => "Ship",
            Stage::Plumbing => "Plumbing (for the action and tools)",
        }
    }
}

/// The seats (roles) that can be accountable for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seat {
    AiNativeEngineer,
    QualityArchitect,
    EngineeringManager,
    ProductOwner,
    PlatformEngineer,
}

impl Seat {
    pub const ALL: [Seat; 5] = [
        Seat::AiNativeEngineer,
        Seat::QualityArchitect,
        Seat::EngineeringManager,
        Seat::ProductOwner,
        Seat::PlatformEngineer,
    ];

    /// The seat's id as it appears in generated files and the pack's `seat` field.
    pub fn id(self) -> &'static str {
        match self {
            Seat::AiNativeEngineer => "ai-native-engineer",
            Seat::QualityArchitect => "quality-architect",
            Seat::EngineeringManager => "engineering-manager",
            Seat::ProductOwner => "product-owner",
            Seat::PlatformEngineer => "platform-engineer",
        }
    }
}

/// Named preconditions a command may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    MergeGate,
    HumanPass,
}

/// The GitHub identity a command writes under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    Human,
    Bot,
}

/// Who reasons: nobody (`none`), the agent host, a direct model call, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    None,
    Host,
    Direct,
    Hybrid,
}

/// What an agent may do with the command over MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    Read,
    Write,
    Never,
}

impl Exposure {
    /// The id in generated files (`x-aayu-exposure`, the skill frontmatter).
    pub fn id(self) -> &'static str {
        match self {
            Exposure::Read => "read",
            Exposure::Write => "write",
            Exposure::Never => "never",
        }
    }
}

/// The seeds' six model lanes: which kind of work a command is. The seeds' per-host model defaults for
/// each lane are not built (docs/decisions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    Build,
    Spec,
    Plan,
    Review,
    UiReview,
    Chore,
}

impl Lane {
    pub const ALL: [Lane; 6] = [
        Lane::Build,
        Lane::Spec,
        Lane::Plan,
        Lane::Review,
        Lane::UiReview,
        Lane::Chore,
    ];

    /// The id in generated files.
    pub fn id(self) -> &'static str {
        match self {
            Lane::Build => "build",
            Lane::Spec => "spec",
            Lane::Plan => "plan",
            Lane::Review => "review",
            Lane::UiReview => "ui-review",
            Lane::Chore => "chore",
        }
    }
}

/// The layers a command works on: all, none, or only some (by id, `L01`…`L09`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layers {
    All,
    None,
    Only(&'static [&'static str]),
}

impl Layers {
    /// As the frontmatter and the docs write it: `all`, `none`, or `[L01, L07]`.
    pub fn render(self) -> String {
        match self {
            Layers::All => "all".into(),
            Layers::None => "none".into(),
            Layers::Only(ids) => format!("[{}]", ids.join(", ")),
        }
    }
}

/// The MCP tool annotations of a command (hints to the host, never a permission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// Without its `write` inputs the command writes nothing (`doctor` without `--fix`).
    pub read_only_without_writes: bool,
    /// It may delete or overwrite what it did not create.
    pub destructive: bool,
    /// Calling it again with the same inputs has no further effect.
    pub idempotent: bool,
    /// It reaches beyond the repository and this machine (GitHub) even with only its read inputs.
    pub open_world: bool,
}

impl Hints {
    /// A command that is not served over MCP: the hints are never rendered.
    pub const NONE: Hints = Hints {
        read_only_without_writes: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
}

/// Where the command is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Cli,
    Skill,
    Mcp,
    Action,
}
