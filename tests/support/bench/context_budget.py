"""`make bench`, the input tokens of each AI call along one long conversation, with the
context budget (OPENAI_MAX_CONTEXT_TOKENS: OpenAI's server-side compaction, which the
stand-in does as documented) and without it. Alone: `python -m tests.support.bench.context_budget`."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import time

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

from functions.config import forget_settings  # noqa: E402
from functions.intake.inbound import Channel  # noqa: E402
from functions.tenancy import conversations  # noqa: E402
from infra.local.stack import LocalConfig, LocalStack  # noqa: E402
from infra.local.webhooks import inbound_form, post_webhook  # noqa: E402

BUDGET = 600  # tokens: small, so that a short run shows it (the default is 4,000)
BURSTS, WORDS = 16, 60


def measure_context_budget(stack: LocalStack) -> dict[str, list[int]]:
    """The input tokens of each call of a conversation of BURSTS bursts of WORDS words, with
    the budget and without it (OPENAI_MAX_CONTEXT_TOKENS=0)."""
    return {label: _conversation(stack, budget) for label, budget in (("with", BUDGET), ("without", 0))}


def _conversation(stack: LocalStack, budget: int) -> list[int]:
    before = os.environ.get("OPENAI_MAX_CONTEXT_TOKENS")
    os.environ["OPENAI_MAX_CONTEXT_TOKENS"] = str(budget)
    forget_settings()
    user = f"whatsapp:+1444{secrets.randbelow(10**7):07d}"
    number, account_sid = stack.config.twilio_numbers[0], stack.config.twilio_account_sid
    try:
        for n in range(BURSTS):
            words = " ".join(f"w{n}x{i}" for i in range(WORDS))
            form = inbound_form(words, user, number, account_sid)
            assert post_webhook(stack.whatsapp_url, form, stack.config.twilio_auth_token).status_code == 200
            _wait_until_answered(stack, user, number, account_sid, replies=n + 1)
    finally:
        if before is None:
            os.environ.pop("OPENAI_MAX_CONTEXT_TOKENS", None)
        else:
            os.environ["OPENAI_MAX_CONTEXT_TOKENS"] = before
        forget_settings()
    conversation = conversations.find(Channel.WHATSAPP, user, number, account_sid)
    assert conversation is not None
    calls = [c for c in stack.openai.calls if c["conversation"] == conversation.openai_conversation_id]
    return [
        stack.openai.responses[c["response_id"]]["usage"]["input_tokens"] for c in calls if c["response_id"]
    ]


def _wait_until_answered(stack: LocalStack, user: str, number: str, sid: str, replies: int) -> None:
    deadline = time.monotonic() + 60
    while sum(1 for m in stack.twilio.messages if m["to"] == user) < replies:
        assert time.monotonic() < deadline, "a burst was not answered"
        time.sleep(0.1)
    time.sleep(1.2)  # past the batch window, so that the next burst opens a new one


def rows(result: dict[str, list[int]]) -> list[tuple[str, str]]:
    """The report's lines: the input tokens of every call, in order."""
    return [
        (
            f"Input tokens per AI call along a conversation of {BURSTS} bursts of {WORDS} words, "
            f"{label} a context budget{f' of {BUDGET}' if label == 'with' else ''}",
            f"{' '.join(str(t) for t in tokens)} (max {max(tokens)})",
        )
        for label, tokens in result.items()
    ]


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    config = LocalConfig(aws_port=0, gateway_port=0, batch_window_seconds=1)
    with LocalStack(config) as stack:
        for label, value in rows(measure_context_budget(stack)):
            print(f"{label}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
