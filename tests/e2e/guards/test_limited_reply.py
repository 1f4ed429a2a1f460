"""A batch that a cost limit stops is never silent to the person when LIMITED_REPLY is set:
they are told once an hour per conversation, over HTTP on the local stack."""

from __future__ import annotations

import pytest

from functions.answer import turns

pytestmark = pytest.mark.e2e

NOTICE = "We're busy right now; we'll answer as soon as we can."


def _burst(harness, user: str, text: str, runs: int) -> str:
    harness.send(user, text)
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=runs)
    return conversation_id


def test_a_limited_batch_tells_the_person_once_an_hour(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", MAX_AI_CALLS_PER_HOUR_PER_CONVERSATION="1", LIMITED_REPLY=NOTICE)
    user = harness.new_user()

    conversation_id = _burst(harness, user, "first", runs=1)
    _burst(harness, user, "second", runs=2)
    _burst(harness, user, "third", runs=3)

    assert harness.replies_to(user) == ["You said: first", NOTICE]  # the third: nothing more
    assert harness.ai_inputs(conversation_id) == ["first"]
    limited = [t.limited for t in turns.list_of(conversation_id) if t.role == "assistant"]
    assert limited == [None, "ai_calls_per_hour_per_conversation", "ai_calls_per_hour_per_conversation"]


def test_without_a_notice_a_limited_batch_sends_nothing(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", MAX_AI_CALLS_PER_HOUR_PER_CONVERSATION="1")
    user = harness.new_user()

    _burst(harness, user, "first", runs=1)
    _burst(harness, user, "second", runs=2)

    assert harness.replies_to(user) == ["You said: first"]
