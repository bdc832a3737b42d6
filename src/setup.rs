//! What `aayu init` and `aayu install` write, and `aayu doctor` checks against: the workflow templates
//! pinned to this binary's release, the commented configuration, the agent apps' pointers to the verify
//! skills (`setup/pointers.rs`) and their registration of `aayu mcp` (`setup/mcp_registration.rs`).

pub(crate) mod mcp_registration;
pub(crate) mod pointers;

use std::borrow::Cow;
use std::time::Duration;

/// The templates users copy, as this binary ships them.
pub const GATE_TEMPLATE: &str = include_str!("../workflows/aayudha-merge-gate.yml");
pub const SHARDED_GATE_TEMPLATE: &str = include_str!("../workflows/aayudha-merge-gate-sharded.yml");
pub const NIGHTLY_TEMPLATE: &str = include_str!("../workflows/aayudha-nightly.yml");
/// The most legs a sharded gate is split into (the action's `shards` input takes 1 to 64; GitHub runs up
/// to 256 jobs per matrix).
pub const MAX_SHARDS: u64 = 64;
/// The sharded template's `shards:` line up to its number (4 as shipped): what `aayu init --shards N`
/// writes its number into, and where `aayu doctor` reads a written file's.
const SHARDS_LINE: &str = "          shards: ";
/// The number of legs the sharded template ships with.
const TEMPLATE_SHARDS: u64 = 4;
/// The key line of the gate templates' signing job (`aayudha/attest`, issue 41): `aayu init` writes it
/// for public repositories on github.com only.
const ATTEST_JOB: &str = "\n  attest:\n";
/// What the templates say where a release's commit goes.
const PLACEHOLDER: &str =
    "1111111111111111111111111111111111111111 # replace with a release's commit SHA";
/// The repository whose release tags the workflows name.
pub const ACTION_REPO: &str = "aayudha/verify";
/// How the workflows name the action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// What follows `@` in `uses:`.
    pub reference: String,
    /// The comment after it.
    pub comment: String,
    /// Why it is not a commit SHA, when it is not.
    pub unpinned_because: Option<String>,
}

/// The release tag of this binary: `v` and its version.
pub fn release_tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// The release commit and tag a release build carries, set when it was built (`AAYU_RELEASE_SHA`, a full
/// commit SHA, and `AAYU_RELEASE_TAG`, `v<version>`, in the release workflow): the one place that reads
/// them. `None` for any other build (`cargo install --git`, a checkout), or when either is malformed.
pub fn built_release() -> Option<(&'static str, &'static str)> {
    release_of(
        option_env!("AAYU_RELEASE_SHA"),
        option_env!("AAYU_RELEASE_TAG"),
    )
}

fn release_of<'a>(sha: Option<&'a str>, tag: Option<&'a str>) -> Option<(&'a str, &'a str)> {
    let (sha, tag) = (sha?.trim(), tag?.trim());
    let full_sha = crate::git::is_full_sha(sha) && !sha.bytes().any(|b| b.is_ascii_uppercase());
    (full_sha && tag.starts_with('v') && tag.len() > 1).then_some((sha, tag))
}

/// The pin of this binary's release. A release build pins itself, with no network: the commit and tag it
/// was built with ([`built_release`]). Any other build looks the tag's commit up, `GET
/// /repos/aayudha/verify/git/ref/tags/<tag>` (an annotated tag is followed to its commit with `GET
/// /git/tags/<sha>`); when that fails — offline, or a development build whose version has no tag — the
/// tag, with a comment to pin it.
pub fn resolve_pin(api_url: &str, token: Option<&str>) -> Pin {
    pin_for(built_release(), api_url, token)
}

