"""One Twilio message sent once, however many attempts ask for it.

Twilio's `messages.create` takes no idempotency key, and an attempt can lose its answer
after Twilio accepted the message (a timeout, a connection broken after the request went
out, a function that died before it recorded the SID): a plain retry sends it twice. So
every message we must send once (a reply part, the fallback reply, the WhatsApp
template) follows one protocol, `send_once`:

1. claim: record in DynamoDB that an attempt began, before any create; what is recorded
   already says whether the SID is known (nothing to do), whether another owner sends it,
   and whether an earlier attempt began (then the message may be in Twilio unrecorded);
2. find: only after an earlier attempt began, look for the message's delivery receipt
   (a status callback recorded for it: its StatusCallback URL names the message), then in
   Twilio's Messages list
   (https://www.twilio.com/docs/messaging/api/message-resource#read-multiple-message-resources),
   and when neither shows it, wait a bounded time (DELIVERY_RECEIPT_WAIT_SECONDS) for a
   receipt: the list promises nothing about how soon a created message appears in it
   (every create carries a ValidityPeriod shorter than that wait, so that the message has
   left Twilio's queue, sent or expired with 30036, before the wait ends; a receipt of an
   expired message does not count as sent);
3. send: create it, if not found;
4. record: keep its SID, found or sent.

Each message says how to do each step (an `OnceMessage`: the data access is in
the table modules, the Twilio calls in functions/delivery/twilio_messages.py); the order
and the decisions are here, once (docs/adr/0056-one-send-once-protocol-for-every-message-we.md)."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from functions import clock
from functions.delivery.settings import DeliverySettings
from functions.errors import VALIDITY_PERIOD_EXPIRED, TwilioPermanentError, TwilioRetryableError
from functions.observability import count, logger
from functions.storage.models import Delivery

# How often the turn is read again for a delivery receipt while waiting for one.
RECEIPT_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Claim:
    """What the record says once this attempt has claimed the message."""

    sent: str | None = None  # its SID, recorded by an earlier attempt: nothing to send
    ours: bool = True  # False: another owner sends it, not this attempt
    earlier_since: datetime | None = None  # an earlier attempt began then: it may have sent it

    @classmethod
    def began(cls, since: str, now: str, sent: str | None = None, ours: bool = True) -> Claim:
        """The claim of an attempt that began at `now` and found `since` recorded: an
        earlier attempt's time if it is not `now`."""
        return cls(sent=sent, ours=ours, earlier_since=None if since == now else clock.parse(since))


class OnceMessage(Protocol):
    """How to claim, find, send and record one message."""

    def claim(self, now: str) -> Claim:
        """Record that an attempt began at `now` (unless one did before), and say what
        the record holds."""
        ...

    def reported(self) -> str | None:
        """The SID of the message if a status callback for it is recorded, else None
        (receipt_of: not for a message Twilio's queue expired)."""
        ...

    def find(self, since: datetime) -> str | None:
        """The message's SID if Twilio's list shows an attempt that began at `since` sent
        it, else None."""
        ...

    def send(self) -> str:
        """Create the message; its SID."""
        ...

    def record(self, sid: str) -> None:
        """Keep the message's SID."""
        ...

    def refused(self) -> None:
        """Twilio refused this attempt's create with a 4xx (it created nothing): keep that,
        if the next attempt can use it to send without waiting for a receipt."""
        ...


def receipt_of(deliveries: Mapping[str, Delivery], message: str, exclude: Collection[str] = ()) -> str | None:
    """The SID of message `message` of a turn (a reply part's index, `template`, ...) whose
    delivery receipt is recorded, `exclude`d SIDs aside; a receipt that says Twilio's queue
    expired it (30036) is not one: that message was never sent."""
    found = (
        sid
        for sid, delivery in deliveries.items()
        if delivery.message == message
        and sid not in exclude
        and not (delivery.status == "failed" and delivery.error_code == VALIDITY_PERIOD_EXPIRED)
    )
    return next(found, None)


def send_once(message: OnceMessage, receipt_wait: float | None = None) -> str | None:
    """The message's SID, sent by this attempt or an earlier one; None when another owner
    sends it. A retry after the SID was recorded sends nothing and looks nothing up; an
    attempt that finds an earlier one began looks for the message in Twilio's list before
    sending it; the first attempt sends without looking. Twilio's errors go up unchanged
    (the caller's retry claims again). `receipt_wait`: the longest wait for a receipt, if
    the caller's time is shorter than DELIVERY_RECEIPT_WAIT_SECONDS."""
    claim = message.claim(clock.iso(clock.now()))
    if claim.sent or not claim.ours:
        return claim.sent
    sid = _sent_earlier(message, claim.earlier_since, receipt_wait) if claim.earlier_since else None
    if sid is None:
        try:
            sid = message.send()
        except (TwilioRetryableError, TwilioPermanentError) as error:
            if error.refused:
                message.refused()
            raise
    message.record(sid)
    return sid


def _sent_earlier(message: OnceMessage, since: datetime, receipt_wait: float | None) -> str | None:
    """The SID of the message an earlier attempt (begun at `since`) sent, as far as can be
    known now; None means send it. The one place for what decides that a message in doubt
    was not sent: its delivery receipt (a status callback recorded for it), then Twilio's
    list; when neither shows it, the receipt is waited for, up to
    DELIVERY_RECEIPT_WAIT_SECONDS, before the message is sent again. Twilio reports every
    status after `queued` (`sent`, `failed`, ...) to the message's StatusCallback, which
    names the message; its list shows a created message after a delay it does not bound
    (docs/adr/0081-a-delivery-receipt-not-the-list-decides.md)."""
    sid = message.reported() or message.find(since)
    wait = DeliverySettings.get().delivery_receipt_wait_seconds
    deadline = time.monotonic() + (wait if receipt_wait is None else max(0.0, min(wait, receipt_wait)))
    while sid is None and time.monotonic() < deadline:
        time.sleep(min(RECEIPT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        sid = message.reported()
    if sid is None:
        count("SendsInDoubtSentAgain")
        logger.warning("No receipt of a message in doubt: sending it")
    return sid
