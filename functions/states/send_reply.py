"""Send Reply: the assistant turn through Twilio, one message per reply part, each once
whatever attempt times out or dies after Twilio accepted a part (functions/delivery/reply.py;
a person's reply from a helpdesk goes out the same way)."""

from __future__ import annotations

from functions.contract import SendInput, SentSummary
from functions.delivery import reply


def send_reply(task: SendInput) -> SentSummary:
    return reply.send_reply(task)
