"""Splitting a reply into messages the channel accepts.

Twilio refuses a body over 1,600 characters with error 21617, where "some special
characters such as emojis, emoticons or non-GSM characters will be counted as multiple
characters" (https://www.twilio.com/docs/api/errors/21617). The docs do not give the
rule; we count UTF-16 code units, as UCS-2 encodes a message: an emoji outside the Basic
Multilingual Plane counts 2, so that no part is ever over the limit."""

from __future__ import annotations

import re
import unicodedata

MAX_MESSAGE_CHARS = 1600  # Twilio's limit for one message body, in UTF-16 code units

_BREAKS = (
    re.compile(r"\n\s*\n"),  # paragraph
    re.compile(r"(?<=[.!?…])\s+"),  # sentence
    re.compile(r"\s+"),  # word
)
_ZERO_WIDTH_JOINER = "\u200d"


def utf16_units(text: str) -> int:
    """The length of `text` as Twilio counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def split_reply(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """Split `text` into parts of at most `limit` UTF-16 code units, in order, at the last
    paragraph, sentence or word boundary that fits (a word longer than `limit` is cut,
    never inside a character nor, where it can be helped, inside an emoji sequence).
    The text inside a part is kept as written."""
    parts: list[str] = []
    rest = text.strip()
    while utf16_units(rest) > limit:
        end, start = _last_break(rest, _fitting(rest, limit))
        head, rest = rest[:end].rstrip(), rest[start:].lstrip()
        parts.append(head)
    if rest:
        parts.append(rest)
    return parts


def _fitting(text: str, limit: int) -> int:
    """How many characters (code points) of `text` fit in `limit` UTF-16 code units."""
    units = 0
    for index, character in enumerate(text):
        units += 2 if ord(character) > 0xFFFF else 1
        if units > limit:
            return index
    return len(text)


def _last_break(text: str, fits: int) -> tuple[int, int]:
    """(end of this part, start of the next) for the best boundary within the first
    `fits` characters."""
    window = text[: fits + 1]
    for pattern in _BREAKS:
        matches = [m for m in pattern.finditer(window) if 0 < m.start() <= fits]
        if matches:
            return matches[-1].start(), matches[-1].end()
    cut = fits
    while cut > 1 and splits_a_symbol(text, cut):
        cut -= 1
    cut = cut if cut > 1 else fits
    return cut, cut


def splits_a_symbol(text: str, cut: int) -> bool:
    """Whether cutting before `text[cut]` would split a sequence drawn as one symbol (a
    ZWJ emoji, a variation selector, a skin tone, a combining mark)."""
    after, before = text[cut], text[cut - 1]
    return (
        before == _ZERO_WIDTH_JOINER
        or after == _ZERO_WIDTH_JOINER
        or unicodedata.category(after) in ("Mn", "Me")
        or 0xFE00 <= ord(after) <= 0xFE0F  # variation selectors
        or 0x1F3FB <= ord(after) <= 0x1F3FF  # skin tone modifiers
    )
