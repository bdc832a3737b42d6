//! Red-on-base (SPEC §5): a bug fix's tests must fail on the code before the fix. The merge base is
//! checked out into a temporary folder, the pull request's changed test-only files are put on top, and the
//! mapped tests run there. Each criterion is red (a mapped test failed), green (all passed) or
//! inconclusive (a test did not build, was not found, did not run, or the history is too shallow).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::floors::test_evidence::{self, Outcome, TestId};
use crate::git::Repo;
use crate::runners::harness::{Change, Kind};
use crate::story::evidence_map::EvidenceMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Red,
    Green,
    Inconclusive,
}

#[derive(Debug, Clone, Serialize)]
pub struct TestLine {
    pub id: String,
    pub result: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CriterionVerdict {
    pub id: u32,
    pub verdict: Verdict,
    pub reason: String,
    pub tests: Vec<TestLine>,
}

/// `reports/red-on-base.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub base: String,
    pub criteria: Vec<CriterionVerdict>,
}

impl Report {
    pub fn green(&self) -> Vec<u32> {
        self.criteria
            .iter()
            .filter(|c| c.verdict == Verdict::Green)
            .map(|c| c.id)
            .collect()
    }
}

/// The base a bug fix's tests run on: the merge base checked out into a temporary folder with the pull
/// request's changed test-only files on top — or why it could not be made (then every criterion is
/// inconclusive).
pub struct Prepared {
    base: String,
    tree: Result<tempfile::TempDir, String>,
    /// The head's harness files the base does not have: a test they can touch is not run on the base.
    unmet: Vec<Change>,
    _interrupted: Option<crate::sandbox::cleanup::Registered>,
}

impl Prepared {
    /// The merge base the folder holds (empty when there is none).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The folder the tests run in, when it could be made.
    pub fn root(&self) -> Option<&Path> {
        self.tree.as_ref().ok().map(tempfile::TempDir::path)
    }
}

/// The merge base of `base` and `head` as red-on-base names it (empty when there is none).
pub fn base_of(repo: &Repo, base: &str, head: &str) -> String {
    match repo.merge_base(base, head) {
        Ok(Some(oid)) => oid.to_string(),
        _ => String::new(),
    }
}

/// Checks the merge base of `base` and `head` out into a temporary folder and puts the pull request's
/// changed test-only files on top — each a test file of its own package's stack, never one of the
/// change's harness files (`harness`): the base runs its own conftest and configuration. Every file is written beneath that folder without following a link the
/// base's tree may hold. Nothing runs yet: the dependencies of this tree are fetched with the others'
/// before any test or check.
pub fn prepare(repo: &Repo, base: &str, head: &str, harness: &[Change]) -> Prepared {
    let failed = |base: String, why: String| Prepared {
        base,
        tree: Err(why),
        unmet: Vec::new(),
        _interrupted: None,
    };
    let merge_base = match repo.merge_base(base, head) {
        Ok(Some(oid)) => oid,
        Ok(None) | Err(_) => {
            let why = if repo.is_shallow() {
                "the history is too shallow to find the merge base: fetch the full history (`fetch-depth: 0` in actions/checkout)"
            } else {
                "the base and head have no merge base"
            };
            return failed(String::new(), why.to_string());
        }
    };
    let base_sha = merge_base.to_string();
    let folder = tempfile::Builder::new()
        .prefix("aayu-red-on-base-")
        .tempdir();
    let prepared = folder.map_err(|e| e.to_string()).and_then(|folder| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        repo.export_tree(merge_base, folder.path())
            .map_err(|e| e.to_string())?;
        // The pull request's changed test-only files, as they are at the head.
        let changed = repo
            .changed_paths(&base_sha, head)
            .map_err(|e| e.to_string())?;
        for path in changed
            .iter()
            .filter(|p| crate::floors::harness::overlays(repo, (&base_sha, head), p, harness))
        {
            match repo.file_at(head, path).map_err(|e| e.to_string())? {
                Some(bytes) => crate::safe_fs::write(folder.path(), path, &bytes),
                None => crate::safe_fs::remove(folder.path(), path),
            }
            .map_err(|e| format!("cannot put the pull request's `{path}` on the base: {e}"))?;
        }
        Ok(folder)
    });
    match prepared {
        Ok(folder) => Prepared {
            unmet: harness
                .iter()
                .filter(|c| !matches!(c.kind, Kind::InstalledPlugin | Kind::Overwritten))
                .filter(|c| repo.id_at(&base_sha, &c.file).is_none())
                .cloned()
                .collect(),
            base: base_sha,
            _interrupted: Some(crate::sandbox::cleanup::dir(folder.path())),
            tree: Ok(folder),
        },
        Err(e) => failed(base_sha, format!("the base could not be checked out: {e}")),
    }
}

