"""The Twilio stand-in's typing indicator, `POST /v2/Indicators/Typing.json`, driven by the
real `twilio` SDK (`messaging.v2.typing_indicator`, the path Twilio's page documents) and
by the project's own request (functions/answer/twilio_typing.py)."""

from __future__ import annotations

import pytest
import requests
from twilio.base.exceptions import TwilioRestException
from twilio.http.http_client import TwilioHttpClient
from twilio.rest import Client

from functions.answer import twilio_typing
from functions.storage.tables import ALL_TABLES
from functions.tenancy.secrets import TwilioCredentials
from infra.local.webhooks import inbound_form, new_message_sid
from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN

OURS = "whatsapp:+15550000001"
USER = "whatsapp:+15557654321"


def sdk(url: str, account_sid: str = ACCOUNT_SID):
    """The SDK's typing indicator resource, its messaging host the stand-in."""
    client = Client(account_sid, AUTH_TOKEN, http_client=TwilioHttpClient(timeout=3))
    client.messaging.base_url = url
    return client.messaging.v2.typing_indicator


def test_an_indicator_is_shown_only_for_a_whatsapp_message_of_the_account_it_received(twilio_standin):
    standin, url = twilio_standin
    whatsapp, sms, never = new_message_sid(), new_message_sid(), new_message_sid()
    standin.receive(inbound_form("hi", USER, OURS, ACCOUNT_SID, whatsapp))
    standin.receive(inbound_form("hi", "+15557654321", "+15550000002", ACCOUNT_SID, sms))

    assert sdk(url).create(channel="whatsapp", message_id=whatsapp).success is True
    refusals = []
    for message_id, channel, account in (
        (never, "whatsapp", ACCOUNT_SID),  # never received
        (whatsapp, "whatsapp", "AC" + "2" * 32),  # another account's
        (sms, "whatsapp", ACCOUNT_SID),  # an SMS
        (whatsapp, "sms", ACCOUNT_SID),  # not the channel
        ("SMnot-a-sid", "whatsapp", ACCOUNT_SID),
    ):
        with pytest.raises(TwilioRestException) as refused:
            sdk(url, account).create(channel=channel, message_id=message_id)
        refusals.append(refused.value.status)

    # Twilio answers 400 for a message it holds no inbound WhatsApp record of
    # (https://github.com/twilio/twilio-python/issues/894).
    assert refusals == [400, 400, 400, 400, 400]
    listed = requests.get(f"{url}/_control/indicators", timeout=3).json()["indicators"]
    assert [(i["message_id"], i["status"]) for i in listed][:2] == [(whatsapp, 200), (never, 400)]
    standin.reset()
    assert requests.get(f"{url}/_control/indicators", timeout=3).json() == {"indicators": []}
    with pytest.raises(TwilioRestException):  # forgotten too
        sdk(url).create(channel="whatsapp", message_id=whatsapp)


def test_the_projects_request_is_the_one_twilio_documents(twilio_standin, configure):
    standin, url = twilio_standin
    tables = {t.env_var: t.logical_id for t in ALL_TABLES}
    configure(TWILIO_API_BASE_URL=url, EVENT_BUS_NAME="bus", **tables)
    sid = new_message_sid()
    standin.receive(inbound_form("hi", USER, OURS, ACCOUNT_SID, sid))
    credentials = TwilioCredentials(account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN)

    twilio_typing.show_typing(credentials, sid)
    with pytest.raises(twilio_typing.TypingIndicatorFailed, match="HTTP 400"):
        twilio_typing.show_typing(credentials, new_message_sid())

    assert [(i["message_id"], i["channel"], i["status"]) for i in standin.indicators] == [
        (sid, "whatsapp", 200),
        (standin.indicators[1]["message_id"], "whatsapp", 400),
    ]


def test_an_outbound_message_is_refused_as_an_unknown_one(sms, twilio_standin):
    standin, url = twilio_standin
    ours = sms.messages.create(from_=OURS, to=USER, body="our reply").sid  # outbound
    with pytest.raises(TwilioRestException) as refused:
        sdk(url).create(channel="whatsapp", message_id=ours)
    assert refused.value.status == 400


def test_an_answer_without_success_true_is_not_an_indicator_shown(twilio_standin, configure):
    # The resource's one field, `success` (https://www.twilio.com/docs/whatsapp/api/typing-indicators-resource).
    standin, url = twilio_standin
    tables = {t.env_var: t.logical_id for t in ALL_TABLES}
    configure(TWILIO_API_BASE_URL=url, EVENT_BUS_NAME="bus", **tables)
    sid = new_message_sid()
    standin.receive(inbound_form("hi", USER, OURS, ACCOUNT_SID, sid))
    credentials = TwilioCredentials(account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN)
    requests.post(f"{url}/_control/typing", json={"success": False}, timeout=3).raise_for_status()

    with pytest.raises(twilio_typing.TypingIndicatorFailed, match="success"):
        twilio_typing.show_typing(credentials, sid)
    assert [i["status"] for i in standin.indicators] == [200]
