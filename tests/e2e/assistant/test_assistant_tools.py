"""End to end over HTTP: a tenant's assistant profile with a function tool served by the
business (a loopback endpoint the test runs), the OpenAI stand-in told to call it. Each call
is made once, whatever times out or is retried; the reply carries the endpoint's answer."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from functions.answer import turns
from functions.assistant import tool_endpoints
from tests.support.shop import Shop
from tests.support.tool_endpoint import ToolEndpoint

pytestmark = pytest.mark.e2e

ORDER = {
    "type": "object",
    "properties": {"order": {"type": "string"}},
    "required": ["order"],
    "additionalProperties": False,
}


@pytest.fixture
def endpoint() -> Iterator[ToolEndpoint]:
    served = ToolEndpoint(answer=b'{"order": "12345", "status": "shipped Monday"}')
    yield served
    served.close()


def _profile(endpoint: ToolEndpoint, name: str, **tool: Any) -> dict[str, Any]:
    return {
        "instructions": "You are Example Shop's assistant. Look orders up before answering.",
        "tools": [
            {
                "type": "function",
                "name": name,
                "description": "Where an order is",
                "parameters": ORDER,
                "url": endpoint.url,
                **tool,
            }
        ],
    }


def _items(harness: Any, conversation_id: str) -> list[dict[str, Any]]:
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    control = (
        f"{(harness.stack.openai_url or '').removesuffix('/v1')}/_control/conversations/{openai_conversation}"
    )
    found = requests.get(control, timeout=5).json()
    return list(found.get("items", found.get("data", [])))


def _tool_name() -> str:
    return "lookup_order_" + os.urandom(3).hex()  # the stand-in's queued call is for this test's tool


def test_the_order_burst_gets_one_reply_carrying_the_endpoints_answer(harness, endpoint, tmp_path):
    shop, tool = Shop(harness), _tool_name()
    put = shop.put_profile(tmp_path, _profile(endpoint, tool))
    assert put.returncode == 0, put.stderr
    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "12345"}})
    user = harness.new_user()

    for fragment in ["hi", "I have a question about my order", "order #12345, it hasn't arrived"]:
        shop.send(user, fragment)
    conversation_id = shop.conversation_id(user)
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.replies_to(user) == ['Tool said: {"order": "12345", "status": "shipped Monday"}']
    [call] = endpoint.received
    assert json.loads(call["body"])["arguments"] == {"order": "12345"}
    assert json.loads(call["body"])["conversation"] == conversation_id
    assert len(call["headers"]["Idempotency-Key"]) == 32
    signed = "sha256=" + hmac.new(shop.signing_key().encode(), call["body"], hashlib.sha256).hexdigest()
    assert hmac.compare_digest(call["headers"][tool_endpoints.SIGNATURE_HEADER], signed)
    kinds = [
        item["type"] if item["type"] != "message" else item["role"]
        for item in _items(harness, conversation_id)
    ]
    assert kinds == ["user", "function_call", "function_call_output", "assistant"]
    states = harness.states_entered(runs[0]["executionArn"])
    assert states.count("Call Tools") == 1 and states.count("Generate Reply") == 2
    [answer] = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    assert answer.tools_called == [tool] and len(answer.response_ids) == 2  # each round's, for a forget
    assert answer.response_id == answer.response_ids[-1]
    requests_made = [c for c in harness.stack.openai.calls if c.get("tools")]
    assert {c["metadata"]["tenant"] for c in requests_made} == {shop.account_sid}
    assert all(c["safety_identifier"] and user[-7:] not in c["safety_identifier"] for c in requests_made)


def test_a_call_with_side_effects_that_times_out_is_made_once_and_the_person_gets_one_reply(
    harness, endpoint, tmp_path
):
    shop, tool = Shop(harness), _tool_name()
    endpoint.delay = 2.5  # past the profile's tool_timeout_seconds
    profile = {**_profile(endpoint, tool, side_effects=True), "tool_timeout_seconds": 1}
    assert shop.put_profile(tmp_path, profile).returncode == 0
    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "12345"}})
    user = harness.new_user()

    shop.send(user, "cancel order 12345 please")
    conversation_id = shop.conversation_id(user)
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert len(endpoint.received) == 1
    [reply] = harness.replies_to(user)
    assert "outcome unknown" in reply


def test_a_generate_reply_attempt_that_fails_after_a_tool_round_does_not_make_the_call_again(
    harness, endpoint, tmp_path
):
    shop, tool = Shop(harness), _tool_name()
    assert shop.put_profile(tmp_path, _profile(endpoint, tool)).returncode == 0
    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "777"}})
    # The first request passes; the one with the tool's output times out twice (outcome
    # unknown: its output may be in the conversation), then is answered.
    harness.stack.openai.inject({}, {"status": 503}, {"status": 503})
    user = harness.new_user()

    shop.send(user, "where is order 777")
    conversation_id = shop.conversation_id(user)
    runs = harness.wait_until_quiet(conversation_id, runs=1, timeout=90)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert len(endpoint.received) == 1
    assert harness.replies_to(user) == ['Tool said: {"order": "12345", "status": "shipped Monday"}']
    kinds = [item["type"] for item in _items(harness, conversation_id)]
    assert kinds.count("function_call_output") == 1 and kinds.count("function_call") == 1


def test_a_customer_of_a_tenant_without_the_profile_is_offered_no_tool(harness, endpoint, tmp_path):
    shop, tool = Shop(harness), _tool_name()
    assert shop.put_profile(tmp_path, _profile(endpoint, tool)).returncode == 0
    other = Shop(harness)  # no profile
    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "1"}})
    user = harness.new_user()

    other.send(user, "order #1, where is it")
    conversation_id = other.conversation_id(user)
    harness.wait_until_quiet(conversation_id, runs=1)

    assert endpoint.received == []
    assert harness.replies_to(user) == ["You said: order #1, where is it"]
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    asked = [c for c in harness.stack.openai.calls if c["conversation"] == openai_conversation]
    assert asked and all(not c.get("tools") for c in asked)


def test_a_tool_that_needs_a_yes_is_called_once_after_the_person_says_yes(harness, endpoint, tmp_path):
    shop, tool = Shop(harness), _tool_name()
    assert (
        shop.put_profile(tmp_path, _profile(endpoint, tool, side_effects=True, confirm=True)).returncode == 0
    )
    user = harness.new_user()

    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "12345"}})
    shop.send(user, "please refund order 12345")
    conversation_id = shop.conversation_id(user)
    harness.wait_until_quiet(conversation_id, runs=1)
    [proposal] = harness.replies_to(user)
    assert endpoint.received == [] and "needs the person's yes" in proposal

    harness.stack.openai.queue_tool_calls({"name": tool, "arguments": {"order": "12345"}})
    shop.send(user, "yes")
    runs = harness.wait_until_quiet(conversation_id, runs=2)

    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert len(endpoint.received) == 1
    assert harness.replies_to(user)[1] == 'Tool said: {"order": "12345", "status": "shipped Monday"}'
