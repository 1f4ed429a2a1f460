"""What every endpoint Twilio calls shares: the form read within limits, the signature
headers, and the public URL the signature covers."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from twilio.request_validator import SIGNATURE_HEADER, SIGNATURE_SETTINGS_HEADER

from functions.intake.admission import Signature
from functions.intake.inbound import UnreadableForm, read_form
from functions.intake.settings import EndpointSettings, PublicUrlSettings
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


def public_url(event: dict[str, Any]) -> str:
    """The URL Twilio called, which its signature covers: the configured public base URL
    (the stack sets it) and the API resource (`/whatsapp`, `/sms`, the status callback's
    with its path parameters filled in); without one, the Host header and the request path
    (which includes the stage on the execute-api domain). Forwarded headers count only
    when WEBHOOK_TRUST_FORWARDED_HEADERS is on. Then the query string: as received when the
    event carries it raw (`rawQueryString`, HTTP API events); a REST API event carries only
    the parsed parameters, re-encoded here in the order received (see
    docs/adr/0029-the-url-a-signature-covers.md).
    Never a fragment: HTTP does not send it, and a fragment on the configured base URL
    (connection overrides) is not part of the path; admission.py checks the signature
    with and without the overrides."""
    base = PublicUrlSettings.get().public_base().url
    if base:
        path = _filled(event.get("resource") or event.get("path") or "/", event.get("pathParameters"))
    else:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        scheme, host = "https", headers.get("host", "")
        if EndpointSettings.get().webhook_trust_forwarded_headers:
            scheme = headers.get("x-forwarded-proto", scheme)
            host = headers.get("x-forwarded-host", host)
        base = f"{scheme}://{host}"
        path = (event.get("requestContext") or {}).get("path") or event.get("path") or "/"
    return f"{base}{path}{_query(event)}"


def _filled(resource: str, parameters: dict[str, str] | None) -> str:
    """The resource (`/twilio/status/{conversation}/...`) with its path parameters as
    requested: API Gateway (REST) passes them on without decoding them, so this is the
    path Twilio called, percent-encoding included (see
    docs/adr/0052-the-local-gateway-hands-over-the-events-api.md)."""
    for name, value in (parameters or {}).items():
        resource = resource.replace("{" + name + "}", value)
    return resource


def _query(event: dict[str, Any]) -> str:
    raw = event.get("rawQueryString")
    if raw:
        return f"?{raw}"
    multi = event.get("multiValueQueryStringParameters") or {
        k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
    }
    pairs = [(name, value) for name, values in multi.items() for value in values]
    return f"?{urlencode(pairs)}" if pairs else ""
