"""Twilio's fine print, over HTTP through the local stack: its Messages list may show a
created message late (the part in doubt is found by its status callback, not sent
again), and Twilio limits the account's and the WhatsApp sender's rate (63018: the parts of
a reply are paced; a 63018 at create is retried with backoff, and a part reported 63018 by
status callback is sent again once, later, by the reconciler)."""

from __future__ import annotations

import pytest

from functions.answer import turns
from infra.local.lambdas import invoke
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

TWO_PARTS = " ".join(f"w{i:04d}" for i in range(330))  # the stand-in's reply is two parts


def _answered(harness, body: str) -> tuple[str, dict]:
    user = harness.new_user()
    assert harness.send(user, body).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    return user, run


def _recorded(harness, user: str) -> list[str]:
    conversation_id = harness.conversation_of(user).conversation_id
    (assistant,) = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    return assistant.message_sids


def test_a_part_accepted_after_the_timeout_that_the_list_does_not_show_yet_is_sent_once(harness, configure):
    configure(TWILIO_TIMEOUT_SECONDS="0.5", DELIVERY_RECEIPT_WAIT_SECONDS="5")
    harness.stack.twilio.list_lag(60)  # the list shows nothing within the run
    harness.stack.twilio.inject({"delay": 1.5})  # accepted at once, answered after 1.5 s

    user, run = _answered(harness, "are you there?")

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]  # the timeout
    assert harness.replies_to(user) == ["You said: are you there?"]
    sent = [m["sid"] for m in harness.stack.twilio.messages if m["to"] == user]
    assert _recorded(harness, user) == sent


def test_the_parts_of_a_reply_are_paced_within_whatsapps_rate(harness, configure):
    configure(REPLY_PART_INTERVAL_SECONDS="1")
    harness.stack.twilio.rate.set(0.8, at="create")

    user, run = _answered(harness, TWO_PARTS)

    assert run["status"] == "SUCCEEDED" and harness.failures_in(run["executionArn"]) == []
    parts = harness.replies_to(user)
    assert len(parts) == 2 and " ".join(parts) == "You said: " + TWO_PARTS


def test_63018_at_create_is_retried_with_backoff(harness, configure):
    configure(REPLY_PART_INTERVAL_SECONDS="0")
    harness.stack.twilio.rate.set(0.5, at="create")  # part 2 comes too soon: 400, 63018

    user, run = _answered(harness, TWO_PARTS)

    assert run["status"] == "SUCCEEDED"
    assert set(harness.failures_in(run["executionArn"])) == {"TwilioRetryableError"}
    parts = harness.replies_to(user)
    assert len(parts) == 2 and " ".join(parts) == "You said: " + TWO_PARTS
    assert [c["status"] for c in harness.stack.twilio.calls][:2] == [201, 400]


def test_a_part_reported_63018_by_status_callback_is_sent_again_once_later_by_the_reconciler(
    harness, configure
):
    # Part 2 goes 1 s after part 1, inside the stand-in's 1.8 s: accepted, then failed
    # 63018. That is the account's or the sender's limit, not the recipient's: a resend at
    # once would meet it again, so the callback sends nothing and keeps the part due
    # TRANSIENT_RETRY_FIRST_SECONDS later, for the reconciler.
    configure(REPLY_PART_INTERVAL_SECONDS="1", TRANSIENT_RETRY_FIRST_SECONDS="1")
    harness.stack.twilio.rate.set(1.8, at="callback")

    user, run = _answered(harness, TWO_PARTS)

    assert run["status"] == "SUCCEEDED"
    to_user = lambda: [m for m in harness.stack.twilio.messages if m["to"] == user]  # noqa: E731
    first_two = wait_until(lambda: _settled(to_user(), 2), timeout=10)
    failed = first_two[1]["sid"]
    assert (first_two[1]["status"], first_two[1]["error_code"]) == ("failed", 63018)
    wait_until(lambda: _answered_callback(harness, failed, "failed"), timeout=10)
    assert len(to_user()) == 2  # the callback has answered: it sent nothing again

    wait_until(lambda: reconcile()["parts_resent"] == 1, timeout=10, every=0.5)  # once due
    messages = wait_until(lambda: _settled(to_user(), 3), timeout=10)
    assert [(m["status"], m["error_code"]) for m in messages] == [
        ("read", None),
        ("failed", 63018),
        ("read", None),
    ]
    assert messages[1]["body"] == messages[2]["body"]  # the part, sent again
    delivered = [m["body"] for m in messages if m["status"] != "failed"]
    assert " ".join(delivered) == "You said: " + TWO_PARTS
    assert reconcile()["parts_resent"] == 0 and len(to_user()) == 3  # once only


def reconcile() -> dict:
    """One pass of the Reconciler function, as its schedule runs it (its AWS calls are
    evaluated against its role)."""
    summary, error = invoke("Reconciler", {})
    assert error is None, summary
    return summary  # type: ignore[no-any-return]


def _answered_callback(harness, sid: str, status: str) -> bool:
    """Whether the stand-in's status callback `status` for `sid` was answered 2xx."""
    return any(
        c["params"].get("MessageSid") == sid
        and c["params"].get("MessageStatus") == status
        and c["status"]
        and c["status"] < 300
        for c in harness.stack.twilio.callbacks
    )


def _settled(messages: list[dict], count: int) -> list[dict] | None:
    done = len(messages) == count and all(m["status"] in ("read", "failed") for m in messages)
    return messages if done else None
