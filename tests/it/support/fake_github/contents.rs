//! The fake GitHub's repository contents: files on a branch, git refs, branches, commits, and the commit
//! statuses set on them.

use super::*;

pub(super) fn status_json(repo: &str, i: usize, s: &FakeStatus) -> Value {
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

pub(super) async fn create_status(
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
pub(super) fn resolve(fake: &Fake, reference: &str) -> Option<String> {
    if reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(reference.to_string());
    }
    fake.refs
        .get(reference)
        .or_else(|| fake.refs.get(&format!("heads/{reference}")))
        .cloned()
}

pub(super) async fn commits(
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

pub(super) async fn contents(
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

pub(super) async fn git_ref(
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
            if caller.fake.annotated_tags.contains_key(sha) {
                set(
                    &mut v,
                    &[
                        ("/object/type", json!("tag")),
                        (
                            "/object/url",
                            json!(format!("{}/git/tags/{sha}", api(&caller.fake.repo))),
                        ),
                    ],
                );
            }
            ok(v)
        }
        None => not_found(),
    }
}

pub(super) async fn delete_ref(
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

pub(super) async fn branch(
    State(state): State<Shared>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    // `…/branches/{b}/protection` shares the route (a wildcard must come last).
    if let Some(branch) = name.strip_suffix("/protection") {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("token "))
            })
            .unwrap_or_default()
            .to_string();
        let caller = enter!(state, headers, owner, repo, "GET protection {branch}");
        let fake = &caller.fake;
        if !fake.admins.contains(&token) || branch != fake.default_branch {
            return error(StatusCode::NOT_FOUND, "Not Found");
        }
        let Some(contexts) = &fake.protection_contexts else {
            return error(StatusCode::NOT_FOUND, "Branch not protected");
        };
        let mut v = example("repos/get-branch-protection");
        set(
            &mut v,
            &[
                ("/required_status_checks/contexts", json!(contexts)),
                (
                    "/required_status_checks/checks",
                    json!(
                        contexts
                            .iter()
                            .map(|c| json!({"context": c, "app_id": null}))
                            .collect::<Vec<_>>()
                    ),
                ),
            ],
        );
        return ok(v);
    }
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

/// `GET /repos/{o}/{r}/rules/branches/{branch}`: the rules that apply to the branch; the required status
/// checks of the fake's ruleset on the default branch.
pub(super) async fn branch_rules(
    State(state): State<Shared>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET rules {name}");
    let fake = &caller.fake;
    if name != fake.default_branch || fake.ruleset_contexts.is_empty() {
        return ok(json!([]));
    }
    let mut rule = example("repos/get-branch-rules")[0].clone();
    set(
        &mut rule,
        &[
            ("/type", json!("required_status_checks")),
            ("/ruleset_source", json!(fake.repo)),
            (
                "/parameters",
                json!({
                    "strict_required_status_checks_policy": false,
                    "required_status_checks": fake
                        .ruleset_contexts
                        .iter()
                        .map(|c| json!({"context": c}))
                        .collect::<Vec<_>>(),
                }),
            ),
        ],
    );
    ok(json!([rule]))
}

/// `GET /repos/{o}/{r}/git/tags/{sha}`: an annotated tag object and the commit it tags.
pub(super) async fn git_tag(
    State(state): State<Shared>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let caller = enter!(state, headers, owner, repo, "GET tag {sha}");
    let Some(commit) = caller.fake.annotated_tags.get(&sha) else {
        return not_found();
    };
    let mut v = example("git/get-tag");
    set(
        &mut v,
        &[
            ("/sha", json!(sha)),
            (
                "/url",
                json!(format!("{}/git/tags/{sha}", api(&caller.fake.repo))),
            ),
            ("/object/type", json!("commit")),
            ("/object/sha", json!(commit)),
            (
                "/object/url",
                json!(format!("{}/git/commits/{commit}", api(&caller.fake.repo))),
            ),
        ],
    );
    ok(v)
}
