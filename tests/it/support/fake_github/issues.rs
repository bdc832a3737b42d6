//! The fake GitHub's issues: a story's body and labels, and the comments of an issue or pull request.

use super::*;

/// Label objects named `names`, each shaped like `template` (GitHub's example label).
fn label_objects(template: &Value, names: &[String]) -> Vec<Value> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut l = template.clone();
            set(&mut l, &[("/id", json!(i + 1)), ("/name", json!(name))]);
            l
        })
        .collect()
}

/// A string field of a JSON request body.
fn field(body: &[u8], key: &str) -> Option<String> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v[key].as_str().map(str::to_string))
}

pub(super) fn comment_json(repo: &str, c: &Comment) -> Value {
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
                json!(match c.issue {
                    Some(n) =>
                        format!("https://github.com/{repo}/issues/{n}#issuecomment-{}", c.id),
                    None => format!("https://github.com/{repo}/pull/3#issuecomment-{}", c.id),
                }),
            ),
            (
                "/issue_url",
                json!(format!("{}/issues/{}", api(repo), c.issue.unwrap_or(3))),
            ),
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

pub(super) fn issue_json(
    repo: &str,
    number: u64,
    issue: &FakeIssue,
    is_pull: bool,
    author: &str,
) -> Value {
    let mut v = example("issues/get");
    let labels = label_objects(&v["labels"][0].take(), &issue.labels);
    set(
        &mut v,
        &[
            ("/number", json!(number)),
            ("/title", json!(issue.title)),
            ("/body", json!(issue.body)),
            ("/labels", json!(labels)),
            ("/state", json!(issue.state)),
            ("/user", simple_user(author)),
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

pub(super) async fn issue(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET issue {number}");
    let fake = &caller.fake;
    if let Some(issue) = fake.issues.get(&number) {
        return ok(issue_json(
            &fake.repo,
            number,
            issue,
            false,
            &author_of(fake, number),
        ));
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
            &p.author,
        )),
        None => not_found(),
    }
}

pub(super) async fn update_issue(
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
    let author = author_of(&caller.fake, number);
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
    let shaped = issue_json(&full, number, &issue, false, &author);
    for key in [
        "number", "title", "body", "labels", "state", "url", "html_url", "user",
    ] {
        v[key] = shaped[key].clone();
    }
    ok(v)
}

pub(super) async fn labels(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET labels {number}");
    let Some(issue) = caller.fake.issues.get(&number) else {
        return not_found();
    };
    let items = label_objects(&example("issues/list-labels-on-issue")[0], &issue.labels);
    paged(
        &caller.fake,
        &format!("/repos/{owner}/{repo}/issues/{number}/labels"),
        items,
        &query,
        None,
    )
}

pub(super) async fn list_comments(
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
    let mut sorted: Vec<Comment> = caller
        .fake
        .comments
        .iter()
        .filter(|c| c.issue.is_none_or(|n| n == number))
        .cloned()
        .collect();
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

pub(super) async fn create_comment(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST comment");
    if !caller.can_write {
        return forbidden();
    }
    let Some(text) = field(&body, "body") else {
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
            issue: Some(number),
            login: who,
            body: racing,
            minimized: false,
        });
    }
    fake.next_id += 1;
    let comment = Comment {
        id: fake.next_id,
        issue: Some(number),
        login: caller.login.clone(),
        body: text,
        minimized: false,
    };
    fake.comments.push(comment.clone());
    json_of(StatusCode::CREATED, comment_json(&fake.repo, &comment))
}

