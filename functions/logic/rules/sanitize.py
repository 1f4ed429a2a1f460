"""What user text may carry into the model: no control characters (but line breaks and
tabs), and no invisible format characters (Unicode category Cf: bidirectional overrides,
embeddings and isolates, which can make text read differently from what it is ("Trojan
Source"), zero-width characters, and the tag characters U+E0000-E007F that can spell out
hidden text), but the zero-width joiner inside an emoji sequence. A line or paragraph
separator (U+2028, U+2029) becomes a line feed. Applied to the merged user turn as it is
passed to the model; the staged messages and the recorded turn keep what the user sent.

`escaped` is the other half: the service's own lines in a turn are in square brackets
(functions/logic/rules/content.py), so brackets a person typed are escaped with a
backslash (and a backslash with another), and no text of theirs reads like one of those
lines."""

from __future__ import annotations

import re
import unicodedata

# C0 controls but tab and line feed, DEL, C1 controls.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ZWJ = "\u200d"
_ESCAPES = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]"})


def model_input(text: str) -> str:
    """`text` without control and invisible format characters (a carriage return before a
    line feed goes with them; a lone one, and a line or paragraph separator, becomes a
    line feed)."""
    text = text.replace("\r\n", "\n").translate({0x0D: "\n", 0x2028: "\n", 0x2029: "\n"})
    text = _CONTROLS.sub("", text)
    if not any(unicodedata.category(c) == "Cf" for c in text):
        return text
    return "".join(c for i, c in enumerate(text) if unicodedata.category(c) != "Cf" or _joins_emoji(text, i))


def escaped(text: str) -> str:
    """A person's text, its brackets (and backslashes) escaped with a backslash."""
    return text.translate(_ESCAPES)


def _joins_emoji(text: str, i: int) -> bool:
    """A zero-width joiner between two emoji (👩‍💻; after a skin tone or U+FE0F too)."""
    if text[i] != _ZWJ or i == 0 or i + 1 == len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    return (unicodedata.category(before) in ("So", "Sk") or before == "\ufe0f") and unicodedata.category(
        after
    ) == "So"
