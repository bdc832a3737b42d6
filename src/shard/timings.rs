//! The timings sidecar `timings.json` (`schemas/timings.v1.json`): how long each unit of a sharded gate
//! took, and the estimates the split reads from the recorded sidecars (the median of a unit's own
//! durations, else of its kind's, else a default).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The schema version this binary writes and the only one it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The most units one sidecar may hold.
pub const MAX_UNITS: usize = 100_000;

/// The longest unit id, in bytes.
pub const MAX_ID_BYTES: usize = 1024;

/// How many recorded sidecars the estimates read, newest first; older ones are ignored.
pub const MAX_SIDECARS: usize = 20;

/// `timings.json` v1: the units that ran and their wall time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    pub schema_version: u32,
    pub units: Vec<UnitTime>,
}

/// One unit's wall time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitTime {
    /// The unit's id, such as `check:<product>/<feature>.<check>` or `suite:<package dir>`.
    pub id: String,
    /// Milliseconds.
    pub ms: u64,
}

/// Why a timings sidecar cannot be read. The caller adds which file.
#[derive(Debug, thiserror::Error)]
pub enum TimingsError {
    /// Not JSON, or text after the JSON document.
    #[error("not JSON (line {line}, column {column}): {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON of another shape: a key missing or unknown, a value of the wrong type.
    #[error("`{field}` (line {line}, column {column}): {message}")]
    Shape {
        /// The field's path, such as `units[3].ms`; `.` is the document itself.
        field: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "`schema_version` is {found}; this aayu reads timings of version {SCHEMA_VERSION} only"
    )]
    Version { found: u64 },
    #[error("{count} units; a timings file holds at most {MAX_UNITS}")]
    TooManyUnits { count: usize },
    #[error("`units[{index}].id` is {bytes} bytes long; at most {MAX_ID_BYTES}")]
    IdTooLong { index: usize, bytes: usize },
    #[error("`units[{index}].id` {id:?} holds a control character")]
    ControlCharacter { index: usize, id: String },
    #[error(
        "`units[{index}].id` {id:?} is not a unit id: `check:`, `suite:`, `base:` or `tests:` and a name"
    )]
    NotAUnit { index: usize, id: String },
}

/// What a sidecar that does not fit the type says its version is (read only to word the error).
#[derive(Deserialize)]
struct Version {
    schema_version: u64,
}

impl Timings {
    /// Reads a sidecar strictly: JSON of exactly this shape, version 1, at most [`MAX_UNITS`] units, each id
    /// a unit id of one of the four kinds, at most [`MAX_ID_BYTES`] long and with no control character.
    pub fn parse(bytes: &[u8]) -> Result<Timings, TimingsError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let parsed: Result<Timings, _> = serde_path_to_error::deserialize(&mut de);
        let timings = match parsed {
            Ok(timings) => timings,
            Err(error) => {
                // A document of another version may have another shape: its version is the better news.
                if let Ok(Version { schema_version }) = serde_json::from_slice(bytes)
                    && schema_version != u64::from(SCHEMA_VERSION)
                {
                    return Err(TimingsError::Version {
                        found: schema_version,
                    });
                }
                return Err(shape_error(error.path().to_string(), error.into_inner()));
            }
        };
        de.end()
            .map_err(|error| shape_error(String::new(), error))?;
        if timings.schema_version != SCHEMA_VERSION {
            return Err(TimingsError::Version {
                found: timings.schema_version.into(),
            });
        }
        if timings.units.len() > MAX_UNITS {
            return Err(TimingsError::TooManyUnits {
                count: timings.units.len(),
            });
        }
        for (index, unit) in timings.units.iter().enumerate() {
            let id = &unit.id;
            if id.len() > MAX_ID_BYTES {
                return Err(TimingsError::IdTooLong {
                    index,
                    bytes: id.len(),
                });
            }
            if id.chars().any(char::is_control) {
                return Err(TimingsError::ControlCharacter {
                    index,
                    id: id.clone(),
                });
            }
            if Kind::of(id).is_none() {
                return Err(TimingsError::NotAUnit {
                    index,
                    id: id.clone(),
                });
            }
        }
        Ok(timings)
    }

    /// The sidecar as written: pretty JSON with a final newline, the units sorted by id.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut sorted = self.clone();
        sorted.units.sort();
        // Two structs of strings and integers: serialising them cannot fail.
        let mut bytes = serde_json::to_vec_pretty(&sorted).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// Words a serde error: a syntax error has no field, only a place; a shape error names its field.
