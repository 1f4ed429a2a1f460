"""POST /whatsapp and POST /sms: Twilio's Messaging webhooks.

Two routes do not need a router: Powertools' REST resolver added a third of an
`import boto3` to every cold start of the function every message goes through."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from twilio.twiml.messaging_response import MessagingResponse

from functions.entry_points.webhook import MessageOutcome, receive_message
from functions.handlers.twilio_http import Refused, response, signature_of, twilio_form
from functions.intake.inbound import Channel
from functions.intake.signed_url import request_url
from functions.observability import lambda_entry_point, logger
from functions.registry import WEBHOOK

__all__ = ["handler", "twiml"]

WEBHOOK.read_settings()  # fail at cold start if the stack left a setting out

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
ROUTES = {"/whatsapp": Channel.WHATSAPP, "/sms": Channel.SMS}


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    channel = ROUTES.get(event.get("resource") or event.get("path") or "")
    if channel is None or event.get("httpMethod") != "POST":
        return response(404, "text/plain", "Not found")
    try:
        return _receive(channel, event)
    except Refused as refused:
        return refused.response
    except Exception:
        # A failure before the message was safely staged and its window opened: answer
        # 5xx so that Twilio retries, as the connection overrides on the URL it was given
        # ask it to (`#rc=5&rp=all`; without them it would not). A retry of a staged
        # message is a harmless duplicate.
        logger.exception("Webhook failed; Twilio will retry")
        return response(500, "text/plain", "Temporarily unavailable")


def _receive(channel: Channel, event: dict[str, Any]) -> dict[str, Any]:
    form = twilio_form(event)
    result = receive_message(channel, form, request_url(event), signature_of(event))
    if result.outcome is MessageOutcome.FORBIDDEN:
        return response(403, "text/plain", "Forbidden")
    return response(200, "text/xml", twiml(result.reply))


def twiml(reply: str) -> str:
    """Empty TwiML, or TwiML that answers the sender with `reply`."""
    if not reply:
        return EMPTY_TWIML
    twiml_response = MessagingResponse()
    twiml_response.message(reply)
    return str(twiml_response)
