"""Deleting what the vendors keep of a person, in the stand-ins, through the real SDKs: Twilio
deletes a finished message (its media with it) and one media file, refuses a message it is
not done with (20009), lists the messages people sent beside ours; OpenAI deletes a stored
response, and a conversation without its items (they must be deleted first)."""

from __future__ import annotations

import openai
import pytest
import requests
from twilio.base.exceptions import TwilioRestException

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN
from tests.support.media import PHOTO
from tests.support.waiting import wait_until

OURS, USER = "+15550000001", "+15557654321"


def _received(standin, body: str, media_path: str | None = None) -> str:
    """A message from USER, as Twilio receives it before posting its webhook; its SID."""
    sid = "MM" + "a" * 30 + f"{len(standin.inbound):02d}"
    form = {"MessageSid": sid, "AccountSid": ACCOUNT_SID, "From": USER, "To": OURS, "Body": body}
    if media_path:
        form |= {"NumMedia": "1", "MediaUrl0": media_path, "MediaContentType0": "image/jpeg"}
    standin.receive(form)
    return sid


# --- Twilio -------------------------------------------------------------------------------


def test_the_messages_people_sent_are_listed_and_fetched_beside_ours(sms, twilio_standin):
    standin, _ = twilio_standin
    sid = _received(standin, "my order is late")

    (listed,) = sms.messages.list(from_=USER)
    fetched = sms.messages(sid).fetch()

    assert (listed.sid, listed.direction, listed.status, listed.body) == (
        sid,
        "inbound",
        "received",
        "my order is late",
    )
    assert fetched.to == OURS and standin.messages == []  # `.messages`: what we sent, only


def test_a_delivered_message_is_deleted_then_gone_from_the_list_and_404(sms, twilio_standin):
    standin, _ = twilio_standin
    created = sms.messages.create(from_=OURS, to=USER, body="your order ships today")
    wait_until(lambda: sms.messages(created.sid).fetch().status == "delivered")

    assert sms.messages(created.sid).delete() is True  # 204

    assert sms.messages.list(to=USER) == [] and standin.messages == []
    for again in (lambda: sms.messages(created.sid).fetch(), lambda: sms.messages(created.sid).delete()):
        with pytest.raises(TwilioRestException) as gone:
            again()
        assert (gone.value.status, gone.value.code) == (404, 20404)


def test_a_message_twilio_is_not_done_with_cannot_be_deleted_yet(sms, twilio_standin):
    standin, _ = twilio_standin
    standin.inject({"queued_seconds": 1})
    created = sms.messages.create(from_=OURS, to=USER, body="still queued")

    with pytest.raises(TwilioRestException) as refused:
        sms.messages(created.sid).delete()

    assert refused.value.code == 20009 and refused.value.status == 400
    assert [m.sid for m in sms.messages.list(to=USER)] == [created.sid]  # nothing deleted
    wait_until(lambda: sms.messages(created.sid).fetch().status == "delivered", timeout=5)
    assert sms.messages(created.sid).delete() is True


def test_a_received_message_is_deleted_with_its_media(sms, twilio_standin):
    standin, url = twilio_standin
    sid = "MM" + "b" * 32
    path = standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO, sid)
    standin.receive({"MessageSid": sid, "AccountSid": ACCOUNT_SID, "From": USER, "To": OURS, "Body": ""})

    assert sms.messages(sid).delete() is True

    fetched = requests.get(url + path, auth=(ACCOUNT_SID, AUTH_TOKEN), allow_redirects=False, timeout=3)
    assert fetched.status_code == 404 and sms.messages.list(from_=USER) == []


def test_one_media_file_is_deleted_and_its_url_answers_404(sms, twilio_standin):
    standin, url = twilio_standin
    sid = _received(standin, "see the photo")
    path = standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO, sid)
    media_sid = path.rsplit("/", 1)[1]

    assert sms.messages(sid).media(media_sid).delete() is True
    with pytest.raises(TwilioRestException) as again:
        sms.messages(sid).media(media_sid).delete()

    assert (again.value.status, again.value.code) == (404, 20404)
    fetched = requests.get(url + path, auth=(ACCOUNT_SID, AUTH_TOKEN), allow_redirects=False, timeout=3)
    assert fetched.status_code == 404
    assert [m.sid for m in sms.messages.list(from_=USER)] == [sid]  # the message itself stays


def test_a_delete_fault_refuses_one_delete_and_deletes_nothing(sms, twilio_standin):
    standin, url = twilio_standin
    sid = _received(standin, "hello")
    faults = {"faults": [{"status": 503}, {}]}
    assert requests.post(f"{url}/_control/delete_faults", json=faults, timeout=3).json() == {"queued": 2}

    with pytest.raises(TwilioRestException) as refused:
        sms.messages(sid).delete()

    assert refused.value.status == 503 and [m.sid for m in sms.messages.list(from_=USER)] == [sid]
    assert sms.messages(sid).delete() is True  # `{}`: let through


def test_another_accounts_token_deletes_nothing(twilio_standin):
    standin, url = twilio_standin
    sid = _received(standin, "mine")

    answer = requests.delete(
        f"{url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/{sid}.json", auth=(ACCOUNT_SID, "wrong"), timeout=3
    )

    assert answer.status_code == 401 and sid in standin.inbound


# --- OpenAI -------------------------------------------------------------------------------


def test_a_deleted_response_is_404_from_then_on(ai):
    response = ai.responses.create(model=MODEL, input="remember this", background=True)

    ai.responses.delete(response.id)

    for again in (lambda: ai.responses.retrieve(response.id), lambda: ai.responses.delete(response.id)):
        with pytest.raises(openai.NotFoundError):
            again()


def test_deleting_a_conversation_leaves_its_items_at_openai(ai, openai_standin):
    standin, url = openai_standin
    conversation = ai.conversations.create()
    ai.responses.create(model=MODEL, conversation=conversation.id, input="a secret")

    deleted = ai.conversations.delete(conversation.id)

    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        ai.conversations.items.list(conversation.id)
    (shown,) = requests.get(f"{url}/_control/conversations", timeout=3).json()["conversations"]
    assert shown["deleted"] is True and conversation.id == shown["conversation"]["id"]
    assert "a secret" in str(shown["items"])  # "Items in the conversation will not be deleted"


def test_its_items_deleted_first_a_deleted_conversation_leaves_nothing(ai, openai_standin):
    _, url = openai_standin
    conversation = ai.conversations.create()
    ai.responses.create(model=MODEL, conversation=conversation.id, input="a secret")

    for item in ai.conversations.items.list(conversation.id):
        ai.conversations.items.delete(item.id, conversation_id=conversation.id)
    ai.conversations.delete(conversation.id)

    (shown,) = requests.get(f"{url}/_control/conversations", timeout=3).json()["conversations"]
    assert shown["deleted"] is True and shown["items"] == []
