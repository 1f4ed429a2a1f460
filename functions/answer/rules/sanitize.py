"""What user text may carry into the model: no control characters (but line breaks and
tabs), and nothing invisible. Invisible is Unicode's own, maintained definition: the
Default_Ignorable_Code_Point property (DerivedCoreProperties.txt, as the `regex` module's
tables carry it: zero-width characters, bidirectional overrides, embeddings and isolates,
which can make text read differently from what it is ("Trojan Source"), the tag characters
U+E0000-E007F and the variation selectors U+FE00-FE0F and U+E0100-E01EF, which can spell
out hidden text, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0), and the rest of
category Cf (invisible format characters such as the interlinear annotation marks). Kept:
the zero-width joiner inside an emoji sequence, and one U+FE0F (emoji presentation) right
after an emoji. A line or paragraph separator (U+2028, U+2029) becomes a line feed, and
U+2800 BRAILLE PATTERN BLANK, which Unicode does not count as ignorable (it is the blank
braille cell, the space between braille words), a space: what it shows
(docs/adr/0106-invisible-is-unicodes-default-ignorable-code.md).
Applied to the merged user turn as it is passed to the model; the staged messages and the
recorded turn keep what the user sent.

`escaped` is the other half, and the one escaping step for every text that is not the
service's own: the service's own lines in a turn are in square brackets
(functions/answer/rules/content.py, functions/answer/turn_input.py), so in what a person
sent (their text, a transcript of their voice note, a MIME or message type, a label, an
address, a button, a quote) brackets are escaped with a backslash (and a backslash with
another), and no text of theirs reads like one of those lines."""

from __future__ import annotations

import re
import unicodedata

import regex

# C0 controls but tab and line feed, DEL, C1 controls.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]")
_EMOJI = regex.compile(r"\p{Emoji}")
_ZWJ = "\u200d"
_EMOJI_PRESENTATION = "\ufe0f"
_BREAKS = {0x0D: "\n", 0x2028: "\n", 0x2029: "\n", 0x2800: " "}
_ESCAPES = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]"})


def model_input(text: str) -> str:
    """`text` without control and invisible characters (a carriage return before a line
    feed goes with them; a lone one, and a line or paragraph separator, becomes a line
    feed; a braille blank, a space)."""
    text = text.replace("\r\n", "\n").translate(_BREAKS)
    text = _CONTROLS.sub("", text)
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(lambda found: found[0] if _kept(text, found.start()) else "", text)


def escaped(text: str) -> str:
    """A text that is not the service's own, its brackets (and backslashes) escaped with a
    backslash."""
    return text.translate(_ESCAPES)


def _kept(text: str, i: int) -> bool:
    """Whether the invisible character at `i` is part of an emoji: one U+FE0F right after
    an emoji (then a second one follows U+FE0F, not an emoji), or a joiner between two."""
    if text[i] == _EMOJI_PRESENTATION:
        return i > 0 and _EMOJI.match(text[i - 1]) is not None
    return text[i] == _ZWJ and _joins_emoji(text, i)


def _joins_emoji(text: str, i: int) -> bool:
    """A zero-width joiner between two emoji (👩‍💻; after a skin tone or U+FE0F too)."""
    if i == 0 or i + 1 == len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    return (unicodedata.category(before) in ("So", "Sk") or before == _EMOJI_PRESENTATION) and (
        unicodedata.category(after) == "So"
    )
