//! An in-process fake of GitHub's REST API for every endpoint of SPEC §9: stateful, paginated with `Link`
//! headers (absolute URLs, as GitHub sends), secondary rate limits on demand, the artifact zip's 302 to a
//! signed URL on another host name, 410 for an expired artifact, and strict — an unexpected request is
//! answered 500 and recorded, and `assert_clean` fails the test naming it.
//!
//! Every answer is GitHub's own example answer (`tests/data/github-openapi/`, from `@octokit/openapi`)
//! with the fake's state written over it, and `tests/github_conformance.rs` validates each against
//! GitHub's schema: the fake cannot drift from GitHub's shapes.

#![allow(dead_code)]
// A handler's refusal is a whole response; boxing it would only add noise to a test fake.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct Comment {
    pub id: u64,
    pub login: String,
    pub body: String,
    /// Hidden by a maintainer: GitHub reports `minimized: {"reason": …}`.
    pub minimized: bool,
}

/// An issue (a story).
#[derive(Debug, Clone, Default)]
pub struct FakeIssue {
    pub title: String,
    pub body: Option<String>,
    pub labels: Vec<String>,
    pub state: String,
}

/// A pull request.
#[derive(Debug, Clone)]
pub struct FakePull {
    pub head_sha: String,
    pub base_sha: String,
    pub head_ref: String,
    pub base_ref: String,
    /// `owner/name` of the head's repository; `None` when the fork was deleted.
    pub head_repo: Option<String>,
    pub author: String,
    pub state: String,
    pub merged: bool,
    pub body: Option<String>,
    pub commits: Vec<String>,
}

impl FakePull {
    /// An open pull request from `feature` in the same repository, opened by `octocat`.
    pub fn open(head_sha: &str) -> FakePull {
        FakePull {
            head_sha: head_sha.to_string(),
            base_sha: "0".repeat(40),
            head_ref: "feature".into(),
            base_ref: "main".into(),
            head_repo: Some("octo/shop".into()),
            author: "octocat".into(),
            state: "open".into(),
            merged: false,
            body: None,
            commits: vec![head_sha.to_string()],
        }
    }
}

/// A workflow run, with its attempts and jobs.
#[derive(Debug, Clone)]
pub struct FakeRun {
    pub id: u64,
    /// `.github/workflows/<file>@<ref>`, as GitHub reports it.
    pub path: String,
    pub event: String,
    pub head_branch: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub run_attempt: u64,
    pub repository: String,
    pub head_repository: String,
    /// Earlier attempts: (status, conclusion), attempt 1 first.
    pub earlier_attempts: Vec<(String, Option<String>)>,
    /// Jobs of the latest attempt: (name, conclusion).
    pub jobs: Vec<(String, Option<String>)>,
}

impl FakeRun {
    /// A completed, successful `pull_request_target` run of `file` on `main`.
    pub fn gate(id: u64, file: &str) -> FakeRun {
        FakeRun {
            id,
            path: format!(".github/workflows/{file}@refs/heads/main"),
            event: "pull_request_target".into(),
            head_branch: "main".into(),
            head_sha: "2".repeat(40),
            status: "completed".into(),
            conclusion: Some("success".into()),
            run_attempt: 1,
            repository: "octo/shop".into(),
            head_repository: "octo/shop".into(),
            earlier_attempts: Vec::new(),
            jobs: vec![
                ("merge-gate".into(), Some("success".into())),
                ("pack".into(), Some("success".into())),
            ],
        }
    }

    fn file(&self) -> &str {
        let path = self.path.split('@').next().unwrap_or(&self.path);
        path.rsplit('/').next().unwrap_or(path)
    }
}

/// A commit status as set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeStatus {
    pub sha: String,
    pub state: String,
    pub context: String,
    pub description: String,
    pub target_url: Option<String>,
    pub creator: String,
}

