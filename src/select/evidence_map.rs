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
    #[allow(
        dead_code,
        reason = "run by the tests floor, which lands with the proof pack"
    )]
    pub tests: Vec<String>,
    /// `"<feature>.<check>"`.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// Parses an evidence map; errors name the file and line.
pub fn parse(text: &str, file: &str) -> Result<EvidenceMap, String> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map_or(1, |s| crate::config::line_of(text, s.start));
        format!("{file}:{line}: {}", e.message())
    })
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
        let err = parse("[[criterion]]\nid = 1\ncheck = []\n", "e.toml").expect_err("unknown");
        assert!(err.starts_with("e.toml:3: unknown field `check`"), "{err}");
    }
}