fn shape_error(mut field: String, inner: serde_json::Error) -> TimingsError {
    let (line, column) = (inner.line(), inner.column());
    let mut message = inner.to_string();
    // serde_json appends " at line L column C"; the place is reported separately.
    if let Some(cut) = message.rfind(" at line ") {
        message.truncate(cut);
    }
    if inner.classify() != serde_json::error::Category::Data {
        return TimingsError::NotJson {
            line,
            column,
            message,
        };
    }
    if message.starts_with("unknown field") {
        // The path ends with the unknown key, which the message already names: say where it is instead.
        field = match field.rfind('.') {
            Some(0) | None => ".".to_string(),
            Some(cut) => field[..cut].to_string(),
        };
    }
    TimingsError::Shape {
        field,
        line,
        column,
        message,
    }
}

/// The four kinds of unit, by the prefix of their id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `check:<product>/<feature>.<check>`: a behaviour check.
    Check,
    /// `suite:<package dir>`: a touched package's whole test suite, with coverage.
    Suite,
    /// `base:<package dir>`: red-on-base, the package's mapped tests re-run on the base commit.
    Base,
    /// `tests:<package dir>`: the mapped tests of a package the change does not touch.
    Tests,
}

impl Kind {
    /// Every kind, in the order of the enum.
    pub const ALL: [Kind; 4] = [Kind::Check, Kind::Suite, Kind::Base, Kind::Tests];

    /// The kind of a unit id: one of the four prefixes and a colon, then a name that is not empty. `None`
    /// for anything else.
    pub fn of(id: &str) -> Option<Kind> {
        let (prefix, rest) = id.split_once(':')?;
        if rest.is_empty() {
            return None;
        }
        Kind::ALL.into_iter().find(|kind| kind.as_str() == prefix)
    }

    /// The id's prefix, without its colon.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Check => "check",
            Kind::Suite => "suite",
            Kind::Base => "base",
            Kind::Tests => "tests",
        }
    }

    /// The estimate of a unit of this kind when nothing of its kind was recorded: a minute, two for a
    /// suite (a whole test suite, instrumented).
    pub fn default_ms(self) -> u64 {
        match self {
            Kind::Suite => 120_000,
            Kind::Check | Kind::Base | Kind::Tests => 60_000,
        }
    }

    /// The kind's place in [`Kind::ALL`].
    fn index(self) -> usize {
        self as usize
    }
}

/// The timeouts a unit's run is bounded by: no recorded duration counts for more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A behaviour check's timeout, which also bounds red-on-base and the mapped tests' runs.
    pub check_timeout_s: u64,
    /// A package's whole suite's timeout.
    pub suite_timeout_s: u64,
}

impl Limits {
    /// The timeout of a unit of this kind, in milliseconds.
    pub fn timeout_ms(&self, kind: Kind) -> u64 {
        let seconds = match kind {
            Kind::Suite => self.suite_timeout_s,
            Kind::Check | Kind::Base | Kind::Tests => self.check_timeout_s,
        };
        seconds.saturating_mul(1000)
    }
}

/// How long each unit is expected to take, from the recorded sidecars.
#[derive(Debug, Clone, Default)]
pub struct Estimates {
    /// The median of each recorded unit's own durations.
    own: HashMap<String, u64>,
    /// The median of every recorded duration of each kind (in the order of [`Kind::ALL`]), when any.
    kinds: [Option<u64>; 4],
}

