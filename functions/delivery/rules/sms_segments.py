"""SMS segments, counted as Twilio counts them, and a reply cut to a number of them.

An SMS is billed per segment (https://www.twilio.com/docs/glossary/what-sms-character-limit):
a body in GSM-7 fits 160 characters in one segment and 153 in each segment of a longer one
(a 6-byte header joins them); a body with any character outside GSM-7 is sent in UCS-2,
70 characters in one segment and 67 in each of a longer one
(https://www.twilio.com/docs/glossary/what-is-ucs-2-character-encoding: "If you include any
non GSM-7 characters in your message, we will automatically fall back to UCS-2"). UCS-2
counts UTF-16 code units: an emoji outside the Basic Multilingual Plane takes 2. In GSM-7
the characters of the extension table (`^ { } \\ [ ~ ] | €` and form feed) take 2 septets.
A character is never split between two segments: Twilio's own calculator
(github.com/TwilioDevEd/message-segment-calculator, src/libs/SegmentedMessage.ts and
UnicodeToGSM.ts, whose GSM-7 table this module copies) moves it to the next one, as it
does a whole emoji sequence in UCS-2. Twilio's Smart Encoding (a Messaging Service
option that replaces curly quotes and the like) is not assumed: without it the count is
the same or higher, never lower.

A reply longer than 1,600 characters goes out as several messages (replies.split_reply),
each segmented on its own: a reply's segments are the sum over its parts."""

from __future__ import annotations

import re
from enum import StrEnum

from functions.delivery.rules.replies import split_reply, splits_a_symbol, utf16_units

LIMITED = "sms_segments"  # the assistant turn's `limited` when its reply was cut here


class Encoding(StrEnum):
    GSM7 = "GSM-7"
    UCS2 = "UCS-2"


# GSM 03.38's default alphabet, as Twilio's calculator maps it (one septet each).
GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
# Its extension table: an escape septet and one more, so each counts 2.
GSM7_EXTENSION = frozenset("\f^{}\\[~]|€")

SINGLE_SEGMENT = {Encoding.GSM7: 160, Encoding.UCS2: 70}  # septets, or UTF-16 code units
PER_SEGMENT = {Encoding.GSM7: 153, Encoding.UCS2: 67}  # each segment of a longer message

_SENTENCE_END = re.compile(r"[.!?…](?=[\"')\]]*(?:\s|$))|\n")
_WORD_END = re.compile(r"\S(?=\s|$)")


def encoding(text: str) -> Encoding:
    """How Twilio encodes `text`: GSM-7 when every character is in its table, else UCS-2."""
    gsm = GSM7_BASIC | GSM7_EXTENSION
    return Encoding.GSM7 if all(character in gsm for character in text) else Encoding.UCS2


def message_segments(body: str) -> int:
    """The segments of one SMS body (0 for an empty body)."""
    chosen = encoding(body)
    sizes = _symbol_sizes(body, chosen)
    if not sizes:
        return 0
    if sum(sizes) <= SINGLE_SEGMENT[chosen]:
        return 1
    capacity, segments, free = PER_SEGMENT[chosen], 1, PER_SEGMENT[chosen]
    for size in sizes:
        if size > free:  # never split between two segments: it opens the next one
            segments, free = segments + 1, capacity
        free -= size
    return segments


def reply_segments(text: str) -> int:
    """The segments of a reply, sent as the parts split_reply makes of it."""
    return sum(message_segments(part) for part in split_reply(text))


def cap_segments(text: str, max_segments: int) -> tuple[str, bool]:
    """`text` cut to at most `max_segments` segments, and whether it was cut (0: no cap).
    The cut ends at the last sentence that fits, when that keeps at least half of what
    cutting between words would; otherwise after the last word that fits, with an
    ellipsis ("..." in GSM-7, "…" where the reply is UCS-2 anyway). A single word too long
    for the cap is cut between characters, never inside an emoji sequence."""
    text = text.strip()
    if max_segments <= 0 or reply_segments(text) <= max_segments:
        return text, False
    sentence = _longest_fitting([m.end() for m in _SENTENCE_END.finditer(text)], text, max_segments, "")
    words = _longest_fitting([m.end() for m in _WORD_END.finditer(text)], text, max_segments, "...")
    if sentence and len(sentence) * 2 >= len(words):
        return sentence, True
    if words:
        return words, True
    characters = [
        end for end in range(1, len(text) + 1) if end == len(text) or not splits_a_symbol(text, end)
    ]
    return _longest_fitting(characters, text, max_segments, "..."), True


def _longest_fitting(ends: list[int], text: str, max_segments: int, ellipsis: str) -> str:
    """The longest `text[:end]` (plus the ellipsis) over `ends` (ascending) that fits in
    `max_segments`; empty if none does. A longer prefix never takes fewer segments, so
    the search halves."""
    low, high, best = 0, len(ends) - 1, ""
    while low <= high:
        middle = (low + high) // 2
        candidate = _with_ellipsis(text[: ends[middle]].rstrip(), ellipsis)
        if candidate.strip() and reply_segments(candidate) <= max_segments:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def _with_ellipsis(kept: str, ellipsis: str) -> str:
    if not ellipsis or not kept:
        return kept
    return kept + ("…" if encoding(kept) is Encoding.UCS2 else ellipsis)


def _symbol_sizes(text: str, chosen: Encoding) -> list[int]:
    """What each symbol of `text` takes: septets in GSM-7; UTF-16 code units in UCS-2,
    where an emoji sequence (joined by ZWJ, a skin tone, a variation selector, a
    combining mark) is one symbol, kept in one segment as Twilio's calculator keeps a
    grapheme."""
    if chosen is Encoding.GSM7:
        return [2 if character in GSM7_EXTENSION else 1 for character in text]
    sizes: list[int] = []
    for index, character in enumerate(text):
        units = utf16_units(character)
        if index and splits_a_symbol(text, index):
            sizes[-1] += units
        else:
            sizes.append(units)
    return sizes
