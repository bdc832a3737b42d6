"""aayu's pytest plugin, loaded by `-p aayu_pytest` on pytest's command line: one JSON line per test phase
(pytest-reportlog's shape) into the file `$AAYU_PYTEST_EVENTS` names, never stdout.

The run's nonce comes on standard input, which this module reads to its end and replaces with /dev/null
when it is imported — before pytest imports any conftest, entry-point plugin or test — so it is never in
the environment. The first and the last line carry it: a file without it was not written in this run. It
proves the file is this run's, not who wrote it: code in this process can still read it here."""

import json
import os

import pytest


def _read_nonce():
    data = b""
    try:
        while len(data) <= 256:
            chunk = os.read(0, 256)
            if not chunk:
                break
            data += chunk
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        pass
    return data.decode("ascii", "replace").strip()


_nonce = _read_nonce()
_out = None


def _write(event):
    _out.write(json.dumps(event, ensure_ascii=False) + "\n")
    _out.flush()


def _text(longrepr):
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def pytest_configure(config):
    global _out
    path = os.environ.get("AAYU_PYTEST_EVENTS")
    if not path or _out is not None or hasattr(config, "workerinput"):
        return
    _out = open(path, "a", encoding="utf-8")
    _write(
        {
            "$report_type": "SessionStart",
            "nonce": _nonce,
            "pytest_version": pytest.__version__,
        }
    )


def pytest_runtest_logreport(report):
    if _out is None:
        return
    _write(
        {
            "$report_type": "TestReport",
            "nodeid": report.nodeid,
            "location": list(report.location),
            "keywords": {k: 1 for k in report.keywords},
            "when": report.when,
            "outcome": report.outcome,
            "longrepr": _text(report.longrepr),
            "wasxfail": getattr(report, "wasxfail", None),
            "duration": report.duration,
            "start": getattr(report, "start", None),
            "stop": getattr(report, "stop", None),
        }
    )


def pytest_collectreport(report):
    if _out is None or not report.failed:
        return
    _write(
        {
            "$report_type": "CollectReport",
            "nodeid": report.nodeid,
            "outcome": report.outcome,
            "longrepr": _text(report.longrepr),
        }
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if _out is None:
        return
    _write(
        {
            "$report_type": "SessionFinish",
            # What pytest exits with: another plugin may have changed it before this last hook.
            "exitstatus": int(session.exitstatus),
            "nonce": _nonce,
        }
    )
