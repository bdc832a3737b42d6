//! The LLVM tools the coverage floor reads Rust's profiles with: `llvm-profdata` and `llvm-cov` of the
//! LLVM major version that the toolchain's own `rustc -vV` prints. A profile is read only by tools of its
//! own LLVM (Debian's unversioned `llvm-cov` is LLVM 14 and refuses rustc 1.95's profiles), so a mismatch
//! or an absence is a reason with the one-line fix, never a number computed with the wrong tools.
//!
//! Every program here — rustc, and the tools whose versions are asked — runs as the sandbox uid, offline,
//! from a fresh folder: rustup's proxy reads the toolchain it is given, never the checkout's files.
//!
//! Where the tools are looked for, in order: `[verify] llvm_tools` (a folder of the machine's, never the
//! repository's); the toolchain's own `llvm-tools` component (`rustup component add llvm-tools`, in
//! `<sysroot>/lib/rustlib/<host>/bin`); `llvm-profdata-N` and `llvm-cov-N` on `PATH`; Debian's
//! `/usr/lib/llvm-N/bin`; and last the unversioned names on `PATH` when they are LLVM N.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{AskError, Sandbox};

/// What a lookup of the LLVM tools found, kept per toolchain for the run (an error is shared by every
/// package that asks again).
pub type Found = Result<LlvmTools, std::sync::Arc<LlvmError>>;

/// Why there are no LLVM tools to read a toolchain's profiles with, each with its fix.
#[derive(Debug, thiserror::Error)]
pub enum LlvmError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error(
        "`rustc -vV` names no LLVM version: aayu cannot tell which llvm-cov reads its profiles"
    )]
    NoLlvmVersion,
    #[error("`rustc -vV` says `LLVM version: {0}`, which aayu cannot read")]
    UnreadableVersion(String),
    #[error(
        "`[verify] llvm_tools` names `{}`, which is not a folder of the machine's: name it by an absolute path outside the repository (the repository's files are the pull request's)",
        .folder.display()
    )]
    NotTheMachines { folder: PathBuf },
    #[error(
        "`[verify] llvm_tools` names `{}`, which holds no `llvm-profdata` and `llvm-cov`: correct the setting, or {fix}",
        .folder.display()
    )]
    NoToolsThere { folder: PathBuf, fix: String },
    #[error(
        "{described}, and `[verify] llvm_tools` names `{}`: {others} — a profile is read only by the tools of its own LLVM: point it at LLVM {want}'s tools, or leave it empty to use the installed ones ({fix})",
        .folder.display()
    )]
    WrongThere {
        described: String,
        folder: PathBuf,
        others: String,
        want: u32,
        fix: String,
    },
    #[error("{described}, and no llvm-profdata and llvm-cov of LLVM {want} are installed: {fix}")]
    NoneInstalled {
        described: String,
        want: u32,
        fix: String,
    },
    #[error(
        "{described}, and {others}: a profile is read only by the tools of its own LLVM, and no pair of LLVM {want} is installed: {fix}"
    )]
    OthersInstalled {
        described: String,
        others: String,
        want: u32,
        fix: String,
    },
}

/// How long a version question may take.
const ASK: Duration = Duration::from_secs(60);

/// The tools found for one toolchain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlvmTools {
    pub profdata: PathBuf,
    pub cov: PathBuf,
    /// `rustc 1.95.0, llvm-cov 22.1.8`: the coverage floor's `version`.
    pub version: String,
    /// The triple rustc builds for by default (`x86_64-unknown-linux-gnu`).
    pub host: String,
}

/// What `rustc -vV` says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rustc {
    /// `1.95.0`.
    pub release: String,
    pub host: String,
    /// `22.1.2`.
    pub llvm: String,
}

