"""Twilio's 21610, over HTTP through the local stack: the person unsubscribed from our
number (they sent STOP to Twilio), and Twilio refuses every message to them until they
opt back in (https://www.twilio.com/docs/api/errors/21610). The conversation is marked
opted out, so the bursts that follow are recorded and cost no AI call
(functions/guards/consent.py), until the person opts back in."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_a_refusal_for_an_unsubscribed_person_opts_the_conversation_out(harness):
    harness.stack.twilio.inject({"status": 400, "code": 21610})
    user = harness.new_user()

    assert harness.send(user, "hello").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    (refused,) = harness.wait_until_quiet(conversation_id, runs=1)

    assert refused["status"] == "FAILED"
    assert harness.failures_in(refused["executionArn"]) == ["TwilioPermanentError"]
    assert harness.conversation_of(user).opted_out is True
    asked = len(harness.ai_inputs(conversation_id))
    assert harness.send(user, "are you there?").status_code == 200
    _, later = harness.wait_until_quiet(conversation_id, runs=2)
    assert later["status"] == "SUCCEEDED"
    assert len(harness.ai_inputs(conversation_id)) == asked  # no AI call for a person we cannot reach
    assert harness.replies_to(user) == []
