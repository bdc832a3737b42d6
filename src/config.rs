//! `.aayudha/config.toml`, laid over the defaults embedded from `defaults.toml`.
//!
//! Every key has a default; a key the defaults do not have is an error naming the key, file and line, and
//! so is a value of the wrong type. The user's file is checked against the defaults' own table (keys and
//! value types) before the merged table is deserialized into [`Config`], so the messages point at the
//! user's line rather than at a merged document nobody wrote.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use time::Date;
use time::macros::format_description;

/// The embedded defaults: `defaults.toml` at the repository root.
pub const DEFAULTS: &str = include_str!("../defaults.toml");

/// Where a repository keeps its configuration, relative to its root.
pub const CONFIG_PATH: &str = ".aayudha/config.toml";

/// How large a configuration file may be.
const CONFIG_CAP: u64 = 1 << 20;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub verify: Verify,
    pub proof: Proof,
    pub ledger: Ledger,
    pub gate: Gate,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    pub seed: Vec<String>,
    pub base_url: String,
    pub production: Vec<String>,
    pub targets: Vec<String>,
    pub check_timeout_s: u64,
    pub memory_limit_mb: u64,
    pub scan_timeout_s: u64,
    pub max_source_bytes: u64,
    pub drift_blocking_from: BlockingDate,
    pub red_on_base_blocking_from: BlockingDate,
    pub weakening_blocking_from: BlockingDate,
    pub harness_blocking_from: BlockingDate,
    pub harness_scan_bytes: u64,
    pub canary: bool,
    pub coverage_threshold: u32,
    pub coverage_blocking_from: BlockingDate,
    pub suite_timeout_s: u64,
    pub llvm_tools: String,
    pub maintainer: String,
    pub env: Vec<String>,
    pub chromium: String,
    pub python: String,
    pub python_wheels: String,
    pub require_isolation: bool,
    pub sandbox_uids: [u32; 2],
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub retention_days: u32,
    pub media: String,
    pub attestation: Attestation,
    pub trusted_root: String,
    pub self_hosted_runners: bool,
}

/// `[proof] attestation`: what `aayu ship` asks of the gate's signed attestation of the pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Attestation {
    /// A run without a bundle that verifies is passed over.
    Require,
    /// A run with bundles needs one that verifies; a run without any qualifies, said `provenance: none`.
    Check,
    /// Not looked at.
    Off,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub branch: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    pub workflow: String,
}

/// A dated rule: advisory before the date, blocking from 00:00 UTC on it; empty keeps it advisory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockingDate(pub Option<Date>);

impl BlockingDate {
    /// Whether the rule blocks at `now`: from 00:00:00 UTC of the date on.
    pub fn blocks_at(self, now: time::OffsetDateTime) -> bool {
        match self.0 {
            Some(date) => now.to_offset(time::UtcOffset::UTC).date() >= date,
            None => false,
        }
    }

    /// The detail of an advisory result: `advisory until 2026-11-13`, or `advisory (no blocking date set)`.
    pub fn advisory_detail(self) -> String {
        match self.0 {
            Some(date) => format!("advisory until {date}"),
            None => "advisory (no blocking date set)".to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for BlockingDate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim().is_empty() {
            return Ok(BlockingDate(None));
        }
        Date::parse(text.trim(), format_description!("[year]-[month]-[day]"))
            .map(|date| BlockingDate(Some(date)))
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a date: write YYYY-MM-DD (a UTC day), or \"\" to stay advisory"
                ))
            })
    }
}

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read `{file}`")]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A key or a value the configuration does not take (an unknown key, a wrong type, a uid range).
    #[error("{file}:{line}: {message}")]
    Invalid {
        file: String,
        line: usize,
        message: String,
    },
    /// The file is not TOML.
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
}

impl ConfigError {
    pub fn hint(&self) -> Option<String> {
        match self {
            // The keys of the defaults do not help to mend a file that is not TOML.
            ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
            ConfigError::Invalid { .. } => Some(
                "every key and its default is listed in defaults.toml (see docs/configuration.md)"
                    .to_string(),
            ),
        }
    }
}

impl Config {
    /// The embedded defaults alone.
    pub fn defaults() -> Config {
        // The defaults are checked by a unit test and by every test run of the binary; a failure here is a
        // bug in this build, not something a user can cause.
        match toml::from_str(DEFAULTS) {
            Ok(config) => config,
            Err(e) => panic!("the embedded defaults.toml does not parse: {e}"),
        }
    }

