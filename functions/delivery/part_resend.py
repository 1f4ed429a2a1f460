"""A reply part sent again, once, after Twilio reported it `failed` or `undelivered` with
63018, "Rate limit exceeded for Channel" (https://www.twilio.com/docs/api/errors/63018):
the account's combined rate, or the WhatsApp sender's messaging limit or tier, was
exceeded, so it never reached the user. That is not a limit per recipient, and a resend at
once meets the same limit (for a tier, Twilio says to wait until 24 hours have passed): so
its status callback (functions/entry_points/status_callback.py) only keeps the part due for a
resend TRANSIENT_RETRY_FIRST_SECONDS later (functions/delivery/due_resends.py), and the reconciler,
run every minute, sends the due ones through send_once.py (its RESEND) with a callback of
their own (`<index>r`), claimed in the name of the MessageSid that failed: once per part, whoever
asks how many times. A resend reported 63018 again is not sent a third time; one refused
for a transient reason waits longer each time (as a batch does); one that comes after
WhatsApp's 24-hour window is refused (63016) and recorded as any failure."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from functions import clock
from functions.answer import turns
from functions.batching.rules import failures
from functions.batching.settings import FailureSettings
from functions.delivery import due_resends
from functions.delivery.callback_urls import RESENT
from functions.delivery.due_resends import DueResend
from functions.delivery.rules.replies import split_reply
from functions.delivery.send_once import RESEND, TurnMessage, send_once
from functions.delivery.settings import DeliverySettings, TwilioSettings
from functions.errors import TwilioPermanentError, TwilioRetryableError
from functions.observability import count, logger
from functions.storage.models import Conversation
from functions.storage.tables import assistant_turn_id
from functions.tenancy import conversations

# Twilio's REST client is loaded where a resend is looked up or sent (send_once.py's
# TurnMessage): most of the reconciler's passes send none, and its cold start skips the SDK.


def is_resend(message: str) -> bool:
    return message.endswith(RESENT) and message[: -len(RESENT)].isdigit()


def resend_later(conversation_id: str, window_id: str, part_index: int, owner: str) -> None:
    """Keep reply part `part_index` due for a resend TRANSIENT_RETRY_FIRST_SECONDS from
    now, once (a repeated callback changes nothing); `owner`: the MessageSid whose
    callback said 63018."""
    due_at = clock.now() + timedelta(seconds=FailureSettings.get().transient_retry_first_seconds)
    if due_resends.schedule(conversation_id, window_id, part_index, owner, due_at):
        count("ResendsScheduledAfterRateLimit")
        logger.info("Part due for a resend after 63018", extra={"part": part_index})


def send_due_resends(resends: list[DueResend], now: datetime, deadline: float) -> int:
    """Send the resends that are due (the reconciler's), each once, until the monotonic
    `deadline` leaves no room for one more (the others wait for the next pass); how many
    were sent. A resend Twilio refused for good, or past WhatsApp's window, is dropped."""
    room = DeliverySettings.get().delivery_receipt_wait_seconds + TwilioSettings.get().twilio_timeout_seconds
    sent = 0
    for resend in resends:
        if not resend.due(now):
            continue
        if time.monotonic() + room > deadline:
            break
        conversation = conversations.get(resend.resend_of)
        if conversation is None or conversation.forget_started_at or resend.expired(now):
            due_resends.done(resend)
            continue
        logger.append_keys(conversation_id=resend.resend_of, message_sid=resend.owner)
        try:
            sid = resend_part_once(conversation, resend.window_id, resend.part, resend.owner)
        except TwilioRetryableError:
            failure = FailureSettings.get()
            first, cap = failure.transient_retry_first_seconds, failure.transient_retry_max_seconds
            wait = failures.retry_delay_seconds(resend.attempts + 1, first, cap)
            due_resends.postpone(resend, now + timedelta(seconds=wait))
            logger.warning("Resend refused for a transient reason: later", extra={"part": resend.part})
            continue
        except TwilioPermanentError as error:
            count("ResendsRefused")
            logger.warning("Resend refused", extra={"part": resend.part, "error_code": error.code})
        else:
            sent += sid is not None
        due_resends.done(resend)
    return sent


def resend_part_once(
    conversation: Conversation, window_id: str, part_index: int, owner: str, receipt_wait: float | None = None
) -> str | None:
    """Send reply part `part_index` of the window's reply again, once, whoever asks how
    many times; `owner`: the MessageSid whose callback said 63018. Its SID, or None when
    there is no such part or another owner sends it. `receipt_wait`: as send_once's."""
    turn = turns.get(conversation.conversation_id, assistant_turn_id(window_id))
    parts = split_reply(turn.body) if turn else []
    if turn is None or part_index >= len(parts):
        return None
    resend = TurnMessage(RESEND, conversation, window_id, parts[part_index], part=part_index, owner=owner)
    return send_once(resend, receipt_wait)
