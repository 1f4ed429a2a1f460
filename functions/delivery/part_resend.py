"""A reply part sent again, once, after Twilio reported it `failed` or `undelivered` with
63018, "Rate limit exceeded for Channel" (https://www.twilio.com/docs/api/errors/63018):
the account's combined rate, or the WhatsApp sender's messaging limit or tier, was
exceeded, so it never reached the user. That is not a limit per recipient, and a resend at
once meets the same limit (for a tier, Twilio says to wait until 24 hours have passed): so
its status callback (status_callback.py) only keeps the part due for a resend
TRANSIENT_RETRY_FIRST_SECONDS later (functions/delivery/due_resends.py), and the reconciler,
run every minute, sends the due ones through send_once.py with a callback of their own
(`<index>r`), claimed in the name of the MessageSid that failed: once per part, whoever
asks how many times. A resend reported 63018 again is not sent a third time; one refused
for a transient reason waits longer each time (as a batch does); one that comes after
WhatsApp's 24-hour window is refused (63016) and recorded as any failure."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING

from functions import clock
from functions.answer import turns
from functions.batching.rules import failures
from functions.batching.settings import FailureSettings
from functions.delivery import due_resends, reply_sending
from functions.delivery.callback_urls import status_callback_url
from functions.delivery.due_resends import DueResend
from functions.delivery.rules.replies import split_reply
from functions.delivery.send_once import Claim, receipt_of, send_once
from functions.delivery.settings import DeliverySettings, TwilioSettings
from functions.errors import TwilioPermanentError, TwilioRetryableError
from functions.observability import count, logger
from functions.storage.models import Conversation, Turn
from functions.storage.tables import assistant_turn_id
from functions.tenancy import conversations, secrets

if TYPE_CHECKING:
    from twilio.rest import Client

# Twilio's REST client is loaded where a resend is sent (`from ... import twilio_messages`
# in _Resend): most of the reconciler's passes send none, and its cold start skips the SDK.

RESENT = "r"  # a resend's status callback names its part so: `1r`


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
    resend = _Resend(conversation, turn, window_id, part_index, parts[part_index], owner)
    return send_once(resend, receipt_wait)


@dataclass
class _Resend:
    """Reply part `index`, sent again, for send_once: claimed on the assistant turn
    (`resends`), its SID kept there."""

    conversation: Conversation
    turn: Turn
    window_id: str
    index: int
    body: str
    owner: str

    @property
    def label(self) -> str:
        return f"{self.index}{RESENT}"

    @cached_property
    def client(self) -> Client:
        from functions.delivery import twilio_messages

        # the conversation's tenant, a stored fact by now: read in a session tagged with it
        return twilio_messages.client_for(secrets.twilio_credentials_in_tenant_session(self.conversation))

    def claim(self, now: str) -> Claim:
        claim = reply_sending.claim_resend(
            self.conversation.conversation_id, self.turn.turn_id, self.index, self.owner, now
        )
        return Claim.began(claim.since, now, sent=claim.sid, ours=claim.owner == self.owner)

    def reported(self) -> str | None:
        turn = turns.get(self.conversation.conversation_id, self.turn.turn_id) or self.turn
        return receipt_of(turn.deliveries, self.label)

    def find(self, since: datetime) -> str | None:
        from functions.delivery import twilio_messages

        ours = [*self.turn.message_sids, *self.turn.deliveries]
        our, user = self.conversation.our_address, self.conversation.user_address
        return twilio_messages.find_sent(self.client, our, user, self.body, since, ours)

    def send(self) -> str:
        from functions.delivery import twilio_messages

        callback = status_callback_url(self.conversation.conversation_id, self.window_id, self.label)
        return twilio_messages.send_message(
            self.client,
            self.conversation.our_address,
            self.conversation.user_address,
            self.body,
            status_callback=callback,
        )

    def refused(self) -> None:
        """Nothing kept: the reconciler's next attempt waits for a receipt first."""

    def record(self, sid: str) -> None:
        reply_sending.record_resend(self.conversation.conversation_id, self.turn.turn_id, self.index, sid)
        count("RepliesResentAfterRateLimit")
        logger.info("Part sent again after 63018", extra={"part": self.index, "message_sid": sid})
