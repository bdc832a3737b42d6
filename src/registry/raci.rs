//! Beside the commands, as data: the layer table (L01–L09, one owner seat each, the path globs that place a
//! file in it — `LAYERS.md` is generated from it and the pack's footprint reads that), the agent hosts,
//! and the consulted and informed seats of each command, with the RACI lint that generation and a test run
//! first.

use super::{CommandId, Seat};

/// One layer of a product: what it holds, who owns it, which paths are in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    pub id: &'static str,
    pub name: &'static str,
    pub owner: Seat,
    pub globs: &'static [&'static str],
}

impl Layer {
    /// The layer's row of a `LAYERS.md` table (`| L02 | name | owner | `glob` `glob` |`), with `globs`:
    /// the generated file's and `aayu init`'s starter are read by the same footprint.
    pub fn row(&self, globs: &[&str]) -> String {
        let globs: Vec<String> = globs.iter().map(|g| format!("`{g}`")).collect();
        format!(
            "| {} | {} | {} | {} |",
            self.id,
            self.name,
            self.owner.id(),
            globs.join(" ")
        )
    }
}

/// The nine layers, in order.
pub const LAYERS: [Layer; 9] = [
    Layer {
        id: "L01",
        name: "Stories and specifications",
        owner: Seat::ProductOwner,
        globs: &["docs/specs/**", "stories/**", "**/*.ready.md"],
    },
    Layer {
        id: "L02",
        name: "User-facing surfaces (CLI, UI, routes)",
        owner: Seat::AiNativeEngineer,
        globs: &["src/cli/**", "src/main.rs", "ui/**", "web/**", "cmd/**"],
    },
    Layer {
        id: "L03",
        name: "Domain logic",
        owner: Seat::AiNativeEngineer,
        globs: &["src/**", "internal/**", "lib/**", "pkg/**"],
    },
    Layer {
        id: "L04",
        name: "Data and storage",
        owner: Seat::AiNativeEngineer,
        globs: &["migrations/**", "**/schema.sql", "**/*.sql", "db/**"],
    },
    Layer {
        id: "L05",
        name: "Tests and evidence maps",
        owner: Seat::QualityArchitect,
        globs: &[
            "tests/**",
            "**/*_test.go",
            "**/testdata/**",
            ".aayudha/evidence/**",
        ],
    },
    Layer {
        id: "L06",
        name: "Feature maps and behaviour checks",
        owner: Seat::QualityArchitect,
        globs: &[".agents/skills/**"],
    },
    Layer {
        id: "L07",
        name: "Gates and configuration",
        owner: Seat::QualityArchitect,
        globs: &[".aayudha/config.toml", "LAYERS.md"],
    },
    Layer {
        id: "L08",
        name: "CI, workflows and release",
        owner: Seat::PlatformEngineer,
        globs: &[".github/**", "Dockerfile", "action.yml", ".ci/**"],
    },
    Layer {
        id: "L09",
        name: "Dependencies and toolchain",
        owner: Seat::PlatformEngineer,
        globs: &[
            "Cargo.toml",
            "Cargo.lock",
            "go.mod",
            "go.sum",
            "package.json",
            "package-lock.json",
            "rust-toolchain.toml",
        ],
    },
];

/// An agent host that loads aayu's skills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    pub id: &'static str,
    pub name: &'static str,
    /// Where the host reads skills from, relative to the repository.
    pub skills_dir: &'static str,
}

pub const HOSTS: [Host; 4] = [
    Host {
        id: "amp",
        name: "Amp",
        skills_dir: ".agents/skills",
    },
    Host {
        id: "cursor",
        name: "Cursor",
        skills_dir: ".cursor/skills",
    },
    Host {
        id: "claude-code",
        name: "Claude Code",
        skills_dir: ".claude/skills",
    },
    Host {
        id: "codex",
        name: "OpenAI Codex",
        skills_dir: ".agents/skills",
    },
];

/// The consulted and informed seats of a command (its accountable seat is in its [`super::Command`]).
pub fn raci(id: CommandId) -> (&'static [Seat], &'static [Seat]) {
    use Seat::*;
    match id {
        CommandId::Init => (&[QualityArchitect], &[EngineeringManager]),
        CommandId::Install => (&[], &[AiNativeEngineer]),
        CommandId::Doctor => (&[], &[AiNativeEngineer]),
        CommandId::Clean => (&[], &[]),
        CommandId::Ready => (&[QualityArchitect], &[EngineeringManager, AiNativeEngineer]),
        CommandId::Verify => (&[QualityArchitect], &[ProductOwner]),
        CommandId::Ship => (&[QualityArchitect, ProductOwner], &[AiNativeEngineer]),
        CommandId::ProofVerify => (&[AiNativeEngineer], &[EngineeringManager]),
        CommandId::ProofPush => (&[QualityArchitect], &[ProductOwner]),
        CommandId::ProofComment => (&[PlatformEngineer], &[AiNativeEngineer, ProductOwner]),
        CommandId::Action => (&[QualityArchitect], &[EngineeringManager]),
        CommandId::Control => (&[AiNativeEngineer], &[]),
        CommandId::Generate => (&[QualityArchitect], &[AiNativeEngineer]),
        CommandId::Completions => (&[], &[]),
        CommandId::Mcp => (&[QualityArchitect], &[AiNativeEngineer]),
    }
}

/// The RACI lint: one known accountable seat per command; consulted and informed seats known, each listed
/// once, none of them the accountable seat, none both consulted and informed. Answers every problem found.
pub fn raci_lint(commands: &[&super::Command]) -> Vec<String> {
    let mut problems = Vec::new();
    for c in commands {
        let (consulted, informed) = raci(c.id);
        if !Seat::ALL.contains(&c.seat) {
            problems.push(format!(
                "{}: the accountable seat is not a known seat",
                c.name
            ));
        }
        for (role, seats) in [("consulted", consulted), ("informed", informed)] {
            for (i, seat) in seats.iter().enumerate() {
                if !Seat::ALL.contains(seat) {
                    problems.push(format!("{}: a {role} seat is not a known seat", c.name));
                }
                if seats[..i].contains(seat) {
                    problems.push(format!("{}: {} is {role} twice", c.name, seat.id()));
                }
                if *seat == c.seat {
                    problems.push(format!(
                        "{}: {} is both accountable and {role}",
                        c.name,
                        seat.id()
                    ));
                }
            }
        }
        for seat in consulted.iter().filter(|s| informed.contains(s)) {
            problems.push(format!(
                "{}: {} is both consulted and informed",
                c.name,
                seat.id()
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_passes_the_raci_lint() {
        let all: Vec<_> = CommandId::ALL.iter().map(|id| id.spec()).collect();
        assert_eq!(raci_lint(&all), Vec::<String>::new());
    }

    #[test]
    fn the_lint_catches_an_accountable_seat_also_consulted() {
        let mut ship = CommandId::Ship.spec().clone();
        ship.seat = Seat::QualityArchitect;
        assert_eq!(
            raci_lint(&[&ship]),
            ["ship: quality-architect is both accountable and consulted"]
        );
    }

    #[test]
    fn every_layer_has_an_id_in_order_and_globs_that_compile() {
        for (i, layer) in LAYERS.iter().enumerate() {
            assert_eq!(layer.id, format!("L0{}", i + 1));
            assert!(!layer.globs.is_empty());
            for glob in layer.globs {
                globset::Glob::new(glob).expect("a glob");
            }
        }
    }
}
