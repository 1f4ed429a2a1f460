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

from __future__ import annotations

import base64
import binascii
import re
from enum import StrEnum
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

MAX_BODY_CHARS = 10_000  # WhatsApp allows 4,096 and SMS 1,600; keep a margin, refuse more
MAX_MEDIA = 10
MAX_FIELD_CHARS = 2_000  # an address, a label, a button, an ad's headline or body
# Twilio's AccountSid: checked before the account is looked up anywhere.
ACCOUNT_SID = re.compile(r"^AC[0-9a-fA-F]{32}$")
MESSAGE_SID = r"^(SM|MM)[0-9a-fA-F]{32}$"

# Twilio's default opt-out and opt-in keywords: a message that is exactly one of them
# (one word, any case) opts the sender out of, or back into, messages from the number
# (https://www.twilio.com/docs/messaging/tutorials/advanced-opt-out; "only single-word
# messages trigger the block": https://help.twilio.com/articles/223134027). With Advanced
# Opt-Out, a Messaging Service's own keywords arrive flagged with `OptOutType`.
OPT_OUT_KEYWORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"})
OPT_IN_KEYWORDS = frozenset({"START", "YES", "UNSTOP"})
Consent = Literal["opt_out", "opt_in"]


def _clipped(limit: int) -> Any:
    """A text kept to `limit` characters: a long label, button or ad text is cut, never a
    reason to drop the message it came with."""
    return BeforeValidator(lambda value: value[:limit] if isinstance(value, str) else value)


Text = Annotated[str, _clipped(MAX_FIELD_CHARS)]
Name = Annotated[str, _clipped(200)]


class Channel(StrEnum):
    WHATSAPP = "whatsapp"
    SMS = "sms"


class Location(BaseModel):
    """A shared location. Coordinates are kept as Twilio sends them (decimal strings,
    as precise as the user's phone made them), checked to be coordinates."""

    model_config = ConfigDict(frozen=True)

    latitude: str = Field(max_length=40)
    longitude: str = Field(max_length=40)
    address: Text | None = None
    label: Text | None = None

    @model_validator(mode="after")
    def on_earth(self) -> Location:
        latitude, longitude = float(self.latitude), float(self.longitude)  # ValueError: not numbers
        if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
            raise ValueError("coordinates out of range")
        return self


class Attachment(BaseModel):
    """One media item of a message: Twilio's URL for it and its MIME type."""

    model_config = ConfigDict(frozen=True)

    url: str = Field(max_length=MAX_FIELD_CHARS)
    content_type: Name = ""


class Referral(BaseModel):
    """The click-to-WhatsApp ad the user answered (Twilio's `Referral*` parameters)."""

    model_config = ConfigDict(frozen=True)

    headline: Text | None = None
    body: Text | None = None
    source_type: Name | None = None
    source_id: Name | None = None
    source_url: Text | None = None
    media_content_type: Name | None = None


class MessageContent(BaseModel):
    """What a person sent in one message, whatever its kind. Field aliases are Twilio's
    parameter names; the Python names are how a staged message stores them."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    body: str = Field("", alias="Body", max_length=MAX_BODY_CHARS)
    message_type: Name | None = Field(None, alias="MessageType")
    media: tuple[Attachment, ...] = ()
    location: Location | None = None
    button_text: Text | None = Field(None, alias="ButtonText")
    button_payload: Text | None = Field(None, alias="ButtonPayload")
    replied_to_sid: Name | None = Field(None, alias="OriginalRepliedMessageSid")
    replied_to_sender: Name | None = Field(None, alias="OriginalRepliedMessageSender")
    referral: Referral | None = None
    consent: Consent | None = None  # an opt-out or opt-in keyword

    @property
    def has_content(self) -> bool:
        """Whether the person sent anything at all: a text, media, a location, a button,
        an ad reply, or a kind of message that has no field of its own here."""
        kinds = (self.body.strip(), self.media, self.location, self.button_text, self.referral)
        return any(kinds) or self.message_type not in (None, "", "text")


class InboundMessage(MessageContent):
    """A Twilio Messaging webhook (WhatsApp or SMS), validated. Field names are Twilio's."""

    message_sid: str = Field(alias="MessageSid", pattern=MESSAGE_SID)
    account_sid: str = Field(alias="AccountSid", pattern=r"^AC[0-9a-fA-F]{32}$")
    from_address: str = Field(alias="From", min_length=3, max_length=100)
    to_address: str = Field(alias="To", min_length=3, max_length=100)
    num_media: int = Field(0, alias="NumMedia", ge=0, le=MAX_MEDIA)
    profile_name: Name | None = Field(None, alias="ProfileName")
    opt_out_type: Name | None = Field(None, alias="OptOutType")

    @model_validator(mode="before")
    @classmethod
    def gather(cls, form: Any) -> Any:
        """Twilio's flat parameters, gathered: the media items, the location, the ad, and
        whether the message is an opt-out or opt-in keyword."""
        if not isinstance(form, dict):
            return form
        # Twilio's parameters only (capitalized): the gathered fields are computed here.
        twilio = {k: v for k, v in form.items() if isinstance(k, str) and k[:1].isupper()}
        gathered: dict[str, Any] = {**twilio, "consent": _consent(form.get("OptOutType"), form.get("Body"))}
        count = form.get("NumMedia") or "0"
        if str(count).isdigit():
            gathered["media"] = tuple(
                {"url": form[f"MediaUrl{i}"], "content_type": form.get(f"MediaContentType{i}") or ""}
                for i in range(min(int(count), MAX_MEDIA))
                if form.get(f"MediaUrl{i}")
            )
        if form.get("Latitude") or form.get("Longitude"):
            gathered["location"] = {
                "latitude": form.get("Latitude", ""),
                "longitude": form.get("Longitude", ""),
                "address": form.get("Address") or None,
                "label": form.get("Label") or None,
            }
        referral = {name: form.get(f"Referral{field}") or None for name, field in _REFERRAL.items()}
        if any(referral.values()):
            gathered["referral"] = referral
        empty = ("ButtonText", "ButtonPayload", "OriginalRepliedMessageSid", "OriginalRepliedMessageSender")
        return {k: v for k, v in gathered.items() if not (k in empty and v == "")}

    @field_validator("from_address", "to_address")
    @classmethod
    def strip_address(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def sent_something(self) -> InboundMessage:
        if not self.has_content:
            raise ValueError("a message needs a body, media, a location, a button or an ad reply")
        return self

    def content(self) -> MessageContent:
        """What the person sent, without the webhook's envelope."""
        return MessageContent.model_validate(self.model_dump(include=set(MessageContent.model_fields)))


_REFERRAL = {
    "headline": "Headline",
    "body": "Body",
    "source_type": "SourceType",
    "source_id": "SourceId",
    "source_url": "SourceUrl",
    "media_content_type": "MediaContentType",
}


def _consent(opt_out_type: str | None, body: str | None) -> Consent | None:
    """`OptOutType` when Twilio's Advanced Opt-Out flagged the message (STOP, START; HELP
    is an ordinary message here), else the default keywords, alone in the body."""
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
