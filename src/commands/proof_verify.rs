//! `aayu proof verify <story>`: the story's best pack on the ledger (the newest authoritative, else the
//! newest advisory), checked as SPEC §6 says. Exit 4 when it does not verify; floors are reported, not
//! integrity.
//!
//! An authoritative pack is checked also against what ship landed beside it (issue 41): the gate's own
//! `gate/pack.json`, whose SHA-256 the ship record names and from which the landed pack differs only where
//! ship rewrites it, and the Sigstore bundle `gate/attestation.sigstore.json`, verified again and compared
//! with what the ship record says of it (its provenance).

use std::fmt::Write as _;
use std::io::Write as _;

use serde::{Deserialize, Serialize};

use crate::attest::{self, TrustedRoots, Verified};
use crate::commands::{Context, Failure};
use crate::exit::ExitStatus;
use crate::ledger::store::Ledger;
use crate::pack::Store;
use crate::pack::verify::{self, Finding, Stored};
use crate::pack::{self, Pack};
use crate::settings::options::ProofVerifyOptions;
use crate::settings::remote;
use crate::story::ready;

/// `--json`: one object, schema_version 1.
#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    story: u64,
    /// The ledger path of the pack verified.
    pack: String,
    authority: String,
    pr: u64,
    pr_head_sha: String,
    verifies: bool,
    failures: Vec<Finding>,
    artifacts_checked: usize,
    artifacts_not_stored: usize,
    floors_hold: bool,
    notes: Vec<String>,
    /// The gate's signature of the pack: `verified`, `none` or `fails` (issue 41).
    provenance: Provenance,
}

/// A pack on the ledger: where, whether it is authoritative, and the pack or why it does not read.
struct Candidate {
    dir: String,
    authoritative: bool,
    decoded: Result<Pack, Undecoded>,
}

