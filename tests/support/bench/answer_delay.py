"""`make bench`, the end of a burst: how long after its last fragment a quiet-mode burst is
answered, over HTTP through the local stack with instant stand-ins (the reply's create
call reaching the Twilio stand-in). Step Functions waits in whole seconds; the functions
hold the last fraction (functions/batching/rules/debounce.py), so the target is the quiet
period plus 0.6 s at the median. Alone: `python -m tests.support.bench.answer_delay`."""

from __future__ import annotations

import logging
import os
import random
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

from functions import clock  # noqa: E402
from functions.intake.inbound import Channel  # noqa: E402
from functions.tenancy import conversations  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, post_webhook  # noqa: E402

QUIET_SECONDS = 2.0
TARGET_SECONDS_OVER_QUIET = 0.6
FRAGMENTS = ("hello", "my order", "has not arrived")


def measure_answer_delay(
    stack: LocalStack, our_number: str, bursts: int = 7, quiet_seconds: float = QUIET_SECONDS
) -> dict[str, Any]:
    """Send `bursts` quiet-mode bursts one after another, after one to warm up (gaps
    between fragments that put their due times on different fractions of a second); each
    delay, from just before the last fragment was posted to the create call, at the Twilio
    stand-in, of the reply that answers it; and whether each burst was answered in one
    pass (one AI call, one reply)."""
    rules = {"mode": "quiet", "quiet_seconds": quiet_seconds, "typing_gap_seconds": 0, "max_wait_seconds": 60}
    rng = random.Random(20261126)
    delays: list[float] = []
    one_pass: list[bool] = []
    for n in range(bursts + 1):  # the first warms the functions up and is not counted
        user = f"whatsapp:+1444{rng.randrange(10**7):07d}"
        account = stack.config.twilio_account_sid
        created = conversations.create(Channel.WHATSAPP, user, our_number, clock.iso(clock.now()), account)
        conversations.update(created.conversation_id, batching=rules)
        for k, body in enumerate(FRAGMENTS):
            if k:  # well within the quiet period, so that the burst stays one
                time.sleep(rng.uniform(0.1, quiet_seconds / 3))
            last_sent = time.time()
            form = inbound_form(body, user, our_number, account)
            assert post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200
        replied, others = _reply_at(stack, user, FRAGMENTS[-1])
        if n:
            delays.append(replied - last_sent)
            one_pass.append(others == 0 and _ai_calls(stack, created.conversation_id) == 1)
    median = statistics.median(delays)
    return {
        "bursts": bursts,
        "quiet_seconds": quiet_seconds,
        "delays": delays,
        "one_pass": one_pass,
        "split": one_pass.count(False),  # none expected on a quiet machine
        "median_over_quiet": median - quiet_seconds,
        "max_over_quiet": max(delays) - quiet_seconds,
    }


def _reply_at(stack: LocalStack, user: str, last_fragment: str, timeout: float = 60) -> tuple[float, int]:
    """When the reply that answers `last_fragment` (the echo stand-in repeats what it
    answers) reached the Twilio stand-in (epoch seconds), and how many other replies the
    user had: a burst the webhook saw split, its last fragment staged after the quiet
    period (the time between two posts is the client's; a slow webhook stretches it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sent = [c for c in list(stack.twilio.calls) if c["to"] == user and c["status"] == 201]
        answering = [c["at"] for c in sent if last_fragment in (c["body"] or "")]
        if answering:
            return float(answering[0]), len(sent) - len(answering)
        time.sleep(0.02)
    raise TimeoutError(f"no reply to {user}'s {last_fragment!r} within {timeout} s")


def _ai_calls(stack: LocalStack, conversation_id: str) -> int:
    """The replies asked of the AI for the conversation: more than one when a fragment
    came after its batch was merged (its reply discarded, the batch answered again)."""
    conversation = conversations.get(conversation_id)
    ours = conversation.openai_conversation_id if conversation else None
    if not ours:
        return 0
    return sum(1 for c in list(stack.openai.calls) if c["conversation"] == ours)


def row(result: dict[str, Any]) -> tuple[str, str]:
    """The report's line."""
    return (
        f"Quiet mode ({result['quiet_seconds']:g} s): reply after the last fragment, over the quiet "
        f"period, median / max of {result['bursts']} bursts (target: median ≤ {TARGET_SECONDS_OVER_QUIET} s)",
        f"+{result['median_over_quiet']:.2f} s / +{result['max_over_quiet']:.2f} s"
        + (f" ({result['split']} bursts not answered in one pass)" if result["split"] else ""),
    )


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    our_number = "whatsapp:+15550009999"
    config = LocalConfig(aws_port=0, gateway_port=0, twilio_numbers=(our_number,))
    with LocalStack(config) as stack:
        measure, value = row(measure_answer_delay(stack, our_number))
        time.sleep(1)  # the last reply's status callbacks, before the stack stops
    print(f"| {measure} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
