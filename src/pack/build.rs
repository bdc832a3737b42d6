//! Assembling a pack from what the gate found: the run folder's files hashed into artifacts, the binding
//! fields (written by aayu alone), the trailers of the head commit, the footprint from `LAYERS.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::floors::FloorResult;
use crate::floors::behaviour::BehaviourReport;
use crate::floors::test_evidence::{Criterion, Said};
use crate::git::Repo;
use crate::maps::blocks::ArtifactKind;
use crate::pack::{self, Pack};
use crate::registry::CommandId;
use crate::sandbox::Network;
use crate::story::Binding;
use crate::story::Story;

/// Every file of the run folder, hashed (streamed), with its kind and store: reports and evidence are
/// `git`; a check's artifact has the kind it declared. Media — a media kind, or content that is an image,
/// video, audio or PDF whatever its kind — are `none`: never in git, and the gate uploads nothing to a
/// bucket (`aayu ship` and `aayu proof push --media` do, and only then say `bucket`).
pub fn artifacts(
    out: &Path,
    behaviour: Option<&BehaviourReport>,
) -> std::io::Result<Vec<pack::Artifact>> {
    let kinds: BTreeMap<&str, ArtifactKind> = behaviour
        .into_iter()
        .flat_map(|b| {
            b.checks
                .iter()
                .flat_map(|c| c.artifacts.iter().map(|a| (a.path.as_str(), a.kind)))
        })
        .collect();
    let mut artifacts = Vec::new();
    for rel in pack::files_under(out)? {
        let (sha256, size) = crate::hash::file(&out.join(&rel))?;
        let kind = if rel.starts_with("reports/") {
            ArtifactKind::Report
        } else if rel.starts_with("evidence/") {
            ArtifactKind::ApiTrace
        } else {
            kinds
                .get(rel.as_str())
                .copied()
                .unwrap_or(ArtifactKind::Report)
        };
        let head = pack::file_head(&out.join(&rel))?;
        let store = if pack::is_media_file(kind, &head) {
            pack::Store::None
        } else {
            pack::Store::Git
        };
        artifacts.push(pack::Artifact {
            path: rel,
            kind,
            sha256,
            size,
            store,
            object: String::new(),
            tombstone: None,
        });
    }
    Ok(artifacts)
}

/// What a pack is made of.
pub struct Parts<'a> {
    pub repo: &'a Repo,
    pub slug: &'a str,
    pub story: Option<&'a Story>,
    pub binding: Option<&'a Binding>,
    pub base: &'a str,
    pub head: &'a str,
    pub actions: bool,
    pub criteria: &'a [Criterion],
    pub artifacts: Vec<pack::Artifact>,
    pub checks: Vec<pack::Check>,
    pub now: time::OffsetDateTime,
}

/// The pack of SPEC §5 (fields from the Go struct of `seeds/proof-packs.txt`).
pub fn assemble(parts: Parts) -> Pack {
    let Parts {
        repo,
        slug,
        story,
        binding,
        base,
        head,
        actions,
        criteria,
        artifacts,
        checks,
        now,
    } = parts;
    let number = story.map_or(0, |s| s.number);
    let message = repo.message(head).unwrap_or_default();
    let changed = repo.changed_paths(base, head).unwrap_or_default();
    Pack {
        schema_version: pack::SCHEMA_VERSION,
        repo: slug.to_string(),
        story: number,
        pr: binding.map_or(0, |b| b.pr),
        pr_head_sha: head.to_string(),
        base_sha: base.to_string(),
        checkpoint: trailer(&message, "Aayudha-Checkpoint")
            .filter(|c| {
                c.split_once('/')
                    .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
            })
            .unwrap_or_default(),
        seat: CommandId::Verify.spec().seat.id().to_string(),
        host: if binding.is_some() {
            pack::Host::Action
        } else {
            pack::Host::Cli
        },
        model: trailer(&message, "Aayudha-Model").unwrap_or_default(),
        identity: if actions {
            pack::Identity::Ci
        } else {
            pack::Identity::Human
        },
        // Only `aayu ship` writes an authoritative pack; the gate's records the run that built it.
        authority: pack::Authority {
            kind: pack::AuthorityKind::Advisory,
            workflow: binding.map(|b| b.workflow.clone()).unwrap_or_default(),
            run_id: binding.map_or(0, |b| b.run_id),
            writer: if binding.is_some() {
                "aayu action (merge gate)".into()
            } else {
                String::new()
            },
        },
        // The action hashes the story's body as it is now, so a story edited after Ready no longer matches.
        completion_goal_hash: match (binding.and_then(|b| b.completion_goal_hash.clone()), story) {
            (Some(hash), Some(_)) => hash,
            (_, story) => story
                .map(|s| s.snapshot.meta.completion_goal_hash.clone())
                .unwrap_or_default(),
        },
        footprint: footprint(repo.root(), &changed),
        // The evidence map's criteria the snapshot lacks are said to a person, never packed.
        criteria: criteria
            .iter()
            .filter(|c| c.said != Said::NotInSnapshot)
            .map(|c| pack::Criterion {
                id: c.id,
                evidence: c.evidence.clone(),
            })
            .collect(),
        artifacts,
        checks,
        cost: pack::Cost::default(),
        links: pack::Links {
            issue: if number > 0 {
                format!("{slug}#{number}")
            } else {
                String::new()
            },
            pr: binding.map(|b| b.pr_url.clone()).unwrap_or_default(),
            ready_snapshot: if number > 0 {
                crate::story::ready_path(number)
            } else {
                String::new()
            },
            run: binding.map(|b| b.run_url.clone()).unwrap_or_default(),
        },
        created_at: crate::clock::utc_stamp(now, false),
    }
}

/// A commit trailer's value (`Aayudha-Checkpoint: 2/3`).
fn trailer(message: &str, key: &str) -> Option<String> {
    message
        .lines()
        .rev()
        .find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
        .filter(|v| !v.is_empty())
}

/// The layers whose path globs in `LAYERS.md` match a changed path. A layer row names its id (`L01`…`L09`)
/// and its globs in backticks.
fn footprint(root: &Path, changed: &[String]) -> Vec<String> {
    let Ok(bytes) = crate::safe_fs::read(root, "LAYERS.md", 1 << 20) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut layers = BTreeSet::new();
    for line in text.lines() {
        let Some(id) = line.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| {
            w.len() == 3 && w.starts_with("L0") && w[2..].chars().all(|c| c.is_ascii_digit())
        }) else {
            continue;
        };
        let globs: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        for glob in globs {
            if let Ok(g) = crate::maps::glob::compile(glob) {
                let matcher = g.compile_matcher();
                if changed.iter().any(|p| matcher.is_match(p)) {
                    layers.insert(id.to_string());
                }
            }
        }
    }
    layers.into_iter().collect()
}

/// The pack's record of a floor's result (SPEC §5: `floor`, `result`, `value`, `threshold`, `tool`,
/// `version`, `detail`, `network`).
pub fn check(result: &FloorResult) -> pack::Check {
    pack::Check {
        floor: result.floor.as_str().to_string(),
        result: result.verdict,
        value: result.value,
        threshold: result.threshold,
        tool: result.tool.to_string(),
        version: result
            .version
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string()),
        detail: result.detail.clone(),
        network: result.network.map_or("none", Network::as_str).to_string(),
    }
}
