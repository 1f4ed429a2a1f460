"""Fixtures shared by the emulator and end-to-end tests. The local stack and its harness
live in tests/support/local_stack.py and are imported only when a test uses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from functions.config import forget_settings

if TYPE_CHECKING:
    from infra.local.stack import LocalStack
    from tests.support.local_stack import Harness


# Fixtures that take seconds and are kept for a session or a module, and the xdist group
# of the tests that use them: each group runs on one worker, so each is made once.
SHARED_FIXTURES = {
    "synthesized": "synthesized",  # the CDK synthesis
    "asset": "synthesized",  # the Lambda asset's build
    "outcomes": "corpus",  # every corpus event through the local stack
    "imported": "cold-imports",  # each handler imported in a fresh interpreter
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (--dist loadgroup), the tests that share one of SHARED_FIXTURES
    run on one worker: the slow step behind it then happens once, not once per worker.
    Those groups come first, since xdist hands out work in this order: each takes a worker
    for 25-40 s, and one handed out last would keep the run going while the others idle."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        groups = {group for fixture, group in SHARED_FIXTURES.items() if fixture in fixtures}
        if groups:
            item.add_marker(pytest.mark.xdist_group(min(groups)))
    # Stable: the order within the grouped tests, and within the others, stays.
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


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
        forget_settings()

    yield setter
    monkeypatch.undo()
    forget_settings()


# --- IAM, evaluated ------------------------------------------------------------------------
# Every AWS call a function made on the local stack during this run is judged against the
# synthesized template's policies (infra/iam). A call IAM would deny fails the run. Under
# pytest-xdist each worker runs its own stack and hands its calls (and the template, if it
# synthesized one) to the controller, which merges them and evaluates every worker's calls.
# No test can run after every worker is done, so each verdict is reported as a test of its
# own (END_OF_SESSION_TESTS), passed or failed, through the hook every reporter listens to:
# the terminal counts it, JUnit lists it, --lf remembers it (and, finding no such item to
# collect, runs everything again, which evaluates the calls again).
END_OF_SESSION_TESTS = {
    "iam": "tests/conftest.py::every AWS call the functions made is allowed by their roles",
    "settings": "tests/conftest.py::every setting the functions read reaches them from a deployment",
}


@pytest.hookimpl(tryfirst=True)  # before junitxml and the cache write what they saw
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    own = _own_recording()
    if hasattr(config, "workerinput"):  # an xdist worker
        _hand_over(config.workeroutput, own)  # type: ignore[attr-defined]
        return
    recordings = [*config.stash.get(_WORKER_RECORDINGS, []), *([own] if own else [])]
    if not recordings:
        return
    from infra.iam import CALLS_FILE, TESTED_TEMPLATE_FILE, evaluate_recording, synthesize
    from infra.iam.recordings import merge, write

    merged = merge(recordings)
    write(merged, CALLS_FILE)
    template = config.stash.get(_WORKER_TEMPLATE, None) or synthesize()
    TESTED_TEMPLATE_FILE.write_text(json.dumps(template))
    report = evaluate_recording(template, merged)
    config.stash[_IAM_REPORT] = report
    # Every settings model a function read is one its row declares, so that a deployment gives
    # it its settings (infra/deployment_settings.py settings_not_given).
    from infra.deployment_settings import settings_not_given

    config.stash[_SETTINGS_REPORT] = settings_not_given(merged.settings_read)
    denials = [line for line in report.lines() if not line.startswith("unused")]
    _report_as_a_test(config, END_OF_SESSION_TESTS["iam"], denials)
    _report_as_a_test(config, END_OF_SESSION_TESTS["settings"], config.stash[_SETTINGS_REPORT])
    if not report.ok or config.stash[_SETTINGS_REPORT]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _report_as_a_test(config: pytest.Config, nodeid: str, failures: list[str]) -> None:
    """One end-of-session verdict, as the report of a test: failed with `failures`, or passed."""
    path, _, name = nodeid.partition("::")
    report = pytest.TestReport(
        nodeid=nodeid,
        location=(path, 0, name),
        keywords={name: 1},
        outcome="failed" if failures else "passed",
        longrepr="\n".join(failures) if failures else None,
        when="call",
        sections=[],
        duration=0.0,
        start=0.0,
        stop=0.0,
        user_properties=[],
    )
    config.hook.pytest_runtest_logreport(report=report)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """On the xdist controller: a worker is done; keep what it handed over."""
    from infra.iam.recordings import from_data

    output = getattr(node, "workeroutput", {})
    if _CALLS_KEY in output:
        recording = from_data(json.loads(output[_CALLS_KEY]))
        node.config.stash.setdefault(_WORKER_RECORDINGS, []).append(recording)
    if _TEMPLATE_KEY in output:
        node.config.stash[_WORKER_TEMPLATE] = json.loads(output[_TEMPLATE_KEY])


def _own_recording() -> Any:
    """The calls this process's functions made (None: it ran no local stack)."""
    import sys

    aws_calls = sys.modules.get("infra.local.aws_calls")
    if aws_calls is None or not aws_calls.RECORDER.calls():
        return None
    from infra.iam.recordings import recorded

    return recorded(aws_calls.RECORDER)


def _hand_over(output: dict[str, Any], own: Any) -> None:
    """A worker's calls, and the template if this worker synthesized it (the controller
    need not synthesize it again), as JSON for xdist to carry."""
    import sys

    if own is not None:
        from infra.iam.recordings import as_data

        output[_CALLS_KEY] = json.dumps(as_data(own))
    iam = sys.modules.get("infra.iam")
    if iam is not None and iam.synthesize_stack.cache_info().currsize:
        output[_TEMPLATE_KEY] = json.dumps(iam.synthesize())


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    report = config.stash.get(_IAM_REPORT, None)
    if report is None:
        return
    not_given = config.stash.get(_SETTINGS_REPORT, [])
    terminalreporter.section("Settings models read by the functions, against their rows in the registry")
    for line in not_given:
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        f"{len(not_given)} settings models read that a function's row does not declare "
        "(a deployment would not give it their settings)"
    )
    terminalreporter.section("IAM, evaluated against the synthesized template")
    for line in report.lines():
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        f"{len(report.evaluated)} requests evaluated: {len(report.denied)} denied, "
        f"{len(report.unmapped)} unknown; {len(report.unused)} roles hold grants no recorded call used "
        f"(calls kept in build/iam/aws-calls.json; python -m infra.iam prints this again)."
    )


_IAM_REPORT = pytest.StashKey[Any]()
_SETTINGS_REPORT = pytest.StashKey[list[str]]()
_WORKER_RECORDINGS = pytest.StashKey[list[Any]]()
_WORKER_TEMPLATE = pytest.StashKey[dict[str, Any]]()
_CALLS_KEY, _TEMPLATE_KEY = "burst_reply_aws_calls", "burst_reply_template"