/// What the mapped tests gave on the base, by the id the evidence map writes; or why none could run
/// there (then every criterion is inconclusive). A sharded gate's legs each run some packages' tests
/// and the merge reads them back, so it is data.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum OnBase {
    Ran(#[serde(with = "crate::runners::by_id")] BTreeMap<TestId, test_evidence::TestResult>),
    Refused(String),
}

impl OnBase {
    /// Adds another run's results (a shard's): a refusal wins, the first one kept.
    pub fn absorb(&mut self, other: OnBase) {
        match (&mut *self, other) {
            (OnBase::Refused(_), _) => {}
            (_, refused @ OnBase::Refused(_)) => *self = refused,
            (OnBase::Ran(mine), OnBase::Ran(theirs)) => mine.extend(theirs),
        }
    }
}

/// Runs the mapped tests (as the evidence map writes them) on the prepared base, group by group (a
/// sharded gate's `base:` units: one package's tests each), telling `took` how long each group took. A
/// cargo test that the head's run found in one target (`head`) runs in that same target on the base:
/// another target's test of the same path failing there shows nothing about this one.
pub fn run_on_base(
    prepared: &Prepared,
    groups: &[(String, Vec<TestId>)],
    run: &test_evidence::Run,
    head: &BTreeMap<TestId, test_evidence::TestResult>,
    took: &mut dyn FnMut(&str, std::time::Duration),
) -> OnBase {
    let folder = match &prepared.tree {
        Ok(folder) => folder,
        Err(why) => return OnBase::Refused(why.clone()),
    };
    // The base builds in a folder of its own, seeded with the head's build so that each registry and git
    // dependency is compiled once per run. Every file of the base is made newer than that copy first, so
    // cargo rebuilds every package of the base's own (a path package is judged fresh by its files'
    // times: left older, the head's build would run on the base).
    if let Err(e) =
        crate::sandbox::build_cache::touch_tree(folder.path(), std::time::SystemTime::now())
    {
        return OnBase::Refused(format!(
            "the base's files could not be made newer than the head's build: {e}"
        ));
    }
    let _ = run.sandbox.seed_target(0, BASE_TARGET);
    let on_base = test_evidence::Run {
        sandbox: run.sandbox,
        root: folder.path(),
        timeout: run.timeout,
        target: Some(BASE_TARGET),
        heartbeat: run.heartbeat,
        canaries: false,
    };
    let mut found = BTreeMap::new();
    for (group, ids) in groups {
        let started = std::time::Instant::now();
        // The id that runs on the base, by the id the evidence map writes.
        let pinned: BTreeMap<&TestId, TestId> = ids
            .iter()
            .map(|id| (id, pinned_to_head_target(id, head)))
            .collect();
        // A test that a harness file the base lacks can touch has no result there to trust: the base
        // runs its own harness, and with the head's the head could decide its own red.
        let touches = |id: &TestId, c: &crate::runners::harness::Change| {
            let runner = crate::runners::package_of(folder.path(), id).map(|f| f.runner.name());
            c.applies_to_tests(&id.package, runner)
        };
        let (unmet, pinned): (BTreeMap<&TestId, TestId>, BTreeMap<&TestId, TestId>) = pinned
            .into_iter()
            .partition(|(id, _)| prepared.unmet.iter().any(|c| touches(id, c)));
        for id in unmet.keys() {
            let files: std::collections::BTreeSet<String> = prepared
                .unmet
                .iter()
                .filter(|c| touches(id, c))
                .map(|c| format!("`{}`", crate::runners::harness::visible(&c.file)))
                .collect();
            let files: Vec<String> = files.into_iter().collect();
            found.insert(
                (*id).clone(),
                test_evidence::TestResult::of(Outcome::NotRun(format!(
                    "it needs {}, harness the pull request adds: the base runs its own",
                    files.join(", ")
                ))),
            );
        }
        let to_run: Vec<TestId> = pinned.values().cloned().collect();
        let results = test_evidence::run_tests(&on_base, &to_run, &BTreeMap::new());
        found.extend(
            pinned
                .into_iter()
                .filter_map(|(id, runs)| Some((id.clone(), results.get(&runs)?.clone()))),
        );
        took(group, started.elapsed());
    }
    OnBase::Ran(found)
}