    /// Reads `.aayudha/config.toml` under `root` when it exists, or `explicit` when given (relative to
    /// `cwd`, and named in errors as the user wrote it).
    pub fn load(root: &Path, explicit: Option<&Path>, cwd: &Path) -> Result<Config, ConfigError> {
        let Some(path) = explicit else {
            // The checkout's own file: read without following a link, capped.
            return match crate::safe_fs::read(root, CONFIG_PATH, CONFIG_CAP) {
                Ok(bytes) => Config::from_text(&String::from_utf8_lossy(&bytes), CONFIG_PATH),
                Err(e) if e.is_missing() => Ok(Config::defaults()),
                Err(e) => Err(ConfigError::Read {
                    file: PathBuf::from(CONFIG_PATH),
                    source: std::io::Error::other(e.to_string()),
                }),
            };
        };
        match std::fs::read_to_string(cwd.join(path)) {
            Ok(text) => Config::from_text(&text, &path.display().to_string()),
            Err(source) => Err(ConfigError::Read {
                file: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses a configuration file's text (named `file` in errors) over the defaults.
    pub fn from_text(text: &str, file: &str) -> Result<Config, ConfigError> {
        let invalid =
            |span: Option<std::ops::Range<usize>>, message: String| ConfigError::Invalid {
                file: file.to_string(),
                line: span.map_or(1, |s| line_of(text, s.start)),
                message,
            };
        let user = toml::de::DeTable::parse(text).map_err(|e| ConfigError::Syntax {
            file: file.to_string(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().to_string(),
        })?;
        let mut merged: toml::Table = match toml::from_str(DEFAULTS) {
            Ok(table) => table,
            Err(e) => panic!("the embedded defaults.toml does not parse: {e}"),
        };
        for (section_key, section_value) in user.get_ref() {
            let section_name = section_key.get_ref().as_ref();
            let section_span = Some(section_key.span());
            let Some(toml::Value::Table(defaults)) = merged.get_mut(section_name) else {
                return Err(invalid(
                    section_span,
                    format!(
                        "unknown section `[{section_name}]` (known: {})",
                        known_sections()
                    ),
                ));
            };
            let toml::de::DeValue::Table(entries) = section_value.get_ref() else {
                return Err(invalid(
                    section_span,
                    format!("`{section_name}` must be a section (`[{section_name}]`), not a value"),
                ));
            };
            for (key, value) in entries {
                let key_name = key.get_ref().as_ref();
                let span = Some(key.span());
                let Some(default) = defaults.get(key_name) else {
                    return Err(invalid(
                        span,
                        format!(
                            "unknown key `{section_name}.{key_name}` (known in [{section_name}]: {})",
                            defaults
                                .keys()
                                .map(String::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                };
                let value = to_value(value.get_ref());
                if value.type_str() != default.type_str() || !same_item_types(&value, default) {
                    return Err(invalid(
                        Some(value_span(value_span_of(entries, key_name), span)),
                        format!(
                            "`{section_name}.{key_name}` must be {}, not {}",
                            describe(default),
                            describe(&value)
                        ),
                    ));
                }
                if let Some(problem) = not_a_choice(section_name, key_name, &value) {
                    return Err(invalid(
                        Some(value_span(value_span_of(entries, key_name), span)),
                        problem,
                    ));
                }
                defaults.insert(key_name.to_string(), value);
            }
        }
        toml::Value::Table(merged)
            .try_into::<Config>()
            .map_err(|e| invalid(None, e.message().to_string()))
            .and_then(|config| config.validate(file, text))
    }

    /// Checks what types alone cannot: the uid range. Product code runs with these numbers as uid and gid,
    /// so none may be a system id (below 1000) or 1001, the runner's uid on GitHub's hosted runners (in the
    /// `docker` group, owner of the file-command files). The ids of this machine's workspace, docker socket
    /// and file-command files are refused when the sandbox starts.
    fn validate(self, file: &str, text: &str) -> Result<Config, ConfigError> {
        let [first, last] = self.verify.sandbox_uids;
        let problem = if first > last {
            Some(format!(
                "`verify.sandbox_uids` must be [first, last] with first <= last, not [{first}, {last}]"
            ))
        } else if first < 1000 {
            Some(format!(
                "`verify.sandbox_uids` [{first}, {last}] includes ids below 1000, which belong to the system: product code must run as an unused id of 1000 or more"
            ))
        } else if (first..=last).contains(&1001) {
            Some(format!(
                "`verify.sandbox_uids` [{first}, {last}] includes 1001, the runner's uid on GitHub's hosted runners (in the `docker` group, owner of `$GITHUB_ENV` and the other file-command files)"
            ))
        } else {
            None
        };
        let threshold = self.verify.coverage_threshold;
        let (key, problem) = match problem {
            Some(message) => ("sandbox_uids", Some(message)),
            None if threshold > 100 => (
                "coverage_threshold",
                Some(format!(
                    "`verify.coverage_threshold` is a percentage (0 to 100), not {threshold}"
                )),
            ),
            None => ("", None),
        };
        match problem {
            Some(message) => Err(ConfigError::Invalid {
                file: file.to_string(),
                line: text
                    .lines()
                    .position(|l| l.trim_start().starts_with(key))
                    .map_or(1, |i| i + 1),
                message,
            }),
            None => Ok(self),
        }
    }
}

/// The keys whose string value is one of a few words, with those words.
const CHOICES: &[(&str, &str, &[&str])] = &[("proof", "attestation", &["require", "check", "off"])];

/// Why `value` is not one of the words `section.key` takes, when it takes a few.
fn not_a_choice(section: &str, key: &str, value: &toml::Value) -> Option<String> {
    let (_, _, words) = CHOICES
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)?;
    let given = value.as_str()?;
    (!words.contains(&given)).then(|| {
        format!(
            "`{section}.{key}` must be one of {}, not \"{given}\"",
            words
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn known_sections() -> String {
    match toml::from_str::<toml::Table>(DEFAULTS) {
        Ok(t) => t
            .keys()
            .map(|k| format!("[{k}]"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(_) => String::new(),
    }
}

fn value_span_of(entries: &toml::de::DeTable<'_>, key: &str) -> Option<std::ops::Range<usize>> {
    entries
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(_, v)| v.span())
}

fn value_span(
    value: Option<std::ops::Range<usize>>,
    key: Option<std::ops::Range<usize>>,
) -> std::ops::Range<usize> {
    value.or(key).unwrap_or(0..0)
}

/// Converts a spanned table value into a plain one (spans are only needed for the keys' lines).
fn to_value(value: &toml::de::DeValue<'_>) -> toml::Value {
    use toml::de::DeValue;
    match value {
        DeValue::String(s) => toml::Value::String(s.to_string()),
        DeValue::Integer(i) => i
            .to_string()
            .parse::<i64>()
            .map(toml::Value::Integer)
            .unwrap_or_else(|_| toml::Value::String(i.to_string())),
        DeValue::Float(f) => f
            .to_string()
            .parse::<f64>()
            .map(toml::Value::Float)
            .unwrap_or(toml::Value::Float(f64::NAN)),
        DeValue::Boolean(b) => toml::Value::Boolean(*b),
        DeValue::Datetime(d) => toml::Value::Datetime(*d),
        DeValue::Array(items) => {
            toml::Value::Array(items.iter().map(|v| to_value(v.get_ref())).collect())
        }
        DeValue::Table(t) => toml::Value::Table(
            t.iter()
                .map(|(k, v)| (k.get_ref().to_string(), to_value(v.get_ref())))
                .collect(),
        ),
    }
}

/// For arrays: every item has the type of the default's items (when the default has any).
fn same_item_types(value: &toml::Value, default: &toml::Value) -> bool {
    match (value, default) {
        (toml::Value::Array(items), toml::Value::Array(defaults)) => match defaults.first() {
            Some(first) => items.iter().all(|i| i.type_str() == first.type_str()),
            None => items.iter().all(|i| i.type_str() == "string"),
        },
        _ => true,
    }
}

fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(_) => "a string".to_string(),
        toml::Value::Integer(_) => "an integer".to_string(),
        toml::Value::Float(_) => "a number".to_string(),
        toml::Value::Boolean(_) => "true or false".to_string(),
        toml::Value::Datetime(_) => "a date-time".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
        toml::Value::Array(items) => match items.first() {
            Some(first) => format!("a list of {}s", first.type_str()),
            None => "a list of strings".to_string(),
        },
    }
}

/// The 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl Config {
    /// The configuration of the repository's default branch on GitHub (through the contents API): what the
    /// comment job and `aayu ship` go by, whatever a working tree or a pull request says ("Trust in the gate").
    /// `path` is the file in that branch (`.aayudha/config.toml` unless the workflow names another); a missing
    /// file means the defaults. Returns the configuration and the branch's name.
    pub fn of_default_branch(
        client: &crate::github::Client,
        repo: &crate::github::RepoSlug,
        path: Option<&str>,
    ) -> Result<(Config, String), crate::failure::Failure> {
        use crate::failure::Failure;
        let branch = client
            .repository(repo)
            .map_err(Failure::from)?
            .default_branch;
        let path = path.unwrap_or(CONFIG_PATH);
        let config = match client.file(repo, path, &branch) {
            Ok(bytes) => Config::from_text(
                &String::from_utf8_lossy(&bytes),
                &format!("{branch}:{path}"),
            )
            .map_err(Failure::from)?,
            Err(crate::github::GitHubError::NotFound { .. }) if path == CONFIG_PATH => {
                Config::defaults()
            }
            Err(e) => return Err(Failure::from(e)),
        };
        Ok((config, branch))
    }
}

/// A configuration that does not parse or holds a wrong value: the user's to fix (exit 2), with the hint.
impl crate::failure::Diagnose for ConfigError {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Usage
    }

    fn hint(&self) -> Option<String> {
        ConfigError::hint(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_strictly_and_are_advisory() {
        let config = Config::defaults();
        assert_eq!(config.verify.check_timeout_s, 180);
        assert_eq!(config.verify.drift_blocking_from, BlockingDate(None));
        assert_eq!(config.verify.red_on_base_blocking_from, BlockingDate(None));
        assert_eq!(config.ledger.branch, "ledger");
    }

    #[test]
    fn a_user_key_overrides_its_default_only() {
        let config = Config::from_text(
            "[verify]\ncheck_timeout_s = 30\ndrift_blocking_from = \"2026-11-13\"\n",
            "c.toml",
        )
        .expect("valid");
        assert_eq!(config.verify.check_timeout_s, 30);
        assert!(config.verify.drift_blocking_from.0.is_some());
        assert_eq!(config.proof.retention_days, 30);
    }

    #[test]
    fn an_unknown_key_names_key_file_and_line() {
        let err = Config::from_text("[verify]\nseed = []\nsede = [\"x\"]\n", "cfg.toml")
            .expect_err("unknown key");
        let text = err.to_string();
        assert!(
            text.starts_with("cfg.toml:3: unknown key `verify.sede`"),
            "{text}"
        );
    }

    #[test]
    fn an_unknown_section_and_a_wrong_type_are_errors() {
        let err = Config::from_text("[verfy]\n", "c.toml").expect_err("section");
        assert!(
            err.to_string().contains("unknown section `[verfy]`"),
            "{err}"
        );
        let err =
            Config::from_text("[verify]\n\ncheck_timeout_s = \"3\"\n", "c.toml").expect_err("type");
        assert_eq!(
            err.to_string(),
            "c.toml:3: `verify.check_timeout_s` must be an integer, not a string"
        );
        let err = Config::from_text("[verify]\nseed = [1]\n", "c.toml").expect_err("items");
        assert!(
            err.to_string().contains("must be a list of strings"),
            "{err}"
        );
        let err = Config::from_text("[proof]\nmedia = \"\"\nattestation = \"maybe\"\n", "c.toml")
            .expect_err("choice");
        assert_eq!(
            err.to_string(),
            "c.toml:3: `proof.attestation` must be one of \"require\", \"check\", \"off\", not \"maybe\""
        );
        let config =
            Config::from_text("[proof]\nattestation = \"require\"\n", "c.toml").expect("a choice");
        assert_eq!(config.proof.attestation, Attestation::Require);
        assert_eq!(Config::defaults().proof.attestation, Attestation::Check);
    }

    #[test]
    fn system_ids_and_the_runner_uid_are_refused_as_sandbox_ids() {
        for (range, says) in [
            ("[0, 10]", "below 1000"),
            ("[999, 2000]", "below 1000"),
            ("[1000, 1063]", "includes 1001"),
            ("[5, 4]", "first <= last"),
        ] {
            let text = format!("[verify]\nsandbox_uids = {range}\n");
            let err = Config::from_text(&text, "c.toml").expect_err(range);
            assert!(err.to_string().starts_with("c.toml:2: "), "{err}");
            assert!(err.to_string().contains(says), "{range}: {err}");
        }
        assert!(Config::from_text("[verify]\nsandbox_uids = [1002, 1100]\n", "c.toml").is_ok());
    }

    #[test]
    fn a_coverage_threshold_is_a_percentage() {
        let err = Config::from_text("[verify]\n\ncoverage_threshold = 120\n", "c.toml")
            .expect_err("over 100");
        assert_eq!(
            err.to_string(),
            "c.toml:3: `verify.coverage_threshold` is a percentage (0 to 100), not 120"
        );
        assert!(Config::from_text("[verify]\ncoverage_threshold = 100\n", "c.toml").is_ok());
    }

    #[test]
    fn a_bad_date_is_an_error() {
        let err = Config::from_text("[verify]\ndrift_blocking_from = \"13/11/2026\"\n", "c.toml")
            .expect_err("date");
        assert!(err.to_string().contains("is not a date"), "{err}");
    }

    #[test]
    fn a_date_blocks_from_midnight_utc() {
        use time::macros::datetime;
        let date = BlockingDate(Some(time::macros::date!(2026 - 11 - 13)));
        assert!(!date.blocks_at(datetime!(2026-11-12 23:59:59 UTC)));
        assert!(date.blocks_at(datetime!(2026-11-13 00:00:00 UTC)));
        // 23:30 on the 12th in UTC-1 is 00:30 on the 13th in UTC.
        assert!(date.blocks_at(datetime!(2026-11-12 23:30:00 -1)));
        assert!(!BlockingDate(None).blocks_at(datetime!(2100-01-01 00:00:00 UTC)));
    }
}
