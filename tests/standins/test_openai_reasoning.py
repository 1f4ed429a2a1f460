"""Reasoning in the OpenAI stand-in, through the real `openai` SDK: reasoning tokens spent
before the reply and counted in `max_output_tokens`, a response that spends them all ends
`incomplete` with no text, a reasoning item left without its reply is refused as OpenAI
refuses it, the reasoning effort only where the model takes one, and a cancelled response
that keeps its input (infra/local/standins/openai_reasoning.py)."""

from __future__ import annotations

from datetime import date

import openai
import pytest

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.support.waiting import wait_until


@pytest.fixture(autouse=True)
def a_day_both_models_are_served(openai_standin):
    openai_standin[0].today = lambda: date(2026, 11, 26)


def kinds(items: list[dict]) -> list[str]:
    return [item.get("role") or item["type"] for item in items]


def test_reasoning_tokens_come_before_the_reply_and_count_as_output(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"reasoning_tokens": 300})

    response = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="hello", max_output_tokens=2048
    )

    assert response.status == "completed" and response.output_text == "You said: hello"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.usage.output_tokens_details.reasoning_tokens == 300
    assert response.usage.output_tokens == 300 + len(["You", "said:", "hello"])
    assert kinds(standin.conversation_items(conversation.id)) == ["user", "reasoning", "assistant"]
    listed = ai.conversations.items.list(conversation.id, order="asc")  # the SDK reads it
    assert [item.type for item in listed] == ["message", "reasoning", "message"]


def test_reasoning_that_reaches_max_output_tokens_leaves_no_text_and_the_next_request_is_refused(
    ai, openai_standin
):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"reasoning_tokens": 3000})

    response = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="hello", max_output_tokens=2048
    )

    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "" and [item.type for item in response.output] == ["reasoning"]
    assert response.usage.output_tokens == response.usage.output_tokens_details.reasoning_tokens == 2048
    assert kinds(standin.conversation_items(conversation.id)) == ["user", "reasoning"]
    with pytest.raises(openai.BadRequestError, match="of type 'reasoning' was provided without its required"):
        ai.responses.create(model=MODEL, conversation=conversation.id, input="again")
    ai.conversations.items.delete(response.output[0].id, conversation_id=conversation.id)
    assert ai.responses.create(model=MODEL, conversation=conversation.id, input="again").status == "completed"


def test_a_reply_longer_than_the_room_reasoning_left_is_cut(ai, openai_standin):
    standin, _ = openai_standin
    standin.inject({"reasoning_tokens": 14})

    response = ai.responses.create(model=MODEL, input="one two three four", max_output_tokens=16)

    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "You said:" and response.usage.output_tokens == 16


def test_the_reasoning_effort_is_refused_by_a_model_that_does_not_reason(ai, openai_standin):
    standin, _ = openai_standin
    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(model="gpt-4.1", input="hello", reasoning={"effort": "low"})
    assert refused.value.code == "unsupported_parameter"

    assert ai.responses.create(model="gpt-4.1", input="hello").status == "completed"
    assert ai.responses.create(model=MODEL, input="hello", reasoning={"effort": "low"}).status == "completed"
    assert standin.calls[-1]["reasoning"] == {"effort": "low"}


def test_a_cancelled_response_can_be_made_to_keep_its_input(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"delay": 5, "cancel_keeps_input": True}, {"delay": 5})
    kept = ai.responses.create(model=MODEL, conversation=conversation.id, input="kept", background=True)
    wait_until(lambda: ai.responses.retrieve(kept.id).status == "in_progress")

    assert ai.responses.cancel(kept.id).status == "cancelled"
    assert kinds(standin.conversation_items(conversation.id)) == ["user"]  # its input, no reply

    other = ai.responses.create(model=MODEL, conversation=conversation.id, input="gone", background=True)
    ai.responses.cancel(other.id)  # without the fault: nothing added
    assert [i["content"][0]["text"] for i in standin.conversation_items(conversation.id)] == ["kept"]
