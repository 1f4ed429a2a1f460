"""Twilio's webhook connection overrides as the stand-in and the tests' Twilio read them
(https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides)."""

from __future__ import annotations

import pytest

from infra.local.connection_overrides import Overrides, failure_of, post_as_twilio
from tests.standins.conftest import Receiver, Served


def test_without_a_fragment_twilio_retries_once_on_connection_failures_only():
    address, overrides = Overrides.of("https://hooks.example/whatsapp")
    assert address == "https://hooks.example/whatsapp"
    assert overrides == Overrides(5.0, 15.0, 15.0, 1, frozenset({"ct"}))
    assert overrides.retries("ct") and not overrides.retries("5xx") and not overrides.retries("rt")


def test_the_fragment_sets_retries_policy_and_timeouts_within_their_ranges():
    address, overrides = Overrides.of("https://hooks.example/sms?x=1#rc=9&rp=5xx,rt&ct=50&rt=2000&tt=99999")
    assert address == "https://hooks.example/sms?x=1"
    assert (overrides.retry_count, overrides.connect_timeout, overrides.read_timeout) == (5, 0.1, 2.0)
    assert overrides.total_time == 15.0 and overrides.retry_policy == {"5xx", "rt"}
    assert Overrides.of("https://h/x#rc=5&rp=all")[1].retries("4xx")


@pytest.mark.parametrize(
    ("status", "error", "failure"),
    [(200, None, None), (204, None, None), (403, None, "4xx"), (502, None, "5xx"), (None, OSError(), "ct")],
)
def test_each_answer_is_a_kind_of_failure_or_none(status, error, failure):
    assert failure_of(status, error) == failure


@pytest.mark.parametrize(("fragment", "attempts"), [("", 1), ("#rc=3&rp=5xx", 4), ("#rc=3&rp=4xx", 1)])
def test_a_5xx_is_retried_only_when_the_policy_says_so(fragment, attempts):
    receiver = Receiver(status=500)
    served = Served(receiver)
    try:
        delivery = post_as_twilio(served.url + "/hook" + fragment, {"A": "1"}, lambda url, form: "sig")
    finally:
        served.stop()
    assert len(delivery.attempts) == len(receiver.received) == attempts
    assert not delivery.succeeded and delivery.status == 500
