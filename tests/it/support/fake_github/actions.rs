//! The fake GitHub's Actions: workflows, their runs, attempts and jobs, a run's artifacts, and the artifact
//! zip's redirect to a signed URL on another host.

use super::*;

pub(super) fn run_json(
    template: Value,
    fake: &Fake,
    r: &FakeRun,
    attempt: u64,
    status: &str,
    conclusion: Option<&str>,
) -> Value {
    let mut v = template;
    let repo_template = v["repository"].clone();
    set(
        &mut v,
        &[
            ("/id", json!(r.id)),
            ("/path", json!(r.path)),
            ("/event", json!(r.event)),
            ("/head_branch", json!(r.head_branch)),
            ("/head_sha", json!(r.head_sha)),
            ("/status", json!(status)),
            ("/conclusion", json!(conclusion)),
            ("/run_attempt", json!(attempt)),
            (
                "/repository",
                embedded_repo(repo_template.clone(), &r.repository),
            ),
            (
                "/head_repository",
                embedded_repo(repo_template, &r.head_repository),
            ),
            (
                "/url",
                json!(format!("{}/actions/runs/{}", api(&fake.repo), r.id)),
            ),
            (
                "/html_url",
                json!(format!(
                    "https://github.com/{}/actions/runs/{}",
                    fake.repo, r.id
                )),
            ),
            ("/pull_requests", json!([])),
        ],
    );
    v
}

pub(super) fn artifact_json(repo: &str, a: &(u64, u64, String, Vec<u8>, bool)) -> Value {
    let (run, id, name, bytes, expired) = a;
    let mut v = example("actions/get-artifact");
    set(
        &mut v,
        &[
            ("/id", json!(id)),
            ("/name", json!(name)),
            ("/size_in_bytes", json!(bytes.len())),
            (
                "/url",
                json!(format!("{}/actions/artifacts/{id}", api(repo))),
            ),
            (
                "/archive_download_url",
                json!(format!("{}/actions/artifacts/{id}/zip", api(repo))),
            ),
            ("/expired", json!(expired)),
            ("/workflow_run/id", json!(run)),
        ],
    );
    v["digest"] = json!(format!("sha256:{}", aayudha::hash::bytes(bytes)));
    v
}

pub(super) async fn workflows(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET workflows");
    let fake = &caller.fake;
    let template = example("actions/list-repo-workflows")["workflows"][0].clone();
    let files: std::collections::BTreeSet<&str> = fake.runs.iter().map(FakeRun::file).collect();
    let items = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let mut v = template.clone();
            set(
                &mut v,
                &[
                    ("/id", json!(i + 1)),
                    ("/name", json!(file.trim_end_matches(".yml"))),
                    ("/path", json!(format!(".github/workflows/{file}"))),
                    ("/state", json!("active")),
                ],
            );
            v
        })
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/actions/workflows"),
        items,
        &query,
        Some("workflows"),
    )
}

pub(super) async fn runs(
    State(state): State<Shared>,
    Path((owner, repo, file)): Path<(String, String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET runs {file}");
    let fake = &caller.fake;
    if !fake.runs.iter().any(|r| r.file() == file) {
        return not_found();
    }
    let template = item("actions/list-workflow-runs", Some("workflow_runs"));
    let mut matching: Vec<&FakeRun> = fake
        .runs
        .iter()
        .filter(|r| r.file() == file)
        .filter(|r| query.get("event").is_none_or(|e| *e == r.event))
        .filter(|r| query.get("branch").is_none_or(|b| *b == r.head_branch))
        .collect();
    matching.sort_by_key(|r| std::cmp::Reverse(r.id));
    let items = matching
        .iter()
        .map(|r| {
            run_json(
                template.clone(),
                fake,
                r,
                r.run_attempt,
                &r.status,
                r.conclusion.as_deref(),
            )
        })
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/actions/workflows/{file}/runs"),
        items,
        &query,
        Some("workflow_runs"),
    )
}

