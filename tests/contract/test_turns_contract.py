"""The Turns table's reads and the answered batch's transaction, held to one contract for
the in-memory fake and the DynamoDB layer (the `store` fixture runs each test on both)."""

from __future__ import annotations

from functions.answer import turns
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations

NOW, LEASE = 1_800_000_000, 60
CONVERSATION = Conversation(
    conversation_id="c1",
    channel="whatsapp",
    user_address="whatsapp:+15550001111",
    our_address="whatsapp:+15550000001",
    created_at="2026-11-26T00:00:00+00:00",
)
TOKENS = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def turn(turn_id: str, role: str = "user", status: str = "") -> Turn:
    return Turn(conversation_id="c1", turn_id=turn_id, role=role, status=status)


def record(owner: str, assistant_turn_id: str | None = "w1#a", limited: bool = False) -> bool:
    return turns.record_answered_batch(
        conversation_id="c1",
        owner=owner,
        user_turn_id="w1#u",
        assistant_turn_id=assistant_turn_id,
        answered_at="2026-11-26T12:00:00+00:00",
        processing_time_ms=1500,
        tokens=TOKENS,
        last_message_sid="SMout",
        limited=limited,
    )


def test_recent_turns_come_newest_first_and_the_last_reply_is_the_newest_sent(store):
    for t in (
        turn("w1#a", "assistant", "sent"),
        turn("w1#u"),
        turn("w2#a", "assistant", "failed"),
        turn("w2#u"),
    ):
        turns.put(t)

    assert [t.turn_id for t in turns.recent("c1", 3)] == ["w2#u", "w2#a", "w1#u"]
    assert turns.last_reply("c1").turn_id == "w1#a"
    assert turns.last_reply("c2") is None


def test_an_answered_batch_is_recorded_and_the_lock_released_by_its_holder(store):
    store.add_conversation(CONVERSATION)
    turns.put(turn("w1#u", status="pending"))
    turns.put(turn("w1#a", "assistant", "sending"))
    conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t")

    assert record("run-a")

    assert (turns.get("c1", "w1#u").status, turns.get("c1", "w1#a").status) == ("answered", "sent")
    assert turns.get("c1", "w1#a").processing_time_ms == 1500
    assert conversations.acquire_lock("c1", "run-b", NOW + 1, LEASE, "t")  # released


def test_a_batch_handed_off_or_limited_is_recorded_so(store):
    store.add_conversation(CONVERSATION)
    turns.put(turn("w1#u", status="pending"))
    turns.put(turn("w1#a", "assistant"))

    conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t")
    assert record("run-a", limited=True)
    assert (turns.get("c1", "w1#u").status, turns.get("c1", "w1#a").status) == ("limited", "limited")

    conversations.acquire_lock("c1", "run-a", NOW, LEASE, "t")
    assert record("run-a", assistant_turn_id=None)
    assert turns.get("c1", "w1#u").status == "handed_off"


def test_an_answered_batch_is_not_recorded_without_the_lock(store):
    store.add_conversation(CONVERSATION)
    turns.put(turn("w1#u", status="pending"))
    turns.put(turn("w1#a", "assistant", "sending"))
    conversations.acquire_lock("c1", "run-b", NOW, LEASE, "t")

    assert not record("run-a")

    assert (turns.get("c1", "w1#u").status, turns.get("c1", "w1#a").status) == ("pending", "sending")
    assert not conversations.acquire_lock("c1", "run-c", NOW + 1, LEASE, "t")  # still run-b's


def test_the_typing_indicator_and_its_refresh_are_each_claimed_once_and_only_on_a_turn(store):
    turns.put(turn("w1#u"))

    assert turns.claim_typing("c1", "w1#u", "typing_shown_at", "t1")
    assert not turns.claim_typing("c1", "w1#u", "typing_shown_at", "t2")
    assert turns.claim_typing("c1", "w1#u", "typing_refreshed_at", "t3")
    assert not turns.claim_typing("c1", "w1#u", "typing_refreshed_at", "t4")
    assert not turns.claim_typing("c1", "w9#u", "typing_shown_at", "t5")  # no such turn: nothing made
    claimed = turns.get("c1", "w1#u")
    assert (claimed.typing_shown_at, claimed.typing_refreshed_at) == ("t1", "t3")
    assert turns.get("c1", "w9#u") is None
