"""Status callbacks over HTTP: every message we send carries its StatusCallback; what
Twilio reports of each reply part is kept on the turn (never a late `sent` over a
`delivered`), shown by `infra.runs show`; a failure is counted and recorded; 63016 (the
WhatsApp window closed) sends the configured template once, whatever is repeated."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import pytest
import requests

from functions.answer import turns
from functions.delivery.callback_urls import status_callback_url
from functions.entry_points import status_callback
from functions.tenancy import conversations
from infra.runs import Runs
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.twilio_delivery import deliver_as_twilio
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

TEMPLATE = "HX" + "7" * 32
MESSAGING_SERVICE = "MG" + "3" * 32


def _answered(harness, body: str = "hello") -> tuple[str, str]:
    """A user's message answered over HTTP; (user, conversation id)."""
    user = harness.new_user()
    assert harness.send(user, body).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    assert [r["status"] for r in harness.wait_until_quiet(conversation_id, runs=1)] == ["SUCCEEDED"]
    return user, conversation_id


def _assistant(conversation_id: str) -> Any:
    (turn,) = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    return turn


def _eventually(condition, timeout: float = 5.0) -> Any:
    return wait_until(condition, timeout=timeout, every=0.05)


def _callback(
    harness, conversation_id: str, window_id: str, message: str, form: dict, token: str | None = None
):
    """A status callback POSTed as Twilio does, to the URL a message was given."""
    url = status_callback_url(conversation_id, window_id, message)
    return deliver_as_twilio(url, form, token or harness.stack.config.twilio_auth_token)


def _status_form(harness, sid: str, user: str, status: str, error_code: int | None = None) -> dict[str, str]:
    form = {
        "AccountSid": harness.stack.config.twilio_account_sid,
        "ApiVersion": "2010-04-01",
        "From": OUR_WHATSAPP,
        "To": user,
        "MessageSid": sid,
        "SmsSid": sid,
        "MessageStatus": status,
        "SmsStatus": status,
    }
    return {**form, "ErrorCode": str(error_code)} if error_code else form


def test_every_part_carries_its_status_callback_and_its_latest_status_is_kept_and_shown(harness):
    user, conversation_id = _answered(harness)

    turn = _eventually(lambda: (t := _assistant(conversation_id)).deliveries and t)
    (sid,) = turn.message_sids
    _eventually(lambda: _assistant(conversation_id).deliveries[sid].status == "read")
    (sent,) = [m for m in harness.stack.twilio.messages if m["to"] == user]
    assert sent["status_callback"].endswith(
        f"/twilio/status/{conversation_id}/{turn.window_id}/0#rc=5&rp=all"
    )
    # The stand-in records a callback's answer once it has it, after our write: wait for it.
    answers = _eventually(lambda: len(harness.stack.twilio.callbacks) >= 3 and harness.stack.twilio.callbacks)
    assert [c["status"] for c in answers] == [204, 204, 204]  # sent, delivered, read
    shown = "\n".join(Runs(harness.stack.state_machine_arn, "Turns").show(turn.execution_name))
    assert f"messages {sid} (read)" in shown


def test_a_failure_reported_after_acceptance_is_recorded_counted_and_shown(harness, monkeypatch):
    counted: list[str] = []
    monkeypatch.setattr(status_callback, "count", lambda name, value=1: counted.append(name))
    harness.stack.twilio.inject({"outcome": "undelivered", "error_code": 30003, "after": 0.3})

    user, conversation_id = _answered(harness)

    _eventually(lambda: "UndeliveredReplies" in counted)
    # Counted first, then kept on the conversation: wait for that write too.
    _eventually(lambda: "last_delivery_error" in harness.conversation_item(conversation_id))
    turn = _assistant(conversation_id)
    (sid,) = turn.message_sids
    assert (turn.deliveries[sid].status, turn.deliveries[sid].error_code) == ("undelivered", 30003)
    assert harness.conversation_item(conversation_id)["last_delivery_error"]["N"] == "30003"
    shown = "\n".join(Runs(harness.stack.state_machine_arn, "Turns").show(turn.execution_name))
    assert f"messages {sid} (undelivered 30003)" in shown
    assert counted.count("UndeliveredReplies") == 1
    assert {c["status"] for c in harness.stack.twilio.callbacks} == {204}


