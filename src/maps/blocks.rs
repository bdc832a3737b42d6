//! The JSON blocks of the maps (SPEC §2), strict: an unknown or missing field is a contract error.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The map block of `features/README.md`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapBlock {
    pub product: String,
    pub control: Vec<String>,
    pub surfaces: Vec<RuleBlock>,
}

/// One surface rule: files to look in and a regular expression with exactly one capture group.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleBlock {
    pub kind: String,
    pub files: Vec<String>,
    pub pattern: String,
}

/// The feature block of `features/<id>.md`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureBlock {
    pub id: String,
    pub layers: Vec<String>,
    pub sources: Vec<String>,
    pub surfaces: BTreeMap<String, Vec<String>>,
    pub verified_at: String,
}

/// A check block under `## Behaviour checks`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckBlock {
    pub id: String,
    pub kind: CheckKind,
    pub evidence: ArtifactKind,
    /// Opaque to everything but handle extraction: only the control tool gives step keys a meaning.
    pub steps: Vec<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "passed to the control tool inside `spec`; aayu itself gives it no meaning yet"
    )]
    pub requires: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    Ui,
    Cli,
    Api,
    Lib,
}

impl CheckKind {
    /// ui and api checks drive the running app over the network; cli and lib checks get none.
    pub fn needs_network(self) -> bool {
        matches!(self, CheckKind::Ui | CheckKind::Api)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Ui => "ui",
            CheckKind::Cli => "cli",
            CheckKind::Api => "api",
            CheckKind::Lib => "lib",
        }
    }
}

/// The artifact kinds of the Completion Goal schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactKind {
    Screenshot,
    Recording,
    SrTranscript,
    ApiTrace,
    Metric,
    Report,
}

/// A JSON block that did not fit its shape: where (1-based line inside the block) and what.
#[derive(Debug)]
pub struct BlockError {
    pub line: usize,
    pub message: String,
}

/// Parses a block strictly; the message names the field by its path (`surfaces[0].pattern`).
pub fn parse<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, BlockError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    let value = result.map_err(|e| {
        let mut path = e.path().to_string();
        let inner = e.into_inner();
        if inner.classify() != serde_json::error::Category::Data {
            // A syntax error has no field; its line says where.
            path.clear();
        } else if inner.to_string().starts_with("unknown field") {
            // The path ends with the unknown field itself, which the message already names.
            path = parent_path(&path);
        }
        let line = inner.line().max(1);
        let mut message = inner.to_string();
        // serde_json appends " at line L column C"; the line is reported separately.
        if let Some(cut) = message.rfind(" at line ") {
            message.truncate(cut);
        }
        let message = if path == "." || path.is_empty() {
            format!("{what}: {message}")
        } else {
            format!("{what}: `{path}`: {message}")
        };
        BlockError { line, message }
    })?;
    de.end().map_err(|e| BlockError {
        line: e.line().max(1),
        message: format!("{what}: text after the JSON object"),
    })?;
    Ok(value)
}

/// `surfaces[0].extra` → `surfaces[0]`; a top-level field → empty.
fn parent_path(path: &str) -> String {
    match path.rfind(['.', '[']) {
        Some(i) if path[i..].starts_with('.') => path[..i].to_string(),
        Some(i) => path[..i].to_string(),
        None => String::new(),
    }
}
