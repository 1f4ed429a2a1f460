"""What Twilio sends: the channels and the inbound message, validated."""

from __future__ import annotations

import base64
import binascii
import re
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_BODY_CHARS = 10_000  # WhatsApp allows 4,096 and SMS 1,600; keep a margin, refuse more
MAX_MEDIA = 10
# Twilio's AccountSid: checked before the account is looked up anywhere.
ACCOUNT_SID = re.compile(r"^AC[0-9a-fA-F]{32}$")


class Channel(StrEnum):
    WHATSAPP = "whatsapp"
    SMS = "sms"


class InboundMessage(BaseModel):
    """A Twilio Messaging webhook (WhatsApp or SMS), validated. Field names are Twilio's."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    message_sid: str = Field(alias="MessageSid", pattern=r"^(SM|MM)[0-9a-fA-F]{32}$")
    account_sid: str = Field(alias="AccountSid", pattern=r"^AC[0-9a-fA-F]{32}$")
    from_address: str = Field(alias="From", min_length=3, max_length=100)
    to_address: str = Field(alias="To", min_length=3, max_length=100)
    body: str = Field("", alias="Body", max_length=MAX_BODY_CHARS)
    num_media: int = Field(0, alias="NumMedia", ge=0, le=MAX_MEDIA)
    profile_name: str | None = Field(None, alias="ProfileName", max_length=200)
    media_urls: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def collect_media(cls, form: Any) -> Any:
        if isinstance(form, dict):
            count = form.get("NumMedia") or "0"
            if str(count).isdigit():
                urls = [form.get(f"MediaUrl{i}") for i in range(min(int(count), MAX_MEDIA))]
                form = {**form, "media_urls": tuple(u for u in urls if u)}
        return form

    @field_validator("from_address", "to_address")
    @classmethod
    def strip_address(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def has_content(self) -> InboundMessage:
        if not self.body.strip() and not self.media_urls:
            raise ValueError("a message needs a body or media")
        return self


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
