//! An in-process fake of GitHub's REST API for issue comments and the token's user: stateful, paginated
//! with `Link` headers (absolute URLs, as GitHub sends), secondary rate limits on demand, and strict — an
//! unexpected request is answered 500 and recorded.

#![allow(dead_code)]
// A handler's refusal is a whole response; boxing it would only add noise to a test fake.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct Comment {
    pub id: u64,
    pub login: String,
    pub body: String,
}

#[derive(Debug, Default)]
pub struct Fake {
    /// token → login; a token absent here is refused (401).
    pub tokens: BTreeMap<String, String>,
    /// Tokens whose `GET /user` is forbidden (workflow tokens).
    pub no_user: Vec<String>,
    /// Tokens that may read but not write.
    pub read_only: Vec<String>,
    pub comments: Vec<Comment>,
    pub next_id: u64,
    /// Answer this many requests with a secondary rate limit first.
    pub rate_limited: usize,
    /// Before the next comment is created, another writer creates this one (a race).
    pub race: Option<(String, String)>,
    /// Delete the comment a PATCH targets before answering (it was deleted in between).
    pub vanish_on_patch: bool,
    /// Files on branches: (branch, path) → bytes, for the contents API.
    pub files: BTreeMap<(String, String), Vec<u8>>,
    /// Issues: number → the issue's JSON.
    pub issues: BTreeMap<u64, Value>,
    /// Reviews of pull requests: number → (login, state, commit).
    pub reviews: BTreeMap<u64, Vec<(String, String, String)>>,
    /// Collaborators' permissions.
    pub permissions: BTreeMap<String, String>,
    /// Merges done: (number, sha).
    pub merged: Vec<(u64, String)>,
    /// Runs of workflow files: file name → runs' JSON.
    pub runs: BTreeMap<String, Vec<Value>>,
    /// Pull requests: number → head SHA.
    pub pulls: BTreeMap<u64, String>,
    /// Commit statuses set: (sha, state, context, description).
    pub statuses: Vec<(String, String, String, String)>,
    /// Artifacts of runs: (run id, id, name, bytes, expired).
    pub run_artifacts: Vec<(u64, u64, String, Vec<u8>, bool)>,
    /// Authorization headers that reached the signed blob URL (must stay empty).
    pub auth_to_blob: usize,
    pub requests: Vec<String>,
    pub unexpected: Vec<String>,
    pub port: u16,
}

pub type Shared = Arc<Mutex<Fake>>;

pub struct Server {
    pub state: Shared,
    pub url: String,
    _runtime: tokio::runtime::Runtime,
}

impl Server {
    pub fn start() -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let state: Shared = Arc::new(Mutex::new(Fake {
            next_id: 1000,
            ..Fake::default()
        }));
        let app = Router::new()
            .route("/user", get(user))
            .route(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                get(list).post(create),
            )
            .route(
                "/repos/{owner}/{repo}/issues/comments/{id}",
                patch(edit).delete(remove),
            )
            .route(
                "/repos/{owner}/{repo}/actions/runs/{run}/artifacts",
                get(run_artifacts),
            )
            .route(
                "/repos/{owner}/{repo}/actions/artifacts/{id}/zip",
                get(artifact_zip),
            )
            .route("/signed/{id}", get(signed))
            .route("/repos/{owner}/{repo}/contents/{*path}", get(contents))
            .route("/repos/{owner}/{repo}/pulls/{number}", get(pull))
            .route("/repos/{owner}/{repo}/issues/{number}", get(issue))
            .route("/repos/{owner}/{repo}/pulls/{number}/reviews", get(reviews))
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/merge",
                axum::routing::put(merge),
            )
            .route(
                "/repos/{owner}/{repo}/collaborators/{user}/permission",
                get(permission),
            )
            .route(
                "/repos/{owner}/{repo}/actions/workflows/{file}/runs",
                get(runs),
            )
            .route(
                "/repos/{owner}/{repo}/statuses/{sha}",
                axum::routing::post(status),
            )
            .fallback(unexpected)
            .with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        state.lock().expect("lock").port = port;
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Server {
            state,
            url: format!("http://127.0.0.1:{port}"),
            _runtime: runtime,
        }
    }

    pub fn seed(&self, login: &str, body: &str) -> u64 {
        let mut fake = self.state.lock().expect("lock");
        fake.next_id += 1;
        let id = fake.next_id;
        fake.comments.push(Comment {
            id,
            login: login.to_string(),
            body: body.to_string(),
        });
        id
    }

    pub fn comments(&self) -> Vec<Comment> {
        self.state.lock().expect("lock").comments.clone()
    }

    pub fn assert_clean(&self) {
        let fake = self.state.lock().expect("lock");
        assert!(
            fake.unexpected.is_empty(),
            "the fake GitHub got unexpected requests: {:?}",
            fake.unexpected
        );
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [("content-type", "application/json")],
        json!({"message": message, "documentation_url": "https://docs.github.com/rest"})
            .to_string(),
    )
        .into_response()
}

