"""What Twilio sends: the channels and the inbound message, validated.

A message is more than its `Body`. On WhatsApp, Twilio's webhook also names the kind of
message (`MessageType`: text, image, audio, video, document, sticker, location,
contacts, button, interactive, ...) and carries, by kind: a shared location (`Latitude`,
`Longitude`, `Address`, `Label`), media (`NumMedia`, `MediaUrlN`, `MediaContentTypeN`),
the button a user tapped (`ButtonText`, `ButtonPayload`), the message a reply answers
(`OriginalRepliedMessageSid`, `OriginalRepliedMessageSender`) and the click-to-WhatsApp
ad a conversation started from (`Referral*`); with Advanced Opt-Out, `OptOutType` names
an opt-out, opt-in or help keyword. Their Body may be empty. Parameters:
https://www.twilio.com/docs/messaging/guides/webhook-request."""

import base64
import binascii
import re
from enum import StrEnum
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_BODY_CHARS = 10_000  # WhatsApp allows 4,096 and SMS 1,600; keep a margin, refuse more
MAX_MEDIA = 10
MAX_FIELD_CHARS = 2_000  # an address, a label, a button, an ad's headline or body
MAX_NAME_CHARS = 200  # a type, an SID, a sender, a profile name
# Twilio's AccountSid: checked before the account is looked up anywhere.
ACCOUNT_SID = re.compile(r"^AC[0-9a-fA-F]{32}$")


def ascii_count(value: object) -> int | None:
    """A count Twilio sends (NumMedia, ErrorCode): ASCII digits only, or None. `str.isdigit`
    also takes "²" and "١", which `int` refuses or reads as another number."""
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


MESSAGE_SID = r"^(SM|MM)[0-9a-fA-F]{32}$"
# A sender's address: an E.164 number ("+" and at most 15 digits, the first not 0:
# https://www.twilio.com/docs/glossary/what-e164), prefixed `whatsapp:` on WhatsApp. It forms
# the conversation's keys and the counters', so anything else is refused before it forms one.
SENDER_ADDRESS = r"^(whatsapp:)?\+[1-9][0-9]{1,14}$"

# Twilio's default opt-out and opt-in keywords: a message that is exactly one of them
# (one word, any case) opts the sender out of, or back into, messages from the number
# (https://www.twilio.com/docs/messaging/tutorials/advanced-opt-out; "only single-word
# messages trigger the block": https://help.twilio.com/articles/223134027). With Advanced
# Opt-Out, a Messaging Service's own keywords arrive flagged with `OptOutType`.
# Only typed text counts (is_typed_text); Twilio itself applies these keywords to SMS, and
# to WhatsApp only through a Messaging Service's Advanced Opt-Out.
OPT_OUT_KEYWORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"})
OPT_IN_KEYWORDS = frozenset({"START", "YES", "UNSTOP"})
Consent = Literal["opt_out", "opt_in"]


class Channel(StrEnum):
    WHATSAPP = "whatsapp"
    SMS = "sms"


