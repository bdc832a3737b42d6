//! The command table itself: one entry per [`CommandId`].

use super::{
    Command, CommandId, Exposure, Gate, Hints, Identity, Input, InputType, Lane, Layers, Mode,
    Seat, Stage, Surface,
};
use crate::exit::ExitStatus;

const fn flag(name: &'static str, ty: InputType, help: &'static str) -> Input {
    Input {
        name,
        ty,
        positional: false,
        short: None,
        required: false,
        human_only: false,
        exposure: Exposure::Read,
        help,
        value_name: None,
    }
}

const fn valued(
    name: &'static str,
    ty: InputType,
    value_name: &'static str,
    help: &'static str,
) -> Input {
    Input {
        value_name: Some(value_name),
        ..flag(name, ty, help)
    }
}

const fn pos(name: &'static str, ty: InputType, help: &'static str) -> Input {
    Input {
        positional: true,
        required: true,
        ..flag(name, ty, help)
    }
}

const fn human_only(input: Input) -> Input {
    Input {
        human_only: true,
        ..input
    }
}

/// An input that writes (to GitHub, or the repository): served over MCP only with `--allow-write`.
const fn writes(input: Input) -> Input {
    Input {
        exposure: Exposure::Write,
        ..input
    }
}

/// An input an agent never passes over MCP (the gate's `--ci`; `--json`, which MCP always passes).
const fn not_over_mcp(input: Input) -> Input {
    Input {
        exposure: Exposure::Never,
        ..input
    }
}

const JSON: Input = not_over_mcp(flag(
    "json",
    InputType::Bool,
    "Print one JSON object (schema_version 1) instead of the readable report.",
));

const CLI_SKILL: &[Surface] = &[Surface::Cli, Surface::Skill];
const CLI_ONLY: &[Surface] = &[Surface::Cli];
const CLI_MCP: &[Surface] = &[Surface::Cli, Surface::Mcp];
const EXITS_VERIFY: &[ExitStatus] = &[
    ExitStatus::Ok,
    ExitStatus::Failure,
    ExitStatus::Usage,
    ExitStatus::FloorFails,
];
const EXITS_PROOF: &[ExitStatus] = &[
    ExitStatus::Ok,
    ExitStatus::Failure,
    ExitStatus::Usage,
    ExitStatus::ProofFails,
];
/// A command that changes nothing without its `write` inputs, and asks GitHub when it has a token.
const READS_GITHUB: Hints = Hints {
    read_only_without_writes: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};
const EXITS_PLAIN: &[ExitStatus] = &[ExitStatus::Ok, ExitStatus::Failure, ExitStatus::Usage];
const EXITS_ALL: &[ExitStatus] = &ExitStatus::ALL;

