"""The verdicts given at the end of a test session (IAM on every recorded AWS call, the
settings the functions read: tests/conftest.py) are reported as tests of their own, so that
every reporter sees a failed one: the terminal counts it, JUnit lists it with its lines, and
the cache remembers it for --lf. Checked on a small session of its own, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DENIAL = "DENIED  CloseBatchWindow: dynamodb:Query on arn:aws:dynamodb:::table/Staged/index/pending"

CONFTEST = f"""
import pytest

from tests.conftest import END_OF_SESSION_TESTS, _report_as_a_test


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    _report_as_a_test(session.config, END_OF_SESSION_TESTS["iam"], [{DENIAL!r}])
    _report_as_a_test(session.config, END_OF_SESSION_TESTS["settings"], [])
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
"""


def test_a_failed_end_of_session_verdict_is_a_failed_test_for_every_reporter(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    junit = tmp_path / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", f"--junitxml={junit}", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )

    assert result.returncode == 1
    assert "1 failed, 2 passed" in result.stdout
    assert DENIAL in result.stdout
    xml = junit.read_text()
    assert 'failures="1"' in xml and 'tests="3"' in xml and "index/pending" in xml
    lastfailed = json.loads((tmp_path / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text())
    assert list(lastfailed) == [
        "tests/conftest.py::every AWS call the functions made is allowed by their roles"
    ]
