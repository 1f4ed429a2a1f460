"""`adaptive` batching: the learning rule (functions/batching/rules/adaptive.py), and the two
steps that keep and carry what it learned (Acquire Processing Lock, Close Batch Window),
on in-memory fakes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from functions import clock
from functions.batching.rules.adaptive import Learned, after_burst, for_new_window, is_split
from functions.batching.rules.debounce import BatchingRules, due_ms
from functions.contract import AcquireInput, BatchSummary, CloseInput, RunInput
from functions.entry_points.reconciler import open_window_due_now
from functions.intake.inbound import InboundMessage
from functions.states.acquire_processing_lock import acquire_processing_lock
from functions.states.close_batch_window import close_batch_window
from functions.storage.models import BatchWindow
from tests.support.fake_runs import FakeRuns, install_runs
from tests.support.fakes import InMemoryStore, store_with_conversation

ADAPTIVE = BatchingRules(mode="adaptive", quiet_seconds=3, quiet_min_seconds=1, quiet_max_seconds=10)
# The expected values below are worked out by hand from the rule as documented
# (functions/batching/rules/adaptive.py, docs/how-it-works.md): after a burst with g gaps of
# mean m, quiet += (1 - 0.75**g) * (1.75 * m - quiet); a split burst by a gap of G moves it
# half way to max(quiet, 1.25 * G); then bounded, and kept in whole milliseconds.
US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
NOW = datetime(2026, 11, 26, 12, 1, 0, tzinfo=UTC)
NOW_MS = clock.epoch_ms(NOW)


def test_an_adaptive_window_is_due_its_quiet_period_after_the_last_fragment_typing_or_not():
    assert due_ms(ADAPTIVE, opened_ms=0, last_ms=5_000, previous_ms=4_900) == 8_000
    assert due_ms(ADAPTIVE, opened_ms=0, last_ms=5_000, previous_ms=None) == 8_000
    assert due_ms(ADAPTIVE, opened_ms=0, last_ms=59_000, previous_ms=None) == 60_000  # the cap


def test_a_conversation_starts_from_quiet_seconds_and_other_modes_keep_their_rules():
    assert for_new_window(ADAPTIVE, Learned(), 0).quiet_seconds == 3
    assert for_new_window(ADAPTIVE, Learned(quiet_ms=4_500), 0).quiet_seconds == 4.5
    quiet = ADAPTIVE.model_copy(update={"mode": "quiet"})
    assert for_new_window(quiet, Learned(quiet_ms=4_500), 0) is quiet


def test_quick_gaps_shorten_the_quiet_period_and_slow_ones_lengthen_it_within_the_bounds():
    quick = after_burst(ADAPTIVE, opened_ms=0, last_ms=1_500, count=4, closed_ms=5_000)  # 0.5 s gaps
    slow = after_burst(ADAPTIVE, opened_ms=0, last_ms=12_000, count=4, closed_ms=20_000)  # 4 s gaps
    # 3 gaps: weight 1 - 0.75**3 = 0.578125. Quick: 3 + 0.578125 * (0.875 - 3) = 1.7715 s;
    # slow: 3 + 0.578125 * (7 - 3) = 5.3125 s.
    assert quick.quiet_ms == 1_771
    assert slow.quiet_ms == 5_312
    assert (quick.last_burst_ms, quick.burst_closed_ms) == (1_500, 5_000)
    rules = ADAPTIVE
    for _ in range(30):  # a person who keeps typing fast ends at the lower bound, not below
        rules = for_new_window(ADAPTIVE, after_burst(rules, 0, 300, 4, 1_000), 0)
    assert rules.quiet_seconds == 1
    far = after_burst(ADAPTIVE, 0, 60_000, 2, 70_000)
    assert far.quiet_ms == 10_000  # 3 + 0.25 * (105 - 3) = 28.5 s: the upper bound


def test_a_single_fragment_teaches_nothing_about_gaps():
    assert after_burst(ADAPTIVE, opened_ms=0, last_ms=0, count=1, closed_ms=3_000).quiet_ms == 3_000


def test_a_fragment_soon_after_the_answer_is_a_split_burst_and_lengthens_the_next_wait():
    answered = Learned(quiet_ms=2_000, last_burst_ms=10_000, burst_closed_ms=12_000)

    assert is_split(ADAPTIVE, answered, 14_000)
    nudged = for_new_window(ADAPTIVE, answered, 14_000).quiet_seconds  # a 4 s gap split it
    assert nudged == 3.5  # half way from 2 s to 1.25 * 4 s
    assert not is_split(ADAPTIVE, answered, 20_001)  # more than quiet_max after: a new burst
    assert for_new_window(ADAPTIVE, answered, 20_001).quiet_seconds == 2
    assert not is_split(ADAPTIVE, Learned(quiet_ms=2_000), 14_000)  # nothing answered yet


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    return store_with_conversation(monkeypatch, NOW, USER, US)


@pytest.fixture
def runs(monkeypatch) -> FakeRuns:
    return install_runs(monkeypatch)


def open_window(store: InMemoryStore, last_ms: int, count: int) -> None:
    store.windows["c1"] = BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at="t",
        opened_ms=NOW_MS - 5_000,
        last_message_ms=last_ms,
        message_count=count,
        execution_name="c1-w1",
    )


def test_the_lock_of_an_adaptive_burst_keeps_what_it_taught(store):
    open_window(store, last_ms=NOW_MS - 3_500, count=4)  # 0.5 s gaps, quiet for 3.5 s now

    assert acquire_processing_lock(
        AcquireInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", rules=ADAPTIVE)
    ).over

    kept = store.conversations["c1"]
    # 3 gaps of 0.5 s: 3 + (1 - 0.75**3) * (1.75 * 0.5 - 3) = 1.7715 s
    assert (kept.learned_quiet_ms, kept.last_burst_ms, kept.burst_closed_ms) == (
        1_771,
        NOW_MS - 3_500,
        NOW_MS,
    )


def test_the_lock_of_a_fixed_burst_learns_nothing(store):
    open_window(store, last_ms=NOW_MS - 5_000, count=1)
    fixed = BatchingRules(mode="fixed", window_seconds=3)

    assert acquire_processing_lock(
        AcquireInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", rules=fixed)
    ).over

    assert store.conversations["c1"].learned_quiet_ms is None


def test_messages_that_came_while_the_batch_was_answered_open_a_window_that_waits_longer(store, runs):
    open_window(store, last_ms=NOW_MS - 5_000, count=2)
    form = {
        "MessageSid": "SM" + "3" * 32,
        "AccountSid": "AC" + "1" * 32,
        "From": USER,
        "To": US,
        "Body": "hi",
    }
    store.stage("c1", InboundMessage.from_form(form), clock.iso(NOW))  # 3 s after the batch's last
    batch = BatchSummary(
        message_count=2,
        message_sids=["SM" + "1" * 32, "SM" + "2" * 32],
        first_received_ms=NOW_MS - 4_000,
        last_received_ms=NOW_MS - 3_000,
    )

    # What Acquire Processing Lock kept with the lock when the burst (one gap of 1 s) was
    # declared over: 3 + 0.25 * (1.75 - 3) = 2.6875 s.
    learned = {"learned_quiet_ms": 2_687, "last_burst_ms": NOW_MS - 3_000, "burst_closed_ms": NOW_MS - 2_000}
    store.conversations["c1"] = store.conversations["c1"].model_copy(update=learned)

    close_batch_window(
        CloseInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", rules=ADAPTIVE, batch=batch)
    )

    [started] = runs.started.values()
    next_rules = RunInput.model_validate(json.loads(started)).rules
    # A split by a 3 s gap: half way from 2.687 s to 1.25 * 3 = 3.75 s.
    assert next_rules.quiet_seconds == pytest.approx(3.2185)


def test_a_window_the_reconciler_opens_waits_the_learned_quiet_period(monkeypatch, runs):
    store_with_conversation(monkeypatch, NOW, USER, US, batching={"mode": "adaptive"}, learned_quiet_ms=4_500)

    assert open_window_due_now("c1") is not None

    [started] = runs.started.values()
    assert RunInput.model_validate(json.loads(started)).rules.quiet_seconds == 4.5
