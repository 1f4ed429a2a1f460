"""The StagedMessages table, held to one contract for the in-memory fake and the DynamoDB
layer (the `store` fixture runs each test on both)."""

from __future__ import annotations

from functions.intake import staged_messages
from functions.intake.inbound import InboundMessage
from functions.intake.staged_messages import Staging
from functions.storage.models import AIRequest

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2, SM3, MISSING = (f"SM{n:032x}" for n in (1, 2, 3, 4))


def message(sid: str, body: str = "hi", **form: str) -> InboundMessage:
    return InboundMessage.from_form(
        {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": body, **form}
    )


def stage(*sids: str) -> None:
    for number, sid in enumerate(sids):
        assert (
            staged_messages.stage("c1", message(sid), f"2026-11-26T12:00:0{number}+00:00") is Staging.STAGED
        )


def request(*sids: str, response_id: str | None = None) -> AIRequest:
    return AIRequest(
        message_sids=list(sids),
        window_id="w1",
        openai_conversation_id="conv_1",
        requested_at="2026-11-26T12:00:00+00:00",
        response_id=response_id,
    )


def test_a_message_sid_is_staged_once_and_a_replay_says_whether_it_is_pending(store):
    stage(SM1)

    assert staged_messages.stage("c1", message(SM1, "again"), "t") is Staging.DUPLICATE_PENDING
    staged_messages.mark_answered("c1", [SM1], "w1", 1_800_000_000)
    assert staged_messages.stage("c1", message(SM1, "again"), "t") is Staging.DUPLICATE_DONE


def test_a_staged_message_is_loaded_with_what_the_person_sent(store):
    staged_messages.stage("c1", message(SM1, "hello", ProfileName="Ana"), "2026-11-26T12:00:00+00:00")

    [loaded] = staged_messages.load("c1", [SM1, MISSING])

    assert (loaded.message_sid, loaded.body, loaded.received_at) == (
        SM1,
        "hello",
        "2026-11-26T12:00:00+00:00",
    )
    assert loaded.is_pending


def test_pending_lists_unanswered_messages_oldest_first_with_their_attempts(store):
    stage(SM1, SM2, SM3)
    staged_messages.mark_answered("c1", [SM2], "w1", 1_800_000_000)

    assert staged_messages.count_failed_attempt("c1", [SM1, SM2]) == 1
    assert staged_messages.count_failed_attempt("c1", [SM1, SM3]) == 2

    assert [(k.message_sid, k.attempts) for k in staged_messages.pending("c1")] == [(SM1, 2), (SM3, 1)]
    scanned = {
        (i["conversation_id"], i["message_sid"], i["pending_since"]) for i in staged_messages.scan_pending()
    }
    assert scanned == {("c1", SM1, "2026-11-26T12:00:00+00:00"), ("c1", SM3, "2026-11-26T12:00:02+00:00")}


def test_transient_failures_are_counted_on_pending_messages_with_the_last_ones_time(store):
    stage(SM1, SM2, SM3)
    staged_messages.mark_answered("c1", [SM2], "w1", 1_800_000_000)

    assert staged_messages.count_transient_failure("c1", [SM1, SM2], "2026-11-26T12:01:00+00:00") == 1
    assert staged_messages.count_transient_failure("c1", [SM1, SM3], "2026-11-26T12:03:00+00:00") == 2

    pending = [
        (k.message_sid, k.attempts, k.transient_failures, k.last_failed_at)
        for k in staged_messages.pending("c1")
    ]
    assert pending == [(SM1, 0, 2, "2026-11-26T12:03:00+00:00"), (SM3, 0, 1, "2026-11-26T12:03:00+00:00")]
    scanned = {
        (i["message_sid"], int(i["transient_failures"]), i["last_failed_at"])
        for i in staged_messages.scan_pending()
    }
    assert scanned == {(SM1, 2, "2026-11-26T12:03:00+00:00"), (SM3, 1, "2026-11-26T12:03:00+00:00")}


def test_a_message_set_aside_leaves_pending_and_counts_no_more_attempts(store):
    stage(SM1, SM2)

    staged_messages.set_aside("c1", [SM1], "w1", "AIPermanentError: refused")

    assert [k.message_sid for k in staged_messages.pending("c1")] == [SM2]
    assert staged_messages.count_failed_attempt("c1", [SM1]) == 0
    [loaded] = staged_messages.load("c1", [SM1])
    assert (loaded.failed_in, loaded.body, loaded.is_pending) == ("w1", "hi", False)


def test_an_answered_message_becomes_a_bodiless_tombstone(store):
    stage(SM1)

    staged_messages.mark_answered("c1", [SM1], "w1", 1_800_000_000)

    [loaded] = staged_messages.load("c1", [SM1])
    assert (loaded.answered_in, loaded.body, loaded.is_pending) == ("w1", "", False)
    assert staged_messages.pending("c1") == []


def test_an_ai_request_is_kept_on_a_pending_message_only_and_dropped(store):
    stage(SM1, SM2)
    staged_messages.mark_answered("c1", [SM2], "w1", 1_800_000_000)

    staged_messages.keep_ai_request("c1", SM1, request(SM1, response_id="resp_1"))
    staged_messages.keep_ai_request("c1", SM2, request(SM2))

    assert staged_messages.ai_requests("c1", [SM1, SM2]) == {SM1: request(SM1, response_id="resp_1")}
    staged_messages.drop_ai_request("c1", SM1)
    assert staged_messages.ai_requests("c1", [SM1, SM2]) == {}
    assert staged_messages.load("c1", [SM1])[0].body == "hi"
