"""The OpenAI stand-in through the real `openai` SDK: stateful conversations, responses that
complete without their client, conversation_locked, background mode, context overflow."""

from __future__ import annotations

import openai
import pytest
import requests

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.support.waiting import wait_until


def texts(items: list[dict]) -> list[tuple[str, str]]:
    return [(i["role"], i["content"][0]["text"]) for i in items]


def test_a_response_on_a_conversation_adds_its_turn_to_the_conversation(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create(metadata={"conversation_id": "c1"})

    response = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="hello", instructions="be brief"
    )

    assert response.output_text == "You said: hello"
    assert response.status == "completed" and response.conversation.id == conversation.id
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens > 0
    assert texts(standin.conversation_items(conversation.id)) == [
        ("user", "hello"),
        ("assistant", "You said: hello"),
    ]
    assert ai.conversations.retrieve(conversation.id).metadata == {"conversation_id": "c1"}
    (call,) = standin.calls
    assert call["conversation"] == conversation.id and call["input"] == "hello" and call["status"] == 200
    assert call["instructions"] == "be brief" and call["response_id"] == response.id and call["at"] > 0


def test_list_input_joins_its_text_parts(ai):
    conversation = ai.conversations.create()
    response = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input=[
            {"role": "user", "content": "first"},
            {"role": "user", "content": [{"type": "input_text", "text": "second"}]},
        ],
    )
    assert response.output_text == "You said: first\nsecond"
    listed = ai.conversations.items.list(conversation.id, order="asc")
    assert [i.role for i in listed] == ["user", "user", "assistant"]


def test_items_page_through_the_sdk_in_both_orders_and_can_be_deleted(ai):
    conversation = ai.conversations.create()
    for n in range(4):
        ai.responses.create(model=MODEL, conversation=conversation.id, input=f"turn {n}")

    ascending = list(ai.conversations.items.list(conversation.id, limit=3, order="asc"))
    descending = list(ai.conversations.items.list(conversation.id, limit=3))  # desc by default

    assert [i.content[0].text for i in ascending][:2] == ["turn 0", "You said: turn 0"]
    assert len(ascending) == 8 and [i.id for i in descending] == [i.id for i in reversed(ascending)]
    first_page = ai.conversations.items.list(conversation.id, limit=3, order="asc")
    assert first_page.has_more and first_page.last_id == ascending[2].id

    assert (
        ai.conversations.items.delete(ascending[0].id, conversation_id=conversation.id).id == conversation.id
    )
    with pytest.raises(openai.NotFoundError):
        ai.conversations.items.retrieve(ascending[0].id, conversation_id=conversation.id)
    assert len(list(ai.conversations.items.list(conversation.id, limit=100))) == 7


def test_an_unknown_or_deleted_conversation_is_not_found(ai, openai_standin):
    standin, url = openai_standin
    with pytest.raises(openai.NotFoundError):
        ai.responses.create(model=MODEL, conversation="conv_never_created", input="hi")
    with pytest.raises(openai.NotFoundError):
        ai.conversations.retrieve("conv_never_created")

    deleted = ai.conversations.create()
    assert ai.conversations.delete(deleted.id).deleted
    forgotten = ai.conversations.create()
    assert requests.delete(f"{url}/_control/conversations/{forgotten.id}", timeout=2).ok

    for conversation_id in (deleted.id, forgotten.id):
        with pytest.raises(openai.NotFoundError) as raised:
            ai.responses.create(model=MODEL, conversation=conversation_id, input="hi")
        assert raised.value.status_code == 404 and raised.value.body["param"] == "conversation"
    assert [c["status"] for c in standin.calls] == [404, 404, 404]


