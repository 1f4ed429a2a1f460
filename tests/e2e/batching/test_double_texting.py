"""Double texting, end to end over HTTP: a fragment sent while the reply is being
generated (the OpenAI stand-in slowed through its /_control API) is answered in that reply
with `on_newer: merge` (the default), and in a second reply with `on_newer: next`."""

from __future__ import annotations

import time

import pytest

from functions.guards import usage_counters
from tests.support.local_stack import Harness

pytestmark = pytest.mark.e2e


def _user_turns_in_openai(harness: Harness, conversation_id: str) -> list[str]:
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    items = harness.stack.openai.conversation_items(openai_conversation)
    return [part["text"] for item in items if item.get("role") == "user" for part in item["content"]]


def test_a_fragment_sent_while_the_reply_is_generated_is_answered_in_that_reply(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", ON_NEWER="merge")
    user = harness.new_user()

    conversation_id = harness.send_while_generating(user, "Hey", "Order #12345")
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: Hey\nOrder #12345"]
    assert _user_turns_in_openai(harness, conversation_id) == ["Hey\nOrder #12345"]
    entered = harness.states_entered(runs[0]["executionArn"])
    assert entered.count("Answer Again With Newer Fragments") == 1
    assert entered.count("Generate Reply") == 2
    hour = int(time.time()) // 3600  # the cost limits count both AI calls, the discarded one too
    assert usage_counters.calls(f"conversation#{conversation_id}#{hour}") == 2
    staged = harness.staged(conversation_id)  # both answered, nothing left for a next window
    assert len(staged) == 2 and not [item for item in staged if "pending_since" in item]


def test_with_on_newer_next_the_fragment_gets_a_second_reply_as_before(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", ON_NEWER="next")
    user = harness.new_user()

    conversation_id = harness.send_while_generating(user, "Hey", "Order #12345")
    runs = harness.wait_until_quiet(conversation_id, runs=2)

    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: Hey", "You said: Order #12345"]
    assert _user_turns_in_openai(harness, conversation_id) == ["Hey", "Order #12345"]
    assert "Answer Again With Newer Fragments" not in harness.states_entered(runs[0]["executionArn"])


def test_max_regenerations_bounds_the_replies_discarded_in_a_run(harness, configure):
    """The run counts each discarded reply ("Answer Again With Newer Fragments" adds one to
    `$.regenerations`) and Generate Reply reads the count: with MAX_REGENERATIONS=1, a
    fragment sent while the second reply is generated no longer discards it, and gets the
    next window's reply."""
    configure(BATCH_WINDOW_SECONDS="1", ON_NEWER="merge", MAX_REGENERATIONS="1")
    user = harness.new_user()
    harness.stack.openai.inject({"delay": 3})  # the first reply is slow; the second one too:

    conversation_id = harness.send_while_generating(user, "Hey", "Order #12345")
    deadline = time.monotonic() + 30
    while len(harness.ai_inputs(conversation_id)) < 2:  # the batch is asked again, with the newer one
        assert time.monotonic() < deadline, "the reply was never asked for again"
        time.sleep(0.05)
    assert harness.send(user, "Thanks").status_code == 200
    runs = harness.wait_until_quiet(conversation_id, runs=2)

    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: Hey\nOrder #12345", "You said: Thanks"]
    entered = harness.states_entered(runs[0]["executionArn"])
    assert (entered.count("Answer Again With Newer Fragments"), entered.count("Generate Reply")) == (1, 2)