#[derive(Debug)]
pub struct Fake {
    /// The one repository the fake holds; any other answers 404.
    pub repo: String,
    pub default_branch: String,
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
    /// Answer the next requests with these server errors first (502, 503, …).
    pub fail_next: Vec<u16>,
    /// Drop this many connections without an answer first (a connection reset).
    pub reset_next: usize,
    /// Before the next comment is created, another writer creates this one (a race).
    pub race: Option<(String, String)>,
    /// Delete the comment a PATCH targets before answering (it was deleted in between).
    pub vanish_on_patch: bool,
    /// Files on branches: (branch, path) → bytes, for the contents API.
    pub files: BTreeMap<(String, String), Vec<u8>>,
    pub issues: BTreeMap<u64, FakeIssue>,
    pub pulls: BTreeMap<u64, FakePull>,
    /// Reviews of pull requests: number → (login, state, commit).
    pub reviews: BTreeMap<u64, Vec<(String, String, String)>>,
    /// Collaborators' permissions (`admin`, `maintain`, `write`, `triage`, `read`).
    pub permissions: BTreeMap<String, String>,
    /// Merges done: (number, sha).
    pub merged: Vec<(u64, String)>,
    /// Refuse the next merge with this status (e.g. 405, not mergeable), once.
    pub refuse_merge: Option<u16>,
    pub runs: Vec<FakeRun>,
    pub statuses: Vec<FakeStatus>,
    /// Artifacts of runs: (run id, id, name, bytes, expired).
    pub run_artifacts: Vec<(u64, u64, String, Vec<u8>, bool)>,
    /// Refs: `heads/main` → SHA.
    pub refs: BTreeMap<String, String>,
    /// Commits: SHA → (message, parents).
    pub commits: BTreeMap<String, (String, Vec<String>)>,
    /// Authorization headers that reached the signed blob URL (must stay empty).
    pub auth_to_blob: usize,
    pub requests: Vec<String>,
    pub unexpected: Vec<String>,
    pub port: u16,
}

impl Default for Fake {
    fn default() -> Fake {
        Fake {
            repo: "octo/shop".into(),
            default_branch: "main".into(),
            tokens: BTreeMap::new(),
            no_user: Vec::new(),
            read_only: Vec::new(),
            comments: Vec::new(),
            next_id: 1000,
            rate_limited: 0,
            fail_next: Vec::new(),
            reset_next: 0,
            race: None,
            vanish_on_patch: false,
            files: BTreeMap::new(),
            issues: BTreeMap::new(),
            pulls: BTreeMap::new(),
            reviews: BTreeMap::new(),
            permissions: BTreeMap::new(),
            merged: Vec::new(),
            refuse_merge: None,
            runs: Vec::new(),
            statuses: Vec::new(),
            run_artifacts: Vec::new(),
            refs: BTreeMap::new(),
            commits: BTreeMap::new(),
            auth_to_blob: 0,
            requests: Vec::new(),
            unexpected: Vec::new(),
            port: 0,
        }
    }
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
        let state: Shared = Arc::new(Mutex::new(Fake::default()));
        let r = "/repos/{owner}/{repo}";
        let app = Router::new()
            .route("/user", get(user))
            .route(r, get(repository))
            .route(
                &format!("{r}/issues/{{number}}"),
                get(issue).patch(update_issue),
            )
            .route(&format!("{r}/issues/{{number}}/labels"), get(labels))
            .route(
                &format!("{r}/issues/{{number}}/comments"),
                get(list_comments).post(create_comment),
            )
            .route(
                &format!("{r}/issues/comments/{{id}}"),
                get(get_comment).patch(edit_comment).delete(delete_comment),
            )
            .route(&format!("{r}/pulls"), get(pulls))
            .route(&format!("{r}/pulls/{{number}}"), get(pull))
            .route(&format!("{r}/pulls/{{number}}/reviews"), get(reviews))
            .route(&format!("{r}/pulls/{{number}}/commits"), get(pull_commits))
            .route(&format!("{r}/pulls/{{number}}/merge"), put(merge))
            .route(
                &format!("{r}/collaborators/{{user}}/permission"),
                get(permission),
            )
            .route(
                &format!("{r}/statuses/{{sha}}"),
                axum::routing::post(create_status),
            )
            .route(&format!("{r}/commits/{{*rest}}"), get(commits))
            .route(&format!("{r}/contents/{{*path}}"), get(contents))
            .route(&format!("{r}/git/ref/{{*name}}"), get(git_ref))
            .route(
                &format!("{r}/git/refs/{{*name}}"),
                axum::routing::delete(delete_ref),
            )
            .route(&format!("{r}/branches/{{*name}}"), get(branch))
            .route(&format!("{r}/actions/workflows"), get(workflows))
            .route(&format!("{r}/actions/workflows/{{file}}/runs"), get(runs))
            .route(&format!("{r}/actions/runs/{{run}}"), get(run))
            .route(
                &format!("{r}/actions/runs/{{run}}/attempts/{{attempt}}"),
                get(run_attempt),
            )
            .route(&format!("{r}/actions/runs/{{run}}/jobs"), get(jobs))
            .route(
                &format!("{r}/actions/runs/{{run}}/artifacts"),
                get(run_artifacts),
            )
            .route(&format!("{r}/actions/artifacts/{{id}}"), get(artifact))
            .route(
                &format!("{r}/actions/artifacts/{{id}}/zip"),
                get(artifact_zip),
            )
            .route("/signed/{id}", get(signed))
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
            minimized: false,
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

// ---- GitHub's example answers, the shapes every answer starts from ----

/// GitHub's example answer of an operation (`issues/get` is `issues--get.json`).
pub fn example(operation: &str) -> Value {
    static EXAMPLES: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    let all = EXAMPLES.get_or_init(|| {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github-openapi");
        std::fs::read_dir(&dir)
            .expect("the GitHub examples")
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .map(|e| {
                let mut doc: Value =
                    serde_json::from_slice(&std::fs::read(e.path()).expect("read")).expect("json");
                let name = e
                    .path()
                    .file_stem()
                    .expect("stem")
                    .to_string_lossy()
                    .into_owned();
                (name, doc["example"].take())
            })
            .collect()
    });
    all.get(&operation.replace('/', "--"))
        .unwrap_or_else(|| panic!("no GitHub example for {operation}"))
        .clone()
}

/// The first item of a list example (`pulls/list` → one pull request).
fn item(operation: &str, key: Option<&str>) -> Value {
    let mut list = example(operation);
    let list = match key {
        Some(key) => list[key].take(),
        None => list,
    };
    list.get(0).cloned().expect("a list example with an item")
}

/// Writes `value` at each pointer of `changes`; the pointer's parent must exist in GitHub's example (an
/// optional field the example leaves out is added).
fn set(target: &mut Value, changes: &[(&str, Value)]) {
    for (pointer, value) in changes {
        let (parent, key) = pointer.rsplit_once('/').expect("a JSON pointer");
        let object = target
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("GitHub's example has no object at `{parent}`"));
        object.insert(key.to_string(), value.clone());
    }
}

