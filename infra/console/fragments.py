"""A conversation's fragments as they arrived: when, of what kind (text, photo, voice,
location, button, ...), and what they said (shown only when the operator asks).

A pending or set-aside message is read as it was staged. An answered one is a bodiless
tombstone by then: its arrival time comes from its user turn (`first_received_at` plus
`arrival_offsets_ms`), and its kind and text from the turn's body, split back into the
messages it was merged from (functions/answer/rules/content.py: only the lines that say
what a message held begin with a bracket, and a message's own text comes last). Where that
split is ambiguous (a text of several lines beside another text), the fragments are drawn
without a kind and the batch's text stays whole."""

from __future__ import annotations

import re
from dataclasses import dataclass

from functions.answer.rules.content import MediaKind, media_kind
from functions.storage.models import StagedMessage, Turn
from infra.replay.sources import epoch_ms

PREVIEW_CHARS = 60
_ESCAPED = re.compile(r"\\([\\\[\]])")  # functions/answer/rules/sanitize.py `escaped`
# The kind a bracketed line says a message held, by how the line begins.
_BRACKETS = {
    "[photo": "photo",
    "[sticker": "sticker",
    "[voice note": "voice",
    "[audio": "voice",
    "[video": "video",
    "[document": "document",
    "[file": "document",
    "[contact card": "contact",
    "[location": "location",
    "[tapped the button": "button",
    "[in answer to an ad": "ad reply",
}
_MEDIA = {MediaKind.VOICE_NOTE: "voice", MediaKind.AUDIO: "voice", MediaKind.FILE: "document"}


@dataclass(frozen=True)
class Fragment:
    at_ms: int
    message_sid: str
    kind: str  # text, photo, voice, location, button, ...; "message" when not known
    preview: str  # personal data: rendered only when the operator asks
    window_id: str  # the batch window that took it; "" while none has
    state: str  # answered, pending, set aside (or the user turn's status)


def of_staged(message: StagedMessage) -> Fragment:
    kind = "text"
    if message.media:
        media = media_kind(message.message_type, message.media[0].content_type)
        kind = _MEDIA.get(media, media.value)
    elif message.location:
        kind = "location"
    elif message.button_text or message.button_payload:
        kind = "button"
    elif message.message_type not in (None, "", "text"):
        kind = str(message.message_type)
    place = message.location
    text = message.body or message.button_text or (place.label or place.address or "" if place else "")
    return Fragment(
        at_ms=epoch_ms(message.received_at),
        message_sid=message.message_sid,
        kind=kind,
        preview=_clip(text),
        window_id=message.failed_in or "",
        state="set aside" if message.failed_in else "pending",
    )


def of_turn(turn: Turn) -> list[Fragment]:
    """The fragments a user turn merged, in arrival order."""
    if turn.role != "user" or not turn.first_received_at:
        return []
    start = epoch_ms(turn.first_received_at)
    offsets = turn.arrival_offsets_ms or [0]
    sids = turn.message_sids or [""] * len(offsets)
    messages = split_body(turn.body, len(sids))
    state = "answered" if turn.status in ("answered", "") else turn.status.replace("_", " ")
    return [
        Fragment(
            at_ms=start + (offsets[n] if n < len(offsets) else offsets[-1]),
            message_sid=sid,
            kind=kind_of(messages[n]) if messages else "message",
            preview=preview_of(messages[n]) if messages else "",
            window_id=turn.window_id,
            state=state,
        )
        for n, sid in enumerate(sids)
    ]


def split_body(body: str, count: int) -> list[list[str]] | None:
    """The turn's lines, grouped by the message they came from (`count` messages); None
    when the grouping cannot be told."""
    lines = body.split("\n")
    if count <= 0 or not body:
        return None
    groups: list[list[str]] = [[lines[0]]]
    for previous, line in zip(lines, lines[1:], strict=False):
        if _is_bracket(line) and not _is_bracket(previous):
            groups.append([line])  # a message's text comes last: a bracket after it is the next one
        else:
            groups[-1].append(line)
    if len(groups) == count:
        return groups
    if len(lines) == count:
        return [[line] for line in lines]
    return None


def kind_of(lines: list[str]) -> str:
    for line in lines:
        for start, kind in _BRACKETS.items():
            if line.startswith(start):
                return kind
    return "text" if any(not _is_bracket(line) for line in lines) else "message"


def preview_of(lines: list[str]) -> str:
    """What a message said, clipped (`text_of`)."""
    return _clip(text_of(lines))


def text_of(lines: list[str]) -> str:
    """What a message said: its own text, else its bracketed lines (a location's, a
    button's), without their brackets."""
    own = _own_text(lines)
    return "\n".join(own) if own else " ".join(line.strip("[]") for line in lines)


def said_of(turn: Turn) -> list[tuple[str, str]]:
    """A user turn's messages as (kind, what it said), in arrival order; one ("message",
    the batch's own text) when they cannot be told apart."""
    messages = split_body(turn.body, len(turn.message_sids) or turn.message_count or 1)
    if messages is None:
        return [("message", "\n".join(_own_text(turn.body.split("\n"))))] if turn.body else []
    return [(kind_of(lines), text_of(lines)) for lines in messages]


def merged_preview(turn: Turn) -> str:
    """A user turn's text when its fragments cannot be told apart."""
    return _clip(" ".join(_own_text(turn.body.split("\n"))))


def _own_text(lines: list[str]) -> list[str]:
    """What the person wrote (the lines without a bracket), unescaped for reading."""
    own = [line for line in lines if not _is_bracket(line)]
    return [_ESCAPED.sub(r"\1", line) for line in own]


def _is_bracket(line: str) -> bool:
    return line.startswith("[")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
