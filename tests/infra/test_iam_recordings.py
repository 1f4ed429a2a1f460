"""A test run in parallel (pytest-xdist) records the functions' AWS calls in each worker;
the controller merges every worker's calls into the one file infra.iam evaluates
(tests/conftest.py, infra/iam/recordings.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from infra.iam.recordings import as_data, from_data, merge
from infra.local.aws_calls import AwsCall, Recording
from tests import conftest

pytestmark = pytest.mark.infra

NAMES = {"STAGED_MESSAGES_TABLE": "StagedMessages", "EVENT_BUS_NAME": "burst-reply"}


def call(function: str, operation: str, table: str = "StagedMessages") -> AwsCall:
    return AwsCall(function, "dynamodb", operation, (("table", table),))


def test_the_merge_keeps_every_workers_calls_once():
    first = Recording(NAMES, [call("Webhook", "PutItem"), call("CloseBatchWindow", "Query")])
    second = Recording(NAMES, [call("CloseBatchWindow", "Query"), call("Reconciler", "Scan")])

    merged = merge([first, second])

    assert merged.environment == NAMES
    assert merged.calls == sorted(
        {*first.calls, *second.calls}, key=lambda c: (c.function, c.service, c.operation, c.names)
    )
    assert len(merged.calls) == 3


def test_recordings_that_name_resources_differently_are_not_merged():
    first = Recording(NAMES, [call("Webhook", "PutItem")])
    second = Recording({**NAMES, "EVENT_BUS_NAME": "another"}, [call("Webhook", "PutEvents")])

    with pytest.raises(ValueError, match="EVENT_BUS_NAME"):
        merge([first, second])


def test_a_recording_survives_its_json_form():
    recording = Recording(NAMES, [call("Webhook", "PutItem"), call("Webhook", "Query", "Turns")])
    assert from_data(as_data(recording)) == recording


def test_the_controller_receives_every_workers_calls():
    """What each worker hands over at the end of its session reaches the controller, which
    evaluates the calls of every worker."""
    config = SimpleNamespace(stash=pytest.Stash())
    workers = [
        Recording(NAMES, [call("Webhook", "PutItem"), call("Webhook", "Query")]),
        Recording(NAMES, [call("Reconciler", "Scan")]),
    ]
    for recording in workers:
        output: dict[str, Any] = {}
        conftest._hand_over(output, recording)
        conftest.pytest_testnodedown(SimpleNamespace(workeroutput=output, config=config), None)

    received = config.stash[conftest._WORKER_RECORDINGS]
    assert received == workers
    assert set(merge(received).calls) == {*workers[0].calls, *workers[1].calls}
