"""Finding a message that an attempt may have sent: the Messages list by To and From,
the body, the time the first attempt began, and the SIDs already recorded; and which
refusals of a create are retried, and which created nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from twilio.base.exceptions import TwilioRestException

from functions.delivery.twilio_messages import CLOCK_SKEW, LOOKUP_PAGE_SIZE, find_sent, send_message
from functions.errors import TwilioPermanentError, TwilioRetryableError

SINCE = datetime(2026, 11, 26, 12, 0, 0, 500000, tzinfo=UTC)
US, USER = "whatsapp:+15550000001", "whatsapp:+15551112222"


class FakeMessages:
    def __init__(self, *messages: SimpleNamespace) -> None:
        self.messages, self.requests = list(messages), []

    def list(self, **request):
        self.requests.append(request)
        return self.messages


def _client(*messages: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(messages=FakeMessages(*messages))


def _message(
    sid: str, body: str | None, seconds_after: float, status: str = "sent", error_code: int | None = None
) -> SimpleNamespace:
    created = (SINCE + timedelta(seconds=seconds_after)).replace(microsecond=0)
    return SimpleNamespace(sid=sid, body=body, date_created=created, status=status, error_code=error_code)


def test_one_page_of_the_list_by_to_and_from_newest_first_no_date_sent_filter():
    client = _client()
    assert find_sent(client, US, USER, "part", SINCE) is None
    assert client.messages.requests == [
        {"to": USER, "from_": US, "limit": LOOKUP_PAGE_SIZE, "page_size": LOOKUP_PAGE_SIZE}
    ]


def test_the_part_is_found_by_its_body_since_the_first_attempt_began():
    client = _client(_message("SM3", "other part", 2), _message("SM2", "the part", 1))
    assert find_sent(client, US, USER, "the part", SINCE) == "SM2"


def test_a_message_with_the_same_body_from_before_the_attempt_is_not_it():
    earlier = _message("SM1", "the part", -CLOCK_SKEW.total_seconds() - 2)
    assert find_sent(_client(earlier), US, USER, "the part", SINCE) is None


def test_twilios_seconds_and_a_little_clock_skew_are_allowed_for():
    same_second_before = _message("SM1", "the part", -0.5)  # created at 12:00:00, we began at .5
    assert find_sent(_client(same_second_before), US, USER, "the part", SINCE) == "SM1"


def test_sids_already_recorded_are_not_taken_again_and_the_oldest_match_wins():
    client = _client(_message("SM3", "same", 3), _message("SM2", "same", 2), _message("SM1", "same", 1))
    assert find_sent(client, US, USER, "same", SINCE, exclude=["SM1"]) == "SM2"


@pytest.mark.parametrize(("status", "error_code"), [("queued", None), ("accepted", None), ("failed", 30036)])
def test_a_message_still_in_twilios_queue_or_expired_there_is_not_found(status, error_code):
    # It may never leave the queue (30036): its receipt decides, once it has left it.
    waiting = _message("SM1", "the part", 1, status=status, error_code=error_code)
    assert find_sent(_client(waiting), US, USER, "the part", SINCE) is None


def test_a_message_that_left_the_queue_is_found_whatever_became_of_it_after():
    undelivered = _message("SM1", "the part", 1, status="undelivered", error_code=30003)
    assert find_sent(_client(undelivered), US, USER, "the part", SINCE) == "SM1"


def test_without_a_body_any_message_since_counts_a_template_has_twilios_own_text():
    client = _client(_message("SM9", "Hello {{1}} rendered", 1), _message("SM1", "a part", 0.5))
    assert find_sent(client, US, USER, None, SINCE, exclude=["SM1"]) == "SM9"


@pytest.mark.parametrize(
    ("status", "code", "retryable", "refused"),
    [
        (400, 63018, True, True),  # WhatsApp's rate limit at create: retried, nothing created
        (429, 20429, True, True),
        (503, None, True, False),  # a 5xx leaves the create in doubt
        (400, 63016, False, True),
    ],
)
def test_63018_at_create_is_retryable_and_a_4xx_created_nothing(status, code, retryable, refused):
    client = SimpleNamespace(messages=SimpleNamespace(create=_refusing(status, code)))

    with pytest.raises((TwilioRetryableError, TwilioPermanentError)) as raised:
        send_message(client, US, USER, "hello")

    assert isinstance(raised.value, TwilioRetryableError) is retryable
    assert raised.value.refused is refused


def _refusing(status: int, code: int | None):
    def create(**_: object) -> None:
        raise TwilioRestException(status, "https://api.twilio.com/...", code=code)

    return create
