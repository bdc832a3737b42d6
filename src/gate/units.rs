//! A gate's units, for a sharded gate (`docs/action.md`): each selected behaviour check is
//! `check:<product>/<feature>.<check>`; each touched package's suite (the coverage run, with the mapped
//! tests it gives) `suite:<dir>`; the mapped tests of a package the change does not touch `tests:<dir>`;
//! red-on-base's run of a package's mapped tests on the base `base:<dir>`. A `base:` unit shares its
//! package's leg (its build folder is seeded from the head's), so the split places groups, not units.

use std::collections::BTreeMap;
use std::path::Path;

use super::plan::Plan;
use crate::floors::test_evidence::TestId;
use crate::sandbox::toolchain::shown_dir;

/// A unit of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// `<kind>:<rest>`.
    pub id: String,
    /// `check`, `suite`, `base` or `tests`.
    pub kind: &'static str,
    /// The package's folder (`.` is the root); `None` for a check.
    pub package: Option<String>,
    /// Units of one group share a leg: the checks of one `<feature>.<check>`, a package's suite or tests
    /// with its base.
    pub group: String,
}

/// The folder a mapped test's unit is named by: its package's, as the runners find it (`.` is the
/// root), else the folder the id names.
pub fn test_dir(root: &Path, id: &TestId) -> String {
    match crate::runners::package_of(root, id) {
        Some(found) => shown_dir(&found.dir).to_string(),
        None => shown_dir(&id.package).to_string(),
    }
}

/// Every unit of `plan`, checks first (in the plan's order), then by package folder: its suite or its
/// tests, then its base.
pub fn units(plan: &Plan, root: &Path) -> Vec<Unit> {
    let mut units: Vec<Unit> = plan
        .selected
        .iter()
        .map(|s| {
            let id = format!("check:{}", plan.check_id(s));
            // Checks of one `<feature>.<check>` write one `behaviour/<feature>.<check>/` folder (SPEC §4
            // names no product there): they share a leg, as they share the single job's folder.
            let map = &plan.maps.maps[s.map];
            let feature = &map.features[s.feature];
            let folder = format!("{}.{}", feature.id.value, feature.checks[s.check].id.value);
            Unit {
                group: format!("behaviour/{folder}"),
                id,
                kind: "check",
                package: None,
            }
        })
        .collect();
    // By folder: whether the change touches it (a suite), and whether a mapped test lives there.
    let mut packages: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for p in &plan.touched.packages {
        packages.entry(shown_dir(&p.dir).to_string()).or_default().0 = true;
    }
    for t in &plan.tests {
        packages.entry(test_dir(root, &t.id)).or_default().1 = true;
    }
    for (dir, (suite, mapped)) in packages {
        let group = format!("package:{dir}");
        let mut add = |kind: &'static str| {
            units.push(Unit {
                id: format!("{kind}:{dir}"),
                kind,
                package: Some(dir.clone()),
                group: group.clone(),
            })
        };
        add(if suite { "suite" } else { "tests" });
        if mapped && plan.red_on_base {
            add("base");
        }
    }
    units
}