fn api(repo: &str) -> String {
    format!("https://api.github.com/repos/{repo}")
}

/// A user as GitHub's `simple-user` schema has it (every required field).
fn simple_user(login: &str) -> Value {
    let id = login
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 10_000_000;
    let mut user = example("pulls/list-reviews")[0]["user"].take();
    let api = format!("https://api.github.com/users/{login}");
    set(
        &mut user,
        &[
            ("/login", json!(login)),
            ("/id", json!(id)),
            ("/node_id", json!(format!("U_{id}"))),
            (
                "/avatar_url",
                json!(format!("https://avatars.githubusercontent.com/u/{id}?v=4")),
            ),
            ("/url", json!(api)),
            ("/html_url", json!(format!("https://github.com/{login}"))),
            (
                "/type",
                json!(if login.ends_with("[bot]") {
                    "Bot"
                } else {
                    "User"
                }),
            ),
        ],
    );
    user
}

/// A repository object (`repository` schema, as pull requests and runs embed it).
fn embedded_repo(mut template: Value, full_name: &str) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, full_name));
    set(
        &mut template,
        &[
            ("/full_name", json!(full_name)),
            ("/name", json!(name)),
            ("/owner/login", json!(owner)),
            ("/url", json!(api(full_name))),
            (
                "/html_url",
                json!(format!("https://github.com/{full_name}")),
            ),
        ],
    );
    template
}

fn comment_json(repo: &str, c: &Comment) -> Value {
    let mut v = example("issues/get-comment");
    set(
        &mut v,
        &[
            ("/id", json!(c.id)),
            ("/node_id", json!(format!("IC_{}", c.id))),
            (
                "/url",
                json!(format!("{}/issues/comments/{}", api(repo), c.id)),
            ),
            (
                "/html_url",
                json!(format!(
                    "https://github.com/{repo}/pull/3#issuecomment-{}",
                    c.id
                )),
            ),
            ("/issue_url", json!(format!("{}/issues/3", api(repo)))),
            ("/body", json!(c.body)),
            ("/user", simple_user(&c.login)),
            (
                "/author_association",
                json!(if c.login.ends_with("[bot]") {
                    "NONE"
                } else {
                    "MEMBER"
                }),
            ),
            (
                "/minimized",
                if c.minimized {
                    json!({"reason": "outdated"})
                } else {
                    Value::Null
                },
            ),
        ],
    );
    v
}

fn issue_json(repo: &str, number: u64, issue: &FakeIssue, is_pull: bool) -> Value {
    let mut v = example("issues/get");
    let label_template = v["labels"][0].take();
    let labels: Vec<Value> = issue
        .labels
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut l = label_template.clone();
            set(&mut l, &[("/id", json!(i + 1)), ("/name", json!(name))]);
            l
        })
        .collect();
    set(
        &mut v,
        &[
            ("/number", json!(number)),
            ("/title", json!(issue.title)),
            ("/body", json!(issue.body)),
            ("/labels", json!(labels)),
            ("/state", json!(issue.state)),
            ("/url", json!(format!("{}/issues/{number}", api(repo)))),
            (
                "/html_url",
                json!(format!("https://github.com/{repo}/issues/{number}")),
            ),
        ],
    );
    if !is_pull {
        v["pull_request"] = Value::Null;
        v.as_object_mut().expect("object").remove("pull_request");
    }
    v
}