class MessagePart(BaseModel):
    """What a person sent, or a part of it, read leniently from Twilio's text (NumMedia
    "2" is 2): a field it does not know is ignored, and an error names the field, never
    its value (personal data)."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True, defer_build=True)


class FixedPart(MessagePart):
    """A part that does not change once read."""

    model_config = ConfigDict(frozen=True)


class Location(FixedPart):
    """A shared location. Coordinates are kept as Twilio sends them (decimal strings,
    as precise as the user's phone made them), checked to be coordinates."""

    latitude: Annotated[str, Field(max_length=40)]
    longitude: Annotated[str, Field(max_length=40)]
    address: str | None = None
    label: str | None = None

    @model_validator(mode="after")
    def _on_earth(self) -> "Location":
        latitude, longitude = float(self.latitude), float(self.longitude)  # ValueError: not numbers
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
            raise ValueError("coordinates out of range")
        return self


class Attachment(FixedPart):
    """One media item of a message: Twilio's URL for it and its MIME type."""

    url: Annotated[str, Field(max_length=MAX_FIELD_CHARS)]
    content_type: str = ""


class Referral(FixedPart):
    """The click-to-WhatsApp ad the user answered (Twilio's `Referral*` parameters)."""

    headline: str | None = None
    body: str | None = None
    source_type: str | None = None
    source_id: str | None = None
    source_url: str | None = None
    media_content_type: str | None = None


class MessageContent(MessagePart):
    """What a person sent in one message, whatever its kind, as a staged message stores
    it (InboundMessage.from_form reads it from Twilio's parameters)."""

    body: Annotated[str, Field(max_length=MAX_BODY_CHARS)] = ""
    message_type: str | None = None
    media: tuple[Attachment, ...] = ()
    location: Location | None = None
    button_text: str | None = None
    button_payload: str | None = None
    replied_to_sid: str | None = None
    replied_to_sender: str | None = None
    referral: Referral | None = None
    consent: Consent | None = None  # an opt-out or opt-in keyword

    @property
    def has_content(self) -> bool:
        """Whether the person sent anything at all: a text, media, a location, a button,
        an ad reply, or a kind of message that has no field of its own here."""
        kinds = (self.body.strip(), self.media, self.location, self.button_text, self.referral)
        return any(kinds) or self.message_type not in (None, "", "text")


class InboundMessage(MessageContent):
    """A Twilio Messaging webhook (WhatsApp or SMS), validated."""

    message_sid: Annotated[str, Field(pattern=MESSAGE_SID)]
    account_sid: Annotated[str, Field(pattern=ACCOUNT_SID.pattern)]
    from_address: Annotated[str, Field(pattern=SENDER_ADDRESS)]
    to_address: Annotated[str, Field(min_length=3, max_length=100)]
    num_media: Annotated[int, Field(ge=0, le=MAX_MEDIA)] = 0
    profile_name: str | None = None
    opt_out_type: str | None = None

    @model_validator(mode="after")
    def _has_content(self) -> "InboundMessage":
        if not self.has_content:
            raise ValueError("a message needs a body, media, a location, a button or an ad reply")
        return self

    @classmethod
    def from_form(cls, form: dict[str, str]) -> "InboundMessage":
        """The webhook's form, validated (pydantic's ValidationError if it is not a message)."""
        return cls.model_validate(_gathered(form))

    def content(self) -> MessageContent:
        """What the person sent, without the webhook's envelope."""
        return MessageContent(**{name: getattr(self, name) for name in MessageContent.model_fields})


# Twilio's parameter for each field of a message, and how many characters are kept of it:
# a long label, button or ad text is cut, never a reason to drop the message it came with.
_PARAMETERS = {
    "Body": ("body", None),
    "MessageType": ("message_type", MAX_NAME_CHARS),
    "ButtonText": ("button_text", MAX_FIELD_CHARS),
    "ButtonPayload": ("button_payload", MAX_FIELD_CHARS),
    "OriginalRepliedMessageSid": ("replied_to_sid", MAX_NAME_CHARS),
    "OriginalRepliedMessageSender": ("replied_to_sender", MAX_NAME_CHARS),
    "MessageSid": ("message_sid", None),
    "AccountSid": ("account_sid", None),
    "From": ("from_address", None),
    "To": ("to_address", None),
    "NumMedia": ("num_media", None),
    "ProfileName": ("profile_name", MAX_NAME_CHARS),
    "OptOutType": ("opt_out_type", MAX_NAME_CHARS),
}
_EMPTY_IS_ABSENT = {
    "ButtonText",
    "ButtonPayload",
    "OriginalRepliedMessageSid",
    "OriginalRepliedMessageSender",
}


def _clip(value: Any, limit: int) -> Any:
    return value[:limit] if isinstance(value, str) else value


def _gathered(form: dict[str, Any]) -> dict[str, Any]:
    """Twilio's flat parameters, gathered into the message's fields: the media items, the
    location, the ad, and whether the message is an opt-out or opt-in keyword."""
    typed = form.get("Body") if is_typed_text(form) else None
    gathered: dict[str, Any] = {"consent": _consent(form.get("OptOutType"), typed)}
    for parameter, (name, limit) in _PARAMETERS.items():
        value = form.get(parameter)
        if value is None or (parameter in _EMPTY_IS_ABSENT and value == ""):
            continue
        if name in ("from_address", "to_address") and isinstance(value, str):
            value = value.strip()
        gathered[name] = _clip(value, limit) if limit else value
    count = ascii_count(form.get("NumMedia") or "0")
    if count is not None:
        gathered["media"] = [
            {
                "url": form[f"MediaUrl{i}"],
                "content_type": _clip(form.get(f"MediaContentType{i}") or "", MAX_NAME_CHARS),
            }
            for i in range(min(count, MAX_MEDIA))
            if form.get(f"MediaUrl{i}")
        ]
    if form.get("Latitude") or form.get("Longitude"):
        gathered["location"] = {
            "latitude": form.get("Latitude", ""),
            "longitude": form.get("Longitude", ""),
            "address": _clip(form.get("Address"), MAX_FIELD_CHARS) or None,
            "label": _clip(form.get("Label"), MAX_FIELD_CHARS) or None,
        }
    referral = {
        name: _clip(form.get(f"Referral{field}"), limit) or None for name, (field, limit) in _REFERRAL.items()
    }
    if any(referral.values()):
        gathered["referral"] = referral
    return gathered


_REFERRAL = {
    "headline": ("Headline", MAX_FIELD_CHARS),
    "body": ("Body", MAX_FIELD_CHARS),
    "source_type": ("SourceType", MAX_NAME_CHARS),
    "source_id": ("SourceId", MAX_NAME_CHARS),
    "source_url": ("SourceUrl", MAX_FIELD_CHARS),
    "media_content_type": ("MediaContentType", MAX_NAME_CHARS),
}


# What marks a message as a tap rather than typed text: a quick-reply button (its label is
# also its Body), or a reply to an interactive list or button message.
_TAPPED = ("ButtonText", "ButtonPayload", "ListId", "ListTitle", "InteractiveData")


def is_typed_text(form: dict[str, Any]) -> bool:
    """Whether the person typed the message: a text (`MessageType` absent, as on SMS, or
    `text`) that carries no button or interactive reply. Only typed text can be a keyword:
    a button labelled "Cancel" or "Stop" is an answer, not an opt-out."""
    if (form.get("MessageType") or "text").strip().lower() != "text":
        return False
    return not any(form.get(field) for field in _TAPPED)


def _consent(opt_out_type: str | None, body: str | None) -> Consent | None:
    """`OptOutType` when Twilio's Advanced Opt-Out flagged the message (STOP, START; HELP
    is an ordinary message here), else the default keywords, alone in the body (None: not
    typed text, never a keyword unless Twilio flagged it)."""
    flagged = (opt_out_type or "").strip().upper()
    word = flagged or (body or "").strip().upper()
    if word == "STOP" or (not flagged and word in OPT_OUT_KEYWORDS):
        return "opt_out"
    if word == "START" or (not flagged and word in OPT_IN_KEYWORDS):
        return "opt_in"
    return None


def address_key(channel: Channel, user_address: str, our_address: str) -> str:
    """Key of the conversation between a user and one of our numbers on a channel."""
    return f"{channel.value}#{user_address}#{our_address}"


class UnreadableForm(ValueError):
    """A webhook body refused before it is parsed: `status` is the HTTP answer (413 too
    large, 400 not a well-formed UTF-8 form)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def read_form(body: str | None, base64_encoded: bool, max_bytes: int, max_fields: int) -> dict[str, str]:
    """The fields of a form body (application/x-www-form-urlencoded), read strictly and
    within limits: at most `max_bytes` bytes (checked before decoding anything), at most
    `max_fields` fields, each name once, valid UTF-8 inside and outside the %-escapes."""
    text = body or ""
    if len(text) > (max_bytes * 4) // 3 + 4:  # base64 or not, it cannot be within the limit
        raise UnreadableForm(413, "body too large")
    try:
        raw = base64.b64decode(text, validate=True) if base64_encoded else text.encode("utf-8")
    except (binascii.Error, UnicodeEncodeError) as error:
        raise UnreadableForm(400, "body is not valid base64 or UTF-8") from error
    if len(raw) > max_bytes:
        raise UnreadableForm(413, "body too large")
    try:
        pairs = parse_qsl(
            raw.decode("utf-8"), keep_blank_values=True, errors="strict", max_num_fields=max_fields
        )
    except UnicodeDecodeError as error:
        raise UnreadableForm(400, "body is not valid UTF-8") from error
    except ValueError as error:  # more fields than max_num_fields
        raise UnreadableForm(400, "too many fields") from error
    form = dict(pairs)
    if len(form) != len(pairs):
        raise UnreadableForm(400, "a field is repeated")
    return form
