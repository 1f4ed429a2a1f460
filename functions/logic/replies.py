"""Splitting a reply into messages the channel accepts."""

from __future__ import annotations

import re

MAX_MESSAGE_CHARS = 1600  # Twilio's limit for one message body

_BREAKS = (
    re.compile(r"\n\s*\n"),  # paragraph
    re.compile(r"(?<=[.!?…])\s+"),  # sentence
    re.compile(r"\s+"),  # word
)


def split_reply(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """Split `text` into parts of at most `limit` characters, in order, at the last
    paragraph, sentence or word boundary that fits (a word longer than `limit` is cut).
    The text inside a part is kept as written."""
    parts: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _last_break(rest, limit)
        head, rest = rest[: cut[0]].rstrip(), rest[cut[1] :].lstrip()
        parts.append(head)
    if rest:
        parts.append(rest)
    return parts


def _last_break(text: str, limit: int) -> tuple[int, int]:
    """(end of this part, start of the next) for the best boundary within `limit`."""
    window = text[: limit + 1]
    for pattern in _BREAKS:
        matches = [m for m in pattern.finditer(window) if 0 < m.start() <= limit]
        if matches:
            return matches[-1].start(), matches[-1].end()
    return limit, limit
