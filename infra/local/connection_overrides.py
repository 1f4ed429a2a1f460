"""How Twilio calls a webhook URL, with the connection overrides in its fragment, as
Twilio documents them (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides):
key=value pairs after `#`, joined by `&`:

  ct  connect timeout, ms (100-10000, default 5000)
  rt  read timeout, ms (100-15000, default 15000)
  tt  total time for all attempts, ms (100-15000, default 15000)
  rc  retry count (0-5, default 1)
  rp  retry policy: on what failures to retry: `4xx`, `5xx`, `ct` (could not connect in
      time), `rt` (no answer in time), `all`; default `ct`, connection failures only.
  (e, edge and sni choose how Twilio connects; they change nothing here.)

So by default Twilio retries a webhook once if it cannot connect, and never after an
HTTP answer, 5xx included. The fragment is not sent (HTTP never sends one). Whether
Twilio includes it in the URL it signs is not documented: `include_fragment` chooses.

Used by the Twilio stand-in for status callbacks, and by the tests that deliver webhooks
as Twilio does."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

FAILURES = ("4xx", "5xx", "ct", "rt")


def split_fragment(url: str) -> tuple[str, str]:
    """The URL Twilio calls (without the fragment, which HTTP never sends), and the fragment."""
    address, _, fragment = url.partition("#")
    return address, fragment


@dataclass(frozen=True)
class Overrides:
    connect_timeout: float = 5.0
    read_timeout: float = 15.0
    total_time: float = 15.0
    retry_count: int = 1
    retry_policy: frozenset[str] = frozenset({"ct"})

    @classmethod
    def of(cls, url: str) -> tuple[str, Overrides]:
        """The URL without its fragment, and the overrides the fragment sets (values out
        of range are clamped; unknown keys ignored)."""
        address, fragment = split_fragment(url)
        pairs = dict(p.partition("=")[::2] for p in fragment.split("&") if p)

        def ms(name: str, default: float, high: int) -> float:
            return min(max(int(pairs[name]), 100), high) / 1000 if name in pairs else default

        policy = frozenset(p.strip() for p in pairs.get("rp", "ct").split(",") if p.strip())
        return address, cls(
            connect_timeout=ms("ct", 5.0, 10000),
            read_timeout=ms("rt", 15.0, 15000),
            total_time=ms("tt", 15.0, 15000),
            retry_count=min(max(int(pairs.get("rc", 1)), 0), 5),
            retry_policy=policy,
        )

    def retries(self, failure: str | None) -> bool:
        return failure is not None and ("all" in self.retry_policy or failure in self.retry_policy)


def failure_of(status: int | None, error: Exception | None) -> str | None:
    """Which kind of failure an attempt met, in the retry policy's terms (None: success)."""
    if isinstance(error, requests.ReadTimeout):
        return "rt"
    if error is not None:
        return "ct"  # refused, reset, or no connection in time
    if status is not None and 400 <= status < 500:
        return "4xx"
    if status is not None and status >= 500:
        return "5xx"
    return None


@dataclass
class Delivery:
    """What became of one webhook: each attempt's answer (status) or error."""

    url: str
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> int | None:
        return self.attempts[-1]["status"] if self.attempts else None

    @property
    def succeeded(self) -> bool:
        return self.status is not None and self.status < 400


def post_as_twilio(
    url: str,
    params: dict[str, str],
    sign: Callable[[str, dict[str, str]], str],
    include_fragment: bool = True,
    headers: dict[str, str] | None = None,
) -> Delivery:
    """POST `params` to `url` as Twilio does: signed (`sign(signed URL, params)`), with the
    timeouts and retries its fragment sets; the attempts made."""
    address, overrides = Overrides.of(url)
    signed = url if include_fragment else address
    sent_headers = {
        "X-Twilio-Signature": sign(signed, params),
        "User-Agent": "TwilioProxy/1.1",
        **(headers or {}),
    }
    delivery = Delivery(url)
    deadline = time.monotonic() + overrides.total_time
    for attempt in range(1, overrides.retry_count + 2):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        record: dict[str, Any] = {"attempt": attempt, "at": time.time(), "status": None}
        delivery.attempts.append(record)
        error: Exception | None = None
        started = time.monotonic()
        try:
            timeouts = (min(overrides.connect_timeout, left), min(overrides.read_timeout, left))
            record["status"] = requests.post(
                address, data=params, headers=sent_headers, timeout=timeouts
            ).status_code
        except requests.RequestException as failure:
            error = failure
            record["error"] = type(failure).__name__
        record["seconds"] = round(time.monotonic() - started, 3)
        if not overrides.retries(failure_of(record["status"], error)):
            break
    return delivery
