"""What becomes of the messages we send: the callbacks Twilio POSTs to the status callback
URL each one carries (functions/delivery/callback_urls.py), and the WhatsApp template
sent once when a reply finds the 24-hour window closed.

Twilio answers `messages.create` with 201 `queued`; whether the message is then `sent`,
`delivered` and `read`, or `failed` / `undelivered` with an ErrorCode (63016: WhatsApp's
24-hour window closed; 30003-30008, 63024, ...), arrives later, by a POST to the message's
StatusCallback, signed like a webhook; none is sent for the initial status
(https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks).
The docs do not promise callbacks in order: each status has a rank, and a callback never
replaces a status of the same or a later rank."""

from __future__ import annotations

from enum import StrEnum

from functions import clock
from functions.answer import turns
from functions.delivery import part_resend, template, twilio_messages
from functions.delivery.callback_urls import FALLBACK, TEMPLATE
from functions.intake.admission import Refusal, Signature, admit
from functions.intake.inbound import ascii_count
from functions.observability import count, logger
from functions.storage.models import Delivery
from functions.storage.tables import assistant_turn_id, user_turn_id
from functions.tenancy import conversations

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
    once, later, by the reconciler (functions/delivery/part_resend.py)."""
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
        template.send_template_once(conversation, window_id, owner=sid)  # also when a callback is repeated
    if status in NOT_DELIVERED and error_code == twilio_messages.CHANNEL_RATE_LIMITED and message.isdigit():
        # The account's or sender's limit, not the recipient's: sent again later, not now.
        part_resend.resend_later(conversation_id, window_id, int(message), owner=sid)
    return CallbackOutcome.RECORDED if recorded else CallbackOutcome.UNCHANGED


def _now() -> str:
    return clock.iso(clock.now())
