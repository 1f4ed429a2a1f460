"""Reasoning models, over HTTP through the local stack: the OpenAI stand-in reasons for as
many output tokens as told (`{"reasoning_tokens": N}`, counted in max_output_tokens as
OpenAI counts them); the person gets the model's answer with the default settings, a
response that spent all its room on reasoning is asked once more with more (one more AI
call counted), and a discarded reply whose cancelled response kept its input leaves no turn
in the OpenAI conversation."""

from __future__ import annotations

import time

import pytest

from functions.config import get_settings
from functions.guards import usage_counters

pytestmark = pytest.mark.e2e


def _openai_items(harness, conversation_id: str) -> list[tuple[str, str]]:
    """The OpenAI conversation's items: (role or type, text)."""
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    items = harness.stack.openai.conversation_items(openai_conversation)
    texts = [" ".join(part.get("text", "") for part in item.get("content") or []) for item in items]
    return [(item.get("role") or item["type"], text) for item, text in zip(items, texts, strict=True)]


def _ai_calls_counted(conversation_id: str) -> int:
    return usage_counters.calls(f"conversation#{conversation_id}#{int(time.time()) // 3600}")


def _answer(harness, user: str, text: str) -> tuple[str, list[dict]]:
    assert harness.send(user, text).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    runs = harness.wait_until_quiet(conversation_id, runs=1)
    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    ours = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    return conversation_id, [
        c for c in harness.stack.openai.calls if c["response_id"] and c["conversation"] == ours
    ]


def test_with_3000_reasoning_tokens_and_the_default_settings_the_person_gets_the_answer(harness):
    user = harness.new_user()
    harness.stack.openai.inject({"reasoning_tokens": 3000})

    conversation_id, calls = _answer(harness, user, "Where is my order?")

    assert harness.replies_to(user) == ["You said: Where is my order?"]  # not the fallback reply
    settings = get_settings()
    assert calls[0]["reasoning"] == {"effort": settings.openai_reasoning_effort}
    assert calls[0]["max_output_tokens"] == settings.openai_max_output_tokens
    assert ("reasoning", "") in _openai_items(harness, conversation_id)  # it did reason


def test_a_response_that_spent_its_room_on_reasoning_is_asked_again_with_more(harness):
    user = harness.new_user()
    first = get_settings().openai_max_output_tokens
    harness.stack.openai.inject({"reasoning_tokens": first})  # all of it: no text

    conversation_id, calls = _answer(harness, user, "Where is my order?")

    assert harness.replies_to(user) == ["You said: Where is my order?"]
    assert [c["max_output_tokens"] for c in calls] == [first, 2 * first]
    assert _ai_calls_counted(conversation_id) == 2  # the second request counts as an AI call
    # One turn in the OpenAI conversation: the first response's, reasoning only, removed.
    assert _openai_items(harness, conversation_id) == [
        ("user", "Where is my order?"),
        ("assistant", "You said: Where is my order?"),
    ]


def test_a_discarded_reply_leaves_no_turn_even_when_its_cancelled_response_kept_its_input(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", ON_NEWER="merge")
    user = harness.new_user()

    conversation_id = harness.send_while_generating(
        user, "Hey", "Order #12345", fault={"cancel_keeps_input": True}
    )
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: Hey\nOrder #12345"]
    assert _openai_items(harness, conversation_id) == [
        ("user", "Hey\nOrder #12345"),
        ("assistant", "You said: Hey\nOrder #12345"),
    ]
