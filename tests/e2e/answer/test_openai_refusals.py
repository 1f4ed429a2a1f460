"""What OpenAI refuses or cuts, through the local stack: a photo it will not read is left
out and the burst answered without it (one user turn and one reply in the OpenAI
Conversation); a reply its content filter cut is not sent, the fallback reply is; and a
background response is stored explicitly, so that a later attempt can still poll it."""

from __future__ import annotations

import httpx2
import openai
import pytest

from functions.answer import ai_requests, openai_responses
from functions.config import get_settings
from functions.errors import AIRetryableError
from functions.intake import staged_messages
from tests.e2e.answer.test_corpus import IMAGE, send_burst, text

pytestmark = pytest.mark.e2e

BURST = ["whatsapp_text", "whatsapp_image"]
WITH_IMAGE = [
    {
        "role": "user",
        "content": [
            text("Hi! I have a question about my order\n[photo 1 (image/jpeg)]"),
            IMAGE,
            text("The box arrived like this"),
        ],
    }
]
WITHOUT_IMAGE = (
    "Hi! I have a question about my order\n[photo 1 (image/jpeg), which could not be shown]\n"
    "The box arrived like this"
)


def items_of(harness, conversation_id: str) -> list[tuple[str, str]]:
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    return [
        (item["role"], item["content"][0]["text"])
        for item in harness.stack.openai.conversation_items(openai_conversation)
    ]


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    names: list[str] = []
    real = ai_requests.count
    monkeypatch.setattr(ai_requests, "count", lambda name, value=1: (names.append(name), real(name, value)))
    return names


@pytest.mark.parametrize(
    "refusal",
    [
        {"refuse_image": "image_content_policy_violation"},  # HTTP 400 at once
        {"refuse_image": "image_parse_error", "failed": True},  # accepted, then `failed`
    ],
)
def test_a_photo_openai_refuses_is_left_out_and_the_burst_answered(harness, counted, refusal):
    user = harness.new_user()
    harness.stack.openai.inject(refusal)
    conversation_id = send_burst(harness, user, BURST)

    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == [WITH_IMAGE, WITHOUT_IMAGE]  # asked again once
    assert harness.replies_to(user) == [f"You said: {WITHOUT_IMAGE}"]
    assert items_of(harness, conversation_id) == [
        ("user", WITHOUT_IMAGE),
        ("assistant", f"You said: {WITHOUT_IMAGE}"),
    ]
    assert "AIImagesRefused" in counted


def test_a_later_attempt_asks_without_the_images_too(harness, monkeypatch):
    """The request without images is carried out and its answer lost: the next attempt
    removes the turn it left and asks without images again (not with the image, which
    OpenAI would now read: the lost turn would stay as a second one)."""
    user = harness.new_user()
    harness.stack.openai.inject({"refuse_image": "invalid_image"})
    real_create = openai_responses.create_response

    def answer_lost_without_images(*args, **kwargs):
        if not isinstance(kwargs["user_turn"], str):
            return real_create(*args, **kwargs)
        monkeypatch.setattr(openai_responses, "create_response", real_create)
        state = real_create(*args, **kwargs)  # OpenAI does the work, and its answer never arrives
        openai_responses.wait_for(args[0], state, openai_responses.Budget(5))
        lost = openai.APITimeoutError(request=httpx2.Request("POST", "https://api.openai.com/v1/responses"))
        raise AIRetryableError("OpenAI unreachable: APITimeoutError") from lost

    monkeypatch.setattr(openai_responses, "create_response", answer_lost_without_images)
    conversation_id = send_burst(harness, user, BURST)

    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.failures_in(runs[0]["executionArn"]) == ["AIRetryableError"]
    assert harness.ai_inputs(conversation_id) == [WITH_IMAGE, WITHOUT_IMAGE, WITHOUT_IMAGE]
    reply = f"You said: {WITHOUT_IMAGE}"
    assert items_of(harness, conversation_id) == [("user", WITHOUT_IMAGE), ("assistant", reply)]
    assert harness.replies_to(user) == [reply]


def test_a_reply_cut_by_the_content_filter_is_not_sent_the_fallback_is(harness, counted):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["tell me something"])
    harness.stack.openai.inject({"incomplete": "content_filter"})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIPermanentError"
    assert "content_filter" in run["cause"]
    assert harness.failures_in(run["executionArn"]) == ["AIPermanentError"]  # not retried
    assert harness.replies_to(user) == [get_settings().fallback_reply]
    assert staged_messages.pending(conversation_id) == []  # set aside
    assert items_of(harness, conversation_id) == []  # the filtered turn is not kept
    assert "AIRepliesFiltered" in counted


def test_background_responses_are_stored_explicitly(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["keep it"])

    assert harness.wait_for_run(harness.start_run(conversation_id))["status"] == "SUCCEEDED"

    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    (call,) = [c for c in harness.stack.openai.calls if c["conversation"] == openai_conversation]
    assert call["background"] is True and call["store"] is True  # as the request said it