/// The login of the request's token, or the refusal to send.
fn auth(fake: &mut Fake, headers: &HeaderMap, line: String) -> Result<String, Response> {
    fake.requests.push(line);
    if fake.rate_limited > 0 {
        fake.rate_limited -= 1;
        return Err((StatusCode::FORBIDDEN, [("retry-after", "1"), ("content-type", "application/json")], json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}).to_string()).into_response());
    }
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("token "))
        })
        .unwrap_or_default()
        .to_string();
    fake.tokens
        .get(&token)
        .cloned()
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "Bad credentials"))
        .map(|login| {
            if fake.read_only.contains(&token) {
                format!("readonly:{login}")
            } else {
                login
            }
        })
}

fn json_of(status: StatusCode, value: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// A user as GitHub's `simple-user` schema has it (every required field).
fn simple_user(login: &str) -> Value {
    let id = login
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 10_000_000;
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login, "id": id, "node_id": format!("U_{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"), "gravatar_id": "",
        "url": api, "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"), "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"), "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"), "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"), "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": if login.ends_with("[bot]") { "Bot" } else { "User" }, "site_admin": false
    })
}

/// A comment as GitHub's `issue-comment` schema has it.
fn comment_json(c: &Comment) -> Value {
    json!({
        "id": c.id, "node_id": format!("IC_{}", c.id),
        "url": format!("https://api.github.com/repos/octo/shop/issues/comments/{}", c.id),
        "html_url": format!("https://github.com/octo/shop/pull/3#issuecomment-{}", c.id),
        "issue_url": "https://api.github.com/repos/octo/shop/issues/3",
        "body": c.body, "user": simple_user(&c.login),
        "created_at": "2026-11-29T10:00:00Z", "updated_at": "2026-11-29T10:00:00Z",
        "author_association": if c.login.ends_with("[bot]") { "NONE" } else { "MEMBER" }
    })
}

async fn user(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let mut fake = state.lock().expect("lock");
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim_start_matches("Bearer ")
        .to_string();
    let login = match auth(&mut fake, &headers, "GET /user".into()) {
        Ok(login) => login,
        Err(refusal) => return refusal,
    };
    if fake.no_user.contains(&token) {
        return error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    json_of(
        StatusCode::OK,
        json!({"login": login.trim_start_matches("readonly:")}),
    )
}

async fn list(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(
        &mut fake,
        &headers,
        format!("GET comments page {:?}", query.get("page")),
    ) {
        return refusal;
    }
    let mut sorted = fake.comments.clone();
    sorted.sort_by_key(|c| c.id);
    let items: Vec<Value> = sorted.iter().map(comment_json).collect();
    paged(
        &fake,
        &format!("/repos/{owner}/{repo}/issues/{number}/comments"),
        items,
        &query,
        None,
    )
}

async fn create(
    State(state): State<Shared>,
    Path((_, _, _)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    let login = match auth(&mut fake, &headers, "POST comment".into()) {
        Ok(login) => login,
        Err(refusal) => return refusal,
    };
    if login.starts_with("readonly:") {
        return error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    let Some(text) = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["body"].as_str().map(str::to_string))
    else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body is required");
    };
    if text.chars().count() > 65_536 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Body is too long (maximum is 65536 characters)",
        );
    }
    if let Some((who, racing)) = fake.race.take() {
        fake.next_id += 1;
        let id = fake.next_id;
        fake.comments.push(Comment {
            id,
            login: who,
            body: racing,
        });
    }
    fake.next_id += 1;
    let comment = Comment {
        id: fake.next_id,
        login,
        body: text,
    };
    fake.comments.push(comment.clone());
    json_of(StatusCode::CREATED, comment_json(&comment))
}

