"""What user text may carry into the model: no control characters (but line breaks and
tabs) and no bidirectional overrides, embeddings or isolates, which can make text read
differently from what it is ("Trojan Source"). Applied to the merged user turn as it is
passed to the model; the staged messages and the recorded turn keep what the user sent."""

from __future__ import annotations

import re

# C0 controls but tab and line feed, DEL, C1 controls; bidi embeddings and overrides
# (U+202A-U+202E) and isolates (U+2066-U+2069).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def model_input(text: str) -> str:
    """`text` without control and bidirectional-override characters (a carriage return
    before a line feed goes with them; a lone one becomes a line feed)."""
    return _UNSAFE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