fn pull_json(template: Value, repo: &str, number: u64, p: &FakePull) -> Value {
    let mut v = template;
    let repo_template = v["base"]["repo"].clone();
    set(
        &mut v,
        &[
            ("/number", json!(number)),
            ("/state", json!(p.state)),
            ("/body", json!(p.body)),
            ("/user", simple_user(&p.author)),
            ("/head/sha", json!(p.head_sha)),
            ("/head/ref", json!(p.head_ref)),
            (
                "/head/label",
                json!(format!(
                    "{}:{}",
                    p.head_repo
                        .as_deref()
                        .unwrap_or(repo)
                        .split('/')
                        .next()
                        .unwrap_or_default(),
                    p.head_ref
                )),
            ),
            (
                "/head/repo",
                p.head_repo
                    .as_deref()
                    .map(|r| embedded_repo(repo_template.clone(), r))
                    .unwrap_or(Value::Null),
            ),
            ("/base/sha", json!(p.base_sha)),
            ("/base/ref", json!(p.base_ref)),
            ("/base/repo", embedded_repo(repo_template.clone(), repo)),
            ("/url", json!(format!("{}/pulls/{number}", api(repo)))),
            (
                "/html_url",
                json!(format!("https://github.com/{repo}/pull/{number}")),
            ),
        ],
    );
    if v.get("merged").is_some() {
        v["merged"] = json!(p.merged);
    }
    v["merged_at"] = if p.merged {
        json!("2026-11-29T10:00:00Z")
    } else {
        Value::Null
    };
    v
}

fn run_json(
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

fn artifact_json(repo: &str, a: &(u64, u64, String, Vec<u8>, bool)) -> Value {
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
    v["digest"] = json!(format!("sha256:{}", aayudha::pack::hash_bytes(bytes)));
    v
}

fn status_json(repo: &str, i: usize, s: &FakeStatus) -> Value {
    let mut v = example("repos/create-commit-status");
    set(
        &mut v,
        &[
            ("/id", json!(i + 1)),
            ("/node_id", json!(format!("SC_{}", i + 1))),
            ("/url", json!(format!("{}/statuses/{}", api(repo), s.sha))),
            ("/state", json!(s.state)),
            ("/description", json!(s.description)),
            ("/target_url", json!(s.target_url)),
            ("/context", json!(s.context)),
            ("/creator", simple_user(&s.creator)),
        ],
    );
    v
}

// ---- plumbing ----

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [("content-type", "application/json; charset=utf-8")],
        json!({"message": message, "documentation_url": "https://docs.github.com/rest", "status": status.as_u16().to_string()})
            .to_string(),
    )
        .into_response()
}

fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "Not Found")
}

fn forbidden() -> Response {
    error(
        StatusCode::FORBIDDEN,
        "Resource not accessible by integration",
    )
}

fn json_of(status: StatusCode, value: Value) -> Response {
    (
        status,
        [("content-type", "application/json; charset=utf-8")],
        value.to_string(),
    )
        .into_response()
}

fn ok(value: Value) -> Response {
    json_of(StatusCode::OK, value)
}

/// What a handler knows once the request is let in: the state, the token's login, and whether it may write.
struct Caller<'a> {
    fake: MutexGuard<'a, Fake>,
    login: String,
    can_write: bool,
}

/// Records the request, answers a pending secondary rate limit, checks the token and the repository.
fn enter<'a>(
    state: &'a Shared,
    headers: &HeaderMap,
    repo: Option<(&str, &str)>,
    line: String,
) -> Result<Caller<'a>, Response> {
    let mut fake = state.lock().expect("lock");
    fake.requests.push(line);
    if fake.reset_next > 0 {
        fake.reset_next -= 1;
        drop(fake);
        // Unwinding out of the handler makes hyper drop the connection unanswered; `resume_unwind` does
        // so without the panic hook's noise.
        std::panic::resume_unwind(Box::new("the fake drops this connection"));
    }
    if !fake.fail_next.is_empty() {
        let status = fake.fail_next.remove(0);
        return Err(error(
            StatusCode::from_u16(status).expect("a status"),
            "Server Error",
        ));
    }
    if fake.rate_limited > 0 {
        fake.rate_limited -= 1;
        return Err((StatusCode::FORBIDDEN, [("retry-after", "1"), ("content-type", "application/json; charset=utf-8")], json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}).to_string()).into_response());
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
    let Some(login) = fake.tokens.get(&token).cloned() else {
        return Err(error(StatusCode::UNAUTHORIZED, "Bad credentials"));
    };
    if let Some((owner, name)) = repo
        && format!("{owner}/{name}") != fake.repo
    {
        return Err(not_found());
    }
    let can_write = !fake.read_only.contains(&token);
    Ok(Caller {
        fake,
        login,
        can_write,
    })
}

