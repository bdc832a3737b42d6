//! The maintain brief (the seed's "Keeping the map honest"): after `verify --map` or `verify --check`, what
//! drifted, which checks fail or are blocked, which features are stale, what the maintainer may edit and
//! the rules it keeps — posted as a new comment on one tracking issue ([`tracker`]), ending with the digest
//! of its report so that `--maintain drift` posts the same report once.

pub mod post;
pub mod tracker;

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::floors::behaviour::{BehaviourReport, Status};
use crate::floors::feature_map::{Drift, MapReport, Stale};
use crate::maps::ContractError;
use crate::output::markdown::{cell, code};

/// The marker in the tracking issue's body.
pub const ISSUE_MARKER: &str = "<!-- aayudha:verify-maintain -->";
/// The label of the tracking issue.
pub const LABEL: &str = "aayudha:verify-maintain";
/// The digest line's opening; the hex digest and ` -->` follow.
const DIGEST_OPEN: &str = "<!-- aayudha:digest ";
/// How many items of a list the brief shows; the digest covers them all.
const SHOWN: usize = 50;

/// A failing or blocked check, as the brief and its digest hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefCheck {
    pub product: String,
    pub feature: String,
    pub check: String,
    pub status: &'static str,
    pub reason: String,
}

/// What one run found that the maintainer should act on.
#[derive(Debug, Clone, Default)]
pub struct Brief {
    /// The command that found it (`aayu verify --map`).
    pub run: String,
    /// The commit it ran on, when known.
    pub head: Option<String>,
    pub drift: Vec<Drift>,
    /// Contract errors of the maps: a broken map is upkeep too.
    pub errors: Vec<ContractError>,
    pub checks: Vec<BriefCheck>,
    pub stale: Vec<Stale>,
    /// The skill directories (`…/.agents/skills/verify-<product>/`): the only places the maintainer edits.
    pub scope: Vec<String>,
}

/// Who the brief is addressed to, which decides its first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// A person's token outside Actions: the maintainer's app is mentioned (or, for Amp, told how to run).
    Maintainer(Maintainer),
    /// No `[verify] maintainer` is set: nobody to mention.
    NoMaintainer,
    /// A GitHub Actions run: a record; an Actions run never wakes an agent app.
    ActionsRecord,
    /// A token that is not a person's (an app's): a record, since apps answer only the people who
    /// connected them.
    BotRecord,
}

/// The agent apps `[verify] maintainer` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maintainer {
    ClaudeCode,
    Codex,
    Cursor,
    Amp,
}

impl Maintainer {
    /// `[verify] maintainer`'s value; `Ok(None)` for empty, `Err` for a name aayu does not know.
    pub fn parse(text: &str) -> Result<Option<Maintainer>, UnknownMaintainer> {
        match text.trim() {
            "" => Ok(None),
            "claude-code" => Ok(Some(Maintainer::ClaudeCode)),
            "codex" => Ok(Some(Maintainer::Codex)),
            "cursor" => Ok(Some(Maintainer::Cursor)),
            "amp" => Ok(Some(Maintainer::Amp)),
            other => Err(UnknownMaintainer {
                name: other.to_string(),
            }),
        }
    }

    /// The mention that wakes the app on GitHub; Amp has none.
    pub fn mention(self) -> Option<&'static str> {
        match self {
            Maintainer::ClaudeCode => Some("@claude"),
            Maintainer::Codex => Some("@codex"),
            Maintainer::Cursor => Some("@cursor"),
            Maintainer::Amp => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Maintainer::ClaudeCode => "Claude Code",
            Maintainer::Codex => "Codex",
            Maintainer::Cursor => "Cursor",
            Maintainer::Amp => "Amp",
        }
    }
}

/// A `[verify] maintainer` that names no agent app aayu knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`[verify] maintainer = \"{name}\"` is not an agent app aayu knows: write amp, cursor, claude-code or codex (or \"\" for none)"
)]
pub struct UnknownMaintainer {
    name: String,
}

