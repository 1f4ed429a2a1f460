"""The OpenAI stand-in refuses a model OpenAI does not serve as OpenAI does: 404
`model_not_found` for a model past its announced shutdown date (by the stand-in's day) and
for a name it does not know; nothing is done."""

from __future__ import annotations

from datetime import UTC, datetime

import openai
import pytest
import requests

from functions.answer.openai_models import DEFAULT_MODEL


def refused(ai, model: str, conversation: str | None = None) -> openai.NotFoundError:
    with pytest.raises(openai.NotFoundError) as raised:
        ai.responses.create(model=model, input="hi", conversation=conversation)
    return raised.value


def test_a_model_past_its_shutdown_date_answers_404_model_not_found(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    before = requests.post(f"{url}/_control/today", json={"today": "2026-12-10"}, timeout=5)
    assert before.json() == {"today": "2026-12-10"}
    assert ai.responses.create(model="gpt-5-mini", input="hi").status == "completed"

    requests.post(f"{url}/_control/today", json={"today": "2026-12-11"}, timeout=5)
    error = refused(ai, "gpt-5-mini", conversation.id)

    assert error.status_code == 404 and error.code == "model_not_found"
    assert error.body == {
        "message": "The model `gpt-5-mini` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
    assert standin.conversation_items(conversation.id) == []  # nothing was done
    assert [call["status"] for call in standin.calls] == [200, 404]
    assert (
        ai.responses.create(model=DEFAULT_MODEL, input="hi", conversation=conversation.id).status
        == "completed"
    )


def test_a_model_it_does_not_know_answers_404_model_not_found(ai):
    assert refused(ai, "gpt-5.1-mini").code == "model_not_found"  # "not a supported model ID"
    assert refused(ai, "gtp-4").code == "model_not_found"


def test_its_day_follows_the_clock_again_after_a_reset(ai, openai_standin):
    standin, url = openai_standin
    requests.post(f"{url}/_control/today", json={"today": "2030-01-01"}, timeout=5)
    assert refused(ai, "gpt-4o").code == "model_not_found"  # shut down 2027-01-14

    requests.post(f"{url}/_control/reset", timeout=5)

    assert standin.today() == datetime.now(UTC).date()


def test_an_injected_model_not_found_has_the_same_body(ai, openai_standin):
    standin, _ = openai_standin
    standin.inject({"status": 404, "code": "model_not_found"})
    error = refused(ai, DEFAULT_MODEL)
    assert error.code == "model_not_found" and error.body["param"] is None
    assert DEFAULT_MODEL in error.body["message"]
