"""Twilio's outbound queue, over HTTP through the local stack: Twilio keeps a message
`queued`, with no status callback, up to its ValidityPeriod, then sends it or fails it
with 30036 (infra/local/standins/twilio_queue.py). A part whose create timed out and whose
message stays queued past the wait for its receipt, while the Messages list lags, is sent
again: the person must still get it once, never the resend and the late original."""

from __future__ import annotations

import pytest

from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

QUEUED_SECONDS = 12  # past the wait for a receipt (3 s) and the run's retries of Send Reply


def _settled(messages: list[dict]) -> list[dict] | None:
    """The messages once none is still in Twilio's queue (or None)."""
    waiting = [m for m in messages if m["status"] in ("accepted", "queued")]
    return None if waiting or not messages else messages


def test_a_part_in_doubt_still_queued_after_the_wait_for_its_receipt_reaches_the_person_once(
    harness, configure
):
    configure(TWILIO_TIMEOUT_SECONDS="0.5", DELIVERY_RECEIPT_WAIT_SECONDS="3")
    harness.stack.twilio.list_lag(60)  # the list shows nothing within the run
    # Accepted at once, answered after the client's timeout, then kept queued.
    harness.stack.twilio.inject({"delay": 1.5, "queued_seconds": QUEUED_SECONDS})
    user = harness.new_user()

    assert harness.send(user, "are you there?").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]  # the timeout
    to_user = lambda: [m for m in harness.stack.twilio.messages if m["to"] == user]  # noqa: E731
    messages = wait_until(lambda: _settled(to_user()), timeout=QUEUED_SECONDS + 10)
    reached = [m["body"] for m in messages if m["status"] != "failed"]
    assert reached == ["You said: are you there?"]
    # The original left the queue unsent: Twilio failed it with 30036, as its callback said.
    expired = [m for m in messages if m["status"] == "failed"]
    assert [m["error_code"] for m in expired] == [30036]
    callbacks = harness.stack.twilio.callbacks
    assert [
        c["params"].get("ErrorCode") for c in callbacks if c["params"]["MessageSid"] == expired[0]["sid"]
    ] == ["30036"]
