//! An in-process fake of GitHub's REST API for every endpoint of SPEC §9: stateful, paginated with `Link`
//! headers (absolute URLs, as GitHub sends), secondary rate limits on demand, the artifact zip's 302 to a
//! signed URL on another host name, 410 for an expired artifact, and strict — an unexpected request is
//! answered 500 and recorded, and `assert_clean` fails the test naming it.
//!
//! Every answer is GitHub's own example answer (`tests/data/github-openapi/`, from `@octokit/openapi`)
//! with the fake's state written over it, and `tests/it/github_conformance.rs` validates each against
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
    /// The issue or pull request it is on; `None`: the pull request a test is about (listed on every
    /// number).
    pub issue: Option<u64>,
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
    /// The login of its commits' committer (`None`: the author committed them).
    pub committer: Option<String>,
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
            committer: None,
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
    /// The repository's `visibility` (`public`, `private` or `internal`); `private` is true but for
    /// `public`, as GitHub answers.
    pub visibility: String,
    /// Attestations by subject digest (`sha256:<hex>`), each item as the API answers it (a `bundle`, or a
    /// `bundle_url`), served in pages.
    pub attestations: BTreeMap<String, Vec<Value>>,
    /// The bodies of attestations' `bundle_url`s (snappy-compressed bundles) by name, served outside the API
    /// at `/bundles/<name>` as GitHub's blob store serves them.
    pub bundle_blobs: BTreeMap<String, Vec<u8>>,
    /// Answer every listing of attestations with this status (a token without Attestations: read: 403).
    pub attestations_status: Option<u16>,
    /// `compare/<base>...<head>` → its `status` (`ahead`, `identical`, `behind`, `diverged`); absent: 404.
    pub compares: BTreeMap<String, String>,
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
    /// Before the next issue is created, another writer creates this one (two runs racing).
    pub race_issue: Option<(String, FakeIssue)>,
    /// Who opened each issue (absent: `octocat`).
    pub issue_authors: BTreeMap<u64, String>,
    /// The repository's labels.
    pub labels: Vec<String>,
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
    /// The status contexts a ruleset requires on the default branch (`GET /rules/branches/{b}`).
    pub ruleset_contexts: Vec<String>,
    /// The default branch's protection, readable with an admin token only: its required contexts.
    pub protection_contexts: Option<Vec<String>>,
    /// Tokens with admin access (the branch protection is 404 to the others, as GitHub answers).
    pub admins: Vec<String>,
    /// Annotated tag objects: the tag object's SHA → the commit it tags.
    pub annotated_tags: BTreeMap<String, String>,
    /// Commits: SHA → (message, parents).
    pub commits: BTreeMap<String, (String, Vec<String>)>,
    /// Authorization headers that reached the signed blob URL (must stay empty).
    pub auth_to_blob: usize,
    pub requests: Vec<String>,
    pub unexpected: Vec<String>,
    pub port: u16,
    /// Where the REST API is mounted: empty for github.com, `/api/v3` for GitHub Enterprise Server.
    pub prefix: String,
}

