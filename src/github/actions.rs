//! The Actions endpoints aayu uses (SPEC §9): workflows, their runs, a run's attempts, jobs and
//! artifacts, and an artifact's zip through its signed URL.

use super::RepoSlug;
use http::Method;
use serde_json::Value;

use super::{Client, GitHubError, maybe, number, percent_encode, text};

/// A workflow of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub id: u64,
    pub name: String,
    /// `.github/workflows/<file>`.
    pub path: String,
    pub state: String,
}

/// A workflow run, with what binds it (SPEC §6 "aayu ship").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    pub id: u64,
    pub path: String,
    pub event: String,
    pub head_branch: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub run_attempt: u64,
    pub repository: String,
    pub head_repository: Option<String>,
    pub html_url: String,
}

/// A job of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: u64,
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub run_attempt: u64,
}

/// An artifact of a workflow run, as `GET /repos/{o}/{r}/actions/runs/{run}/artifacts` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunArtifact {
    pub id: u64,
    pub name: String,
    pub size: u64,
    pub expired: bool,
    pub digest: Option<String>,
    /// The run that uploaded it (`workflow_run.id`), when GitHub says.
    pub run_id: Option<u64>,
}

/// Server-side filters of a workflow's runs; `RunFilter::default()` lists every run (what `aayu ship`
/// must do, SPEC §6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter<'a> {
    pub event: Option<&'a str>,
    pub branch: Option<&'a str>,
}

fn run_of(r: &Value) -> WorkflowRun {
    WorkflowRun {
        id: number(r, "/id"),
        path: text(r, "/path"),
        event: text(r, "/event"),
        head_branch: text(r, "/head_branch"),
        head_sha: text(r, "/head_sha"),
        status: text(r, "/status"),
        conclusion: maybe(r, "/conclusion"),
        run_attempt: r.get("run_attempt").and_then(Value::as_u64).unwrap_or(1),
        repository: text(r, "/repository/full_name"),
        head_repository: maybe(r, "/head_repository/full_name"),
        html_url: text(r, "/html_url"),
    }
}

fn artifact_of(item: &Value) -> RunArtifact {
    RunArtifact {
        id: number(item, "/id"),
        name: text(item, "/name"),
        size: number(item, "/size_in_bytes"),
        expired: item
            .get("expired")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        digest: maybe(item, "/digest"),
        run_id: item.pointer("/workflow_run/id").and_then(Value::as_u64),
    }
}

impl Client {
    /// Every workflow of the repository (all pages).
    pub fn workflows(&self, repo: &RepoSlug) -> Result<Vec<Workflow>, GitHubError> {
        Ok(self
            .list_in(
                &format!("/repos/{repo}/actions/workflows"),
                "workflows",
                &format!("the workflows of {repo}"),
            )?
            .iter()
            .map(|w| Workflow {
                id: number(w, "/id"),
                name: text(w, "/name"),
                path: text(w, "/path"),
                state: text(w, "/state"),
            })
            .collect())
    }

