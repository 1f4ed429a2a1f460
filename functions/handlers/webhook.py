"""POST /whatsapp and POST /sms: Twilio's Messaging webhooks."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext
from twilio.twiml.messaging_response import MessagingResponse

from functions.config import get_settings
from functions.logic.intake import Outcome, accept_message
from functions.models import Channel
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
    form = dict(parse_qsl(event.decoded_body or "", keep_blank_values=True))
    signature = event.headers.get("X-Twilio-Signature")
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
    if any, else rebuilt from the Host header and the request path (which includes the
    stage on the execute-api domain)."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    context = event.get("requestContext") or {}
    path = context.get("path") or event.get("path") or "/"
    base = get_settings().webhook_base_url.rstrip("/")
    if base:
        path = event.get("path") or path
    else:
        base = f"{headers.get('x-forwarded-proto', 'https')}://{headers.get('host', '')}"
    query = event.get("queryStringParameters") or {}
    suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    return f"{base}{path}{suffix}"


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