impl Default for Fake {
    fn default() -> Fake {
        Fake {
            repo: "octo/shop".into(),
            default_branch: "main".into(),
            visibility: "public".into(),
            attestations: BTreeMap::new(),
            compares: BTreeMap::new(),
            bundle_blobs: BTreeMap::new(),
            attestations_status: None,
            tokens: BTreeMap::new(),
            no_user: Vec::new(),
            read_only: Vec::new(),
            comments: Vec::new(),
            next_id: 1000,
            rate_limited: 0,
            fail_next: Vec::new(),
            reset_next: 0,
            race: None,
            race_issue: None,
            issue_authors: BTreeMap::new(),
            labels: Vec::new(),
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
            ruleset_contexts: Vec::new(),
            protection_contexts: None,
            admins: Vec::new(),
            annotated_tags: BTreeMap::new(),
            commits: BTreeMap::new(),
            auth_to_blob: 0,
            requests: Vec::new(),
            unexpected: Vec::new(),
            port: 0,
            prefix: String::new(),
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
        Server::start_at("")
    }

    /// A GitHub Enterprise Server: the REST API under `/api/v3` (`GITHUB_API_URL` is
    /// `http://…/api/v3`), the signed blob URLs outside it.
    pub fn enterprise() -> Server {
        Server::start_at("/api/v3")
    }

    fn start_at(prefix: &str) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let state: Shared = Arc::new(Mutex::new(Fake {
            prefix: prefix.to_string(),
            ..Fake::default()
        }));
        let r = "/repos/{owner}/{repo}";
        let api = Router::new()
            .route("/user", get(user))
            .route(r, get(repository))
            .route(
                &format!("{r}/issues/{{number}}"),
                get(issue).patch(update_issue),
            )
            .route(&format!("{r}/issues"), get(list_issues).post(create_issue))
            .route(&format!("{r}/labels"), axum::routing::post(create_label))
            .route(
                &format!("{r}/issues/{{number}}/labels"),
                get(labels).post(add_labels),
            )
            .route(
                &format!("{r}/issues/{{number}}/comments"),
                get(list_comments).post(create_comment),
            )
            .route(
                &format!("{r}/issues/comments/{{id}}"),
                get(get_comment).patch(edit_comment).delete(delete_comment),
            )
            .route(&format!("{r}/attestations/{{digest}}"), get(attestations))
            .route(&format!("{r}/compare/{{spec}}"), get(compare))
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
            .route(&format!("{r}/rules/branches/{{*name}}"), get(branch_rules))
            .route(&format!("{r}/git/tags/{{sha}}"), get(git_tag))
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
            .fallback(unexpected);
        let app = if prefix.is_empty() {
            api
        } else {
            Router::new().nest(prefix, api)
        }
        .route("/signed/{id}", get(signed))
        .route("/bundles/{name}", get(bundle_blob))
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
            url: format!("http://127.0.0.1:{port}{prefix}"),
            _runtime: runtime,
        }
    }

    /// The `bundle_url` of the blob `name` (see `Fake::bundle_blobs`): on another host name than the API,
    /// as GitHub's blob store is.
    pub fn bundle_url(&self, name: &str) -> String {
        let port = self.state.lock().expect("lock").port;
        format!("http://localhost:{port}/bundles/{name}")
    }

    pub fn seed(&self, login: &str, body: &str) -> u64 {
        let mut fake = self.state.lock().expect("lock");
        fake.next_id += 1;
        let id = fake.next_id;
        fake.comments.push(Comment {
            id,
            issue: None,
            login: login.to_string(),
            body: body.to_string(),
            minimized: false,
        });
        id
    }

    pub fn comments(&self) -> Vec<Comment> {
        self.state.lock().expect("lock").comments.clone()
    }

    /// The comments on one issue, oldest first.
    pub fn comments_on(&self, number: u64) -> Vec<Comment> {
        let mut on: Vec<Comment> = self
            .comments()
            .into_iter()
            .filter(|c| c.issue == Some(number))
            .collect();
        on.sort_by_key(|c| c.id);
        on
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

/// Every test that starts the fake is checked when it ends: an unexpected request fails it, naming the
/// request — also when the test forgot to call `assert_clean` (not while it is failing already).
impl Drop for Server {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.assert_clean();
        }
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
            "http://127.0.0.1:{}{}{path}?per_page={per_page}{kept}",
            fake.port, fake.prefix
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
            ("/visibility", json!(caller.fake.visibility)),
            ("/private", json!(caller.fake.visibility != "public")),
            ("/html_url", json!(format!("https://github.com/{full}"))),
            ("/url", json!(api(&full))),
        ],
    );
    ok(v)
}

async fn attestations(
    State(state): State<Shared>,
    Path((owner, repo, digest)): Path<(String, String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET attestations");
    if let Some(status) = caller.fake.attestations_status {
        return error(
            StatusCode::from_u16(status).expect("a status"),
            "Resource not accessible by personal access token",
        );
    }
    let Some(items) = caller.fake.attestations.get(&digest).cloned() else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let path = format!("/repos/{owner}/{repo}/attestations/{digest}");
    paged(&caller.fake, &path, items, &query, Some("attestations"))
}

/// An address outside the API (a signed blob URL, a `bundle_url`) refuses an Authorization header, and
/// counts it in `auth_to_blob`.
fn refuse_authorization(fake: &mut Fake, headers: &HeaderMap, address: &str) -> Option<Response> {
    headers.contains_key("authorization").then(|| {
        fake.auth_to_blob += 1;
        error(
            StatusCode::BAD_REQUEST,
            &format!("an Authorization header must not reach {address}"),
        )
    })
}

/// A `bundle_url`'s body; an Authorization header is refused.
async fn bundle_blob(
    State(state): State<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if let Some(refused) = refuse_authorization(&mut fake, &headers, "a bundle_url") {
        return refused;
    }
    match fake.bundle_blobs.get(&name) {
        Some(body) => (StatusCode::OK, body.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "BlobNotFound"),
    }
}

async fn compare(
    State(state): State<Shared>,
    Path((owner, repo, spec)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET compare");
    match caller.fake.compares.get(&spec) {
        Some(status) => ok(json!({"status": status, "ahead_by": 0, "behind_by": 0})),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

// The handlers of each resource, after the `enter!` macro they use (macros are in scope from where they
// are defined on).
mod actions;
mod contents;
mod issues;
mod pulls;

use actions::*;
use contents::*;
use issues::*;
use pulls::*;
