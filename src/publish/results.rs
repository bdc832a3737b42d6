//! Workflow artifacts over the v4 results service, natively (`reference/artifact-protocol.md`): the
//! runtime token's `scp` claim, CreateArtifact, the Azure-style block upload, FinalizeArtifact, and the
//! same run's download through ListArtifacts and GetSignedArtifactURL.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

/// The block size of the upload, as the official client uses.
pub const BLOCK: usize = 8 << 20;

/// How often a block, the block list or FinalizeArtifact is tried before the upload gives up.
/// How the results service and the blob store are retried.
const RETRY: crate::retry::Policy = crate::retry::NETWORK;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArtifactError {
    #[error("ACTIONS_RUNTIME_TOKEN is not a JWT with an `Actions.Results:<run>:<job>` scope: {0}")]
    Token(String),
    #[error(
        "an artifact named `{0}` already exists in this run (409): a run uploads its pack once"
    )]
    Duplicate(String),
    #[error("{call} failed: HTTP {status}: {body}")]
    Status {
        call: String,
        status: u16,
        body: String,
    },
    #[error("{call} failed: {error}")]
    Transport { call: String, error: String },
    #[error("{0}")]
    Protocol(String),
    #[error("no artifact named `{0}` in this run")]
    NotFound(String),
    #[error("{count} artifacts are named `{name}` in this run: refusing to guess which")]
    Ambiguous { name: String, count: usize },
}

/// The backend ids of the run and job the token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub run: String,
    pub job: String,
}

impl Backend {
    /// Reads the `scp` claim of the runtime token (decoded without checking its signature, as the
    /// official client does): one scope `Actions.Results:<run>:<job>`.
    pub fn from_token(token: &str) -> Result<Backend, ArtifactError> {
        let payload = token
            .split('.')
            .nth(1)
            .ok_or_else(|| ArtifactError::Token("not three dot-separated parts".into()))?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .map_err(|e| ArtifactError::Token(format!("the payload is not base64url: {e}")))?;
        let claims: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ArtifactError::Token(format!("the payload is not JSON: {e}")))?;
        let scp = claims
            .get("scp")
            .and_then(Value::as_str)
            .ok_or_else(|| ArtifactError::Token("no `scp` claim".into()))?;
        for scope in scp.split(' ') {
            let parts: Vec<&str> = scope.split(':').collect();
            if let ["Actions.Results", run, job] = parts.as_slice()
                && !run.is_empty()
                && !job.is_empty()
            {
                return Ok(Backend {
                    run: run.to_string(),
                    job: job.to_string(),
                });
            }
        }
        Err(ArtifactError::Token(format!(
            "no `Actions.Results:<run>:<job>` scope in `{scp}`"
        )))
    }
}

/// The retention to request: `[proof] retention_days` capped by the repository's `GITHUB_RETENTION_DAYS`,
/// with the warning to print when it was capped.
pub fn retention(requested: u32, repository_max: Option<u32>) -> (u32, Option<String>) {
    match repository_max {
        Some(max) if requested > max => (
            max,
            Some(format!(
                "`[proof] retention_days` is {requested}, but this repository keeps artifacts at most {max} days: using {max}"
            )),
        ),
        _ => (requested.max(1), None),
    }
}

/// A client of the results service of `ACTIONS_RESULTS_URL`.
pub struct Results {
    origin: String,
    token: String,
    backend: Backend,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Results")
            .field("origin", &self.origin)
            .field("token", &"<redacted>")
            .field("backend", &self.backend)
            .finish()
    }
}

/// An artifact of this run, as the service lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub id: Option<u64>,
    /// `sha256:<hex>` of the zip, when the service says it.
    pub digest: Option<String>,
}

/// How one upload went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    pub artifact_id: String,
    pub size: u64,
    pub sha256: String,
}

impl Results {
    /// A client for `results_url` (only its scheme, host and port count) with the runtime token.
    pub fn new(results_url: &str, token: &str) -> Result<Results, ArtifactError> {
        let backend = Backend::from_token(token)?;
        let origin = origin_of(results_url).ok_or_else(|| {
            ArtifactError::Protocol(format!(
                "ACTIONS_RESULTS_URL `{results_url}` is not an http(s) URL"
            ))
        })?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build()
            .into();
        Ok(Results {
            origin,
            token: token.to_string(),
            backend,
            agent,
        })
    }

    fn twirp(&self, method: &str, body: Value) -> Result<Value, ArtifactError> {
        let url = format!(
            "{}/twirp/github.actions.results.api.v1.ArtifactService/{method}",
            self.origin
        );
        let mut response = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Authorization", &format!("Bearer {}", self.token))
            .send(body.to_string())
            .map_err(|e| ArtifactError::Transport {
                call: method.to_string(),
                error: e.to_string(),
            })?;
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        if status == 409 {
            return Err(ArtifactError::Duplicate(
                body.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ));
        }
        if !(200..300).contains(&status) {
            return Err(ArtifactError::Status {
                call: method.to_string(),
                status,
                body: text,
            });
        }
        serde_json::from_str(&text)
            .map_err(|e| ArtifactError::Protocol(format!("{method} answered no JSON: {e}")))
    }

