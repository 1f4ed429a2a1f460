"""What the model is told a person sent: each message as lines of text, in arrival order.

A text is its body. Everything else gets a line in brackets that says what it is, so that
nothing a person sent is lost on the way to the model:
  [in answer to an ad: "Summer sale" — 20% off all shoes (https://fb.me/abc)]
  [replying to your earlier message: "Your order ships on Monday."]
  [photo 1 (image/jpeg)]
  [voice note 2 (audio/ogg)]
  [document 3: PDF (application/pdf)]
  [location: 37.787933, -122.393746; label: Twilio; address: 101 Spear St, San Francisco]
  [tapped the button "Yes, confirm" (payload: confirm_yes)]
  [a message of type "order" that cannot be shown here]
Only these lines begin with a bracket: in every text that is not the service's own (what a
person wrote, and the types, names, labels, addresses, buttons and quotes inside these
lines), brackets and backslashes are escaped with a backslash (sanitize.escaped, the one
escaping step; a voice note's transcript goes through it too).
A media line stands where the media is: Generate Reply puts the photo itself after its
line, and a voice note's transcript in its place (functions/answer/turn_input.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from functions.answer.rules.sanitize import escaped
from functions.intake.inbound import Attachment, MessageContent
from functions.storage.models import TurnMedia

QUOTE_CHARS = 300  # of a quoted earlier message


class MediaKind(StrEnum):
    PHOTO = "photo"
    STICKER = "sticker"
    VOICE_NOTE = "voice note"
    AUDIO = "audio"
    VIDEO = "video"
    CONTACT = "contact card"
    DOCUMENT = "document"
    FILE = "file"


# Names people know for the document types WhatsApp users send most.
_DOCUMENT_NAMES = {
    "application/pdf": "PDF",
    "application/msword": "Word document",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "Word document",
    "application/vnd.ms-excel": "Excel spreadsheet",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "Excel spreadsheet",
    "application/vnd.ms-powerpoint": "PowerPoint presentation",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "PowerPoint presentation",
    "text/plain": "text file",
    "text/csv": "CSV file",
    "application/zip": "ZIP archive",
}


def mime_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def media_kind(message_type: str | None, content_type: str) -> MediaKind:
    """The kind of a media item, from the message's type and the item's MIME type
    (a WhatsApp voice note is audio/ogg; a sticker is a WebP image of type sticker)."""
    mime = mime_type(content_type)
    if message_type == "sticker":
        return MediaKind.STICKER
    if message_type == "contacts" or mime in ("text/vcard", "text/x-vcard"):
        return MediaKind.CONTACT
    if mime.startswith("image/"):
        return MediaKind.PHOTO
    if mime.startswith("audio/"):
        return MediaKind.VOICE_NOTE if mime in ("audio/ogg", "audio/opus") else MediaKind.AUDIO
    if mime.startswith("video/"):
        return MediaKind.VIDEO
    if mime in _DOCUMENT_NAMES or message_type == "document" or mime.startswith("application/"):
        return MediaKind.DOCUMENT
    return MediaKind.FILE


def media_line(kind: str, number: int, content_type: str) -> str:
    mime = escaped(mime_type(content_type)) or "type unknown"
    if kind == MediaKind.DOCUMENT:
        return f"[document {number}: {_DOCUMENT_NAMES.get(mime, 'file')} ({mime})]"
    return f"[{kind} {number} ({mime})]"


@dataclass(frozen=True)
class MediaSlot:
    """A media item's place among a message's lines (numbered when the turn is built)."""

    attachment: Attachment
    kind: MediaKind


def message_lines(message: MessageContent, quoted: str | None = None) -> list[str | MediaSlot]:
    """The lines that tell what one message holds: the ad it answers, the message it
    replies to (`quoted`: its text, when it is one of our replies), its media, its
    location, the button tapped, its text."""
    lines: list[str | MediaSlot] = []
    if message.referral:
        ad = message.referral
        headline = f'"{escaped(ad.headline)}"' if ad.headline else ""
        text = " — ".join(p for p in (headline, escaped(ad.body or "")) if p) or "no text"
        source = f" ({escaped(ad.source_url)})]" if ad.source_url else "]"
        lines.append(f"[in answer to an ad: {text}" + source)
    if message.replied_to_sid:
        lines.append(
            f'[replying to your earlier message: "{_clip(quoted)}"]'
            if quoted
            else "[replying to an earlier message]"
        )
    lines += [MediaSlot(a, media_kind(message.message_type, a.content_type)) for a in message.media]
    if message.location:
        place = message.location
        details = [f"{escaped(place.latitude)}, {escaped(place.longitude)}"]
        details += [f"label: {escaped(place.label)}"] if place.label else []
        details += [f"address: {escaped(place.address)}"] if place.address else []
        lines.append(f"[location: {'; '.join(details)}]")
    if message.button_text or message.button_payload:
        payload = f" (payload: {escaped(message.button_payload)})" if message.button_payload else ""
        lines.append(f'[tapped the button "{escaped(message.button_text or "")}"{payload}]')
    if message.body.strip() and message.body != message.button_text:
        lines.append(escaped(message.body))  # the person's text: no line of it reads like ours
    if not lines:
        kind = escaped(message.message_type or "unknown")
        lines.append(f'[a message of type "{kind}" that cannot be shown here]')
    return lines


@dataclass(frozen=True)
class RenderedTurn:
    body: str  # the user turn as text, one message after the other
    media: list[TurnMedia]  # each media item with the place of its line in the body


def render(messages: Iterable[MessageContent], quotes: Mapping[str, str] | None = None) -> RenderedTurn:
    """The messages, in the given order, as one user turn."""
    quotes = quotes or {}
    lines: list[str] = []
    media: list[TurnMedia] = []
    offset = 0
    for message in messages:
        quoted = quotes.get(message.replied_to_sid or "")
        for line in message_lines(message, quoted):
            if isinstance(line, MediaSlot):
                number = len(media) + 1
                text = media_line(line.kind, number, line.attachment.content_type)
                media.append(
                    TurnMedia(
                        url=line.attachment.url,
                        content_type=line.attachment.content_type,
                        kind=line.kind.value,
                        number=number,
                        offset=offset,
                        length=len(text),
                    )
                )
                line = text
            lines.append(line)
            offset += len(line) + 1
    return RenderedTurn(body="\n".join(lines), media=media)


def size_of(message: MessageContent) -> int:
    """The bytes a message adds to a user turn (its lines and its media's URLs)."""
    text = render([message]).body
    return len(text.encode()) + sum(len(a.url) for a in message.media) + 1


def _clip(text: str | None) -> str:
    text = escaped(" ".join((text or "").split()))
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