macro_rules! enter {
    ($state:expr, $headers:expr, $owner:expr, $repo:expr, $($line:tt)*) => {
        match enter(&$state, &$headers, Some((&$owner, &$repo)), format!($($line)*)) {
            Ok(caller) => caller,
            Err(refusal) => return refusal,
        }
    };
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
    let mut response = ok(body);
    if page < pages {
        // The other query parameters stay, as GitHub keeps them.
        let kept: String = query
            .iter()
            .filter(|(k, _)| *k != "page" && *k != "per_page")
            .map(|(k, v)| format!("&{k}={v}"))
            .collect();
        let base = format!(
            "http://127.0.0.1:{}{path}?per_page={per_page}{kept}",
            fake.port
        );
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

type Q = Query<BTreeMap<String, String>>;

// ---- handlers ----

async fn unexpected(State(state): State<Shared>, request: axum::extract::Request) -> Response {
    let line = format!("{} {}", request.method(), request.uri());
    state.lock().expect("lock").unexpected.push(line.clone());
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("unexpected request: {line}"),
    )
}

async fn user(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim_start_matches("Bearer ")
        .to_string();
    let caller = match enter(&state, &headers, None, "GET /user".into()) {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    if caller.fake.no_user.contains(&token) {
        return forbidden();
    }
    let mut v = example("users/get-authenticated");
    let user = simple_user(&caller.login);
    for key in [
        "login",
        "id",
        "node_id",
        "avatar_url",
        "url",
        "html_url",
        "type",
    ] {
        v[key] = user[key].clone();
    }
    ok(v)
}

async fn repository(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET repository");
    let mut v = example("repos/get");
    let full = caller.fake.repo.clone();
    set(
        &mut v,
        &[
            ("/full_name", json!(full)),
            ("/name", json!(repo)),
            ("/owner/login", json!(owner)),
            ("/default_branch", json!(caller.fake.default_branch)),
            ("/url", json!(api(&full))),
        ],
    );
    ok(v)
}

async fn issue(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET issue {number}");
    let fake = &caller.fake;
    if let Some(issue) = fake.issues.get(&number) {
        return ok(issue_json(&fake.repo, number, issue, false));
    }
    match fake.pulls.get(&number) {
        // A pull request is an issue too.
        Some(p) => ok(issue_json(
            &fake.repo,
            number,
            &FakeIssue {
                title: format!("Pull request {number}"),
                body: p.body.clone(),
                labels: Vec::new(),
                state: p.state.clone(),
            },
            true,
        )),
        None => not_found(),
    }
}

async fn update_issue(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "PATCH issue {number}");
    if !caller.can_write {
        return forbidden();
    }
    let Ok(change) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "Problems parsing JSON");
    };
    let full = caller.fake.repo.clone();
    let Some(issue) = caller.fake.issues.get_mut(&number) else {
        return not_found();
    };
    if let Some(text) = change.get("body") {
        issue.body = text.as_str().map(str::to_string);
    }
    if let Some(labels) = change.get("labels").and_then(Value::as_array) {
        issue.labels = labels
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect();
    }
    if let Some(s) = change.get("state").and_then(Value::as_str) {
        issue.state = s.to_string();
    }
    let issue = issue.clone();
    let mut v = example("issues/update");
    let shaped = issue_json(&full, number, &issue, false);
    for key in [
        "number", "title", "body", "labels", "state", "url", "html_url",
    ] {
        v[key] = shaped[key].clone();
    }
    ok(v)
}

async fn labels(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET labels {number}");
    let Some(issue) = caller.fake.issues.get(&number) else {
        return not_found();
    };
    let template = example("issues/list-labels-on-issue")[0].clone();
    let items = issue
        .labels
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut l = template.clone();
            set(&mut l, &[("/id", json!(i + 1)), ("/name", json!(name))]);
            l
        })
        .collect();
    paged(
        &caller.fake,
        &format!("/repos/{owner}/{repo}/issues/{number}/labels"),
        items,
        &query,
        None,
    )
}

async fn list_comments(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(
        state,
        headers,
        owner,
        repo,
        "GET comments page {:?}",
        query.get("page")
    );
    let mut sorted = caller.fake.comments.clone();
    sorted.sort_by_key(|c| c.id);
    let items: Vec<Value> = sorted
        .iter()
        .map(|c| comment_json(&caller.fake.repo, c))
        .collect();
    paged(
        &caller.fake,
        &format!("/repos/{owner}/{repo}/issues/{number}/comments"),
        items,
        &query,
        None,
    )
}

