"""Sending replies with Twilio, and finding out whether a send whose answer was lost went
through. Errors become TwilioRetryableError or TwilioPermanentError, and
TwilioCredentialsRefused (a TwilioPermanentError) when Twilio refuses the account's token
(HTTP 401, code 20003: https://www.twilio.com/docs/api/errors/20003)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cache

import requests
from twilio.base.exceptions import TwilioRestException
from twilio.http.http_client import TwilioHttpClient
from twilio.rest import Client

from functions.delivery.settings import DeliverySettings, TwilioSettings
from functions.errors import (
    VALIDITY_PERIOD_EXPIRED,
    TwilioCredentialsRefused,
    TwilioPermanentError,
    TwilioRetryableError,
)
from functions.observability import count, milliseconds
from functions.tenancy.secrets import TwilioCredentials

RATE_LIMITED = 20429
AUTHENTICATION_FAILED = 20003  # HTTP 401: the account's token is wrong (rotated, revoked)
WHATSAPP_WINDOW_CLOSED = 63016
# The person unsubscribed from our number (STOP): every message to them is refused until
# they opt back in (https://www.twilio.com/docs/api/errors/21610).
UNSUBSCRIBED = 21610
# "Rate limit exceeded for Channel" (https://www.twilio.com/docs/api/errors/63018): the
# account's combined rate, or the WhatsApp sender's messaging limit or tier ("wait until 24
# hours" for a tier), not one recipient's; retried with backoff at create, and a part reported
# by status callback is sent again once, later, by the reconciler (part_resend.py).
CHANNEL_RATE_LIMITED = 63018
# Twilio keeps a message `queued` (no status callback) until it can send it, up to the
# message's ValidityPeriod, whole seconds from 1 to 36,000 (10 hours, the default:
# https://www.twilio.com/docs/api/errors/90007), then fails it with 30036 and never sends it
# (https://www.twilio.com/docs/api/errors/30036). Every create carries a ValidityPeriod
# shorter than the wait for a receipt (validity_period_seconds), so that a message in
# doubt has left the queue, sent or expired, before it is sent again (send_once.py).
MAX_VALIDITY_PERIOD = 36_000
# The room a status callback has to reach us after the ValidityPeriod, within the wait.
RECEIPT_MARGIN_SECONDS = 2
# The statuses of a message still in Twilio's queue
# (https://www.twilio.com/docs/messaging/api/message-resource#message-status-values).
IN_QUEUE = ("accepted", "scheduled", "queued")
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
    settings = TwilioSettings.get()
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
        if error.status == 401 or error.code == AUTHENTICATION_FAILED:
            message = f"Twilio HTTP {error.status} code {error.code}: the account's token was refused"
            raise TwilioCredentialsRefused(message, error.code) from error
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
    content_variables: str | None = None,
) -> str:
    """Send one message (a body, or a WhatsApp template by its Content SID); its SID.
    Twilio reports what becomes of it to `status_callback`
    (https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource).
    With a Messaging Service, the message is sent through it, still from our number (a
    MessagingServiceSid "instead of or in addition to" From: https://www.twilio.com/docs/api/errors/21603).
    It waits in Twilio's queue no longer than validity_period_seconds()."""
    content: dict[str, object] = {"content_sid": content_sid} if content_sid else {"body": body}
    if content_sid and content_variables:  # the template's variables, a JSON object
        content["content_variables"] = content_variables
    content["validity_period"] = validity_period_seconds()
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
    Not by DateSent: a message still `queued` has no date_sent. A message still in Twilio's
    queue, or failed there (30036), is not found: it may never be sent; its receipt, which
    comes once it leaves the queue, decides (send_once.py)."""
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
        and m.status not in IN_QUEUE
        and m.error_code != VALIDITY_PERIOD_EXPIRED
    ]
    return str(found[-1].sid) if found else None


def validity_period_seconds() -> int:
    """The ValidityPeriod every create carries: DELIVERY_RECEIPT_WAIT_SECONDS less the
    margin for a status callback to arrive, in whole seconds from 1 to 36,000. A retry
    starts its wait for a receipt after the earlier create went out, so the earlier message
    has left Twilio's queue, and its receipt has come, before that wait ends."""
    wait = DeliverySettings.get().delivery_receipt_wait_seconds
    return max(1, min(MAX_VALIDITY_PERIOD, math.floor(wait - RECEIPT_MARGIN_SECONDS)))


def is_retryable(status: int, code: int | None) -> bool:
    return status == 429 or code in (RATE_LIMITED, CHANNEL_RATE_LIMITED) or status >= 500


# --- deleting what was sent and received (a person forgotten: functions/personal_data/forgetting.py)

# "Cannot delete this resource before it is complete": Twilio is not done with the message
# (queued, sending, no delivery receipt yet); "wait several minutes and try again"
# (https://www.twilio.com/docs/api/errors/20009).
NOT_COMPLETE = 20009


def delete_message(client: Client, message_sid: str) -> bool:
    """Delete one message, received or sent, with its media: True once deleted, or if it is
    gone already (404); False when Twilio is not done with it yet (20009: to try again
    later). A deleted message no longer appears in the account's logs; Twilio keeps its body
    up to 30 days in its backups (https://www.twilio.com/docs/messaging/api/message-resource,
    "Delete a Message resource")."""
    return _deleted(lambda: client.messages(message_sid).delete())


def delete_media(client: Client, message_sid: str, media_sid: str) -> bool:
    """Delete one media file of a message (https://www.twilio.com/docs/messaging/api/media-resource):
    True once deleted or gone already, False when Twilio is not done with it yet."""
    return _deleted(lambda: client.messages(message_sid).media(media_sid).delete())


def _deleted(delete: Callable[[], object]) -> bool:
    try:
        with _calling_twilio():
            delete()
    except TwilioPermanentError as error:
        if error.code == NOT_COMPLETE:
            return False
        cause = error.__cause__
        if isinstance(cause, TwilioRestException) and cause.status == 404:
            return True
        raise
    return True