/// What red-on-base gives where none of its tests ran: every criterion inconclusive when the change has
/// no merge base (as [`prepare`] would find), else no result yet.
pub fn without_runs(repo: &Repo, base: &str, head: &str) -> OnBase {
    if base_of(repo, base, head).is_empty() {
        let why = if repo.is_shallow() {
            "the history is too shallow to find the merge base: fetch the full history (`fetch-depth: 0` in actions/checkout)"
        } else {
            "the base and head have no merge base"
        };
        return OnBase::Refused(why.to_string());
    }
    OnBase::Ran(BTreeMap::new())
}

/// Each criterion's verdict from what its mapped tests gave on the base `base_sha`.
pub fn judge(base_sha: &str, evidence: &EvidenceMap, on_base: &OnBase) -> Report {
    let results = match on_base {
        OnBase::Ran(results) => results,
        OnBase::Refused(reason) => {
            return Report {
                schema_version: 1,
                base: base_sha.to_string(),
                criteria: evidence
                    .criterion
                    .iter()
                    .map(|c| CriterionVerdict {
                        id: c.id,
                        verdict: Verdict::Inconclusive,
                        reason: reason.clone(),
                        tests: Vec::new(),
                    })
                    .collect(),
            };
        }
    };
    let criteria = evidence
        .criterion
        .iter()
        .map(|criterion| {
            let lines: Vec<TestLine> = criterion
                .tests
                .iter()
                .filter_map(|text| TestId::parse(text).ok())
                .map(|id| {
                    let outcome = results
                        .get(&id)
                        .map_or(Outcome::NotRun("no result".to_string()), |r| {
                            r.outcome.clone()
                        });
                    TestLine {
                        id: id.to_string(),
                        result: outcome.word().to_string(),
                        detail: outcome.detail().to_string(),
                    }
                })
                .collect();
            let (verdict, reason) = if lines.is_empty() {
                (Verdict::Inconclusive, NO_TEST.to_string())
            } else if let Some(failed) = lines.iter().find(|l| l.result == "failed") {
                (Verdict::Red, format!("`{}` fails on the base", failed.id))
            } else if lines.iter().all(|l| l.result == "passed") {
                (
                    Verdict::Green,
                    "every mapped test passes on the base: they do not show the fix".to_string(),
                )
            } else {
                let first = lines
                    .iter()
                    .find(|l| l.result != "passed")
                    .map(|l| format!("`{}` {} on the base: {}", l.id, l.result, l.detail));
                (Verdict::Inconclusive, first.unwrap_or_default())
            };
            CriterionVerdict {
                id: criterion.id,
                verdict,
                reason,
                tests: lines,
            }
        })
        .collect();
    Report {
        schema_version: 1,
        base: base_sha.to_string(),
        criteria,
    }
}

/// The id that names the very test the head's run found (a cargo id qualified with the target that held
/// it), when the evidence map's was less precise; else the id itself.
fn pinned_to_head_target(
    id: &TestId,
    head: &BTreeMap<TestId, test_evidence::TestResult>,
) -> TestId {
    match head.get(id).and_then(|r| r.pinned.as_ref()) {
        Some(rest) => TestId {
            package: id.package.clone(),
            rest: rest.clone(),
        },
        None => id.clone(),
    }
}

/// Why a criterion that maps no test is inconclusive.
const NO_TEST: &str = "the criterion maps no test";

/// The name of the base's build folder in the sandbox.
const BASE_TARGET: &str = "base-target";

/// A test's result word as a sentence says it: `not-built` → `did not build`.
fn said_result(word: &str) -> &str {
    match word {
        "not-built" => "did not build",
        "not-found" => "was not found",
        "not-run" => "did not run",
        other => other,
    }
}

