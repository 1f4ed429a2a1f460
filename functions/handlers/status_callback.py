"""POST /twilio/status/{conversation}/{window}/{message}: Twilio's status callbacks for the
messages we send (functions/entry_points/status_callback.py). One route: no router (see webhook.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.delivery.callback_urls import STATUS_CALLBACK_RESOURCE
from functions.delivery.template import template_without_messaging_service
from functions.entry_points.status_callback import CallbackOutcome, record_status
from functions.handlers.twilio_http import Refused, response, signature_of, twilio_form
from functions.intake.signed_url import request_url
from functions.observability import lambda_entry_point, logger
from functions.registry import STATUS_CALLBACK

STATUS_CALLBACK.read_settings()  # fail at cold start if the stack left a setting out
template_without_messaging_service()  # said at cold start: such a template is not sent


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    parameters = event.get("pathParameters") or {}
    names = ("conversation", "window", "message")
    if event.get("resource") != STATUS_CALLBACK_RESOURCE or event.get("httpMethod") != "POST":
        return response(404, "text/plain", "Not found")
    if not all(parameters.get(name) for name in names):
        return response(404, "text/plain", "Not found")
    try:
        form = twilio_form(event)
        # API Gateway (REST) does not decode path parameters: decode them once, here.
        conversation, window, message = (unquote(parameters[name]) for name in names)
        outcome = record_status(conversation, window, message, form, request_url(event), signature_of(event))
    except Refused as refused:
        return refused.response
    except Exception:
        # Not recorded (or the template not sent): 5xx, so that Twilio tries the callback
        # again, as the connection overrides on its URL ask (recording it is idempotent).
        logger.exception("Status callback failed; Twilio will retry")
        return response(500, "text/plain", "Temporarily unavailable")
    if outcome is CallbackOutcome.FORBIDDEN:
        return response(403, "text/plain", "Forbidden")
    return response(204, "text/plain", "")
