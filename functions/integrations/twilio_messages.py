"""Sending replies with Twilio. Errors become TwilioRetryableError or TwilioPermanentError."""

from __future__ import annotations

import time
from functools import cache

import requests
from twilio.base.exceptions import TwilioRestException
from twilio.http.http_client import TwilioHttpClient
from twilio.rest import Client

from functions.config import get_settings
from functions.errors import TwilioPermanentError, TwilioRetryableError
from functions.integrations.secrets import TwilioCredentials
from functions.observability import count, milliseconds

RATE_LIMITED = 20429
WHATSAPP_WINDOW_CLOSED = 63016


@cache
def _client(account_sid: str, auth_token: str) -> Client:
    settings = get_settings()
    client = Client(
        account_sid, auth_token, http_client=TwilioHttpClient(timeout=settings.twilio_timeout_seconds)
    )
    if settings.twilio_api_base_url:
        client.api.base_url = settings.twilio_api_base_url
    return client


def client_for(credentials: TwilioCredentials) -> Client:
    return _client(credentials.account_sid, credentials.auth_token.get_secret_value())


def send_message(
    client: Client,
    from_address: str,
    to_address: str,
    body: str | None = None,
    content_sid: str | None = None,
) -> str:
    """Send one message (a body, or a WhatsApp template by its Content SID); its SID."""
    started = time.monotonic()
    content = {"content_sid": content_sid} if content_sid else {"body": body}
    try:
        message = client.messages.create(from_=from_address, to=to_address, **content)
    except TwilioRestException as error:
        count("TwilioErrors")
        if is_retryable(error.status, error.code):
            raise TwilioRetryableError(f"Twilio HTTP {error.status} code {error.code}") from error
        raise TwilioPermanentError(f"Twilio HTTP {error.status} code {error.code}", error.code) from error
    except requests.RequestException as error:
        count("TwilioErrors")
        raise TwilioRetryableError(f"Twilio unreachable: {type(error).__name__}") from error
    finally:
        milliseconds("TwilioLatency", (time.monotonic() - started) * 1000)
    return str(message.sid)


def is_retryable(status: int, code: int | None) -> bool:
    return status == 429 or code == RATE_LIMITED or status >= 500
