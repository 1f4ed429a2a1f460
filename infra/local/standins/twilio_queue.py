"""Twilio's outbound queue, for the Twilio stand-in: a message stays `queued` (no status
callback, no `date_sent`: the Messages list does not show it sent) until Twilio sends it,
or until its `ValidityPeriod` has passed, when Twilio fails it with error 30036 instead of
sending it (https://www.twilio.com/docs/api/errors/30036). `ValidityPeriod` is a create
parameter in whole seconds, 1 to 36,000, and 36,000 (10 hours) when not given
(https://www.twilio.com/docs/api/errors/90007; a value outside that range is refused with
that code, HTTP 400, as the stand-in answers the codes it refuses a create with).

The fault `{"queued_seconds": S}` keeps the message it is used by queued S seconds: then it
is sent (its statuses and callbacks as usual), or, when S passes its ValidityPeriod, it is
failed with 30036 once the ValidityPeriod has passed."""

from __future__ import annotations

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
    seconds = float(fault.get("queued_seconds") or 0)
    if seconds > validity:
        return Queued(float(validity), expires=True)
    return Queued(seconds)
