//! What a gate run will run, decided before anything runs and as data: the behaviour checks the diff and
//! the story's evidence map select, the mapped tests (each id checked by its package's runner), the
//! packages the change touches (the coverage floor's suites), whether red-on-base runs, the packages whose
//! dependencies are fetched and the tools the preflight checks. Reading it runs no product code: maps,
//! manifests and git objects are read as data. `verify --select` prints it ([`Plan::document`]); a sharded
//! gate can split it.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{GateError, Inputs};
use crate::config::Config;
use crate::floors::behaviour;
use crate::floors::coverage::{self, Touched};
use crate::floors::test_evidence::{self, TestId};
use crate::git::Repo;
use crate::maps;
use crate::sandbox::preflight::Tool;
use crate::sandbox::toolchain::shown_dir;
use crate::select::{self, Selected};
use crate::story::{Binding, Story, evidence_map};

/// What the plan reads of a gate run: the change, its story and what decides red-on-base. A part of the
/// gate's [`Inputs`] (see [`Inputs::change`]), which `verify --select` builds without the run's folders,
/// sandbox settings and clock.
pub struct Change<'a> {
    pub repo: &'a Repo,
    pub config: &'a Config,
    /// The change, as full SHAs.
    pub base: &'a str,
    pub head: &'a str,
    pub story: Option<&'a Story>,
    /// What the merge gate knows of the pull request (the story's labels now); `None` on the CLI.
    pub binding: Option<&'a Binding>,
    /// `--red-on-base`: run it also for a story that is not a bug.
    pub force_red_on_base: bool,
}

impl Inputs<'_> {
    /// The part of the inputs the plan reads.
    pub fn change(&self) -> Change<'_> {
        Change {
            repo: self.repo,
            config: self.config,
            base: &self.base,
            head: &self.head,
            story: self.story.as_ref(),
            binding: self.binding.as_ref(),
            force_red_on_base: self.force_red_on_base,
        }
    }
}

/// A test the story's evidence map names, and the criterion it evidences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedTest {
    /// The criterion's number in the Completion Goal.
    pub criterion: u32,
    /// The id as the evidence map writes it.
    pub written: String,
    pub id: TestId,
}

/// What runs.
pub struct Plan {
    /// The maps of the head, with their contract errors (no behaviour check runs while there is one).
    pub maps: maps::Loaded,
    /// The behaviour checks, with why each was selected.
    pub selected: Vec<Selected>,
    /// The mapped tests of the story's evidence map, in its order, each with its criterion.
    pub tests: Vec<MappedTest>,
    /// The packages the change touches, each suite run once (for a story).
    pub touched: Touched,
    /// Red-on-base runs: the story is a bug (or `--red-on-base`) and the change has an evidence map.
    pub red_on_base: bool,
    /// The packages of the mapped tests and of the touched suites (`(dir, test id's rest)`): fetched in
    /// the head's tree, and in the base's when red-on-base runs.
    pub test_packages: BTreeSet<(String, Option<String>)>,
    /// The package the built-in runner's `seed` runs in, when a selected check needs the app.
    pub seed: Option<String>,
    /// The tools the preflight checks.
    pub needs: BTreeSet<Tool>,
}

impl Plan {
    /// Whether any product code runs (and so a sandbox is made and dependencies are fetched).
    pub fn runs_product_code(&self) -> bool {
        !(self.selected.is_empty() && self.tests.is_empty() && self.touched.packages.is_empty())
    }

    /// The mapped tests' ids, in the evidence map's order (what the tests and coverage floors take).
    pub fn test_ids(&self) -> Vec<TestId> {
        self.tests.iter().map(|t| t.id.clone()).collect()
    }

    /// The packages the behaviour checks need in the head's tree (their `test` steps' and the seed's).
    pub fn check_packages(&self) -> BTreeSet<(String, Option<String>)> {
        behaviour::packages(&self.maps.maps, &self.selected)
            .into_iter()
            .chain(self.seed.clone().map(|dir| (dir, None)))
            .collect()
    }
}

/// `aayu verify --select --json`: what the gate would run on a change, as a versioned document
/// (`schemas/select.v1.json`). Scripts read it: its keys do not change within a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Document {
    pub schema_version: u32,
    /// The behaviour checks, in the plan's order.
    pub checks: Vec<PlannedCheck>,
    /// The evidence map's mapped tests, in its order.
    pub tests: Vec<PlannedTest>,
    /// The packages the change touches (the coverage floor's suites), by folder.
    pub packages: Vec<PlannedPackage>,
}

/// A behaviour check of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedCheck {
    /// `<product>/<feature>.<check>`: a sharded gate's unit `check:<id>`.
    pub id: String,
    pub selected_because: Vec<String>,
}

/// A mapped test of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedTest {
    /// As the evidence map writes it.
    pub id: String,
    pub criterion: u32,
}

/// A touched package of the plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PlannedPackage {
    /// Relative to the repository's root; `.` is the root.
    pub dir: String,
    /// The runner that claims it: `cargo`, `go`, `pytest`, `js`.
    pub runner: String,
}

impl Plan {
    /// A selected check's id, `<product>/<feature>.<check>` (a sharded gate's unit `check:<id>`).
    pub fn check_id(&self, s: &Selected) -> String {
        let map = &self.maps.maps[s.map];
        let feature = &map.features[s.feature];
        format!(
            "{}/{}.{}",
            map.product, feature.id.value, feature.checks[s.check].id.value
        )
    }

