"""OpenAI as it really behaves, on the emulator: one user turn and one reply per batch in
the OpenAI Conversation (read from the stand-in), whatever attempt times out or dies after
OpenAI did the work; quota errors are permanent; long conversations are truncated; a
conversation OpenAI no longer knows is replaced."""

from __future__ import annotations

from datetime import timedelta

import httpx2
import openai
import pytest

from functions import clock
from functions.answer import openai_responses, turns
from functions.batching.settings import FailureSettings
from functions.delivery import twilio_messages
from functions.errors import AIRetryableError
from functions.intake import staged_messages

pytestmark = pytest.mark.emulator


@pytest.fixture(autouse=True)
def no_earlier_run(harness):
    """These tests queue faults and patch functions that every run in this process shares:
    an earlier test's run still going would take the fault, or die in the patch, instead."""
    harness.wait_until_no_run_is_running()


def items_of(harness, conversation_id: str) -> list[tuple[str, str]]:
    """(role, text) of the conversation's items in the OpenAI stand-in, oldest first."""
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    return [
        (item["role"], item["content"][0]["text"])
        for item in harness.stack.openai.conversation_items(openai_conversation)
    ]


def creates_for(harness, conversation_id: str) -> list[dict]:
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    return [c for c in harness.stack.openai.calls if c["conversation"] == openai_conversation]


def stage_long_ago(harness, bodies: list[str]) -> tuple[str, str]:
    """A user and their conversation with messages pending for ten minutes, so that the
    reconciler would retry them at once."""
    user = harness.new_user()
    long_ago = clock.iso(clock.now() - timedelta(minutes=10))
    return user, harness.stage_directly(user, bodies, received_at=long_ago)


def test_a_batch_costs_one_create_and_its_polls(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    # Its own requests (another test's late window may be answered meanwhile in this process).
    assert len(creates_for(harness, conversation_id)) == 1
    requests = dict(harness.stack.openai.request_counts)
    assert not {"items_api", "item_api"} & set(requests)  # no listing, no deleting
    assert 1 <= requests["retrieve_response"] <= 2 * requests["create_response"]  # first poll at 0.2 s
    assert items_of(harness, conversation_id) == [("user", "hello"), ("assistant", "You said: hello")]


def test_a_late_success_leaves_one_user_turn_and_one_reply(harness, configure):
    configure(OPENAI_TIMEOUT_SECONDS="0.5")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["slow", "answer"])
    harness.stack.openai.inject({"delay": 1.5})  # longer than an attempt may wait

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert "AIRetryableError" in harness.failures_in(run["executionArn"])  # the attempt gave up
    assert items_of(harness, conversation_id) == [
        ("user", "slow\nanswer"),
        ("assistant", "You said: slow\nanswer"),
    ]
    assert len(creates_for(harness, conversation_id)) == 1  # later attempts polled it
    assert harness.replies_to(user) == ["You said: slow\nanswer"]


@pytest.mark.parametrize("dies_in", ["Generate Reply, after OpenAI answered", "Send Reply"])
def test_a_retry_of_a_batch_whose_response_completed_adds_no_second_user_turn(harness, monkeypatch, dies_in):
    user, conversation_id = stage_long_ago(harness, ["where is my order?"])
    died = []

    def once(real):
        def dying(*args, **kwargs):
            if not died and (dies_in == "Send Reply" or getattr(args[0], "role", "") == "assistant"):
                died.append(dies_in)
                raise RuntimeError(f"the function died in {dies_in}")
            return real(*args, **kwargs)

        return dying

    if dies_in == "Send Reply":
        monkeypatch.setattr(twilio_messages, "send_message", once(twilio_messages.send_message))
    else:
        monkeypatch.setattr(turns, "put", once(turns.put))

    first = harness.wait_for_run(harness.start_run(conversation_id))
    assert first["status"] == "FAILED" and died
    assert len(staged_messages.pending(conversation_id)) == 1  # kept for the reconciler
    polls_before = harness.stack.openai.request_counts["retrieve_response"]
    second = harness.wait_for_run(harness.start_run(conversation_id))  # the reconciler's retry

    assert second["status"] == "SUCCEEDED"
    assert items_of(harness, conversation_id) == [
        ("user", "where is my order?"),
        ("assistant", "You said: where is my order?"),
    ]
    assert len(creates_for(harness, conversation_id)) == 1
    assert harness.replies_to(user) == ["You said: where is my order?"]
    polls = harness.stack.openai.request_counts["retrieve_response"] - polls_before
    assert polls == (0 if dies_in == "Send Reply" else 1)  # the stored reply costs no call


