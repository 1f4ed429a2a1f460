"""One Twilio message sent once, however many attempts ask for it.

Twilio's `messages.create` takes no idempotency key, and an attempt can lose its answer
after Twilio accepted the message (a timeout, a connection broken after the request went
out, a function that died before it recorded the SID): a plain retry sends it twice. So
every message we must send once (a reply part, the fallback reply, the WhatsApp
template) follows one protocol, `send_once`:

1. claim: record in DynamoDB that an attempt began, before any create; what is recorded
   already says whether the SID is known (nothing to do), whether another owner sends it,
   and whether an earlier attempt began (then the message may be in Twilio unrecorded);
2. find: only after an earlier attempt began, look for the message's delivery receipt
   (a status callback recorded for it: its StatusCallback URL names the message), then in
   Twilio's Messages list
   (https://www.twilio.com/docs/messaging/api/message-resource#read-multiple-message-resources),
   and when neither shows it, wait a bounded time (DELIVERY_RECEIPT_WAIT_SECONDS) for a
   receipt: the list promises nothing about how soon a created message appears in it
   (every create carries a ValidityPeriod shorter than that wait, so that the message has
   left Twilio's queue, sent or expired with 30036, before the wait ends; a receipt of an
   expired message does not count as sent);
3. send: create it, if not found;
4. record: keep its SID, found or sent.

The order and the decisions are here, once (docs/adr/0056-one-send-once-protocol-for-every-message-we.md),
and so is the one message that takes those steps, `TurnMessage`: the four we send differ only
in data (docs/adr/0149-the-messages-sent-once-are-data.md), each a `Use` below: which turn keeps
its claim and SID, and in which fields (a `Slot` of functions/answer/turns.py), what its status
callback names it, what is counted; and, per message, what is sent. The Twilio calls are in
functions/delivery/twilio_messages.py, loaded only where a message is looked up or sent."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Literal, Protocol

from functions import clock
from functions.answer import turns
from functions.answer.turns import Slot
from functions.delivery.callback_urls import FALLBACK, RESENT, TEMPLATE, status_callback_url
from functions.delivery.settings import DeliverySettings
from functions.errors import VALIDITY_PERIOD_EXPIRED, TwilioPermanentError, TwilioRetryableError
from functions.observability import count, logger
from functions.storage.models import Conversation, Delivery
from functions.storage.tables import assistant_turn_id, user_turn_id
from functions.tenancy import secrets

if TYPE_CHECKING:
    from twilio.rest import Client

# How often the turn is read again for a delivery receipt while waiting for one.
RECEIPT_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Claim:
    """What the record says once this attempt has claimed the message."""

    sent: str | None = None  # its SID, recorded by an earlier attempt: nothing to send
    ours: bool = True  # False: another owner sends it, not this attempt
    earlier_since: datetime | None = None  # an earlier attempt began then: it may have sent it

    @classmethod
    def began(cls, since: str, now: str, sent: str | None = None, ours: bool = True) -> Claim:
        """The claim of an attempt that began at `now` and found `since` recorded: an
        earlier attempt's time if it is not `now`."""
        return cls(sent=sent, ours=ours, earlier_since=None if since == now else clock.parse(since))


class OnceMessage(Protocol):
    """How to claim, find, send and record one message (TurnMessage, below)."""

    def claim(self, now: str) -> Claim:
        """Record that an attempt began at `now` (unless one did before), and say what
        the record holds."""
        ...

    def reported(self) -> str | None:
        """The SID of the message if a status callback for it is recorded, else None
        (receipt_of: not for a message Twilio's queue expired)."""
        ...

    def find(self, since: datetime) -> str | None:
        """The message's SID if Twilio's list shows an attempt that began at `since` sent
        it, else None."""
        ...

    def send(self) -> str:
        """Create the message; its SID."""
        ...

    def record(self, sid: str) -> None:
        """Keep the message's SID."""
        ...

    def refused(self) -> None:
        """Twilio refused this attempt's create with a 4xx (it created nothing): keep that,
        if the next attempt can use it to send without waiting for a receipt."""
        ...


def receipt_of(deliveries: Mapping[str, Delivery], message: str, exclude: Collection[str] = ()) -> str | None:
    """The SID of message `message` of a turn (a reply part's index, `template`, ...) whose
    delivery receipt is recorded, `exclude`d SIDs aside; a receipt that says Twilio's queue
    expired it (30036) is not one: that message was never sent."""
    found = (
        sid
        for sid, delivery in deliveries.items()
        if delivery.message == message
        and sid not in exclude
        and not (delivery.status == "failed" and delivery.error_code == VALIDITY_PERIOD_EXPIRED)
    )
    return next(found, None)


