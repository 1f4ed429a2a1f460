"""The reconciler (functions/entry_points/reconciler.py) as a use case, on in-memory
fakes (tests/support/fakes.py; tests/contract holds them to the DynamoDB layer): nothing
accepted stays stranded."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.entry_points.reconciler import reconcile
from functions.intake.inbound import InboundMessage
from functions.storage.models import BatchWindow
from tests.support.fake_runs import FakeRuns, install_runs
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1 = f"SM{1:032x}"
NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
# RECONCILE_AFTER_SECONDS and BATCH_WINDOW_SECONDS at their defaults: 120 s and 10 s.
LONG_AGO, A_MOMENT_AGO = NOW - timedelta(seconds=200), NOW - timedelta(seconds=30)


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    return store_with_conversation(monkeypatch, NOW, USER, US)


@pytest.fixture
def runs(monkeypatch) -> FakeRuns:
    return install_runs(monkeypatch)


def staged_at(store: InMemoryStore, moment: datetime) -> None:
    form = {"MessageSid": SM1, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": "hi"}
    store.stage("c1", InboundMessage.from_form(form), clock.iso(moment))


def window_opened_at(store: InMemoryStore, moment: datetime) -> BatchWindow:
    window = BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at=clock.iso(moment),
        opened_ms=clock.epoch_ms(moment),
        last_message_ms=clock.epoch_ms(moment),
        execution_name="c1-w1",
        execution_input='{"conversation_id": "c1"}',
    )
    store.windows["c1"] = window
    return window


def test_stranded_messages_get_a_window_whose_run_starts_at_once(store, runs):
    staged_at(store, LONG_AGO)

    summary = reconcile()

    assert (summary["windows_opened"], summary["pending_messages"]) == (1, 1)
    assert summary["oldest_pending_age_seconds"] == 200
    window = store.windows["c1"]
    assert list(runs.started) == [window.execution_name]
    assert json.loads(runs.started[window.execution_name])["burst"]["over"]  # its burst is over already


def test_messages_pending_a_moment_are_left_to_their_webhook(store, runs):
    staged_at(store, A_MOMENT_AGO)

    assert reconcile()["windows_opened"] == 0
    assert store.windows == {} and runs.started == {}


def test_a_running_run_is_left_alone_however_long_its_burst(store, runs):
    staged_at(store, LONG_AGO)
    window_opened_at(store, LONG_AGO)
    runs.statuses["c1-w1"] = "RUNNING"

    summary = reconcile()

    assert (summary["windows_closed"], summary["windows_opened"]) == (0, 0)
    assert store.windows["c1"].window_id == "w1" and runs.starts == 0


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED", "TIMED_OUT", None])
def test_a_window_whose_run_ended_is_closed(store, runs, status):
    window_opened_at(store, LONG_AGO)
    if status:
        runs.statuses["c1-w1"] = status

    assert reconcile()["windows_closed"] == 1
    assert store.windows == {}


def test_a_window_whose_run_ended_is_replaced_by_one_for_its_stranded_messages(store, runs):
    staged_at(store, LONG_AGO)
    window_opened_at(store, LONG_AGO)
    runs.statuses["c1-w1"] = "FAILED"

    summary = reconcile()

    assert (summary["windows_closed"], summary["windows_opened"]) == (1, 1)
    assert store.windows["c1"].window_id != "w1"


def test_a_young_window_is_not_looked_at(store, runs):
    window_opened_at(store, A_MOMENT_AGO)
    runs.statuses["c1-w1"] = "FAILED"

    assert reconcile()["windows_closed"] == 0
    assert store.windows["c1"].window_id == "w1"


def failed_transiently(store: InMemoryStore, times: int, seconds_ago: float) -> None:
    store.count_transient_failure("c1", [SM1], clock.iso(NOW - timedelta(seconds=seconds_ago)))
    store.staged[("c1", SM1)]["transient_failures"] = times


@pytest.mark.parametrize(("times", "seconds_ago"), [(1, 59), (2, 119), (3, 239), (9, 1799)])
def test_after_an_outage_the_batch_waits_its_growing_delay(store, runs, times, seconds_ago):
    # TRANSIENT_RETRY_FIRST_SECONDS and TRANSIENT_RETRY_MAX_SECONDS at their defaults: 60 s, 1800 s.
    staged_at(store, LONG_AGO)
    failed_transiently(store, times, seconds_ago)

    assert reconcile()["windows_opened"] == 0
    assert store.windows == {} and runs.started == {}


@pytest.mark.parametrize(("times", "seconds_ago"), [(1, 60), (2, 120), (3, 240), (9, 1800)])
def test_after_its_delay_the_batch_gets_a_window_again(store, runs, times, seconds_ago):
    staged_at(store, LONG_AGO)
    failed_transiently(store, times, seconds_ago)

    assert reconcile()["windows_opened"] == 1
    assert list(runs.started) == [store.windows["c1"].execution_name]
