"""A reply part sent again, once, after Twilio reported it `failed` or `undelivered` with
63018, "Rate limit exceeded for Channel" (https://www.twilio.com/docs/api/errors/63018):
WhatsApp refused it for the rate of messages to one recipient, so it never reached the
user. Its status callback (status_callback.py) claims the resend for its MessageSid, waits a
little (the parts' pace, twice), and sends the part through send_once.py with a callback of
its own (`<index>r`); a resend reported 63018 again is not sent a third time."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from twilio.rest import Client

from functions.config import get_settings
from functions.dal import reply_sending, turns
from functions.dal.models import Conversation, Turn
from functions.dal.tables import assistant_turn_id
from functions.integrations import secrets, twilio_messages
from functions.logic.rules.replies import split_reply
from functions.logic.shared.callback_urls import status_callback_url
from functions.logic.shared.send_once import Claim, receipt_of, send_once
from functions.observability import count, logger

RESENT = "r"  # a resend's status callback names its part so: `1r`


def is_resend(message: str) -> bool:
    return message.endswith(RESENT) and message[: -len(RESENT)].isdigit()


def resend_part_once(
    conversation: Conversation, window_id: str, part_index: int, owner: str, budget: float
) -> str | None:
    """Send reply part `part_index` of the window's reply again, once, whoever asks how
    many times; `owner`: the MessageSid whose callback said 63018. Its SID, or None when
    there is no such part or another owner sends it. `budget`: the seconds the caller has
    for the pause, a receipt's wait and a create."""
    turn = turns.get(conversation.conversation_id, assistant_turn_id(window_id))
    parts = split_reply(turn.body) if turn else []
    if turn is None or part_index >= len(parts):
        return None
    settings = get_settings()
    pause = max(0.0, min(2 * settings.reply_part_interval_seconds, budget - settings.twilio_timeout_seconds))
    time.sleep(pause)  # the rate WhatsApp applies: not at once
    left = budget - pause - settings.twilio_timeout_seconds
    return send_once(_Resend(conversation, turn, window_id, part_index, parts[part_index], owner), left)


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
        return twilio_messages.client_for(secrets.twilio_credentials_for(self.conversation))

    def claim(self, now: str) -> Claim:
        claim = reply_sending.claim_resend(
            self.conversation.conversation_id, self.turn.turn_id, self.index, self.owner, now
        )
        return Claim.began(claim.since, now, sent=claim.sid, ours=claim.owner == self.owner)

    def reported(self) -> str | None:
        turn = turns.get(self.conversation.conversation_id, self.turn.turn_id) or self.turn
        return receipt_of(turn.deliveries, self.label)

    def find(self, since: datetime) -> str | None:
        ours = [*self.turn.message_sids, *self.turn.deliveries]
        our, user = self.conversation.our_address, self.conversation.user_address
        return twilio_messages.find_sent(self.client, our, user, self.body, since, ours)

    def send(self) -> str:
        callback = status_callback_url(self.conversation.conversation_id, self.window_id, self.label)
        return twilio_messages.send_message(
            self.client,
            self.conversation.our_address,
            self.conversation.user_address,
            self.body,
            status_callback=callback,
        )

    def refused(self) -> None:
        """Nothing kept: a retry of the callback waits for a receipt first."""

    def record(self, sid: str) -> None:
        reply_sending.record_resend(self.conversation.conversation_id, self.turn.turn_id, self.index, sid)
        count("RepliesResentAfterRateLimit")
        logger.info("Part sent again after 63018", extra={"part": self.index, "message_sid": sid})
