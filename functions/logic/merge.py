"""Merging a batch's staged messages into one user turn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from functions.dal.models import StagedMessage


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
    """The longest start of `order` whose messages (bodies and media URLs, in UTF-8) add
    up to at most `max_bytes`; at least one message, so that the batch always moves on."""
    by_sid = {m.message_sid: m for m in messages}
    kept: list[str] = []
    total = 0
    for sid in order:
        message = by_sid[sid]
        total += len(message.body.encode()) + sum(len(url) + 9 for url in message.media_urls) + 1
        if kept and total > max_bytes:
            break
        kept.append(sid)
    return kept


def merged_body(messages: Iterable[StagedMessage], order: list[str]) -> str:
    """The user turn: the bodies in `order`, one per line; media as their URLs."""
    by_sid = {m.message_sid: m for m in messages}
    lines: list[str] = []
    for sid in order:
        message = by_sid.get(sid)
        if message is None:
            continue
        if message.body.strip():
            lines.append(message.body)
        lines += [f"[media] {url}" for url in message.media_urls]
    return "\n".join(lines)


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value["S"])
    return str(value)