/// The configuration is the user's to fix (exit 2).
impl crate::failure::Diagnose for UnknownMaintainer {
    fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::Usage
    }

    fn hint(&self) -> Option<String> {
        Some("set `[verify] maintainer` in `.aayudha/config.toml`".to_string())
    }
}

impl Brief {
    /// A brief of a map run and/or a check run.
    pub fn new(
        run: &str,
        head: Option<String>,
        map: Option<&MapReport>,
        checks: Option<&BehaviourReport>,
        scope: Vec<String>,
    ) -> Brief {
        let checks = checks
            .map(|r| {
                r.checks
                    .iter()
                    .filter(|c| matches!(c.status, Status::Failed | Status::Blocked))
                    .map(|c| BriefCheck {
                        product: c.product.clone(),
                        feature: c.feature.clone(),
                        check: c.check.clone(),
                        status: c.status.as_str(),
                        reason: c.reason.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Brief {
            run: run.to_string(),
            head,
            drift: map.map(|m| m.drift.clone()).unwrap_or_default(),
            errors: map.map(|m| m.errors.clone()).unwrap_or_default(),
            checks,
            stale: map.map(|m| m.stale.clone()).unwrap_or_default(),
            scope,
        }
    }

    /// Nothing drifted, no check failed or was blocked, no map is broken: `--maintain drift` stays silent.
    pub fn is_clean(&self) -> bool {
        self.drift.is_empty() && self.checks.is_empty() && self.errors.is_empty()
    }

    /// The SHA-256 of the canonical JSON (sorted keys, no whitespace) of `{"drift": [...], "checks":
    /// [{"feature", "check", "status", "reason"}]}`; a run with contract errors adds `"errors"` (an
    /// addition: without errors the document is exactly the contract's).
    pub fn digest(&self) -> String {
        let drift: Vec<Value> = self
            .drift
            .iter()
            .map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
            .collect();
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| {
                json!({"feature": c.feature, "check": c.check, "status": c.status, "reason": c.reason})
            })
            .collect();
        let mut report = json!({"drift": drift, "checks": checks});
        if !self.errors.is_empty() {
            report["errors"] = serde_json::to_value(&self.errors).unwrap_or(Value::Null);
        }
        crate::hash::bytes(canonical(&report).as_bytes())
    }

    /// The brief's Markdown. Every text that comes from the repository or a check is a code span.
    pub fn render(&self, audience: Audience, repo: &str) -> String {
        let mut text = String::new();
        match audience {
            Audience::Maintainer(m) => match m.mention() {
                Some(mention) => {
                    let _ = writeln!(
                        text,
                        "{mention} please bring the feature maps of {} up to date, as this brief says.\n",
                        code(repo)
                    );
                }
                None => {
                    let _ = writeln!(
                        text,
                        "For {}: Amp has no mention on GitHub. Run this brief in Amp (for example `amp -x` with this comment's link) to bring the feature maps of {} up to date.\n",
                        m.name(),
                        code(repo)
                    );
                }
            },
            Audience::NoMaintainer => text.push_str(
                "No maintainer is set (`[verify] maintainer` in `.aayudha/config.toml`: amp, cursor, claude-code or codex), so no agent app is asked. Hand this brief to one.\n\n",
            ),
            Audience::ActionsRecord => text.push_str(
                "A record, with no mention: it was posted from GitHub Actions, and an Actions run never wakes an agent app. The loop that hands the brief to an agent runs in the agent tool, on a person's token (`aayu verify --map --maintain drift`).\n\n",
            ),
            Audience::BotRecord => text.push_str(
                "A record, with no mention: it was posted with an app's token, and agent apps answer only the people who connected them. Run `aayu verify --map --maintain drift` with a person's token to hand it to an agent.\n\n",
            ),
        }
        let _ = writeln!(text, "### aayudha maintain brief — {}\n", self.headline());
        let _ = write!(text, "From {}", code(&self.run));
        if let Some(head) = &self.head {
            let _ = write!(text, " at {}", code(head));
        }
        text.push_str(".\n\n");
        if !self.drift.is_empty() {
            let _ = writeln!(
                text,
                "**Drift** ({}): bring the map in line with the source.\n",
                self.drift.len()
            );
            list(&mut text, &self.drift, |d| {
                code(&format!(
                    "{}:{}: {}: {}",
                    d.file,
                    d.line,
                    d.kind.as_str(),
                    d.detail
                ))
            });
        }
        if !self.errors.is_empty() {
            let _ = writeln!(
                text,
                "**Contract errors** ({}): the map cannot be read until they are fixed.\n",
                self.errors.len()
            );
            list(&mut text, &self.errors, |e| {
                code(&format!("{}:{}: {}", e.file, e.line, e.message))
            });
        }
        if !self.checks.is_empty() {
            let _ = writeln!(
                text,
                "**Failing and blocked checks** ({})\n\n| Check | Status | Reason |\n|---|---|---|",
                self.checks.len()
            );
            for c in self.checks.iter().take(SHOWN) {
                let _ = writeln!(
                    text,
                    "| {} | {} | {} |",
                    cell(&format!("{}.{}.{}", c.product, c.feature, c.check)),
                    cell(c.status),
                    cell(&c.reason)
                );
            }
            more(&mut text, self.checks.len());
            text.push('\n');
        }
        if !self.stale.is_empty() {
            let _ = writeln!(
                text,
                "**Stale features** ({}): verify them again and move `verified_at` on.\n",
                self.stale.len()
            );
            list(&mut text, &self.stale, |s| {
                format!(
                    "{}: {}",
                    code(&format!("{}.{}", s.product, s.feature)),
                    code(&s.detail)
                )
            });
        }
        if self.is_clean() {
            text.push_str("Nothing drifted and no check fails or is blocked: look for capabilities the map misses.\n\n");
        }
        let scope = if self.scope.is_empty() {
            code(".agents/skills/")
        } else {
            self.scope
                .iter()
                .map(|s| code(s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            text,
            "**Edit scope:** the skill directories only: {scope}. Change nothing else — not the product's code, not the workflows, not `.aayudha/`.\n"
        );
        text.push_str(
            "**Rules**\n\n\
             1. Never weaken a check: do not delete a check, an assertion or a feature file, and do not loosen an expected value to turn a check green.\n\
             2. A check that fails because the product regressed is a product bug: file it as a Bug issue (label `type:bug`) instead of changing the check.\n\
             3. Open at most one pull request for this brief.\n\n",
        );
        let _ = writeln!(text, "{DIGEST_OPEN}{} -->", self.digest());
        text
    }

    /// One line: how much there is.
    pub fn headline(&self) -> String {
        let failed = self.checks.iter().filter(|c| c.status == "failed").count();
        let blocked = self.checks.len() - failed;
        let mut parts = Vec::new();
        let count =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        if !self.drift.is_empty() {
            parts.push(count(self.drift.len(), "drift", "drifts"));
        }
        if !self.errors.is_empty() {
            parts.push(count(
                self.errors.len(),
                "contract error",
                "contract errors",
            ));
        }
        if failed > 0 {
            parts.push(count(failed, "check fails", "checks fail"));
        }
        if blocked > 0 {
            parts.push(count(blocked, "check blocked", "checks blocked"));
        }
        if !self.stale.is_empty() {
            parts.push(count(self.stale.len(), "stale feature", "stale features"));
        }
        if parts.is_empty() {
            "nothing drifted, no check fails".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// The digest a posted brief ends with, if it is one.
pub fn digest_in(body: &str) -> Option<&str> {
    let start = body.rfind(DIGEST_OPEN)? + DIGEST_OPEN.len();
    let rest = &body[start..];
    let hex = rest.split_whitespace().next()?;
    (hex.len() == 64
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
        && rest[hex.len()..].trim_start().starts_with("-->"))
    .then_some(hex)
}

fn list<T>(text: &mut String, items: &[T], line: impl Fn(&T) -> String) {
    for item in items.iter().take(SHOWN) {
        let _ = writeln!(text, "- {}", line(item));
    }
    more(text, items.len());
    text.push('\n');
}

fn more(text: &mut String, total: usize) {
    if total > SHOWN {
        let _ = writeln!(
            text,
            "\n… and {} more: run the command above to see them all.",
            total - SHOWN
        );
    }
}

/// JSON with every object's keys sorted and no whitespace (serde_json keeps insertion order here).
pub fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::floors::feature_map::DriftKind;

    fn drift() -> Drift {
        Drift {
            product: "shop".into(),
            feature: Some("buy".into()),
            file: "src/main.rs".into(),
            line: 3,
            kind: DriftKind::UnmappedSurface,
            detail: "command `refund` is in no feature".into(),
        }
    }

    #[test]
    fn canonical_json_sorts_keys_and_has_no_whitespace() {
        let v = json!({"b": [1, {"z": null, "a": "x y"}], "a": true});
        assert_eq!(canonical(&v), r#"{"a":true,"b":[1,{"a":"x y","z":null}]}"#);
    }

    /// The digest is the SHA-256 of exactly the documented document, so a script can recompute it.
    #[test]
    fn the_digest_is_the_sha256_of_the_canonical_report() {
        let brief = Brief {
            drift: vec![drift()],
            checks: vec![BriefCheck {
                product: "shop".into(),
                feature: "buy".into(),
                check: "pays".into(),
                status: "failed",
                reason: "exit 1".into(),
            }],
            ..Brief::default()
        };
        let document = r#"{"checks":[{"check":"pays","feature":"buy","reason":"exit 1","status":"failed"}],"drift":[{"detail":"command `refund` is in no feature","feature":"buy","file":"src/main.rs","kind":"unmapped-surface","line":3,"product":"shop"}]}"#;
        assert_eq!(brief.digest(), crate::hash::bytes(document.as_bytes()));
        assert_ne!(brief.digest(), Brief::default().digest());
    }

    #[test]
    fn a_posted_brief_gives_back_its_digest_and_nothing_else_does() {
        let brief = Brief {
            drift: vec![drift()],
            ..Brief::default()
        };
        let body = brief.render(Audience::NoMaintainer, "octo/shop");
        assert_eq!(digest_in(&body), Some(brief.digest().as_str()));
        assert_eq!(digest_in("<!-- aayudha:digest nothex -->"), None);
        assert_eq!(digest_in("no brief"), None);
    }

    #[test]
    fn the_mention_follows_the_table() {
        let mention = |id: &str| {
            Maintainer::parse(id)
                .expect("known")
                .expect("set")
                .mention()
        };
        assert_eq!(mention("claude-code"), Some("@claude"));
        assert_eq!(mention("codex"), Some("@codex"));
        assert_eq!(mention("cursor"), Some("@cursor"));
        assert_eq!(mention("amp"), None);
        assert_eq!(Maintainer::parse(""), Ok(None));
        assert!(Maintainer::parse("copilot").is_err());
    }

    /// Text from the repository cannot mention anyone or add a heading: it is code.
    #[test]
    fn hostile_detail_stays_code() {
        let mut d = drift();
        d.detail = "@octocat\n### proven".into();
        let brief = Brief {
            drift: vec![d],
            ..Brief::default()
        };
        let body = brief.render(Audience::ActionsRecord, "octo/shop");
        assert!(
            body.contains("`src/main.rs:3: unmapped-surface: @octocat ### proven`"),
            "{body}"
        );
        assert!(!body.contains("\n### proven"));
    }
}