async fn edit(
    State(state): State<Shared>,
    Path((_, _, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    let login = match auth(&mut fake, &headers, format!("PATCH {id}")) {
        Ok(login) => login,
        Err(refusal) => return refusal,
    };
    if fake.vanish_on_patch {
        fake.vanish_on_patch = false;
        fake.comments.retain(|c| c.id != id);
    }
    let text = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["body"].as_str().map(str::to_string))
        .unwrap_or_default();
    let Some(comment) = fake.comments.iter_mut().find(|c| c.id == id) else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    if comment.login != login {
        return error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    comment.body = text;
    let value = comment_json(comment);
    json_of(StatusCode::OK, value)
}

async fn remove(
    State(state): State<Shared>,
    Path((_, _, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    let login = match auth(&mut fake, &headers, format!("DELETE {id}")) {
        Ok(login) => login,
        Err(refusal) => return refusal,
    };
    match fake.comments.iter().position(|c| c.id == id) {
        Some(i) if fake.comments[i].login == login => {
            fake.comments.remove(i);
            StatusCode::NO_CONTENT.into_response()
        }
        Some(_) => error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        ),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn unexpected(State(state): State<Shared>, request: axum::extract::Request) -> Response {
    let line = format!("{} {}", request.method(), request.uri());
    state.lock().expect("lock").unexpected.push(line.clone());
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("unexpected request: {line}"),
    )
}

async fn run_artifacts(
    State(state): State<Shared>,
    Path((_, _, run)): Path<(String, String, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET artifacts of {run}")) {
        return refusal;
    }
    let name = query.get("name").cloned();
    let items: Vec<Value> = fake
        .run_artifacts
        .iter()
        .filter(|(r, _, n, _, _)| *r == run && name.as_ref().is_none_or(|want| want == n))
        .map(|(run, id, n, bytes, expired)| {
            json!({
                "id": id, "node_id": format!("MDg6QXJ0aWZhY3Q{id}"), "name": n, "size_in_bytes": bytes.len(),
                "url": format!("https://api.github.com/repos/octo/shop/actions/artifacts/{id}"),
                "archive_download_url": format!("https://api.github.com/repos/octo/shop/actions/artifacts/{id}/zip"),
                "expired": expired, "created_at": "2026-11-29T10:00:00Z", "expires_at": "2027-02-27T10:00:00Z",
                "updated_at": "2026-11-29T10:00:00Z", "digest": format!("sha256:{}", aayudha::pack::hash_bytes(bytes)),
                "workflow_run": {"id": run, "repository_id": 1, "head_repository_id": 1, "head_branch": "main", "head_sha": "1111111111111111111111111111111111111111"}
            })
        })
        .collect();
    json_of(
        StatusCode::OK,
        json!({"total_count": items.len(), "artifacts": items}),
    )
}

async fn artifact_zip(
    State(state): State<Shared>,
    Path((_, _, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET artifact {id} zip")) {
        return refusal;
    }
    match fake.run_artifacts.iter().find(|a| a.1 == id) {
        None => error(StatusCode::NOT_FOUND, "Not Found"),
        Some(a) if a.4 => error(StatusCode::GONE, "Artifact has expired"),
        // The signed URL is on another host name, as GitHub's blob storage is.
        Some(_) => (
            StatusCode::FOUND,
            [(
                "location",
                format!("http://localhost:{}/signed/{id}?sig=x", fake.port),
            )],
        )
            .into_response(),
    }
}

async fn signed(State(state): State<Shared>, Path(id): Path<u64>, headers: HeaderMap) -> Response {
    let mut fake = state.lock().expect("lock");
    if headers.contains_key("authorization") {
        fake.auth_to_blob += 1;
        return error(
            StatusCode::BAD_REQUEST,
            "an Authorization header must not reach the signed URL",
        );
    }
    match fake.run_artifacts.iter().find(|a| a.1 == id) {
        Some(a) => (StatusCode::OK, a.3.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn contents(
    State(state): State<Shared>,
    Path((_, _, path)): Path<(String, String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET contents {path}")) {
        return refusal;
    }
    let branch = query.get("ref").cloned().unwrap_or_else(|| "main".into());
    match fake.files.get(&(branch, path.clone())) {
        Some(bytes) => {
            use base64::Engine as _;
            let content = base64::engine::general_purpose::STANDARD.encode(bytes);
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            let url = format!("https://api.github.com/repos/octo/shop/contents/{path}?ref=ledger");
            let git = "https://api.github.com/repos/octo/shop/git/blobs/0000000000000000000000000000000000000000".to_string();
            let html = format!("https://github.com/octo/shop/blob/ledger/{path}");
            json_of(
                StatusCode::OK,
                json!({
                    "type": "file", "encoding": "base64", "size": bytes.len(), "name": name, "path": path, "content": content,
                    "sha": "0000000000000000000000000000000000000000", "url": url, "git_url": git, "html_url": html,
                    "download_url": format!("https://raw.githubusercontent.com/octo/shop/ledger/{path}"),
                    "_links": {"self": url, "git": git, "html": html}
                }),
            )
        }
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn pull(
    State(state): State<Shared>,
    Path((_, _, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET pull {number}")) {
        return refusal;
    }
    match fake.pulls.get(&number) {
        Some(head) => json_of(
            StatusCode::OK,
            json!({"number": number, "head": {"sha": head}, "base": {"sha": "0000000000000000000000000000000000000000"}}),
        ),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn status(
    State(state): State<Shared>,
    Path((_, _, sha)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    let login = match auth(&mut fake, &headers, format!("POST status {sha}")) {
        Ok(login) => login,
        Err(refusal) => return refusal,
    };
    if login.starts_with("readonly:") {
        return error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        );
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let description = v["description"].as_str().unwrap_or_default().to_string();
    if description.chars().count() > 140 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "description is too long (maximum is 140 characters)",
        );
    }
    let state_name = v["state"].as_str().unwrap_or_default().to_string();
    if !["error", "failure", "pending", "success"].contains(&state_name.as_str()) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "state is not included in the list",
        );
    }
    let context = v["context"].as_str().unwrap_or("default").to_string();
    fake.statuses.push((
        sha.clone(),
        state_name.clone(),
        context.clone(),
        description.clone(),
    ));
    let id = fake.statuses.len() as u64;
    json_of(
        StatusCode::CREATED,
        json!({
            "url": format!("https://api.github.com/repos/octo/shop/statuses/{sha}"),
            "avatar_url": "https://avatars.githubusercontent.com/in/15368?v=4", "id": id, "node_id": format!("SC_{id}"),
            "state": state_name, "description": description, "target_url": v["target_url"].as_str().unwrap_or("https://github.com/octo/shop"),
            "context": context, "created_at": "2026-11-29T10:00:00Z", "updated_at": "2026-11-29T10:00:00Z",
            "creator": simple_user(login.trim_start_matches("readonly:"))
        }),
    )
}

/// One page of a list, with GitHub's `Link` header, from all its items.
fn paged(
    fake: &Fake,
    path: &str,
    items: Vec<Value>,
    query: &BTreeMap<String, String>,
    wrap: Option<&str>,
) -> Response {
    let per_page: usize = query
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page: usize = query
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let pages = items.len().div_ceil(per_page).max(1);
    let total = items.len();
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let body = match wrap {
        Some(key) => json!({"total_count": total, key: slice}),
        None => Value::Array(slice),
    };
    let mut response = json_of(StatusCode::OK, body);
    if page < pages {
        let base = format!("http://127.0.0.1:{}{path}?per_page={per_page}", fake.port);
        let link = format!(
            "<{base}&page={}>; rel=\"next\", <{base}&page={pages}>; rel=\"last\"",
            page + 1
        );
        response
            .headers_mut()
            .insert("link", link.parse().expect("header"));
    }
    response
}

async fn issue(
    State(state): State<Shared>,
    Path((_, _, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET issue {number}")) {
        return refusal;
    }
    match fake.issues.get(&number) {
        Some(issue) => json_of(StatusCode::OK, issue.clone()),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn reviews(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET reviews {number}")) {
        return refusal;
    }
    let items: Vec<Value> = fake.reviews.get(&number).into_iter().flatten().map(|(user, state, commit)| json!({"user": simple_user(user), "state": state, "commit_id": commit})).collect();
    paged(
        &fake,
        &format!("/repos/{owner}/{repo}/pulls/{number}/reviews"),
        items,
        &query,
        None,
    )
}

async fn merge(
    State(state): State<Shared>,
    Path((_, _, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("PUT merge {number}")) {
        return refusal;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let sha = v["sha"].as_str().unwrap_or_default().to_string();
    if fake.pulls.get(&number) != Some(&sha) {
        return error(
            StatusCode::CONFLICT,
            "Head branch was modified. Review and try the merge again.",
        );
    }
    fake.merged.push((number, sha));
    json_of(
        StatusCode::OK,
        json!({"sha": "9999999999999999999999999999999999999999", "merged": true, "message": "Pull Request successfully merged"}),
    )
}

async fn permission(
    State(state): State<Shared>,
    Path((_, _, user)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET permission {user}")) {
        return refusal;
    }
    let permission = fake
        .permissions
        .get(&user)
        .cloned()
        .unwrap_or_else(|| "none".into());
    json_of(
        StatusCode::OK,
        json!({"permission": permission, "user": simple_user(&user)}),
    )
}

async fn runs(
    State(state): State<Shared>,
    Path((owner, repo, file)): Path<(String, String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Err(refusal) = auth(&mut fake, &headers, format!("GET runs {file}")) {
        return refusal;
    }
    let items = fake.runs.get(&file).cloned().unwrap_or_default();
    paged(
        &fake,
        &format!("/repos/{owner}/{repo}/actions/workflows/{file}/runs"),
        items,
        &query,
        Some("workflow_runs"),
    )
}
