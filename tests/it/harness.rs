//! The harness floor on Python repositories written for the purpose (synthetic fixtures): the attacks
//! of issue 56 — a hookless conftest that writes the plugin's record and ends the process, a
//! `pytest_runtest_makereport` hookwrapper that turns a failure into a pass, a conftest that forges only
//! at the head of a bug fix — each shown as a harness change that fails the floor from its date; the
//! record's consistency checks (a status that disagrees with pytest's exit, no nonce in the test's
//! environment); red-on-base with the base's conftest; a plugin a new requirement brings, through the
//! installed environment.

use std::io::Write as _;

use serde_json::Value;

use crate::common::{TestRepo, floor};
use crate::python::{EVIDENCE, PYPROJECT, ci, ci_text, config, evidence, parser, report};

/// The gate's settings with the harness floor blocking since a past day.
fn blocking_config() -> String {
    format!("{}harness_blocking_from = \"2026-01-01\"\n", config())
}

/// The parsekit package with the bug at the base; at the head the tests and `head_files`, and the
/// parser fixed or not.
fn package_with(
    fixed: bool,
    head_files: &[(&str, &str)],
    base_files: &[(&str, &str)],
) -> (TestRepo, String, String) {
    let repo = TestRepo::new();
    repo.write("pyproject.toml", PYPROJECT)
        .write(
            "src/parsekit/__init__.py",
            "from .parser import split, unescape\n",
        )
        .write("src/parsekit/parser.py", parser(false))
        .write(
            ".gitignore",
            "*.egg-info/\n__pycache__/\n.aayudha/runs/\n.aayudha/proof/\n",
        )
        .write(".aayudha/config.toml", blocking_config());
    for (path, text) in base_files {
        repo.write(path, text);
    }
    let base = repo.commit("parsekit, with the bug");
    repo.write("src/parsekit/parser.py", parser(fixed))
        .write(
            "src/parsekit/__init__.py",
            "from .parser import count, split, unescape\n",
        )
        .write("tests/test_parser.py", crate::python::TESTS)
        .write("tests/test_new.py", crate::python::NEW_TEST)
        .write(".aayudha/evidence/5.toml", EVIDENCE);
    if !fixed {
        // The function the new test needs, without the fix.
        repo.write(
            "src/parsekit/parser.py",
            format!(
                "{}\n\ndef count(text):\n    return len(split(text))\n",
                parser(false)
            ),
        );
    }
    for (path, text) in head_files {
        repo.write(path, text);
    }
    let head = repo.commit("fix: an unknown escape is refused");
    (repo, base, head)
}

/// The mapped node ids, as a forger lists them.
const FORGED_IDS: &str = "['tests/test_parser.py::test_invalid_escape', 'tests/test_parser.py::test_split[a::b]', 'tests/test_parser.py::TestSplit::test_parts', 'tests/test_new.py::test_count']";

