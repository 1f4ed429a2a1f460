"""Twilio's outbound queue: every create carries a ValidityPeriod shorter than the wait
for a delivery receipt, and a receipt that says the queue expired a message (30036) does
not count as one: that message was never sent (functions/delivery/send_once.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from functions.delivery.send_once import receipt_of
from functions.delivery.twilio_messages import RECEIPT_MARGIN_SECONDS, send_message
from functions.storage.models import Delivery

US, USER = "whatsapp:+15550000001", "whatsapp:+15551112222"


def _creates() -> tuple[SimpleNamespace, list[dict]]:
    made: list[dict] = []

    def create(**request: object) -> SimpleNamespace:
        made.append(request)
        return SimpleNamespace(sid=f"SM{len(made)}")

    return SimpleNamespace(messages=SimpleNamespace(create=create)), made


@pytest.mark.parametrize("wait", ["3", "10", "20"])
def test_every_create_carries_a_validity_period_the_wait_for_a_receipt_outlasts(configure, wait):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS=wait)
    client, made = _creates()

    send_message(client, US, USER, "a part", status_callback="https://example.test/status")
    send_message(client, US, USER, content_sid="HX1", messaging_service_sid="MG1")

    periods = [request["validity_period"] for request in made]
    assert all(isinstance(p, int) and 1 <= p <= 36_000 for p in periods)  # Twilio's range (90007)
    # Expired (or sent) and its callback come before a retry's wait for a receipt ends.
    assert all(p + RECEIPT_MARGIN_SECONDS <= float(wait) for p in periods)


def test_a_wait_shorter_than_the_margin_still_gives_twilios_least_validity_period(configure):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="0")
    client, made = _creates()
    send_message(client, US, USER, "a part")
    assert made[0]["validity_period"] == 1


def _receipt(message: str, status: str, error_code: int | None = None) -> Delivery:
    return Delivery(message=message, status=status, rank=3, error_code=error_code)


def test_a_receipt_that_says_the_queue_expired_the_message_does_not_count_as_sent():
    deliveries = {"SM1": _receipt("0", "failed", 30036)}
    assert receipt_of(deliveries, "0") is None


def test_any_other_receipt_counts_failures_included():
    deliveries = {
        "SM1": _receipt("0", "failed", 30036),
        "SM2": _receipt("0", "undelivered", 30003),  # it left the queue: sent, then lost
        "SM3": _receipt("1", "delivered"),
    }
    assert receipt_of(deliveries, "0") == "SM2"
    assert receipt_of(deliveries, "1") == "SM3"
    assert receipt_of(deliveries, "1", exclude=["SM3"]) is None
