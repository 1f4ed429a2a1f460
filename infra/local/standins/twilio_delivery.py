"""What happens to a message after Twilio accepted it: its status moves on, and each change
is reported to its StatusCallback URL by a POST signed as Twilio signs its webhooks.

- No callback for the initial status (`queued`; `accepted` with a Messaging Service, whose
  move to `queued` is reported); then `sent`, and `delivered`, then `read` for WhatsApp; or
  `failed`, or `sent` then `undelivered`, with an ErrorCode
  (https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks).
  The `sending` step is not reported. The docs found do not say whether callbacks can
  arrive out of order; here they come in order.
- The callback is an `application/x-www-form-urlencoded` POST with MessageSid, MessageStatus,
  SmsSid, SmsStatus, AccountSid, From, To, ApiVersion, ErrorCode (on failure) and more;
  "the properties ... vary by messaging channel and event type and are subject to change"
  (https://www.twilio.com/docs/messaging/guides/track-outbound-message-status).
- X-Twilio-Signature: base64(HMAC-SHA1(auth token, URL + each POST parameter's name and
  value, sorted by name)) (https://www.twilio.com/docs/usage/webhooks/webhooks-security).
- Retries follow the connection overrides in the URL's fragment
  (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides): without
  any, a callback that cannot connect is tried once more (rc=1, rp=ct) and an HTTP error
  answer is not retried; `#rc=5&rp=all` retries a 5xx (infra/local/connection_overrides.py).
  The fragment is not sent. Whether Twilio signs the URL with its fragment is not
  documented: the stand-in does by default (the URL exactly as given), or not
  (`POST /_control/signing {"url_fragment": false}`).
"""

from __future__ import annotations

import base64
import hmac
from datetime import UTC, datetime
from email.utils import format_datetime
from hashlib import sha1
from typing import Any

from infra.local.connection_overrides import post_as_twilio, split_fragment

# The statuses a message goes through after acceptance, for each outcome.
OUTCOMES: dict[str, tuple[str, ...]] = {
    "delivered": ("sent", "delivered"),
    "read": ("sent", "delivered", "read"),
    "sent": ("sent",),  # no delivery receipt ever comes
    "undelivered": ("sent", "undelivered"),
    "failed": ("failed",),
}
DEFAULT_ERROR_CODES = {"undelivered": 30003, "failed": 30008}
# https://www.twilio.com/docs/api/errors/<code>
ERROR_MESSAGES = {
    30003: "Unreachable destination handset",
    30005: "Unknown destination handset",
    30006: "Landline or unreachable carrier",
    30007: "Message filtered",
    30008: "Unknown error",
    30036: "Validity Period Expired",
    63016: "Failed to send freeform message because you are outside the allowed window.",
    63018: "Rate limit exceeded for Channel",
    63024: "Invalid message recipient",
}


def now_rfc2822() -> str:
    return format_datetime(datetime.now(UTC))


def is_whatsapp(address: str | None) -> bool:
    return bool(address) and str(address).startswith("whatsapp:")


def statuses_after_acceptance(message: dict[str, Any], outcome: str | None) -> list[str]:
    """The statuses that follow the initial one, in order (ValueError: unknown outcome)."""
    outcome = outcome or ("read" if is_whatsapp(message["to"]) else "delivered")
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; one of {sorted(OUTCOMES)}")
    queued = ["queued"] if message["status"] == "accepted" else []
    return [*queued, *OUTCOMES[outcome]]


def apply_status(message: dict[str, Any], status: str, error_code: int | None) -> None:
    """Move the message to `status`, as the Messages list then shows it."""
    stamp = now_rfc2822()
    message["status"] = status
    message["date_updated"] = stamp
    if status == "sent":
        message["date_sent"] = stamp  # null until Twilio has sent it
    if status in DEFAULT_ERROR_CODES:
        code = int(error_code or DEFAULT_ERROR_CODES[status])
        message["error_code"] = code
        message["error_message"] = ERROR_MESSAGES.get(code, "Delivery failed")


def callback_params(message: dict[str, Any]) -> dict[str, str]:
    params = {
        "AccountSid": message["account_sid"],
        "ApiVersion": "2010-04-01",
        "From": message["from"] or "",
        "To": message["to"],
        "MessageSid": message["sid"],
        "SmsSid": message["sid"],
        "MessageStatus": message["status"],
        "SmsStatus": message["status"],
    }
    if message.get("messaging_service_sid"):
        params["MessagingServiceSid"] = message["messaging_service_sid"]
    if message.get("error_code") and message["status"] in DEFAULT_ERROR_CODES:
        params["ErrorCode"] = str(message["error_code"])
    if is_whatsapp(message["to"]):
        params["ChannelPrefix"] = "whatsapp"
        params["ChannelToAddress"] = message["to"].removeprefix("whatsapp:")
    elif message["status"] in ("delivered", "undelivered"):
        params["RawDlrDoneDate"] = datetime.now(UTC).strftime("%y%m%d%H%M")
    return params


def signature(url: str, params: dict[str, str], auth_token: str) -> str:
    """X-Twilio-Signature of a POST of `params` to `url`."""
    signed = url + "".join(name + params[name] for name in sorted(params))
    digest = hmac.new(auth_token.encode(), signed.encode(), sha1).digest()
    return base64.b64encode(digest).decode()


def post_callback(
    url: str, params: dict[str, str], auth_token: str, include_fragment: bool = True
) -> list[dict[str, Any]]:
    """POST one status callback as Twilio calls a webhook, with the connection overrides
    of the URL's fragment (connection_overrides.py); the attempts made, for the record."""
    delivery = post_as_twilio(
        url, params, lambda signed, form: signature(signed, form, auth_token), include_fragment
    )
    signed = signature(url if include_fragment else split_fragment(url)[0], params, auth_token)
    return [{"url": url, "params": params, "signature": signed, **attempt} for attempt in delivery.attempts]
