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
- A callback that cannot connect is tried once more, Twilio's default (rc=1, connection
  failures only: https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides);
  an HTTP error answer is not retried.
"""

from __future__ import annotations

import base64
import hmac
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from hashlib import sha1
from typing import Any

import requests

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
    63016: "Failed to send freeform message because you are outside the allowed window.",
    63024: "Invalid message recipient",
}
CALLBACK_TIMEOUT_SECONDS = 15  # how long Twilio waits for a webhook's answer


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


def post_callback(url: str, params: dict[str, str], auth_token: str) -> list[dict[str, Any]]:
    """POST one status callback; the attempts made, for the record."""
    headers = {"X-Twilio-Signature": signature(url, params, auth_token), "User-Agent": "TwilioProxy/1.1"}
    attempts: list[dict[str, Any]] = []
    for attempt in (1, 2):
        record: dict[str, Any] = {"url": url, "params": params, "signature": headers["X-Twilio-Signature"]}
        record.update(attempt=attempt, at=time.time(), status=None)
        attempts.append(record)
        try:
            record["status"] = requests.post(
                url, data=params, headers=headers, timeout=CALLBACK_TIMEOUT_SECONDS
            ).status_code
            break
        except requests.ConnectionError as failure:  # could not connect: retried once
            record["error"] = type(failure).__name__
        except requests.RequestException as failure:  # no answer in time: not retried
            record["error"] = type(failure).__name__
            break
    return attempts
