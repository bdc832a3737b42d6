//! Which behaviour checks run, and why (SPEC §4 "Selection"): by a diff between two commits, by the
//! story's evidence map, or explicitly with `--check`.

use std::collections::BTreeMap;

use crate::git::{GitError, Repo};
use crate::maps::Map;
use crate::story::evidence_map;

/// A check to run: indexes into the maps, and every reason it was selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    pub map: usize,
    pub feature: usize,
    pub check: usize,
    pub because: Vec<String>,
}

/// Why a selection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("`--check {arg}` names no check: {why}")]
    Unknown { arg: String, why: String },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    EvidenceMap(String),
}

/// A selection the user's arguments or files got wrong is theirs to fix (exit 2); git's errors say their own.
impl crate::failure::Diagnose for SelectError {
    fn status(&self) -> crate::exit::ExitStatus {
        match self {
            SelectError::Git(g) => g.status(),
            SelectError::Unknown { .. } | SelectError::EvidenceMap(_) => {
                crate::exit::ExitStatus::Usage
            }
        }
    }

    fn hint(&self) -> Option<String> {
        match self {
            SelectError::Git(g) => g.hint(),
            SelectError::Unknown { .. } => Some(
                "`--check all` runs every check, `--check <feature>` every check of a feature"
                    .to_string(),
            ),
            SelectError::EvidenceMap(_) => None,
        }
    }
}

/// Collects selections, merging the reasons of a check selected several times.
#[derive(Default)]
struct Picks(BTreeMap<(usize, usize, usize), Vec<String>>);

impl Picks {
    fn add(&mut self, key: (usize, usize, usize), because: String) {
        let reasons = self.0.entry(key).or_default();
        if !reasons.contains(&because) {
            reasons.push(because);
        }
    }

    fn all_of_feature(&mut self, maps: &[Map], m: usize, f: usize, because: &str) {
        for c in 0..maps[m].features[f].checks.len() {
            self.add((m, f, c), because.to_string());
        }
    }

    fn into_vec(self) -> Vec<Selected> {
        self.0
            .into_iter()
            .map(|((map, feature, check), because)| Selected {
                map,
                feature,
                check,
                because,
            })
            .collect()
    }
}

/// `--check <feature>`, `<feature>.<check>` or `all`.
pub fn explicit(maps: &[Map], arg: &str) -> Result<Vec<Selected>, SelectError> {
    let mut picks = Picks::default();
    let because = format!("chosen: --check {arg}");
    let (feature_id, check_id) = match arg.split_once('.') {
        Some((f, c)) => (f, Some(c)),
        None => (arg, None),
    };
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        for (f, feature) in map.features.iter().enumerate() {
            if arg != "all" && feature.id.value != feature_id {
                continue;
            }
            for (c, check) in feature.checks.iter().enumerate() {
                if check_id.is_none_or(|id| id == check.id.value) {
                    picks.add((m, f, c), because.clone());
                }
            }
        }
    }
    if picks.0.is_empty() && arg != "all" {
        let known: Vec<String> = maps
            .iter()
            .flat_map(|m| m.features.iter())
            .map(|f| {
                let checks: Vec<&str> = f.checks.iter().map(|c| c.id.value.as_str()).collect();
                if checks.is_empty() {
                    format!("{} (no checks)", f.id.value)
                } else {
                    format!("{} ({})", f.id.value, checks.join(", "))
                }
            })
            .collect();
        let why = if known.is_empty() {
            "there are no features with checks".to_string()
        } else {
            format!("the features and their checks are: {}", known.join("; "))
        };
        return Err(SelectError::Unknown {
            arg: arg.to_string(),
            why,
        });
    }
    Ok(picks.into_vec())
}

