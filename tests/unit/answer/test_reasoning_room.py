"""Reasoning models (functions/answer/ai_requests.py), on in-memory fakes: the
reasoning effort is sent where the model takes one; a response that spent its
max_output_tokens on reasoning, with no text, is asked once more with room, counted as one
more AI call; a removal never leaves a reasoning item without the reply it led to; and a
discarded reply's turn is removed whatever its response's final status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.answer.ai_requests import BatchRequest
from functions.config import get_settings
from functions.errors import AIPermanentError, AIRetryableError, NewerFragments
from functions.intake.inbound import InboundMessage
from tests.support.fake_openai import FakeOpenAI, batch_request, install_openai
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2 = (f"SM{n:032x}" for n in (1, 2))
BODY = "first\nsecond"


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    store = store_with_conversation(monkeypatch, datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC), USER, US)
    for number, (sid, body) in enumerate(((SM1, "first"), (SM2, "second"))):
        form = {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": body}
        store.stage("c1", InboundMessage.from_form(form), f"2026-11-26T11:59:0{number}+00:00")
    return store


@pytest.fixture
def openai(monkeypatch) -> FakeOpenAI:
    return install_openai(monkeypatch)


def request(model: str = "gpt-6.1-terra", newer: bool | None = None) -> tuple[BatchRequest, list[str]]:
    """Conversation c1's request for both messages; what it counted as asked again."""
    asked_again: list[str] = []
    batch = batch_request((SM1, SM2), BODY, newer=newer)
    batch.model = batch.admitted_as = model
    batch.asked_again_as = asked_again.append
    return batch, asked_again


def no_reasoning_left_alone(openai: FakeOpenAI) -> bool:
    """Every reasoning item in the conversation is followed by the reply it led to."""
    items = openai.items
    return all(
        index + 1 < len(items) and items[index + 1].role == "assistant"
        for index, item in enumerate(items)
        if item.id.startswith("rs_")
    )


def test_the_reasoning_effort_is_sent_only_to_a_model_that_takes_one(store, openai):
    request("gpt-6.1-terra")[0].reply()
    assert openai.asked_with[0]["reasoning_effort"] == get_settings().openai_reasoning_effort == "low"

    openai.items.clear()
    store.drop_ai_request("c1", SM1)
    request("gpt-4.1")[0].reply()
    assert openai.asked_with[1]["reasoning_effort"] is None


def test_a_response_that_spent_its_room_on_reasoning_is_asked_once_more_with_room(store, openai):
    openai.out_of_room.add(0)
    batch, asked_again = request()

    reply = batch.reply()

    assert reply.text == "reply 1" and openai.created == 2
    first = openai.asked_with[0]["max_output_tokens"]
    assert [a["max_output_tokens"] for a in openai.asked_with] == [first, 2 * first]
    assert asked_again == [f"asked of gpt-6.1-terra with {2 * first} output tokens"]  # one more AI call
    assert openai.deleted == ["rs_0", "msg_user_0"]  # its turn removed before asking again
    assert [(i.role, i.text) for i in openai.items] == [("user", BODY), ("assistant", "reply 1")]


def test_a_second_response_out_of_room_is_not_asked_a_third_time(store, openai):
    openai.out_of_room.update({0, 1})

    with pytest.raises(AIPermanentError):
        request()[0].reply()

    assert openai.created == 2 and openai.items == []


def test_a_removal_cut_short_never_leaves_reasoning_without_its_reply(store, openai):
    """A lost request's copy (user message, reasoning, reply) is removed before asking
    again, one item at a time: wherever the attempt's time runs out, the model is never
    given a reasoning item without the reply that followed it (OpenAI refuses that)."""
    openai.reasoning.add(0)
    openai.lose_answer.add(0)
    with pytest.raises(AIRetryableError):
        request()[0].reply()
    for _ in range(2):  # two attempts, each out of time after one deletion
        openai.time_out_after_deleting = 1
        with pytest.raises(AIRetryableError):
            request()[0].reply()
        assert no_reasoning_left_alone(openai), [i.id for i in openai.items]
    openai.time_out_after_deleting = None

    reply = request()[0].reply()

    assert [(i.role, i.text) for i in openai.items] == [("user", BODY), ("assistant", reply.text)]


def test_a_discarded_reply_whose_cancelled_response_kept_its_input_leaves_no_turn(store, openai):
    openai.running.add(0)
    openai.cancel_keeps_input.add(0)

    with pytest.raises(NewerFragments):
        request(newer=True)[0].reply()

    assert openai.cancelled == ["resp_0"] and openai.items == []
