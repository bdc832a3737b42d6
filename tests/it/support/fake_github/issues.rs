//! The fake GitHub's issues: a story's body and labels, and the comments of an issue or pull request.

use super::*;

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

pub(super) fn issue_json(repo: &str, number: u64, issue: &FakeIssue, is_pull: bool) -> Value {
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

pub(super) async fn issue(
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

pub(super) async fn create_comment(
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
