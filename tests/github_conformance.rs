//! The fake GitHub answers in GitHub's own shapes: its responses validate against the response schemas
//! of GitHub's OpenAPI description (`tests/data/github-openapi/`, from `@octokit/openapi`).

#[path = "support/fake_github.rs"]
mod fake_github;

use aayudha::github::{Client, Token};
use fake_github::Server;
use http::Method;
use serde_json::{Value, json};

fn schema(name: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/data/github-openapi/{name}.json"));
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).expect("json");
    jsonschema::validator_for(&value).expect("a valid schema")
}

fn conforms(name: &str, value: &Value) {
    let validator = schema(name);
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the fake's answer does not match GitHub's `{name}` schema: {errors:#?}\n{value:#}"
    );
}

#[test]
fn the_fake_answers_in_githubs_shapes() {
    let server = Server::start();
    {
        let mut fake = server.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "aayu-bot".into());
        fake.files.insert(
            ("ledger".into(), "specs/7/ready.md".into()),
            b"# Story 7\n".to_vec(),
        );
        fake.run_artifacts
            .push((77, 5001, "aayudha-pack".into(), b"zip".to_vec(), false));
    }
    server.seed("someone", "hello");
    let client = Client::new(&server.url, &Token::new("t")).expect("client");
    let created = client
        .json(
            Method::POST,
            "/repos/octo/shop/issues/3/comments",
            Some(&json!({"body": "x"})),
            "create",
        )
        .expect("create");
    conforms("issue-comment-create", &created);
    let id = created["id"].as_u64().expect("id");
    let updated = client
        .json(
            Method::PATCH,
            &format!("/repos/octo/shop/issues/comments/{id}"),
            Some(&json!({"body": "y"})),
            "update",
        )
        .expect("update");
    conforms("issue-comment-update", &updated);
    let listed = client
        .json(
            Method::GET,
            "/repos/octo/shop/issues/3/comments?per_page=100",
            None,
            "list",
        )
        .expect("list");
    conforms("issue-comments-list", &listed);
    let status = client
        .json(Method::POST, &format!("/repos/octo/shop/statuses/{}", "1".repeat(40)), Some(&json!({"state": "success", "context": "aayudha/proof", "description": "run 1", "target_url": "https://github.com/octo/shop/actions/runs/1"})), "status")
        .expect("status");
    conforms("status-create", &status);
    let artifacts = client
        .json(
            Method::GET,
            "/repos/octo/shop/actions/runs/77/artifacts?name=aayudha-pack",
            None,
            "artifacts",
        )
        .expect("artifacts");
    conforms("run-artifacts-list", &artifacts);
    let content = client
        .json(
            Method::GET,
            "/repos/octo/shop/contents/specs/7/ready.md?ref=ledger",
            None,
            "content",
        )
        .expect("content");
    conforms("content-get", &content);
    server.assert_clean();
}

#[test]
fn the_schemas_are_strict_enough_to_catch_a_drifting_fake() {
    let minimal = json!({"state": "success", "context": "aayudha/proof"});
    assert!(
        !schema("status-create").is_valid(&minimal),
        "a status without its required fields is caught"
    );
    assert!(!schema("issue-comment-create").is_valid(&json!({"id": 1, "body": "x"})));
}
