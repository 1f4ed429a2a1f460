"""One Twilio message per reply part, on the emulator against the Twilio stand-in, when an
attempt's answer is lost after Twilio accepted the part: a create that answers after the
client's timeout, or a task that dies before recording what Twilio accepted."""

from __future__ import annotations

import pytest

from functions.answer import turns
from infra.local.lambdas import LambdaTimedOut

pytestmark = pytest.mark.emulator

THREE_PARTS = " ".join(f"w{i:04d}" for i in range(700))  # the stand-in's reply is three parts


def _sent_to(harness, user: str) -> list[dict]:
    return [m for m in harness.stack.twilio.messages if m["to"] == user]


def _recorded(conversation_id: str) -> list[str]:
    (assistant,) = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    return assistant.message_sids


def _failure_causes(harness, execution_arn: str) -> list[str]:
    """Why each failed task attempt failed (its error's message), in order."""
    return [
        e["taskFailedEventDetails"].get("cause", "")
        for e in harness.history(execution_arn)
        if e["type"] == "TaskFailed"
    ]


def test_a_reply_accepted_after_the_clients_timeout_is_sent_once(harness, configure):
    configure(TWILIO_TIMEOUT_SECONDS="0.5")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["are you there?"])
    harness.stack.twilio.inject({"delay": 1.5})  # accepted at once, answered after 1.5 s

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]  # the timeout
    assert harness.replies_to(user) == ["You said: are you there?"]
    assert _recorded(conversation_id) == [m["sid"] for m in _sent_to(harness, user)]


def test_a_middle_part_accepted_after_the_timeout_is_sent_once_and_the_rest_in_order(harness, configure):
    configure(TWILIO_TIMEOUT_SECONDS="0.5")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [THREE_PARTS])
    harness.stack.twilio.inject({}, {"delay": 1.5})  # part 2: accepted at once, answered after 1.5 s

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    # The client gave up on part 2 before its answer: one attempt failed, on a timeout.
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]
    assert "Timeout" in _failure_causes(harness, run["executionArn"])[0]
    parts = harness.replies_to(user)
    assert len(parts) == 3 and " ".join(parts) == "You said: " + THREE_PARTS
    assert _recorded(conversation_id) == [m["sid"] for m in _sent_to(harness, user)]
    # The part kept is the one the stand-in accepted with the late answer, not a new one.
    creates = [c for c in harness.stack.twilio.calls if c["to"] == user]
    assert [c["fault"] for c in creates] == [None, {"delay": 1.5}, None]
    assert [c["sid"] for c in creates] == _recorded(conversation_id)


def test_a_task_that_dies_after_twilio_accepted_a_part_does_not_send_it_again(harness, monkeypatch):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [THREE_PARTS])
    record = turns.append_sent_part
    died: list[int] = []

    def dies_once_before_recording_part_two(conversation, turn, index, sid, accepted_at):
        if index == 1 and not died:
            died.append(index)
            raise LambdaTimedOut("stopped after Twilio accepted part 2")
        record(conversation, turn, index, sid, accepted_at)

    monkeypatch.setattr(turns, "append_sent_part", dies_once_before_recording_part_two)

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED" and died == [1]
    assert harness.failures_in(run["executionArn"]) == ["Sandbox.Timedout"]
    parts = harness.replies_to(user)
    assert len(parts) == 3 and " ".join(parts) == "You said: " + THREE_PARTS
    assert _recorded(conversation_id) == [m["sid"] for m in _sent_to(harness, user)]


def test_a_fallback_reply_accepted_after_the_clients_timeout_is_sent_once(harness, configure):
    configure(TWILIO_TIMEOUT_SECONDS="0.5")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?"])
    harness.stack.openai.inject({"status": 400, "code": "invalid_prompt"})  # refused for good
    harness.stack.twilio.inject({"delay": 1.5})  # the fallback: accepted, answered too late

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AIPermanentError"
    (fallback,) = _sent_to(harness, user)
    (user_turn,) = turns.list_of(conversation_id)
    assert user_turn.fallback_message_sid == fallback["sid"]