/// A conftest with no hook at all: at import it writes the plugin's record, every mapped test passed,
/// with the nonce it finds (`nonce`: a Python expression), and ends the process before any test runs.
fn forging_conftest(nonce: &str) -> String {
    format!(
        r#"import json, os, sys

path = os.environ.get("AAYU_PYTEST_EVENTS")
nonce = {nonce}
if path:
    lines = [{{"$report_type": "SessionStart", "nonce": nonce, "pytest_version": "9.2.0"}}]
    for node in {FORGED_IDS}:
        for when in ("setup", "call", "teardown"):
            lines.append({{"$report_type": "TestReport", "nodeid": node, "location": [node.split("::")[0], 1, node],
                "keywords": {{}}, "when": when, "outcome": "passed", "longrepr": None, "wasxfail": None,
                "duration": 0.0, "start": 0.0, "stop": 0.0}})
    lines.append({{"$report_type": "SessionFinish", "exitstatus": 0, "nonce": nonce}})
    with open(path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
    os._exit(0)
"#
    )
}

#[test]
fn a_hookless_conftest_that_writes_the_record_is_refused_or_shown_and_blocks() {
    crate::needs!(python3);
    // The attack as it was: the nonce read from the environment, which no longer holds it.
    let naive = forging_conftest("os.environ.get('AAYU_PYTEST_NONCE', '')");
    let (repo, base, head) = package_with(false, &[("tests/conftest.py", &naive)], &[]);
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 3, "{pack:#}\n{stderr}");
    assert_ne!(
        floor(&pack, "tests")["result"],
        "pass",
        "{pack:#}\n{stderr}"
    );
    assert!(evidence(&repo, 1).is_empty(), "{stderr}");
    let harness = floor(&pack, "harness");
    assert_eq!(harness["result"], "fail", "{pack:#}");
    assert_eq!(harness["value"], 1.0, "{pack:#}");

    // A careful forger reads the nonce where the plugin keeps it: the record adds up, and the harness
    // floor shows it.
    let careful = forging_conftest("getattr(sys.modules.get('aayu_pytest'), '_nonce', '')");
    repo.write("tests/conftest.py", &careful);
    let head = repo.commit("a conftest that forges carefully");
    let (code, said) = ci_text(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    // ...but the canary can: each test's first statement fails, and the record still says it passed.
    assert!(
        said.contains("its record says it passed although its first statement fails: the record is not the test's"),
        "{said}"
    );
    assert!(
        said.contains("tests/conftest.py:1: harness: a conftest: code pytest runs before any test of its folder (added)"),
        "{said}"
    );
    assert!(
        said.lines()
            .any(|l| l.starts_with("harness ") && l.contains(" fail ")),
        "{said}"
    );
    let written = report(&repo, "harness.json");
    assert_eq!(written["schema_version"], 1);
    assert_eq!(written["waived_by"], Value::Null);
    assert_eq!(written["changes"][0]["kind"], "conftest", "{written:#}");
    assert_eq!(written["changes"][0]["stack"], "python", "{written:#}");
    valid_harness_report(&written);
}

/// `reports/harness.json` holds `schemas/harness.v1.json`.
pub(crate) fn valid_harness_report(report: &Value) {
    crate::ship::valid_against(include_str!("../../schemas/harness.v1.json"), report);
}

/// A hookwrapper that turns a failure into a pass — only where the head's parser carries its comment,
/// so that on the base (were it there) the test would still fail. It marks each folder it runs in.
fn flipping_conftest(marker: &std::path::Path) -> String {
    format!(
        r#"import os
import pytest

with open({marker:?}, "a") as f:
    f.write(os.getcwd() + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    here = os.path.join(str(item.config.rootpath), "src", "parsekit", "parser.py")
    if report.outcome == "failed" and "aayu-forge" in open(here).read():
        report.outcome = "passed"
        report.longrepr = None
"#
    )
}

#[test]
fn a_conftest_that_forges_only_at_the_head_is_not_run_on_the_base_and_blocks() {
    crate::needs!(python3);
    let marks = tempfile::tempdir().expect("dir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(marks.path(), std::fs::Permissions::from_mode(0o1777)).expect("mode");
    let marker = marks.path().join("marker");
    std::fs::File::create(&marker).expect("marker");
    std::fs::set_permissions(&marker, std::fs::Permissions::from_mode(0o666)).expect("mode");
    // The base has an honest conftest; the head changes it to flip failures, and marks the parser.
    let honest = "import pytest\n\n\n@pytest.fixture\ndef sample():\n    return 'a::b'\n";
    let (repo, base, head) = package_with(
        false,
        &[("tests/conftest.py", &flipping_conftest(&marker))],
        &[("tests/conftest.py", honest)],
    );
    repo.write(
        "src/parsekit/parser.py",
        format!(
            "# aayu-forge\n{}\n\ndef count(text):\n    return len(split(text))\n",
            parser(false)
        ),
    );
    drop(head);
    let head = repo.commit("mark the parser");
    let (code, pack, stderr) = ci(&repo, &base, &head);
    // The head's record says every test passed, but the canary's failure is flipped too: the record is
    // not the tests'...
    assert_eq!(
        floor(&pack, "tests")["result"],
        "fail",
        "{pack:#}\n{stderr}"
    );
    assert!(
        floor(&pack, "tests")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("0 of 3")),
        "{pack:#}"
    );
    assert!(
        evidence(&repo, 1).is_empty() && evidence(&repo, 3).is_empty(),
        "{pack:#}"
    );
    // ...red-on-base ran the base's conftest, where the bug's test fails...
    let on_base = report(&repo, "red-on-base.json");
    assert_eq!(
        on_base["criteria"][0]["verdict"], "red",
        "{on_base:#}\n{stderr}"
    );
    let marks = std::fs::read_to_string(&marker).expect("marker");
    assert!(
        !marks.is_empty(),
        "the head's conftest ran and marked: {stderr}"
    );
    assert!(
        !marks.contains("aayu-red-on-base"),
        "the head's conftest ran on the base: {marks}"
    );
    // ...and the harness floor shows the changed conftest and blocks.
    assert_eq!(code, 3, "{pack:#}\n{stderr}");
    let harness = floor(&pack, "harness");
    assert_eq!(harness["result"], "fail", "{pack:#}");
    let written = report(&repo, "harness.json");
    assert_eq!(
        written["changes"][0]["file"], "tests/conftest.py",
        "{written:#}"
    );
    assert_eq!(written["changes"][0]["line"], 1, "{written:#}");
    assert!(
        written["changes"][0]["what"]
            .as_str()
            .is_some_and(|w| w.ends_with("(changed)")),
        "{written:#}"
    );
}

#[test]
fn a_new_conftest_makes_the_base_inconclusive_and_a_status_that_disagrees_is_refused() {
    crate::needs!(python3);
    // A test that looks for the nonce where the old plugin put it, and on its standard input.
    let env_test = "import os\n\n\ndef test_count():\n    print(sorted(os.environ))\n    assert not [k for k in os.environ if 'NONCE' in k]\n    assert os.read(0, 64) == b''\n";
    let (repo, base, head) = package_with(true, &[("tests/test_new.py", env_test)], &[]);
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 0, "{pack:#}\n{stderr}");
    assert_eq!(floor(&pack, "harness")["result"], "pass", "{pack:#}");
    assert!(!evidence(&repo, 3).is_empty(), "{stderr}");

    // A conftest that ends pytest with another status after its session finished.
    repo.write(
        "tests/conftest.py",
        "import os\n\n\ndef pytest_unconfigure(config):\n    os._exit(1)\n",
    );
    let head = repo.commit("a conftest that changes the exit");
    let (code, said) = ci_text(&repo, &base, &head);
    assert_eq!(code, 3, "{said}");
    assert!(
        said.contains("the events say pytest ended with status 0, but it exited with status 1"),
        "{said}"
    );
    // On the base, the tests the new conftest can touch are not run: it is the head's harness.
    assert!(
        said.contains(
            "needs `tests/conftest.py`, harness the pull request adds: the base runs its own"
        ),
        "{said}"
    );
}

/// A wheel of `pytest-flip` 1.0, a pytest plugin (entry point `flip = pytest_flip`), written here.
fn plugin_wheel(dir: &std::path::Path) {
    let path = dir.join("pytest_flip-1.0-py3-none-any.whl");
    let file = std::fs::File::create(&path).expect("wheel");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default();
    let files = [
        (
            "pytest_flip.py",
            "def pytest_configure(config):\n    pass\n",
        ),
        (
            "pytest_flip-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: pytest-flip\nVersion: 1.0\n",
        ),
        (
            "pytest_flip-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: aayu-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (
            "pytest_flip-1.0.dist-info/entry_points.txt",
            "[pytest11]\nflip = pytest_flip\n",
        ),
    ];
    let mut record = String::new();
    for (name, text) in files {
        zip.start_file(name, options).expect("entry");
        zip.write_all(text.as_bytes()).expect("write");
        record.push_str(&format!("{name},,\n"));
    }
    record.push_str("pytest_flip-1.0.dist-info/RECORD,,\n");
    zip.start_file("pytest_flip-1.0.dist-info/RECORD", options)
        .expect("record");
    zip.write_all(record.as_bytes()).expect("write");
    zip.finish().expect("zip");
}

#[test]
fn a_plugin_a_new_requirement_brings_is_found_in_the_installed_environment() {
    crate::needs!(python3);
    // The machine's wheelhouse and the plugin's wheel, in one folder.
    let wheels = tempfile::tempdir().expect("dir");
    for entry in std::fs::read_dir(crate::common::wheels())
        .expect("wheels")
        .flatten()
    {
        if entry.file_name().to_string_lossy().ends_with(".whl") {
            std::fs::copy(entry.path(), wheels.path().join(entry.file_name())).expect("copy");
        }
    }
    plugin_wheel(wheels.path());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(wheels.path(), std::fs::Permissions::from_mode(0o755)).expect("mode");
    for entry in std::fs::read_dir(wheels.path()).expect("wheels").flatten() {
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o644))
            .expect("mode");
    }
    let settings = format!(
        "[verify]\npython_wheels = \"{}\"\nharness_blocking_from = \"2026-01-01\"\n",
        wheels.path().display()
    );
    let (repo, base, _) = package_with(true, &[], &[(".aayudha/config.toml", &settings)]);
    repo.write(
        "pyproject.toml",
        PYPROJECT.replace(
            "tests = [\"pytest\"]",
            "tests = [\"pytest\", \"pytest-flip\"]",
        ),
    );
    let head = repo.commit("test with pytest-flip");
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 3, "{pack:#}\n{stderr}");
    let written = report(&repo, "harness.json");
    let changes = written["changes"].as_array().expect("changes");
    let plugin = changes
        .iter()
        .find(|c| c["kind"] == "installed-plugin")
        .unwrap_or_else(|| panic!("{written:#}\n{stderr}"));
    assert_eq!(plugin["file"], "pyproject.toml", "{written:#}");
    assert_eq!(plugin["line"], 10, "{written:#}");
    assert!(
        plugin["what"]
            .as_str()
            .is_some_and(|w| w.contains("`pytest-flip`") && w.contains("flip = pytest_flip")),
        "{written:#}"
    );
    assert!(
        written["installed"]
            .as_array()
            .is_some_and(|all| all.iter().any(|i| i["distribution"] == "pytest-flip")),
        "{written:#}"
    );
    valid_harness_report(&written);
}