fn pin_for(built: Option<(&str, &str)>, api_url: &str, token: Option<&str>) -> Pin {
    if let Some((sha, tag)) = built {
        return Pin {
            reference: sha.to_string(),
            comment: tag.to_string(),
            unpinned_because: None,
        };
    }
    let tag = release_tag();
    match tag_commit(api_url, token, &tag) {
        Ok(sha) => Pin {
            reference: sha,
            comment: tag,
            unpinned_because: None,
        },
        Err(why) => Pin {
            reference: tag.clone(),
            comment: "pin this to its commit SHA".to_string(),
            unpinned_because: Some(why.to_string()),
        },
    }
}

/// Why the release tag could not be resolved to its commit (said in `init`'s note).
#[derive(Debug, thiserror::Error)]
enum TagError {
    #[error("GitHub could not be reached ({0})")]
    Unreachable(ureq::Error),
    #[error("GitHub's answer could not be read ({0})")]
    Unreadable(ureq::Error),
    #[error("GitHub's answer is not JSON ({0})")]
    NotJson(serde_json::Error),
    #[error("{ACTION_REPO} has no tag {tag} (a development build?)")]
    NoTag { tag: String },
    #[error("GitHub answered {status} for {url}")]
    Status { status: u16, url: String },
    #[error("GitHub gave no commit for {tag}")]
    NoCommit { tag: String },
}

fn tag_commit(api_url: &str, token: Option<&str>, tag: &str) -> Result<String, TagError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into();
    let get = |path: &str| -> Result<serde_json::Value, TagError> {
        let url = format!(
            "{}/repos/{ACTION_REPO}{path}",
            api_url.trim_end_matches('/')
        );
        let mut request = agent
            .get(&url)
            .header("accept", "application/vnd.github+json")
            .header("user-agent", concat!("aayu/", env!("CARGO_PKG_VERSION")));
        if let Some(token) = token {
            request = request.header("authorization", &format!("Bearer {token}"));
        }
        let mut response = request.call().map_err(TagError::Unreachable)?;
        match response.status().as_u16() {
            200 => {
                let text = response
                    .body_mut()
                    .read_to_string()
                    .map_err(TagError::Unreadable)?;
                serde_json::from_str(&text).map_err(TagError::NotJson)
            }
            404 => Err(TagError::NoTag {
                tag: tag.to_string(),
            }),
            status => Err(TagError::Status { status, url }),
        }
    };
    let reference = get(&format!("/git/ref/tags/{tag}"))?;
    let object = &reference["object"];
    let sha = object["sha"].as_str().unwrap_or_default().to_string();
    let sha = if object["type"] == "tag" {
        let annotated = get(&format!("/git/tags/{sha}"))?;
        annotated["object"]["sha"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    } else {
        sha
    };
    if crate::git::is_full_sha(&sha) {
        Ok(sha.to_ascii_lowercase())
    } else {
        Err(TagError::NoCommit {
            tag: tag.to_string(),
        })
    }
}

/// A workflow template with the action pinned.
pub fn workflow(template: &str, pin: &Pin) -> String {
    template.replace(PLACEHOLDER, &format!("{} # {}", pin.reference, pin.comment))
}

/// The sharded gate template with `shards` legs: its plan job's one `shards:` line carries the number.
pub fn sharded_gate(shards: u64) -> String {
    SHARDED_GATE_TEMPLATE.replacen(
        &format!("{SHARDS_LINE}{TEMPLATE_SHARDS} #"),
        &format!("{SHARDS_LINE}{shards} #"),
        1,
    )
}

/// A gate workflow without its signing job: the job's lines, up to the next job or the file's end, and
/// the blank line before it. The producer's outputs stay (nothing reads them then). A text without the
/// job is returned as it is.
pub fn without_attest(text: &str) -> String {
    let Some(at) = text.find(ATTEST_JOB) else {
        return text.to_string();
    };
    // `at` is the newline that ends the blank line before the job. The job ends at the first line that
    // is not blank and not inside a job (indented less than a job's keys): the next job, or a top-level
    // key.
    let body = at + ATTEST_JOB.len();
    let mut end = text.len();
    let mut from = body;
    for line in text[body..].split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if !line.trim().is_empty() && indent < 4 {
            end = from;
            break;
        }
        from += line.len();
    }
    if end == text.len() {
        text[..at].to_string()
    } else {
        format!("{}{}", &text[..=at], &text[end..])
    }
}