static VERIFY: Command = Command {
    id: CommandId::Verify,
    name: "verify",
    summary: "Check each product's feature map against the source (--map), run the selected behaviour checks, or run every floor and write the proof pack (--ci).",
    reader: "Checks that what the map says the product does matches the code, and that the product really does it.",
    stage: Stage::Verify,
    seat: Seat::AiNativeEngineer,
    owns: Some(Seat::QualityArchitect),
    inputs: &[
        flag(
            "map",
            InputType::Bool,
            "Check the feature maps against the source only: drift and stale features; no product code runs.",
        ),
        JSON,
        valued(
            "check",
            InputType::String,
            "FEATURE[.CHECK]|all",
            "Run these behaviour checks instead of selecting them from a diff.",
        ),
        valued(
            "base",
            InputType::String,
            "REV",
            "The base commit of the change; checks are selected from the diff base..head.",
        ),
        valued(
            "head",
            InputType::String,
            "REV",
            "The head commit of the change.",
        ),
        valued(
            "story",
            InputType::Issue,
            "N",
            "The story (issue number) whose evidence map names tests and checks.",
        ),
        flag(
            "select",
            InputType::Bool,
            "With --base and --head (and --story): print what the gate would run on the change — the checks, the mapped tests, the packages — without running anything.",
        ),
        // The gate's: it writes the pack the merge gate would, which an agent has no business forging.
        not_over_mcp(flag(
            "ci",
            InputType::Bool,
            "Run the full floor set and write the proof pack, as the merge gate does.",
        )),
        flag(
            "red-on-base",
            InputType::Bool,
            "Run the red-on-base check even when the story is not labelled type:bug.",
        ),
        valued(
            "out",
            InputType::Path,
            "DIR",
            "Write the run folder here instead of .aayudha/runs/<UTC timestamp>/.",
        ),
        valued(
            "config",
            InputType::Path,
            "FILE",
            "Read the configuration from FILE instead of .aayudha/config.toml.",
        ),
        valued(
            "ready",
            InputType::Path,
            "FILE",
            "Read the story's Ready snapshot from FILE instead of the ledger branch.",
        ),
        valued(
            "jobs",
            InputType::Int,
            "N",
            "Run at most N checks at once (default: the number of cores).",
        ),
        // Posts to GitHub: offered over MCP only with `aayu mcp --allow-write --github`.
        writes(valued(
            "maintain",
            InputType::Enum(&["drift", "always"]),
            "MODE",
            "With --map or --check: post the maintain brief on the tracking issue — drift: only when something drifted, failed or was blocked and the last brief differs; always: every time.",
        )),
    ],
    outputs: &[
        "report",
        "reports/feature-map.json",
        "reports/behaviour.json",
        "pack.json",
    ],
    exits: EXITS_VERIFY,
    gates: &[],
    identity: Identity::Bot,
    mode: Mode::None,
    exposure: Exposure::Read,
    read_only: false,
    hints: Hints {
        // A run folder under .aayudha/runs/ is added, nothing else is changed.
        read_only_without_writes: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    },
    lane: Some(Lane::Review),
    layers: Layers::All,
    mode_note: "",
    paths: &[],
    surfaces: &[Surface::Cli, Surface::Skill, Surface::Mcp, Surface::Action],
    built: true,
    lands_with: "",
};

static READY: Command = Command {
    id: CommandId::Ready,
    name: "ready",
    summary: "Freeze a story's numbered Completion Goal into its Ready snapshot on the ledger branch (specs/<story>/ready.md) with its SHA-256: from the GitHub issue, or offline from a local Markdown file (--file).",
    reader: "Freezes what \"done\" means for a story, so nobody can quietly change it later.",
    stage: Stage::Define,
    seat: Seat::ProductOwner,
    owns: None,
    inputs: &[
        pos(
            "story",
            InputType::Issue,
            "The story: a GitHub issue with a numbered ## Completion Goal (or its number, with --file).",
        ),
        valued(
            "file",
            InputType::Path,
            "STORY.md",
            "Freeze the story from this Markdown file of the repository instead of the issue, without the network: its ## Completion Goal, its first # heading as the title, a `Labels:` line.",
        ),
        valued(
            "label",
            InputType::Strings,
            "LABEL",
            "With --file: a label of the story (type:bug, map:reshape); repeatable, added to the file's `Labels:` line.",
        ),
        flag(
            "print",
            InputType::Bool,
            "With --file: print the snapshot (for `verify --ci --ready`) instead of writing it on the ledger branch.",
        ),
        human_only(flag(
            "refreeze",
            InputType::Bool,
            "Replace an existing Ready snapshot (recorded in the snapshot).",
        )),
        valued(
            "repo",
            InputType::String,
            "OWNER/NAME",
            "The GitHub repository (default: GH_REPO, GITHUB_REPOSITORY, then the origin remote).",
        ),
    ],
    outputs: &["specs/<story>/ready.md"],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Write,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Spec),
    layers: Layers::Only(&["L01"]),
    mode_note: "",
    paths: &[],
    surfaces: CLI_SKILL,
    built: true,
    lands_with: "",
};

