"""POST /whatsapp and POST /sms: Twilio's Messaging webhooks."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext
from twilio.request_validator import SIGNATURE_HEADER, SIGNATURE_SETTINGS_HEADER
from twilio.twiml.messaging_response import MessagingResponse

from functions.config import get_settings
from functions.logic.admission import Signature
from functions.logic.intake import Outcome, accept_message
from functions.models import Channel, UnreadableForm, read_form
from functions.observability import lambda_entry_point, logger

get_settings()  # fail at cold start if the stack left a setting out

app = APIGatewayRestResolver()

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
FORM = "application/x-www-form-urlencoded"


@app.post("/whatsapp")
def whatsapp() -> Response[str]:
    return _receive(Channel.WHATSAPP)


@app.post("/sms")
def sms() -> Response[str]:
    return _receive(Channel.SMS)


def _receive(channel: Channel) -> Response[str]:
    event = app.current_event
    content_type = (event.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != FORM:
        logger.warning("Webhook refused: not a form", extra={"content_type": content_type[:100]})
        return Response(415, "text/plain", f"Unsupported Media Type: Twilio posts {FORM}")
    settings = get_settings()
    try:
        form = read_form(
            event.body,
            bool(event.is_base64_encoded),
            settings.webhook_max_body_bytes,
            settings.webhook_max_fields,
        )
    except UnreadableForm as error:
        logger.warning("Webhook refused: unreadable form", extra={"reason": str(error)})
        return Response(error.status, "text/plain", str(error))
    signature = Signature(event.headers.get(SIGNATURE_HEADER), event.headers.get(SIGNATURE_SETTINGS_HEADER))
    outcome = accept_message(channel, form, public_url(event.raw_event), signature)
    if outcome is Outcome.FORBIDDEN:
        return Response(403, "text/plain", "Forbidden")
    return Response(200, "text/xml", twiml(outcome.reply))


def twiml(reply: str) -> str:
    """Empty TwiML, or TwiML that answers the sender with `reply`."""
    if not reply:
        return EMPTY_TWIML
    response = MessagingResponse()
    response.message(reply)
    return str(response)


@app.exception_handler(Exception)
def unavailable(error: Exception) -> Response[str]:
    """A failure before the message was safely staged and its window opened: answer 5xx
    so that Twilio retries (a retry of a staged message is a harmless duplicate)."""
    logger.exception("Webhook failed; Twilio will retry")
    return Response(500, "text/plain", "Temporarily unavailable")


def public_url(event: dict[str, Any]) -> str:
    """The URL Twilio called, which its signature covers: the configured public base URL
    (the stack sets it) and the API resource (`/whatsapp`, `/sms`); without one, the Host
    header and the request path (which includes the stage on the execute-api domain).
    Forwarded headers count only when WEBHOOK_TRUST_FORWARDED_HEADERS is on. Then the
    query string: as received when the event carries it raw (`rawQueryString`, HTTP API
    events); a REST API event carries only the parsed parameters, re-encoded here in the
    order received (see docs/decisions.md). Never a fragment: HTTP does not send it, and a
    fragment on the configured base URL (connection overrides) is not part of the path;
    admission.py checks the signature with and without the overrides."""
    settings = get_settings()
    base = settings.public_base_url()
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


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
