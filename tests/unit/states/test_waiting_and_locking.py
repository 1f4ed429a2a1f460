"""Wait For The Burst To End and Acquire Processing Lock as use cases, on in-memory fakes
(tests/support/fakes.py; tests/contract holds the fakes to the DynamoDB layer)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.batching import stepfunctions
from functions.batching.rules.debounce import BatchingRules, seconds_until_due
from functions.contract import AcquireInput, ParkInput
from functions.errors import ConversationNotFound, ProcessingLockHeld
from functions.intake.inbound import Channel
from functions.states.acquire_processing_lock import acquire_processing_lock
from functions.states.wait_for_the_burst_to_end import wait_for_the_burst_to_end
from functions.storage.models import BatchWindow, Conversation
from tests.support.fakes import FakeTwilio, InMemoryStore, install

OPENED = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
RULES = BatchingRules(mode="fixed", window_seconds=10, max_wait_seconds=60)


@pytest.fixture
def world(monkeypatch):
    """A conversation whose window opened at OPENED (due 10 s later); the clock at OPENED."""
    store, woken = InMemoryStore(), []
    store.conversations["c1"] = Conversation(
        conversation_id="c1",
        channel=Channel.WHATSAPP,
        user_address="whatsapp:+15550001111",
        our_address="whatsapp:+15550000001",
        created_at="2026-11-26T00:00:00+00:00",
    )
    store.windows["c1"] = BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at=clock.iso(OPENED),
        opened_ms=clock.epoch_ms(OPENED),
        last_message_ms=clock.epoch_ms(OPENED),
        execution_name="c1-w1",
    )
    install(monkeypatch, store, FakeTwilio())
    monkeypatch.setattr(stepfunctions, "wake", lambda token: woken.append(token) or True)
    world = {"store": store, "woken": woken, "now": OPENED}
    monkeypatch.setattr(clock, "now", lambda: world["now"])
    return world


def park(
    window_id: str = "w1", token: str = "token-1", entered: datetime = OPENED, rules: BatchingRules = RULES
) -> ParkInput:
    return ParkInput(
        conversation_id="c1",
        window_id=window_id,
        execution_name=f"c1-{window_id}",
        task_token=token,
        entered_at=clock.iso(entered),
        rules=rules,
    )


def acquire(execution_name: str = "c1-w1", conversation_id: str = "c1") -> AcquireInput:
    return AcquireInput(
        conversation_id=conversation_id, window_id="w1", execution_name=execution_name, rules=RULES
    )


def test_a_run_waiting_for_a_burst_not_yet_due_parks_its_token_and_sleeps(world):
    assert wait_for_the_burst_to_end(park()).parked
    assert world["store"].windows["c1"].task_token == "token-1"
    assert world["woken"] == []


def test_a_run_whose_burst_is_due_by_the_time_it_parks_is_woken_at_once(world):
    world["now"] = datetime(2026, 11, 26, 12, 0, 11, tzinfo=UTC)
    assert wait_for_the_burst_to_end(park()).parked
    assert world["woken"] == ["token-1"]


def test_a_run_whose_window_is_gone_is_woken_and_not_parked(world):
    assert not wait_for_the_burst_to_end(park(window_id="w0")).parked
    assert world["woken"] == ["token-1"]


def test_a_burst_not_yet_due_is_waited_for_again_without_the_lock(world):
    world["now"] = datetime(2026, 11, 26, 12, 0, 4, tzinfo=UTC)
    status = acquire_processing_lock(acquire())
    assert (status.over, status.wait_seconds) == (False, 5)  # 6 s left: the last one held
    assert world["store"].locks == {}


def test_a_due_burst_takes_the_lock(world):
    world["now"] = datetime(2026, 11, 26, 12, 0, 10, tzinfo=UTC)
    status = acquire_processing_lock(acquire())
    assert status.over and status.lock_acquired_at == clock.iso(world["now"])
    assert world["store"].locks["c1"][0] == "c1-w1"
    assert status.ended_by == "fixed"  # carried to Record Turns And Release Lock (BurstEnd)


def test_a_lock_held_by_another_run_is_contention(world):
    world["now"] = datetime(2026, 11, 26, 12, 0, 10, tzinfo=UTC)
    world["store"].locks["c1"] = ("c1-w0", int(world["now"].timestamp()) + 60)
    with pytest.raises(ProcessingLockHeld):
        acquire_processing_lock(acquire())


def test_the_lock_of_a_conversation_that_is_gone_is_not_contention(world):
    with pytest.raises(ConversationNotFound):
        acquire_processing_lock(acquire(conversation_id="gone"))


# --- the due time to the sub-second, on a fake clock ----------------------------------------

QUIET = BatchingRules(mode="quiet", quiet_seconds=3, typing_gap_seconds=0, max_wait_seconds=60)


def _hold_on_the_fake_clock(monkeypatch, world, meanwhile=None):
    """clock.sleep moves the fake clock on (and lets `meanwhile` happen during it)."""

    def sleep(seconds: float) -> None:
        if meanwhile is not None:
            meanwhile()
        world["now"] += timedelta(seconds=seconds)

    monkeypatch.setattr(clock, "sleep", sleep)


def _quiet_acquire() -> AcquireInput:
    return AcquireInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", rules=QUIET)


@pytest.mark.parametrize("left_ms", [1_001, 1_500, 2_100, 2_500, 2_999, 3_000])
@pytest.mark.parametrize("entry_delay_ms", [0, 150])
def test_a_burst_takes_the_lock_within_a_third_of_a_second_of_its_due_time(
    world, monkeypatch, left_ms, entry_delay_ms
):
    """The run's wait (a whole-second timeout, from when the state was entered, set
    `left_ms` before the due time: at a fragment, or when Acquire Processing Lock found
    the end moved) ends before the due time, and Acquire Processing Lock holds the rest:
    the lock is taken at the due time, not up to a second after it."""
    last = OPENED + timedelta(milliseconds=400)
    world["store"].windows["c1"] = (
        world["store"].windows["c1"].model_copy(update={"last_message_ms": clock.epoch_ms(last)})
    )
    due = last + timedelta(seconds=3)
    _hold_on_the_fake_clock(monkeypatch, world)
    world["now"] = due - timedelta(milliseconds=left_ms)
    wait = seconds_until_due(QUIET, world["store"].windows["c1"], clock.epoch_ms(world["now"]))
    world["now"] += timedelta(milliseconds=entry_delay_ms) + timedelta(seconds=wait)  # the timeout
    status = acquire_processing_lock(_quiet_acquire())
    assert status.over
    taken = clock.parse(status.lock_acquired_at or "")
    assert due <= taken <= due + timedelta(milliseconds=300), taken - due


def test_a_fragment_that_comes_while_the_end_is_held_for_moves_it(world, monkeypatch):
    store = world["store"]
    world["now"] = OPENED + timedelta(milliseconds=2_400)  # 0.6 s before the due time

    def another_fragment() -> None:
        arrived = clock.epoch_ms(world["now"] + timedelta(milliseconds=300))
        store.windows["c1"] = store.windows["c1"].model_copy(update={"last_message_ms": arrived})

    _hold_on_the_fake_clock(monkeypatch, world, meanwhile=another_fragment)
    status = acquire_processing_lock(_quiet_acquire())
    assert (status.over, status.wait_seconds) == (False, 2)  # due 2.7 s later: 2 s waited, the rest held
    assert store.locks == {}


def test_a_wait_entered_less_than_a_second_before_the_due_time_wakes_the_run_at_it(world, monkeypatch):
    """A whole-second timeout would end it up to a second late: the parking function holds
    on and wakes the run at the due time."""
    woken_at = []
    monkeypatch.setattr(stepfunctions, "wake", lambda token: woken_at.append(world["now"]) or True)
    _hold_on_the_fake_clock(monkeypatch, world)
    world["now"] = OPENED + timedelta(milliseconds=2_350)
    entered = world["now"]
    assert wait_for_the_burst_to_end(park(entered=entered, rules=QUIET)).parked
    assert woken_at == [OPENED + timedelta(seconds=3)]