async fn create_comment(
    State(state): State<Shared>,
    Path((owner, repo, _)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST comment");
    if !caller.can_write {
        return forbidden();
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
    let fake = &mut caller.fake;
    if let Some((who, racing)) = fake.race.take() {
        fake.next_id += 1;
        let id = fake.next_id;
        fake.comments.push(Comment {
            id,
            login: who,
            body: racing,
            minimized: false,
        });
    }
    fake.next_id += 1;
    let comment = Comment {
        id: fake.next_id,
        login: caller.login.clone(),
        body: text,
        minimized: false,
    };
    fake.comments.push(comment.clone());
    json_of(StatusCode::CREATED, comment_json(&fake.repo, &comment))
}

async fn get_comment(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET comment {id}");
    match caller.fake.comments.iter().find(|c| c.id == id) {
        Some(c) => ok(comment_json(&caller.fake.repo, c)),
        None => not_found(),
    }
}

async fn edit_comment(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "PATCH {id}");
    let (login, can_write) = (caller.login.clone(), caller.can_write);
    let fake = &mut caller.fake;
    if fake.vanish_on_patch {
        fake.vanish_on_patch = false;
        fake.comments.retain(|c| c.id != id);
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
    let repo_name = fake.repo.clone();
    let Some(comment) = fake.comments.iter_mut().find(|c| c.id == id) else {
        return not_found();
    };
    if comment.login != login || !can_write {
        return forbidden();
    }
    comment.body = text;
    ok(comment_json(&repo_name, comment))
}

async fn delete_comment(
    State(state): State<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "DELETE {id}");
    let (login, can_write) = (caller.login.clone(), caller.can_write);
    let fake = &mut caller.fake;
    match fake.comments.iter().position(|c| c.id == id) {
        Some(i) if fake.comments[i].login == login && can_write => {
            fake.comments.remove(i);
            StatusCode::NO_CONTENT.into_response()
        }
        Some(_) => forbidden(),
        None => not_found(),
    }
}

async fn pulls(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET pulls");
    let fake = &caller.fake;
    let want_state = query.get("state").map(String::as_str).unwrap_or("open");
    if !["open", "closed", "all"].contains(&want_state) {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed");
    }
    let template = item("pulls/list", None);
    let items = fake
        .pulls
        .iter()
        .rev()
        .filter(|(_, p)| want_state == "all" || p.state == want_state)
        .filter(|(_, p)| {
            query.get("head").is_none_or(|head| {
                let owner = p
                    .head_repo
                    .as_deref()
                    .unwrap_or_default()
                    .split('/')
                    .next()
                    .unwrap_or_default();
                *head == format!("{owner}:{}", p.head_ref)
            })
        })
        .map(|(n, p)| pull_json(template.clone(), &fake.repo, *n, p))
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/pulls"),
        items,
        &query,
        None,
    )
}

async fn pull(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET pull {number}");
    match caller.fake.pulls.get(&number) {
        Some(p) => ok(pull_json(
            example("pulls/get"),
            &caller.fake.repo,
            number,
            p,
        )),
        None => not_found(),
    }
}

async fn reviews(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET reviews {number}");
    if !caller.fake.pulls.contains_key(&number) {
        return not_found();
    }
    let template = example("pulls/list-reviews")[0].clone();
    let items: Vec<Value> = caller
        .fake
        .reviews
        .get(&number)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, (user, state, commit))| {
            let mut v = template.clone();
            set(
                &mut v,
                &[
                    ("/id", json!(i + 1)),
                    ("/user", simple_user(user)),
                    ("/state", json!(state)),
                    ("/commit_id", json!(commit)),
                ],
            );
            v
        })
        .collect();
    paged(
        &caller.fake,
        &format!("/repos/{owner}/{repo}/pulls/{number}/reviews"),
        items,
        &query,
        None,
    )
}

async fn pull_commits(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET commits of pull {number}");
    let Some(p) = caller.fake.pulls.get(&number) else {
        return not_found();
    };
    let template = example("pulls/list-commits")[0].clone();
    let items = p
        .commits
        .iter()
        .map(|sha| {
            let mut v = template.clone();
            set(
                &mut v,
                &[
                    ("/sha", json!(sha)),
                    (
                        "/url",
                        json!(format!("{}/commits/{sha}", api(&caller.fake.repo))),
                    ),
                ],
            );
            v
        })
        .collect();
    paged(
        &caller.fake,
        &format!("/repos/{owner}/{repo}/pulls/{number}/commits"),
        items,
        &query,
        None,
    )
}