@pytest.mark.parametrize("earlier_response", ["completed", "still running"])
def test_a_later_window_with_more_messages_withdraws_the_earlier_request(
    harness, monkeypatch, earlier_response
):
    user, conversation_id = stage_long_ago(harness, ["first"])
    if earlier_response == "still running":
        harness.stack.openai.inject({"delay": 3})
        real_wait = openai_responses.wait_for

        def dies_while_waiting(*args, **kwargs):
            monkeypatch.setattr(openai_responses, "wait_for", real_wait)
            raise RuntimeError("the function died while OpenAI was working")

        monkeypatch.setattr(openai_responses, "wait_for", dies_while_waiting)
    else:
        real_put = turns.put

        def dies_after_answer(turn):
            if turn.role == "assistant":
                monkeypatch.setattr(turns, "put", real_put)
                raise RuntimeError("the function died after OpenAI answered")
            real_put(turn)

        monkeypatch.setattr(turns, "put", dies_after_answer)
    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "FAILED"
    harness.stage_directly(user, ["second"])  # arrives before the reconciler's retry

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert items_of(harness, conversation_id) == [
        ("user", "first\nsecond"),
        ("assistant", "You said: first\nsecond"),
    ]
    assert harness.replies_to(user) == ["You said: first\nsecond"]
    cancels = harness.stack.openai.request_counts["cancel_response"]
    assert cancels == (1 if earlier_response == "still running" else 0)


def test_a_lost_answer_to_a_create_is_recovered_without_a_second_turn(harness, monkeypatch):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["ok"])
    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "SUCCEEDED"
    harness.stage_directly(user, ["ok"])  # the same text again: its earlier turn must stay
    real_create = openai_responses.create_response

    def answer_lost(*args, **kwargs):
        monkeypatch.setattr(openai_responses, "create_response", real_create)
        real_create(*args, **kwargs)  # OpenAI does the work, and its answer never arrives
        lost = openai.APITimeoutError(request=httpx2.Request("POST", "https://api.openai.com/v1/responses"))
        raise AIRetryableError("OpenAI unreachable: APITimeoutError") from lost

    monkeypatch.setattr(openai_responses, "create_response", answer_lost)

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["AIRetryableError"]
    assert items_of(harness, conversation_id) == [("user", "ok"), ("assistant", "You said: ok")] * 2
    assert harness.replies_to(user) == ["You said: ok"] * 2


def test_quota_exhausted_is_permanent_the_user_gets_the_fallback(harness, monkeypatch):
    counted: list[str] = []
    real_count = openai_responses.count
    monkeypatch.setattr(
        openai_responses, "count", lambda name, value=1: (counted.append(name), real_count(name))
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?"])
    harness.stack.openai.inject({"status": 429, "code": "insufficient_quota"})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIPermanentError"
    assert "insufficient_quota" in run["cause"]
    assert harness.failures_in(run["executionArn"]) == ["AIPermanentError"]  # not retried
    assert len(creates_for(harness, conversation_id)) == 1
    assert "AIQuotaExhausted" in counted
    assert harness.replies_to(user) == [FailureSettings.get().fallback_reply]
    assert staged_messages.pending(conversation_id) == []  # set aside, not retried
    assert items_of(harness, conversation_id) == []


def test_the_fallback_reply_survives_a_transient_twilio_error_and_is_sent_once(harness, configure):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="1")  # a 503 leaves the fallback in doubt: a short wait
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["anyone?"])
    harness.stack.openai.inject({"status": 429, "code": "insufficient_quota"})
    harness.stack.twilio.inject({"status": 503})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIPermanentError"
    assert harness.failures_in(run["executionArn"]) == ["AIPermanentError", "TwilioRetryableError"]
    assert harness.replies_to(user) == [FailureSettings.get().fallback_reply]
    (user_turn,) = turns.list_of(conversation_id)
    assert user_turn.status == "failed" and user_turn.fallback_message_sid


def test_a_conversation_past_the_context_window_is_truncated_not_failed(harness, configure):
    configure(OPENAI_MAX_OUTPUT_TOKENS="500")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["the first question"])
    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "SUCCEEDED"
    harness.stack.openai.set_context_window(max_items=2)  # the history and a new turn do not fit
    harness.stage_directly(user, ["the second question"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.replies_to(user)[-1] == "You said: the second question"
    calls = creates_for(harness, conversation_id)
    assert {c["truncation"] for c in calls} == {"auto"} and {c["max_output_tokens"] for c in calls} == {500}


def test_a_conversation_openai_no_longer_knows_is_replaced_and_the_batch_answered(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["before"])
    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "SUCCEEDED"
    old = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    harness.stack.openai.forget_conversation(old)  # deleted, or the key moved to another project
    harness.stage_directly(user, ["after"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.conversation_item(conversation_id)["openai_conversation_id"]["S"] != old
    assert items_of(harness, conversation_id) == [("user", "after"), ("assistant", "You said: after")]
    assert harness.replies_to(user) == ["You said: before", "You said: after"]
