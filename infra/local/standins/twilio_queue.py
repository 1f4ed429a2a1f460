"""Twilio's outbound queue, for the Twilio stand-in: a message stays `queued` (no status
callback, no `date_sent`: the Messages list does not show it sent) until Twilio sends it,
or until its `ValidityPeriod` has passed, when Twilio fails it with error 30036 instead of
sending it (https://www.twilio.com/docs/api/errors/30036). `ValidityPeriod` is a create
parameter in whole seconds, 1 to 36,000, and 36,000 (10 hours) when not given
(https://www.twilio.com/docs/api/errors/90007; a value outside that range is refused with
that code, HTTP 400, as the stand-in answers the codes it refuses a create with).

A message waits in that queue for two reasons here:
- the fault `{"queued_seconds": S}` keeps the message it is used by queued S seconds;
- its sender's rate (`POST /_control/sender_mps {"from": ..., "mps": 2}`: SenderQueue):
  Twilio sends from one WhatsApp sender at its throughput, 80 messages a second by default
  (400 for text on request), and "messages sent at rates exceeding the configured
  throughput for the sender will be sent to a message queue and dequeued for delivery at
  the throughput rate set"
  (https://www.twilio.com/docs/whatsapp/best-practices-and-faqs, "What is the MPS limit for
  outbound WhatsApp messages?"; an SMS sender's queue likewise:
  https://www.twilio.com/docs/api/errors/30001). The stand-in sends a sender's messages
  `mps` a second, in the order they were created; a sender without a rate sends at once.
Then it is sent (its statuses and callbacks as usual), or, when its wait passes its
ValidityPeriod, it is failed with 30036 once the ValidityPeriod has passed. A message that
expires takes no turn: the sender's later messages are not kept waiting for it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_VALIDITY_PERIOD = MAX_VALIDITY_PERIOD = 36_000
INVALID_VALIDITY_PERIOD = 90007
VALIDITY_PERIOD_EXPIRED = 30036


@dataclass(frozen=True)
class Queued:
    """How long a message stays queued, and whether it leaves the queue failed (30036)."""

    seconds: float = 0.0
    expires: bool = False


def validity_period(form: Any) -> int | None:
    """The create's ValidityPeriod in seconds (the default when not given); None when it
    is not a whole number from 1 to 36,000."""
    given = form.get("ValidityPeriod")
    if given in (None, ""):
        return DEFAULT_VALIDITY_PERIOD
    try:
        seconds = int(given)
    except ValueError:
        return None
    return seconds if 1 <= seconds <= MAX_VALIDITY_PERIOD else None


def queued(fault: dict[str, Any], validity: int) -> Queued:
    """The time in the queue that a `queued_seconds` fault asks for, within `validity`."""
    return _within(float(fault.get("queued_seconds") or 0), validity)


def _within(seconds: float, validity: int) -> Queued:
    if seconds > validity:
        return Queued(float(validity), expires=True)
    return Queued(seconds)


class SenderQueue:
    """Each sender's rate (messages a second), and when it is free to send its next
    message; a sender without a rate sends every message at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rates: dict[str, float] = {}  # sender (From) → messages a second
        self._free_at: dict[str, float] = {}  # sender → when its next message can go (monotonic)

    def set(self, sender: str, mps: float) -> None:
        """The sender's rate; 0 sends its messages at once again."""
        if not sender or mps < 0:
            raise ValueError("a sender (`from`) and a rate (`mps`) of 0 or more")
        with self._lock:
            self._free_at.pop(sender, None)
            if mps:
                self.rates[sender] = float(mps)
            else:
                self.rates.pop(sender, None)

    def clear(self) -> None:
        with self._lock:
            self.rates.clear()
            self._free_at.clear()

    def turn(self, sender: str, validity: int, held: float = 0.0) -> Queued:
        """How long a message from `sender` created now stays queued: `held` seconds (a
        fault's), then until its sender's turn; failed (30036) when that passes its
        ValidityPeriod. A message that is sent takes its sender's next turn."""
        with self._lock:
            mps = self.rates.get(sender)
            if not mps:
                return _within(held, validity)
            now = time.monotonic()
            sent_at = max(now + held, self._free_at.get(sender, now))
            waits = _within(sent_at - now, validity)
            if not waits.expires:
                self._free_at[sender] = sent_at + 1 / mps
            return waits