async fn merge(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "PUT merge {number}");
    if !caller.can_write {
        return forbidden();
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let sha = v["sha"].as_str().unwrap_or_default().to_string();
    let fake = &mut caller.fake;
    if let Some(status) = fake.refuse_merge.take() {
        return error(
            StatusCode::from_u16(status).expect("a status"),
            "Pull Request is not mergeable",
        );
    }
    let Some(p) = fake.pulls.get_mut(&number) else {
        return not_found();
    };
    if p.merged || p.state != "open" {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Pull Request is not mergeable",
        );
    }
    if !sha.is_empty() && p.head_sha != sha {
        return error(
            StatusCode::CONFLICT,
            "Head branch was modified. Review and try the merge again.",
        );
    }
    p.merged = true;
    p.state = "closed".into();
    fake.merged.push((number, sha));
    let mut answer = example("pulls/merge");
    set(&mut answer, &[("/sha", json!("9".repeat(40)))]);
    ok(answer)
}

async fn permission(
    State(state): State<Shared>,
    Path((owner, repo, user)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET permission {user}");
    let Some(role) = caller.fake.permissions.get(&user).cloned() else {
        // GitHub answers 404 for someone who is not a collaborator.
        return error(StatusCode::NOT_FOUND, &format!("{user} is not a user"));
    };
    // `permission` folds the finer roles: maintain → write, triage → read.
    let folded = match role.as_str() {
        "maintain" => "write",
        "triage" => "read",
        other => other,
    };
    let mut v = example("repos/get-collaborator-permission-level");
    let mut u = v["user"].clone();
    let s = simple_user(&user);
    for key in ["login", "id", "node_id", "url", "html_url", "type"] {
        u[key] = s[key].clone();
    }
    u["role_name"] = json!(role);
    set(
        &mut v,
        &[
            ("/permission", json!(folded)),
            ("/role_name", json!(role)),
            ("/user", u),
        ],
    );
    ok(v)
}

async fn create_status(
    State(state): State<Shared>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST status {sha}");
    if !caller.can_write {
        return forbidden();
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
    let status = FakeStatus {
        sha,
        state: state_name,
        context: v["context"].as_str().unwrap_or("default").to_string(),
        description,
        target_url: v["target_url"].as_str().map(str::to_string),
        creator: caller.login.clone(),
    };
    let fake = &mut caller.fake;
    fake.statuses.push(status.clone());
    json_of(
        StatusCode::CREATED,
        status_json(&fake.repo, fake.statuses.len() - 1, &status),
    )
}

/// The SHA a ref names: a SHA, a branch, or `heads/…`.
fn resolve(fake: &Fake, reference: &str) -> Option<String> {
    if reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(reference.to_string());
    }
    fake.refs
        .get(reference)
        .or_else(|| fake.refs.get(&format!("heads/{reference}")))
        .cloned()
}

async fn commits(
    State(state): State<Shared>,
    Path((owner, repo, rest)): Path<(String, String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET commits/{rest}");
    let fake = &caller.fake;
    if let Some(reference) = rest.strip_suffix("/statuses") {
        let Some(sha) = resolve(fake, reference) else {
            return not_found();
        };
        let items = fake
            .statuses
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, s)| s.sha == sha)
            .map(|(i, s)| status_json(&fake.repo, i, s))
            .collect();
        return paged(
            fake,
            &format!("/repos/{owner}/{repo}/commits/{reference}/statuses"),
            items,
            &query,
            None,
        );
    }
    if let Some(reference) = rest.strip_suffix("/status") {
        let Some(sha) = resolve(fake, reference) else {
            return not_found();
        };
        // The latest status of each context.
        let mut latest: BTreeMap<&str, (usize, &FakeStatus)> = BTreeMap::new();
        for (i, s) in fake
            .statuses
            .iter()
            .enumerate()
            .filter(|(_, s)| s.sha == sha)
        {
            latest.insert(&s.context, (i, s));
        }
        let states: Vec<&str> = latest.values().map(|(_, s)| s.state.as_str()).collect();
        let combined = if states.iter().any(|s| *s == "error" || *s == "failure") {
            "failure"
        } else if states.is_empty() || states.contains(&"pending") {
            "pending"
        } else {
            "success"
        };
        let template = example("repos/get-combined-status-for-ref")["statuses"][0].clone();
        let statuses: Vec<Value> = latest
            .values()
            .map(|(i, s)| {
                let full = status_json(&fake.repo, *i, s);
                let mut v = template.clone();
                for key in [
                    "id",
                    "node_id",
                    "url",
                    "state",
                    "description",
                    "target_url",
                    "context",
                ] {
                    v[key] = full[key].clone();
                }
                v
            })
            .collect();
        let mut v = example("repos/get-combined-status-for-ref");
        let repository = embedded_repo(v["repository"].clone(), &fake.repo);
        set(
            &mut v,
            &[
                ("/state", json!(combined)),
                ("/sha", json!(sha)),
                ("/total_count", json!(statuses.len())),
                ("/statuses", json!(statuses)),
                ("/repository", repository),
            ],
        );
        return ok(v);
    }
    let Some(sha) = resolve(fake, &rest) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("No commit found for SHA: {rest}"),
        );
    };
    let Some((message, parents)) = fake.commits.get(&sha) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("No commit found for SHA: {rest}"),
        );
    };
    let mut v = example("repos/get-commit");
    let parent_template = v["parents"][0].clone();
    set(
        &mut v,
        &[
            ("/sha", json!(sha)),
            ("/commit/message", json!(message)),
            ("/url", json!(format!("{}/commits/{sha}", api(&fake.repo)))),
            (
                "/parents",
                json!(
                    parents
                        .iter()
                        .map(|p| {
                            let mut t = parent_template.clone();
                            t["sha"] = json!(p);
                            t
                        })
                        .collect::<Vec<_>>()
                ),
            ),
        ],
    );
    ok(v)
}

