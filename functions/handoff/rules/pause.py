"""Hand-off to a person: when a conversation waits for a person instead of the assistant,
and what asks for one. Pure functions (functions/handoff/pausing.py does the I/O).

A conversation is handed off while its record says it is paused (`paused_at`), until its
`paused_until` passes (a pause `--for` a time) or someone resumes it. A person's own words
ask for one: typed text (never a button's label) that holds one of the rules'
`handoff_keywords` as a word or phrase, in any case."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from functions import clock
from functions.batching.rules.burst import BatchingRules
from functions.storage.models import Conversation

# Who paused a conversation (its record's `paused_by`).
BY_OPERATOR, BY_HELPDESK, BY_KEYWORD = "operator", "helpdesk", "keyword"
PERSON = "person"  # the `written_by` of a turn a person wrote
HANDED_OFF = "handed_off"  # the `limited` of the turn that tells the person one is coming
# A pause `--for` longer than this is a mistake: a pause without an end is what holds longer.
MAX_PAUSE = timedelta(days=365)
_SPAN = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def is_paused(conversation: Conversation, now: datetime) -> bool:
    """Whether the conversation waits for a person at `now`."""
    if not conversation.paused_at:
        return False
    return not conversation.paused_until or clock.parse(conversation.paused_until) > now


def asks_for_a_person(rules: BatchingRules, body: str, typed: bool) -> bool:
    """Whether a message asks for a person: typed text that holds a hand-off keyword."""
    if not typed or not body:
        return False
    return any(
        re.search(rf"(?<!\w){re.escape(k.strip())}(?!\w)", body, re.IGNORECASE)
        for k in rules.handoff_keywords
        if k.strip()
    )


def is_the_asking_batch(conversation: Conversation, message_sids: list[str]) -> bool:
    """Whether this batch holds the message whose keyword paused the conversation: the one
    batch that gets HANDOFF_REPLY."""
    return conversation.paused_by == BY_KEYWORD and conversation.paused_by_message in message_sids


def span(text: str) -> timedelta:
    """A span such as `2h`, `30m`, `45s`, `1d` (ValueError otherwise, or past MAX_PAUSE)."""
    found = _SPAN.match(text)
    if not found or int(found.group(1)) <= 0:
        raise ValueError(f"not a span: {text!r} (write 30m, 2h, 1d)")
    length = timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})
    if length > MAX_PAUSE:
        raise ValueError(f"a pause of {text} is longer than a year: pause without --for instead")
    return length


def until(now: datetime, seconds: float | None) -> str | None:
    """When a pause of `seconds` from `now` ends (None: no end)."""
    return clock.iso(now + timedelta(seconds=seconds)) if seconds else None
