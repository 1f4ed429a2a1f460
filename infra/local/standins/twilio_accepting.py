"""What the Twilio stand-in checks of a message it is asked to create, and the message it
accepts (https://www.twilio.com/docs/messaging/api/message-resource)."""

from __future__ import annotations

import secrets
import time
from typing import Any

from werkzeug.wrappers import Response

from infra.local.standins.base import json_response
from infra.local.standins.twilio_delivery import now_rfc2822

API = "/2010-04-01/Accounts"
MAX_BODY_UTF16_UNITS = 1600


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def refusal(form: Any) -> Response | None:
    """What Twilio refuses at once, with its error code
    (https://www.twilio.com/docs/api/errors/<code>)."""
    if not form.get("To"):
        return twilio_error(400, 21604, "A 'To' phone number is required.")
    if not form.get("From") and not form.get("MessagingServiceSid"):
        return twilio_error(400, 21603, "A 'From' phone number is required.")
    # Content Template Builder templates are sent through a Messaging Service
    # (https://www.twilio.com/docs/content/send-templates-created-with-the-content-template-builder);
    # 30124: "MessagingServiceSID cannot be empty or null" (https://www.twilio.com/docs/api/errors/30124).
    if form.get("ContentSid") and not form.get("MessagingServiceSid"):
        return twilio_error(400, 30124, "MessagingServiceSID cannot be empty or null")
    body = form.get("Body") or ""
    if not body and not form.get("ContentSid") and not form.get("MediaUrl"):
        return twilio_error(400, 21602, "Message body is required.")
    # 1,600 characters, where "emojis ... or non-GSM characters will be counted as multiple
    # characters" (https://www.twilio.com/docs/api/errors/21617): counted here in UTF-16
    # code units, as UCS-2 encodes them (an emoji outside the BMP is two).
    if utf16_units(body) > MAX_BODY_UTF16_UNITS:
        return twilio_error(400, 21617, "The concatenated message body exceeds the 1600 character limit.")
    return None


def new_message(account_sid: str, form: Any) -> dict[str, Any]:
    """A message just accepted: `queued`, or `accepted` with a Messaging Service, and no
    date_sent yet (https://www.twilio.com/docs/messaging/api/message-resource)."""
    return _message(
        account_sid,
        "SM" + secrets.token_hex(16),
        form,
        body=form.get("Body"),
        content_sid=form.get("ContentSid"),
        status="accepted" if form.get("MessagingServiceSid") else "queued",
        direction="outbound-api",
        status_callback=form.get("StatusCallback"),
    )


def inbound_message(form: dict[str, str]) -> dict[str, Any]:
    """The Message resource of a message Twilio received (`received`, inbound)."""
    message = _message(
        form.get("AccountSid") or "",
        form.get("MessageSid") or "",
        form,
        body=form.get("Body") or "",
        status="received",
        direction="inbound",
        num_segments=form.get("NumSegments") or "1",
        num_media=form.get("NumMedia") or "0",
    )
    message["date_sent"] = message["date_created"]
    return message


def _message(account_sid: str, sid: str, form: Any, **fields: Any) -> dict[str, Any]:
    """A Message resource as Twilio's API shows it; `fields` are what differ by direction."""
    now = now_rfc2822()
    uri = f"{API}/{account_sid}/Messages/{sid}"
    return {
        "sid": sid,
        "account_sid": account_sid,
        "api_version": "2010-04-01",
        "to": form.get("To"),
        "from": form.get("From"),
        "messaging_service_sid": form.get("MessagingServiceSid"),
        "content_sid": None,
        "num_segments": "1",
        "num_media": "0",
        "date_created": now,
        "date_updated": now,
        "date_sent": None,
        "error_code": None,
        "error_message": None,
        "price": None,
        "price_unit": "USD",
        "uri": uri + ".json",
        "subresource_uris": {"media": uri + "/Media.json", "feedback": uri + "/Feedback.json"},
        "status_callback": None,
        "created_monotonic": time.monotonic(),
        **fields,
    }


def twilio_error(status: int, code: int, message: str) -> Response:
    return json_response(
        {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        },
        status,
    )
