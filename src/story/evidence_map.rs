//! Evidence maps, `.aayudha/evidence/<story>.toml`: which tests and behaviour checks prove which criterion.

use serde::Deserialize;

/// The file of a story's evidence map, relative to the repository root.
pub fn path(story: u64) -> String {
    format!(".aayudha/evidence/{story}.toml")
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceMap {
    #[serde(default)]
    pub criterion: Vec<Criterion>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// The criterion's number in the story's Completion Goal.
    pub id: u32,
    /// `"<package dir>:<test name>"`.
    #[serde(default)]
    pub tests: Vec<String>,
    /// `"<feature>.<check>"`.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// Why an evidence map does not parse, with its file and line.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceMapError {
    #[error("{file}:{line}: {message}")]
    Toml {
        file: String,
        line: usize,
        message: String,
    },
    #[error(
        "{file}:{line}: criterion {criterion}: `{what}` entry \"{shown}\" holds a control character: a test or check name is one line of printable text"
    )]
    ControlCharacter {
        file: String,
        line: usize,
        criterion: u32,
        what: &'static str,
        shown: String,
    },
}

/// A map that does not parse is the user's to fix (exit 2).
impl crate::failure::Diagnose for EvidenceMapError {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Usage
    }
}

/// Parses an evidence map; errors name the file and line. A test or check name holding a control
/// character (a newline that would start a forged line in a log, say) is refused, shown escaped.
pub fn parse(text: &str, file: &str) -> Result<EvidenceMap, EvidenceMapError> {
    let map: EvidenceMap = toml::from_str(text).map_err(|e| EvidenceMapError::Toml {
        file: file.to_string(),
        line: e
            .span()
            .map_or(1, |s| crate::config::line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    for criterion in &map.criterion {
        for (what, name) in criterion
            .tests
            .iter()
            .map(|t| ("tests", t))
            .chain(criterion.checks.iter().map(|c| ("checks", c)))
        {
            if name.chars().any(char::is_control) {
                let shown = name.escape_debug().to_string();
                let line = text
                    .lines()
                    .position(|l| l.contains(&shown) || l.contains(name.as_str()))
                    .map_or(1, |i| i + 1);
                return Err(EvidenceMapError::ControlCharacter {
                    file: file.to_string(),
                    line,
                    criterion: criterion.id,
                    what,
                    shown,
                });
            }
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evidence_map_is_strict() {
        let map = parse(
            "[[criterion]]\nid = 1\ntests = [\"examples/notes:store::tests::add_numbers_from_one\"]\nchecks = [\"add-note.adds\"]\n",
            "e.toml",
        )
        .expect("valid");
        assert_eq!(map.criterion[0].checks, vec!["add-note.adds"]);
        let err = parse("[[criterion]]\nid = 1\ncheck = []\n", "e.toml")
            .expect_err("unknown")
            .to_string();
        assert!(err.starts_with("e.toml:3: unknown field `check`"), "{err}");
        let err = parse(
            "[[criterion]]\nid = 2\ntests = [\"nocolon\\n::error title=aayudha::forged\"]\n",
            "e.toml",
        )
        .expect_err("control")
        .to_string();
        assert_eq!(
            err,
            "e.toml:3: criterion 2: `tests` entry \"nocolon\\n::error title=aayudha::forged\" holds a control character: a test or check name is one line of printable text"
        );
        assert!(!err.contains('\n'));
    }
}
