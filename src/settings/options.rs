//! What each command was asked to do, from clap's matches: plain structs the commands take.

/// What `aayu doctor` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct DoctorOptions {
    pub fix: bool,
    pub json: bool,
}

impl DoctorOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> DoctorOptions {
        DoctorOptions {
            fix: m.get_flag("fix"),
            json: m.get_flag("json"),
        }
    }
}

/// What `aayu init` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub yes: bool,
    pub dry_run: bool,
    pub force: bool,
    pub verify_skill: bool,
    pub product: Option<String>,
    pub root: Option<std::path::PathBuf>,
    pub stack: Option<String>,
    pub maintainer: Option<String>,
    /// `--shards N`: the merge gate's number of matrix legs (checked by init: 1 to 64).
    pub shards: Option<u64>,
    /// `--attest`: write the gate's signing job whatever the repository.
    pub attest: bool,
    /// `--no-attest`: leave the signing job out, saying nothing.
    pub no_attest: bool,
}

impl InitOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> InitOptions {
        InitOptions {
            yes: m.get_flag("yes"),
            dry_run: m.get_flag("dry-run"),
            force: m.get_flag("force"),
            verify_skill: m.get_flag("verify-skill"),
            product: m.get_one::<String>("product").cloned(),
            root: m.get_one::<std::path::PathBuf>("root").cloned(),
            stack: m.get_one::<String>("stack").cloned(),
            maintainer: m.get_one::<String>("maintainer").cloned(),
            shards: m.get_one::<u64>("shards").copied(),
            attest: m.get_flag("attest"),
            no_attest: m.get_flag("no-attest"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ProofPushOptions {
    pub story: u64,
    pub repo: Option<String>,
    /// `--media`: upload the pack's media to the bucket of `[proof] media`.
    pub media: bool,
}

impl ProofPushOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> ProofPushOptions {
        ProofPushOptions {
            story: m.get_one::<u64>("story").copied().unwrap_or(0),
            repo: m.get_one::<String>("repo").cloned(),
            media: m.get_flag("media"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ProofVerifyOptions {
    pub story: u64,
    pub json: bool,
    pub repo: Option<String>,
}

impl ProofVerifyOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> ProofVerifyOptions {
        ProofVerifyOptions {
            story: m.get_one::<u64>("story").copied().unwrap_or(0),
            json: m.get_flag("json"),
            repo: m.get_one::<String>("repo").cloned(),
        }
    }
}

/// What `aayu ready` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ReadyOptions {
    pub story: u64,
    pub refreeze: bool,
    pub repo: Option<String>,
    /// `--file`: the story from a Markdown file of the repository, not the issue.
    pub file: Option<std::path::PathBuf>,
    pub labels: Vec<String>,
    pub print: bool,
}

impl ReadyOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> ReadyOptions {
        ReadyOptions {
            story: m.get_one::<u64>("story").copied().unwrap_or(0),
            refreeze: m.get_flag("refreeze"),
            repo: m.get_one::<String>("repo").cloned(),
            file: m.get_one::<std::path::PathBuf>("file").cloned(),
            labels: m
                .get_many::<String>("label")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
            print: m.get_flag("print"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ShipOptions {
    pub pr: u64,
    pub solo_bypass: bool,
    pub dry_run: bool,
    pub repo: Option<String>,
}

impl ShipOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> ShipOptions {
        ShipOptions {
            pr: m.get_one::<u64>("pr").copied().unwrap_or(0),
            solo_bypass: m.get_flag("solo-bypass"),
            dry_run: m.get_flag("dry-run"),
            repo: m.get_one::<String>("repo").cloned(),
        }
    }
}

/// `aayu mcp`'s flags (its root is the global `-C`).
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// `--allow-write`: also serve the `write` inputs.
    pub allow_write: bool,
    /// `--github`: keep `GITHUB_TOKEN`/`GH_TOKEN` (never `gh`).
    pub github: bool,
}

impl McpOptions {
    pub fn from_matches(m: &clap::ArgMatches) -> McpOptions {
        McpOptions {
            allow_write: m.get_flag("allow-write"),
            github: m.get_flag("github"),
        }
    }
}