def test_a_response_whose_client_timed_out_still_completes_and_a_retry_meanwhile_is_locked(
    ai, openai_standin
):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"delay": 0.8})
    impatient = ai.with_options(timeout=0.2)

    with pytest.raises(openai.APITimeoutError):
        impatient.responses.create(model=MODEL, conversation=conversation.id, input="where is my order?")
    with pytest.raises(openai.BadRequestError) as locked:
        ai.responses.create(model=MODEL, conversation=conversation.id, input="where is my order?")

    assert locked.value.code == "conversation_locked"
    assert locked.value.body == {
        "message": "Another process is currently operating on this conversation. "
        "Please retry in a few seconds.",
        "type": "invalid_request_error",
        "param": "conversation",
        "code": "conversation_locked",
    }
    # The first request's work completes anyway: its turn is in the conversation.
    wait_until(lambda: len(standin.conversation_items(conversation.id)) == 2)
    wait_until(lambda: len(standin.calls) == 2)  # the timed-out call is listed once its work is done
    # A blind retry then adds the user's turn a second time.
    ai.responses.create(model=MODEL, conversation=conversation.id, input="where is my order?")
    assert [role for role, _ in texts(standin.conversation_items(conversation.id))] == [
        "user",
        "assistant",
    ] * 2
    assert [c["status"] for c in standin.calls] == [400, 200, 200]  # recorded as answered


def test_background_mode_answers_at_once_and_completes_later(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"delay": 0.4})

    created = ai.responses.create(model=MODEL, conversation=conversation.id, input="slow", background=True)

    # Answered before the work was done: nothing is in the conversation yet (an answer held
    # for the 0.4 s of work would find the user's turn and the reply there).
    assert standin.conversation_items(conversation.id) == []
    assert created.status == "queued" and created.background
    with pytest.raises(openai.BadRequestError) as locked:
        ai.responses.create(model=MODEL, conversation=conversation.id, input="again")
    assert locked.value.code == "conversation_locked"
    done = wait_until(lambda: (r := ai.responses.retrieve(created.id)).status == "completed" and r)
    assert done.output_text == "You said: slow"
    assert texts(standin.conversation_items(conversation.id)) == [
        ("user", "slow"),
        ("assistant", "You said: slow"),
    ]
    assert standin.calls[0]["background"] is True and standin.calls[0]["response_id"] == created.id


def test_a_cancelled_background_response_adds_nothing_and_frees_the_conversation(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"delay": 1})
    created = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="never mind", background=True
    )

    cancelled = ai.responses.cancel(created.id)

    assert cancelled.status == "cancelled"
    assert ai.responses.cancel(created.id).status == "cancelled"  # idempotent
    assert standin.conversation_items(conversation.id) == []
    assert ai.responses.create(model=MODEL, conversation=conversation.id, input="now").status == "completed"
    foreground = ai.responses.create(model=MODEL, input="x")
    with pytest.raises(openai.BadRequestError):
        ai.responses.cancel(foreground.id)


def test_a_background_response_can_be_made_to_fail_after_acceptance(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"fail": "server_error", "delay": 0.2})

    created = ai.responses.create(model=MODEL, conversation=conversation.id, input="doomed", background=True)

    assert created.status == "queued"
    failed = wait_until(lambda: (r := ai.responses.retrieve(created.id)).status == "failed" and r)
    assert failed.error.code == "server_error" and failed.output_text == ""
    assert standin.conversation_items(conversation.id) == []  # a failed response adds nothing
    assert ai.responses.create(model=MODEL, conversation=conversation.id, input="again").status == "completed"
    assert standin.request_counts["create_response"] == 2 and standin.request_counts["retrieve_response"] >= 1


def test_a_conversation_over_the_context_window_fails_unless_truncation_is_auto(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    ai.responses.create(model=MODEL, conversation=conversation.id, input="one two three")
    full = ai.responses.create(model=MODEL, conversation=conversation.id, input="four")
    requests.post(f"{url}/_control/context_window", json={"max_items": 4}, timeout=2).raise_for_status()

    with pytest.raises(openai.BadRequestError) as overflow:
        ai.responses.create(model=MODEL, conversation=conversation.id, input="five")
    truncated = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="five", truncation="auto"
    )

    assert overflow.value.code == "context_length_exceeded" and overflow.value.body["param"] == "input"
    assert truncated.status == "completed" and truncated.truncation == "auto"
    assert truncated.usage.input_tokens < full.usage.input_tokens + 5  # the oldest items were dropped
    assert len(standin.conversation_items(conversation.id)) == 6  # the stored items all stay
    standin.set_context_window(max_chars=10)
    with pytest.raises(openai.BadRequestError):
        ai.responses.create(model=MODEL, input="more than ten characters")


