"""What makes two tool calls the same call (the claim's key and the Idempotency-Key)."""

from __future__ import annotations

import json

from functions.assistant.rules import tools


def test_the_same_arguments_in_another_order_are_the_same_call():
    first = tools.call_key("AC1", "c1", "SM1", "lookup_order", {"order": "12345", "email": "a@b.c"})
    again = tools.call_key("AC1", "c1", "SM1", "lookup_order", {"email": "a@b.c", "order": "12345"})
    assert first == again and len(first) == 32


def test_another_batch_tool_conversation_tenant_or_argument_is_another_call():
    key = tools.call_key("AC1", "c1", "SM1", "lookup_order", {"order": "12345"})
    others = [
        tools.call_key("AC1", "c1", "SM2", "lookup_order", {"order": "12345"}),
        tools.call_key("AC1", "c1", "SM1", "cancel_order", {"order": "12345"}),
        tools.call_key("AC1", "c2", "SM1", "lookup_order", {"order": "12345"}),
        tools.call_key("AC2", "c1", "SM1", "lookup_order", {"order": "12345"}),
        tools.call_key("AC1", "c1", "SM1", "lookup_order", {"order": "12346"}),
    ]
    assert key not in others and len(set(others)) == len(others)


def test_arguments_that_are_no_json_object_are_none():
    assert tools.arguments_of('{"order": "1"}') == {"order": "1"}
    assert tools.arguments_of("[1, 2]") is None
    assert tools.arguments_of("{not json") is None


def test_the_body_names_the_call_and_the_conversation_not_the_person():
    body = json.loads(tools.request_body("lookup_order", {"order": "1"}, "call_1", "c123"))
    assert body == {
        "name": "lookup_order",
        "arguments": {"order": "1"},
        "call_id": "call_1",
        "conversation": "c123",
    }


KEYWORDS = ("yes", "ok", "go ahead", "sí")


def test_a_short_yes_confirms_and_anything_that_holds_it_back_does_not():
    for text in ("yes", "Yes!", "ok, go ahead", "yes please", "Sí"):
        assert tools.said_yes(text, KEYWORDS), text
    for text in ("no", "yes but not that one", "wait", "don't", "what will it cost?", "", "yessir"):
        assert not tools.said_yes(text, KEYWORDS), text
    assert not tools.said_yes("yes " + "and some more words " * 3, KEYWORDS)  # long: a message, no yes


def test_a_proposal_and_its_confirmation_share_a_key_across_batches():
    first = tools.confirmation_key("AC1", "c1", "cancel_order", {"order": "1"})
    assert first == tools.confirmation_key("AC1", "c1", "cancel_order", {"order": "1"})
    assert first != tools.confirmation_key("AC1", "c1", "cancel_order", {"order": "2"})
    assert first.startswith("confirm#")
