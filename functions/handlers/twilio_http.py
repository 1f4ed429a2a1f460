"""What every endpoint Twilio calls shares: the form read within limits and the signature
headers (the URL the signature covers: functions/intake/signed_url.py)."""

from __future__ import annotations

from typing import Any

from twilio.request_validator import SIGNATURE_HEADER, SIGNATURE_SETTINGS_HEADER

from functions.intake.admission import Signature
from functions.intake.inbound import UnreadableForm, read_form
from functions.intake.settings import EndpointSettings
from functions.observability import logger

FORM = "application/x-www-form-urlencoded"


def response(status: int, content_type: str, body: str) -> dict[str, Any]:
    """An API Gateway proxy integration response."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_type},
        "body": body,
        "isBase64Encoded": False,
    }


class Refused(Exception):
    """The request is refused before it is read: `response` says why."""

    def __init__(self, refusal: dict[str, Any]) -> None:
        super().__init__(refusal["body"])
        self.response = refusal


def twilio_form(event: dict[str, Any]) -> dict[str, str]:
    """The request's form; Refused unless Twilio posted a form, within the size and field
    limits (WEBHOOK_MAX_BODY_BYTES, WEBHOOK_MAX_FIELDS), in UTF-8."""
    content_type = (_headers(event).get("content-type") or "").split(";")[0].strip().lower()
    if content_type != FORM:
        logger.warning("Request refused: not a form", extra={"content_type": content_type[:100]})
        raise Refused(response(415, "text/plain", f"Unsupported Media Type: Twilio posts {FORM}"))
    settings = EndpointSettings.get()
    try:
        return read_form(
            event.get("body"),
            bool(event.get("isBase64Encoded")),
            settings.webhook_max_body_bytes,
            settings.webhook_max_fields,
        )
    except UnreadableForm as error:
        logger.warning("Request refused: unreadable form", extra={"reason": str(error)})
        raise Refused(response(error.status, "text/plain", str(error))) from error


def signature_of(event: dict[str, Any]) -> Signature:
    headers = _headers(event)
    return Signature(headers.get(SIGNATURE_HEADER.lower()), headers.get(SIGNATURE_SETTINGS_HEADER.lower()))


def _headers(event: dict[str, Any]) -> dict[str, str]:
    return {k.lower(): v for k, v in (event.get("headers") or {}).items()}
