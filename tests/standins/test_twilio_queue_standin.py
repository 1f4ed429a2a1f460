"""The Twilio stand-in's outbound queue through the real `twilio` SDK: a message kept
`queued` (no callback, not sent) for the fault's `queued_seconds`, then sent, or failed
with 30036 once its ValidityPeriod has passed; a ValidityPeriod outside 1 to 36,000 is
refused (90007) (https://www.twilio.com/docs/api/errors/30036, .../90007)."""

from __future__ import annotations

import pytest
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