/// The checks a change from `base` to `head` selects, plus those of story `story`'s evidence map (read
/// at `head`). Maps are the working tree's.
pub fn by_diff(
    repo: &Repo,
    maps: &[Map],
    base: &str,
    head: &str,
    story: Option<u64>,
) -> Result<Vec<Selected>, SelectError> {
    let changed = repo.changed_paths(base, head)?;
    let touches = |path: &str| {
        changed.iter().any(|c| {
            c == path
                || c.strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    let mut picks = Picks::default();
    for (m, map) in maps.iter().enumerate().filter(|(_, m)| !m.broken) {
        // (2) the map's README or its control tool: every check of the map.
        let skill = map.dir.trim_end_matches("/features");
        let mut map_paths = vec![map.file.clone(), format!("{skill}/control")];
        map_paths.extend(control_paths(&map.control));
        if let Some(hit) = map_paths.iter().find(|p| touches(p)) {
            let because = format!("map changed: {hit}");
            for f in 0..map.features.len() {
                picks.all_of_feature(maps, m, f, &because);
            }
        }
        // (1) a feature's sources or its feature file: every check of the feature.
        for (f, feature) in map.features.iter().enumerate() {
            let mut hits: Vec<&str> = feature
                .sources
                .iter()
                .map(|s| s.value.as_str())
                .filter(|s| touches(s))
                .collect();
            if touches(&feature.file) {
                hits.push(&feature.file);
            }
            for hit in hits {
                let detail = changed
                    .iter()
                    .find(|c| *c == hit || c.starts_with(&format!("{hit}/")))
                    .map_or(hit, String::as_str);
                picks.all_of_feature(maps, m, f, &format!("changed: {detail}"));
            }
        }
    }
    // (3) the checks the story's evidence map names.
    if let Some(story) = story {
        let file = evidence_map::path(story);
        if let Some(bytes) = repo.file_at(head, &file)? {
            let text = String::from_utf8(bytes)
                .map_err(|_| SelectError::EvidenceMap(format!("{file}: not UTF-8")))?;
            let evidence = evidence_map::parse(&text, &file)
                .map_err(|e| SelectError::EvidenceMap(e.to_string()))?;
            for criterion in &evidence.criterion {
                for name in &criterion.checks {
                    let key = find_check(maps, name).map_err(|why| {
                        SelectError::EvidenceMap(format!(
                            "{file}: criterion {}: check `{name}` {why}",
                            criterion.id
                        ))
                    })?;
                    picks.add(
                        key,
                        format!("evidence map of story #{story}, criterion {}", criterion.id),
                    );
                }
            }
        }
    }
    Ok(picks.into_vec())
}

/// The repository paths a control argv names (`./x/control`, `x/control.sh`), for "the control tool
/// changed".
fn control_paths(control: &[String]) -> Vec<String> {
    control
        .iter()
        .filter(|a| a.contains('/') && !a.starts_with('-') && !a.starts_with('/'))
        .map(|a| a.trim_start_matches("./").trim_end_matches('/').to_string())
        .collect()
}

/// Why `<feature>.<check>` names no check; said after the name (`check `x.y` names no feature: …`).
#[derive(Debug, thiserror::Error)]
pub enum NoSuchCheck {
    #[error("is not `<feature>.<check>`")]
    NotFeatureDotCheck,
    #[error("names no check: feature `{feature}` has {}", checks_of(.checks))]
    NoCheck {
        feature: String,
        checks: Vec<String>,
    },
    #[error("names no feature: there is no feature `{feature}`")]
    NoFeature { feature: String },
}

/// A feature's checks for a person: their ids, or that it has none.
fn checks_of(checks: &[String]) -> String {
    if checks.is_empty() {
        "no checks".to_string()
    } else {
        checks.join(", ")
    }
}

/// `<feature>.<check>` to its indexes, or why it names none.
pub fn find_check(maps: &[Map], name: &str) -> Result<(usize, usize, usize), NoSuchCheck> {
    let Some((feature_id, check_id)) = name.split_once('.') else {
        return Err(NoSuchCheck::NotFeatureDotCheck);
    };
    let mut feature_found = None;
    for (m, map) in maps.iter().enumerate() {
        for (f, feature) in map
            .features
            .iter()
            .enumerate()
            .filter(|(_, f)| f.id.value == feature_id)
        {
            feature_found = Some(feature);
            if let Some(c) = feature.checks.iter().position(|c| c.id.value == check_id) {
                return Ok((m, f, c));
            }
        }
    }
    Err(match feature_found {
        Some(feature) => NoSuchCheck::NoCheck {
            feature: feature_id.to_string(),
            checks: feature.checks.iter().map(|c| c.id.value.clone()).collect(),
        },
        None => NoSuchCheck::NoFeature {
            feature: feature_id.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::control_paths;

    #[test]
    fn control_paths_are_repository_paths_in_the_argv() {
        let argv = ["go", "run", "./examples/x/control", "-v", "/usr/bin/env"].map(String::from);
        assert_eq!(control_paths(&argv), vec!["examples/x/control".to_string()]);
        assert!(control_paths(&["aayu".to_string(), "control".to_string()]).is_empty());
    }
}