/// Why a pack.json on the ledger gives no pack.
#[derive(Debug, thiserror::Error)]
enum Undecoded {
    #[error(transparent)]
    Decode(#[from] pack::DecodeError),
    #[error("pack.json cannot be read")]
    Missing,
    #[error(transparent)]
    Ledger(#[from] crate::ledger::store::LedgerError),
}

/// An LFS pointer's bytes, read through `git lfs smudge` when git-lfs is installed.
fn through_lfs(root: &std::path::Path, pointer: &[u8]) -> Stored {
    let child = std::process::Command::new("git")
        .current_dir(root)
        .env("LC_ALL", "C")
        .args(["lfs", "smudge"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return Stored::Elsewhere("an LFS object, and git cannot run here".into());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(pointer);
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => Stored::Bytes(out.stdout),
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("is not a git command") => {
            Stored::Elsewhere("an LFS object: install git-lfs to check its bytes".into())
        }
        Ok(out) => Stored::Elsewhere(format!(
            "an LFS object git-lfs could not fetch: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Stored::Elsewhere(format!("an LFS object: {e}")),
    }
}

pub fn run(ctx: &mut Context, options: ProofVerifyOptions) -> Result<ExitStatus, Failure> {
    let (repo, config) = super::repo_and_config(ctx)?;
    let story = options.story;
    // The token is looked for once (it may run `gh auth token`): for the fetch, and for the PR's head.
    let token = remote::token(ctx.env).ok();
    let network = remote::network(ctx.github, token.as_ref());
    let ledger =
        Ledger::open(repo.root(), &config.ledger.branch, network).map_err(Failure::from)?;
    ledger.fetch().map_err(Failure::from)?;

    let (dir, pack) = best_pack(&ledger, story, &config.ledger.branch)?;
    let snapshot = snapshot(&ledger, story, &config.ledger.branch)?;
    let pr_head = if pack.pr == 0 {
        Ok(None)
    } else {
        pr_head(ctx, &options, &repo, token.as_ref(), pack.pr).map_err(|e| e.to_string())
    };
    let root = repo.root().to_path_buf();
    let env = ctx.env;
    let read = |a: &pack::Artifact| stored(&ledger, &dir, &root, env, a);
    let mut outcome = verify::verify(&pack, &read, Some(&snapshot), &pr_head);
    // Its folder or its own word makes a pack authoritative: either way, what ship landed is checked.
    let authoritative = dir.ends_with("/authoritative")
        || pack.authority.kind == pack::AuthorityKind::Authoritative;
    let provenance = if authoritative {
        let record = ship_record(&ledger, story)?;
        outcome
            .failures
            .extend(gate_findings(&ledger, &dir, &pack, &record)?);
        provenance(&ledger, &dir, &record, &config.proof, &root)?
    } else {
        Provenance::None
    };
    let report = Report {
        schema_version: 1,
        story,
        pack: format!("{dir}/pack.json"),
        authority: pack.authority.kind.as_str().to_string(),
        pr: pack.pr,
        pr_head_sha: pack.pr_head_sha.clone(),
        verifies: outcome.failures.is_empty() && !matches!(provenance, Provenance::Fails(_)),
        failures: outcome.failures,
        artifacts_checked: outcome.artifacts_checked,
        artifacts_not_stored: outcome.artifacts_not_stored,
        floors_hold: pack.checks.iter().all(pack::Check::holds),
        notes: outcome.notes,
        provenance,
    };
    let written = if options.json {
        super::write_json(ctx.out, &report)?
    } else {
        super::write_report(ctx, &render(&report))?
    };
    if !written {
        return Ok(ExitStatus::Ok);
    }
    Ok(if report.verifies {
        ExitStatus::Ok
    } else {
        ExitStatus::ProofFails
    })
}

/// The story's best pack on the ledger, and its folder: of the candidates
/// `proof/<story>/<head>/authoritative/` and `proof/<story>/<head>/advisory/<stamp>/`, the newest
/// authoritative first, else the newest advisory; a pack that does not decode comes first of its kind, so
/// that damage is reported rather than passed over (exit 4).
fn best_pack(ledger: &Ledger, story: u64, branch: &str) -> Result<(String, Pack), Failure> {
    let mut candidates: Vec<Candidate> = ledger
        .list(&format!("proof/{story}"))
        .map_err(Failure::from)?
        .into_iter()
        .filter_map(|path| {
            let dir = path.strip_suffix("/pack.json")?.to_string();
            let parts: Vec<&str> = dir.split('/').collect();
            let authoritative = match parts.as_slice() {
                [_, _, _, "authoritative"] => true,
                [_, _, _, "advisory", _] => false,
                _ => return None,
            };
            let decoded = match ledger.read(&path) {
                Ok(Some(bytes)) => pack::decode(&bytes).map_err(Undecoded::from),
                Ok(None) => Err(Undecoded::Missing),
                Err(e) => Err(Undecoded::from(e)),
            };
            Some(Candidate {
                dir,
                authoritative,
                decoded,
            })
        })
        .collect();
    candidates.sort_by(|a, b| {
        let key = |c: &Candidate| {
            (
                c.authoritative,
                c.decoded.is_err(),
                c.decoded
                    .as_ref()
                    .map(|p| p.created_at.clone())
                    .unwrap_or_default(),
                c.dir.clone(),
            )
        };
        key(b).cmp(&key(a))
    });
    let Some(best) = candidates.into_iter().next() else {
        return Err(Failure::new(
            ExitStatus::ProofFails,
            format!("story #{story} has no pack on the `{branch}` branch"),
        )
        .with_hint(
            "the merge gate's pack lands with `aayu ship`; a local one with `aayu proof push`",
        ));
    };
    match best.decoded {
        Ok(pack) => Ok((best.dir, pack)),
        Err(e) => Err(Failure::new(
            ExitStatus::ProofFails,
            format!("{}/pack.json does not verify: {e}", best.dir),
        )),
    }
}

/// The story's Ready snapshot on the ledger branch, or why there is none to check the pack against.
fn snapshot(
    ledger: &Ledger,
    story: u64,
    branch: &str,
) -> Result<Result<ready::Snapshot, String>, Failure> {
    let snapshot_path = crate::story::ready_path(story);
    Ok(match ledger.read(&snapshot_path).map_err(Failure::from)? {
        Some(bytes) => ready::parse(
            &String::from_utf8_lossy(&bytes),
            &format!("{branch}:{snapshot_path}"),
        )
        .map_err(|e| e.to_string()),
        None => Err(format!(
            "story #{story} has no Ready snapshot (`{snapshot_path}`) on the `{branch}` branch"
        )),
    })
}

/// Why the pull request's head cannot be had (said in the report, not failed on).
#[derive(Debug, thiserror::Error)]
enum NoPrHead {
    /// No repository on GitHub to ask: what resolving it said, its hint in parentheses.
    #[error("{message}{}", .hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    NoRemote {
        message: String,
        hint: Option<String>,
    },
    #[error(transparent)]
    GitHub(#[from] crate::github::GitHubError),
}

/// The head of pull request `pr` on GitHub, or why it cannot be had.
fn pr_head(
    ctx: &Context,
    options: &ProofVerifyOptions,
    repo: &crate::git::Repo,
    token: Option<&crate::github::Token>,
    pr: u64,
) -> Result<Option<String>, NoPrHead> {
    let remote = token
        .ok_or_else(|| remote::no_token(ctx.env))
        .and_then(|t| {
            remote::resolve_with(
                options.repo.as_deref(),
                ctx.env,
                ctx.github,
                repo.origin_slug(),
                t,
            )
        })
        .map_err(|f| NoPrHead::NoRemote {
            message: f.message,
            hint: f.hint,
        })?;
    Ok(Some(remote.client.pull(&remote.repo, pr)?.head_sha))
}

/// An artifact of the pack in folder `dir` as it is stored: in the bucket, on the ledger, or an LFS
/// object read through git-lfs.
fn stored(
    ledger: &Ledger,
    dir: &str,
    root: &std::path::Path,
    env: &crate::settings::Env,
    a: &pack::Artifact,
) -> Stored {
    if a.store == Store::Bucket {
        return from_bucket(a, env);
    }
    match ledger.read(&format!("{dir}/artifacts/{}", a.path)) {
        Ok(Some(bytes))
            if a.store == Store::Lfs || bytes.starts_with(b"version https://git-lfs") =>
        {
            if bytes.starts_with(b"version https://git-lfs") {
                through_lfs(root, &bytes)
            } else {
                Stored::Bytes(bytes)
            }
        }
        Ok(Some(bytes)) => Stored::Bytes(bytes),
        _ => Stored::Missing,
    }
}

/// The report as text: the pack, whether it verifies (else each failure), its provenance, the notes.
fn render(r: &Report) -> String {
    let mut text = format!(
        "story #{}: {} ({}{})\n",
        r.story,
        r.pack,
        r.authority,
        if r.pr > 0 {
            format!(", pull request #{}", r.pr)
        } else {
            String::new()
        }
    );
    if r.verifies {
        let _ = writeln!(
            text,
            "  verifies: {} checked, {} not stored; {}",
            crate::log::count(r.artifacts_checked, "artifact", "artifacts"),
            r.artifacts_not_stored,
            if r.floors_hold {
                "every floor holds"
            } else {
                "a floor does not hold"
            }
        );
    } else if r.failures.is_empty() {
        let _ = writeln!(text, "  does not verify: its provenance fails");
    } else {
        let _ = writeln!(text, "  does not verify:");
        for f in &r.failures {
            let _ = writeln!(text, "    {}", f.said());
        }
    }
    // What a bundle on the ledger says is data: no control character reaches the terminal.
    let _ = writeln!(
        text,
        "  provenance: {}",
        crate::log::controls_escaped(&r.provenance.said())
    );
    for note in &r.notes {
        let _ = writeln!(text, "  note: {note}");
    }
    text
}

/// A media file in the bucket its `object` names, read with the environment's credential; when it cannot
/// be read it is counted as not stored, and why is said.
fn from_bucket(a: &pack::Artifact, env: &crate::settings::Env) -> Stored {
    use crate::publish::bucket::Bucket;
    if a.object.is_empty() {
        return Stored::Elsewhere("`store: bucket` without an `object`: not checked".into());
    }
    let read = Bucket::open_object(&a.object, env).and_then(|(bucket, key)| bucket.read(&key));
    match read {
        Ok(bytes) => Stored::Bytes(bytes),
        Err(e) => Stored::Elsewhere(format!(
            "in the bucket, not readable here ({e}); not checked"
        )),
    }
}

/// The gate's own pack.json, beside an authoritative pack (ship lands it since issue 41).
const GATE_PACK: &str = "gate/pack.json";

/// The Sigstore bundle ship verified, beside an authoritative pack (only when there was one).
const GATE_BUNDLE: &str = "gate/attestation.sigstore.json";

/// What an artifact of the gate's pack ship may rewrite when it lands it, besides the pack's `authority`.
const SHIP_REWRITES: [&str; 3] = ["store", "object", "tombstone"];

/// How a value the certificate or the record lacks is said.
const ABSENT: &str = "absent";

/// The fields of the ship record (`ship/<story>.json`) proof verify reads; the others are not looked at.
#[derive(Debug, Deserialize)]
struct ShipRecord {
    /// The SHA-256 of the gate's pack.json, in hex.
    pack_sha256: String,
    /// The gate's run ship chose.
    gate_run: u64,
    /// That run's latest attempt when ship chose it.
    gate_run_attempt: u64,
    /// What ship verified of the gate's bundle: `null`, or absent in a record older than issue 41, when
    /// there was none.
    #[serde(default)]
    attestation: Option<RecordedAttestation>,
}

/// The ship record's `attestation`: what the bundle said when ship verified it.
#[derive(Debug, Deserialize)]
struct RecordedAttestation {
    bundle_sha256: String,
    instance: String,
    san: String,
    run_invocation: String,
    build_config_digest: String,
    source_digest: String,
    signed_at: String,
}

/// The ship record as read from the ledger: `None` when there is none, `Err` when it does not read.
type RecordRead = Result<Option<ShipRecord>, String>;

/// The ship record of `story` on the ledger.
fn ship_record(ledger: &Ledger, story: u64) -> Result<RecordRead, Failure> {
    let path = format!("ship/{story}.json");
    Ok(match ledger.read(&path).map_err(Failure::from)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{path} does not read: {e}")),
    })
}

/// A finding of the gate's pack: `check` on `subject`.
fn gate_finding(check: &str, subject: &str, detail: String) -> Finding {
    Finding {
        check: check.to_string(),
        subject: subject.to_string(),
        detail,
    }
}

/// The checks of `gate/pack.json` in the authoritative pack's folder `dir`, when ship landed one: its
/// SHA-256 is the ship record's `pack_sha256`, and `landed` differs from it only where ship rewrites a
/// pack. An older pack, without the folder, has nothing to check.
fn gate_findings(
    ledger: &Ledger,
    dir: &str,
    landed: &Pack,
    record: &RecordRead,
) -> Result<Vec<Finding>, Failure> {
    let Some(bytes) = ledger
        .read(&format!("{dir}/{GATE_PACK}"))
        .map_err(Failure::from)?
    else {
        return Ok(Vec::new());
    };
    let actual = crate::hash::bytes(&bytes);
    let mut found = Vec::new();
    match record {
        Ok(Some(r)) if r.pack_sha256 == actual => {}
        Ok(Some(r)) => found.push(gate_finding(
            "gate-pack",
            GATE_PACK,
            format!(
                "sha256 {actual}, not the ship record's pack_sha256 {}",
                r.pack_sha256
            ),
        )),
        Ok(None) => found.push(gate_finding(
            "ship-record",
            "ship record",
            format!("the ledger has none to check {GATE_PACK} against"),
        )),
        Err(why) => found.push(gate_finding("ship-record", "ship record", why.clone())),
    }
    match pack::decode(&bytes) {
        Ok(gate) => found.extend(differences(landed, &gate)),
        Err(e) => found.push(gate_finding(
            "gate-pack",
            GATE_PACK,
            format!("does not decode: {e}"),
        )),
    }
    Ok(found)
}

/// Where the landed pack differs from the gate's beyond what ship rewrites (`authority`, and each
/// artifact's `store`, `object` and `tombstone`): one finding a value, named by its JSON pointer.
fn differences(landed: &Pack, gate: &Pack) -> Vec<Finding> {
    let (landed, gate) = match (comparable(landed), comparable(gate)) {
        (Ok(l), Ok(g)) => (l, g),
        (Err(e), _) | (_, Err(e)) => {
            return vec![gate_finding(
                "gate-pack",
                "pack.json",
                format!("cannot be compared with {GATE_PACK}: {e}"),
            )];
        }
    };
    let mut found = Vec::new();
    diff(Some(&landed), Some(&gate), "", &mut found);
    found
        .into_iter()
        .map(|(pointer, l, g)| {
            gate_finding(
                "gate-pack",
                "pack.json",
                format!("differs from {GATE_PACK} at {pointer}: {l}, not {g}"),
            )
        })
        .collect()
}

/// A pack as JSON without what ship rewrites.
fn comparable(p: &Pack) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(p)?;
    if let Some(object) = value.as_object_mut() {
        object.shift_remove("authority");
    }
    let artifacts = value
        .get_mut("artifacts")
        .and_then(serde_json::Value::as_array_mut);
    for artifact in artifacts.into_iter().flatten() {
        if let Some(object) = artifact.as_object_mut() {
            for key in SHIP_REWRITES {
                object.shift_remove(key);
            }
        }
    }
    Ok(value)
}

/// Each value where `landed` and `gate` differ, as (JSON pointer, landed value, gate value), in the
/// landed document's order; a value one side lacks is said `absent`.
fn diff(
    landed: Option<&serde_json::Value>,
    gate: Option<&serde_json::Value>,
    pointer: &str,
    found: &mut Vec<(String, String, String)>,
) {
    use serde_json::Value;
    match (landed, gate) {
        (Some(Value::Object(l)), Some(Value::Object(g))) => {
            let keys = l.keys().chain(g.keys().filter(|k| !l.contains_key(*k)));
            for key in keys {
                let at = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                diff(l.get(key), g.get(key), &at, found);
            }
        }
        (Some(Value::Array(l)), Some(Value::Array(g))) => {
            for i in 0..l.len().max(g.len()) {
                diff(l.get(i), g.get(i), &format!("{pointer}/{i}"), found);
            }
        }
        (l, g) if l != g => {
            let said = |v: Option<&Value>| v.map_or_else(|| ABSENT.to_string(), Value::to_string);
            found.push((pointer.to_string(), said(l), said(g)));
        }
        _ => {}
    }
}

/// The gate's signature of the pack, as `--json` says it.
#[derive(Debug, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
enum Provenance {
    /// The bundle verifies and says what the ship record says.
    Verified {
        san: String,
        run: u64,
        signed_at: String,
    },
    /// No bundle and none recorded, or an advisory pack.
    None,
    /// The first value that is not what it should be.
    Fails(Mismatch),
}

impl Provenance {
    /// The provenance line's value: `verified (<san>, run <run>)`, `none` or `fails: …`.
    fn said(&self) -> String {
        match self {
            Provenance::Verified { san, run, .. } => format!("verified ({san}, run {run})"),
            Provenance::None => "none".to_string(),
            Provenance::Fails(m) => format!("fails: {}", m.said()),
        }
    }
}

/// What the provenance check compares, as a failure names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The bundle file beside the pack.
    Bundle,
    /// The ship record.
    Record,
    /// The bundle's signature, chain and log entry: what [`attest::verify`] checks.
    Signature,
    /// A value the ship record holds of the bundle, by its key.
    Recorded(&'static str),
    /// A value of the certificate or the statement that must be what the gate's signature says.
    Claim(attest::Field),
}

impl Part {
    /// The name a failure says.
    fn name(self) -> &'static str {
        match self {
            Part::Bundle => GATE_BUNDLE,
            Part::Record => "ship record",
            Part::Signature => "signature",
            Part::Recorded(key) => key,
            Part::Claim(field) => field.name(),
        }
    }
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A provenance failure: `field` is `actual`, not `expected`.
#[derive(Debug, Serialize)]
struct Mismatch {
    field: Part,
    actual: String,
    expected: String,
}

impl Mismatch {
    /// `<field>: <actual>, not <expected>`; a signature that does not verify is said by its error alone.
    fn said(&self) -> String {
        match self.field {
            Part::Signature => format!("{}: {}", self.field.name(), self.actual),
            field => format!("{}: {}, not {}", field.name(), self.actual, self.expected),
        }
    }
}

/// A failed provenance.
fn fails(field: Part, actual: impl Into<String>, expected: impl Into<String>) -> Provenance {
    Provenance::Fails(Mismatch {
        field,
        actual: actual.into(),
        expected: expected.into(),
    })
}

/// The provenance of the authoritative pack in folder `dir`: `none` without a bundle or a recorded
/// attestation; else the bundle verified again against the trusted root and compared with the record.
fn provenance(
    ledger: &Ledger,
    dir: &str,
    record: &RecordRead,
    proof: &crate::config::Proof,
    root: &std::path::Path,
) -> Result<Provenance, Failure> {
    let bundle = ledger
        .read(&format!("{dir}/{GATE_BUNDLE}"))
        .map_err(Failure::from)?;
    let (bytes, record) = match (bundle, record) {
        (None, Ok(Some(r))) if r.attestation.is_some() => {
            return Ok(fails(Part::Bundle, "missing", "present"));
        }
        (None, _) => return Ok(Provenance::None),
        (Some(bytes), Ok(Some(r))) => (bytes, r),
        (Some(_), Ok(None)) => return Ok(fails(Part::Record, "missing", "present")),
        (Some(_), Err(why)) => {
            return Ok(fails(Part::Record, why.clone(), "a record that reads"));
        }
    };
    let roots = trusted_roots(proof, root)?;
    let verified = match attest::verify(&bytes, &roots, &record.pack_sha256) {
        Ok(v) => v,
        Err(e) => {
            return Ok(fails(
                Part::Signature,
                e.to_string(),
                "a signature that verifies",
            ));
        }
    };
    Ok(
        match against_record(&verified, record, proof.self_hosted_runners) {
            Some(mismatch) => Provenance::Fails(mismatch),
            None => Provenance::Verified {
                san: verified.san().to_string(),
                run: record.gate_run,
                signed_at: verified.signed_at().to_string(),
            },
        },
    )
}

/// The trusted root of `[proof] trusted_root`, a JSON Lines file of the working tree, else the embedded
/// production root. A file that cannot be read or a line that does not parse is a usage error naming it.
fn trusted_roots(
    proof: &crate::config::Proof,
    root: &std::path::Path,
) -> Result<TrustedRoots, Failure> {
    let file = proof.trusted_root.trim();
    if file.is_empty() {
        return TrustedRoots::production()
            .map_err(|e| Failure::from_error(ExitStatus::Failure, &e));
    }
    // Through the project's reader: no link followed out of the repository, a bounded size.
    let bytes = crate::safe_fs::read(root, file, attest::TRUSTED_ROOT_MAX_BYTES).map_err(|e| {
        Failure::usage(format!(
            "`[proof] trusted_root` names `{file}`, which cannot be read"
        ))
        .caused_by(e)
        .with_hint("give a path from the repository's root to the file `gh attestation trusted-root` prints, or empty the setting to use the root built into aayu")
    })?;
    TrustedRoots::from_json_lines(&String::from_utf8_lossy(&bytes)).map_err(|e| {
        let said = match e {
            attest::AttestError::TrustedRootLine { line, detail } => {
                format!("line {line} does not parse: {detail}")
            }
            attest::AttestError::TrustedRootEmpty => "it holds no trusted root".to_string(),
            other => other.to_string(),
        };
        Failure::usage(format!("the trusted root `{file}`: {said}"))
            .with_hint("write it as `gh attestation trusted-root` prints it, one root a line")
    })
}

/// The first value of `v` that is not what `record` says of the bundle ship verified ([`recorded`]), or
/// what the gate's own signature says ([`gate_signature`]).
fn against_record(v: &Verified, record: &ShipRecord, self_hosted: bool) -> Option<Mismatch> {
    recorded(v, record)
        .into_iter()
        .chain(gate_signature(v, self_hosted))
        .find(|c| !c.holds)
        .map(|c| Mismatch {
            field: c.field,
            actual: c.actual.unwrap_or_else(|| ABSENT.to_string()),
            expected: c.expected.unwrap_or_else(|| ABSENT.to_string()),
        })
}

/// One value of the bundle compared: what it is (`None`: absent), what it should be, and whether it is.
struct Compared {
    field: Part,
    actual: Option<String>,
    expected: Option<String>,
    holds: bool,
}

/// `actual` compared with `expected`; an absent value never holds.
fn equal(field: Part, actual: Option<&str>, expected: Option<&str>) -> Compared {
    Compared {
        field,
        actual: actual.map(str::to_string),
        expected: expected.map(str::to_string),
        holds: actual.is_some() && actual == expected,
    }
}

/// The bundle against the record's `attestation`, in its order: the bundle's SHA-256, the instance, the
/// SAN, `.21` (and that it is an attempt of the recorded run), `.19`, `.13` and the signing time.
fn recorded(v: &Verified, record: &ShipRecord) -> [Compared; 8] {
    type Key = fn(&RecordedAttestation) -> &str;
    let at = |key: Key| record.attestation.as_ref().map(key);
    [
        equal(
            Part::Recorded("bundle_sha256"),
            Some(v.bundle_sha256()),
            at(|a| &a.bundle_sha256),
        ),
        equal(
            Part::Recorded("instance"),
            Some(attest::PUBLIC_GOOD),
            at(|a| &a.instance),
        ),
        equal(Part::Recorded("san"), Some(v.san()), at(|a| &a.san)),
        equal(
            Part::Recorded("run_invocation"),
            v.run_invocation(),
            at(|a| &a.run_invocation),
        ),
        run_shape(v, record),
        equal(
            Part::Recorded("build_config_digest"),
            v.build_config_digest(),
            at(|a| &a.build_config_digest),
        ),
        equal(
            Part::Recorded("source_digest"),
            v.source_digest(),
            at(|a| &a.source_digest),
        ),
        equal(
            Part::Recorded("signed_at"),
            Some(v.signed_at()),
            at(|a| &a.signed_at),
        ),
    ]
}

/// What the gate's own signature says whatever the record says: `.20` `pull_request_target`, `.8` the
/// Actions issuer, `.9` and `.18` the SAN, `.11` `github-hosted` (or `self-hosted` when allowed) and the
/// SLSA provenance predicate.
fn gate_signature(v: &Verified, self_hosted: bool) -> [Compared; 6] {
    use attest::Field;
    let runner = v.claim(11);
    let runner_holds =
        runner == Some("github-hosted") || (self_hosted && runner == Some("self-hosted"));
    [
        equal(
            Part::Claim(Field::Trigger),
            v.claim(20),
            Some("pull_request_target"),
        ),
        equal(
            Part::Claim(Field::Issuer),
            v.claim(8),
            Some(attest::ACTIONS_ISSUER),
        ),
        equal(
            Part::Claim(Field::BuildSignerUri),
            v.claim(9),
            Some(v.san()),
        ),
        equal(
            Part::Claim(Field::BuildConfigUri),
            v.claim(18),
            Some(v.san()),
        ),
        Compared {
            holds: runner_holds,
            ..equal(
                Part::Claim(Field::RunnerEnvironment),
                runner,
                Some(if self_hosted {
                    "github-hosted or self-hosted"
                } else {
                    "github-hosted"
                }),
            )
        },
        equal(
            Part::Claim(Field::PredicateType),
            Some(v.predicate_type()),
            Some(attest::SLSA_PROVENANCE_V1),
        ),
    ]
}

/// `.21` is `<.12>/actions/runs/<gate_run>/attempts/<k>` with `1 ≤ k ≤ gate_run_attempt`, `k` as GitHub
/// writes it (decimal, no sign, no leading zero).
fn run_shape(v: &Verified, record: &ShipRecord) -> Compared {
    let prefix = format!(
        "{}/actions/runs/{}/attempts/",
        v.claim(12).unwrap_or(ABSENT),
        record.gate_run
    );
    let holds = v
        .run_invocation()
        .and_then(|r| r.strip_prefix(&prefix))
        .and_then(|k| k.parse::<u64>().ok().filter(|n| n.to_string() == k))
        .is_some_and(|k| (1..=record.gate_run_attempt).contains(&k));
    let attempts = if record.gate_run_attempt <= 1 {
        "1".to_string()
    } else {
        format!("<1 to {}>", record.gate_run_attempt)
    };
    Compared {
        field: Part::Claim(attest::Field::RunInvocationUri),
        actual: v.run_invocation().map(str::to_string),
        expected: Some(format!("{prefix}{attempts}")),
        holds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn differences_of(landed: &serde_json::Value, gate: &serde_json::Value) -> Vec<String> {
        let mut found = Vec::new();
        diff(Some(landed), Some(gate), "", &mut found);
        found
            .into_iter()
            .map(|(at, l, g)| format!("{at}: {l}, not {g}"))
            .collect()
    }

    #[test]
    fn differences_are_named_by_json_pointer_in_order() {
        let landed = json!({"a/b": 1, "m~n": [1, 2, 3], "same": {"x": true}, "only": "here"});
        let gate = json!({"a/b": 2, "m~n": [1, 5], "same": {"x": true}, "gate": null});
        assert_eq!(
            differences_of(&landed, &gate),
            [
                "/a~1b: 1, not 2",
                "/m~0n/1: 2, not 5",
                "/m~0n/2: 3, not absent",
                "/only: \"here\", not absent",
                "/gate: absent, not null",
            ]
        );
        assert!(differences_of(&landed, &landed).is_empty());
    }
}
