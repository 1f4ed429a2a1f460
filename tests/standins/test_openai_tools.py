"""Function tools in the OpenAI stand-in through the real `openai` SDK: a queued tool call
ends a response with a `function_call` and no text; its `function_call_output` is answered
with the output's text; a conversation holding a call without its output, or an output
without its call, is refused as OpenAI refuses it; the faults apply to tool rounds too."""

from __future__ import annotations

import json

import openai
import pytest
import requests
from openai.types.conversations import Message
from openai.types.responses import ResponseFunctionToolCallItem, ResponseFunctionToolCallOutputItem

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.support.waiting import wait_until

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "Find an order by its number.",
    "parameters": {
        "type": "object",
        "properties": {"order": {"type": "string"}},
        "required": ["order"],
        "additionalProperties": False,
    },
    "strict": True,
}
TRACK = {**LOOKUP, "name": "track_parcel", "description": "Where a parcel is."}


def queue(url: str, body: dict) -> dict:
    answer = requests.post(f"{url}/_control/tool_calls", json=body, timeout=2)
    answer.raise_for_status()
    return answer.json()


def output(call_id: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def kinds(standin, conversation_id: str) -> list[str]:
    return [item["type"] for item in standin.conversation_items(conversation_id)]


def asked(ai, standin, url, conversation_id: str, **create) -> openai.types.responses.Response:
    """A response on the conversation that ends in a `lookup_order` call."""
    queue(url, {"name": "lookup_order", "arguments": {"order": "12345"}})
    return ai.responses.create(
        model=MODEL, conversation=conversation_id, input="where is 12345?", tools=[LOOKUP], **create
    )


def test_a_queued_call_ends_the_response_with_a_function_call_and_no_text(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    assert queue(url, {"name": "lookup_order", "arguments": {"order": "12345"}}) == {"queued": 1}

    response = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="where is 12345?", tools=[LOOKUP]
    )

    assert response.status == "completed" and response.output_text == ""
    (call,) = response.output
    assert call.type == "function_call" and call.name == "lookup_order" and call.status == "completed"
    assert json.loads(call.arguments) == {"order": "12345"}
    assert call.id.startswith("fc_") and call.call_id.startswith("call_")
    assert [t.name for t in response.tools] == ["lookup_order"] and response.tool_choice == "auto"
    assert kinds(standin, conversation.id) == ["message", "function_call"]
    assert requests.get(f"{url}/_control/tool_calls", timeout=2).json() == {"tool_calls": []}  # spent
    assert standin.calls[0]["tools"] == ["lookup_order"] and standin.calls[0]["tool_choice"] is None


def test_the_output_answers_the_call_and_the_items_keep_their_real_shapes(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    call = asked(ai, standin, url, conversation.id).output[0]

    answered = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input=[output(call.call_id, "Order 12345 ships on Monday.")],
        tools=[LOOKUP],
    )

    assert answered.status == "completed"
    assert answered.output_text == "Tool said: Order 12345 ships on Monday."
    items = list(ai.conversations.items.list(conversation.id, order="asc"))
    assert [type(i) for i in items] == [
        Message,
        ResponseFunctionToolCallItem,
        ResponseFunctionToolCallOutputItem,
        Message,
    ]
    assert (items[1].call_id, items[1].name, json.loads(items[1].arguments)) == (
        call.call_id,
        "lookup_order",
        {"order": "12345"},
    )
    assert (items[2].call_id, items[2].output, items[2].status) == (
        call.call_id,
        "Order 12345 ships on Monday.",
        "completed",
    )
    fetched = ai.conversations.items.retrieve(items[2].id, conversation_id=conversation.id)
    assert isinstance(fetched, ResponseFunctionToolCallOutputItem) and fetched.call_id == call.call_id
    ai.conversations.items.delete(items[2].id, conversation_id=conversation.id)
    assert kinds(standin, conversation.id) == ["message", "function_call", "message"]


def test_a_conversation_holding_an_unanswered_call_refuses_every_request(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    call = asked(ai, standin, url, conversation.id).output[0]

    for given in ("anything else?", [{"role": "user", "content": "hello?"}]):
        with pytest.raises(openai.BadRequestError) as refused:
            ai.responses.create(model=MODEL, conversation=conversation.id, input=given, tools=[LOOKUP])
        assert refused.value.body == {
            "message": f"No tool output found for function call {call.call_id}.",
            "type": "invalid_request_error",
            "param": "input",
            "code": None,
        }
    assert kinds(standin, conversation.id) == ["message", "function_call"]  # nothing done
    assert [c["status"] for c in standin.calls] == [200, 400, 400]

    closed = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input=[output(call.call_id, "lookup failed"), {"role": "user", "content": "and now?"}],
    )
    assert closed.output_text == "You said: and now?\nTool said: lookup failed"


def test_an_output_that_answers_no_open_call_is_refused(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    with pytest.raises(openai.BadRequestError) as orphan:
        ai.responses.create(model=MODEL, conversation=conversation.id, input=[output("call_nope", "x")])
    assert orphan.value.body == {
        "message": "No tool call found for function call output with call_id call_nope.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }
    call = asked(ai, standin, url, conversation.id).output[0]
    ai.responses.create(model=MODEL, conversation=conversation.id, input=[output(call.call_id, "done")])

    with pytest.raises(openai.BadRequestError) as twice:  # that call has its output already
        ai.responses.create(model=MODEL, conversation=conversation.id, input=[output(call.call_id, "again")])

    assert twice.value.body["message"] == (
        f"No tool call found for function call output with call_id {call.call_id}."
    )
    assert kinds(standin, conversation.id) == ["message", "function_call", "function_call_output", "message"]


def test_a_queued_call_waits_for_a_request_that_offers_its_tool(ai, openai_standin):
    standin, url = openai_standin
    queue(url, {"name": "lookup_order", "arguments": {"order": "1"}})
    forced_other = {"type": "function", "name": "track_parcel"}

    for create in (
        {},
        {"tools": [TRACK]},
        {"tools": [LOOKUP], "tool_choice": "none"},
        {"tools": [LOOKUP, TRACK], "tool_choice": forced_other},
    ):
        answered = ai.responses.create(model=MODEL, input="hi", **create)
        assert answered.output_text == "You said: hi", create
    forced = ai.responses.create(
        model=MODEL,
        input="hi",
        tools=[TRACK, LOOKUP],
        tool_choice={"type": "function", "name": "lookup_order"},
    )

    assert [(o.type, o.name) for o in forced.output] == [("function_call", "lookup_order")]
    assert forced.tool_choice.name == "lookup_order"
    assert [c["tool_choice"] for c in standin.calls][2:] == [
        "none",
        forced_other,
        {"type": "function", "name": "lookup_order"},
    ]


def test_several_calls_in_one_response_each_need_their_output(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    both = [
        {"name": "lookup_order", "arguments": {"order": "7"}},
        {"name": "track_parcel", "arguments": "{}"},
    ]
    assert queue(url, {"calls": both}) == {"queued": 1}
    waiting = ai.responses.create(model=MODEL, conversation=conversation.id, input="x", tools=[LOOKUP])
    assert waiting.output_text == "You said: x"  # not every tool of the group is offered

    one_at_a_time = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="y", tools=[LOOKUP, TRACK], parallel_tool_calls=False
    )
    assert one_at_a_time.output_text == "You said: y" and one_at_a_time.parallel_tool_calls is False

    first, second = ai.responses.create(
        model=MODEL, conversation=conversation.id, input="7?", tools=[LOOKUP, TRACK], tool_choice="required"
    ).output

    assert (first.name, second.name, second.arguments) == ("lookup_order", "track_parcel", "{}")
    with pytest.raises(openai.BadRequestError) as half:
        ai.responses.create(model=MODEL, conversation=conversation.id, input=[output(first.call_id, "a")])
    assert half.value.body["message"] == f"No tool output found for function call {second.call_id}."
    done = ai.responses.create(
        model=MODEL,
        conversation=conversation.id,
        input=[output(second.call_id, "in transit"), output(first.call_id, "paid")],
    )
    assert done.output_text == "Tool said: in transit\nTool said: paid"


def test_reset_forgets_the_queued_calls(ai, openai_standin):
    standin, url = openai_standin
    queue(url, {"name": "lookup_order", "arguments": {"order": "1"}})
    assert requests.get(f"{url}/_control/tool_calls", timeout=2).json() == {
        "tool_calls": [[{"name": "lookup_order", "arguments": {"order": "1"}}]]
    }
    requests.post(f"{url}/_control/reset", timeout=2).raise_for_status()

    assert ai.responses.create(model=MODEL, input="hi", tools=[LOOKUP]).output_text == "You said: hi"


def test_a_call_can_be_answered_after_its_previous_response(ai, openai_standin):
    _, url = openai_standin
    queue(url, {"name": "lookup_order", "arguments": {"order": "9"}})
    first = ai.responses.create(model=MODEL, input="9?", tools=[LOOKUP])
    call = first.output[0]

    with pytest.raises(openai.BadRequestError) as unanswered:
        ai.responses.create(model=MODEL, previous_response_id=first.id, input="well?")
    answered = ai.responses.create(
        model=MODEL, previous_response_id=first.id, input=[output(call.call_id, "found")]
    )
    with pytest.raises(openai.BadRequestError) as unknown:
        ai.responses.create(model=MODEL, previous_response_id="resp_unknown", input="hi")

    assert unanswered.value.body["message"] == f"No tool output found for function call {call.call_id}."
    assert answered.output_text == "Tool said: found"
    assert unknown.value.code == "previous_response_not_found"
    assert unknown.value.body["message"] == "Previous response with id 'resp_unknown' not found."


@pytest.mark.parametrize(
    ("fault", "error"),
    [({"status": 503}, openai.InternalServerError), ({"status": 429}, openai.RateLimitError)],
)
def test_a_tool_round_can_be_refused_by_a_fault_and_nothing_is_done(ai, openai_standin, fault, error):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    call = asked(ai, standin, url, conversation.id).output[0]
    standin.inject(fault)

    with pytest.raises(error):
        ai.responses.create(model=MODEL, conversation=conversation.id, input=[output(call.call_id, "ok")])

    assert kinds(standin, conversation.id) == ["message", "function_call"]
    again = ai.responses.create(model=MODEL, conversation=conversation.id, input=[output(call.call_id, "ok")])
    assert again.output_text == "Tool said: ok"


def test_a_tool_round_that_outlives_its_client_still_adds_its_items(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    standin.inject({"delay": 0.5})
    with pytest.raises(openai.APITimeoutError):  # the call is asked for after the client left
        asked(ai.with_options(timeout=0.2), standin, url, conversation.id)
    wait_until(lambda: kinds(standin, conversation.id) == ["message", "function_call"])
    call_id = standin.conversation_items(conversation.id)[1]["call_id"]
    standin.inject({"delay": 0.5})

    with pytest.raises(openai.APITimeoutError):
        ai.with_options(timeout=0.2).responses.create(
            model=MODEL, conversation=conversation.id, input=[output(call_id, "late")]
        )

    wait_until(lambda: len(standin.conversation_items(conversation.id)) == 4)
    reply = standin.conversation_items(conversation.id)[3]
    assert kinds(standin, conversation.id)[2] == "function_call_output"
    assert reply["content"][0]["text"] == "Tool said: late"


def test_a_tool_round_that_fails_after_acceptance_leaves_the_call_open(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    call = asked(ai, standin, url, conversation.id).output[0]
    standin.inject({"fail": "server_error", "delay": 0.1})

    created = ai.responses.create(
        model=MODEL, conversation=conversation.id, input=[output(call.call_id, "x")], background=True
    )

    failed = wait_until(lambda: (r := ai.responses.retrieve(created.id)).status == "failed" and r)
    assert failed.error.code == "server_error"
    assert kinds(standin, conversation.id) == ["message", "function_call"]
    with pytest.raises(openai.BadRequestError):
        ai.responses.create(model=MODEL, conversation=conversation.id, input="still open?")


def test_a_call_queued_for_a_response_that_fails_waits_for_the_next_one(ai, openai_standin):
    standin, url = openai_standin
    standin.inject({"fail": "server_error"})
    queue(url, {"name": "lookup_order", "arguments": {"order": "3"}})

    created = ai.responses.create(model=MODEL, input="3?", tools=[LOOKUP], background=True)
    wait_until(lambda: ai.responses.retrieve(created.id).status == "failed")
    retried = ai.responses.create(model=MODEL, input="3?", tools=[LOOKUP])

    assert [o.type for o in retried.output] == ["function_call"]
