//! JavaScript packages as real repositories lay them out (synthetic fixtures, no third-party code, no
//! registry): a package tested by node's built-in runner (nested describes, a skipped test, a title with
//! parentheses, a new spec file the base cannot load), and one with a local dependency whose `postinstall`
//! script records whether it had the network and as whom. Each goes through `verify --ci` with a bug story.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::common::{self, TestRepo, ready, run};

const GOAL: &str = "1. Two numbers add up.\n2. Zero stays zero.\n3. Parts are counted.";

const TESTS: &str = "import { describe, it } from \"node:test\";\nimport assert from \"node:assert\";\nimport { add } from \"../calc.js\";\n\ndescribe(\"add\", () => {\n  describe(\"numbers\", () => {\n    it(\"sums (two of them)\", () => {\n      assert.equal(add(2, 2), 4);\n    });\n  });\n  it(\"keeps zero\", () => {\n    assert.equal(add(0, 0), 0);\n  });\n  it.skip(\"is not done yet\", () => {});\n});\n";

const COUNT_TEST: &str = "import { describe, it } from \"node:test\";\nimport assert from \"node:assert\";\nimport { count } from \"../calc.js\";\n\ndescribe(\"count\", () => {\n  it(\"counts\", () => {\n    assert.equal(count(\"a,b,c\"), 3);\n  });\n});\n";

const EVIDENCE: &str = "[[criterion]]\nid = 1\ntests = [\".:test/calc.test.js::add > numbers > sums (two of them)\"]\n\n[[criterion]]\nid = 2\ntests = [\".:test/calc.test.js::add > keeps zero\"]\n\n[[criterion]]\nid = 3\ntests = [\".:test/count.test.js::count > counts\"]\n";

/// The package at the root: the bug at the base (`a - b`), the fix, `count` and the tests at the head.
fn package(manifest: &str, evidence: &str) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    repo.write("package.json", manifest)
        .write("calc.js", "export const add = (a, b) => a - b;\n")
        .write(
            ".gitignore",
            "node_modules/\n.aayudha/runs/\n.aayudha/proof/\n",
        )
        .write(".aayudha/config.toml", "");
    let base = repo.commit("calc, with the bug");
    repo.write(
        "calc.js",
        "export const add = (a, b) => a + b;\nexport const count = (text) => text.split(\",\").length;\n",
    )
    .write("test/calc.test.js", TESTS)
    .write("test/count.test.js", COUNT_TEST)
    .write(".aayudha/evidence/5.toml", evidence);
    let head = repo.commit("fix: add adds");
    (repo, base, head)
}

const PLAIN: &str = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"type\": \"module\",\n  \"scripts\": { \"test\": \"node --test\" }\n}\n";

fn ci(repo: &TestRepo, base: &str, head: &str, json: bool) -> (i32, String, String) {
    let snapshot = ready(repo, 5, GOAL, &["type:bug"]);
    let mut args = vec![
        "verify", "--ci", "--base", base, "--head", head, "--story", "5", "--ready", &snapshot,
    ];
    if json {
        args.push("--json");
    }
    let out = run(repo.aayu().args(&args));
    (out.code, out.stdout, out.stderr)
}

fn evidence(repo: &TestRepo, criterion: u32) -> String {
    std::fs::read_to_string(repo.path(&format!(
        ".aayudha/proof/5/artifacts/evidence/criterion-{criterion}.jsonl"
    )))
    .unwrap_or_default()
}

