"""A limit on the messages from one number to one recipient, as the Twilio stand-in
enforces it when asked (`POST /_control/rate`), reported as 63018, "Rate limit exceeded for
Channel" (https://www.twilio.com/docs/api/errors/63018). Twilio's 63018 is the account's or
the WhatsApp sender's rate or tier limit, not one recipient's: per recipient is this
stand-in's simplification, enough to make a reply's close parts meet it; the WhatsApp
Sandbox allows one message every 3 seconds. A message sent sooner is refused at create
(`create`: HTTP 400, code 63018, as Twilio answers the codes it refuses a create with) or
accepted and reported `failed` with 63018 by status callback (`callback`). The docs do not
say which Twilio does, nor the HTTP status: the stand-in does either."""

from __future__ import annotations

import threading
import time

CHANNEL_RATE_LIMITED = 63018
WHERE = ("create", "callback")


class RecipientRate:
    """One message per `seconds` from a number to a recipient (0: no limit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds, self.at = 0.0, "create"
        self._last: dict[tuple[str, str], float] = {}  # (from, to) → last message let through

    def set(self, seconds: float, at: str = "create") -> None:
        if at not in WHERE:
            raise ValueError(f"at: one of {WHERE}, not {at!r}")
        with self._lock:
            self.seconds, self.at = max(0.0, float(seconds)), at
            self._last.clear()

    def refusal(self, from_address: str, to_address: str) -> str | None:
        """Where a message from `from_address` to `to_address` sent now is refused
        (`create` or `callback`), or None: let through, and counted."""
        with self._lock:
            now, key = time.monotonic(), (from_address, to_address)
            last = self._last.get(key)
            if self.seconds and last is not None and now - last < self.seconds:
                return self.at
            self._last[key] = now
            return None
