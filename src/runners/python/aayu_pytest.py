"""aayu's pytest plugin, loaded by `PYTEST_PLUGINS=aayu_pytest`: one JSON line per test phase (pytest-reportlog's
shape) into the file `$AAYU_PYTEST_EVENTS` names, never stdout. The first line carries the run's nonce
(`$AAYU_PYTEST_NONCE`): a file without it was not written by this plugin in this run."""

import json
import os

import pytest

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
            "nonce": os.environ.get("AAYU_PYTEST_NONCE", ""),
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


def pytest_sessionfinish(session, exitstatus):
    if _out is None:
        return
    _write({"$report_type": "SessionFinish", "exitstatus": int(exitstatus)})