@pytest.mark.parametrize(
    ("fault", "error", "code", "kind"),
    [
        (
            {"status": 429, "code": "insufficient_quota"},
            openai.RateLimitError,
            "insufficient_quota",
            "insufficient_quota",
        ),
        ({"status": 429}, openai.RateLimitError, "rate_limit_exceeded", "requests"),
        ({"status": 503}, openai.InternalServerError, None, "server_error"),
        ({"status": 500}, openai.InternalServerError, None, "server_error"),
        (
            {"status": 401, "code": "invalid_api_key"},
            openai.AuthenticationError,
            "invalid_api_key",
            "invalid_request_error",
        ),
        (
            {"status": 400, "code": "conversation_locked"},
            openai.BadRequestError,
            "conversation_locked",
            "invalid_request_error",
        ),
        (
            {"status": 400, "code": "context_length_exceeded"},
            openai.BadRequestError,
            "context_length_exceeded",
            "invalid_request_error",
        ),
        ({"status": 404}, openai.NotFoundError, None, "invalid_request_error"),
    ],
)
def test_injected_faults_answer_with_openais_error_bodies_and_do_nothing(
    ai, openai_standin, fault, error, code, kind
):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    standin.inject(fault)

    with pytest.raises(error) as raised:
        ai.responses.create(model=MODEL, conversation=conversation.id, input="hi")

    assert raised.value.code == code and raised.value.body["type"] == kind
    assert standin.conversation_items(conversation.id) == []
    assert standin.calls[0]["status"] == fault["status"]
    assert ai.responses.create(model=MODEL, conversation=conversation.id, input="hi").status == "completed"


def test_max_output_tokens_cuts_the_reply_and_is_checked(ai):
    long_input = " ".join(f"w{n}" for n in range(40))
    cut = ai.responses.create(model=MODEL, input=long_input, max_output_tokens=16)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert len(cut.output_text.split()) == 16
    with pytest.raises(openai.BadRequestError):
        ai.responses.create(model=MODEL, input="hi", max_output_tokens=5)


def test_responses_are_retrievable_unless_not_stored(ai):
    stored = ai.responses.create(model=MODEL, input="keep")
    unstored = ai.responses.create(model=MODEL, input="forget", store=False)
    assert ai.responses.retrieve(stored.id).output_text == "You said: keep"
    with pytest.raises(openai.NotFoundError):
        ai.responses.retrieve(unstored.id)


def test_reset_forgets_conversations_and_calls(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create()
    ai.responses.create(model=MODEL, conversation=conversation.id, input="hi")
    standin.reset()
    assert standin.calls == []
    with pytest.raises(openai.NotFoundError):
        ai.conversations.retrieve(conversation.id)


def test_items_can_be_added_and_metadata_changed_but_not_while_a_response_runs(ai, openai_standin):
    standin, _ = openai_standin
    conversation = ai.conversations.create(items=[{"type": "message", "role": "user", "content": "seed"}])
    added = ai.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "assistant", "content": "noted"}]
    )
    assert [i.role for i in added.data] == ["assistant"]
    assert ai.conversations.update(conversation.id, metadata={"k": "v"}).metadata == {"k": "v"}
    assert texts(standin.conversation_items(conversation.id)) == [("user", "seed"), ("assistant", "noted")]

    standin.inject({"delay": 0.5})
    ai.responses.create(model=MODEL, conversation=conversation.id, input="busy", background=True)
    with pytest.raises(openai.BadRequestError) as locked:
        ai.conversations.items.create(
            conversation.id, items=[{"type": "message", "role": "user", "content": "x"}]
        )
    assert locked.value.code == "conversation_locked"