def test_a_late_or_repeated_callback_never_replaces_a_later_status(harness, monkeypatch):
    counted: list[str] = []
    monkeypatch.setattr(status_callback, "count", lambda name, value=1: counted.append(name))
    user, conversation_id = _answered(harness)
    turn = _eventually(lambda: (t := _assistant(conversation_id)).deliveries and t)
    (sid,) = turn.message_sids
    _eventually(lambda: _assistant(conversation_id).deliveries[sid].status == "read")

    for status in ("sent", "delivered", "read"):  # late, and repeated
        answer = _callback(
            harness, conversation_id, turn.window_id, "0", _status_form(harness, sid, user, status)
        )
        assert answer.status == 204

    assert _assistant(conversation_id).deliveries[sid].status == "read"
    failed = _status_form(harness, sid, user, "failed", 30008)
    for _ in range(2):  # a failure reported twice is counted once
        assert _callback(harness, conversation_id, turn.window_id, "0", failed).status == 204
    assert counted.count("UndeliveredReplies") == 0  # `failed` ranks below `read`: a late one


def test_a_callback_not_signed_by_the_conversations_tenant_is_refused(harness):
    user, conversation_id = _answered(harness)
    turn = _assistant(conversation_id)
    (sid,) = turn.message_sids
    form = _status_form(harness, sid, user, "failed", 30008)

    assert _callback(harness, conversation_id, turn.window_id, "0", form, token="not-the-token").status == 403
    other_sid, other_token = harness.add_tenant("whatsapp:+15550009999")
    foreign = {**form, "AccountSid": other_sid, "From": "whatsapp:+15550009999"}
    harness.forget_tenants()
    # Another tenant's own signature: ignored, answered as for a conversation that does not exist.
    assert _callback(harness, conversation_id, turn.window_id, "0", foreign, token=other_token).status == 204
    kept = _assistant(conversation_id).deliveries.get(sid)  # none yet if no callback has come
    assert kept is None or kept.status != "failed"


def test_counts_in_other_scripts_digits_are_not_read_as_numbers_nor_answered_500(harness):
    """`"²".isdigit()` is true and `int("²")` raises: a count is ASCII digits or none."""
    user, conversation_id = _answered(harness)
    turn = _eventually(lambda: (t := _assistant(conversation_id)).deliveries and t)
    (sid,) = turn.message_sids
    odd_code = {**_status_form(harness, sid, user, "undelivered"), "ErrorCode": "²"}

    assert _callback(harness, conversation_id, turn.window_id, "0", odd_code).status == 204
    assert _callback(harness, conversation_id, turn.window_id, "²", odd_code).status == 204
    assert _callback(harness, conversation_id, turn.window_id, "١", odd_code).status == 204
    assert sid in _assistant(conversation_id).deliveries


def test_callbacks_signed_without_the_urls_fragment_are_taken_too(harness):
    requests.post(f"{harness.stack.twilio_url}/_control/signing", json={"url_fragment": False}, timeout=3)
    _, conversation_id = _answered(harness)

    _eventually(lambda: [d.status for d in _assistant(conversation_id).deliveries.values()] == ["read"])
    assert {c["status"] for c in harness.stack.twilio.callbacks} == {204}


def test_a_closed_window_reported_by_callback_sends_the_template_once(harness, configure):
    configure(
        WHATSAPP_TEMPLATE_CONTENT_SID=TEMPLATE,
        TWILIO_MESSAGING_SERVICE_SID=MESSAGING_SERVICE,
        REPLY_PART_INTERVAL_SECONDS="0",  # both parts before the template: the faults are theirs
    )
    words = " ".join(f"w{i:04d}" for i in range(400))  # a reply of two parts
    closed = {"outcome": "undelivered", "error_code": 63016, "after": 0.2}
    harness.stack.twilio.inject(closed, closed)  # both parts: 201 queued, then 63016

    user, conversation_id = _answered(harness, words)

    def templates() -> list[dict]:
        return [m for m in harness.stack.twilio.messages if m["to"] == user and m["content_sid"]]

    def reported() -> dict[str, tuple[str, int | None]]:
        return {d.message: (d.status, d.error_code) for d in _assistant(conversation_id).deliveries.values()}

    _eventually(
        lambda: (
            reported()
            == {"0": ("undelivered", 63016), "1": ("undelivered", 63016), "template": ("read", None)}
            and _assistant(conversation_id).template_sid  # kept by another callback's thread
        )
    )
    turn = _assistant(conversation_id)
    for index, sid in enumerate(turn.message_sids):  # Twilio repeats both parts' callbacks
        form = _status_form(harness, sid, user, "undelivered", 63016)
        assert _callback(harness, conversation_id, turn.window_id, str(index), form).status == 204
    (template,) = templates()
    assert template["content_sid"] == TEMPLATE and turn.template_sid == template["sid"]
    assert (template["messaging_service_sid"], template["from"]) == (MESSAGING_SERVICE, OUR_WHATSAPP)
    assert template["status_callback"].split("#")[0].endswith(f"/{turn.window_id}/template")
    assert harness.conversation_item(conversation_id)["last_delivery_error"]["N"] == "63016"


