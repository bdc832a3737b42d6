"""Extracts the response schema and GitHub's own example of each endpoint aayu uses from @octokit/openapi."""
import json, sys, os
spec_path, out = sys.argv[1], sys.argv[2]
d = json.load(open(spec_path))
OPS = {
 "users/get-authenticated": ("/user", "get"),
 "repos/get": ("/repos/{owner}/{repo}", "get"),
 "issues/get": ("/repos/{owner}/{repo}/issues/{issue_number}", "get"),
 "issues/update": ("/repos/{owner}/{repo}/issues/{issue_number}", "patch"),
 "issues/list-labels-on-issue": ("/repos/{owner}/{repo}/issues/{issue_number}/labels", "get"),
 "issues/list-comments": ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"),
 "issues/create-comment": ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
 "issues/get-comment": ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "get"),
 "issues/update-comment": ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
 "pulls/get": ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
 "pulls/list": ("/repos/{owner}/{repo}/pulls", "get"),
 "pulls/list-reviews": ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "get"),
 "pulls/list-commits": ("/repos/{owner}/{repo}/pulls/{pull_number}/commits", "get"),
 "pulls/merge": ("/repos/{owner}/{repo}/pulls/{pull_number}/merge", "put"),
 "repos/get-collaborator-permission-level": ("/repos/{owner}/{repo}/collaborators/{username}/permission", "get"),
 "repos/create-commit-status": ("/repos/{owner}/{repo}/statuses/{sha}", "post"),
 "repos/list-commit-statuses-for-ref": ("/repos/{owner}/{repo}/commits/{ref}/statuses", "get"),
 "repos/get-combined-status-for-ref": ("/repos/{owner}/{repo}/commits/{ref}/status", "get"),
 "repos/get-content": ("/repos/{owner}/{repo}/contents/{path}", "get"),
 "git/get-ref": ("/repos/{owner}/{repo}/git/ref/{ref}", "get"),
 "repos/get-branch": ("/repos/{owner}/{repo}/branches/{branch}", "get"),
 "repos/get-commit": ("/repos/{owner}/{repo}/commits/{ref}", "get"),
 "actions/list-repo-workflows": ("/repos/{owner}/{repo}/actions/workflows", "get"),
 "actions/list-workflow-runs": ("/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", "get"),
 "actions/get-workflow-run": ("/repos/{owner}/{repo}/actions/runs/{run_id}", "get"),
 "actions/get-workflow-run-attempt": ("/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt_number}", "get"),
 "actions/list-jobs-for-workflow-run": ("/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", "get"),
 "actions/list-workflow-run-artifacts": ("/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", "get"),
 "actions/get-artifact": ("/repos/{owner}/{repo}/actions/artifacts/{artifact_id}", "get"),
 "git/get-tag": ("/repos/{owner}/{repo}/git/tags/{tag_sha}", "get"),
 "repos/get-branch-rules": ("/repos/{owner}/{repo}/rules/branches/{branch}", "get"),
 "repos/get-branch-protection": ("/repos/{owner}/{repo}/branches/{branch}/protection", "get"),
 "issues/list-for-repo": ("/repos/{owner}/{repo}/issues", "get"),
 "issues/create": ("/repos/{owner}/{repo}/issues", "post"),
 "issues/create-label": ("/repos/{owner}/{repo}/labels", "post"),
 "issues/add-labels": ("/repos/{owner}/{repo}/issues/{issue_number}/labels", "post"),
}
EXAMPLE = {"repos/get-content": "response-if-content-is-a-file", "users/get-authenticated": "response-with-public-profile-information",
           "repos/get-collaborator-permission-level": "response-if-user-has-admin-permissions", "pulls/merge": "response-if-merge-was-successful"}
def json_schema(node):
    """OpenAPI 3.0's `nullable: true` in JSON Schema terms: the value may also be null."""
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: json_schema(v) for k, v in node.items()}
    if node.pop("nullable", False):
        if isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"] = node["enum"] + [None]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node

