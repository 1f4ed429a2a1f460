"""POST /whatsapp and POST /sms: Twilio's Messaging webhooks."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext
from twilio.twiml.messaging_response import MessagingResponse

from functions.config import get_settings
from functions.handlers.twilio_http import public_url, signature_of, twilio_form
from functions.logic.intake import Outcome, accept_message
from functions.models import Channel
from functions.observability import lambda_entry_point, logger

__all__ = ["handler", "public_url"]

get_settings()  # fail at cold start if the stack left a setting out

app = APIGatewayRestResolver()

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


@app.post("/whatsapp")
def whatsapp() -> Response[str]:
    return _receive(Channel.WHATSAPP)


@app.post("/sms")
def sms() -> Response[str]:
    return _receive(Channel.SMS)


def _receive(channel: Channel) -> Response[str]:
    event = app.current_event
    form = twilio_form(event)
    if isinstance(form, Response):
        return form
    outcome = accept_message(channel, form, public_url(event.raw_event), signature_of(event))
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
    so that Twilio retries, as the connection overrides on the URL it was given ask it to
    (`#rc=5&rp=all`; without them it would not). A retry of a staged message is a harmless
    duplicate."""
    logger.exception("Webhook failed; Twilio will retry")
    return Response(500, "text/plain", "Temporarily unavailable")


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
