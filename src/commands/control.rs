//! `aayu control check`: the built-in step runner, a control tool any map may name as
//! `"control": ["aayu", "control"]`. It reads one check request on stdin (SPEC §4), reads the check's
//! steps ([`crate::steps`]) — a step that breaks the contract refuses the whole check (exit 2), naming the
//! check, the step and the key, before any step runs — runs them ([`crate::steps::runner`]) and prints one
//! JSON result; the transcript of every step is its `api-trace` artifact.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::commands::{Context, Failure, write_out};
use crate::exit::ExitStatus;
use crate::steps::runner::{self, Verdict};

/// The request a control tool receives (SPEC §4).
#[derive(Debug, Deserialize)]
struct Request {
    product: String,
    feature: String,
    check: String,
    out: PathBuf,
    #[serde(default)]
    base_url: String,
    root: PathBuf,
    spec: Value,
}

pub fn run(ctx: &mut Context, op: &str) -> Result<ExitStatus, Failure> {
    if op != "check" {
        return Err(Failure::usage(format!(
            "`aayu control {op}`: the only operation is `check`"
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(ctx.input, &mut text)
        .map_err(|e| Failure::usage("cannot read the check request on stdin").caused_by(e))?;
    let request: Request = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(
            "stdin is not a check request (product, feature, check, out, base_url, root, spec)",
        )
        .caused_by(e)
    })?;
    let steps = crate::steps::parse(&request.spec).map_err(|(_, why)| {
        Failure::usage(format!(
            "contract error: check `{}.{}` of `{}`: {why}",
            request.feature, request.check, request.product
        ))
    })?;
    let ran = runner::run(&steps, &request.root, &request.out, &request.base_url);
    let transcript = json!({
        "schema_version": 1,
        "product": request.product,
        "feature": request.feature,
        "check": request.check,
        "steps": ran.transcript,
    });
    let written = serde_json::to_vec_pretty(&transcript)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            crate::safe_fs::write_atomic(&request.out.join("transcript.json"), &bytes)
        });
    let (status, mut reason) = match ran.verdict {
        Verdict::Passed => ("passed", String::new()),
        Verdict::Failed(reason) => ("failed", reason),
        Verdict::Unreachable(reason) => ("unreachable", reason),
    };
    if let Some(why) = &ran.no_sandbox {
        let note = format!("Chromium ran with --no-sandbox: {why}");
        reason = if reason.is_empty() {
            note
        } else {
            format!("{reason} ({note})")
        };
    }
    let mut artifacts: Vec<Value> = ran
        .screenshots
        .iter()
        .map(|name| json!({"path": name, "kind": "screenshot"}))
        .collect();
    if written.is_ok() {
        artifacts.push(json!({"path": "transcript.json", "kind": "api-trace"}));
    }
    let result = json!({"status": status, "reason": reason, "artifacts": artifacts});
    write_out(ctx.out, &format!("{result}\n"))?;
    Ok(ExitStatus::Ok)
}
