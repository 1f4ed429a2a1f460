"""Fixtures shared by the emulator and end-to-end tests. The local stack and its harness
live in tests/support/local_stack.py and are imported only when a test uses them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from functions.config import get_settings

if TYPE_CHECKING:
    from infra.local.stack import LocalStack
    from tests.support.local_stack import Harness


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalStack]:
    from tests.support.local_stack import local_stack

    with local_stack() as running:
        yield running


@pytest.fixture
def harness(stack: LocalStack) -> Iterator[Harness]:
    from tests.support.local_stack import Harness

    stack.openai.reset()
    stack.twilio.reset()
    yield Harness(stack)
    stack.openai.reset()
    stack.twilio.reset()


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Change the functions' settings for one test (the handlers run in this process)."""

    def setter(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield setter
    monkeypatch.undo()
    get_settings.cache_clear()


# --- IAM, evaluated ------------------------------------------------------------------------
# Every AWS call a function made on the local stack during this run is judged against the
# synthesized template's policies (infra/iam). A call IAM would deny fails the run.


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import sys

    recorder = sys.modules.get("infra.local.aws_calls")
    if recorder is None or not recorder.RECORDER.calls() or hasattr(session.config, "workerinput"):
        return
    from infra.iam import CALLS_FILE, evaluate_recording, synthesize
    from infra.local.aws_calls import load

    recorder.RECORDER.dump(CALLS_FILE)
    report = evaluate_recording(synthesize(), load(CALLS_FILE))
    session.config.stash[_IAM_REPORT] = report
    if not report.ok:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    report = config.stash.get(_IAM_REPORT, None)
    if report is None:
        return
    terminalreporter.section("IAM, evaluated against the synthesized template")
    for line in report.lines():
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        f"{len(report.evaluated)} requests evaluated: {len(report.denied)} denied, "
        f"{len(report.unmapped)} unknown; {len(report.unused)} roles hold grants no recorded call used "
        f"(calls kept in build/iam/aws-calls.json; python -m infra.iam prints this again)."
    )


_IAM_REPORT = pytest.StashKey[Any]()