pub(super) async fn get_comment(
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

pub(super) async fn edit_comment(
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
    let Some(text) = field(&body, "body") else {
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

pub(super) async fn delete_comment(
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

/// Who opened an issue: as recorded, else `octocat`.
fn author_of(fake: &Fake, number: u64) -> String {
    fake.issue_authors
        .get(&number)
        .cloned()
        .unwrap_or_else(|| "octocat".into())
}

/// The next issue or pull request number (they share one sequence, as on GitHub).
fn next_number(fake: &Fake) -> u64 {
    let issues = fake.issues.keys().max().copied().unwrap_or(0);
    let pulls = fake.pulls.keys().max().copied().unwrap_or(0);
    issues.max(pulls) + 1
}

/// `GET /repos/{o}/{r}/issues`: issues and pull requests, filtered by `state` (default open), `labels`
/// (all of them) and `creator`, newest first (GitHub's default `sort=created&direction=desc`).
pub(super) async fn list_issues(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Q,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET issues {query:?}");
    let fake = &caller.fake;
    let wanted_state = query.get("state").map_or("open", String::as_str);
    let labels: Vec<&str> = query
        .get("labels")
        .map(|l| l.split(',').filter(|l| !l.is_empty()).collect())
        .unwrap_or_default();
    let creator = query.get("creator");
    let mut all: Vec<(u64, Value)> = Vec::new();
    for (&number, issue) in &fake.issues {
        all.push((
            number,
            issue_json(&fake.repo, number, issue, false, &author_of(fake, number)),
        ));
    }
    for (&number, p) in &fake.pulls {
        let shaped = FakeIssue {
            title: format!("Pull request {number}"),
            body: p.body.clone(),
            labels: Vec::new(),
            state: p.state.clone(),
        };
        all.push((
            number,
            issue_json(&fake.repo, number, &shaped, true, &p.author),
        ));
    }
    all.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let items: Vec<Value> = all
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| wanted_state == "all" || v["state"] == wanted_state)
        .filter(|v| {
            labels.iter().all(|want| {
                v["labels"]
                    .as_array()
                    .is_some_and(|have| have.iter().any(|l| l["name"] == *want))
            })
        })
        .filter(|v| creator.is_none_or(|c| v["user"]["login"] == c.as_str()))
        .collect();
    paged(
        fake,
        &format!("/repos/{owner}/{repo}/issues"),
        items,
        &query,
        None,
    )
}

/// `POST /repos/{o}/{r}/issues`: `title` required; labels that do not exist are created (as GitHub does
/// for a writer).
pub(super) async fn create_issue(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST issue");
    if !caller.can_write {
        return forbidden();
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "Problems parsing JSON");
    };
    let Some(title) = request["title"].as_str().filter(|t| !t.is_empty()) else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed");
    };
    let labels: Vec<String> = request["labels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    let login = caller.login.clone();
    let fake = &mut caller.fake;
    if let Some((who, racing)) = fake.race_issue.take() {
        let number = next_number(fake);
        fake.issues.insert(number, racing);
        fake.issue_authors.insert(number, who);
    }
    for label in &labels {
        if !fake.labels.contains(label) {
            fake.labels.push(label.clone());
        }
    }
    let number = next_number(fake);
    let issue = FakeIssue {
        title: title.to_string(),
        body: request["body"].as_str().map(str::to_string),
        labels,
        state: "open".into(),
    };
    fake.issues.insert(number, issue.clone());
    fake.issue_authors.insert(number, login.clone());
    let mut v = example("issues/create");
    let shaped = issue_json(&fake.repo, number, &issue, false, &login);
    for key in [
        "number", "title", "body", "labels", "state", "url", "html_url", "user",
    ] {
        v[key] = shaped[key].clone();
    }
    json_of(StatusCode::CREATED, v)
}

/// `POST /repos/{o}/{r}/labels`: 201, or 422 `already_exists` as GitHub answers.
pub(super) async fn create_label(
    State(state): State<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST label");
    if !caller.can_write {
        return forbidden();
    }
    let Some(name) = field(&body, "name") else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed");
    };
    if caller
        .fake
        .labels
        .iter()
        .any(|l| l.eq_ignore_ascii_case(&name))
    {
        return json_of(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"message": "Validation Failed", "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}], "documentation_url": "https://docs.github.com/rest/issues/labels#create-a-label", "status": "422"}),
        );
    }
    caller.fake.labels.push(name.clone());
    let mut v = example("issues/create-label");
    set(&mut v, &[("/name", json!(name))]);
    json_of(StatusCode::CREATED, v)
}

/// `POST /repos/{o}/{r}/issues/{n}/labels`: adds labels; answers every label of the issue.
pub(super) async fn add_labels(
    State(state): State<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let mut caller = enter!(state, headers, owner, repo, "POST labels {number}");
    if !caller.can_write {
        return forbidden();
    }
    let added: Vec<String> = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["labels"].as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    let fake = &mut caller.fake;
    for label in &added {
        if !fake.labels.contains(label) {
            fake.labels.push(label.clone());
        }
    }
    let Some(issue) = fake.issues.get_mut(&number) else {
        return not_found();
    };
    for label in added {
        if !issue.labels.contains(&label) {
            issue.labels.push(label);
        }
    }
    ok(Value::Array(label_objects(
        &example("issues/add-labels")[0],
        &issue.labels,
    )))
}
