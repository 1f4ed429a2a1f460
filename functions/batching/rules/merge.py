"""Merging a batch's staged messages into one user turn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from functions.answer.rules.content import RenderedTurn, render, size_of
from functions.intake.inbound import Consent
from functions.storage.models import StagedMessage


def arrival_order(items: Iterable[Mapping[str, Any]]) -> list[str]:
    """MessageSids of staged-message keys in arrival order (MessageSid breaks ties),
    each once. Items are plain dicts or DynamoDB JSON ({"S": ...}) from a Query state."""
    seen: dict[str, str] = {}
    for item in items:
        sid, received_at = _plain(item["message_sid"]), _plain(item["received_at"])
        if sid not in seen or received_at < seen[sid]:
            seen[sid] = received_at
    return [sid for sid, _ in sorted(seen.items(), key=lambda pair: (pair[1], pair[0]))]


def within_bytes(messages: Iterable[StagedMessage], order: list[str], max_bytes: int) -> list[str]:
    """The longest start of `order` whose messages (their lines in the user turn and their
    media URLs, in UTF-8) add up to at most `max_bytes`; at least one message, so that the
    batch always moves on."""
    by_sid = {m.message_sid: m for m in messages}
    kept: list[str] = []
    total = 0
    for sid in order:
        message = by_sid[sid]
        total += size_of(message)
        if kept and total > max_bytes:
            break
        kept.append(sid)
    return kept


def merged_turn(
    messages: Iterable[StagedMessage], order: list[str], quotes: Mapping[str, str] | None = None
) -> RenderedTurn:
    """The user turn: each message's lines (functions/answer/rules/content.py) in `order`;
    `quotes` are the texts of our earlier replies that messages reply to, by SID."""
    by_sid = {m.message_sid: m for m in messages}
    return render([by_sid[sid] for sid in order if sid in by_sid], quotes)


def merged_body(messages: Iterable[StagedMessage], order: list[str]) -> str:
    return merged_turn(messages, order).body


def last_consent(messages: Iterable[StagedMessage], order: list[str]) -> Consent | None:
    """The batch's last opt-out or opt-in keyword, in arrival order: the one that holds."""
    by_sid = {m.message_sid: m for m in messages}
    keywords = [by_sid[sid].consent for sid in order if sid in by_sid and by_sid[sid].consent]
    return keywords[-1] if keywords else None


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value["S"])
    return str(value)