    /// Every run of a workflow file (all pages), newest first.
    pub fn workflow_runs(
        &self,
        repo: &RepoSlug,
        workflow_file: &str,
        filter: &RunFilter<'_>,
    ) -> Result<Vec<WorkflowRun>, GitHubError> {
        let file = workflow_file.rsplit('/').next().unwrap_or(workflow_file);
        let mut path = format!(
            "/repos/{repo}/actions/workflows/{}/runs",
            percent_encode(file)
        );
        let mut sep = '?';
        for (key, value) in [("event", filter.event), ("branch", filter.branch)] {
            if let Some(value) = value {
                path.push_str(&format!("{sep}{key}={}", percent_encode(value)));
                sep = '&';
            }
        }
        let mut runs: Vec<WorkflowRun> = self
            .list_in(&path, "workflow_runs", &format!("the runs of {file}"))?
            .iter()
            .map(run_of)
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.id));
        Ok(runs)
    }

    /// `GET /repos/{o}/{r}/actions/runs/{id}`: the run as of its latest attempt.
    pub fn run(&self, repo: &RepoSlug, run_id: u64) -> Result<WorkflowRun, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/actions/runs/{run_id}"),
            None,
            &format!("run {run_id}"),
        )?;
        Ok(run_of(&v))
    }

    /// One attempt of a run.
    pub fn run_attempt(
        &self,
        repo: &RepoSlug,
        run_id: u64,
        attempt: u64,
    ) -> Result<WorkflowRun, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/actions/runs/{run_id}/attempts/{attempt}"),
            None,
            &format!("attempt {attempt} of run {run_id}"),
        )?;
        Ok(run_of(&v))
    }

    /// The jobs of a run's latest attempt (all pages).
    pub fn run_jobs(&self, repo: &RepoSlug, run_id: u64) -> Result<Vec<Job>, GitHubError> {
        Ok(self
            .list_in(
                &format!("/repos/{repo}/actions/runs/{run_id}/jobs"),
                "jobs",
                &format!("the jobs of run {run_id}"),
            )?
            .iter()
            .map(|j| Job {
                id: number(j, "/id"),
                name: text(j, "/name"),
                status: text(j, "/status"),
                conclusion: maybe(j, "/conclusion"),
                run_attempt: j.get("run_attempt").and_then(Value::as_u64).unwrap_or(1),
            })
            .collect())
    }

    /// Every artifact of a run named `name` (all pages).
    pub fn run_artifacts(
        &self,
        repo: &RepoSlug,
        run_id: u64,
        name: &str,
    ) -> Result<Vec<RunArtifact>, GitHubError> {
        Ok(self
            .list_in(
                &format!(
                    "/repos/{repo}/actions/runs/{run_id}/artifacts?name={}",
                    percent_encode(name)
                ),
                "artifacts",
                &format!("the artifacts of run {run_id}"),
            )?
            .iter()
            .map(artifact_of)
            // The filter is GitHub's; an answer that ignores it must not bring in another name.
            .filter(|a| a.name == name)
            .collect())
    }

    /// `GET /repos/{o}/{r}/actions/artifacts/{id}`.
    pub fn artifact(&self, repo: &RepoSlug, artifact_id: u64) -> Result<RunArtifact, GitHubError> {
        let v = self.json(
            Method::GET,
            &format!("/repos/{repo}/actions/artifacts/{artifact_id}"),
            None,
            &format!("artifact {artifact_id}"),
        )?;
        Ok(artifact_of(&v))
    }

    /// Downloads an artifact's zip, at most `limit` bytes: `GET …/artifacts/{id}/zip` answers 302 to a
    /// short-lived signed URL on another host, which is followed **without** the Authorization header;
    /// 410 means it expired.
    pub fn artifact_zip(
        &self,
        repo: &RepoSlug,
        artifact_id: u64,
        limit: u64,
    ) -> Result<Vec<u8>, GitHubError> {
        let what = format!("artifact {artifact_id}");
        let answer = self.send(
            Method::GET,
            &format!("/repos/{repo}/actions/artifacts/{artifact_id}/zip"),
            None,
            &what,
        )?;
        let location = match answer.status {
            301 | 302 | 303 | 307 | 308 => answer
                .headers
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            _ => None,
        }
        .ok_or_else(|| GitHubError::Status {
            what: what.clone(),
            status: answer.status,
            message: "expected a redirect to the artifact's signed URL".into(),
        })?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        let (status, bytes) = super::download(&agent, &location, &what, limit)?;
        if status == 410 {
            return Err(GitHubError::Gone {
                what,
                message: "the artifact has expired".into(),
            });
        }
        if !(200..300).contains(&status) {
            return Err(GitHubError::Status {
                what,
                status,
                message: "the signed URL refused the download".into(),
            });
        }
        if bytes.len() as u64 > limit {
            return Err(GitHubError::Status {
                what,
                status,
                message: format!("larger than {limit} bytes"),
            });
        }
        Ok(bytes)
    }
}