impl Estimates {
    /// Estimates from recorded sidecars, newest first: only the first [`MAX_SIDECARS`] are read. Every
    /// duration is clamped to its kind's timeout (a run killed at its timeout took no longer); a unit whose
    /// id has no kind is skipped.
    pub fn new(recorded: &[Timings], limits: Limits) -> Estimates {
        let mut own: HashMap<&str, Vec<u64>> = HashMap::new();
        let mut kinds: [Vec<u64>; 4] = Default::default();
        for unit in recorded.iter().take(MAX_SIDECARS).flat_map(|t| &t.units) {
            let Some(kind) = Kind::of(&unit.id) else {
                continue;
            };
            let ms = unit.ms.min(limits.timeout_ms(kind));
            own.entry(&unit.id).or_default().push(ms);
            kinds[kind.index()].push(ms);
        }
        Estimates {
            own: own
                .into_iter()
                .filter_map(|(id, mut durations)| Some((id.to_string(), median(&mut durations)?)))
                .collect(),
            kinds: kinds.map(|mut durations| median(&mut durations)),
        }
    }

    /// A unit's expected time in milliseconds: the median of its own recorded durations; else the median of
    /// every recorded duration of its kind; else its kind's default ([`Kind::default_ms`]). An id with no
    /// kind is estimated as a check.
    pub fn ms(&self, id: &str) -> u64 {
        if let Some(&ms) = self.own.get(id) {
            return ms;
        }
        let kind = Kind::of(id).unwrap_or(Kind::Check);
        self.kinds[kind.index()].unwrap_or_else(|| kind.default_ms())
    }
}

