//! The floors of the gate, each a stage that judges one side of a change and owns its verdict
//! ([`FloorResult`]): `feature_map` (drift and stale features, over `scan`, which reads each source file
//! once), `behaviour` (the checks, in the sandbox), `test_evidence` (the mapped tests and the criteria they
//! evidence), `red_on_base` (a bug fix's tests on the base) and `weakening` (checks and assertions a change
//! removed or loosened in the maps), `harness` (what a change does to how its tests run) and `coverage` (the touched packages' whole suites, and how much of
//! the change's executable lines they ran).

pub(crate) mod behaviour;
pub(crate) mod canary;
pub(crate) mod coverage;
pub(crate) mod feature_map;
pub(crate) mod harness;
pub(crate) mod red_on_base;
pub(crate) mod scan;
pub(crate) mod test_evidence;
pub(crate) mod weakening;

use crate::sandbox::Network;

/// The floors, by the names SPEC §5 gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    Coverage,
    FeatureMap,
    Weakening,
    Harness,
    Behaviour,
    Tests,
    RedOnBase,
}

impl Floor {
    pub fn as_str(self) -> &'static str {
        match self {
            Floor::Coverage => "coverage",
            Floor::FeatureMap => "feature-map",
            Floor::Weakening => "weakening",
            Floor::Harness => "harness",
            Floor::Behaviour => "behaviour",
            Floor::Tests => "tests",
            Floor::RedOnBase => "red-on-base",
        }
    }
}

/// A floor's result, as SPEC §1 names them (and the pack's `checks[].result` writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Skipped,
    Waived,
    Blocked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skipped => "skipped",
            Verdict::Waived => "waived",
            Verdict::Blocked => "blocked",
        }
    }

    /// Whether the floor holds: everything but `fail` and `blocked`.
    pub fn holds(self) -> bool {
        !matches!(self, Verdict::Fail | Verdict::Blocked)
    }
}

/// The word, padded as a string would be (`{:<8}` in the plain table).
impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a floor decided, with the numbers behind it and the isolation its product code really had
/// (`None`: no product code ran).
#[derive(Debug, Clone, PartialEq)]
pub struct FloorResult {
    pub floor: Floor,
    pub verdict: Verdict,
    pub value: f64,
    pub threshold: f64,
    pub tool: std::borrow::Cow<'static, str>,
    pub detail: String,
    pub network: Option<Network>,
    /// The version the pack names: aayu's, or for the coverage floor the toolchain's (`go1.25.14`).
    pub version: Option<String>,
}

impl FloorResult {
    pub fn new(
        floor: Floor,
        verdict: Verdict,
        tool: impl Into<std::borrow::Cow<'static, str>>,
        detail: String,
    ) -> FloorResult {
        FloorResult {
            floor,
            verdict,
            value: 0.0,
            threshold: 0.0,
            tool: tool.into(),
            detail,
            network: None,
            version: None,
        }
    }

    pub fn numbers(mut self, value: f64, threshold: f64) -> FloorResult {
        self.value = value;
        self.threshold = threshold;
        self
    }

    pub fn network(mut self, network: Network) -> FloorResult {
        self.network = Some(network);
        self
    }
}

/// The verdict and detail of a dated floor with findings (`count`, in words): `waived` by `waiver`
/// (its words), `fail` from the rule's date (`fix`: how to clear it, when there is one), `pass` as
/// advice before it.
pub fn dated(
    rule: crate::config::BlockingDate,
    now: time::OffsetDateTime,
    count: &str,
    waiver: Option<String>,
    fix: &str,
) -> (Verdict, String) {
    if let Some(waiver) = waiver {
        (Verdict::Waived, format!("{count}, {waiver}"))
    } else if rule.blocks_at(now) {
        let since = rule.0.map(|d| d.to_string()).unwrap_or_default();
        let fix = if fix.is_empty() {
            String::new()
        } else {
            format!(": {fix}")
        };
        (
            Verdict::Fail,
            format!("{count} (blocking since {since}){fix}"),
        )
    } else {
        (
            Verdict::Pass,
            format!("{}: {count}", rule.advisory_detail()),
        )
    }
}
