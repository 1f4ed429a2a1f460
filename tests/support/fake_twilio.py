"""A fake of Twilio's Messages API as functions/delivery/twilio_messages.py uses it
(installed by tests/support/fakes.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from functions.errors import TwilioRetryableError


@dataclass
class FakeTwilio:
    """Accepts messages, or refuses the ones whose number is in `refuse` (0-based, in
    the order of the create calls) with the given error; those in `lose_answer` are
    accepted, and then the answer is lost (a timeout: TwilioRetryableError). While
    `list_lags`, the Messages list does not show the messages yet."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    refuse: dict[int, Exception] = field(default_factory=dict)
    lose_answer: set[int] = field(default_factory=set)
    attempts: int = 0
    lookups: int = 0
    list_lags: bool = False
    typing: list[str] = field(default_factory=list)  # the MessageSids typing indicators were shown on
    typing_fails: Exception | None = None  # raised by every typing indicator when set

    def show_typing(self, credentials: Any, message_sid: str) -> None:
        self.typing.append(message_sid)
        if self.typing_fails is not None:
            raise self.typing_fails

    def send_message(
        self,
        client: Any,
        from_address: str,
        to_address: str,
        body: str | None = None,
        content_sid: str | None = None,
        status_callback: str | None = None,
        messaging_service_sid: str | None = None,
        content_variables: str | None = None,
    ) -> str:
        number, self.attempts = self.attempts, self.attempts + 1
        if number in self.refuse:
            raise self.refuse[number]
        sid = f"SM{len(self.sent) + 1:032d}"
        self.sent.append(
            {
                "sid": sid,
                "from": from_address,
                "to": to_address,
                "body": body,
                "content_sid": content_sid,
                "status_callback": status_callback,
                "messaging_service_sid": messaging_service_sid,
                "content_variables": content_variables,
                "at": time.monotonic(),
            }
        )
        if number in self.lose_answer:
            raise TwilioRetryableError("Twilio unreachable: ReadTimeout")
        return sid

    def find_sent(
        self,
        client: Any,
        from_address: str,
        to_address: str,
        body: str | None,
        since: datetime,
        exclude: list[str] | tuple[str, ...] = (),
    ) -> str | None:
        self.lookups += 1
        if self.list_lags:
            return None
        found = [
            m["sid"]
            for m in self.sent
            if (m["from"], m["to"]) == (from_address, to_address)
            and m["sid"] not in exclude
            and (body is None or m["body"] == body)
        ]
        return found[0] if found else None
