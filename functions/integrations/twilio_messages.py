"""Sending replies with Twilio, and finding out whether a send whose answer was lost went
through. Errors become TwilioRetryableError or TwilioPermanentError."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
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
AUTHENTICATION_FAILED = 20003  # HTTP 401: the account's token is wrong (rotated, revoked)
WHATSAPP_WINDOW_CLOSED = 63016
# "Rate limit exceeded for Channel" (https://www.twilio.com/docs/api/errors/63018): WhatsApp's
# limit on messages to one recipient; retried with backoff, at create or by status callback.
CHANNEL_RATE_LIMITED = 63018
# One page of the Messages list, newest first, is read to find a message sent since an
# attempt began: far more than the parts of one reply (MAX_REPLY_PARTS_PER_BATCH).
LOOKUP_PAGE_SIZE = 50
# Twilio's `date_created` is its own clock, to the second; ours is the Lambda's.
CLOCK_SKEW = timedelta(seconds=5)


@cache
def _client(account_sid: str, auth_token: str, timeout: float, base_url: str) -> Client:
    client = Client(account_sid, auth_token, http_client=TwilioHttpClient(timeout=timeout))
    if base_url:
        client.api.base_url = base_url
    return client


def client_for(credentials: TwilioCredentials) -> Client:
    """A client with the credentials and the settings of now (TWILIO_TIMEOUT_SECONDS, the
    API's base URL): a changed setting makes a new client."""
    settings = get_settings()
    return _client(
        credentials.account_sid,
        credentials.auth_token,
        settings.twilio_timeout_seconds,
        settings.twilio_api_base_url,
    )


@contextmanager
def _calling_twilio() -> Iterator[None]:
    """Twilio's errors as ours, its latency as a metric."""
    started = time.monotonic()
    try:
        yield
    except TwilioRestException as error:
        count("TwilioErrors")
        if is_retryable(error.status, error.code):
            message = f"Twilio HTTP {error.status} code {error.code}"
            raise TwilioRetryableError(message, refused=error.status < 500) from error
        raise TwilioPermanentError(f"Twilio HTTP {error.status} code {error.code}", error.code) from error
    except requests.RequestException as error:
        # A timeout or a broken connection after the request went out: Twilio may have
        # created the message all the same (its API takes no idempotency key).
        count("TwilioErrors")
        raise TwilioRetryableError(f"Twilio unreachable: {type(error).__name__}") from error
    finally:
        milliseconds("TwilioLatency", (time.monotonic() - started) * 1000)


def send_message(
    client: Client,
    from_address: str,
    to_address: str,
    body: str | None = None,
    content_sid: str | None = None,
    status_callback: str | None = None,
    messaging_service_sid: str | None = None,
) -> str:
    """Send one message (a body, or a WhatsApp template by its Content SID); its SID.
    Twilio reports what becomes of it to `status_callback`
    (https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).
    With a Messaging Service, the message is sent through it, still from our number (a
    MessagingServiceSid "instead of or in addition to" From: https://www.twilio.com/docs/api/errors/21603)."""
    content = {"content_sid": content_sid} if content_sid else {"body": body}
    if status_callback:
        content["status_callback"] = status_callback
    if messaging_service_sid:
        content["messaging_service_sid"] = messaging_service_sid
    with _calling_twilio():
        message = client.messages.create(from_=from_address, to=to_address, **content)
    return str(message.sid)


def find_sent(
    client: Client,
    from_address: str,
    to_address: str,
    body: str | None,
    since: datetime,
    exclude: list[str] | tuple[str, ...] = (),
) -> str | None:
    """The SID of a message from us to the user created since `since` (less the clock
    skew) with this body (any body, for None) and not among `exclude`; the oldest if
    several. One list call: the Messages list filtered by To and From, newest first
    (https://www.twilio.com/docs/messaging/api/message-resource#read-multiple-message-resources).
    Not by DateSent: a message still `queued` has no date_sent, so no DateSent filter finds
    the message an attempt has just created."""
    with _calling_twilio():
        listed = client.messages.list(
            to=to_address, from_=from_address, limit=LOOKUP_PAGE_SIZE, page_size=LOOKUP_PAGE_SIZE
        )
    count("TwilioLookups")
    earliest = since - CLOCK_SKEW
    found = [
        m
        for m in listed
        if m.sid not in exclude
        and m.date_created is not None
        and m.date_created >= earliest
        and (body is None or (m.body or "").strip() == body.strip())
    ]
    return str(found[-1].sid) if found else None


def is_retryable(status: int, code: int | None) -> bool:
    return status == 429 or code in (RATE_LIMITED, CHANNEL_RATE_LIMITED) or status >= 500
