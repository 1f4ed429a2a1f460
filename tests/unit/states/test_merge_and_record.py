"""Merge Staged Messages and Record Turns And Release Lock as use cases, on in-memory
fakes (tests/support/fakes.py; tests/contract holds the fakes to the DynamoDB layer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from functions.contract import BatchSummary, MergeInput, RecordInput, ReplySummary, SentSummary
from functions.delivery import event_bus
from functions.errors import ProcessingLockLost
from functions.intake.inbound import InboundMessage
from functions.states.merge_staged_messages import merge_staged_messages
from functions.states.record_turns_and_release_lock import record_turns_and_release_lock
from functions.storage.models import Turn
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2, SM3 = (f"SM{n:032x}" for n in (1, 2, 3))
NOW = datetime(2026, 11, 26, 12, 0, 30, tzinfo=UTC)
MERGE = MergeInput(conversation_id="c1", window_id="w1", execution_name="c1-w1", staged_items=[])


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    return store_with_conversation(monkeypatch, NOW, USER, US)


@pytest.fixture
def published(monkeypatch) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    monkeypatch.setattr(event_bus, "publish_batch_answered", events.append)
    return events


def stage(store: InMemoryStore, sid: str, second: int, body: str, **form: str) -> dict[str, dict[str, str]]:
    """Stage a message; its key as the Query state hands it over (DynamoDB JSON)."""
    fields = {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": body}
    received_at = f"2026-11-26T12:00:{second:02d}.000000+00:00"
    store.stage("c1", InboundMessage.from_form(fields | form), received_at)
    return {"message_sid": {"S": sid}, "received_at": {"S": received_at}}


def merge(*keys: dict[str, dict[str, str]]) -> BatchSummary:
    return merge_staged_messages(MERGE.model_copy(update={"staged_items": list(keys)}))


def user_turn(store: InMemoryStore) -> Turn:
    return store.turns[("c1", MERGE.user_turn_id)]


# --- Merge Staged Messages ------------------------------------------------------------------


def test_the_fragments_become_one_pending_user_turn_in_arrival_order(store):
    later, earlier = stage(store, SM2, 5, "second"), stage(store, SM1, 1, "first")

    summary = merge(later, earlier)

    first_ms = 1795694401000  # 2026-11-26T12:00:01Z
    assert summary == BatchSummary(
        message_count=2, message_sids=[SM1, SM2], first_received_ms=first_ms, last_received_ms=first_ms + 4000
    )
    turn = user_turn(store)
    assert (turn.body, turn.status, turn.message_sids, turn.window_id) == (
        "first\nsecond",
        "pending",
        [SM1, SM2],
        "w1",
    )
    assert (turn.first_received_at, turn.last_received_at) == (
        "2026-11-26T12:00:01.000000+00:00",
        "2026-11-26T12:00:05.000000+00:00",
    )
    assert turn.arrival_offsets_ms == [0, 4000]  # python -m infra.replay reads them


def test_a_message_an_earlier_batch_answered_meanwhile_is_left_out(store):
    keys = stage(store, SM1, 1, "first"), stage(store, SM2, 2, "second")
    store.mark_answered("c1", [SM1], "w0", 0)

    assert merge(*keys).message_sids == [SM2]
    assert user_turn(store).body == "second"


def test_a_batch_with_nothing_pending_left_merges_nothing_and_writes_no_turn(store):
    key = stage(store, SM1, 1, "first")
    store.set_aside("c1", [SM1], "w0", "AIPermanentError: refused")

    assert merge(key) == BatchSummary(message_count=0, message_sids=[])
    assert store.turns == {}


def test_messages_beyond_the_byte_cap_stay_pending_for_the_next_batch(store, configure):
    configure(MAX_BATCH_BYTES="12000")
    keys = [stage(store, sid, n, "x" * 5000) for n, sid in enumerate((SM1, SM2, SM3))]

    assert merge(*keys).message_sids == [SM1, SM2]
    assert user_turn(store).message_count == 2


def test_a_message_replying_to_our_reply_quotes_its_text(store):
    store.put_turn(
        Turn(
            conversation_id="c1",
            turn_id="w0#2",
            role="assistant",
            body="Open at nine.",
            message_sids=["SMout"],
        )
    )

    merge(stage(store, SM1, 1, "and sundays?", OriginalRepliedMessageSid="SMout"))

    assert "Open at nine." in user_turn(store).body


# --- Record Turns And Release Lock ------------------------------------------------------------

REPLY = ReplySummary(answered_by="ai", reply_chars=13, prompt_tokens=10, completion_tokens=3, total_tokens=13)
RECORD = RecordInput(
    conversation_id="c1",
    window_id="w1",
    execution_name="c1-w1",
    lock_acquired_at="2026-11-26T12:00:28+00:00",
    ended_by="quiet",
    batch=BatchSummary(message_count=2, message_sids=[SM1, SM2]),
    reply=REPLY,
    sent=SentSummary(message_sids=["SMout"], parts=1),
)


@pytest.fixture
def answered(store, published) -> InMemoryStore:
    """A batch of two merged and its reply sent, the lock held by its run."""
    merge(stage(store, SM1, 1, "first"), stage(store, SM2, 2, "second"))
    store.put_turn(
        Turn(conversation_id="c1", turn_id=RECORD.assistant_turn_id, role="assistant", body="Open at nine.")
    )
    store.locks["c1"] = ("c1-w1", 1_900_000_000)
    return store


def test_an_answered_batch_is_recorded_its_messages_tombstoned_and_the_lock_released(answered, published):
    output = record_turns_and_release_lock(RECORD)

    assert (output.processing_time_ms, output.announced) == (2000, True)
    assert (user_turn(answered).status, answered.turns[("c1", RECORD.assistant_turn_id)].status) == (
        "answered",
        "sent",
    )
    assert answered.pending("c1") == [] and answered.staged[("c1", SM1)]["answered_in"] == "w1"
    assert answered.locks == {}


def test_the_announcement_carries_counts_and_no_texts_by_default(answered, published):
    record_turns_and_release_lock(RECORD)

    [detail] = published
    assert (detail["message_sids"], detail["merged_chars"], detail["reply_chars"]) == ([SM1, SM2], 12, 13)
    assert "merged_body" not in detail and "user_address" not in detail


def test_the_announcement_carries_the_texts_when_configured(answered, published, configure):
    configure(EVENT_INCLUDES_TEXTS="true")

    record_turns_and_release_lock(RECORD)

    [detail] = published
    assert (detail["merged_body"], detail["reply_body"]) == ("first\nsecond", "Open at nine.")
    assert detail["user_address"] == USER and detail["truncated"] is False


def test_texts_are_cut_by_their_encoded_size_so_the_event_fits_eventbridges_256_kb(
    store, published, configure
):
    configure(EVENT_INCLUDES_TEXTS="true")
    emoji = "\U0001f600" * 60_000  # 60,000 characters, each 12 bytes of JSON (\ud83d\ude00)
    merge(stage(store, SM1, 1, emoji[:1500]), stage(store, SM2, 2, emoji[:1500]))
    store.put_turn(Turn(conversation_id="c1", turn_id=RECORD.assistant_turn_id, role="assistant", body=emoji))
    store.put_turn(user_turn(store).model_copy(update={"body": emoji}))
    store.locks["c1"] = ("c1-w1", 1_900_000_000)

    record_turns_and_release_lock(RECORD)

    [detail] = published
    assert len(json.dumps(detail).encode()) + len(event_bus.SOURCE + event_bus.BATCH_ANSWERED) <= 256 * 1024
    assert detail["truncated"] is True and emoji.startswith(str(detail["reply_body"]))
    assert len(str(detail["reply_body"])) > 8_000  # cut to what fits, not to nothing


def test_a_failed_announcement_is_reported_not_raised(answered, monkeypatch):
    def unreachable(detail):
        raise ConnectionError("EventBridge unreachable")

    monkeypatch.setattr(event_bus, "publish_batch_answered", unreachable)

    assert not record_turns_and_release_lock(RECORD).announced
    assert user_turn(answered).status == "answered"


def test_a_run_that_lost_the_lock_records_nothing_and_raises(answered):
    answered.locks["c1"] = ("c1-w2", 1_900_000_000)

    with pytest.raises(ProcessingLockLost):
        record_turns_and_release_lock(RECORD)
    assert user_turn(answered).status == "pending" and answered.locks["c1"][0] == "c1-w2"


def test_a_retry_of_a_recorded_batch_is_not_a_lost_lock(answered):
    record_turns_and_release_lock(RECORD)

    assert record_turns_and_release_lock(RECORD).announced


def test_a_batch_handed_off_to_a_person_has_its_user_turn_handed_off(answered):
    handed_off = RECORD.model_copy(update={"reply": REPLY.model_copy(update={"answered_by": "human"})})

    record_turns_and_release_lock(handed_off)

    assert user_turn(answered).status == "handed_off"
    assert answered.turns[("c1", RECORD.assistant_turn_id)].status == ""


def test_a_batch_answered_by_an_earlier_run_only_releases_the_lock(answered, published):
    nobody = RECORD.model_copy(update={"reply": REPLY.model_copy(update={"answered_by": "nobody"})})

    assert not record_turns_and_release_lock(nobody).announced
    assert answered.locks == {} and published == []
    assert [k.message_sid for k in answered.pending("c1")] == [SM1, SM2]
