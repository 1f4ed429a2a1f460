"""The Twilio stand-in's outbound queue through the real `twilio` SDK: a message kept
`queued` (no callback, not sent) for the fault's `queued_seconds`, then sent, or failed
with 30036 once its ValidityPeriod has passed; a ValidityPeriod outside 1 to 36,000 is
refused (90007) (https://www.twilio.com/docs/api/errors/30036, .../90007)."""

from __future__ import annotations

import time

import pytest
import requests
from twilio.base.exceptions import TwilioRestException

from tests.support.waiting import wait_until

OURS, USER = "+15550000001", "+15557654321"


def test_a_queued_message_waits_without_a_callback_then_is_sent(sms, twilio_standin, receiver):
    standin, _ = twilio_standin
    app, callback_url = receiver
    standin.inject({"queued_seconds": 1.0})

    created = sms.messages.create(from_=OURS, to=USER, body="hello", status_callback=callback_url)

    assert created.status == "queued"
    assert sms.messages(created.sid).fetch().date_sent is None and app.received == []
    wait_until(lambda: app.statuses() == ["sent", "delivered"], timeout=5)
    assert sms.messages(created.sid).fetch().error_code is None


def test_a_message_queued_past_its_validity_period_fails_with_30036_and_is_never_sent(
    sms, twilio_standin, receiver
):
    standin, _ = twilio_standin
    app, callback_url = receiver
    standin.inject({"queued_seconds": 30})

    created = sms.messages.create(
        from_=OURS, to=USER, body="hello", status_callback=callback_url, validity_period=1
    )

    wait_until(lambda: app.statuses() == ["failed"], timeout=5)  # at 1 s, not at 30
    assert app.received[0]["form"]["ErrorCode"] == "30036"
    fetched = sms.messages(created.sid).fetch()
    assert (fetched.status, fetched.error_code, fetched.date_sent) == ("failed", 30036, None)


@pytest.mark.parametrize("seconds", [0, 36_001])
def test_a_validity_period_outside_twilios_range_is_refused(sms, seconds):
    with pytest.raises(TwilioRestException) as refused:
        sms.messages.create(from_=OURS, to=USER, body="hello", validity_period=seconds)
    assert (refused.value.status, refused.value.code) == (400, 90007)


# --- a sender's rate: its messages wait their turn -----------------------------------------
# Twilio sends from one WhatsApp sender at its throughput (80 messages a second by default)
# and queues the rest, "dequeued for delivery at the throughput rate set"
# (https://www.twilio.com/docs/whatsapp/best-practices-and-faqs).

WHATSAPP_US, WHATSAPP_USER = "whatsapp:+15550000001", "whatsapp:+15557654321"


def _pace(url: str, sender: str, mps: float) -> requests.Response:
    return requests.post(f"{url}/_control/sender_mps", json={"from": sender, "mps": mps}, timeout=3)


def _sent_at(app, sid: str) -> float | None:
    return next((r["at"] for r in app.received if r["form"]["MessageSid"] == sid and _sent(r)), None)


def _sent(received: dict) -> bool:
    return received["form"]["MessageStatus"] == "sent"


def test_a_sender_sends_its_rate_a_second_in_the_order_its_messages_were_created(
    sms, twilio_standin, receiver
):
    _, url = twilio_standin
    app, callback_url = receiver
    assert _pace(url, WHATSAPP_US, 4).json() == {"from": WHATSAPP_US, "mps": 4}

    created = [
        sms.messages.create(from_=WHATSAPP_US, to=WHATSAPP_USER, body=f"n{n}", status_callback=callback_url)
        for n in range(5)
    ]
    other = sms.messages.create(from_=OURS, to=USER, body="another sender", status_callback=callback_url)

    assert all(m.status == "queued" for m in created)
    times = wait_until(lambda: _all_sent_at(app, [m.sid for m in created]), timeout=5)
    assert times == sorted(times)  # in the order created
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert all(gap >= 0.25 - 0.05 for gap in gaps), gaps  # 4 a second
    assert times[-1] - times[0] >= 4 * 0.25 - 0.05
    # Another sender's message does not wait for this one's queue.
    assert wait_until(lambda: _sent_at(app, other.sid), timeout=2) < times[2]


def _all_sent_at(app, sids: list[str]) -> list[float] | None:
    times = [_sent_at(app, sid) for sid in sids]
    return None if None in times else times  # type: ignore[return-value]


def test_a_message_whose_turn_comes_after_its_validity_period_fails_with_30036_and_takes_no_turn(
    sms, twilio_standin, receiver
):
    _, url = twilio_standin
    app, callback_url = receiver
    _pace(url, WHATSAPP_US, 1)

    def create(body: str):
        return sms.messages.create(
            from_=WHATSAPP_US, to=WHATSAPP_USER, body=body, status_callback=callback_url, validity_period=1
        )

    def statuses(sid: str) -> list[str]:
        return [r["form"]["MessageStatus"] for r in app.received if r["form"]["MessageSid"] == sid]

    began = time.monotonic()
    first, second, third, fourth = (create(body) for body in ("a", "b", "c", "d"))  # turns 0, 1, 2, 2 s
    wait_until(lambda: statuses(third.sid) and statuses(fourth.sid), timeout=3)
    # 1.5 s after the first: the sender's next turn is at 2 s, after the second's at 1 s, unless
    # the expired ones took theirs (then at 4 s, past this one's ValidityPeriod).
    time.sleep(max(0.0, began + 1.5 - time.monotonic()))
    fifth = create("e")

    wait_until(lambda: statuses(fifth.sid)[-1:] == ["read"], timeout=4)
    assert [statuses(m.sid)[0] for m in (first, second, fifth)] == ["sent", "sent", "sent"]
    assert statuses(third.sid) == statuses(fourth.sid) == ["failed"]
    expired = [r["form"] for r in app.received if r["form"]["MessageStatus"] == "failed"]
    assert [form["ErrorCode"] for form in expired] == ["30036", "30036"]
    assert [sms.messages(m.sid).fetch().error_code for m in (third, fourth)] == [30036, 30036]


def test_a_senders_rate_is_set_through_the_control_api_turned_off_with_0_and_reset(twilio_standin):
    standin, url = twilio_standin
    assert _pace(url, WHATSAPP_US, 2).status_code == 200
    assert standin.senders.rates == {WHATSAPP_US: 2.0}
    assert _pace(url, WHATSAPP_US, 0).json() == {"from": WHATSAPP_US, "mps": 0}
    assert standin.senders.rates == {}
    assert _pace(url, "", 2).status_code == 400
    assert _pace(url, WHATSAPP_US, -1).status_code == 400
    _pace(url, WHATSAPP_US, 2)
    standin.reset()
    assert standin.senders.rates == {}