/// A layout as pallets' libraries have it (studied, not copied): a `src` package, tests as a package of
/// their own (`tests/test_<name>/__init__.py`) with no conftest, a `[dependency-groups] tests` group, and
/// `[tool.pytest.ini_options]` with `testpaths` and `filterwarnings = ["error"]`.
const SIGNKIT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"signkit\"\nversion = \"2.3.0\"\nrequires-python = \">=3.10\"\n\n[dependency-groups]\ntests = [\n    \"pytest\",\n]\n\n[tool.setuptools.packages.find]\nwhere = [\"src\"]\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\nfilterwarnings = [\n    \"error\",\n]\n";

#[test]
fn a_pallets_like_layout_shows_a_changed_filterwarnings_and_nothing_for_an_honest_fix() {
    crate::needs!(python3);
    let repo = TestRepo::new();
    let signer = |fixed: bool| {
        format!(
            "def sign(value, key):\n    if not key:\n        {}\n    return f\"{{value}}.{{len(key)}}\"\n",
            if fixed {
                "raise ValueError(\"an empty key\")"
            } else {
                "pass"
            }
        )
    };
    repo.write("pyproject.toml", SIGNKIT)
        .write("src/signkit/__init__.py", "from .signer import sign\n")
        .write("src/signkit/signer.py", signer(false))
        .write("tests/test_signkit/__init__.py", "")
        .write(
            "tests/test_signkit/test_sign.py",
            "from signkit import sign\n\n\ndef test_sign():\n    assert sign(\"a\", \"kk\") == \"a.2\"\n",
        )
        .write(".gitignore", "*.egg-info/\n__pycache__/\n.aayudha/runs/\n.aayudha/proof/\n")
        .write(".aayudha/config.toml", config());
    let base = repo.commit("signkit, with the bug");
    repo.write("src/signkit/signer.py", signer(true))
        .write(
            "tests/test_signkit/test_empty_key.py",
            "import pytest\n\nfrom signkit import sign\n\n\ndef test_empty_key():\n    with pytest.raises(ValueError):\n        sign(\"a\", \"\")\n",
        )
        .write(
            ".aayudha/evidence/5.toml",
            "[[criterion]]\nid = 1\ntests = [\".:tests/test_signkit/test_empty_key.py::test_empty_key\"]\n\n[[criterion]]\nid = 2\ntests = [\".:tests/test_signkit/test_sign.py::test_sign\"]\n\n[[criterion]]\nid = 3\ntests = [\".:tests/test_signkit/test_sign.py::test_sign\"]\n",
        );
    let honest = repo.commit("fix: an empty key is refused");
    let (code, pack, stderr) = ci(&repo, &base, &honest);
    assert_eq!(code, 0, "{pack:#}\n{stderr}");
    let harness = floor(&pack, "harness");
    assert_eq!(
        (harness["result"].as_str(), harness["value"].as_f64()),
        (Some("pass"), Some(0.0)),
        "{harness:#}"
    );
    assert_eq!(
        report(&repo, "harness.json")["changes"],
        serde_json::json!([])
    );
    let on_base = report(&repo, "red-on-base.json");
    assert_eq!(on_base["criteria"][0]["verdict"], "red", "{on_base:#}");

    // The same fix, with a warning let through: a harness change at its line, advisory (no date set).
    repo.write(
        "pyproject.toml",
        SIGNKIT.replace(
            "    \"error\",\n",
            "    \"error\",\n    \"ignore::DeprecationWarning\",\n",
        ),
    );
    let loosened = repo.commit("let deprecation warnings through");
    let (code, said) = ci_text(&repo, &base, &loosened);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(
            "pyproject.toml:20: harness: pytest's `filterwarnings` in `[tool.pytest.ini_options]`"
        ),
        "{said}"
    );
    assert!(
        said.contains("advisory (no blocking date set): 1 harness change"),
        "{said}"
    );
    // The honest test passes its canary, and its criterion names the harness change it runs under.
    assert!(
        said.contains("harness changed by this pull request: pyproject.toml:20"),
        "{said}"
    );
    assert!(!said.contains("canary not applied"), "{said}");
}