impl Rustc {
    /// Reads `rustc -vV`'s lines (`release: 1.95.0`, `host: …`, `LLVM version: 22.1.2`).
    pub fn parse(text: &str) -> Option<Rustc> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Some(Rustc {
            release: field("release:")?,
            host: field("host:")?,
            llvm: field("LLVM version:")?,
        })
    }

    pub fn major(&self) -> Option<u32> {
        major(&self.llvm)
    }
}

/// The major version of `22.1.8`, `22.1.2-rust-1.95.0-stable`.
fn major(version: &str) -> Option<u32> {
    version
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|m| m.parse().ok())
}

/// The version a tool's `--version` prints (`Debian LLVM version 22.1.8`, `LLVM version 14.0.6`).
pub fn tool_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (_, rest) = l.split_once("LLVM version ")?;
        let version = rest.split_whitespace().next()?;
        major(version).map(|_| version.to_string())
    })
}

/// The one-line fix for a missing or mismatched pair of LLVM `major`.
fn fix(major: u32, in_action: bool) -> String {
    if in_action {
        format!(
            "run the gate with the full image (`uses: aayudha/verify@<release>`; `aayudha/verify/slim` has git only), or an image extended with `llvm-{major}` (docs/action.md, \"Extending the image\")"
        )
    } else {
        format!(
            "install them (`apt-get install llvm-{major}`), add the toolchain's own (`rustup component add llvm-tools`), or name a folder of LLVM {major}'s with `[verify] llvm_tools`"
        )
    }
}

impl Sandbox {
    /// The LLVM tools that read the profiles of the toolchain `toolchain` names (its `RUSTUP_TOOLCHAIN`,
    /// or none for the default), checked once per toolchain and run; or why there are none, with the fix.
    pub fn llvm_tools(&self, toolchain: &[(String, OsString)]) -> Found {
        // The toolchain named, else the one every process gets: one lookup for both spellings.
        let key = toolchain
            .iter()
            .find(|(k, _)| k == "RUSTUP_TOOLCHAIN")
            .map(|(_, v)| v.clone())
            .or_else(|| self.env.get("RUSTUP_TOOLCHAIN").cloned());
        let mut checked = self.llvm_checked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = checked.get(&key) {
            return found.clone();
        }
        let found = self.find_llvm_tools(toolchain).map_err(std::sync::Arc::new);
        checked.insert(key, found.clone());
        found
    }

