//! The fake GitHub's pull requests: the list, one, its reviews and commits, the squash merge, and a
//! collaborator's permission.

use super::*;

pub(super) fn pull_json(template: Value, repo: &str, number: u64, p: &FakePull) -> Value {
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

pub(super) async fn pulls(
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

pub(super) async fn pull(
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

pub(super) async fn reviews(
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

pub(super) async fn pull_commits(
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
                    ("/author", simple_user(&p.author)),
                    (
                        "/committer",
                        simple_user(p.committer.as_deref().unwrap_or(&p.author)),
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

pub(super) async fn merge(
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

pub(super) async fn permission(
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
