"""End to end over HTTP: signed Twilio webhooks into the local gateway, replies out of the
Twilio stand-in, with a 1-second batch window."""

from __future__ import annotations

import hashlib
import time

import pytest
from twilio.rest import Client

from functions.intake.inbound import Channel, address_key
from infra.local.webhooks import inbound_form, new_message_sid, post_webhook, sign
from tests.support.local_stack import BATCH_WINDOW_SECONDS, OUR_SMS, OUR_WHATSAPP

pytestmark = pytest.mark.e2e


def test_three_fragments_within_the_window_get_one_reply(harness, configure):
    configure(BATCH_WINDOW_SECONDS="2")  # three sends fit in it even on a slow machine
    user = harness.new_user()
    for fragment in ["Hey", "I have a question about my order", "Order #12345"]:
        response = harness.send(user, fragment)
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/xml")
        assert response.text.endswith("<Response/>")

    conversation_id = harness.conversation_of(user).conversation_id
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == ["Hey\nI have a question about my order\nOrder #12345"]
    assert harness.replies_to(user) == ["You said: Hey\nI have a question about my order\nOrder #12345"]


def test_a_bursts_runs_are_named_by_an_id_that_gives_away_no_number(harness, configure):
    """Execution names carry the conversation id, which is keyed
    (functions/tenancy/id_key.py): no run's name holds the person's digits or the unkeyed
    hash of the addresses that anyone could compute from a phone number."""
    configure(BATCH_WINDOW_SECONDS="2")
    user = harness.new_user()
    for fragment in ["Hi", "call me back", "please"]:
        assert harness.send(user, fragment).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    runs = harness.wait_until_quiet(conversation_id, runs=1)

    tenant, digits = harness.stack.config.twilio_account_sid, user.removeprefix("whatsapp:+")
    addresses = address_key(Channel.WHATSAPP, user, OUR_WHATSAPP)
    unkeyed = "c" + hashlib.sha256(f"{tenant}#{addresses}".encode()).hexdigest()[:24]
    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert conversation_id != unkeyed and len(conversation_id) == len(unkeyed)
    assert runs[0]["name"].startswith(conversation_id + "-")  # the keyed id names the run
    names = [r["name"] for r in harness.all_runs()]
    assert [n for n in names if digits in n or unkeyed in n] == []


def test_two_bursts_further_apart_than_the_window_get_two_replies(harness):
    user = harness.new_user()
    harness.send(user, "first burst")
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    time.sleep(BATCH_WINDOW_SECONDS)
    harness.send(user, "second burst")

    runs = harness.wait_until_quiet(conversation_id, runs=2)

    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == ["first burst", "second burst"]
    assert harness.replies_to(user) == ["You said: first burst", "You said: second burst"]


def test_the_same_message_sid_twice_is_staged_once(harness):
    user = harness.new_user()
    sid = new_message_sid()
    assert harness.send(user, "only once", message_sid=sid).status_code == 200
    assert harness.send(user, "only once", message_sid=sid).status_code == 200

    conversation_id = harness.conversation_of(user).conversation_id
    assert [i["message_sid"]["S"] for i in harness.staged(conversation_id)] == [sid]
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.ai_inputs(conversation_id) == ["only once"]
    assert harness.replies_to(user) == ["You said: only once"]


def test_a_forged_signature_is_refused_and_nothing_is_staged(harness):
    user = harness.new_user()
    config = harness.stack.config
    form = inbound_form("let me in", user, OUR_WHATSAPP, config.twilio_account_sid)

    forged = post_webhook(harness.stack.whatsapp_url, form, "not-the-auth-token")
    unsigned = post_webhook(harness.stack.whatsapp_url, form, None)
    other_url = post_webhook(
        harness.stack.whatsapp_url,
        form,
        None,
        signature=sign("https://elsewhere.example/whatsapp", form, config.twilio_auth_token),
    )

    assert [r.status_code for r in (forged, unsigned, other_url)] == [403, 403, 403]
    assert harness.conversation_of(user) is None


def test_an_sms_is_answered_on_the_sms_channel(harness):
    user = f"+1555{int(time.time() * 1000) % 10**7:07d}"
    config = harness.stack.config
    form = inbound_form("sms hello", user, OUR_SMS, config.twilio_account_sid)
    assert post_webhook(harness.stack.sms_url, form, config.twilio_auth_token).status_code == 200

    conversation = harness.conversation_of(user, OUR_SMS)
    harness.wait_until_quiet(conversation.conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: sms hello"]


def test_sent_replies_can_be_listed_with_the_twilio_sdk(harness):
    user = harness.new_user()
    harness.send(user, "list me")
    harness.wait_until_quiet(harness.conversation_of(user).conversation_id, runs=1)

    config = harness.stack.config
    client = Client(config.twilio_account_sid, config.twilio_auth_token)
    client.api.base_url = harness.stack.twilio_url
    listed = [m for m in client.messages.list() if m.to == user]

    assert [m.body for m in listed] == ["You said: list me"]
    assert listed[0].from_ == OUR_WHATSAPP
