"""A reply sent: the assistant turn through Twilio, one message per reply part, whatever
attempt times out or dies after Twilio accepted a part.

Twilio's `messages.create` takes no idempotency key, and a request whose answer is lost
(a timeout, a connection broken after the request went out, a task that died after
create returned) may have created its message. So the first attempt records when it
began (`sending_since`, before its first create) and each part's SID as soon as it has
it; an attempt that finds `sending_since` already set first looks for the first part not
recorded (the only one an earlier attempt can have sent unrecorded: parts go out in order,
each recorded before the next): its status callback recorded on the turn, Twilio's list,
then a bounded wait for the callback; it sends the part only if none shows it, or at once
if the previous attempt's create of it was refused (docs/adr/0040-one-twilio-message-per-reply-part.md
and docs/adr/0081-a-delivery-receipt-not-the-list-decides.md; the
protocol is functions/delivery/send_once.py). Parts go out REPLY_PART_INTERVAL_SECONDS
apart (63018: the account's and the WhatsApp sender's rate limit), each create in its
sender's turn, shared with every other conversation of the number (sender_pace.py)."""

from __future__ import annotations

import time

from twilio.rest import Client

from functions import clock
from functions.answer import turns
from functions.contract import SendInput, SentSummary
from functions.delivery import template, twilio_messages
from functions.delivery.rules.replies import split_reply
from functions.delivery.send_once import REPLY_PART, Attempt, TurnMessage, send_once
from functions.delivery.sender_pace import WAIT_SECONDS
from functions.delivery.settings import DeliverySettings
from functions.errors import TwilioCredentialsRefused, TwilioPermanentError
from functions.guards import consent
from functions.observability import logger
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations, secrets
from functions.tenancy.fresh_credentials import with_fresh_credentials


def send_reply(task: SendInput) -> SentSummary:
    """Send the assistant turn, split into parts the channel accepts, in order. Parts
    already sent (by an earlier attempt) are not sent again. Each carries its status
    callback (functions/entry_points/status_callback.py). A permanent refusal is recorded on
    the conversation; when it is WhatsApp's closed 24-hour window and a template is
    configured, the template is sent instead of the assistant's reply, once (a person's
    reply's command decides that itself).
    Nothing to send unless the AI answered, or a limited turn carries a message of its own
    (an opt-out's confirmation, functions/guards/consent.py)."""
    notice = task.reply.answered_by == "limited" and task.reply.reply_chars > 0
    if task.reply.answered_by not in ("ai", "person") and not notice:
        return SentSummary(message_sids=[], parts=0)
    conversation = conversations.require(task.conversation_id)
    turn = turns.require(task.conversation_id, task.assistant_turn_id)
    if turn.template_sid and not turn.message_sids:  # sent instead of the reply (63016)
        return SentSummary(message_sids=[turn.template_sid], parts=1)
    parts = split_reply(turn.body)
    sent = list(turn.message_sids)
    if len(sent) < len(parts):
        try:
            _send_missing_parts_with_fresh_credentials(task, conversation, turn, parts, sent)
        except TwilioCredentialsRefused:
            # the tenant's token, not the person: kept for the reconciler
            # (functions/batching/rules/failures.py)
            raise
        except TwilioPermanentError as error:
            conversations.record_delivery_failure(task.conversation_id, error.code, clock.iso(clock.now()))
            if error.code == twilio_messages.UNSUBSCRIBED:  # no later burst costs an AI call
                consent.unsubscribed_at_twilio(conversation, task.user_turn_id)
            if notice:  # a courtesy, not the answer to the batch: the batch stands
                logger.warning("Notice not sent: Twilio refused it", extra={"error_code": error.code})
                return SentSummary(message_sids=[], parts=0)
            person = task.reply.answered_by == "person"  # its command asks for a template, or not
            if error.code != twilio_messages.WHATSAPP_WINDOW_CLOSED or sent or person:
                raise
            sid = template.send_template_once(
                conversation, task.window_id, owner=f"send:{task.execution_name}"
            )
            if sid is None:
                raise
            return SentSummary(message_sids=[sid], parts=1)
    logger.info("Reply sent", extra={"parts": len(parts), "message_sids": sent})
    return SentSummary(message_sids=sent, parts=len(parts))


def _send_missing_parts_with_fresh_credentials(
    task: SendInput, conversation: Conversation, turn: Turn, parts: list[str], sent: list[str]
) -> None:
    """Send the parts not yet recorded; if Twilio refuses the token we hold (401, 20003),
    once more with the tenant's secret read again (functions/tenancy/fresh_credentials.py)."""
    with_fresh_credentials(
        lambda fresh: secrets.twilio_credentials_in_tenant_session(conversation, fresh=fresh),
        lambda credentials: _send_missing_parts(
            task, conversation, turn, parts, sent, twilio_messages.client_for(credentials)
        ),
        TwilioCredentialsRefused,
        "Twilio",
    )


def _send_missing_parts(
    task: SendInput, conversation: Conversation, turn: Turn, parts: list[str], sent: list[str], client: Client
) -> None:
    """Send the parts not yet recorded, in order, each once (send_once.py), appending each
    SID to `sent` once recorded; REPLY_PART_INTERVAL_SECONDS apart, each in its sender's
    turn. The attempt claims the turn's sending once, with its first part: only that part can
    be in doubt (and not when the previous attempt's create of it was refused)."""
    first = len(sent)
    attempt = Attempt(wait_left=WAIT_SECONDS)
    interval = DeliverySettings.get().reply_part_interval_seconds
    for index in range(first, len(parts)):
        if index > first:  # the account's and sender's rate limit (63018): paced
            time.sleep(interval)
        part = TurnMessage(
            REPLY_PART,
            conversation,
            task.window_id,
            parts[index],
            part=index,
            make_client=lambda: client,
            attempt=attempt,
        )
        if sid := send_once(part):
            sent.append(sid)
