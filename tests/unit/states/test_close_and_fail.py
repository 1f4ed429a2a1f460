"""Close Batch Window and Record Failed Batch as use cases, on in-memory fakes
(tests/support/fakes.py; tests/contract holds the fakes to the DynamoDB layer). The
fallback reply of Record Failed Batch: tests/unit/delivery/test_send_once.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from functions import clock
from functions.batching.rules.debounce import BatchingRules
from functions.contract import BatchSummary, CloseInput, ErrorInfo, FailedInput, FailedRun, MergedOrQueried
from functions.intake.inbound import InboundMessage
from functions.states import record_failed_batch as record_failed_batch_module
from functions.states.close_batch_window import close_batch_window
from functions.states.record_failed_batch import record_failed_batch
from functions.storage.models import BatchWindow
from tests.support.fake_runs import FakeRuns, install_runs
from tests.support.fakes import FakeTwilio, InMemoryStore, install, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2, SM3 = (f"SM{n:032x}" for n in (1, 2, 3))
NOW = datetime(2026, 11, 26, 12, 1, 0, tzinfo=UTC)
RULES = BatchingRules(mode="fixed", window_seconds=10, max_wait_seconds=60)


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    """A conversation whose window w1 is open, counting two messages; the clock at NOW."""
    store = store_with_conversation(monkeypatch, NOW, USER, US)
    store.windows["c1"] = BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at="t",
        opened_ms=1,
        last_message_ms=1,
        message_count=2,
        execution_name="c1-w1",
    )
    return store


@pytest.fixture
def runs(monkeypatch) -> FakeRuns:
    return install_runs(monkeypatch)


def stage(store: InMemoryStore, sid: str, second: int) -> str:
    form = {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": "hi"}
    received_at = f"2026-11-26T12:00:{second:02d}.000000+00:00"
    store.stage("c1", InboundMessage.from_form(form), received_at)
    return received_at


# --- Close Batch Window -------------------------------------------------------------------------


def close(merged: int = 2) -> CloseInput:
    return CloseInput(
        conversation_id="c1",
        window_id="w1",
        execution_name="c1-w1",
        rules=RULES,
        batch=BatchSummary(message_count=merged, message_sids=[SM1, SM2][:merged]),
    )


def test_a_window_with_nothing_left_closes_and_opens_no_other(store, runs):
    output = close_batch_window(close())

    assert (output.leftover_count, output.next_window_id) == (0, None)
    assert store.windows == {} and runs.started == {}


def test_messages_staged_meanwhile_get_the_next_window_timed_from_the_oldest(store, runs):
    oldest, newest = stage(store, SM3, 20), stage(store, SM2, 40)

    output = close_batch_window(close())

    following = store.windows["c1"]
    assert (output.leftover_count, output.next_window_id) == (2, following.window_id)
    assert (following.opened_ms, following.last_message_ms) == (
        clock.iso_to_ms(oldest),
        clock.iso_to_ms(newest),
    )
    assert list(runs.started) == [following.execution_name]


def test_a_counted_message_not_yet_pending_gets_a_next_window_that_counts_none(store, runs):
    output = close_batch_window(close(merged=1))  # the window counted two

    assert output.leftover_count == 0 and output.next_window_id == store.windows["c1"].window_id
    assert store.windows["c1"].message_count == 0 and len(runs.started) == 1


def test_a_retried_close_of_a_closed_window_opens_no_other(store, runs):
    close_batch_window(close(merged=1))
    store.windows.clear()

    assert close_batch_window(close(merged=1)).next_window_id is None
    assert store.windows == {}


# --- Record Failed Batch (not the fallback reply) -------------------------------------------------


def failed(error: str, merged: list[str] | None = None, cause: str = "") -> FailedInput:
    return FailedInput(
        conversation_id="c1",
        window_id="w1",
        execution_name="c1-w1",
        run=FailedRun(
            error=ErrorInfo(error=error, cause=cause),
            batch=MergedOrQueried(message_sids=merged or []),
        ),
    )


def attempts(store: InMemoryStore) -> dict[str, int]:
    return {key.message_sid: key.attempts for key in store.pending("c1")}


@pytest.fixture
def batch(store) -> InMemoryStore:
    """Two messages pending."""
    stage(store, SM1, 1)
    stage(store, SM2, 2)
    return store


def test_a_configuration_error_keeps_the_batch_without_counting_an_attempt(batch):
    output = record_failed_batch(failed("AIModelUnavailable", [SM1, SM2]))

    assert (output.outcome, output.message_count) == ("kept", 2)
    assert attempts(batch) == {SM1: 0, SM2: 0} and batch.turns == {}


def test_a_transient_failure_counts_no_attempt_and_keeps_the_batch_for_the_reconciler(batch):
    output = record_failed_batch(failed("AIRetryableError", [SM1, SM2]))

    assert (output.outcome, output.message_count) == ("kept", 2)
    assert attempts(batch) == {SM1: 0, SM2: 0}
    kept = {k.message_sid: (k.transient_failures, k.last_failed_at) for k in batch.pending("c1")}
    assert kept == {SM1: (1, clock.iso(NOW)), SM2: (1, clock.iso(NOW))}
    assert batch.turns == {}


@pytest.mark.parametrize(
    "error", ["AIRetryableError", "TwilioRetryableError", "States.Timeout", "Sandbox.Timedout",
              "Lambda.TooManyRequestsException", "DynamoDb.ThrottlingException"],
)  # fmt: skip
def test_an_outage_never_sets_the_batch_aside_however_many_runs_fail(batch, configure, error):
    configure(MAX_BATCH_ATTEMPTS="2")

    outcomes = {record_failed_batch(failed(error, [SM1, SM2])).outcome for _ in range(5)}

    assert outcomes == {"kept"} and len(batch.pending("c1")) == 2
    assert {k.transient_failures for k in batch.pending("c1")} == {5}


def test_an_outage_longer_than_max_pending_seconds_sets_the_batch_aside(batch, configure, monkeypatch):
    configure(MAX_PENDING_SECONDS="59")  # SM1 arrived at 12:00:01, a minute before NOW
    dead: list[str] = []
    monkeypatch.setattr(record_failed_batch_module, "count", lambda name, value=1: dead.append(name))

    output = record_failed_batch(failed("AIRetryableError", [SM1, SM2]))

    assert (output.outcome, output.message_count) == ("dead_lettered", 2)
    assert batch.pending("c1") == [] and dead == ["DeadLetteredBatches"]  # the alarm's metric
    turn = batch.turns[("c1", failed("x").user_turn_id)]
    assert (turn.status, turn.error, turn.dead_letter_reason) == (
        "dead_lettered",
        "AIRetryableError",
        "max_pending_seconds",
    )


def test_an_outage_shorter_than_max_pending_seconds_keeps_the_batch(batch, configure):
    configure(MAX_PENDING_SECONDS="60")

    assert record_failed_batch(failed("AIRetryableError", [SM1, SM2])).outcome == "kept"


@pytest.mark.parametrize("error", ["SecretOutsideTenant", "ConversationNotFound", "KeyError", "Unknown"])
def test_a_failure_that_is_no_outage_dead_letters_the_batch_after_max_batch_attempts(batch, configure, error):
    configure(MAX_BATCH_ATTEMPTS="2")
    assert record_failed_batch(failed(error)).outcome == "kept"

    output = record_failed_batch(failed(error))

    assert (output.outcome, output.message_count) == ("dead_lettered", 2)
    assert batch.pending("c1") == [] and batch.staged[("c1", SM1)]["failed_in"] == "w1"
    turn = batch.turns[("c1", failed("x").user_turn_id)]
    assert (turn.status, turn.error, turn.message_sids) == ("dead_lettered", error, [SM1, SM2])
    assert turn.dead_letter_reason == "max_batch_attempts"


def test_a_permanent_error_sets_the_merged_batch_aside_at_once(batch):
    stage(batch, SM3, 3)  # arrived after the merge: stays pending
    cause = json.dumps({"errorMessage": "Twilio HTTP 400 code 21211", "errorType": "TwilioPermanentError"})

    output = record_failed_batch(failed("TwilioPermanentError", [SM1, SM2], cause))

    assert (output.outcome, output.message_count) == ("failed", 2)
    assert attempts(batch) == {SM3: 0}
    turn = batch.turns[("c1", failed("x").user_turn_id)]
    assert (turn.status, turn.cause) == ("failed", "Twilio HTTP 400 code 21211")


def test_a_twilio_permanent_error_sends_no_fallback_reply(batch, monkeypatch):
    twilio = FakeTwilio()
    install(monkeypatch, batch, twilio)

    record_failed_batch(failed("TwilioPermanentError", [SM1, SM2]))

    assert twilio.attempts == 0


def test_a_permanent_error_before_the_merge_counts_an_attempt_instead(batch):
    output = record_failed_batch(failed("AIPermanentError"))

    assert output.outcome == "kept" and attempts(batch) == {SM1: 1, SM2: 1}