static SHIP: Command = Command {
    id: CommandId::Ship,
    name: "ship",
    summary: "Squash-merge a PR once its merge gate proved the exact head (and signed it, per [proof] attestation) and a human approved; land the gate's pack on the ledger; write Complete.",
    reader: "Merges a proven pull request after your yes, and writes down who approved what, on which evidence.",
    stage: Stage::Ship,
    seat: Seat::EngineeringManager,
    owns: None,
    inputs: &[
        pos("pr", InputType::Pr, "The pull request to ship."),
        human_only(flag(
            "solo-bypass",
            InputType::Bool,
            "Solo mode only: merge without a second person's approval, recorded in the ship record.",
        )),
        flag(
            "dry-run",
            InputType::Bool,
            "Show which run qualifies and what would be landed, merged and written; write nothing.",
        ),
        valued(
            "repo",
            InputType::String,
            "OWNER/NAME",
            "The GitHub repository (default: GH_REPO, GITHUB_REPOSITORY, then the origin remote).",
        ),
    ],
    outputs: &["merge-commit", "ship/<story>.json", "complete-section"],
    exits: EXITS_PROOF,
    gates: &[Gate::MergeGate, Gate::HumanPass],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Chore),
    layers: Layers::All,
    mode_note: "",
    paths: &[],
    surfaces: CLI_SKILL,
    built: true,
    lands_with: "",
};

static INIT: Command = Command {
    id: CommandId::Init,
    name: "init",
    summary: "Set up aayudha in a repository: .aayudha/config.toml, the merge-gate and nightly workflows, and with --verify-skill a starter verify skill.",
    reader: "Sets up a repository for aayudha, with a starter feature map and the merge gate workflow.",
    stage: Stage::Setup,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[
        flag(
            "yes",
            InputType::Bool,
            "Ask nothing: take the defaults (without a terminal this is always so).",
        ),
        flag(
            "dry-run",
            InputType::Bool,
            "Print what would be written, and write nothing.",
        ),
        flag(
            "force",
            InputType::Bool,
            "Replace files that exist (listing each one replaced); without it they are kept.",
        ),
        flag(
            "verify-skill",
            InputType::Bool,
            "Also write a starter verify skill for the stack found at --root (Cargo.toml, go.mod, package.json).",
        ),
        valued(
            "product",
            InputType::String,
            "NAME",
            "The skill's product (default: the --root folder's name).",
        ),
        valued(
            "root",
            InputType::Path,
            "DIR",
            "The product's folder in the repository (default: the repository root).",
        ),
        valued(
            "stack",
            InputType::Enum(&["rust", "go", "python", "node", "none"]),
            "STACK",
            "The stack, when several are found (or none): rust, go, python and node use the built-in step runner, none a stub that blocks every check.",
        ),
        valued(
            "maintainer",
            InputType::Enum(&["amp", "cursor", "claude-code", "codex"]),
            "ID",
            "The agent app that maintains the map, written to `[verify] maintainer` (otherwise asked among those detected).",
        ),
        valued(
            "shards",
            InputType::Int,
            "N",
            "Split the merge gate over N matrix legs (1 to 64): 2 or more writes the sharded gate (jobs plan, shard, merge and pack, with `shards: N`), 1 the single-job gate (the default).",
        ),
        flag(
            "attest",
            InputType::Bool,
            "Write the merge gate's signing job (aayudha/attest) whatever the repository; without it the job is written only when GitHub says the repository is public on github.com.",
        ),
        flag(
            "no-attest",
            InputType::Bool,
            "Leave the merge gate's signing job out, and say nothing.",
        ),
    ],
    outputs: &[
        ".aayudha/config.toml",
        ".github/workflows/aayudha-merge-gate.yml",
        ".github/workflows/aayudha-nightly.yml",
        ".gitignore",
    ],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Chore),
    layers: Layers::Only(&["L06", "L07", "L08"]),
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static INSTALL: Command = Command {
    id: CommandId::Install,
    name: "install",
    summary: "Make the verify skills visible to Claude Code (a pointer per root skill) and Cursor (one rule), register `aayu mcp` read-only in .mcp.json and .cursor/mcp.json, and print the Codex and Amp entries.",
    reader: "Makes the aayudha skills, and aayu's read-only tools, visible to the coding agents you use.",
    stage: Stage::Setup,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[],
    outputs: &[
        ".claude/commands/aayudha/verify-<product>.md",
        ".cursor/rules/aayudha-verify.mdc",
        ".mcp.json",
        ".cursor/mcp.json",
        "stdout: the Codex and Amp entries",
    ],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Chore),
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static MCP: Command = Command {
    id: CommandId::Mcp,
    name: "mcp",
    summary: "Serve the MCP-surface commands (verify, proof verify, doctor) to a coding agent over stdio (MCP): read-only by default, without GitHub tokens unless --github.",
    reader: "Lets a coding agent ask aayu what its change would run, and run the read-only checks itself.",
    stage: Stage::Setup,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[
        human_only(flag(
            "allow-write",
            InputType::Bool,
            "Also serve the inputs that write (verify --maintain posts to GitHub, doctor --fix); off by default.",
        )),
        human_only(flag(
            "github",
            InputType::Bool,
            "Keep GitHub reachable: read GITHUB_TOKEN, then GH_TOKEN (never `gh auth token`); without it the tokens are removed at start.",
        )),
    ],
    outputs: &["stdout: MCP (JSON-RPC)"],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Chore),
    layers: Layers::None,
    mode_note: "the agent host reasons; aayu serves it data",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static DOCTOR: Command = Command {
    id: CommandId::Doctor,
    name: "doctor",
    summary: "Diagnose the setup (config, workflows, required status, ledger, clone depth, maps, pointers, MCP servers, toolchains, .gitignore, token): each problem with its fix; --fix repairs what it safely can.",
    reader: "Tells you what is missing or out of date in your setup, and how to fix it.",
    stage: Stage::Setup,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[
        writes(flag(
            "fix",
            InputType::Bool,
            "Fix what can be fixed safely (.gitignore entries, pointer descriptions, an outdated `aayu mcp` registration, a missing ledger branch, created locally); report the rest.",
        )),
        JSON,
    ],
    outputs: &[
        "report",
        ".gitignore",
        ".claude/commands/aayudha/",
        ".mcp.json",
        ".cursor/mcp.json",
        "refs/heads/<ledger>",
    ],
    exits: &[ExitStatus::Ok, ExitStatus::Usage, ExitStatus::FloorFails],
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Read,
    read_only: false,
    // It asks GitHub about the token and the required status when it has a token.
    hints: READS_GITHUB,
    lane: Some(Lane::Chore),
    layers: Layers::Only(&["L07", "L08", "L09"]),
    mode_note: "",
    paths: &[],
    surfaces: CLI_MCP,
    built: true,
    lands_with: "",
};

