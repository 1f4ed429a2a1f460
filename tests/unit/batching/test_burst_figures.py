"""How a burst felt to the person, in metrics: why each burst ended (BurstEnd), how many
fragments a reply answered (FragmentsPerReply), how long the last fragment waited for
the reply's first part (ReplyDelay), and bursts begun soon after a reply (SplitBursts).
On in-memory fakes; tests/e2e/batching/test_burst_metrics.py reads them from the local stack."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions import clock
from functions.batching import batch_metrics
from functions.batching.rules.debounce import BatchingRules, burst_end_reason, splits_a_burst
from functions.contract import BatchSummary, RecordInput, ReplySummary, SendInput, SentSummary
from functions.entry_points import webhook
from functions.intake.inbound import Channel, InboundMessage
from functions.states.record_turns_and_release_lock import record_turns_and_release_lock
from functions.states.send_reply import send_reply
from functions.storage.models import BatchWindow, Turn
from tests.support.fake_runs import install_runs
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
T0 = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
MS0 = clock.epoch_ms(T0)
SM1, SM2 = (f"SM{n:032x}" for n in (1, 2))


def window(
    last_s: float = 0, previous_s: float | None = None, count: int = 1, flush: bool = False
) -> BatchWindow:
    return BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at=clock.iso(T0),
        opened_ms=MS0,
        last_message_ms=MS0 + int(last_s * 1000),
        previous_message_ms=None if previous_s is None else MS0 + int(previous_s * 1000),
        message_count=count,
        flush_requested=flush,
        execution_name="c1-w1",
    )


FIXED = BatchingRules(mode="fixed", window_seconds=10, max_wait_seconds=60)
QUIET = BatchingRules(mode="quiet", quiet_seconds=3, typing_quiet_seconds=6, max_wait_seconds=20)


@pytest.mark.parametrize(
    ("rules", "burst", "at_s", "reason"),
    [
        (FIXED, window(), 9.9, None),
        (FIXED, window(), 10, "fixed"),
        (QUIET, window(last_s=5), 7.9, None),
        (QUIET, window(last_s=5), 8, "quiet"),
        (QUIET, window(last_s=18, previous_s=17), 20, "cap"),  # typing: due 24 s, capped at 20
        (FIXED, window(flush=True), 1, "flush"),
        (FIXED.model_copy(update={"max_messages": 3}), window(count=3), 1, "max_messages"),
        (FIXED.model_copy(update={"max_messages": 3}), window(count=2), 1, None),
    ],
)
def test_a_burst_ends_for_one_named_reason(rules, burst, at_s, reason):
    assert burst_end_reason(rules, burst, MS0 + int(at_s * 1000)) == reason


def test_a_burst_begun_within_split_seconds_of_a_reply_was_split():
    assert splits_a_burst(MS0, MS0 + 29_999, 30)
    assert not splits_a_burst(MS0, MS0 + 30_000, 30)
    assert not splits_a_burst(None, MS0, 30)
    assert not splits_a_burst(MS0, MS0 + 1, 0)  # 0: none counted


# --- counted when the batch is recorded ---------------------------------------------------


@pytest.fixture
def counted(monkeypatch) -> list[tuple[str, object]]:
    """What batch_metrics counted: (name, value), BurstEnd as ("BurstEnd", reason)."""
    seen: list[tuple[str, object]] = []
    monkeypatch.setattr(
        batch_metrics, "count_about", lambda _cid, name, value=1, _unit=None: seen.append((name, value))
    )
    monkeypatch.setattr(
        batch_metrics, "count_by", lambda name, _dim, value, _conversation="": seen.append((name, value))
    )
    return seen


REPLY = ReplySummary(answered_by="ai", reply_chars=5, prompt_tokens=1, completion_tokens=1, total_tokens=2)
RECORD = RecordInput(
    conversation_id="c1",
    window_id="w1",
    execution_name="c1-w1",
    lock_acquired_at=clock.iso(T0),
    ended_by="quiet",
    batch=BatchSummary(message_count=3, message_sids=["SM1", "SM2", "SM3"]),
    reply=REPLY,
    sent=SentSummary(message_sids=["SMout"], parts=1),
)


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    """Batch w1 of c1, its last fragment at T0 + 2 s, its reply's first part accepted at
    T0 + 9.5 s; the lock held by its run; the clock at T0 + 10 s."""
    store = store_with_conversation(monkeypatch, datetime(2026, 11, 26, 12, 0, 10, tzinfo=UTC), USER, US)
    store.put_turn(
        Turn(
            conversation_id="c1",
            turn_id=RECORD.user_turn_id,
            role="user",
            status="pending",
            last_received_at="2026-11-26T12:00:02.000000+00:00",
        )
    )
    store.put_turn(
        Turn(
            conversation_id="c1",
            turn_id=RECORD.assistant_turn_id,
            role="assistant",
            body="hello",
            message_sids=["SMout"],
            first_part_at="2026-11-26T12:00:09.500000+00:00",
        )
    )
    store.locks["c1"] = ("c1-w1", 1_900_000_000)
    monkeypatch.setattr("functions.delivery.event_bus.publish_batch_answered", lambda detail: None)
    return store


def test_a_recorded_reply_counts_why_its_burst_ended_its_fragments_and_its_delay(store, counted):
    record_turns_and_release_lock(RECORD)

    assert counted == [("BurstEnd", "quiet"), ("FragmentsPerReply", 3), ("ReplyDelay", 7500)]
    assert store.turns[("c1", RECORD.user_turn_id)].burst_ended_by == "quiet"
    assert store.conversations["c1"].last_reply_at == clock.iso(clock.now())


def test_a_batch_handed_off_counts_its_burst_end_and_no_reply(store, counted):
    handed_off = RECORD.model_copy(
        update={
            "reply": REPLY.model_copy(update={"answered_by": "human"}),
            "sent": SentSummary(message_sids=[], parts=0),
        }
    )

    record_turns_and_release_lock(handed_off)

    assert counted == [("BurstEnd", "quiet")]
    assert store.conversations["c1"].last_reply_at is None  # nothing went to the person


def test_send_reply_records_when_twilio_accepted_the_first_part(store):
    store.turns[("c1", RECORD.assistant_turn_id)] = Turn(
        conversation_id="c1", turn_id=RECORD.assistant_turn_id, role="assistant", body="hello"
    )

    send_reply(SendInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", reply=REPLY))

    assert store.turns[("c1", RECORD.assistant_turn_id)].first_part_at == clock.iso(clock.now())


# --- counted by the webhook ---------------------------------------------------------------


def stage(store: InMemoryStore, sid: str, at: datetime) -> None:
    message = InboundMessage.from_form(
        {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": "hi"}
    )
    webhook._stage(store.conversations["c1"], Channel.WHATSAPP, message, clock.iso(at))


def test_the_fragment_that_begins_a_burst_soon_after_a_reply_counts_one_split_burst(monkeypatch, configure):
    configure(SPLIT_SECONDS="30")
    store = store_with_conversation(monkeypatch, T0, USER, US, last_reply_at=clock.iso(T0))
    install_runs(monkeypatch)
    split: list[str] = []
    monkeypatch.setattr(webhook, "count_about", lambda _cid, name: split.append(name))

    stage(store, SM1, datetime(2026, 11, 26, 12, 0, 5, tzinfo=UTC))  # opens a window 5 s after the reply
    stage(store, SM2, datetime(2026, 11, 26, 12, 0, 6, tzinfo=UTC))  # the same burst

    assert split == ["SplitBursts"]


def test_a_burst_begun_long_after_the_reply_is_not_split(monkeypatch, configure):
    configure(SPLIT_SECONDS="30")
    store = store_with_conversation(monkeypatch, T0, USER, US, last_reply_at=clock.iso(T0))
    install_runs(monkeypatch)
    split: list[str] = []
    monkeypatch.setattr(webhook, "count_about", lambda _cid, name: split.append(name))

    stage(store, SM1, datetime(2026, 11, 26, 12, 0, 31, tzinfo=UTC))

    assert split == []
