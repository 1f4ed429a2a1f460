"""The Twilio stand-in through the real `twilio` SDK: acceptance before a late answer, the
Messages list's filters and paging, signed status callbacks, the 1,600-character limit."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import requests
from twilio.base.exceptions import TwilioRestException
from twilio.request_validator import RequestValidator

from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN, twilio_client
from tests.support.waiting import wait_until

OURS = "+15550000001"
USER = "+15557654321"


def send(client, to=USER, body="hello", **extra):
    return client.messages.create(from_=OURS, to=to, body=body, **extra)


def test_a_delay_accepts_the_message_first_then_answers_late(twilio_standin):
    standin, url = twilio_standin
    standin.inject({"delay": 0.8})
    started = datetime.now(UTC).replace(microsecond=0)

    with pytest.raises(requests.Timeout):
        send(twilio_client(url, timeout=0.3), body="did it go?")

    # The client timed out, but the message was created and goes on to be delivered.
    client = twilio_client(url)
    (found,) = client.messages.list(to=USER, date_sent_after=started)
    assert found.body == "did it go?"
    wait_until(lambda: client.messages(found.sid).fetch().status == "delivered")
    assert [m["sid"] for m in standin.messages] == [found.sid]
    assert standin.calls[0]["status"] == 201 and standin.calls[0]["sid"] == found.sid


def test_a_just_accepted_message_has_no_date_sent_so_date_filters_miss_it(sms, twilio_standin):
    standin, _ = twilio_standin
    standin.inject({"outcome": "delivered", "after": 1.0})
    started = datetime.now(UTC).replace(microsecond=0)

    created = send(sms)

    assert created.status == "queued" and created.date_sent is None
    assert sms.messages.list(to=USER, date_sent_after=started) == []  # queued: no date_sent yet
    assert [m.sid for m in sms.messages.list(to=USER)] == [created.sid]
    wait_until(lambda: sms.messages.list(to=USER, date_sent_after=started))
    assert sms.messages(created.sid).fetch().date_sent is not None


def test_date_sent_filters_as_the_sdk_sends_them_and_as_dates(sms, twilio_standin):
    _, url = twilio_standin
    send(sms)
    wait_until(lambda: sms.messages.list(to=USER)[0].date_sent)
    now = datetime.now(UTC)

    assert len(sms.messages.list(to=USER, date_sent_after=now - timedelta(minutes=1))) == 1
    assert sms.messages.list(to=USER, date_sent_after=now + timedelta(seconds=2)) == []
    assert sms.messages.list(to=USER, date_sent_before=now - timedelta(minutes=1)) == []

    def listed(**params: str) -> int:
        answer = requests.get(
            f"{url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json",
            params=params,
            auth=(ACCOUNT_SID, AUTH_TOKEN),
        )
        return len(answer.json()["messages"])

    today, tomorrow = now.date().isoformat(), (now + timedelta(days=1)).date().isoformat()
    yesterday = (now - timedelta(days=1)).date().isoformat()
    assert listed(DateSent=today) == 1 and listed(DateSent=tomorrow) == 0
    assert listed(**{"DateSent>": today}) == 1 and listed(**{"DateSent>": tomorrow}) == 0
    assert listed(**{"DateSent<": today}) == 1 and listed(**{"DateSent<": yesterday}) == 0


def test_the_list_is_newest_first_and_pages_through_the_sdk(sms, twilio_standin):
    standin, url = twilio_standin
    bodies = [f"part {n}" for n in range(7)]
    for body in bodies:
        send(sms, body=body)
    send(sms, to="+15550009999", body="someone else")
    send(sms, to=USER, body="latest")
    sms.messages.create(from_="+15550000002", to=USER, body="other sender")
    wait_until(lambda: all(m["date_sent"] for m in standin.messages))  # sorted by date_sent

    mine = sms.messages.list(to=USER, from_=OURS, page_size=3)
    streamed = list(sms.messages.stream(to=USER, from_=OURS, page_size=2, limit=5))

    assert [m.body for m in mine] == ["latest", *reversed(bodies)]
    assert [m.body for m in streamed] == [m.body for m in mine[:5]]
    page = requests.get(
        f"{url}/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json",
        params={"To": USER, "PageSize": 3},
        auth=(ACCOUNT_SID, AUTH_TOKEN),
    ).json()
    assert page["page"] == 0 and page["page_size"] == 3 and page["previous_page_uri"] is None
    assert "PageToken=PA" in page["next_page_uri"] and "To=%2B15557654321" in page["next_page_uri"]
    second = requests.get(url + page["next_page_uri"], auth=(ACCOUNT_SID, AUTH_TOKEN)).json()
    assert second["page"] == 1 and second["start"] == 3 and second["previous_page_uri"]


def test_status_callbacks_are_signed_and_follow_the_message(sms, twilio_standin, receiver):
    standin, _ = twilio_standin
    app, callback_url = receiver

    created = send(sms, status_callback=callback_url)

    wait_until(lambda: len(app.received) == 2)
    # The stand-in lists a callback once it has our answer, after the receiver has it.
    wait_until(lambda: len(standin.callbacks) == 2)
    time.sleep(0.2)  # and no third one
    assert app.statuses() == ["sent", "delivered"]  # none for the initial `queued`
    validator = RequestValidator(AUTH_TOKEN)
    for request in app.received:
        form = request["form"]
        assert validator.validate(callback_url, form, request["headers"]["X-Twilio-Signature"])
        assert not RequestValidator("another-token").validate(
            callback_url, form, request["headers"]["X-Twilio-Signature"]
        )
        assert (
            form["MessageSid"] == form["SmsSid"] == created.sid and form["SmsStatus"] == form["MessageStatus"]
        )
        assert form["AccountSid"] == ACCOUNT_SID and form["ApiVersion"] == "2010-04-01"
        assert form["From"] == OURS and form["To"] == USER and "ErrorCode" not in form
    assert sms.messages(created.sid).fetch().status == "delivered"
    assert standin.messages[0]["status_callback"] == callback_url and len(standin.callbacks) == 2


def test_whatsapp_reports_read_and_a_messaging_service_reports_queued(sms, receiver):
    app, callback_url = receiver
    sms.messages.create(
        from_="whatsapp:" + OURS, to="whatsapp:" + USER, body="hi", status_callback=callback_url
    )
    wait_until(lambda: len(app.received) == 3)
    assert app.statuses() == ["sent", "delivered", "read"]
    assert app.received[0]["form"]["ChannelPrefix"] == "whatsapp"

    app.received.clear()
    created = sms.messages.create(
        messaging_service_sid="MG" + "2" * 32, to=USER, body="hi", status_callback=callback_url
    )
    assert created.status == "accepted"
    wait_until(lambda: len(app.received) == 3)
    assert app.statuses() == ["queued", "sent", "delivered"]


@pytest.mark.parametrize(
    ("outcome", "code", "statuses", "sent"),
    [("undelivered", 63016, ["sent", "undelivered"], True), ("failed", 30007, ["failed"], False)],
)
def test_an_outcome_fault_reports_the_failure_after_acceptance(
    sms, twilio_standin, receiver, outcome, code, statuses, sent
):
    standin, _ = twilio_standin
    app, callback_url = receiver
    standin.inject({"outcome": outcome, "error_code": code, "after": 0.3})

    created = send(sms, to="whatsapp:" + USER, status_callback=callback_url)

    assert created.status == "queued"
    wait_until(lambda: app.statuses()[-1:] == [outcome])
    assert app.statuses() == statuses and app.received[-1]["form"]["ErrorCode"] == str(code)
    fetched = sms.messages(created.sid).fetch()
    assert (
        fetched.status == outcome and fetched.error_code == code and (fetched.date_sent is not None) == sent
    )


def test_callbacks_never_hold_the_answer_and_a_refused_connection_is_retried_once(
    sms, twilio_standin, receiver
):
    standin, _ = twilio_standin
    app, callback_url = receiver
    app.pause, app.status = 0.6, 500

    send(sms, status_callback=callback_url)
    # Answered before any callback was answered (each takes 0.6 s): none is recorded yet.
    assert standin.callbacks == []
    wait_until(lambda: len(standin.callbacks) == 2, timeout=5)
    assert [c["status"] for c in standin.callbacks] == [500, 500]  # an HTTP error is not retried

    standin.reset()
    send(sms, status_callback="http://127.0.0.1:9/unreachable")  # nothing listens there
    wait_until(lambda: len(standin.callbacks) == 4)
    assert [c["attempt"] for c in standin.callbacks] == [1, 2, 1, 2]
    assert all(c["status"] is None and c["error"] for c in standin.callbacks)


@pytest.mark.parametrize(
    ("body", "accepted"),
    [("a" * 1600, True), ("é" * 1600, True), ("a" * 1599 + "😀", False), ("😀" * 801, False)],
)
def test_the_1600_character_limit_counts_utf16_code_units(sms, twilio_standin, body, accepted):
    standin, _ = twilio_standin
    if accepted:
        assert send(sms, body=body).body == body
        return
    with pytest.raises(TwilioRestException) as refused:
        send(sms, body=body)
    assert refused.value.status == 400 and refused.value.code == 21617
    assert standin.messages == [] and standin.calls[0]["status"] == 400


def test_a_content_template_is_refused_without_a_messaging_service(sms, twilio_standin):
    standin, _ = twilio_standin
    template = "HX" + "1" * 32
    with pytest.raises(TwilioRestException) as refused:
        sms.messages.create(from_=OURS, to=USER, content_sid=template)
    assert refused.value.status == 400 and refused.value.code == 30124
    assert standin.messages == []

    service = "MG" + "2" * 32
    sent = sms.messages.create(from_=OURS, to=USER, content_sid=template, messaging_service_sid=service)
    assert (sent.messaging_service_sid, sent.from_) == (service, OURS)
    assert [m["content_sid"] for m in standin.messages] == [template]


def test_status_faults_refuse_the_message(sms, twilio_standin):
    standin, _ = twilio_standin
    standin.inject({"status": 429, "code": 20429}, {"status": 400, "code": 63016})
    for code in (20429, 63016):
        with pytest.raises(TwilioRestException) as refused:
            send(sms)
        assert refused.value.code == code
    assert standin.messages == [] and [c["status"] for c in standin.calls] == [429, 400]
    assert sms.messages.list() == []


def test_reset_stops_the_progress_of_earlier_messages(sms, twilio_standin, receiver):
    standin, _ = twilio_standin
    app, callback_url = receiver
    standin.inject({"after": 0.4})
    send(sms, status_callback=callback_url)
    standin.reset()
    time.sleep(0.6)
    assert app.received == [] and standin.messages == [] and standin.callbacks == []


# --- connection overrides in the callback URL's fragment --------------------------------------


def test_a_callback_url_with_overrides_is_retried_on_5xx_as_its_fragment_says(sms, twilio_standin, receiver):
    standin, _ = twilio_standin
    app, callback_url = receiver
    app.status = 503

    send(sms, status_callback=callback_url + "#rc=2&rp=5xx")

    wait_until(lambda: len(standin.callbacks) == 6, timeout=5)  # sent, delivered: 3 attempts each
    assert [c["attempt"] for c in standin.callbacks] == [1, 2, 3, 1, 2, 3]
    assert [r["url"] for r in app.received] == [callback_url] * 6  # the fragment is not sent
    standin.reset()
    app.status = 500
    send(sms, status_callback=callback_url + "#rc=2&rp=ct")  # 5xx not in the policy
    wait_until(lambda: len(standin.callbacks) == 2, timeout=5)
    assert [c["attempt"] for c in standin.callbacks] == [1, 1]


@pytest.mark.parametrize("url_fragment", [True, False])
def test_callbacks_are_signed_with_or_without_the_fragment_as_chosen(
    sms, twilio_standin, receiver, url_fragment
):
    standin, url = twilio_standin
    app, callback_url = receiver
    with_overrides = callback_url + "#rc=5&rp=all"
    requests.post(
        f"{url}/_control/signing", json={"url_fragment": url_fragment}, timeout=3
    ).raise_for_status()

    send(sms, status_callback=with_overrides)

    wait_until(lambda: len(app.received) == 2)
    validator = RequestValidator(AUTH_TOKEN)
    for request in app.received:
        signature = request["headers"]["X-Twilio-Signature"]
        assert validator.validate(with_overrides, request["form"], signature) is url_fragment
        assert validator.validate(callback_url, request["form"], signature) is not url_fragment
