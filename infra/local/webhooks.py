"""Sending Twilio-shaped webhooks to the local gateway, signed as Twilio signs them."""

from __future__ import annotations

import secrets
from typing import Any

import requests
from twilio.request_validator import RequestValidator


def new_message_sid() -> str:
    return "SM" + secrets.token_hex(16)


def inbound_form(
    body: str,
    from_address: str,
    to_address: str,
    account_sid: str,
    message_sid: str | None = None,
    **extra: str,
) -> dict[str, str]:
    """The form fields of a Twilio Messaging webhook for one inbound message."""
    return {
        "MessageSid": message_sid or new_message_sid(),
        "SmsMessageSid": message_sid or "",
        "AccountSid": account_sid,
        "From": from_address,
        "To": to_address,
        "Body": body,
        "NumMedia": "0",
        "NumSegments": "1",
        "SmsStatus": "received",
        "ApiVersion": "2010-04-01",
        **extra,
    }


def sign(url: str, form: dict[str, str], auth_token: str) -> str:
    return str(RequestValidator(auth_token).compute_signature(url, form))


def post_webhook(
    url: str, form: dict[str, str], auth_token: str | None, signature: str | None = None, **kwargs: Any
) -> requests.Response:
    """POST `form` to `url` with a valid signature made with `auth_token` (or the given
    `signature`, for forgeries)."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if signature is None and auth_token is not None:
        signature = sign(url, form, auth_token)
    if signature is not None:
        headers["X-Twilio-Signature"] = signature
    return requests.post(url, data=form, headers=headers, timeout=30, **kwargs)