/// The template a written workflow is compared with: `template` itself, except for the gate workflow
/// (`template` is [`GATE_TEMPLATE`]): one written from the sharded template (`aayu init --shards N`, a
/// plan job) is compared with the sharded template with the file's own number of legs — the one line the
/// template asks to change —, and one without the signing job (`aayu init` leaves it out but for public
/// repositories on github.com) with the template without it.
pub fn template_for<'a>(template: &'a str, written: &str) -> Cow<'a, str> {
    if template != GATE_TEMPLATE {
        return Cow::Borrowed(template);
    }
    let sharded = written.contains("\n          mode: plan\n");
    let chosen = if sharded {
        let shards = written
            .lines()
            .filter_map(|l| l.strip_prefix(SHARDS_LINE))
            .find_map(|rest| rest.split_once(" #")?.0.trim().parse::<u64>().ok())
            .unwrap_or(TEMPLATE_SHARDS);
        Cow::Owned(sharded_gate(shards))
    } else {
        Cow::Borrowed(template)
    };
    if written.contains(ATTEST_JOB) {
        chosen
    } else {
        Cow::Owned(without_attest(&chosen))
    }
}

/// `defaults.toml` with every key commented out: the file shows every setting and its default, and
/// changes none.
pub fn commented_config() -> String {
    let mut text = String::from(
        "# aayudha configuration. Every key is shown with its default, commented out: uncomment a key to\n\
         # change it. The merge gate reads this file from the default branch (a pull request cannot change\n\
         # its own gate). Every key: https://github.com/aayudha/verify/blob/main/docs/configuration.md\n",
    );
    let defaults = crate::config::DEFAULTS;
    // The defaults file's own header (up to the first section) is about the embedded file: left out.
    let body = defaults
        .find("\n[")
        .map_or(defaults, |at| &defaults[at + 1..]);
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('[') {
            text.push_str(line);
        } else {
            text.push_str("# ");
            text.push_str(line);
        }
        text.push('\n');
    }
    text.insert(text.find("\n[").map_or(text.len(), |at| at + 1), '\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_build_pins_itself_with_no_network() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        // An API nobody answers: a release build never asks it.
        let pin = pin_for(
            release_of(Some(sha), Some("v0.4.2")),
            "http://127.0.0.1:9",
            None,
        );
        assert_eq!(pin.unpinned_because, None);
        let written = workflow(GATE_TEMPLATE, &pin);
        assert!(
            written.contains(&format!("uses: aayudha/verify@{sha} # v0.4.2")),
            "{written}"
        );
        assert!(!written.contains(PLACEHOLDER));
        // Anything else a build might carry is no release: the look-up (here: nobody answers) decides.
        for (sha, tag) in [
            (Some("0123456789abcdef"), Some("v0.4.2")),
            (
                Some("0123456789ABCDEF0123456789ABCDEF01234567"),
                Some("v0.4.2"),
            ),
            (Some(sha), Some("0.4.2")),
            (Some(sha), None),
            (None, Some("v0.4.2")),
        ] {
            assert_eq!(release_of(sha, tag), None, "{sha:?} {tag:?}");
        }
        let looked_up = pin_for(None, "http://127.0.0.1:9", None);
        assert_eq!(looked_up.reference, release_tag());
        assert!(looked_up.unpinned_because.is_some());
    }

    #[test]
    fn the_commented_configuration_is_the_defaults() {
        let text = commented_config();
        let parsed = crate::config::Config::from_text(&text, "config.toml").expect("it parses");
        assert_eq!(
            format!("{:?}", parsed),
            format!("{:?}", crate::config::Config::defaults())
        );
        assert!(text.contains("# check_timeout_s = 180\n"), "{text}");
        assert!(text.contains("\n[verify]\n"), "{text}");
    }

    #[test]
    fn the_templates_carry_the_placeholder_init_replaces() {
        let pin = Pin {
            reference: "a".repeat(40),
            comment: "v9.9.9".into(),
            unpinned_because: None,
        };
        for template in [GATE_TEMPLATE, SHARDED_GATE_TEMPLATE, NIGHTLY_TEMPLATE] {
            assert!(template.contains(PLACEHOLDER));
            let written = workflow(template, &pin);
            assert!(!written.contains("111111"), "{written}");
            assert!(written.contains(&format!("@{} # v9.9.9", "a".repeat(40))));
        }
    }

    #[test]
    fn the_sharded_template_takes_its_number_of_legs_and_doctor_reads_it_back() {
        assert!(SHARDED_GATE_TEMPLATE.contains(&format!("{SHARDS_LINE}{TEMPLATE_SHARDS} # ")));
        // One line carries the number (the legs' `shards:` is the matrix entry's).
        let three = sharded_gate(3);
        assert_eq!(
            three.matches(&format!("{SHARDS_LINE}3 # ")).count(),
            1,
            "{three}"
        );
        assert!(
            !three.contains(&format!("{SHARDS_LINE}{TEMPLATE_SHARDS} ")),
            "{three}"
        );
        assert_eq!(sharded_gate(TEMPLATE_SHARDS), SHARDED_GATE_TEMPLATE);
        // Pinned as init pins it, a written file is compared with the template of its own legs.
        let pin = Pin {
            reference: "a".repeat(40),
            comment: "v9.9.9".into(),
            unpinned_because: None,
        };
        let written = workflow(&sharded_gate(12), &pin);
        assert_eq!(
            workflow(&template_for(GATE_TEMPLATE, &written), &pin),
            written
        );
        // The single-job gate and the other workflows are their own templates.
        let single = workflow(GATE_TEMPLATE, &pin);
        assert_eq!(template_for(GATE_TEMPLATE, &single), GATE_TEMPLATE);
        assert_eq!(template_for(NIGHTLY_TEMPLATE, &written), NIGHTLY_TEMPLATE);
    }

    #[test]
    fn a_gate_without_its_signing_job_is_the_template_without_it() {
        let single = GATE_TEMPLATE;
        for (template, producer_tail) in [
            (
                single.to_string(),
                "gate_result: ${{ needs.merge-gate.result }}\n",
            ),
            (
                sharded_gate(3),
                "gate_reason: ${{ needs.merge.outputs.reason }}\n",
            ),
        ] {
            let left_out = without_attest(&template);
            assert!(left_out.ends_with(producer_tail), "{left_out}");
            assert!(!left_out.ends_with("\n\n"), "{left_out}");
            for gone in [
                "  attest:",
                "id-token",
                "attestations: write",
                "actions/attest@",
            ] {
                assert!(!left_out.contains(gone), "{gone}: {left_out}");
            }
            // The header and the producer's outputs stay; only the job's lines go.
            assert!(left_out.contains("steps.gate.outputs.pack-sha256"));
            assert_eq!(
                left_out.lines().count(),
                template.lines().count()
                    - template[template.find(ATTEST_JOB).expect("job")..]
                        .lines()
                        .count()
            );
            assert_eq!(without_attest(&left_out), left_out);
            // doctor compares a file with or without the job with the template with or without it.
            assert_eq!(template_for(single, &template), template);
            assert_eq!(template_for(single, &left_out), left_out);
        }
        // A job after it is kept, with its blank line.
        let middle = format!("{}\n  later:\n    runs-on: x\n", GATE_TEMPLATE);
        assert_eq!(
            without_attest(&middle),
            format!(
                "{}\n  later:\n    runs-on: x\n",
                without_attest(GATE_TEMPLATE)
            )
        );
        assert_eq!(template_for(NIGHTLY_TEMPLATE, "no job"), NIGHTLY_TEMPLATE);
    }
}