async fn contents(
    State(state): State<Shared>,
    Path((owner, repo, path)): Path<(String, String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET contents {path}");
    let fake = &caller.fake;
    let branch = query
        .get("ref")
        .cloned()
        .unwrap_or_else(|| fake.default_branch.clone());
    let Some(bytes) = fake.files.get(&(branch.clone(), path.clone())) else {
        return not_found();
    };
    use base64::Engine as _;
    // GitHub wraps the base64 at 60 characters with `\n`.
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let content: String = encoded
        .as_bytes()
        .chunks(60)
        .map(|c| format!("{}\n", String::from_utf8_lossy(c)))
        .collect();
    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
    let url = format!("{}/contents/{path}?ref={branch}", api(&fake.repo));
    let git = format!("{}/git/blobs/{}", api(&fake.repo), "0".repeat(40));
    let html = format!("https://github.com/{}/blob/{branch}/{path}", fake.repo);
    let mut v = example("repos/get-content");
    set(
        &mut v,
        &[
            ("/size", json!(bytes.len())),
            ("/name", json!(name)),
            ("/path", json!(path)),
            ("/content", json!(content)),
            ("/url", json!(url)),
            ("/git_url", json!(git)),
            ("/html_url", json!(html)),
            (
                "/download_url",
                json!(format!(
                    "https://raw.githubusercontent.com/{}/{branch}/{path}",
                    fake.repo
                )),
            ),
            ("/_links/self", json!(url)),
            ("/_links/git", json!(git)),
            ("/_links/html", json!(html)),
        ],
    );
    ok(v)
}

async fn git_ref(
    State(state): State<Shared>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET ref {name}");
    match caller.fake.refs.get(&name) {
        Some(sha) => {
            let mut v = example("git/get-ref");
            set(
                &mut v,
                &[
                    ("/ref", json!(format!("refs/{name}"))),
                    (
                        "/url",
                        json!(format!("{}/git/refs/{name}", api(&caller.fake.repo))),
                    ),
                    ("/object/sha", json!(sha)),
                    (
                        "/object/url",
                        json!(format!("{}/git/commits/{sha}", api(&caller.fake.repo))),
                    ),
                ],
            );
            ok(v)
        }
        None => not_found(),
    }
}

async fn delete_ref(
    State(state): State<Shared>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "DELETE ref {name}");
    if !caller.can_write {
        return forbidden();
    }
    match caller.fake.refs.remove(&name) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => error(StatusCode::UNPROCESSABLE_ENTITY, "Reference does not exist"),
    }
}

async fn branch(
    State(state): State<Shared>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET branch {name}");
    let fake = &caller.fake;
    let Some(sha) = fake.refs.get(&format!("heads/{name}")) else {
        return error(StatusCode::NOT_FOUND, "Branch not found");
    };
    let mut v = example("repos/get-branch");
    set(
        &mut v,
        &[
            ("/name", json!(name)),
            ("/commit/sha", json!(sha)),
            (
                "/commit/url",
                json!(format!("{}/commits/{sha}", api(&fake.repo))),
            ),
            ("/protected", json!(name == fake.default_branch)),
        ],
    );
    ok(v)
}

async fn workflows(
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

async fn runs(
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

async fn run(
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

async fn run_attempt(
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

async fn jobs(
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

async fn run_artifacts(
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

async fn artifact(
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

async fn artifact_zip(
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
        None => not_found(),
    }
}