/// The red-on-base floor's verdict: it passes when no criterion is green and one is red; with none green
/// and none red it is `skipped`, saying why nothing was shown red (or that nothing was mapped); a green
/// one makes it `skipped` (advisory) before `red_on_base_blocking_from` and `fail` from that UTC day on.
pub fn floor(
    report: &Report,
    rule: crate::config::BlockingDate,
    now: time::OffsetDateTime,
    network: crate::sandbox::Network,
) -> crate::floors::FloorResult {
    use crate::floors::{Floor, FloorResult, Verdict as FloorVerdict};
    let tool = "aayu red-on-base";
    let green = report.green();
    let count = |v: Verdict| report.criteria.iter().filter(|c| c.verdict == v).count();
    if green.is_empty() {
        let base = report.base.get(..12).unwrap_or(&report.base);
        let (red, inconclusive) = (count(Verdict::Red), count(Verdict::Inconclusive));
        // What it proved decides the word: a red criterion shows the fix; inconclusive ones alone show
        // nothing, and a story whose criteria map no test has nothing to show.
        let mapped: Vec<&CriterionVerdict> = report
            .criteria
            .iter()
            .filter(|c| !c.tests.is_empty())
            .collect();
        let (verdict, detail) = if red > 0 {
            (
                FloorVerdict::Pass,
                format!("{red} red, {inconclusive} inconclusive on base {base}"),
            )
        } else if mapped.is_empty() {
            // No test ran: the story maps none, or the base could not be made (its reason says why).
            let mut reasons: Vec<&str> = report
                .criteria
                .iter()
                .map(|c| c.reason.as_str())
                .filter(|r| *r != NO_TEST)
                .collect();
            reasons.dedup();
            if reasons.is_empty() {
                (
                    FloorVerdict::Skipped,
                    "no mapped test to run on the base".to_string(),
                )
            } else {
                (
                    FloorVerdict::Skipped,
                    format!("nothing shown red: {}", reasons.join("; ")),
                )
            }
        } else {
            let why: Vec<String> = mapped
                .iter()
                .flat_map(|c| c.tests.iter())
                .filter(|t| t.result != "passed" && t.result != "failed")
                .map(|t| format!("{} {} on base ({})", t.id, said_result(&t.result), t.detail))
                .collect();
            (
                FloorVerdict::Skipped,
                format!("nothing shown red: {}", why.join("; ")),
            )
        };
        return FloorResult::new(Floor::RedOnBase, verdict, tool, detail).network(network);
    }
    let list = green
        .iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let (verdict, detail) = if rule.blocks_at(now) {
        (
            FloorVerdict::Fail,
            format!("green on base: criteria {list} (their tests do not show the fix)"),
        )
    } else {
        (
            FloorVerdict::Skipped,
            format!("{}: green on base: criteria {list}", rule.advisory_detail()),
        )
    };
    FloorResult::new(Floor::RedOnBase, verdict, tool, detail)
        .numbers(green.len() as f64, 0.0)
        .network(network)
}

/// The floor when it does not run, with why.
pub fn skipped(detail: &str) -> crate::floors::FloorResult {
    crate::floors::FloorResult::new(
        crate::floors::Floor::RedOnBase,
        crate::floors::Verdict::Skipped,
        "aayu red-on-base",
        detail.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::floors::Verdict as FloorVerdict;

    fn line(id: &str, result: &str, detail: &str) -> TestLine {
        TestLine {
            id: id.to_string(),
            result: result.to_string(),
            detail: detail.to_string(),
        }
    }

    fn criterion(
        id: u32,
        verdict: Verdict,
        reason: &str,
        tests: Vec<TestLine>,
    ) -> CriterionVerdict {
        CriterionVerdict {
            id,
            verdict,
            reason: reason.to_string(),
            tests,
        }
    }

    fn judged(criteria: Vec<CriterionVerdict>) -> (FloorVerdict, String) {
        let report = Report {
            schema_version: 1,
            base: "0123456789abcdef".to_string(),
            criteria,
        };
        let floor = floor(
            &report,
            crate::config::BlockingDate(None),
            time::OffsetDateTime::UNIX_EPOCH,
            crate::sandbox::Network::Isolated,
        );
        (floor.verdict, floor.detail)
    }

    /// What the floor proved decides its word: red shows the fix; inconclusive alone shows nothing, and says
    /// why; no mapped test has nothing to show. Both hold (the gate stays proven).
    #[test]
    fn red_on_base_says_what_it_proved() {
        let red = criterion(1, Verdict::Red, "", vec![line(".:a", "failed", "boom")]);
        let new_fn = || {
            criterion(
                2,
                Verdict::Inconclusive,
                "",
                vec![line(".:x", "not-built", "cannot find function `strict`")],
            )
        };
        assert_eq!(
            judged(vec![red, new_fn()]),
            (
                FloorVerdict::Pass,
                "1 red, 1 inconclusive on base 0123456789ab".to_string()
            )
        );
        assert_eq!(
            judged(vec![new_fn()]),
            (
                FloorVerdict::Skipped,
                "nothing shown red: .:x did not build on base (cannot find function `strict`)"
                    .to_string()
            )
        );
        assert_eq!(
            judged(vec![criterion(
                1,
                Verdict::Inconclusive,
                NO_TEST,
                Vec::new()
            )]),
            (
                FloorVerdict::Skipped,
                "no mapped test to run on the base".to_string()
            )
        );
        let shallow = "the history is too shallow to find the merge base";
        assert_eq!(
            judged(vec![criterion(
                1,
                Verdict::Inconclusive,
                shallow,
                Vec::new()
            )])
            .1,
            format!("nothing shown red: {shallow}")
        );
        assert!(FloorVerdict::Skipped.holds());
    }
}