@pytest.mark.parametrize(
    "template_fault", [{"status": 503}, {"delay": 1.5}], ids=["template-refused-once", "template-answer-lost"]
)
def test_a_template_send_that_fails_is_retried_with_the_callback_and_sent_once(
    harness, configure, template_fault
):
    configure(
        WHATSAPP_TEMPLATE_CONTENT_SID=TEMPLATE,
        TWILIO_MESSAGING_SERVICE_SID=MESSAGING_SERVICE,
        TWILIO_TIMEOUT_SECONDS="0.5",
        DELIVERY_RECEIPT_WAIT_SECONDS="1",  # a 503 leaves the template in doubt: a short wait
    )
    harness.stack.twilio.inject({"outcome": "undelivered", "error_code": 63016, "after": 0.2}, template_fault)

    user, conversation_id = _answered(harness)

    _eventually(lambda: _assistant(conversation_id).template_sid, timeout=8)

    def closing() -> list[dict]:  # the stand-in lists a callback's attempts once all are made
        return [c for c in harness.stack.twilio.callbacks if c["params"].get("ErrorCode") == "63016"]

    _eventually(lambda: len(closing()) >= 2)
    time.sleep(1.0)  # the late answer, and any further callback
    templates = [m for m in harness.stack.twilio.messages if m["to"] == user and m["content_sid"]]
    assert [m["sid"] for m in templates] == [_assistant(conversation_id).template_sid]
    assert [c["status"] for c in closing()] == [500, 204]  # Twilio retried it: #rc=5&rp=all


def test_the_fallback_reply_carries_its_status_callback_and_is_reported_on_the_user_turn(harness):
    harness.stack.openai.inject({"status": 400, "code": "invalid_prompt"})  # refused for good
    user = harness.new_user()
    assert harness.send(user, "anyone?").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    assert [r["status"] for r in harness.wait_until_quiet(conversation_id, runs=1)] == ["FAILED"]

    (fallback,) = [m for m in harness.stack.twilio.messages if m["to"] == user]
    assert fallback["status_callback"].split("#")[0].endswith("/fallback")
    (user_turn,) = turns.list_of(conversation_id)
    _eventually(lambda: [d.status for d in turns.list_of(conversation_id)[0].deliveries.values()] == ["read"])
    assert list(turns.list_of(conversation_id)[0].deliveries) == [fallback["sid"]]
    assert user_turn.role == "user"


def test_any_conversation_id_gets_its_callbacks_taken_through_the_stage_url(harness, configure, monkeypatch):
    """A conversation id holding `:`, `+`, a space and `%`: its StatusCallback percent-encodes
    each path segment; Twilio calls it on the API's stage URL (as on execute-api), API
    Gateway hands the segments over still encoded, the handler decodes them once and checks
    the signature over the URL Twilio called: every callback answers 204 and is kept."""
    api = f"{harness.stack.gateway.url}/prod"  # the API's URL as deployed: with its stage
    configure(WEBHOOK_BASE_URL=api)
    user = harness.new_user()
    conversation_id = f"{user} at 100%25"  # `%25` too: decoded once, never twice
    monkeypatch.setattr(conversations, "new_conversation_id", lambda tenant, key: conversation_id)

    assert harness.send(user, "hello", url=f"{api}/whatsapp").status_code == 200
    assert harness.conversation_of(user).conversation_id == conversation_id
    (sent,) = _eventually(lambda: [m for m in harness.stack.twilio.messages if m["to"] == user], timeout=20)
    encoded = quote(conversation_id, safe="")
    assert "%3A%2B" in encoded and "%20" in encoded and "%2525" in encoded
    assert sent["status_callback"].startswith(f"{api}/twilio/status/{encoded}/")

    def answers() -> list[int]:
        return [c["status"] for c in harness.stack.twilio.callbacks if c["params"].get("To") == user]

    assert _eventually(lambda: len(answers()) >= 3 and answers()) == [204, 204, 204]  # sent, delivered, read
    turn = _assistant(conversation_id)
    assert [d.status for d in turn.deliveries.values()] == ["read"]
    assert list(turn.deliveries) == [sent["sid"]]