    /// Uploads a zip file as the artifact `name`: CreateArtifact once (never retried, so that a retry
    /// cannot make a second artifact), the blocks and the block list (retried), then FinalizeArtifact.
    pub fn upload(
        &self,
        name: &str,
        zip: &Path,
        retention_days: Option<u32>,
        now: time::OffsetDateTime,
    ) -> Result<Uploaded, ArtifactError> {
        let mut create = json!({
            "workflow_run_backend_id": self.backend.run,
            "workflow_job_run_backend_id": self.backend.job,
            "name": name,
            "version": 4,
        });
        if let Some(days) = retention_days {
            let expires = now + time::Duration::days(i64::from(days));
            let text = expires
                .format(&time::format_description::well_known::Rfc3339)
                .map_err(|e| ArtifactError::Protocol(e.to_string()))?;
            create["expires_at"] = Value::String(text);
        }
        let created = self.twirp("CreateArtifact", create)?;
        if created.get("ok").and_then(Value::as_bool) != Some(true) {
            return Err(ArtifactError::Protocol(format!(
                "CreateArtifact did not answer ok: {created}"
            )));
        }
        let url = field(&created, &["signed_upload_url", "signedUploadUrl"]).ok_or_else(|| {
            ArtifactError::Protocol("CreateArtifact gave no signed upload URL".into())
        })?;

        let mut file = std::fs::File::open(zip)
            .map_err(|e| ArtifactError::Protocol(format!("cannot read the zip: {e}")))?;
        let mut hash = <sha2::Sha256 as sha2::Digest>::new();
        let mut size = 0u64;
        let mut ids = Vec::new();
        let mut chunk = vec![0u8; BLOCK];
        loop {
            let n = fill(&mut file, &mut chunk)
                .map_err(|e| ArtifactError::Protocol(format!("cannot read the zip: {e}")))?;
            if n == 0 && !ids.is_empty() {
                break;
            }
            sha2::Digest::update(&mut hash, &chunk[..n]);
            size += n as u64;
            // Block ids are base64 of fixed-width strings: Azure wants them all the same length.
            let id = base64::engine::general_purpose::STANDARD.encode(format!("{:08}", ids.len()));
            let block_url = format!(
                "{url}&comp=block&blockid={}",
                crate::github::percent_encode(&id)
            );
            self.with_retries("a block upload", || {
                self.agent.put(&block_url).send(&chunk[..n])
            })?;
            ids.push(id);
            if n < BLOCK {
                break;
            }
        }
        let list: String = ids
            .iter()
            .map(|id| format!("<Latest>{id}</Latest>"))
            .collect();
        let xml =
            format!("<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>{list}</BlockList>");
        let list_url = format!("{url}&comp=blocklist");
        self.with_retries("the block list", || {
            self.agent
                .put(&list_url)
                .header("x-ms-blob-content-type", "application/zip")
                .send(xml.as_bytes())
        })?;
        let sha256: String = sha2::Digest::finalize(hash)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let finalize = json!({
            "workflow_run_backend_id": self.backend.run,
            "workflow_job_run_backend_id": self.backend.job,
            "name": name,
            "size": size.to_string(),
            "hash": format!("sha256:{sha256}"),
        });
        let mut last = None;
        for attempt in 0..RETRY.attempts {
            match self.twirp("FinalizeArtifact", finalize.clone()) {
                Ok(done) => {
                    let id = field(&done, &["artifact_id", "artifactId"]).unwrap_or_default();
                    return Ok(Uploaded {
                        artifact_id: id,
                        size,
                        sha256,
                    });
                }
                Err(e @ ArtifactError::Status { status, .. }) if status >= 500 => last = Some(e),
                Err(e @ ArtifactError::Transport { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
            if RETRY.another_after(attempt) {
                RETRY.wait(attempt, None);
            }
        }
        Err(last.unwrap_or_else(|| ArtifactError::Protocol("FinalizeArtifact failed".into())))
    }

    /// Sends one request to the blob store (no GitHub Authorization header goes there), retrying 5xx
    /// answers and dropped connections with a bounded backoff.
    fn with_retries(
        &self,
        what: &str,
        send: impl Fn() -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(), ArtifactError> {
        let mut last = String::new();
        for attempt in 0..RETRY.attempts {
            match send() {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(mut response)
                    if response.status().as_u16() >= 500 || response.status().as_u16() == 429 =>
                {
                    last = format!(
                        "HTTP {}: {}",
                        response.status().as_u16(),
                        response.body_mut().read_to_string().unwrap_or_default()
                    );
                }
                Ok(mut response) => {
                    return Err(ArtifactError::Status {
                        call: what.to_string(),
                        status: response.status().as_u16(),
                        body: response.body_mut().read_to_string().unwrap_or_default(),
                    });
                }
                Err(e) => last = e.to_string(),
            }
            if RETRY.another_after(attempt) {
                RETRY.wait(attempt, None);
            }
        }
        Err(ArtifactError::Transport {
            call: what.to_string(),
            error: format!("{} attempts failed, the last with {last}", RETRY.attempts),
        })
    }

    /// Every finished artifact of this run: its name, id and the digest the service reports.
    pub fn list(&self) -> Result<Vec<Listed>, ArtifactError> {
        let listed = self.twirp(
            "ListArtifacts",
            json!({"workflow_run_backend_id": self.backend.run, "workflow_job_run_backend_id": self.backend.job}),
        )?;
        Ok(listed
            .get("artifacts")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| {
                        Some(Listed {
                            name: i.get("name")?.as_str()?.to_string(),
                            id: field(i, &["database_id", "databaseId"])
                                .and_then(|id| id.parse().ok()),
                            digest: field(i, &["digest"]),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Downloads this run's artifact `name`: exactly one must exist.
    pub fn download(&self, name: &str) -> Result<Vec<u8>, ArtifactError> {
        self.download_with_id(name).map(|(bytes, _)| bytes)
    }

    /// Downloads this run's artifact `name` (exactly one must exist) with its id, when the service
    /// says it: the number in its address, `…/actions/runs/<run>/artifacts/<id>`.
    pub fn download_with_id(&self, name: &str) -> Result<(Vec<u8>, Option<u64>), ArtifactError> {
        let listed = self.twirp(
            "ListArtifacts",
            json!({"workflow_run_backend_id": self.backend.run, "workflow_job_run_backend_id": self.backend.job, "name_filter": name}),
        )?;
        let items: Vec<&Value> = listed
            .get("artifacts")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|i| i.get("name").and_then(Value::as_str) == Some(name))
                    .collect()
            })
            .unwrap_or_default();
        match items.len() {
            0 => return Err(ArtifactError::NotFound(name.to_string())),
            1 => {}
            count => {
                return Err(ArtifactError::Ambiguous {
                    name: name.to_string(),
                    count,
                });
            }
        }
        let id = field(items[0], &["database_id", "databaseId"]).and_then(|id| id.parse().ok());
        let signed = self.twirp(
            "GetSignedArtifactURL",
            json!({"workflow_run_backend_id": self.backend.run, "workflow_job_run_backend_id": self.backend.job, "name": name}),
        )?;
        let url = field(&signed, &["signed_url", "signedUrl"])
            .ok_or_else(|| ArtifactError::Protocol("GetSignedArtifactURL gave no URL".into()))?;
        let mut response = self
            .agent
            .get(&url)
            .call()
            .map_err(|e| ArtifactError::Transport {
                call: "the artifact download".into(),
                error: e.to_string(),
            })?;
        let status = response.status().as_u16();
        if status == 410 {
            return Err(ArtifactError::Protocol(format!(
                "the artifact `{name}` has expired"
            )));
        }
        if !(200..300).contains(&status) {
            return Err(ArtifactError::Status {
                call: "the artifact download".into(),
                status,
                body: String::new(),
            });
        }
        let mut bytes = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(2 << 30)
            .read_to_end(&mut bytes)
            .map_err(|e| ArtifactError::Transport {
                call: "the artifact download".into(),
                error: e.to_string(),
            })?;
        Ok((bytes, id))
    }
}

/// Reads until `buf` is full or the file ends.
fn fill(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            read => n += read,
        }
    }
    Ok(n)
}

/// A string field under any of its spellings (the service may answer snake_case or camelCase, and
/// integers as strings or numbers).
fn field(value: &Value, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| match value.get(*n)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let e = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            e(b"{\"alg\":\"none\"}"),
            e(claims.to_string().as_bytes())
        )
    }

    #[test]
    fn the_scope_names_the_run_and_job() {
        let token =
            jwt(&json!({"scp": "Actions.ExampleScope Actions.Results:ce7f54c7:ca395085-040a"}));
        assert_eq!(
            Backend::from_token(&token),
            Ok(Backend {
                run: "ce7f54c7".into(),
                job: "ca395085-040a".into()
            })
        );
        assert!(Backend::from_token(&jwt(&json!({"scp": "Actions.Results:only-two"}))).is_err());
        assert!(Backend::from_token(&jwt(&json!({"sub": "x"}))).is_err());
        assert!(Backend::from_token("not-a-jwt").is_err());
    }

    #[test]
    fn retention_is_capped_by_the_repository() {
        assert_eq!(retention(30, Some(90)), (30, None));
        let (days, warning) = retention(400, Some(90));
        assert_eq!(days, 90);
        assert!(warning.expect("warned").contains("at most 90 days"));
        assert_eq!(retention(0, None), (1, None));
    }

    #[test]
    fn only_the_origin_of_the_results_url_counts() {
        assert_eq!(
            origin_of("https://results-receiver.actions.githubusercontent.com/x/y"),
            Some("https://results-receiver.actions.githubusercontent.com".into())
        );
        assert_eq!(
            origin_of("http://127.0.0.1:8080"),
            Some("http://127.0.0.1:8080".into())
        );
        assert_eq!(origin_of("ftp://x"), None);
    }
}
