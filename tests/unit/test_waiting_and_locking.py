"""Wait For The Burst To End and Acquire Processing Lock as use cases, on in-memory fakes
(tests/support/fakes.py; tests/contract holds the fakes to the DynamoDB layer)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.contract import AcquireInput, ParkInput
from functions.dal.models import BatchWindow, Conversation
from functions.errors import ConversationNotFound, ProcessingLockHeld
from functions.inbound import Channel
from functions.integrations import stepfunctions
from functions.logic.rules import clock
from functions.logic.rules.debounce import BatchingRules
from functions.logic.states.acquire_processing_lock import acquire_processing_lock
from functions.logic.states.wait_for_the_burst_to_end import wait_for_the_burst_to_end
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


def park(window_id: str = "w1", token: str = "token-1", entered: datetime = OPENED) -> ParkInput:
    return ParkInput(
        conversation_id="c1",
        window_id=window_id,
        execution_name=f"c1-{window_id}",
        task_token=token,
        entered_at=clock.iso(entered),
        rules=RULES,
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
    assert (status.over, status.wait_seconds) == (False, 6)
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
