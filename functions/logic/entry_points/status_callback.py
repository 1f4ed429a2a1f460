"""What becomes of the messages we send: the callbacks Twilio POSTs to the status callback
URL each one carries (functions/logic/shared/callback_urls.py), and the WhatsApp template
sent once when a reply finds the 24-hour window closed.

Twilio answers `messages.create` with 201 `queued`; whether the message is then `sent`,
`delivered` and `read`, or `failed` / `undelivered` with an ErrorCode (63016: WhatsApp's
24-hour window closed; 30003-30008, 63024, ...), arrives later, by a POST to the message's
StatusCallback, signed like a webhook; none is sent for the initial status
(https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks).
The docs do not promise callbacks in order: each status has a rank, and a callback never
replaces a status of the same or a later rank."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cached_property

from twilio.rest import Client

from functions import clock
from functions.config import get_settings
from functions.dal import conversations, turns
from functions.dal.models import Conversation, Delivery, Turn
from functions.dal.tables import assistant_turn_id, user_turn_id
from functions.inbound import Channel, ascii_count
from functions.integrations import secrets, twilio_messages
from functions.logic.shared import part_resend
from functions.logic.shared.admission import Refusal, Signature, admit
from functions.logic.shared.callback_urls import FALLBACK, TEMPLATE, status_callback_url
from functions.logic.shared.send_once import Claim, receipt_of, send_once
from functions.observability import count, logger
from functions.registry import STATUS_CALLBACK

# The order of the statuses (https://www.twilio.com/docs/messaging/api/message-resource#message-status-values).
RANKS = {
    "accepted": 0,
    "scheduled": 0,
    "queued": 0,
    "sending": 1,
    "sent": 2,
    "delivered": 3,
    "undelivered": 3,
    "failed": 3,
    "canceled": 3,
    "read": 4,
}
NOT_DELIVERED = ("failed", "undelivered")


class CallbackOutcome(StrEnum):
    FORBIDDEN = "forbidden"  # not a tenant, not its number, not its signature
    RECORDED = "recorded"
    UNCHANGED = "unchanged"  # a repeated or late callback, or no conversation of its own


def record_status(
    conversation_id: str, window_id: str, message: str, form: dict[str, str], url: str, signature: Signature
) -> CallbackOutcome:
    """Keep a status callback on the turn of the message it reports, if it comes from the
    conversation's tenant, signed, about a message from the conversation's number. A
    failure is counted (`UndeliveredReplies`) and recorded on the conversation; 63016 on
    a reply part sends the configured template once; after 63018 the part is sent again
    once, later, by the reconciler (part_resend.py)."""
    tenant = admit(form, url, signature, our_number="From")
    if isinstance(tenant, Refusal):
        logger.warning("Status callback refused", extra={"reason": tenant.value})
        count("StatusCallbacksRefused")
        return CallbackOutcome.FORBIDDEN
    conversation = conversations.get(conversation_id)
    if conversation is None or conversation.forget_started_at:  # forgotten: nothing follows
        logger.warning("Status callback for no conversation of ours")
        return CallbackOutcome.UNCHANGED
    if conversation.tenant_account_sid != tenant.account_sid or form.get("From") != conversation.our_address:
        # Answered as for no conversation: a tenant must not learn who writes to another.
        logger.warning("Status callback ignored", extra={"reason": "not_its_conversation"})
        count("StatusCallbacksRefused")
        return CallbackOutcome.UNCHANGED
    sid, status = form.get("MessageSid", ""), form.get("MessageStatus") or form.get("SmsStatus") or ""
    error_code, reply_part = ascii_count(form.get("ErrorCode")), ascii_count(message) is not None
    known = reply_part or message in (TEMPLATE, FALLBACK) or part_resend.is_resend(message)
    if not sid or status not in RANKS or not known:
        logger.warning("Status callback not understood", extra={"status": status[:20], "part": message[:20]})
        return CallbackOutcome.UNCHANGED
    logger.append_keys(message_sid=sid, conversation_id=conversation_id)
    delivery = Delivery(message=message, status=status, rank=RANKS[status], error_code=error_code, at=_now())
    turn_id = user_turn_id(window_id) if message == FALLBACK else assistant_turn_id(window_id)
    recorded = turns.record_delivery(conversation_id, turn_id, sid, delivery)
    if recorded and status in NOT_DELIVERED:
        count("UndeliveredReplies")
        conversations.record_delivery_failure(conversation_id, error_code, delivery.at)
        logger.warning(
            "Message not delivered", extra={"status": status, "error_code": error_code, "part": message}
        )
    if status in NOT_DELIVERED and error_code == twilio_messages.WHATSAPP_WINDOW_CLOSED and reply_part:
        send_template_once(conversation, window_id, owner=sid)  # also when a callback is repeated
    if status in NOT_DELIVERED and error_code == twilio_messages.CHANNEL_RATE_LIMITED and message.isdigit():
        # The account's or sender's limit, not the recipient's: sent again later, not now.
        part_resend.resend_later(conversation_id, window_id, int(message), owner=sid)
    return CallbackOutcome.RECORDED if recorded else CallbackOutcome.UNCHANGED


def send_template_once(conversation: Conversation, window_id: str, owner: str) -> str | None:
    """Send the configured WhatsApp template (WHATSAPP_TEMPLATE_CONTENT_SID) for the
    turn's reply, once, whoever asks how many times: the first to claim it (`owner`: the
    MessageSid whose callback said 63016, or Send Reply) sends it, and only that owner
    tries again if its attempt failed, after looking for a message that attempt may have
    sent (send_once.py). It goes through TWILIO_MESSAGING_SERVICE_SID, as Twilio sends
    templates. Its SID, or None when no template (or no Messaging Service) is configured,
    it is not WhatsApp, or another owner sends it. Whoever sends it (this function, Send
    Reply, Conversation Commands) reads the tenant's Twilio credentials in a session tagged
    with the conversation's tenant, never with its own role (which, here, may read every
    tenant's: it checks a claimed tenant's signature)."""
    settings = get_settings()
    template = settings.whatsapp_template_content_sid
    if not template or conversation.channel != Channel.WHATSAPP:
        return None
    if template_without_messaging_service():
        count("TemplateNotConfigured")
        return None
    # Within the StatusCallback function's timeout when it sends: a wait, then a create.
    wait = STATUS_CALLBACK.timeout_seconds - settings.twilio_timeout_seconds - 1
    service = settings.twilio_messaging_service_sid
    return send_once(_Template(conversation, window_id, owner, template, service), receipt_wait=wait)


def template_without_messaging_service() -> bool:
    """Whether the template is configured without the Messaging Service it is sent through
    (Twilio refuses it, 30124): said once per process, as an error."""
    settings = get_settings()
    amiss = bool(settings.whatsapp_template_content_sid and not settings.twilio_messaging_service_sid)
    if amiss and not _said_amiss:
        _said_amiss.append(True)
        logger.error(
            "WHATSAPP_TEMPLATE_CONTENT_SID is set without TWILIO_MESSAGING_SERVICE_SID: "
            "the template is not sent (Twilio sends templates through a Messaging Service)"
        )
    return amiss


_said_amiss: list[bool] = []


@dataclass
class _Template:
    """The WhatsApp template of the turn's reply, for send_once: claimed for an owner on
    the assistant turn (`template_owner`, `template_since`), its SID kept there."""

    conversation: Conversation
    window_id: str
    owner: str
    content_sid: str
    messaging_service_sid: str
    turn: Turn = field(init=False)  # as claimed

    @property
    def turn_id(self) -> str:
        return assistant_turn_id(self.window_id)

    @cached_property
    def client(self) -> Client:
        return twilio_messages.client_for(secrets.twilio_credentials_in_tenant_session(self.conversation))

    def claim(self, now: str) -> Claim:
        self.turn = turns.claim_template(self.conversation.conversation_id, self.turn_id, self.owner, now)
        since, sent = self.turn.template_since or now, self.turn.template_sid
        return Claim.began(since, now, sent=sent, ours=self.turn.template_owner == self.owner)

    def reported(self) -> str | None:
        """Its status callback names it (`template`): recorded on the assistant turn."""
        turn = turns.get(self.conversation.conversation_id, self.turn_id) or self.turn
        return receipt_of(turn.deliveries, TEMPLATE)

    def refused(self) -> None:
        """Nothing kept: a retry waits for a receipt first."""

    def find(self, since: datetime) -> str | None:
        """Twilio's list: a message from us since `since` that is none of the turn's."""
        ours = [*self.turn.message_sids, *self.turn.deliveries]
        our, user = self.conversation.our_address, self.conversation.user_address
        return twilio_messages.find_sent(self.client, our, user, None, since, ours)

    def send(self) -> str:
        return twilio_messages.send_message(
            self.client,
            self.conversation.our_address,
            self.conversation.user_address,
            content_sid=self.content_sid,
            status_callback=status_callback_url(self.conversation.conversation_id, self.window_id, TEMPLATE),
            messaging_service_sid=self.messaging_service_sid,
            content_variables=get_settings().whatsapp_template_variables or None,
        )

    def record(self, sid: str) -> None:
        turns.record_template(self.conversation.conversation_id, self.turn_id, sid)
        count("TemplatesSent")
        logger.info("WhatsApp window closed: template sent", extra={"template_sid": sid})


def _now() -> str:
    return clock.iso(clock.now())
