//! Python packages as real repositories lay them out (synthetic fixtures, no third-party code): a `src`
//! layout with a `tests` extra, a parametrised test whose id holds `::` and `[` in its brackets, a
//! class-based test; a package with only `setup.py`; an sdist-only dependency. Each goes through
//! `verify --ci` with a bug story, installing from the wheelhouse `scripts/test` fills once
//! (`common::wheels`), with `PIP_NO_INDEX=1`: no test installs from PyPI.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::common::{self, TestRepo, floor, ready, run};

pub(crate) const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"parsekit\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n\n[tool.setuptools.packages.find]\nwhere = [\"src\"]\n";

/// The parser, with the bug (an unknown escape is kept) or the fix (it is refused), and at the head a
/// new function.
pub(crate) fn parser(fixed: bool) -> String {
    let escape = if fixed {
        "        raise ValueError(f\"invalid escape {text!r}\")\n"
    } else {
        "        return text[1:]\n"
    };
    let new = if fixed {
        "\n\ndef count(text):\n    return len(split(text))\n"
    } else {
        ""
    };
    format!(
        "\"\"\"Parse escapes and split on `::`.\"\"\"\n\n\ndef unescape(text):\n    if text.startswith(\"\\\\\") and text[1:2] not in (\"n\", \"t\"):\n{escape}    return text\n\n\ndef split(text):\n    return text.split(\"::\")\n{new}"
    )
}

pub(crate) const TESTS: &str = "import pytest\n\nfrom parsekit import split, unescape\n\n\ndef test_invalid_escape():\n    with pytest.raises(ValueError):\n        unescape(\"\\\\q\")\n\n\n@pytest.mark.parametrize(\"text\", [\"a::b\", \"x[y]\"])\ndef test_split(text):\n    assert \"\".join(split(text)) == text.replace(\"::\", \"\")\n\n\nclass TestSplit:\n    def test_parts(self):\n        assert split(\"a::b\") == [\"a\", \"b\"]\n";

pub(crate) const NEW_TEST: &str =
    "from parsekit import count\n\n\ndef test_count():\n    assert count(\"a::b::c\") == 3\n";

pub(crate) const GOAL: &str =
    "1. An unknown escape is refused.\n2. Splitting keeps the parts.\n3. Parts are counted.";

pub(crate) const EVIDENCE: &str = "[[criterion]]\nid = 1\ntests = [\".:tests/test_parser.py::test_invalid_escape\"]\n\n[[criterion]]\nid = 2\ntests = [\".:tests/test_parser.py::test_split[a::b]\", \".:tests/test_parser.py::TestSplit::test_parts\"]\n\n[[criterion]]\nid = 3\ntests = [\".:tests/test_new.py::test_count\"]\n";

/// The repository's own settings: the machine's wheelhouse, read-only.
pub(crate) fn config() -> String {
    format!(
        "[verify]\npython_wheels = \"{}\"\n",
        common::wheels().display()
    )
}

/// The package at the root: the bug at the base, the fix, the new function and the tests at the head.
pub(crate) fn package(evidence: &str) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    repo.write("pyproject.toml", PYPROJECT)
        .write(
            "src/parsekit/__init__.py",
            "from .parser import count, split, unescape\n".replace("count, ", ""),
        )
        .write("src/parsekit/parser.py", parser(false))
        .write(
            ".gitignore",
            "*.egg-info/\n__pycache__/\n.aayudha/runs/\n.aayudha/proof/\n",
        )
        .write(".aayudha/config.toml", config());
    let base = repo.commit("parsekit, with the bug");
    repo.write("src/parsekit/parser.py", parser(true))
        .write(
            "src/parsekit/__init__.py",
            "from .parser import count, split, unescape\n",
        )
        .write("tests/test_parser.py", TESTS)
        .write("tests/test_new.py", NEW_TEST)
        .write(".aayudha/evidence/5.toml", evidence);
    let head = repo.commit("fix: an unknown escape is refused");
    (repo, base, head)
}

/// `verify --ci` of story 5, a bug, offline from the wheelhouse: the exit code, the pack and stderr.
pub(crate) fn ci(repo: &TestRepo, base: &str, head: &str) -> (i32, Value, String) {
    let snapshot = ready(repo, 5, GOAL, &["type:bug"]);
    let out = run(repo.aayu().env("PIP_NO_INDEX", "1").args([
        "verify", "--ci", "--base", base, "--head", head, "--story", "5", "--ready", &snapshot,
        "--json",
    ]));
    let pack = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out.code, pack, out.stderr)
}

/// [`ci`] as a person reads it: the exit code and what it printed.
pub(crate) fn ci_text(repo: &TestRepo, base: &str, head: &str) -> (i32, String) {
    let snapshot = ready(repo, 5, GOAL, &["type:bug"]);
    let out = run(repo.aayu().env("PIP_NO_INDEX", "1").args([
        "verify", "--ci", "--base", base, "--head", head, "--story", "5", "--ready", &snapshot,
    ]));
    (out.code, format!("{}\n{}", out.stdout, out.stderr))
}

