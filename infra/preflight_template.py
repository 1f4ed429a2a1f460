"""Preflight's WhatsApp template check: the template configured for a closed 24-hour window
(WHATSAPP_TEMPLATE_CONTENT_SID), fetched through Twilio's Content API
(https://www.twilio.com/docs/content/content-api-resources#fetch-a-content-resource), must
exist, and a template with variables needs them given (WHATSAPP_TEMPLATE_VARIABLES):
without ContentVariables Twilio sends the template's sample values to the person
(https://www.twilio.com/docs/content/using-variables-with-content-api). Checked only with
the account's credentials in TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (the SDK's own
variables); otherwise the line says it was not checked.

The WhatsApp senders check (check_senders): the Messaging Service the template goes through
(TWILIO_MESSAGING_SERVICE_SID) must hold a WhatsApp sender, and every sender listed in
TWILIO_WHATSAPP_SENDERS, since Twilio sends the template through the Service from the
conversation's number. Same credentials, same "not checked" without them."""

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


# The Messaging Service's sender pool. A template goes out through the Messaging Service
# from the conversation's number, so the Service must hold that number as a WhatsApp
# sender: its ChannelSenders, `sender` "whatsapp:+…", `sender_type` "WhatsApp"
# (https://www.twilio.com/docs/messaging/api/messaging-service-channelsender-resource).
# Its PhoneNumbers (https://www.twilio.com/docs/messaging/services/api/phonenumber-resource)
# are the numbers it sends SMS and MMS from (https://www.twilio.com/docs/api/errors/21715),
# counted in the detail to tell a number added as an SMS sender only apart. With no
# WhatsApp sender at all, Twilio answers 60727 "Channel not found" (the Messaging Service
# has no active channel sender for the channel: https://www.twilio.com/docs/api/errors/60727).
EXPECTED_SENDERS = "TWILIO_WHATSAPP_SENDERS"


def _client() -> Any:
    """Twilio's client, from the account's credentials in the SDK's own variables, or None."""
    if not (os.environ.get("TWILIO_ACCOUNT_SID") and os.environ.get("TWILIO_AUTH_TOKEN")):
        return None
    from twilio.rest import Client

    return Client(os.environ["TWILIO_ACCOUNT_SID"], os.environ["TWILIO_AUTH_TOKEN"])


def _whatsapp(address: str) -> str:
    """`+1…` or `whatsapp:+1…`, as the WhatsApp sender `whatsapp:+1…`."""
    address = address.strip()
    return address if address.lower().startswith("whatsapp:") else f"whatsapp:{address}"


def expected_senders() -> list[str]:
    """The WhatsApp senders the Messaging Service must hold (TWILIO_WHATSAPP_SENDERS,
    comma-separated), empty when not given."""
    return [_whatsapp(a) for a in os.environ.get(EXPECTED_SENDERS, "").split(",") if a.strip()]


def check_senders(
    variables: dict[str, str], client: Any = None, expected: list[str] | None = None
) -> tuple[bool, str]:
    """Whether the Messaging Service the template goes through (TWILIO_MESSAGING_SERVICE_SID)
    holds a WhatsApp sender, and every one in `expected` (default: TWILIO_WHATSAPP_SENDERS),
    and why: `variables`, the sending function's environment in the template."""
    if not variables.get("WHATSAPP_TEMPLATE_CONTENT_SID"):
        return True, "no template configured"
    service_sid = variables.get("TWILIO_MESSAGING_SERVICE_SID", "")
    if not service_sid:
        return False, "WHATSAPP_TEMPLATE_CONTENT_SID is set without TWILIO_MESSAGING_SERVICE_SID: never sent"
    client = client if client is not None else _client()
    if client is None:
        return True, f"{service_sid} not checked (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN not set)"
    service = client.messaging.v1.services(service_sid)
    try:
        phone_numbers = service.phone_numbers.list()
        channel_senders = service.channel_senders.list()
    except Exception as error:  # the SDK's error names the status and Twilio's code
        reason = f"{type(error).__name__} {getattr(error, 'status', '')}"
        return False, f"{service_sid} senders not listed: {reason}"
    whatsapp = {
        (s.sender or "").lower()
        for s in channel_senders
        if (s.sender_type or "").lower() == "whatsapp" or (s.sender or "").lower().startswith("whatsapp:")
    }
    if not whatsapp:
        return False, (
            f"{service_sid} holds no WhatsApp sender (only {len(phone_numbers)} phone number(s), for SMS): "
            "no template can be sent (Twilio 60727); add the WhatsApp senders to its sender pool"
        )
    wanted = expected if expected is not None else expected_senders()
    missing = [sender for sender in wanted if _whatsapp(sender).lower() not in whatsapp]
    if missing:
        return False, f"{service_sid} does not hold {', '.join(missing)}: no template goes out from it"
    checked = f", all {len(wanted)} of {EXPECTED_SENDERS}" if wanted else f" ({EXPECTED_SENDERS} not set)"
    return True, f"{service_sid}: {len(whatsapp)} WhatsApp sender(s){checked}"