def send_once(message: OnceMessage, receipt_wait: float | None = None) -> str | None:
    """The message's SID, sent by this attempt or an earlier one; None when another owner
    sends it. A retry after the SID was recorded sends nothing and looks nothing up; an
    attempt that finds an earlier one began looks for the message in Twilio's list before
    sending it; the first attempt sends without looking. Twilio's errors go up unchanged
    (the caller's retry claims again). `receipt_wait`: the longest wait for a receipt, if
    the caller's time is shorter than DELIVERY_RECEIPT_WAIT_SECONDS."""
    claim = message.claim(clock.iso(clock.now()))
    if claim.sent or not claim.ours:
        return claim.sent
    sid = _sent_earlier(message, claim.earlier_since, receipt_wait) if claim.earlier_since else None
    if sid is None:
        try:
            sid = message.send()
        except (TwilioRetryableError, TwilioPermanentError) as error:
            if error.refused:
                message.refused()
            raise
    message.record(sid)
    return sid


def _sent_earlier(message: OnceMessage, since: datetime, receipt_wait: float | None) -> str | None:
    """The SID of the message an earlier attempt (begun at `since`) sent, as far as can be
    known now; None means send it. The one place for what decides that a message in doubt
    was not sent: its delivery receipt (a status callback recorded for it), then Twilio's
    list; when neither shows it, the receipt is waited for, up to
    DELIVERY_RECEIPT_WAIT_SECONDS, before the message is sent again. Twilio reports every
    status after `queued` (`sent`, `failed`, ...) to the message's StatusCallback, which
    names the message; its list shows a created message after a delay it does not bound
    (docs/adr/0081-a-delivery-receipt-not-the-list-decides.md)."""
    sid = message.reported() or message.find(since)
    wait = DeliverySettings.get().delivery_receipt_wait_seconds
    deadline = time.monotonic() + (wait if receipt_wait is None else max(0.0, min(wait, receipt_wait)))
    while sid is None and time.monotonic() < deadline:
        time.sleep(min(RECEIPT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        sid = message.reported()
    if sid is None:
        count("SendsInDoubtSentAgain")
        logger.warning("No receipt of a message in doubt: sending it")
    return sid


# --- the message, and its four uses -----------------------------------------------------------


@dataclass(frozen=True)
class Use:
    """One use of send_once, as data: whose turn keeps the message's claim and SID, and where
    (`slot`); what its status callback names it (`receipt`; `{part}`: its part's index);
    what is counted, and logged, once its SID is recorded (`counted`, `said`), and when an
    earlier attempt is found to have sent it (`found`: `<found>FoundReported`, `<found>FoundSent`)."""

    turn: Literal["user", "assistant"]
    slot: Slot
    receipt: str
    counted: str = ""
    said: str = ""
    found: str = ""


# A reply's parts, in order (functions/delivery/reply.py).
REPLY_PART = Use("assistant", turns.REPLY_PARTS, receipt="{part}", found="ReplyParts")
# The WhatsApp template, once the 24-hour window has closed (functions/delivery/template.py).
WHATSAPP_TEMPLATE = Use(
    "assistant",
    turns.TEMPLATE,
    TEMPLATE,
    counted="TemplatesSent",
    said="WhatsApp window closed: template sent",
)
# A part sent again after Twilio reported 63018 (functions/delivery/part_resend.py).
RESEND = Use(
    "assistant",
    turns.RESEND,
    receipt="{part}" + RESENT,
    counted="RepliesResentAfterRateLimit",
    said="Part sent again after 63018",
)
# The fallback reply of a batch the AI could not answer (functions/delivery/fallback.py).
FALLBACK_REPLY = Use("user", turns.FALLBACK, FALLBACK, counted="FallbackReplies")


@dataclass
class Attempt:
    """One attempt to send a reply's parts, as its parts share it: when it began (its first
    part's claim, the one claim of the attempt: only the first part not recorded can be in
    doubt), and how much longer it may wait for its sender's turns (sender_pace.py)."""

    wait_left: float
    began: str = ""


@dataclass
class TurnMessage:
    """One message sent once for the turn of `window_id`, as its `use` says: the body
    (`body`), or a WhatsApp template (`content_sid`, through `messaging_service_sid`), from
    our number to the person's, with its status callback; claimed for `owner`, when the
    use's slot has one. `make_client`: Twilio's client, with the tenant's credentials (None:
    read in a session tagged with the conversation's tenant, when first needed). `attempt`:
    the attempt a reply's part belongs to (paced; claimed by its first part)."""

    use: Use
    conversation: Conversation
    window_id: str
    body: str | None = None
    part: int = 0
    owner: str | None = None
    content_sid: str | None = None
    messaging_service_sid: str | None = None
    content_variables: str | None = None
    make_client: Callable[[], Client] | None = None
    attempt: Attempt | None = None
    sid: str | None = field(default=None, init=False)  # once found or sent
    held: turns.Held | None = field(default=None, init=False)  # as claimed

    @property
    def turn_id(self) -> str:
        window = self.window_id
        return user_turn_id(window) if self.use.turn == "user" else assistant_turn_id(window)

    @property
    def receipt(self) -> str:
        return self.use.receipt.format(part=self.part)

    @cached_property
    def client(self) -> Client:
        from functions.delivery import twilio_messages

        if self.make_client is not None:
            return self.make_client()
        # the conversation's tenant, a stored fact by now: read in a session tagged with it
        return twilio_messages.client_for(secrets.twilio_credentials_in_tenant_session(self.conversation))

    def claim(self, now: str) -> Claim:
        attempt = self.attempt
        if attempt is not None and attempt.began:  # claimed by the attempt's first part: not in doubt
            return Claim()
        conversation_id, slot = self.conversation.conversation_id, self.use.slot
        held = self.held = turns.claim_once(conversation_id, self.turn_id, slot, self.part, self.owner, now)
        if attempt is not None:
            attempt.began = now
        if held.refused_part == self.part:
            return Claim()  # the previous attempt's create of it was refused: not sent
        return Claim.began(held.since, now, sent=held.sid, ours=held.owner == self.owner)

    def reported(self) -> str | None:
        """Its status callback names it (`receipt`): recorded on its turn."""
        turn = turns.get(self.conversation.conversation_id, self.turn_id)
        parts = self.held.part_sids if self.held else ()
        found = receipt_of(turn.deliveries if turn else {}, self.receipt, exclude=parts)
        if found and self.use.found:
            count(f"{self.use.found}FoundReported")
            logger.info("Message found reported", extra={"receipt": self.receipt, "message_sid": found})
        return found

    def find(self, since: datetime) -> str | None:
        """Twilio's list: a message from us since `since` with its body, none of the turn's."""
        from functions.delivery import twilio_messages

        ours = [*self.held.part_sids, *self.held.reported] if self.held else []
        our, user = self.conversation.our_address, self.conversation.user_address
        sid = twilio_messages.find_sent(self.client, our, user, self.body, since, ours)
        if sid and self.use.found:
            count(f"{self.use.found}FoundSent")
            logger.info(
                "Message found sent by an earlier attempt",
                extra={"receipt": self.receipt, "message_sid": sid},
            )
        return sid

    def send(self) -> str:
        from functions.delivery import twilio_messages
        from functions.delivery.sender_pace import wait_for_turn

        our, conversation_id = self.conversation.our_address, self.conversation.conversation_id
        if self.attempt is not None:  # its sender's turn, booked only now that a create follows
            self.attempt.wait_left -= wait_for_turn(our, conversation_id, self.attempt.wait_left)
        return twilio_messages.send_message(
            self.client,
            our,
            self.conversation.user_address,
            self.body,
            content_sid=self.content_sid,
            status_callback=status_callback_url(conversation_id, self.window_id, self.receipt),
            messaging_service_sid=self.messaging_service_sid,
            content_variables=self.content_variables,
        )

    def refused(self) -> None:
        """Kept for a reply's part only (the next attempt sends it without waiting for a
        receipt); another message's retry waits for a receipt first."""
        if self.use.slot.in_order and self.attempt is not None:
            turns.refuse_part(self.conversation.conversation_id, self.turn_id, self.part, self.attempt.began)

    def record(self, sid: str) -> None:
        self.sid = sid
        now = clock.iso(clock.now())
        turns.record_once(self.conversation.conversation_id, self.turn_id, self.use.slot, self.part, sid, now)
        if self.use.counted:
            count(self.use.counted)
        if self.use.said:
            logger.info(self.use.said, extra={"receipt": self.receipt, "message_sid": sid})