#[test]
fn a_plugin_the_packages_own_install_declares_from_a_data_file_is_shown() {
    crate::needs!(python3);
    // The base's setup.py reads its pytest11 entry points from a data file: at the head only that
    // file changes, which no harness rule names; the installed environment shows what it loads.
    let setup_py = "import pathlib\nfrom setuptools import setup\n\nhere = pathlib.Path(__file__).parent\nnames = [l.strip() for l in (here / \"plugins.txt\").read_text().splitlines() if l.strip()]\nsetup(entry_points={\"pytest11\": names})\n";
    let pyproject = PYPROJECT.replace(
        "version = \"0.1.0\"\n",
        "version = \"0.1.0\"\ndynamic = [\"entry-points\"]\n",
    );
    let (repo, base, head) = package_with(
        true,
        &[("plugins.txt", "own = parsekit.parser\n")],
        &[
            ("pyproject.toml", &pyproject),
            ("setup.py", setup_py),
            ("plugins.txt", "\n"),
        ],
    );
    let (code, pack, stderr) = ci(&repo, &base, &head);
    assert_eq!(code, 3, "{pack:#}\n{stderr}");
    let written = report(&repo, "harness.json");
    let changes = written["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{written:#}");
    assert_eq!(changes[0]["kind"], "installed-plugin", "{written:#}");
    assert_eq!(changes[0]["file"], "pyproject.toml", "{written:#}");
    assert!(
        changes[0]["what"]
            .as_str()
            .is_some_and(|w| w.contains("the package's own install (`parsekit`")
                && w.contains("`own = parsekit.parser`")),
        "{written:#}"
    );
    // The editable install's own start-up line is the backend's: in the record, not a change.
    assert!(
        written["installed"].as_array().is_some_and(|all| all
            .iter()
            .any(|i| i["kind"] == "pytest11" && i["distribution"] == "parsekit")),
        "{written:#}"
    );
    valid_harness_report(&written);
}