fn red_on_base(repo: &TestRepo) -> Value {
    let path = repo.path(".aayudha/proof/5/artifacts/reports/red-on-base.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("json")
}

#[test]
fn a_node_test_package_is_evidenced_and_red_on_base_by_full_names() {
    crate::needs!(node);
    let (repo, base, head) = package(PLAIN, EVIDENCE);
    let (code, stdout, stderr) = ci(&repo, &base, &head, true);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let pack: Value = serde_json::from_str(&stdout).expect("pack");
    let tests = common::floor(&pack, "tests");
    assert_eq!(tests["result"], "pass", "{pack:#}\n{stderr}");
    let first: Vec<String> = (1..=3).map(|c| evidence(&repo, c)).collect();
    for (text, full) in first.iter().zip([
        "add > numbers > sums (two of them)",
        "add > keeps zero",
        "count > counts",
    ]) {
        assert_eq!(text.lines().count(), 1, "{text}");
        let event: Value = serde_json::from_str(text.trim()).expect("an event");
        assert_eq!(event["full"], full, "{text}");
        // No machine path and no timing in the evidence, whatever else it holds.
        assert!(
            !text.contains("/tmp/") && !text.contains("duration"),
            "{text}"
        );
    }
    let red = red_on_base(&repo);
    let verdicts: Vec<&str> = red["criteria"]
        .as_array()
        .expect("criteria")
        .iter()
        .map(|c| c["verdict"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(verdicts, ["red", "green", "inconclusive"], "{red:#}");
    let new = red["criteria"][2]["tests"][0]["detail"]
        .as_str()
        .unwrap_or_default();
    // The detail goes on with node's own error, whose words change with its version.
    assert!(
        new.contains("failed to load") && new.contains("count"),
        "{red:#}"
    );
    // Byte-identical on a second run.
    let (code, _, stderr) = ci(&repo, &base, &head, true);
    assert_eq!(code, 0, "{stderr}");
    let second: Vec<String> = (1..=3).map(|c| evidence(&repo, c)).collect();
    assert_eq!(first, second);
}

/// A node:test file that, when it loads, writes a pass for each mapped test into the report aayu's
/// reporter keeps, and ends its process before any test runs: with `add` still broken at the head.
const SELF_REPORTING: &str = r#"import fs from "node:fs";
import { describe, it } from "node:test";
import assert from "node:assert";
import { add } from "../calc.js";

const out = process.env.AAYU_JS_REPORT;
if (out) {
  const file = new URL(import.meta.url).pathname;
  for (const [full, nesting] of [["add > numbers > sums (two of them)", 2], ["add > keeps zero", 1]]) {
    const name = full.split(" > ").pop();
    fs.appendFileSync(out, JSON.stringify({ type: "test:pass", name, full, nesting, file, line: 1,
      skip: null, todo: null, error: null }) + "\n");
  }
  process.exit(0);
}

describe("add", () => {
  describe("numbers", () => {
    it("sums (two of them)", () => {
      assert.equal(add(2, 2), 4);
    });
  });
  it("keeps zero", () => {
    assert.equal(add(0, 0), 0);
  });
});
"#;

/// The package with the forging test file at the head and `config` as the base's settings (which the
/// gate reads).
fn self_reporting(config: &str) -> (TestRepo, String, String) {
    let map = "[[criterion]]\nid = 1\ntests = [\".:test/calc.test.js::add > numbers > sums (two of them)\"]\n\n[[criterion]]\nid = 2\ntests = [\".:test/calc.test.js::add > keeps zero\"]\n\n[[criterion]]\nid = 3\ntests = [\".:test/count.test.js::count > counts\"]\n";
    let repo = TestRepo::new();
    repo.write("package.json", PLAIN)
        .write("calc.js", "export const add = (a, b) => a - b;\n")
        .write(
            ".gitignore",
            "node_modules/\n.aayudha/runs/\n.aayudha/proof/\n",
        )
        .write(".aayudha/config.toml", config);
    let base = repo.commit("calc, with the bug");
    // The bug stays: `add` still subtracts, and only the forged record says otherwise.
    repo.write(
        "calc.js",
        "export const add = (a, b) => a - b;\nexport const count = (text) => text.split(\",\").length;\n",
    )
    .write("test/calc.test.js", SELF_REPORTING)
    .write("test/count.test.js", COUNT_TEST)
    .write(".aayudha/evidence/5.toml", map);
    let head = repo.commit("a test file that reports its own pass");
    (repo, base, head)
}

#[test]
fn a_node_test_file_that_reports_its_own_pass_is_caught_by_the_canary() {
    crate::needs!(node);
    // Without the canary the record is all the gate has: the forgery passes (what this test guards).
    let (repo, base, head) = self_reporting("[verify]\ncanary = false\n");
    let (_, stdout, stderr) = ci(&repo, &base, &head, false);
    assert!(
        !evidence(&repo, 1).is_empty() && !evidence(&repo, 2).is_empty(),
        "the forgery no longer passes without the canary: {stdout}\n{stderr}"
    );
    let (repo, base, head) = self_reporting("");
    let (code, said, stderr) = ci(&repo, &base, &head, false);
    assert_eq!(code, 3, "{said}\n{stderr}");
    assert_eq!(
        said.matches("its record says it passed although its first statement fails: the record is not the test's").count(),
        2,
        "{said}\n{stderr}"
    );
    assert!(evidence(&repo, 1).is_empty(), "{said}");
    assert!(evidence(&repo, 2).is_empty(), "{said}");
    // The honest test of the same run passes its canary.
    assert!(!evidence(&repo, 3).is_empty(), "{said}");
}

#[test]
fn a_skipped_or_unknown_js_test_is_no_evidence() {
    crate::needs!(node);
    let map = "[[criterion]]\nid = 1\ntests = [\".:test/calc.test.js::add > is not done yet\"]\n\n[[criterion]]\nid = 2\ntests = [\".:test/calc.test.js::add > nope\"]\n\n[[criterion]]\nid = 3\ntests = [\".:test/count.test.js::count > counts\"]\n";
    let (repo, base, head) = package(PLAIN, map);
    let (code, stdout, stderr) = ci(&repo, &base, &head, false);
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    // Two lines of the report: the rest quotes node's own load error, whose words change with its version.
    assert!(
        stdout.contains("did not run: the test was skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains("was not found: node --test found no test `add > nope`"),
        "{stdout}"
    );
}

#[test]
fn a_package_with_dependencies_and_no_lock_file_is_blocked() {
    crate::needs!(node);
    let manifest = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"type\": \"module\",\n  \"scripts\": { \"test\": \"node --test\" },\n  \"dependencies\": { \"left-pad\": \"1.3.0\" }\n}\n";
    let (repo, base, head) = package(manifest, EVIDENCE);
    let (code, stdout, stderr) = ci(&repo, &base, &head, false);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    let said = format!("{stdout}\n{stderr}");
    // A line of the report, among the run's progress log.
    assert!(
        said.contains("has dependencies but no lock file: commit a lock file"),
        "{said}"
    );
    // A git dependency (npm would prepare it by running npm in its clone, with the network on) is
    // refused from the lock, read as data, before anything runs.
    repo.write(
        "package-lock.json",
        "{\"name\": \"calc\", \"lockfileVersion\": 3, \"packages\": {\"\": {\"name\": \"calc\"}, \"node_modules/left-pad\": {\"version\": \"1.3.0\", \"resolved\": \"git+ssh://git@example.invalid/x.git#0123456789abcdef0123456789abcdef01234567\"}}}\n",
    )
    .write(".npmrc", "git=./evil.sh\n");
    let head = repo.commit("a git dependency");
    let (code, stdout, stderr) = ci(&repo, &base, &head, false);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    let said = format!("{stdout}\n{stderr}");
    // As above; the source's commit follows.
    assert!(
        said.contains("`node_modules/left-pad` comes from `git+ssh://git@example.invalid/x.git#"),
        "{said}"
    );
}

/// A local dependency's `postinstall` runs when the install's scripts run — offline, as the sandbox uid,
/// in the per-run copy — and the tests then run in that copy, with the dependency there.
#[test]
fn a_postinstall_script_runs_offline_as_the_sandbox_uid() {
    crate::needs!(node);
    let marks = tempfile::tempdir().expect("marks");
    std::fs::set_permissions(marks.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let marker = marks.path().join("ran");
    let manifest = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test\" },\n  \"dependencies\": { \"calc-dep\": \"file:dep\" }\n}\n";
    let lock = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {\n    \"\": {\n      \"name\": \"calc\",\n      \"version\": \"1.0.0\",\n      \"dependencies\": {\n        \"calc-dep\": \"file:dep\"\n      }\n    },\n    \"dep\": {\n      \"name\": \"calc-dep\",\n      \"version\": \"1.0.0\",\n      \"hasInstallScript\": true\n    },\n    \"node_modules/calc-dep\": {\n      \"resolved\": \"dep\",\n      \"link\": true\n    }\n  }\n}\n";
    let mark = format!(
        "const fs = require(\"fs\");\nconst net = require(\"net\");\nconst M = {:?};\ntry {{\n  const s = net.connect({{ host: \"127.0.0.1\", port: 9 }});\n  s.on(\"error\", (e) => fs.appendFileSync(M, process.getuid() + \" \" + e.code + \"\\n\"));\n  s.on(\"connect\", () => {{ fs.appendFileSync(M, process.getuid() + \" open\\n\"); s.destroy(); }});\n}} catch (e) {{\n  fs.appendFileSync(M, process.getuid() + \" \" + e.code + \"\\n\");\n}}\n",
        marker.display().to_string()
    );
    let repo = TestRepo::new();
    repo.write("package.json", manifest)
        .write("package-lock.json", lock)
        .write("dep/package.json", "{ \"name\": \"calc-dep\", \"version\": \"1.0.0\", \"scripts\": { \"postinstall\": \"node mark.js\" } }\n")
        .write("dep/mark.js", mark)
        .write("dep/index.js", "exports.one = () => 1;\n")
        .write("calc.js", "exports.add = (a, b) => a - b;\n")
        .write(".gitignore", "node_modules/\n.aayudha/runs/\n.aayudha/proof/\n")
        .write(".aayudha/config.toml", "");
    let base = repo.commit("calc, with the bug");
    repo.write("calc.js", "exports.add = (a, b) => a + b + require(\"calc-dep\").one() - 1;\n")
        .write(
            "test/calc.test.js",
            "const { it } = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { add } = require(\"../calc\");\n\nit(\"adds\", () => assert.equal(add(2, 2), 4));\n",
        )
        .write(
            ".aayudha/evidence/5.toml",
            "[[criterion]]\nid = 1\ntests = [\".:test/calc.test.js::adds\"]\n",
        );
    let head = repo.commit("fix: add adds");
    let snapshot = ready(&repo, 5, "1. Two numbers add up.", &["type:bug"]);
    let out = run(repo.aayu().args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "5", "--ready", &snapshot,
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // The verdict's line; the rest of the report names npm's install, whose output varies.
    assert!(
        out.stdout.contains("criterion 1: red on base"),
        "{}",
        out.stdout
    );
    let ran = std::fs::read_to_string(&marker).expect("the postinstall ran");
    let me = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .expect("uid");
    for line in ran.lines() {
        let (uid, said) = line.split_once(' ').expect("uid code");
        assert!(
            !matches!(said, "open" | "ECONNREFUSED"),
            "a socket to loopback: {ran}"
        );
        let uid: u32 = uid.parse().expect("uid");
        if common::is_root() {
            assert!((61000..=61063).contains(&uid), "a sandbox uid: {ran}");
        } else {
            assert_eq!(uid, me, "{ran}");
        }
    }
    let status = repo.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ]);
    // Nothing of it in git's list of the checkout's files.
    assert!(
        !status.contains("node_modules"),
        "the checkout is never written: {status}"
    );
}

/// A package from `tests/data/js/<name>` (its manifest and lock), with `files` at the base and `fixed`
/// and `evidence` at the head.
fn from_data(
    name: &str,
    base_files: &[(&str, &str)],
    head_files: &[(&str, &str)],
    evidence: &str,
) -> (TestRepo, String, String) {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/js")
        .join(name);
    let repo = TestRepo::new();
    for file in ["package.json", "package-lock.json"] {
        repo.write(file, std::fs::read(data.join(file)).expect("fixture"));
    }
    repo.write(
        ".gitignore",
        "node_modules/\n.aayudha/runs/\n.aayudha/proof/\n",
    )
    .write(".aayudha/config.toml", "");
    for (path, text) in base_files {
        repo.write(path, text);
    }
    let base = repo.commit("with the bug");
    for (path, text) in head_files {
        repo.write(path, text);
    }
    repo.write(".aayudha/evidence/5.toml", evidence);
    let head = repo.commit("fix");
    (repo, base, head)
}

/// `verify --ci` from the filled npm cache, offline.
fn ci_offline(repo: &TestRepo, base: &str, head: &str) -> (i32, Value, String) {
    let (code, said) = offline(repo, base, head, true);
    let pack = said
        .split_once("\n\u{0}")
        .and_then(|(out, _)| serde_json::from_str(out).ok())
        .unwrap_or(Value::Null);
    (code, pack, said.replace("\n\u{0}", "\n"))
}

/// The gate offline, from the test cache: its exit code, and its stdout and stderr (split by a NUL
/// line).
fn offline(repo: &TestRepo, base: &str, head: &str, json: bool) -> (i32, String) {
    let snapshot = ready(repo, 5, GOAL, &["type:bug"]);
    let mut args = vec![
        "verify", "--ci", "--base", base, "--head", head, "--story", "5", "--ready", &snapshot,
    ];
    if json {
        args.push("--json");
    }
    let out = run(repo
        .aayu()
        .env("npm_config_cache", common::npm_cache())
        .env("npm_config_offline", "true")
        .args(&args));
    (out.code, format!("{}\n\u{0}{}", out.stdout, out.stderr))
}

fn verdicts(repo: &TestRepo) -> Vec<String> {
    red_on_base(repo)["criteria"]
        .as_array()
        .expect("criteria")
        .iter()
        .map(|c| c["verdict"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Red, green and inconclusive, each criterion evidenced by its own test's record only (no timing), the
/// same bytes on a second run; the checkout never written.
fn assert_proved(repo: &TestRepo, base: &str, head: &str, own: [&[&str]; 3]) {
    let (code, pack, said) = ci_offline(repo, base, head);
    assert_eq!(code, 0, "{said}");
    let tests = common::floor(&pack, "tests");
    assert_eq!(tests["result"], "pass", "{said}");
    let first: Vec<String> = (1..=3).map(|c| evidence(repo, c)).collect();
    for (text, titles) in first.iter().zip(own) {
        assert_eq!(text.lines().count(), 1, "{text}");
        let event: Value = serde_json::from_str(text.trim()).expect("an event");
        let mut got: Vec<&str> = event["ancestorTitles"]
            .as_array()
            .expect("ancestorTitles")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        got.push(event["title"].as_str().unwrap_or_default());
        assert_eq!(got, titles, "{text}");
        for timing in ["duration", "startAt", "perfStats"] {
            assert!(event.get(timing).is_none(), "{text}");
        }
    }
    assert_eq!(verdicts(repo), ["red", "green", "inconclusive"], "{said}");
    // Again, as a person reads it: each test's canary ran from the canary's copy, with the install's
    // `node_modules` linked in, and was caught.
    let said = offline(repo, base, head, false).1;
    assert!(
        said.contains("reported by the test's own process") && !said.contains("canary not applied"),
        "{said}"
    );
    let second: Vec<String> = (1..=3).map(|c| evidence(repo, c)).collect();
    assert_eq!(first, second);
    let status = repo.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ]);
    // Nothing of it in git's list of the checkout's files.
    assert!(!status.contains("node_modules"), "{status}");
}

#[test]
fn a_typescript_package_with_vitest_is_evidenced_by_its_json_report() {
    crate::needs!(node);
    let parse = |fixed: bool| {
        format!(
            "export function parse(text: string): string[] {{\n  {}return text.split(\",\");\n}}\n",
            if fixed {
                "if (text.endsWith(\",\")) throw new Error(\"trailing comma\");\n  "
            } else {
                ""
            }
        )
    };
    let tests = "import { describe, it, expect } from \"vitest\";\nimport { parse } from \"./parse\";\n\ndescribe(\"parse\", () => {\n  describe(\"commas (a+b)\", () => {\n    it(\"rejects a trailing comma [x]\", () => {\n      expect(() => parse(\"a,\")).toThrow();\n    });\n  });\n  it(\"splits\", () => {\n    expect(parse(\"a,b\")).toEqual([\"a\", \"b\"]);\n  });\n  it.skip(\"later\", () => {});\n});\n";
    let count_test = "import { describe, it, expect } from \"vitest\";\nimport { count } from \"./count\";\n\ndescribe(\"count\", () => {\n  it(\"counts\", () => {\n    expect(count(\"a,b\")).toBe(2);\n  });\n});\n";
    let evidence = "[[criterion]]\nid = 1\ntests = [\".:src/parse.test.ts::parse > commas (a+b) > rejects a trailing comma [x]\"]\n\n[[criterion]]\nid = 2\ntests = [\".:src/parse.test.ts::parse > splits\"]\n\n[[criterion]]\nid = 3\ntests = [\".:src/count.test.ts::count > counts\"]\n";
    // A config vite bundles and writes beside itself unless the nearest `node_modules` has a
    // `.vite-temp` it may write (the copy is sealed).
    let config = "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { include: [\"src/**/*.test.ts\"] } });\n";
    let (repo, base, head) = from_data(
        "vitest",
        &[
            ("src/parse.ts", &parse(false)),
            ("vitest.config.ts", config),
        ],
        &[
            ("src/parse.ts", &parse(true)),
            ("src/parse.test.ts", tests),
            (
                "src/count.ts",
                "export const count = (text: string) => text.split(\",\").length;\n",
            ),
            ("src/count.test.ts", count_test),
        ],
        evidence,
    );
    assert_proved(
        &repo,
        &base,
        &head,
        [
            &["parse", "commas (a+b)", "rejects a trailing comma [x]"],
            &["parse", "splits"],
            &["count", "counts"],
        ],
    );
}

#[test]
fn a_javascript_package_with_jest_tells_colliding_names_apart_by_their_describes() {
    crate::needs!(node);
    let parse = |fixed: bool| {
        format!(
            "exports.parse = (text) => {{\n  {}return text.split(\",\");\n}};\n",
            if fixed {
                "if (text.endsWith(\",\")) throw new Error(\"trailing comma\");\n  "
            } else {
                ""
            }
        )
    };
    // `parse a > b c` and `parse > a b > c` are both "parse a b c" joined by spaces.
    let tests = "const { parse } = require(\"../parse\");\n\ndescribe(\"parse\", () => {\n  describe(\"a b\", () => {\n    test(\"c\", () => {\n      expect(() => parse(\"a,\")).toThrow();\n    });\n  });\n});\n\ndescribe(\"parse a\", () => {\n  test(\"b c\", () => {\n    expect(parse(\"a,b\")).toEqual([\"a\", \"b\"]);\n  });\n});\n";
    let count_test = "const { count } = require(\"../count\");\n\ndescribe(\"count\", () => {\n  test(\"counts\", () => {\n    expect(count(\"a,b\")).toBe(2);\n  });\n});\n";
    let evidence = "[[criterion]]\nid = 1\ntests = [\".:__tests__/parse.test.js::parse > a b > c\"]\n\n[[criterion]]\nid = 2\ntests = [\".:__tests__/parse.test.js::parse a > b c\"]\n\n[[criterion]]\nid = 3\ntests = [\".:__tests__/count.test.js::count > counts\"]\n";
    let (repo, base, head) = from_data(
        "jest",
        &[("parse.js", &parse(false))],
        &[
            ("parse.js", &parse(true)),
            ("__tests__/parse.test.js", tests),
            (
                "count.js",
                "exports.count = (text) => text.split(\",\").length;\n",
            ),
            ("__tests__/count.test.js", count_test),
        ],
        evidence,
    );
    assert_proved(
        &repo,
        &base,
        &head,
        [
            &["parse", "a b", "c"],
            &["parse a", "b c"],
            &["count", "counts"],
        ],
    );
}

/// The files of `tests/data/js/<name>`, every one, by path relative to it.
fn data_files(name: &str) -> Vec<(String, Vec<u8>)> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/js")
        .join(name);
    let mut files = Vec::new();
    let mut stack = vec![data.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(&data)
                    .expect("inside")
                    .display()
                    .to_string();
                files.push((rel, std::fs::read(&path).expect("read")));
            }
        }
    }
    files.sort();
    files
}

const LIB_TEST: &str = "const { describe, it } = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { add } = require(\"calc-lib\");\n\ndescribe(\"add\", () => {\n  it(\"sums\", () => assert.equal(add(2, 2), 4));\n  it(\"keeps zero\", () => assert.equal(add(0, 0), 0));\n});\n";

/// A pnpm or yarn 1 repository from `tests/data/js/<name>`: the library's bug at the base, the fix and
/// the tests (of the package at `app`) at the head; `verify --ci` with the test COREPACK_HOME, offline.
fn managed(name: &str, lib: &str, app: &str, extra: &[(&str, &str)]) -> (TestRepo, i32, String) {
    let repo = TestRepo::new();
    for (path, bytes) in data_files(name) {
        repo.write(&path, bytes);
    }
    repo.write(
        ".gitignore",
        "node_modules/\n.aayudha/runs/\n.aayudha/proof/\n",
    )
    .write(".aayudha/config.toml", "")
    .write(
        &format!("{lib}/index.js"),
        "exports.add = (a, b) => a - b;\n",
    );
    for (path, text) in extra {
        repo.write(path, text);
    }
    let base = repo.commit("with the bug");
    let package = if app.is_empty() { "." } else { app };
    repo.write(&format!("{lib}/index.js"), "exports.add = (a, b) => a + b;\n")
        .write(
            &if app.is_empty() {
                "test/add.test.js".to_string()
            } else {
                format!("{app}/test/add.test.js")
            },
            LIB_TEST,
        )
        .write(
            ".aayudha/evidence/5.toml",
            format!("[[criterion]]\nid = 1\ntests = [\"{package}:test/add.test.js::add > sums\"]\n\n[[criterion]]\nid = 2\ntests = [\"{package}:test/add.test.js::add > keeps zero\"]\n"),
        );
    let head = repo.commit("fix");
    let (code, said) = ci_with(&repo, &base, &head, &common::corepack_home());
    (repo, code, said)
}

/// `verify --ci` with a bug story, pnpm and yarn from `corepack_home`, npm offline.
fn ci_with(
    repo: &TestRepo,
    base: &str,
    head: &str,
    corepack_home: &std::path::Path,
) -> (i32, String) {
    let snapshot = ready(
        repo,
        5,
        "1. Two numbers add up.\n2. Zero stays zero.",
        &["type:bug"],
    );
    let out = run(repo
        .aayu()
        .env("COREPACK_HOME", corepack_home)
        .env("npm_config_offline", "true")
        .args([
            "verify", "--ci", "--base", base, "--head", head, "--story", "5", "--ready", &snapshot,
        ]));
    (out.code, format!("{}\n{}", out.stdout, out.stderr))
}

#[test]
fn a_pnpm_workspace_member_is_installed_by_the_prepared_pnpm() {
    crate::needs!(node);
    let (repo, code, said) = managed("pnpm", "packages/lib", "packages/app", &[]);
    assert_eq!(code, 0, "{said}");
    // The verdicts' lines, among the report and pnpm's install log.
    assert!(said.contains("criterion 1: red on base"), "{said}");
    assert!(said.contains("criterion 2: green on base"), "{said}");
    // Nothing of it in git's list of the checkout's files.
    let status = repo.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ]);
    assert!(
        !status.contains("node_modules"),
        "the checkout is never written: {status}"
    );
}

#[test]
fn a_yarn_1_package_is_installed_by_the_prepared_yarn_and_no_yarnrc_program_runs() {
    crate::needs!(node);
    let marks = tempfile::tempdir().expect("marks");
    std::fs::set_permissions(marks.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let marker = marks.path().join("ran");
    // `yarn-path` names a program yarn 1 would run instead of itself: the copy has no `.yarnrc`.
    let evil = format!(
        "require(\"fs\").writeFileSync({:?}, \"ran\");\n",
        marker.display().to_string()
    );
    let (_, code, said) = managed(
        "yarn",
        "lib",
        "",
        &[(".yarnrc", "yarn-path \"./evil.js\"\n"), ("evil.js", &evil)],
    );
    assert_eq!(code, 0, "{said}");
    // The verdicts' lines, among the report and yarn's install log.
    assert!(said.contains("criterion 1: red on base"), "{said}");
    assert!(said.contains("criterion 2: green on base"), "{said}");
    assert!(!marker.exists(), "the repository's yarn-path ran");
}

#[test]
fn a_lock_of_a_manager_not_prepared_or_not_read_is_blocked_with_the_fix() {
    crate::needs!(node);
    // No pnpm prepared: the COREPACK_HOME names none.
    let empty = tempfile::tempdir().expect("home");
    let repo = TestRepo::new();
    for (path, bytes) in data_files("pnpm") {
        repo.write(&path, bytes);
    }
    repo.write(".aayudha/config.toml", "")
        .write("packages/lib/index.js", "exports.add = (a, b) => a + b;\n")
        .write("packages/app/test/add.test.js", LIB_TEST)
        .write(
            ".aayudha/evidence/5.toml",
            "[[criterion]]\nid = 1\ntests = [\"packages/app:test/add.test.js::add > sums\"]\n",
        );
    let base = repo.commit("app");
    let (code, said) = ci_with(&repo, &base, &base, empty.path());
    assert_ne!(code, 0, "{said}");
    // Lines of the report, among the run's progress log (so for the two refusals below).
    assert!(
        said.contains(
            "`pnpm-lock.yaml` is pnpm's, and no pnpm 10.24.0 is prepared on this machine"
        ) && said.contains("corepack install -g pnpm@10.24.0"),
        "{said}"
    );
    // A yarn ≥ 2 lock: its yarn is the repository's own program.
    repo.git(&["rm", "-q", "pnpm-lock.yaml"]);
    repo.write("yarn.lock", "__metadata:\n  version: 8\n  cacheKey: 10c0\n");
    let head = repo.commit("yarn 4");
    let (_, said) = ci_with(&repo, &base, &head, &common::corepack_home());
    assert!(said.contains("`yarn.lock` is yarn 2 or newer's"), "{said}");
    // A pnpm lock that names a git dependency is refused as data, before pnpm runs.
    repo.git(&["rm", "-q", "yarn.lock"]);
    repo.write(
        "pnpm-lock.yaml",
        "lockfileVersion: '9.0'\n\npackages:\n\n  x@https://codeload.github.com/a/b/tar.gz/0123:\n    resolution: {tarball: https://codeload.github.com/a/b/tar.gz/0123}\n",
    );
    let head = repo.commit("a git dependency");
    let (_, said) = ci_with(&repo, &base, &head, &common::corepack_home());
    assert!(
        said.contains("`pnpm-lock.yaml` line 6: `resolution: {tarball: https://codeload.github.com/a/b/tar.gz/0123}`: not a tarball with its hash or a folder of the tree; aayu installs only tarballs named with their hash"),
        "{said}"
    );
}

#[test]
fn engines_node_newer_than_the_machines_blocks_like_a_missing_toolchain() {
    crate::needs!(node);
    let manifest = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"type\": \"module\",\n  \"engines\": { \"node\": \">=99\" },\n  \"scripts\": { \"test\": \"node --test\" }\n}\n";
    let (repo, base, head) = package(manifest, EVIDENCE);
    let (code, stdout, stderr) = ci(&repo, &base, &head, false);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    // The line goes on with this machine's Node version.
    assert!(
        stdout.contains(
            "`package.json` asks for Node `>=99` (`engines.node`), and this machine's is `v"
        ),
        "{stdout}\n{stderr}"
    );
}

/// A registry that serves nothing: every request gets npm's `404` (real status, JSON body). Its URL.
fn empty_registry() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let body = "{\"error\":\"Not found\"}";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A lock that pins what the registry does not serve is an install failure with npm's own `404` line
/// (blocked), never a test that was not found; the registry's URL is not in the reason.
#[test]
fn a_lock_pinning_what_the_registry_does_not_serve_blocks_with_npms_404() {
    crate::needs!(node);
    let manifest = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"type\": \"module\",\n  \"scripts\": { \"test\": \"node --test\" },\n  \"dependencies\": { \"aayu-no-such-package\": \"9.9.9\" }\n}\n";
    let (repo, base, _) = package(manifest, EVIDENCE);
    repo.write(
        "package-lock.json",
        "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {\n    \"\": { \"name\": \"calc\", \"version\": \"1.0.0\", \"dependencies\": { \"aayu-no-such-package\": \"9.9.9\" } },\n    \"node_modules/aayu-no-such-package\": {\n      \"version\": \"9.9.9\",\n      \"resolved\": \"https://registry.npmjs.org/aayu-no-such-package/-/aayu-no-such-package-9.9.9.tgz\",\n      \"integrity\": \"sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"\n    }\n  }\n}\n",
    );
    let head2 = repo.commit("pin a version nobody serves");
    let registry = empty_registry();
    let snapshot = ready(&repo, 5, GOAL, &["type:bug"]);
    let out = run(repo
        .aayu()
        .env("npm_config_registry", &registry)
        .env("npm_config_fetch_retries", "0")
        .args([
            "verify", "--ci", "--base", &base, "--head", &head2, "--story", "5", "--ready",
            &snapshot,
        ]));
    let said = format!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.code, 3, "{said}");
    // The line quotes npm's own 404; the report and the log say neither the registry nor "not found".
    assert!(
        said.contains("criterion 1: no evidence — `.:test/calc.test.js::add > numbers > sums (two of them)` cannot run here: installing what the lock file names (npm ci --ignore-scripts): npm said: npm error 404 Not Found - GET <index>aayu-no-such-package/-/aayu-no-such-package-9.9.9.tgz"),
        "{said}"
    );
    assert!(!said.contains(&registry), "{said}");
    assert!(!said.contains("was not found"), "{said}");
}