static CLEAN: Command = Command {
    id: CommandId::Clean,
    name: "clean",
    summary: "Remove the build folders local `verify --check` runs keep between runs (this repository's; --all: every repository's); the gate never keeps any.",
    reader: "Frees the disk space aayu's local builds keep, so the next check builds from scratch.",
    stage: Stage::Setup,
    seat: Seat::AiNativeEngineer,
    owns: None,
    inputs: &[flag(
        "all",
        InputType::Bool,
        "Remove the kept build folders of every repository, not only this one's.",
    )],
    outputs: &["report"],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: Some(Lane::Chore),
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static PROOF_VERIFY: Command = Command {
    id: CommandId::ProofVerify,
    name: "proof verify",
    summary: "Verify a story's best pack on the ledger: artifact hashes and sizes, evidence for every Ready criterion, the Completion Goal hash, the PR head, a shipped pack's gate copy and signature.",
    reader: "Checks that a story's evidence is intact and really covers what was promised.",
    stage: Stage::Plumbing,
    seat: Seat::QualityArchitect,
    owns: None,
    inputs: &[
        pos("story", InputType::Issue, "The story whose pack to verify."),
        JSON,
        valued(
            "repo",
            InputType::String,
            "OWNER/NAME",
            "The GitHub repository (default: GH_REPO, GITHUB_REPOSITORY, then the origin remote).",
        ),
    ],
    outputs: &["report"],
    exits: EXITS_PROOF,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Read,
    read_only: true,
    // It fetches the ledger branch and reads the pull request's head from GitHub.
    hints: READS_GITHUB,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_MCP,
    built: true,
    lands_with: "",
};

static PROOF_PUSH: Command = Command {
    id: CommandId::ProofPush,
    name: "proof push",
    summary: "Land the local pack of a story on the ledger as advisory (data artifacts; media to the bucket with --media) and leave an advisory comment; never from CI.",
    reader: "Shares your local evidence as advisory, clearly apart from the merge gate's own.",
    stage: Stage::Plumbing,
    seat: Seat::AiNativeEngineer,
    owns: None,
    inputs: &[
        pos(
            "story",
            InputType::Issue,
            "The story whose local pack to land.",
        ),
        valued(
            "repo",
            InputType::String,
            "OWNER/NAME",
            "The GitHub repository (default: GH_REPO, GITHUB_REPOSITORY, then the origin remote).",
        ),
        flag(
            "media",
            InputType::Bool,
            "Also upload the pack's media to the bucket of `[proof] media` (refused without one).",
        ),
    ],
    outputs: &["proof/<story>/<head>/advisory/"],
    exits: EXITS_PROOF,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static PROOF_COMMENT: Command = Command {
    id: CommandId::ProofComment,
    name: "proof comment",
    summary: "Verify this run's aayudha-pack artifact, keep one sticky comment on the pull request and set the aayudha/proof status on its head.",
    reader: "Posts the gate's verdict on the pull request, in one comment that stays up to date.",
    stage: Stage::Plumbing,
    seat: Seat::QualityArchitect,
    owns: None,
    inputs: &[
        valued(
            "pr",
            InputType::Pr,
            "N",
            "The pull request (default: the event's).",
        ),
        valued(
            "pack",
            InputType::Path,
            "DIR",
            "Verify this pack folder instead of downloading this run's aayudha-pack artifact.",
        ),
        valued(
            "bot-login",
            InputType::String,
            "LOGIN",
            "The login the token comments as, when GET /user cannot tell.",
        ),
    ],
    outputs: &["pr-comment", "status:aayudha/proof"],
    exits: EXITS_ALL,
    gates: &[],
    identity: Identity::Bot,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: &[Surface::Cli, Surface::Action],
    built: true,
    lands_with: "",
};

static ACTION: Command = Command {
    id: CommandId::Action,
    name: "action",
    summary: "The Docker action's entrypoint: read the event and INPUT_* variables, then run the merge gate, the comment job or the nightly sweep.",
    reader: "What runs inside GitHub Actions; you never call it by hand.",
    stage: Stage::Plumbing,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[
        valued(
            "mode",
            InputType::Enum(&[
                "gate", "comment", "sweep", "maintain", "plan", "shard", "merge",
            ]),
            "MODE",
            "What to run: gate (the merge-gate job), comment (the pack job), sweep (nightly) or maintain (the weekly maintain brief, a record); a sharded gate runs plan, shard (one matrix leg) and merge instead of gate; by default from the event: pull_request_target and pull_request run the gate, schedule and workflow_dispatch the sweep.",
        ),
        valued(
            "token",
            InputType::String,
            "TOKEN",
            "The GitHub token for the API, the pull request's head and the comment (default: the workflow's token); the gate needs read access only.",
        ),
        valued(
            "story",
            InputType::Issue,
            "N",
            "The story (issue number) when the pull request body names none (a `Story: #N` line, or a closing keyword such as `Fixes #N`).",
        ),
        valued(
            "config",
            InputType::Path,
            "FILE",
            "A configuration file in the default branch to read instead of .aayudha/config.toml (the gate never reads the pull request's copy).",
        ),
        valued(
            "working-directory",
            InputType::Path,
            "DIR",
            "The repository's folder inside the workspace (empty: the workspace itself).",
        ),
        valued(
            "retention-days",
            InputType::Int,
            "DAYS",
            "How many days the aayudha-pack artifact is kept (default `[proof] retention_days`, capped by the repository's own setting).",
        ),
        valued(
            "bot-login",
            InputType::String,
            "LOGIN",
            "The login the token comments as, when it is not the token's user or github-actions[bot].",
        ),
        valued(
            "gate-result",
            InputType::Enum(&["success", "failure", "cancelled", "skipped"]),
            "RESULT",
            "comment mode: the merge-gate job's result (`${{ needs.merge-gate.result }}`), so that the `aayudha/proof` status says why when the gate made no pack.",
        ),
        valued(
            "gate-reason",
            InputType::String,
            "LINE",
            "comment mode of a sharded gate: the merge job's `reason` output, said in the `aayudha/proof` status when the gate is blocked.",
        ),
        valued(
            "shards",
            InputType::Int,
            "N",
            "plan mode: how many matrix legs to split the gate over (1 to 64, default 1); shard mode: the matrix entry's `of`.",
        ),
        valued(
            "shard",
            InputType::Int,
            "I",
            "shard mode: which leg this is (the matrix entry's `shard`, 1 to `shards`).",
        ),
        valued(
            "plan-digest",
            InputType::String,
            "SHA256",
            "shard mode: the plan job's `plan_digest` output; the leg refuses a plan artifact with another digest.",
        ),
    ],
    outputs: &[
        "result",
        "pack-sha256",
        "story",
        "drift",
        "matrix",
        "plan_digest",
        "reason",
    ],
    exits: EXITS_ALL,
    gates: &[],
    identity: Identity::Bot,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: &[Surface::Action],
    built: true,
    lands_with: "",
};

static CONTROL: Command = Command {
    id: CommandId::Control,
    name: "control",
    summary: "The built-in control tool: run one behaviour check's steps (build, run, request, expect) from a JSON request on stdin and print one JSON result.",
    reader: "Runs a behaviour check for products that have no control tool of their own.",
    stage: Stage::Plumbing,
    seat: Seat::QualityArchitect,
    owns: None,
    inputs: &[pos(
        "op",
        InputType::Enum(&["check"]),
        "The operation; only `check` exists.",
    )],
    outputs: &["result-json", "api-trace"],
    exits: EXITS_VERIFY,
    gates: &[],
    identity: Identity::Bot,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static GENERATE: Command = Command {
    id: CommandId::Generate,
    name: "generate",
    summary: "Regenerate every file derived from the registry (docs tables, skill frontmatter, MCP schemas, action.yml inputs), writing only what changed.",
    reader: "Keeps the docs and skills in step with the commands, for people working on aayudha itself.",
    stage: Stage::Plumbing,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[flag(
        "check",
        InputType::Bool,
        "Write nothing; exit 3 when a generated file is out of date.",
    )],
    outputs: &[
        "docs/README.md",
        "docs/configuration.md",
        "docs/aayu.1",
        "LAYERS.md",
        "skills/*/SKILL.md",
        "schemas/mcp/*.json",
        "action.yml",
    ],
    exits: EXITS_VERIFY,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: false,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

static COMPLETIONS: Command = Command {
    id: CommandId::Completions,
    name: "completions",
    summary: "Print the shell completion script for bash, zsh, fish, elvish or powershell, rendered from the registry.",
    reader: "Lets your shell complete aayu's commands and flags.",
    stage: Stage::Plumbing,
    seat: Seat::PlatformEngineer,
    owns: None,
    inputs: &[pos(
        "shell",
        InputType::Enum(&["bash", "zsh", "fish", "elvish", "powershell"]),
        "The shell.",
    )],
    outputs: &["completion-script"],
    exits: EXITS_PLAIN,
    gates: &[],
    identity: Identity::Human,
    mode: Mode::None,
    exposure: Exposure::Never,
    read_only: true,
    hints: Hints::NONE,
    lane: None,
    layers: Layers::None,
    mode_note: "",
    paths: &[],
    surfaces: CLI_ONLY,
    built: true,
    lands_with: "",
};

/// The data of one command. Exhaustive on purpose: a new [`CommandId`] does not compile without its entry.
pub fn command(id: CommandId) -> &'static Command {
    match id {
        CommandId::Verify => &VERIFY,
        CommandId::Ready => &READY,
        CommandId::Ship => &SHIP,
        CommandId::Init => &INIT,
        CommandId::Install => &INSTALL,
        CommandId::Mcp => &MCP,
        CommandId::Doctor => &DOCTOR,
        CommandId::Clean => &CLEAN,
        CommandId::ProofVerify => &PROOF_VERIFY,
        CommandId::ProofPush => &PROOF_PUSH,
        CommandId::ProofComment => &PROOF_COMMENT,
        CommandId::Action => &ACTION,
        CommandId::Control => &CONTROL,
        CommandId::Generate => &GENERATE,
        CommandId::Completions => &COMPLETIONS,
    }
}
