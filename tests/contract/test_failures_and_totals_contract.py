"""What a failed batch and an undelivered reply leave on the record, and the conversation's
totals that each answered batch adds to, held to one contract for the in-memory fake and
the DynamoDB layer (the `store` fixture runs each test on both). The expected values are
the tests' own arithmetic on what each call was given."""

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
TOTALS = ("prompt_tokens", "completion_tokens", "total_tokens", "turn_count")


def test_a_failed_batch_is_recorded_on_its_user_turn_made_if_the_run_failed_before_merging(store):
    failed = {
        "role": "user",
        "status": "dead_lettered",
        "error": "AIPermanentError",
        "message_sids": ["SM1", "SM2"],
        "message_count": 2,
        "window_id": "w1",
    }

    turns.mark_failed("c1", "w1#u", failed)  # no user turn yet
    turns.mark_failed("c1", "w1#u", {"fallback_since": "t1"})  # a later field keeps the others

    kept = turns.require("c1", "w1#u")
    assert (kept.role, kept.status, kept.error, kept.window_id) == (
        "user",
        "dead_lettered",
        "AIPermanentError",
        "w1",
    )
    assert (kept.message_sids, kept.message_count, kept.fallback_since) == (["SM1", "SM2"], 2, "t1")


def test_a_failed_batch_keeps_what_its_merged_user_turn_held(store):
    turns.put(Turn(conversation_id="c1", turn_id="w1#u", role="user", body="hello", status="pending"))

    turns.mark_failed("c1", "w1#u", {"status": "failed", "error": "TwilioPermanentError"})

    kept = turns.require("c1", "w1#u")
    assert (kept.body, kept.status, kept.error) == ("hello", "failed", "TwilioPermanentError")


def test_each_delivery_failure_is_counted_on_the_conversation_with_the_last_code_and_time(store):
    store.add_conversation(CONVERSATION)

    conversations.record_delivery_failure("c1", 63016, "t1")
    conversations.record_delivery_failure("c1", None, "t2")  # no code: kept as 0

    kept = store.conversation_attributes("c1")
    assert (kept["delivery_failures"], kept["last_delivery_error"], kept["last_delivery_error_at"]) == (
        2,
        0,
        "t2",
    )
    conversations.record_delivery_failure("c1", 30007, "t3")
    kept = store.conversation_attributes("c1")
    assert (kept["delivery_failures"], kept["last_delivery_error"], kept["last_delivery_error_at"]) == (
        3,
        30007,
        "t3",
    )
    assert conversations.require("c1").user_address == CONVERSATION.user_address  # the rest kept


def _record(
    at: str, tokens: tuple[int, int, int], assistant: str | None, sid: str | None, limited=False
) -> bool:
    user_turn = f"{at}#u"
    turns.put(Turn(conversation_id="c1", turn_id=user_turn, role="user", status="pending"))
    if assistant:
        turns.put(Turn(conversation_id="c1", turn_id=assistant, role="assistant", status="sending"))
    assert conversations.acquire_lock("c1", "run", NOW, LEASE, "t")
    return turns.record_answered_batch(
        conversation_id="c1",
        owner="run",
        user_turn_id=user_turn,
        assistant_turn_id=assistant,
        answered_at=at,
        processing_time_ms=100,
        tokens=dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), tokens, strict=True)),
        last_message_sid=sid,
        limited=limited,
    )


def test_each_answered_batch_adds_to_the_conversations_totals_and_sets_its_status(store):
    store.add_conversation(CONVERSATION)

    assert _record("t1", (10, 5, 15), "t1#a", "SMa")
    kept = store.conversation_attributes("c1")
    assert [kept[k] for k in TOTALS] == [10, 5, 15, 2]  # two turns: the user's and the reply
    assert (kept["conversation_status"], kept["last_assistant_message_sid"]) == ("reply_sent", "SMa")
    assert (kept["last_reply_at"], kept["updated_at"]) == ("t1", "t1")

    assert _record("t2", (7, 3, 10), "t2#a", "SMb")
    kept = store.conversation_attributes("c1")
    assert [kept[k] for k in TOTALS] == [17, 8, 25, 4]
    assert (kept["last_assistant_message_sid"], kept["last_reply_at"]) == ("SMb", "t2")


def test_a_batch_handed_off_or_limited_counts_its_turns_and_says_so(store):
    store.add_conversation(CONVERSATION)

    assert _record("t1", (0, 0, 0), None, None)  # handed off to a person: the user's turn only
    kept = store.conversation_attributes("c1")
    assert [kept[k] for k in TOTALS] == [0, 0, 0, 1]
    assert (kept["conversation_status"], kept["last_assistant_message_sid"]) == ("awaiting_agent", "")
    assert "last_reply_at" not in kept  # nothing went to the user

    assert _record("t2", (4, 0, 4), "t2#a", None, limited=True)
    kept = store.conversation_attributes("c1")
    assert [kept[k] for k in TOTALS] == [4, 0, 4, 3]
    assert (kept["conversation_status"], kept["updated_at"]) == ("limited", "t2")
    assert "last_reply_at" not in kept


def test_a_batch_recorded_without_the_lock_adds_nothing(store):
    store.add_conversation(CONVERSATION)
    assert _record("t1", (10, 5, 15), "t1#a", "SMa")
    turns.put(Turn(conversation_id="c1", turn_id="t2#u", role="user", status="pending"))

    assert not turns.record_answered_batch(
        conversation_id="c1",
        owner="run",  # released by the first batch
        user_turn_id="t2#u",
        assistant_turn_id=None,
        answered_at="t2",
        processing_time_ms=100,
        tokens={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        last_message_sid=None,
    )

    kept = store.conversation_attributes("c1")
    assert [kept[k] for k in TOTALS] == [10, 5, 15, 2]
    assert kept["conversation_status"] == "reply_sent"
