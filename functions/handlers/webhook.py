"""POST /whatsapp and POST /sms: Twilio's Messaging webhooks.

Two routes do not need a router: Powertools' REST resolver added a third of an
`import boto3` to every cold start of the function every message goes through."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from aws_lambda_powertools.utilities.typing import LambdaContext
from twilio.request_validator import SIGNATURE_HEADER, SIGNATURE_SETTINGS_HEADER
from twilio.twiml.messaging_response import MessagingResponse

from functions.config import get_settings
from functions.logic.admission import Signature
from functions.logic.intake import Outcome, accept_message
from functions.models import Channel, UnreadableForm, read_form
from functions.observability import lambda_entry_point, logger

get_settings()  # fail at cold start if the stack left a setting out

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
FORM = "application/x-www-form-urlencoded"
ROUTES = {"/whatsapp": Channel.WHATSAPP, "/sms": Channel.SMS}


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    channel = ROUTES.get(event.get("resource") or event.get("path") or "")
    if channel is None or event.get("httpMethod") != "POST":
        return _response(404, "text/plain", "Not found")
    try:
        return _receive(channel, event)
    except Exception:
        # A failure before the message was safely staged and its window opened: answer
        # 5xx so that Twilio retries (a retry of a staged message is a harmless duplicate).
        logger.exception("Webhook failed; Twilio will retry")
        return _response(500, "text/plain", "Temporarily unavailable")


def _receive(channel: Channel, event: dict[str, Any]) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != FORM:
        logger.warning("Webhook refused: not a form", extra={"content_type": content_type[:100]})
        return _response(415, "text/plain", f"Unsupported Media Type: Twilio posts {FORM}")
    settings = get_settings()
    try:
        form = read_form(
            event.get("body"),
            bool(event.get("isBase64Encoded")),
            settings.webhook_max_body_bytes,
            settings.webhook_max_fields,
        )
    except UnreadableForm as error:
        logger.warning("Webhook refused: unreadable form", extra={"reason": str(error)})
        return _response(error.status, "text/plain", str(error))
    signature = Signature(
        headers.get(SIGNATURE_HEADER.lower()), headers.get(SIGNATURE_SETTINGS_HEADER.lower())
    )
    outcome = accept_message(channel, form, public_url(event), signature)
    if outcome is Outcome.FORBIDDEN:
        return _response(403, "text/plain", "Forbidden")
    return _response(200, "text/xml", twiml(outcome.reply))


def _response(status: int, content_type: str, body: str) -> dict[str, Any]:
    """An API Gateway proxy integration response."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_type},
        "body": body,
        "isBase64Encoded": False,
    }


def twiml(reply: str) -> str:
    """Empty TwiML, or TwiML that answers the sender with `reply`."""
    if not reply:
        return EMPTY_TWIML
    response = MessagingResponse()
    response.message(reply)
    return str(response)


def public_url(event: dict[str, Any]) -> str:
    """The URL Twilio called, which its signature covers: the configured public base URL
    (the stack sets it) and the API resource (`/whatsapp`, `/sms`); without one, the Host
    header and the request path (which includes the stage on the execute-api domain).
    Forwarded headers count only when WEBHOOK_TRUST_FORWARDED_HEADERS is on. Then the
    query string: as received when the event carries it raw (`rawQueryString`, HTTP API
    events); a REST API event carries only the parsed parameters, re-encoded here in the
    order received (see docs/decisions.md)."""
    settings = get_settings()
    base = settings.webhook_base_url.rstrip("/")
    if base:
        path = event.get("resource") or event.get("path") or "/"
    else:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        scheme, host = "https", headers.get("host", "")
        if settings.webhook_trust_forwarded_headers:
            scheme = headers.get("x-forwarded-proto", scheme)
            host = headers.get("x-forwarded-host", host)
        base = f"{scheme}://{host}"
        path = (event.get("requestContext") or {}).get("path") or event.get("path") or "/"
    return f"{base}{path}{_query(event)}"


def _query(event: dict[str, Any]) -> str:
    raw = event.get("rawQueryString")
    if raw:
        return f"?{raw}"
    multi = event.get("multiValueQueryStringParameters") or {
        k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
    }
    pairs = [(name, value) for name, values in multi.items() for value in values]
    return f"?{urlencode(pairs)}" if pairs else ""