    fn find_llvm_tools(&self, toolchain: &[(String, OsString)]) -> Result<LlvmTools, LlvmError> {
        let said = self.ask(&["rustc", "-vV"], toolchain, ASK)?;
        let rustc = Rustc::parse(&said).ok_or(LlvmError::NoLlvmVersion)?;
        let Some(want) = rustc.major() else {
            return Err(LlvmError::UnreadableVersion(rustc.llvm));
        };
        let described = format!("rustc {} is LLVM {}", rustc.release, rustc.llvm);
        let mut pairs: Vec<(PathBuf, PathBuf)> = Vec::new();
        if let Some(folder) = &self.llvm_tools {
            if !folder.is_absolute()
                || self
                    .workspace
                    .as_ref()
                    .is_some_and(|w| folder.starts_with(w))
            {
                return Err(LlvmError::NotTheMachines {
                    folder: folder.clone(),
                });
            }
            let pair = (folder.join("llvm-profdata"), folder.join("llvm-cov"));
            if !pair.0.is_file() || !pair.1.is_file() {
                return Err(LlvmError::NoToolsThere {
                    folder: folder.clone(),
                    fix: fix(want, self.in_action),
                });
            }
            pairs.push(pair);
        } else {
            if let Ok(sysroot) = self.ask(&["rustc", "--print", "sysroot"], toolchain, ASK) {
                let bin = Path::new(sysroot.trim())
                    .join("lib/rustlib")
                    .join(&rustc.host)
                    .join("bin");
                pairs.push((bin.join("llvm-profdata"), bin.join("llvm-cov")));
            }
            let path = self.env_value("PATH").cloned().unwrap_or_default();
            for dir in std::env::split_paths(&path) {
                pairs.push((
                    dir.join(format!("llvm-profdata-{want}")),
                    dir.join(format!("llvm-cov-{want}")),
                ));
            }
            let debian = PathBuf::from(format!("/usr/lib/llvm-{want}/bin"));
            pairs.push((debian.join("llvm-profdata"), debian.join("llvm-cov")));
            for dir in std::env::split_paths(&path) {
                pairs.push((dir.join("llvm-profdata"), dir.join("llvm-cov")));
            }
        }
        // The first pair that is there, runs for the sandbox uid, and is LLVM `want`; the others are
        // remembered to say what was found instead.
        let mut seen = BTreeSet::new();
        let mut others: Vec<String> = Vec::new();
        for (profdata, cov) in pairs {
            if !profdata.is_file() || !cov.is_file() || !seen.insert(cov.clone()) {
                continue;
            }
            if !self.reachable(&profdata, true) || !self.reachable(&cov, true) {
                others.push(format!(
                    "`{}` (the sandbox uid cannot run it: make it readable by other users)",
                    cov.display()
                ));
                continue;
            }
            let versions = [&profdata, &cov].map(|tool| {
                self.ask(&[&tool.display().to_string(), "--version"], &[], ASK)
                    .ok()
                    .and_then(|text| tool_version(&text))
            });
            let [Some(profdata_version), Some(cov_version)] = versions else {
                let silent = if versions[0].is_none() {
                    &profdata
                } else {
                    &cov
                };
                others.push(format!(
                    "`{}` does not say its LLVM version",
                    silent.display()
                ));
                continue;
            };
            if major(&profdata_version) != Some(want) || major(&cov_version) != Some(want) {
                others.push(format!(
                    "`{}` is LLVM {cov_version}, `{}` LLVM {profdata_version}",
                    cov.display(),
                    profdata.display()
                ));
                continue;
            }
            return Ok(LlvmTools {
                profdata,
                cov,
                version: format!("rustc {}, llvm-cov {cov_version}", rustc.release),
                host: rustc.host,
            });
        }
        if let Some(folder) = &self.llvm_tools {
            return Err(LlvmError::WrongThere {
                described,
                folder: folder.clone(),
                others: others.join("; "),
                want,
                fix: fix(want, self.in_action),
            });
        }
        let fix = fix(want, self.in_action);
        Err(if others.is_empty() {
            LlvmError::NoneInstalled {
                described,
                want,
                fix,
            }
        } else {
            LlvmError::OthersInstalled {
                described,
                others: others.join("; "),
                want,
                fix,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustc_and_llvm_versions_are_read_as_they_print_them() {
        let said = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\ncommit-hash: 59807616e1fa2540724bfbac14d7976d7e4a3860\ncommit-date: 2026-04-14\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\nLLVM version: 22.1.2\n";
        let rustc = Rustc::parse(said).expect("rustc");
        assert_eq!(rustc.release, "1.95.0");
        assert_eq!(rustc.host, "x86_64-unknown-linux-gnu");
        assert_eq!(rustc.major(), Some(22));
        assert_eq!(Rustc::parse("rustc 1.95.0\nrelease: 1.95.0\n"), None);
        assert_eq!(
            tool_version("Debian LLVM version 22.1.8\n  Optimized build.\n").as_deref(),
            Some("22.1.8")
        );
        assert_eq!(
            tool_version("LLVM (http://llvm.org/):\n  LLVM version 14.0.6\n  Optimized build.\n")
                .as_deref(),
            Some("14.0.6")
        );
        let component =
            tool_version("LLVM (http://llvm.org/):\n  LLVM version 22.1.2-rust-1.95.0-stable\n")
                .expect("component");
        assert_eq!(major(&component), Some(22));
        assert_eq!(tool_version("llvm-cov: unknown option"), None);
    }
}