pub(super) async fn run(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET run {id}");
    let fake = &caller.fake;
    match fake.runs.iter().find(|r| r.id == id) {
        Some(r) => ok(run_json(
            example("actions/get-workflow-run"),
            fake,
            r,
            r.run_attempt,
            &r.status,
            r.conclusion.as_deref(),
        )),
        None => not_found(),
    }
}

pub(super) async fn run_attempt(
    State(state): State<Shared>,
    Path((owner, repo, id, attempt)): Path<(String, String, u64, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(
        state,
        headers,
        owner,
        repo,
        "GET run {id} attempt {attempt}"
    );
    let fake = &caller.fake;
    let Some(r) = fake.runs.iter().find(|r| r.id == id) else {
        return not_found();
    };
    let template = example("actions/get-workflow-run-attempt");
    if attempt == r.run_attempt {
        return ok(run_json(
            template,
            fake,
            r,
            attempt,
            &r.status,
            r.conclusion.as_deref(),
        ));
    }
    match attempt
        .checked_sub(1)
        .and_then(|i| r.earlier_attempts.get(i as usize))
    {
        Some((status, conclusion)) => ok(run_json(
            template,
            fake,
            r,
            attempt,
            status,
            conclusion.as_deref(),
        )),
        None => not_found(),
    }
}

pub(super) async fn jobs(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET jobs of run {id}");
    let fake = &caller.fake;
    let Some(r) = fake.runs.iter().find(|r| r.id == id) else {
        return not_found();
    };
    let template = example("actions/list-jobs-for-workflow-run")["jobs"][0].clone();
    let items = r
        .jobs
        .iter()
        .enumerate()
        .map(|(i, (name, conclusion))| {
            let mut v = template.clone();
            set(
                &mut v,
                &[
                    ("/id", json!(id * 100 + i as u64)),
                    ("/run_id", json!(id)),
                    ("/run_attempt", json!(r.run_attempt)),
                    ("/name", json!(name)),
                    (
                        "/status",
                        json!(if conclusion.is_some() {
                            "completed"
                        } else {
                            "in_progress"
                        }),
                    ),
                    ("/conclusion", json!(conclusion)),
                    ("/head_sha", json!(r.head_sha)),
                ],
            );
            v
        })
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/actions/runs/{id}/jobs"),
        items,
        &query,
        Some("jobs"),
    )
}

pub(super) async fn run_artifacts(
    State(state): State<Shared>,
    Path((owner, repo, run)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET artifacts of {run}");
    let fake = &caller.fake;
    let name = query.get("name").cloned();
    let items: Vec<Value> = fake
        .run_artifacts
        .iter()
        .filter(|(r, _, n, _, _)| *r == run && name.as_ref().is_none_or(|want| want == n))
        .map(|a| artifact_json(&fake.repo, a))
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/actions/runs/{run}/artifacts"),
        items,
        &query,
        Some("artifacts"),
    )
}

pub(super) async fn artifact(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET artifact {id}");
    match caller.fake.run_artifacts.iter().find(|a| a.1 == id) {
        Some(a) => ok(artifact_json(&caller.fake.repo, a)),
        None => not_found(),
    }
}

pub(super) async fn artifact_zip(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET artifact {id} zip");
    match caller.fake.run_artifacts.iter().find(|a| a.1 == id) {
        None => not_found(),
        Some(a) if a.4 => error(StatusCode::GONE, "Artifact has expired"),
        // The signed URL is on another host name, as GitHub's blob storage is.
        Some(_) => (
            StatusCode::FOUND,
            [(
                "location",
                format!("http://localhost:{}/signed/{id}?sig=x", caller.fake.port),
            )],
        )
            .into_response(),
    }
}

pub(super) async fn signed(
    State(state): State<Shared>,
    Path(id): Path<u64>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Some(refused) = refuse_authorization(&mut fake, &headers, "the signed URL") {
        return refused;
    }
    match fake.run_artifacts.iter().find(|a| a.1 == id) {
        Some(a) => (StatusCode::OK, a.3.clone()).into_response(),
        None => not_found(),
    }
}
