"""End to end over HTTP: WhatsApp's typing indicator, as the Twilio stand-in records the
requests made to its `/v2/Indicators/Typing.json` (GET /_control/indicators)."""

from __future__ import annotations

import pytest
import requests

from infra.local.webhooks import inbound_form, new_message_sid, post_webhook
from tests.support.local_stack import OUR_SMS

pytestmark = pytest.mark.e2e


def _indicators(harness, message_ids: list[str]) -> list[dict]:
    listed = requests.get(f"{harness.stack.twilio_url}/_control/indicators", timeout=5).json()["indicators"]
    return [i for i in listed if i["message_id"] in message_ids]


def test_one_typing_indicator_per_whatsapp_burst_before_its_reply_and_none_on_sms(harness, configure):
    configure(BATCH_WINDOW_SECONDS="2", TYPING_INDICATOR="true")
    user, sms_user = harness.new_user(), harness.new_user().removeprefix("whatsapp:")
    sids, sms_sids = [new_message_sid() for _ in range(3)], [new_message_sid() for _ in range(2)]
    for sid, fragment in zip(sids, ["Hey", "my order", "has not arrived"], strict=True):
        assert harness.send(user, fragment, message_sid=sid).status_code == 200
    config = harness.stack.config
    for sid, fragment in zip(sms_sids, ["Hi", "by text"], strict=True):
        form = inbound_form(fragment, sms_user, OUR_SMS, config.twilio_account_sid, sid)
        assert post_webhook(harness.stack.sms_url, form, config.twilio_auth_token).status_code == 200

    harness.wait_until_quiet(harness.conversation_of(user).conversation_id, runs=1)
    harness.wait_until_quiet(harness.conversation_of(sms_user, OUR_SMS).conversation_id, runs=1)

    assert harness.replies_to(user) == ["You said: Hey\nmy order\nhas not arrived"]
    assert harness.replies_to(sms_user) == ["You said: Hi\nby text"]
    shown = _indicators(harness, sids + sms_sids)
    assert [(i["message_id"], i["channel"], i["status"]) for i in shown] == [(sids[-1], "whatsapp", 200)]
    reply = [c for c in harness.stack.twilio.calls if c["to"] == user]
    assert shown[0]["at"] < reply[0]["at"]


def test_a_refused_indicator_does_not_hold_the_reply_up(harness, configure):
    """A run started by hand for a message the stand-in never received: Twilio refuses
    the indicator (400), and the batch is answered all the same."""
    configure(TYPING_INDICATOR="true")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["anyone there?"])
    [sid] = [i["message_sid"]["S"] for i in harness.staged(conversation_id)]

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: anyone there?"]
    assert [i["status"] for i in _indicators(harness, [sid])] == [400]