/// The median; of an even count, the lower of the two middle values, so that estimates are integers and
/// the same on every machine. `None` when there is none.
fn median(durations: &mut [u64]) -> Option<u64> {
    if durations.is_empty() {
        return None;
    }
    let middle = (durations.len() - 1) / 2;
    Some(*durations.select_nth_unstable(middle).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = include_str!("../../schemas/timings.v1.json");

    fn unit(id: &str, ms: u64) -> UnitTime {
        UnitTime {
            id: id.to_string(),
            ms,
        }
    }

    fn timings(units: &[(&str, u64)]) -> Timings {
        Timings {
            schema_version: 1,
            units: units.iter().map(|&(id, ms)| unit(id, ms)).collect(),
        }
    }

    fn schema_errors(document: &serde_json::Value) -> Vec<String> {
        let schema: serde_json::Value =
            serde_json::from_str(SCHEMA).unwrap_or_else(|e| panic!("the schema: {e}"));
        let validator =
            jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the schema: {e}"));
        validator
            .iter_errors(document)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }

    fn parse_err(text: &str) -> String {
        match Timings::parse(text.as_bytes()) {
            Ok(t) => panic!("{text} parsed: {t:?}"),
            Err(e) => e.to_string(),
        }
    }

    const SAMPLE: &str = r#"{
  "schema_version": 1,
  "units": [
    {"id": "base:crates/core", "ms": 4100},
    {"id": "check:notes/search.finds-a-note", "ms": 2300},
    {"id": "suite:.", "ms": 91000},
    {"id": "tests:services/api", "ms": 0}
  ]
}"#;

    #[test]
    fn a_sample_fits_the_schema_and_the_type() {
        let document: serde_json::Value =
            serde_json::from_str(SAMPLE).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schema_errors(&document), Vec::<String>::new());
        let parsed = Timings::parse(SAMPLE.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.units.len(), 4);
        assert_eq!(parsed.units[2], unit("suite:.", 91000));
        // What to_vec writes is a sidecar too.
        let written: serde_json::Value =
            serde_json::from_slice(&parsed.to_vec()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schema_errors(&written), Vec::<String>::new());
    }

    #[test]
    fn an_extra_key_fails_the_schema_and_parse() {
        for text in [
            r#"{"schema_version": 1, "units": [], "shard": 3}"#,
            r#"{"schema_version": 1, "units": [{"id": "suite:.", "ms": 1, "exit": 0}]}"#,
        ] {
            let document: serde_json::Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(schema_errors(&document), Vec::<String>::new(), "{text}");
            assert!(parse_err(text).contains("unknown field"), "{text}");
        }
        assert_eq!(
            parse_err(r#"{"schema_version": 1, "units": [{"id": "suite:.", "ms": 1, "exit": 0}]}"#),
            "`units[0]` (line 1, column 65): unknown field `exit`, expected `id` or `ms`"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 1, "units": [], "shard": 3}"#),
            "`.` (line 1, column 42): unknown field `shard`, expected `schema_version` or `units`"
        );
    }

    #[test]
    fn the_schema_and_parse_refuse_the_same_ids() {
        let long = format!("check:{}", "a".repeat(MAX_ID_BYTES));
        for id in [
            "",
            "check:",
            "check",
            "suite",
            "test:a",
            "Check:a",
            "base:a\nb",
            "tests:\u{7f}",
            "tests:\u{85}",
            &long,
        ] {
            let document = serde_json::json!({"schema_version": 1, "units": [{"id": id, "ms": 1}]});
            assert_ne!(schema_errors(&document), Vec::<String>::new(), "{id:?}");
            assert!(
                Timings::parse(document.to_string().as_bytes()).is_err(),
                "{id:?}"
            );
        }
        for id in ["check:a", "suite:.", "base:a:b", "tests:π/ü", "check: "] {
            let document = serde_json::json!({"schema_version": 1, "units": [{"id": id, "ms": 1}]});
            assert_eq!(schema_errors(&document), Vec::<String>::new(), "{id:?}");
            assert!(
                Timings::parse(document.to_string().as_bytes()).is_ok(),
                "{id:?}"
            );
        }
    }

    #[test]
    fn errors_say_what_is_wrong_and_where() {
        assert_eq!(
            parse_err("{\"schema_version\": 1,\n  \"units\": [}"),
            "not JSON (line 2, column 13): expected value"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 1, "units": []} x"#),
            "not JSON (line 1, column 36): trailing characters"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 2, "units": []}"#),
            "`schema_version` is 2; this aayu reads timings of version 1 only"
        );
        // A newer version's other shape is reported as its version.
        assert_eq!(
            parse_err(r#"{"schema_version": 2, "legs": {}}"#),
            "`schema_version` is 2; this aayu reads timings of version 1 only"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 1, "units": [{"id": "suite:.", "ms": -1}]}"#),
            "`units[0].ms` (line 1, column 58): invalid value: integer `-1`, expected u64"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 1}"#),
            "`.` (line 1, column 21): missing field `units`"
        );
        assert_eq!(
            parse_err(
                r#"{"schema_version": 1, "units": [{"id": "suite:.", "ms": 1}, {"id": "lint:x", "ms": 1}]}"#
            ),
            "`units[1].id` \"lint:x\" is not a unit id: `check:`, `suite:`, `base:` or `tests:` and a name"
        );
        assert_eq!(
            parse_err(r#"{"schema_version": 1, "units": [{"id": "check:a\u0007", "ms": 1}]}"#),
            "`units[0].id` \"check:a\\u{7}\" holds a control character"
        );
        let long = format!(
            r#"{{"schema_version": 1, "units": [{{"id": "check:{}", "ms": 1}}]}}"#,
            "a".repeat(1019)
        );
        assert_eq!(
            parse_err(&long),
            "`units[0].id` is 1025 bytes long; at most 1024"
        );
    }

    #[test]
    fn at_most_100000_units() {
        let mut many = timings(&[]);
        many.units = (0..MAX_UNITS)
            .map(|i| unit(&format!("check:c/f.{i}"), 1))
            .collect();
        assert!(Timings::parse(&many.to_vec()).is_ok());
        many.units.push(unit("suite:.", 1));
        match Timings::parse(&many.to_vec()) {
            Err(e) => assert_eq!(
                e.to_string(),
                "100001 units; a timings file holds at most 100000"
            ),
            Ok(_) => panic!("100001 units parsed"),
        }
    }

    #[test]
    fn to_vec_sorts_and_ends_with_a_newline() {
        let t = timings(&[("suite:b", 2), ("check:a/f.c", 1), ("base:b", 3)]);
        let text = String::from_utf8(t.to_vec()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "{\n  \"schema_version\": 1,\n  \"units\": [\n    {\n      \"id\": \"base:b\",\n      \"ms\": 3\n    },\n    {\n      \"id\": \"check:a/f.c\",\n      \"ms\": 1\n    },\n    {\n      \"id\": \"suite:b\",\n      \"ms\": 2\n    }\n  ]\n}\n"
        );
        let again = Timings::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.to_vec(), text.as_bytes());
    }

    #[test]
    fn kinds() {
        assert_eq!(Kind::of("check:p/f.c"), Some(Kind::Check));
        assert_eq!(Kind::of("suite:."), Some(Kind::Suite));
        assert_eq!(Kind::of("base:crates/a"), Some(Kind::Base));
        assert_eq!(Kind::of("tests:go/x"), Some(Kind::Tests));
        assert_eq!(Kind::of("tests:"), None);
        assert_eq!(Kind::of("suites:a"), None);
        assert_eq!(Kind::of("suite"), None);
        for kind in Kind::ALL {
            assert_eq!(Kind::of(&format!("{}:x", kind.as_str())), Some(kind));
        }
    }

    const LIMITS: Limits = Limits {
        check_timeout_s: 600,
        suite_timeout_s: 1800,
    };

    #[test]
    fn a_unit_is_estimated_by_its_own_median() {
        let recorded = [
            timings(&[("check:a/f.x", 10), ("suite:a", 100)]),
            timings(&[("check:a/f.x", 30), ("suite:a", 300)]),
            timings(&[("check:a/f.x", 20)]),
            timings(&[("check:a/f.x", 40)]),
        ];
        let estimates = Estimates::new(&recorded, LIMITS);
        // 10 20 30 40: the lower middle.
        assert_eq!(estimates.ms("check:a/f.x"), 20);
        assert_eq!(estimates.ms("suite:a"), 100);
        let estimates = Estimates::new(&recorded[..3], LIMITS);
        assert_eq!(estimates.ms("check:a/f.x"), 20);
    }

    #[test]
    fn an_unrecorded_unit_is_estimated_by_its_kind_then_the_default() {
        let recorded = [timings(&[
            ("check:a/f.x", 5),
            ("check:a/f.y", 7),
            ("check:a/f.z", 9),
            ("base:a", 1000),
        ])];
        let estimates = Estimates::new(&recorded, LIMITS);
        assert_eq!(estimates.ms("check:b/g.new"), 7);
        assert_eq!(estimates.ms("base:b"), 1000);
        assert_eq!(estimates.ms("suite:b"), 120_000);
        assert_eq!(estimates.ms("tests:b"), 60_000);
        let none = Estimates::new(&[], LIMITS);
        for kind in Kind::ALL {
            assert_eq!(none.ms(&format!("{}:x", kind.as_str())), kind.default_ms());
        }
        assert_eq!(none.ms("no kind"), 60_000);
    }

    #[test]
    fn durations_are_clamped_to_their_timeout() {
        let recorded = [
            timings(&[
                ("check:a/f.x", 5_000_000),
                ("suite:a", 5_000_000),
                ("tests:a", 700_000),
            ]),
            timings(&[
                ("check:a/f.x", 5_000_000),
                ("suite:a", 5_000_000),
                ("base:a", 600_001),
            ]),
        ];
        let estimates = Estimates::new(&recorded, LIMITS);
        assert_eq!(estimates.ms("check:a/f.x"), 600_000);
        assert_eq!(estimates.ms("suite:a"), 1_800_000);
        assert_eq!(estimates.ms("tests:a"), 600_000);
        assert_eq!(estimates.ms("base:a"), 600_000);
        // The kind's median is of clamped durations too.
        assert_eq!(estimates.ms("suite:other"), 1_800_000);
    }

    #[test]
    fn only_the_newest_20_sidecars_are_read() {
        let mut recorded: Vec<Timings> = (0..MAX_SIDECARS)
            .map(|_| timings(&[("suite:a", 10)]))
            .collect();
        recorded.extend((0..30).map(|_| timings(&[("suite:a", 99), ("suite:old", 99)])));
        let estimates = Estimates::new(&recorded, LIMITS);
        assert_eq!(estimates.ms("suite:a"), 10);
        // The older sidecars' unit is not known at all: its kind's median is the newer ones'.
        assert_eq!(estimates.ms("suite:old"), 10);
    }
}
