//! The fake GitHub answers in GitHub's own shapes: every endpoint of SPEC §9 it serves is called here, and
//! each answer is validated against the response schema of GitHub's OpenAPI description
//! (`tests/data/github-openapi/`, from `@octokit/openapi`).

use crate::support::fake_github;

use std::collections::BTreeSet;
use std::path::PathBuf;

use aayudha::github::{Client, Token};
use fake_github::{FakeIssue, FakePull, FakeRun, Server};
use http::Method;
use serde_json::{Value, json};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/github-openapi")
}

fn operations() -> BTreeSet<String> {
    std::fs::read_dir(data_dir())
        .expect("data")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(|n| n.replace("--", "/"))
        })
        .collect()
}

fn document(operation: &str) -> Value {
    let path = data_dir().join(format!("{}.json", operation.replace('/', "--")));
    serde_json::from_slice(&std::fs::read(&path).expect("schema file")).expect("json")
}

fn validator(operation: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&document(operation)["schema"]).expect("a valid schema")
}

fn problems(operation: &str, value: &Value) -> Vec<String> {
    validator(operation)
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Calls the fake and checks its answers against GitHub's schemas, remembering which operations it saw.
struct Checker {
    client: Client,
    seen: BTreeSet<String>,
}

impl Checker {
    fn check(&mut self, operation: &str, method: Method, path: &str, body: Option<Value>) -> Value {
        let answer = self
            .client
            .json(method, path, body.as_ref(), operation)
            .unwrap_or_else(|e| panic!("{operation} {path}: {e}"));
        let found = problems(operation, &answer);
        assert!(
            found.is_empty(),
            "the fake's answer to {path} does not match GitHub's `{operation}` schema: {found:#?}\n{answer:#}"
        );
        self.seen.insert(operation.to_string());
        answer
    }
}

fn seeded() -> Server {
    let server = Server::start();
    let head = "1".repeat(40);
    {
        let mut fake = server.state.lock().expect("lock");
        fake.tokens.insert("t".into(), "aayu-bot".into());
        fake.files.insert(
            ("ledger".into(), "specs/7/ready.md".into()),
            b"# Story 7\n".to_vec(),
        );
        fake.run_artifacts
            .push((77, 5001, "aayudha-pack".into(), b"zip".to_vec(), false));
        fake.issues.insert(
            7,
            FakeIssue {
                title: "Totals".into(),
                body: Some("## Completion Goal\n\n1. x".into()),
                labels: vec!["type:bug".into()],
                state: "open".into(),
            },
        );
        let mut fork = FakePull::open(&head);
        fork.head_repo = None;
        fake.pulls.insert(3, FakePull::open(&head));
        fake.pulls.insert(4, fork);
        fake.reviews
            .insert(3, vec![("alice".into(), "APPROVED".into(), head.clone())]);
        fake.permissions.insert("alice".into(), "maintain".into());
        fake.refs.insert("heads/main".into(), "2".repeat(40));
        fake.refs.insert("heads/feature".into(), head.clone());
        fake.commits
            .insert(head.clone(), ("Fix totals".into(), vec!["2".repeat(40)]));
        let mut run = FakeRun::gate(77, "aayudha-merge-gate.yml");
        run.run_attempt = 2;
        run.earlier_attempts = vec![("completed".into(), Some("failure".into()))];
        fake.runs.push(run);
        fake.runs.push(FakeRun {
            status: "in_progress".into(),
            conclusion: None,
            ..FakeRun::gate(78, "aayudha-merge-gate.yml")
        });
    }
    server.seed("someone", "hello");
    {
        let mut fake = server.state.lock().expect("lock");
        fake.ruleset_contexts = vec!["aayudha/proof".into()];
        fake.protection_contexts = Some(vec!["ci/build".into()]);
        fake.admins.push("t".into());
        fake.refs.insert("tags/v1.2.3".into(), "2".repeat(40));
        fake.annotated_tags.insert("2".repeat(40), "3".repeat(40));
    }
    server
}

#[test]
fn every_answer_of_the_fake_matches_githubs_schema() {
    let server = seeded();
    let head = "1".repeat(40);
    let mut c = Checker {
        client: Client::new(&server.url, &Token::new("t")).expect("client"),
        seen: BTreeSet::new(),
    };
    let r = "/repos/octo/shop";
    c.check("users/get-authenticated", Method::GET, "/user", None);
    c.check("repos/get", Method::GET, r, None);
    c.check("issues/get", Method::GET, &format!("{r}/issues/7"), None);
    c.check("issues/get", Method::GET, &format!("{r}/issues/3"), None);
    c.check(
        "issues/update",
        Method::PATCH,
        &format!("{r}/issues/7"),
        Some(json!({"body": "new", "labels": ["a", "b"]})),
    );
    c.check(
        "issues/list-labels-on-issue",
        Method::GET,
        &format!("{r}/issues/7/labels"),
        None,
    );
    let created = c.check(
        "issues/create-comment",
        Method::POST,
        &format!("{r}/issues/3/comments"),
        Some(json!({"body": "x"})),
    );
    let id = created["id"].as_u64().expect("id");
    c.check(
        "issues/get-comment",
        Method::GET,
        &format!("{r}/issues/comments/{id}"),
        None,
    );
    c.check(
        "issues/update-comment",
        Method::PATCH,
        &format!("{r}/issues/comments/{id}"),
        Some(json!({"body": "y"})),
    );
    c.check(
        "issues/list-comments",
        Method::GET,
        &format!("{r}/issues/3/comments?per_page=100"),
        None,
    );
    let label = c.check(
        "issues/create-label",
        Method::POST,
        &format!("{r}/labels"),
        Some(json!({"name": "aayudha:verify-maintain", "color": "5319e7", "description": "d"})),
    );
    assert_eq!(label["name"], "aayudha:verify-maintain");
    let again = c
        .client
        .send(
            Method::POST,
            &format!("{r}/labels"),
            Some(&json!({"name": "aayudha:verify-maintain"})),
            "a label",
        )
        .expect_err("a label that exists is refused");
    // GitHub's own error code, inside its example answer that the message quotes.
    assert!(again.to_string().contains("already_exists"), "{again}");
    let issue = c.check(
        "issues/create",
        Method::POST,
        &format!("{r}/issues"),
        Some(json!({"title": "t", "body": "<!-- m -->", "labels": ["aayudha:verify-maintain"]})),
    );
    let number = issue["number"].as_u64().expect("number");
    assert_eq!(number, 8, "issues and pull requests share one sequence");
    c.check(
        "issues/add-labels",
        Method::POST,
        &format!("{r}/issues/{number}/labels"),
        Some(json!({"labels": ["more"]})),
    );
    let listed = c.check(
        "issues/list-for-repo",
        Method::GET,
        &format!("{r}/issues?state=open&labels=aayudha:verify-maintain,more"),
        None,
    );
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed:#}");
    let mine = c.check(
        "issues/list-for-repo",
        Method::GET,
        &format!("{r}/issues?state=open&creator=aayu-bot"),
        None,
    );
    assert_eq!(mine[0]["number"], number);
    let every = c.check(
        "issues/list-for-repo",
        Method::GET,
        &format!("{r}/issues?state=all"),
        None,
    );
    assert!(
        every
            .as_array()
            .expect("list")
            .iter()
            .any(|i| !i["pull_request"].is_null()),
        "pull requests are listed as issues too"
    );
    c.check("pulls/get", Method::GET, &format!("{r}/pulls/3"), None);
    let fork = c.check("pulls/get", Method::GET, &format!("{r}/pulls/4"), None);
    assert!(fork["head"]["repo"].is_null(), "a deleted fork is null");
    c.check(
        "pulls/list",
        Method::GET,
        &format!("{r}/pulls?state=all"),
        None,
    );
    c.check(
        "pulls/list-reviews",
        Method::GET,
        &format!("{r}/pulls/3/reviews"),
        None,
    );
    c.check(
        "pulls/list-commits",
        Method::GET,
        &format!("{r}/pulls/3/commits"),
        None,
    );
    c.check(
        "repos/get-collaborator-permission-level",
        Method::GET,
        &format!("{r}/collaborators/alice/permission"),
        None,
    );
    c.check(
        "repos/create-commit-status",
        Method::POST,
        &format!("{r}/statuses/{head}"),
        Some(json!({"state": "success", "context": "aayudha/proof", "description": "run 1", "target_url": "https://github.com/octo/shop/actions/runs/1"})),
    );
    c.check(
        "repos/create-commit-status",
        Method::POST,
        &format!("{r}/statuses/{head}"),
        Some(json!({"state": "pending", "context": "ci"})),
    );
    c.check(
        "repos/list-commit-statuses-for-ref",
        Method::GET,
        &format!("{r}/commits/{head}/statuses"),
        None,
    );
    c.check(
        "repos/get-combined-status-for-ref",
        Method::GET,
        &format!("{r}/commits/feature/status"),
        None,
    );
    c.check(
        "repos/get-commit",
        Method::GET,
        &format!("{r}/commits/{head}"),
        None,
    );
    c.check(
        "repos/get-content",
        Method::GET,
        &format!("{r}/contents/specs/7/ready.md?ref=ledger"),
        None,
    );
    c.check(
        "git/get-ref",
        Method::GET,
        &format!("{r}/git/ref/heads/main"),
        None,
    );
    c.check(
        "repos/get-branch",
        Method::GET,
        &format!("{r}/branches/main"),
        None,
    );
    let rules = c.check(
        "repos/get-branch-rules",
        Method::GET,
        &format!("{r}/rules/branches/main"),
        None,
    );
    assert_eq!(
        rules[0]["parameters"]["required_status_checks"][0]["context"],
        "aayudha/proof"
    );
    let protection = c.check(
        "repos/get-branch-protection",
        Method::GET,
        &format!("{r}/branches/main/protection"),
        None,
    );
    assert_eq!(
        protection["required_status_checks"]["contexts"],
        json!(["ci/build"])
    );
    let tag = c.check(
        "git/get-ref",
        Method::GET,
        &format!("{r}/git/ref/tags/v1.2.3"),
        None,
    );
    assert_eq!(tag["object"]["type"], "tag");
    let annotated = c.check(
        "git/get-tag",
        Method::GET,
        &format!("{r}/git/tags/{}", "2".repeat(40)),
        None,
    );
    assert_eq!(annotated["object"]["sha"], "3".repeat(40));
    c.check(
        "actions/list-repo-workflows",
        Method::GET,
        &format!("{r}/actions/workflows"),
        None,
    );
    c.check(
        "actions/list-workflow-runs",
        Method::GET,
        &format!("{r}/actions/workflows/aayudha-merge-gate.yml/runs"),
        None,
    );
    c.check(
        "actions/get-workflow-run",
        Method::GET,
        &format!("{r}/actions/runs/77"),
        None,
    );
    c.check(
        "actions/get-workflow-run",
        Method::GET,
        &format!("{r}/actions/runs/78"),
        None,
    );
    c.check(
        "actions/get-workflow-run-attempt",
        Method::GET,
        &format!("{r}/actions/runs/77/attempts/1"),
        None,
    );
    c.check(
        "actions/list-jobs-for-workflow-run",
        Method::GET,
        &format!("{r}/actions/runs/77/jobs"),
        None,
    );
    c.check(
        "actions/list-workflow-run-artifacts",
        Method::GET,
        &format!("{r}/actions/runs/77/artifacts?name=aayudha-pack"),
        None,
    );
    c.check(
        "actions/get-artifact",
        Method::GET,
        &format!("{r}/actions/artifacts/5001"),
        None,
    );
    let merged = c.check(
        "pulls/merge",
        Method::PUT,
        &format!("{r}/pulls/3/merge"),
        Some(json!({"sha": head, "merge_method": "squash"})),
    );
    assert_eq!(merged["merged"], json!(true));
    c.check("pulls/get", Method::GET, &format!("{r}/pulls/3"), None);

    let missing: Vec<_> = operations().difference(&c.seen).cloned().collect();
    assert!(
        missing.is_empty(),
        "operations with a schema the fake was never checked against: {missing:?}"
    );
    server.assert_clean();
}

#[test]
fn githubs_own_examples_match_its_schemas() {
    // The fake is built from these; were one invalid, the fake would start from a wrong shape.
    for operation in operations() {
        let doc = document(&operation);
        let found = problems(&operation, &doc["example"]);
        assert!(found.is_empty(), "{operation}: {found:#?}");
    }
}

#[test]
fn the_schemas_are_strict_enough_to_catch_a_drifting_fake() {
    let minimal = json!({"state": "success", "context": "aayudha/proof"});
    assert!(
        !problems("repos/create-commit-status", &minimal).is_empty(),
        "a status without its required fields is caught"
    );
    let mut pull = document("pulls/get")["example"].clone();
    pull["head"]["sha"] = json!(7);
    assert!(
        !problems("pulls/get", &pull).is_empty(),
        "a wrong type is caught"
    );
    let mut run = document("actions/get-workflow-run")["example"].clone();
    run["conclusion"] = Value::Null;
    assert!(
        problems("actions/get-workflow-run", &run).is_empty(),
        "GitHub's nullable fields accept null"
    );
    run.as_object_mut().expect("object").remove("head_sha");
    assert!(
        !problems("actions/get-workflow-run", &run).is_empty(),
        "a missing required field is caught"
    );
}
