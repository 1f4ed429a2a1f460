"""What `POST /v1/responses` of the OpenAI stand-in checks in `metadata`, `safety_identifier`,
`tools` and `tool_choice`, through the real `openai` SDK, with OpenAI's error bodies; and
what `GET /_control/calls` records of them."""

from __future__ import annotations

import openai
import pytest
import requests

from functions.answer.openai_models import DEFAULT_MODEL as MODEL

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "description": "Find an order by its number.",
    "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
    "strict": False,
}


def test_a_request_records_its_tools_choice_metadata_and_safety_identifier(ai, openai_standin):
    _, url = openai_standin
    sixteen = {f"k{n}": "v" * 512 for n in range(15)} | {"x" * 64: "v"}  # every limit reached

    response = ai.responses.create(
        model=MODEL,
        input="hi",
        tools=[LOOKUP, {"type": "web_search"}],  # another tool type: taken and ignored
        tool_choice="required",
        metadata=sixteen,
        safety_identifier="s" * 64,
    )

    assert response.status == "completed" and response.metadata == sixteen
    assert response.safety_identifier == "s" * 64 and response.tool_choice == "required"
    (call,) = requests.get(f"{url}/_control/calls", timeout=2).json()["calls"]
    assert call["tools"] == ["lookup_order", "web_search"] and call["tool_choice"] == "required"
    assert call["metadata"] == sixteen and call["safety_identifier"] == "s" * 64


@pytest.mark.parametrize(
    ("create", "param", "code", "message"),
    [
        (
            {"metadata": {f"k{n}": "v" for n in range(17)}},
            "metadata",
            "object_above_max_properties",
            "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, "
            "but got an object with 17 properties instead.",
        ),
        (
            {"metadata": {"k" * 65: "v"}},
            "metadata." + "k" * 65,
            "property_name_above_max_length",
            "Invalid property name in 'metadata': '" + "k" * 65 + "' is too long. Expected a string "
            "with maximum length 64, but got a string with length 65 instead.",
        ),
        (
            {"metadata": {"k": "v" * 513}},
            "metadata.k",
            "string_above_max_length",
            "Invalid 'metadata.k': string too long. Expected a string with maximum length 512, "
            "but got a string with length 513 instead.",
        ),
        (
            {"metadata": {"k": 7}},
            "metadata.k",
            "invalid_type",
            "Invalid type for 'metadata.k': expected a string, but got an integer instead.",
        ),
        (
            {"safety_identifier": "s" * 65},
            "safety_identifier",
            "string_above_max_length",
            "Invalid 'safety_identifier': string too long. Expected a string with maximum length 64, "
            "but got a string with length 65 instead.",
        ),
        (
            {"tools": [{**LOOKUP, "name": "orders.lookup"}]},
            "tools[0].name",
            "invalid_value",
            "Invalid 'tools[0].name': string does not match pattern. Expected a string that matches "
            "the pattern '^[a-zA-Z0-9_-]+$'.",
        ),
        (
            {"tool_choice": "sometimes"},
            "tool_choice",
            "invalid_value",
            "Invalid value: 'sometimes'. Supported values are: 'none', 'auto', and 'required'.",
        ),
    ],
)
def test_a_request_over_a_limit_is_refused_as_openai_refuses_it(
    ai, openai_standin, create, param, code, message
):
    standin, _ = openai_standin
    conversation = ai.conversations.create()

    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(model=MODEL, conversation=conversation.id, input="hi", **create)

    assert refused.value.body == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }
    assert standin.conversation_items(conversation.id) == []  # nothing done
    assert standin.calls[0]["status"] == 400


def test_a_forced_function_must_be_among_the_tools(ai):
    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(
            model=MODEL,
            input="hi",
            tools=[LOOKUP],
            tool_choice={"type": "function", "name": "track_parcel"},
        )
    assert refused.value.body["param"] == "tool_choice"


def test_the_tool_calls_control_call_checks_what_it_queues(openai_standin):
    _, url = openai_standin
    for body in ({}, {"name": "orders.lookup"}, {"calls": []}, {"name": "x", "arguments": [1]}):
        answer = requests.post(f"{url}/_control/tool_calls", json=body, timeout=2)
        assert answer.status_code == 400, body
    queued = requests.post(f"{url}/_control/tool_calls", json={"name": "lookup_order"}, timeout=2).json()
    assert queued == {"queued": 1}
    assert requests.get(f"{url}/_control/tool_calls", timeout=2).json() == {
        "tool_calls": [[{"name": "lookup_order", "arguments": {}}]]
    }