pub(crate) fn report(repo: &TestRepo, name: &str) -> Value {
    let path = repo.path(&format!(".aayudha/proof/5/artifacts/reports/{name}"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("json")
}

pub(crate) fn evidence(repo: &TestRepo, criterion: u32) -> String {
    std::fs::read_to_string(repo.path(&format!(
        ".aayudha/proof/5/artifacts/evidence/criterion-{criterion}.jsonl"
    )))
    .unwrap_or_default()
}

#[test]
fn a_python_package_is_evidenced_and_red_on_base_by_node_ids() {
    crate::needs!(python3);
    let (repo, base, head) = package(EVIDENCE);
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 0, "{pack:#}\n{stderr}");
    assert_eq!(
        floor(&pack, "tests")["result"],
        "pass",
        "{pack:#}\n{stderr}"
    );
    // Each criterion's evidence is only its own tests' events, with no timing.
    let first: Vec<String> = (1..=3).map(|c| evidence(&repo, c)).collect();
    for (criterion, ids) in [
        (0, vec!["tests/test_parser.py::test_invalid_escape"]),
        (
            1,
            vec![
                "tests/test_parser.py::test_split[a::b]",
                "tests/test_parser.py::TestSplit::test_parts",
            ],
        ),
        (2, vec!["tests/test_new.py::test_count"]),
    ] {
        let text = &first[criterion];
        assert!(text.lines().count() >= 3, "{text}");
        for line in text.lines() {
            let event: Value = serde_json::from_str(line).expect("an event");
            // Each event is one of the criterion's tests (a set).
            assert!(
                ids.contains(&event["nodeid"].as_str().unwrap_or_default()),
                "criterion {}: {line}",
                criterion + 1
            );
            for timing in ["duration", "start", "stop", "keywords"] {
                assert!(event.get(timing).is_none(), "{line}");
            }
        }
    }
    let red = report(&repo, "red-on-base.json");
    let verdicts: Vec<&str> = red["criteria"]
        .as_array()
        .expect("criteria")
        .iter()
        .map(|c| c["verdict"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(verdicts, ["red", "green", "inconclusive"], "{red:#}");
    let detail = red["criteria"][0]["tests"][0]["detail"]
        .as_str()
        .unwrap_or_default();
    // The details are pytest's own failure text, whose layout changes with its version.
    assert!(detail.contains("DID NOT RAISE"), "{red:#}");
    let new = red["criteria"][2]["tests"][0]["detail"]
        .as_str()
        .unwrap_or_default();
    assert!(new.contains("count"), "{red:#}");
    for machine in ["/tmp/", "/root/", "/home/"] {
        // No machine path anywhere in the report.
        assert!(!red.to_string().contains(machine), "{red:#}");
    }
    // The checkout is never written: no egg-info, no `__pycache__`, no `.pytest_cache`.
    let status = repo.git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ]);
    for written in ["egg-info", "__pycache__", ".pytest_cache"] {
        // Nothing of these in git's list of the checkout's files.
        assert!(!status.contains(written), "{status}");
    }
    // Byte-identical evidence on a second run.
    let (code, _, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 0, "{stderr}");
    let second: Vec<String> = (1..=3).map(|c| evidence(&repo, c)).collect();
    assert_eq!(first, second);
}

#[test]
fn an_unknown_node_id_is_not_found_and_the_plugin_cannot_be_turned_off() {
    crate::needs!(python3);
    let map = "[[criterion]]\nid = 1\ntests = [\".:tests/test_parser.py::test_nope\"]\n\n[[criterion]]\nid = 2\ntests = [\".:tests/test_parser.py::TestSplit::test_parts\"]\n\n[[criterion]]\nid = 3\ntests = [\".:tests/test_new.py::test_count\"]\n";
    let (repo, base, head) = package(map);
    let (code, said) = ci_text(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    // A line of the report, among the run's progress log and pytest's own output.
    assert!(
        said.contains(
            "`.:tests/test_parser.py::test_nope` was not found: pytest found no such test"
        ),
        "{said}"
    );
    // The other ids of the same package still have their own results.
    assert!(!evidence(&repo, 2).is_empty(), "{said}");

    // A package cannot turn aayu's plugin off: it loads first, after the package's `addopts`; and the
    // `pytest.ini` that tries is a harness change a reviewer sees.
    repo.write("pytest.ini", "[pytest]\naddopts = -p no:aayu_pytest\n");
    let head = repo.commit("a pytest.ini that turns the plugin off");
    let (code, said) = ci_text(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    assert!(!evidence(&repo, 2).is_empty(), "{said}");
    assert!(
        said.contains(
            "pytest.ini:1: harness: pytest.ini added: it decides which file configures pytest"
        ),
        "{said}"
    );
    assert!(!said.contains("did not load"), "{said}");
}

#[test]
fn a_dependency_without_a_wheel_blocks_naming_it() {
    crate::needs!(python3);
    let (repo, base, _) = package(EVIDENCE);
    repo.write(
        "pyproject.toml",
        PYPROJECT.replace(
            "version = \"0.1.0\"\n",
            "version = \"0.1.0\"\ndependencies = [\"sdistonly>=1\"]\n",
        ),
    );
    let head = repo.commit("depend on a package with no wheel");
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_ne!(code, 0, "{pack:#}\n{stderr}");
    let said = format!("{pack}\n{stderr}");
    // The pack and the progress log, which quote pip's own output.
    assert!(
        said.contains("`sdistonly>=1` has no wheel for this interpreter"),
        "{said}"
    );
    // A pip option smuggled in as a dependency is refused before anything downloads, and blocks.
    repo.write(
        "pyproject.toml",
        PYPROJECT.replace(
            "version = \"0.1.0\"\n",
            "version = \"0.1.0\"\ndependencies = [\"evil; python_version > '3' --no-binary=evil\"]\n",
        ),
    );
    let head = repo.commit("smuggle an option");
    let (code, said) = ci_text(&repo, &base, &head);
    assert_ne!(code, 0, "{said}");
    // As above.
    assert!(
        said.contains("carries a pip option, and aayu reads requirements as data"),
        "{said}"
    );
    assert!(
        said.contains("cannot run here") || said.contains("blocked"),
        "{said}"
    );
}

/// A package with only `setup.py`, which records each time it runs whether it had the network and as
/// whom: its backend gives its requirements offline, as the sandbox uid — never with the network on.
#[test]
fn a_setup_py_runs_only_offline_and_as_the_sandbox_uid() {
    crate::needs!(python3);
    let marks = tempfile::tempdir().expect("marks");
    std::fs::set_permissions(marks.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let marker = marks.path().join("ran");
    // It also tries to leave a `pip` module in the folder above its own (the install's work folder, where
    // the download that has the network runs): root's, so refused.
    let setup = format!(
        "import os, socket\nfrom setuptools import setup\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n    net = \"network\"\nexcept OSError:\n    net = \"offline\"\ntry:\n    with open(os.path.join(os.path.dirname(os.getcwd()), \"pip.py\"), \"w\") as f:\n        f.write(\"raise SystemExit(0)\")\n    planted = \"planted\"\nexcept OSError:\n    planted = \"refused\"\nwith open({:?}, \"a\") as f:\n    f.write(f\"{{os.getuid()}} {{net}} {{planted}}\\n\")\nsetup(name=\"legacy\", version=\"1.0\", py_modules=[\"legacy\"], extras_require={{\"test\": [\"pytest\"]}})\n",
        marker.display().to_string()
    );
    let repo = TestRepo::new();
    repo.write("setup.py", setup)
        .write("legacy.py", "def double(x):\n    return x * 3\n")
        .write(
            ".gitignore",
            "*.egg-info/\n.aayudha/runs/\n.aayudha/proof/\n",
        )
        .write(".aayudha/config.toml", config());
    let base = repo.commit("legacy, with the bug");
    repo.write("legacy.py", "def double(x):\n    return x * 2\n")
        .write(
            "test_legacy.py",
            format!(
                "import os, sys\n\nfrom legacy import double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\ndef test_sealed():\n    # As root the venv is sealed before any test runs: root's, read-only to the sandbox uid.\n    if {}:\n        assert os.stat(sys.prefix).st_uid == 0\n        assert not os.access(sys.prefix, os.W_OK)\n        import sysconfig\n        assert sysconfig.get_paths()[\"purelib\"].startswith(sys.prefix)\n        assert not os.access(sysconfig.get_paths()[\"purelib\"], os.W_OK)\n",
                if common::is_root() { "True" } else { "False" }
            ),
        )
        .write(
            ".aayudha/evidence/5.toml",
            "[[criterion]]\nid = 1\ntests = [\".:test_legacy.py::test_double\"]\n\n[[criterion]]\nid = 2\ntests = [\".:test_legacy.py::test_sealed\"]\n",
        );
    let head = repo.commit("fix: double doubles");
    let snapshot = ready(
        &repo,
        5,
        "1. Double doubles.\n2. The venv is sealed.",
        &["type:bug"],
    );
    let out = run(repo.aayu().env("PIP_NO_INDEX", "1").args([
        "verify", "--ci", "--base", &base, "--head", &head, "--story", "5", "--ready", &snapshot,
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let red = report(&repo, "red-on-base.json");
    assert_eq!(red["criteria"][0]["verdict"], "red", "{red:#}");
    let pack: Value = serde_json::from_str(&out.stdout).expect("pack");
    assert_eq!(floor(&pack, "tests")["result"], "pass", "{pack:#}");
    let ran = std::fs::read_to_string(&marker).expect("setup.py ran");
    assert!(!ran.is_empty());
    let me = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .expect("uid");
    for line in ran.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let [uid, net, planted] = words[..] else {
            panic!("uid net planted: {ran}");
        };
        assert_eq!(net, "offline", "{ran}");
        let uid: u32 = uid.parse().expect("uid");
        if common::is_root() {
            assert!((61000..=61063).contains(&uid), "a sandbox uid: {ran}");
            assert_eq!(planted, "refused", "the work folder is root's: {ran}");
        } else {
            assert_eq!(uid, me, "{ran}");
        }
    }
}
