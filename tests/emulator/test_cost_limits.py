"""Cost limits on the emulator: a batch stopped by a limit makes no AI call, sends nothing,
is recorded as limited, and its run ends cleanly (SUCCEEDED, lock released, window closed,
messages not left to be retried); a long reply is cut to the parts a batch may send. And
what reaches the model: user text without control or bidi-override characters."""

from __future__ import annotations

import pytest

from functions import clock
from functions.answer import turns
from functions.guards import usage_counters
from functions.intake import staged_messages
from functions.intake.inbound import Channel, InboundMessage
from functions.tenancy import conversations
from infra.local.webhooks import inbound_form

pytestmark = pytest.mark.emulator


def _answer(harness, conversation_id: str) -> dict:
    run = harness.wait_for_run(harness.start_run(conversation_id))
    assert run["status"] == "SUCCEEDED", harness.failures_in(run["executionArn"])
    return run


def _stage(harness, conversation_id: str, user: str, our_address: str, body: str) -> None:
    form = inbound_form(body, user, our_address, harness.stack.config.twilio_account_sid)
    staged_messages.stage(conversation_id, InboundMessage.from_form(form), clock.iso(clock.now()))


def _user_turns(conversation_id: str) -> list:
    return [t for t in turns.list_of(conversation_id) if t.role == "user"]


def test_a_conversation_over_its_hourly_ai_calls_is_recorded_as_limited_without_an_ai_call(
    harness, configure
):
    configure(MAX_AI_CALLS_PER_HOUR_PER_CONVERSATION="1")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["first question"])
    _answer(harness, conversation_id)
    harness.stage_directly(user, ["second question"])

    run = _answer(harness, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["first question"]
    assert harness.replies_to(user) == ["You said: first question"]
    assert [t.status for t in _user_turns(conversation_id)] == ["answered", "limited"]
    limited = [t for t in turns.list_of(conversation_id) if t.role == "assistant"][-1]
    assert (limited.status, limited.limited, limited.body) == (
        "limited",
        "ai_calls_per_hour_per_conversation",
        "",
    )
    assert staged_messages.pending(conversation_id) == []  # not retried
    assert harness.window_of(conversation_id) is None
    assert "lock_owner" not in harness.conversation_item(conversation_id)
    assert "Record Failed Batch" not in harness.states_entered(run["executionArn"])


def test_a_sender_over_its_hourly_ai_calls_is_limited_across_conversations(harness, configure):
    configure(MAX_AI_CALLS_PER_HOUR_PER_SENDER="1")
    user = harness.new_user()
    first = harness.stage_directly(user, ["to the first number"])
    other_number = "whatsapp:+15550000003"
    second = conversations.create(
        Channel.WHATSAPP, user, other_number, clock.iso(clock.now()), harness.stack.config.twilio_account_sid
    ).conversation_id
    _stage(harness, second, user, other_number, "to the second number")

    _answer(harness, first)
    _answer(harness, second)

    assert harness.replies_to(user) == ["You said: to the first number"]
    assert harness.ai_inputs(second) == []
    assert [t.status for t in _user_turns(second)] == ["limited"]
    tenant, hour = harness.stack.config.twilio_account_sid, int(clock.now().timestamp()) // 3600
    assert usage_counters.calls(f"sender#{tenant}#{user}#{hour}") == 1


def test_a_reply_longer_than_the_parts_a_batch_may_send_is_cut(harness, configure):
    configure(MAX_REPLY_PARTS_PER_BATCH="2")
    user = harness.new_user()
    question = " ".join(f"Sentence {i} of a very long question about my order." for i in range(120))
    conversation_id = harness.stage_directly(user, [question])

    _answer(harness, conversation_id)

    sent = harness.replies_to(user)
    assert len(sent) == 2 and all(len(part) <= 1600 for part in sent)
    assistant = [t for t in turns.list_of(conversation_id) if t.role == "assistant"][-1]
    assert (assistant.status, assistant.limited) == ("sent", "reply_parts")


def test_the_default_limits_leave_a_normal_conversation_alone(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello"])
    _answer(harness, conversation_id)
    harness.stage_directly(user, ["and again"])
    _answer(harness, conversation_id)

    assert harness.replies_to(user) == ["You said: hello", "You said: and again"]
    assert all(t.limited is None for t in turns.list_of(conversation_id))


def test_the_model_gets_user_text_without_control_or_bidi_override_characters(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["pay \u202eusd 0001\u202c now\x07", "ok\r\nthanks"])

    _answer(harness, conversation_id)

    assert harness.ai_inputs(conversation_id) == ["pay usd 0001 now\nok\nthanks"]
    (turn,) = _user_turns(conversation_id)
    assert "\u202e" in turn.body  # the recorded turn keeps what the user sent
