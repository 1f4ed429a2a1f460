"""Preflight's WhatsApp template check: the template configured for a closed 24-hour window
(WHATSAPP_TEMPLATE_CONTENT_SID), fetched through Twilio's Content API
(https://www.twilio.com/docs/content/content-api-resources#fetch-a-content-resource), must
exist, and a template with variables needs them given (WHATSAPP_TEMPLATE_VARIABLES):
without ContentVariables Twilio sends the template's sample values to the person
(https://www.twilio.com/docs/content/using-variables-with-content-api). Checked only with
the account's credentials in TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (the SDK's own
variables); otherwise the line says it was not checked."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

# The function that sends the template when a reply finds the window closed.
SENDER = "StatusCallback"

Fetch = Callable[[str], dict[str, Any]]


def template_variables(content_sid: str) -> dict[str, Any]:
    """The template's variables (name: sample value), through Twilio's Content API."""
    from twilio.rest import Client

    client = Client(os.environ["TWILIO_ACCOUNT_SID"], os.environ["TWILIO_AUTH_TOKEN"])
    return dict(client.content.v1.contents(content_sid).fetch().variables or {})


def check(variables: dict[str, str], fetch: Fetch | None = None) -> tuple[bool, str]:
    """Whether the configured template can go out as configured, and why: `variables`, the
    sending function's environment in the template."""
    content_sid = variables.get("WHATSAPP_TEMPLATE_CONTENT_SID", "")
    if not content_sid:
        return True, "none configured"
    if fetch is None:
        if not (os.environ.get("TWILIO_ACCOUNT_SID") and os.environ.get("TWILIO_AUTH_TOKEN")):
            return True, f"{content_sid} not checked (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN not set)"
        fetch = template_variables
    try:
        needed = fetch(content_sid)
    except Exception as error:  # the SDK's error names the status and Twilio's code
        return False, f"{content_sid} not fetched: {type(error).__name__} {getattr(error, 'status', '')}"
    given = json.loads(variables.get("WHATSAPP_TEMPLATE_VARIABLES") or "{}")
    missing = sorted(set(needed) - set(given))
    if missing:
        return False, (
            f"{content_sid} has variables {', '.join(missing)} that WHATSAPP_TEMPLATE_VARIABLES "
            "does not give: Twilio would send their sample values"
        )
    return True, f"{content_sid}: found, {len(needed)} variable(s) given"
