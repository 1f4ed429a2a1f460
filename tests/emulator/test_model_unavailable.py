"""A model OpenAI does not serve (404 `model_not_found`: here gpt-5-mini, by the stand-in's
day past its 2026-12-11 shutdown) is the configuration's fault, not the user's: metric
AIModelUnavailable; the fallback model answers when OPENAI_FALLBACK_MODEL is set;
otherwise the batch stays pending, uncounted, nobody is told anything, and the run fails
so that it is seen and alarmed. Once the model is changed, the kept batch is answered."""

from __future__ import annotations

from datetime import date

import pytest

from functions.answer import openai_responses, turns
from functions.answer.openai_models import DEFAULT_MODEL
from functions.intake import staged_messages
from functions.tenancy import conversations

pytestmark = pytest.mark.emulator

RETIRED = "gpt-5-mini"


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The metrics the OpenAI integration counts."""
    names: list[str] = []
    real_count = openai_responses.count
    monkeypatch.setattr(
        openai_responses, "count", lambda name, value=1: (names.append(name), real_count(name))
    )
    return names


@pytest.fixture
def after_the_shutdown(harness, monkeypatch) -> None:
    monkeypatch.setattr(harness.stack.openai, "today", lambda: date(2026, 12, 11))


def creates(harness, conversation_id: str) -> list[tuple[str, int]]:
    """The responses this conversation asked OpenAI for (a leftover run of an earlier test,
    in this process, asks with the model this test configured too)."""
    ours = conversations.require(conversation_id).openai_conversation_id
    return [(c["model"], c["status"]) for c in harness.stack.openai.calls if c["conversation"] == ours]


def test_without_a_fallback_model_the_batch_is_kept_pending_and_the_run_fails(
    harness, configure, counted, after_the_shutdown
):
    configure(OPENAI_MODEL=RETIRED)
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?", "anyone there?"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIModelUnavailable"
    assert RETIRED in run["cause"] and "model_not_found" in run["cause"]
    assert harness.failures_in(run["executionArn"]) == ["AIModelUnavailable"]  # not retried
    assert "AIModelUnavailable" in counted
    assert creates(harness, conversation_id) == [(RETIRED, 404)]
    assert harness.replies_to(user) == []  # no fallback reply: not the user's doing
    pending = staged_messages.pending(conversation_id)
    assert len(pending) == 2 and [key.attempts for key in pending] == [0, 0]  # kept, uncounted
    assert all(turn.status not in ("failed", "dead_lettered") for turn in turns.list_of(conversation_id))

    configure(OPENAI_MODEL=DEFAULT_MODEL)  # the operator changes the model
    again = harness.wait_for_run(harness.start_run(conversation_id))

    assert again["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: hello?\nanyone there?"]
    assert staged_messages.pending(conversation_id) == []


def test_with_a_fallback_model_the_burst_is_answered_by_it(harness, configure, counted, after_the_shutdown):
    configure(OPENAI_MODEL=RETIRED, OPENAI_FALLBACK_MODEL=DEFAULT_MODEL)
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hi", "there"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert creates(harness, conversation_id) == [(RETIRED, 404), (DEFAULT_MODEL, 200)]
    assert "AIModelUnavailable" in counted
    assert harness.replies_to(user) == ["You said: hi\nthere"]
    assert staged_messages.pending(conversation_id) == []
    (reply,) = [turn for turn in turns.list_of(conversation_id) if turn.role == "assistant"]
    assert reply.model == DEFAULT_MODEL


def test_a_fallback_model_that_is_not_served_either_keeps_the_batch(
    harness, configure, counted, after_the_shutdown
):
    configure(OPENAI_MODEL=RETIRED, OPENAI_FALLBACK_MODEL="o3")  # shut down the same day
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?"])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIModelUnavailable"
    assert "'o3'" in run["cause"]
    assert creates(harness, conversation_id) == [(RETIRED, 404), ("o3", 404)]
    assert harness.replies_to(user) == []
    assert [key.attempts for key in staged_messages.pending(conversation_id)] == [0]
