"""POST /twilio/status/{conversation}/{window}/{message}: Twilio's status callbacks for the
messages we send (functions/logic/delivery.py)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.config import get_settings
from functions.handlers.twilio_http import public_url, signature_of, twilio_form
from functions.logic.delivery import STATUS_CALLBACK_RESOURCE, Outcome, record_status
from functions.observability import lambda_entry_point, logger

get_settings()  # fail at cold start if the stack left a setting out

app = APIGatewayRestResolver()


@app.post(STATUS_CALLBACK_RESOURCE.replace("{", "<").replace("}", ">"))
def status_callback(conversation: str, window: str, message: str) -> Response[str]:
    event = app.current_event
    form = twilio_form(event)
    if isinstance(form, Response):
        return form
    outcome = record_status(
        conversation, window, message, form, public_url(event.raw_event), signature_of(event)
    )
    if outcome is Outcome.FORBIDDEN:
        return Response(403, "text/plain", "Forbidden")
    return Response(204, "text/plain", "")


@app.exception_handler(Exception)
def unavailable(error: Exception) -> Response[str]:
    """Not recorded (or the template not sent): 5xx, so that Twilio tries the callback
    again, as the connection overrides on its URL ask (recording it is idempotent)."""
    logger.exception("Status callback failed; Twilio will retry")
    return Response(500, "text/plain", "Temporarily unavailable")


@lambda_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