    /// The plan as `verify --select` prints it.
    pub fn document(&self) -> Document {
        let checks = self
            .selected
            .iter()
            .map(|s| PlannedCheck {
                id: self.check_id(s),
                selected_because: s.because.clone(),
            })
            .collect();
        let tests = self
            .tests
            .iter()
            .map(|t| PlannedTest {
                id: t.written.clone(),
                criterion: t.criterion,
            })
            .collect();
        let mut packages: Vec<PlannedPackage> = self
            .touched
            .packages
            .iter()
            .map(|p| PlannedPackage {
                dir: shown_dir(&p.dir).to_string(),
                runner: p.runner.name().to_string(),
            })
            .collect();
        packages.sort();
        Document {
            schema_version: 1,
            checks,
            tests,
            packages,
        }
    }
}

/// The story's labels: in the action from the API (SPEC §5), else the snapshot's.
pub fn story_labels(change: &Change) -> Vec<String> {
    match change.binding.and_then(|b| b.story_labels.clone()) {
        Some(labels) => labels,
        None => change
            .story
            .map(|s| s.snapshot.meta.labels.clone())
            .unwrap_or_default(),
    }
}

/// Decides what the gate runs on the change; an evidence map naming a test that cannot be (a doc test, a
/// malformed target qualifier or Go name) is the user's to fix before anything runs.
pub fn plan(change: &Change) -> Result<Plan, GateError> {
    let repo = change.repo;
    let root = repo.root();
    let (base, head) = (change.base, change.head);
    let story = change.story;
    let loaded = maps::load_repo(repo)?;
    let selected = if loaded.errors.is_empty() {
        select::by_diff(repo, &loaded.maps, base, head, story.map(|s| s.number))?
    } else {
        Vec::new()
    };
    let mut tests = Vec::new();
    if let Some((story, evidence)) = story.and_then(|s| Some((s, s.evidence.as_ref()?))) {
        for criterion in &evidence.criterion {
            for text in &criterion.tests {
                let contract = |why: String| {
                    GateError::Contract(format!(
                        "{}: criterion {}: {why}",
                        evidence_map::path(story.number),
                        criterion.id
                    ))
                };
                let id = TestId::parse(text).map_err(|e| contract(e.to_string()))?;
                // The runner of the package reads the rest of the id: a doc test, a malformed target
                // qualifier or Go name is refused before anything runs.
                if let Some(found) = crate::runners::package_of(root, &id) {
                    id.check(root, &found.package())
                        .map_err(|e| contract(e.to_string()))?;
                }
                tests.push(MappedTest {
                    criterion: criterion.id,
                    written: text.clone(),
                    id,
                });
            }
        }
    }
    // coverage: the packages the change touches, for a story.
    let touched = match story {
        Some(_) => coverage::touched(root, &repo.changed_paths(base, head)?),
        None => Touched::default(),
    };
    let is_bug = story_labels(change).iter().any(|l| l == "type:bug");
    let red_on_base =
        story.is_some_and(|s| s.evidence.is_some()) && (is_bug || change.force_red_on_base);
    Ok(Plan::of(
        change,
        Chosen {
            maps: loaded,
            selected,
            tests,
            touched,
            red_on_base,
        },
    ))
}

/// What a plan runs, before what follows from it (the fetch, the seed, the preflight's tools).
struct Chosen {
    maps: maps::Loaded,
    selected: Vec<Selected>,
    tests: Vec<MappedTest>,
    touched: Touched,
    red_on_base: bool,
}

impl Plan {
    /// The plan of what was chosen: the packages to fetch, the seed's package and the tools follow.
    fn of(change: &Change, chosen: Chosen) -> Plan {
        let root = change.repo.root();
        let Chosen {
            maps: loaded,
            selected,
            tests,
            touched,
            red_on_base,
        } = chosen;
        let test_packages = tests
            .iter()
            .map(|t| (t.id.package.clone(), Some(t.id.rest.clone())))
            .chain(touched.fetch())
            .collect();
        let seed =
            behaviour::seed_package(&loaded.maps, &selected, root, &change.config.verify.seed);
        let ids: Vec<TestId> = tests.iter().map(|t| t.id.clone()).collect();
        let needs = behaviour::needs(&loaded.maps, &selected, root)
            .into_iter()
            .chain(test_evidence::needs(root, &ids))
            .chain(touched.needs())
            .collect();
        Plan {
            maps: loaded,
            selected,
            tests,
            touched,
            red_on_base,
            test_packages,
            seed,
            needs,
        }
    }

    /// The plan narrowed to a sharded gate's leg: only the units in `ids` (see [`super::units`]) — its
    /// checks, its packages' suites and mapped tests, and red-on-base for its `base:` units.
    pub fn only(self, change: &Change, ids: &BTreeSet<String>) -> Plan {
        let root = change.repo.root();
        let has = |kind: &str, rest: &str| ids.contains(&format!("{kind}:{rest}"));
        let selected = self
            .selected
            .iter()
            .filter(|s| has("check", &self.check_id(s)))
            .cloned()
            .collect();
        let mut touched = self.touched;
        touched.packages.retain(|p| has("suite", shown_dir(&p.dir)));
        let tests: Vec<MappedTest> = self
            .tests
            .into_iter()
            .filter(|t| {
                let dir = super::units::test_dir(root, &t.id);
                has("suite", &dir) || has("tests", &dir)
            })
            .collect();
        let red_on_base = self.red_on_base && ids.iter().any(|id| id.starts_with("base:"));
        Plan::of(
            change,
            Chosen {
                maps: self.maps,
                selected,
                tests,
                touched,
                red_on_base,
            },
        )
    }
}
