"""The OpenAI stand-in's refusals through the real `openai` SDK: an image it is told to
refuse (at once, or as a background response that fails), and a reply its content filter
cuts."""

from __future__ import annotations

import base64

import openai
import pytest
import requests

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.support.media import PHOTO
from tests.support.waiting import wait_until

WITH_IMAGE = [
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "look"},
            {
                "type": "input_image",
                "image_url": f"data:image/jpeg;base64,{base64.b64encode(PHOTO).decode()}",
            },
        ],
    }
]


def test_an_image_refused_at_once_is_a_400_with_its_code_and_nothing_is_added(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    requests.post(
        f"{url}/_control/faults",
        json={"faults": [{"refuse_image": "image_content_policy_violation"}]},
        timeout=2,
    ).raise_for_status()

    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(model=MODEL, conversation=conversation.id, input=WITH_IMAGE, background=True)

    assert refused.value.code == "image_content_policy_violation"
    assert standin.conversation_items(conversation.id) == [] and standin.calls[0]["status"] == 400
    again = ai.responses.create(model=MODEL, conversation=conversation.id, input=WITH_IMAGE)
    assert again.status == "completed"  # the fault is spent


def test_an_image_refused_in_the_background_ends_failed_with_its_code(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"refuse_image": "image_parse_error", "failed": True})

    created = ai.responses.create(
        model=MODEL, conversation=conversation.id, input=WITH_IMAGE, background=True
    )

    failed = wait_until(lambda: (r := ai.responses.retrieve(created.id)).status == "failed" and r)
    assert failed.error.code == "image_parse_error" and failed.output_text == ""
    assert standin.conversation_items(conversation.id) == []


def test_an_image_refusal_lets_a_request_without_images_through(ai, openai_standin):
    standin, _ = openai_standin
    standin.inject({"refuse_image": "image_too_large"})

    answered = ai.responses.create(model=MODEL, input="no image here")

    assert answered.status == "completed" and answered.output_text == "You said: no image here"
    assert ai.responses.create(model=MODEL, input=WITH_IMAGE).status == "completed"  # spent


def test_a_reply_cut_by_the_content_filter_is_incomplete_and_added(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"incomplete": "content_filter"})

    cut = ai.responses.create(model=MODEL, conversation=conversation.id, input="one two three four five")

    assert cut.status == "incomplete" and cut.incomplete_details.reason == "content_filter"
    assert cut.output_text == "You said: one"
    assert [i["role"] for i in standin.conversation_items(conversation.id)] == ["user", "assistant"]
