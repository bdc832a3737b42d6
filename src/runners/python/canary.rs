//! pytest's canary ([`crate::floors::canary`]): `raise AssertionError("<message>")` first in each
//! test function's own body, placed by [`SCRIPT`] — the file read with `ast` by the machine's
//! `python3 -I` (never the package's virtual environment), as the sandbox uid, offline, within the
//! sandbox's limits; the file is never imported. A test whose function its file does not define
//! (inherited, generated), or one in a file that does not parse, is one the canary cannot apply to. A
//! test marked `xfail` gets it too: the canaries run with `--runxfail`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::PyTest;
use crate::runners::{Canary, Job, Package, Run, TestId, exited, join};

/// The script that places the canary.
pub const SCRIPT: &str = include_str!("aayu_canary.py");

/// How long placing the canary in one file may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What the script answers.
#[derive(Deserialize)]
struct Placed {
    source: Option<String>,
    tests: Vec<Option<String>>,
}

pub(super) fn canary(
    run: &Run,
    package: &Package,
    tests: &[&TestId],
    canary: &Canary,
) -> BTreeMap<TestId, Result<TestId, String>> {
    let mut out = BTreeMap::new();
    // By file: each file read, placed in and written once.
    let mut by_file: BTreeMap<String, Vec<(&TestId, Vec<String>)>> = BTreeMap::new();
    for id in tests {
        match PyTest::parse(&id.rest) {
            Ok(node) => by_file
                .entry(node.file)
                .or_default()
                .push((*id, node.names)),
            Err(e) => {
                out.insert((*id).clone(), Err(e.to_string()));
            }
        }
    }
    for (file, asked) in by_file {
        let answers = match place(run, &join(package.dir, &file), &asked, canary) {
            Ok(answers) => answers,
            Err(why) => vec![Some(why); asked.len()],
        };
        for ((id, _), answer) in asked.into_iter().zip(answers) {
            out.insert(id.clone(), answer.map_or_else(|| Ok(id.clone()), Err));
        }
    }
    out
}

/// The canary placed in one file of the copy (`rel`, from its root) for each test asked: `None`, or why
/// it cannot apply.
fn place(
    run: &Run,
    rel: &str,
    asked: &[(&TestId, Vec<String>)],
    canary: &Canary,
) -> Result<Vec<Option<String>>, String> {
    let python = canary
        .python
        .ok_or("the machine has no Python interpreter the sandbox can run")?;
    let bytes = crate::safe_fs::read(run.root, rel, 16 << 20).map_err(|e| e.to_string())?;
    let source = String::from_utf8(bytes).map_err(|_| format!("`{rel}` is not UTF-8"))?;
    let names: Vec<&Vec<String>> = asked.iter().map(|(_, names)| names).collect();
    let stdin = serde_json::json!({ "source": source, "message": canary.message, "tests": names });
    let job = Job {
        what: format!("placing the canary in `{rel}`"),
        argv: vec![
            python.display().to_string(),
            "-I".to_string(),
            "-c".to_string(),
            SCRIPT.to_string(),
        ],
        cwd: run.root.to_path_buf(),
        env: Vec::new(),
        timeout: TIMEOUT,
        report: None,
        stdin: stdin.to_string().into_bytes(),
    };
    let ran = run.launcher.launch(job).map_err(|e| e.to_string())?;
    let placed: Placed = (ran.code == Some(0))
        .then(|| serde_json::from_slice(&ran.stdout).ok())
        .flatten()
        .ok_or_else(|| exited("the canary's `python3 -I`", &ran, run.root))?;
    if placed.tests.len() != asked.len() {
        return Err("the canary's `python3 -I` answered for other tests".to_string());
    }
    if let Some(changed) = placed.source {
        crate::safe_fs::write(run.root, rel, changed.as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(placed.tests)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script's answer for `source`, run as the canary runs it (by the machine's `python3 -I`).
    fn placed(source: &str, tests: &[&[&str]]) -> Placed {
        use std::io::Write as _;
        let mut child = std::process::Command::new("python3")
            .args(["-I", "-c", SCRIPT])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs (the Python tests need it)");
        let ask =
            serde_json::json!({ "source": source, "message": "aayu canary 7f", "tests": tests });
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(ask.to_string().as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("ran");
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).expect("its answer")
    }

    #[test]
    fn the_canary_goes_first_in_each_tests_own_body_and_nowhere_else() {
        let source = "import pytest\r\n\r\ndef test_a():\r\n    \"\"\"Doc.\"\"\"\r\n    assert 1\r\n\r\ndef test_b(): assert 1\r\n\r\nclass TestK:\r\n    def test_m(self):\r\n        @decorated\r\n        def inner():\r\n            pass\r\n        assert inner\r\n\r\nasync def test_c():\r\n    x = 1\r\n";
        let answer = placed(
            source,
            &[
                &["test_a"],
                &["test_b"],
                &["TestK", "test_m"],
                &["test_c"],
                &["test_a"],
            ],
        );
        assert_eq!(answer.tests, vec![None; 5]);
        let raise = "raise AssertionError('aayu canary 7f')";
        assert_eq!(
            answer.source.expect("changed"),
            source
                .replace(
                    "def test_a():\r\n",
                    &format!("def test_a():\r\n    {raise}\r\n")
                )
                .replace("def test_b(): ", &format!("def test_b(): {raise}; "))
                .replace(
                    "def test_m(self):\r\n",
                    &format!("def test_m(self):\r\n        {raise}\r\n")
                )
                .replace(
                    "def test_c():\r\n",
                    &format!("def test_c():\r\n    {raise}\r\n")
                )
        );
    }

    #[test]
    fn where_the_canary_cannot_apply_it_says_why_and_an_xfail_mark_is_no_such_place() {
        let source = "import pytest\n\npytestmark = [pytest.mark.slow]\n\n@pytest.mark.xfail(strict=True)\ndef test_x():\n    assert 0\n\nclass TestK:\n    pytestmark = pytest.mark.xfail\n    def test_m(self):\n        pass\n";
        let answer = placed(
            source,
            &[
                &["test_x"],
                &["TestK", "test_m"],
                &["test_gone"],
                &["TestZ", "test_m"],
            ],
        );
        // Marked `xfail` or not, a test gets its canary (the canaries run with `--runxfail`).
        assert_eq!(answer.tests[0], None);
        assert_eq!(answer.tests[1], None);
        let changed = answer.source.expect("placed");
        assert_eq!(
            changed
                .matches("raise AssertionError('aayu canary 7f')")
                .count(),
            2,
            "{changed}"
        );
        let said: Vec<String> = answer.tests[2..]
            .iter()
            .map(|t| t.clone().expect("a reason"))
            .collect();
        assert!(said[0].contains("no function `test_gone`"), "{said:?}");
        assert!(said[1].contains("no class `TestZ`"), "{said:?}");
        let broken = placed("def test_a(:\n    pass\n", &[&["test_a"]]);
        assert_eq!(broken.source, None);
        assert!(
            broken.tests[0]
                .as_deref()
                .is_some_and(|w| w.contains("does not parse"))
        );
        // A header continued onto the body's line: the canary would not parse, so it is not placed.
        let continued = placed("def test_a(): \\\n    assert 1\n", &[&["test_a"]]);
        assert_eq!(continued.source, None, "{:?}", continued.tests);
        assert!(continued.tests[0].is_some());
    }
}