def fix(op_id, example):
    """Where GitHub's own example misses a field its schema requires, add it; say what was added."""
    notes = []
    def need(obj, key, value, where):
        if key not in obj:
            obj[key] = value
            notes.append(where)
    if op_id == "actions/list-jobs-for-workflow-run":
        for job in example["jobs"]:
            need(job, "created_at", job.get("started_at"), "jobs[].created_at")
    if op_id in ("pulls/get", "pulls/list"):
        for pull in example if isinstance(example, list) else [example]:
            for team in pull.get("requested_teams") or []:
                need(team, "type", "organization", "requested_teams[].type")
    if op_id == "repos/get-collaborator-permission-level":
        need(example["user"], "role_name", example["role_name"], "user.role_name")
    if op_id == "repos/get-commit":
        for f in example["files"]:
            need(f, "sha", "bbcd538c8e72b8c175046e27cc8f907076331401", "files[].sha")
            need(f, "contents_url", "https://api.github.com/repos/octocat/Hello-World/contents/" + f["filename"], "files[].contents_url")
    if op_id == "repos/get":
        need(example, "language", None, "language")
        need(example["source"], "language", None, "source.language")
    if op_id == "repos/get-branch-protection":
        need(example["required_status_checks"], "checks", [{"context": c, "app_id": None} for c in example["required_status_checks"]["contexts"]], "required_status_checks.checks")
        for team in example["required_pull_request_reviews"]["dismissal_restrictions"]["teams"] + example["restrictions"]["teams"]:
            need(team, "type", "organization", "teams[].type")
        for app in example["required_pull_request_reviews"]["dismissal_restrictions"]["apps"]:
            owner = app["owner"]
            for key, value in (("gravatar_id", ""), ("type", "Organization"), ("site_admin", False), ("html_url", "https://github.com/github"),
                               ("followers_url", ""), ("following_url", ""), ("gists_url", ""), ("starred_url", ""), ("subscriptions_url", ""),
                               ("organizations_url", ""), ("received_events_url", "")):
                need(owner, key, value, "apps[].owner." + key)
    return notes

def correct(op_id, schema):
    """Known inaccuracies of GitHub's description, fixed the way GitHub's API behaves; say which."""
    fixed = []
    if op_id in ("pulls/get", "pulls/list"):
        # A pull request from a deleted fork has `head.repo: null`
        # (github/rest-api-description#161, #1811).
        pull = schema["items"] if op_id == "pulls/list" else schema
        repo = pull["properties"]["head"]["properties"]["repo"]
        if "anyOf" not in repo and "null" not in repo.get("type", []):
            pull["properties"]["head"]["properties"]["repo"] = {"anyOf": [repo, {"type": "null"}]}
            fixed.append("head.repo may be null (github/rest-api-description#161, #1811)")
    return fixed

os.makedirs(out, exist_ok=True)
for op_id, (path, method) in OPS.items():
    op = d["paths"][path][method]
    assert op["operationId"] == op_id, (op_id, op["operationId"])
    code = next(c for c in ("200", "201") if c in op["responses"])
    content = op["responses"][code]["content"]["application/json"]
    examples = content["examples"]
    example = examples[EXAMPLE.get(op_id, "default" if "default" in examples else next(iter(examples)))]["value"]
    while isinstance(example, dict) and set(example) <= {"value", "x-github-breaking-changes"} and "value" in example:  # issues/get: wrapped twice
        example = example["value"]
    notes = fix(op_id, example)
    name = op_id.replace("/", "--")
    schema = json_schema(content["schema"])
    corrected = correct(op_id, schema)
    doc = {"$comment": f"{method.upper()} {path} ({op_id}), answer {code}, from @octokit/openapi 23.0.2 generated/api.github.com.deref.json",
           "schema": schema, "example": example}
    if corrected:
        doc["$comment"] += "; the schema is corrected where GitHub's description is known to be wrong: " + ", ".join(corrected)
    if notes:
        doc["$comment"] += "; GitHub's example lacks fields its own schema requires, added here: " + ", ".join(notes)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    print(name)
