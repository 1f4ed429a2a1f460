"""Send Reply: the assistant turn through Twilio, each part exactly once per attempt."""

from __future__ import annotations

from functools import partial

from functions.config import get_settings
from functions.contract import SendInput, SentSummary
from functions.dal import conversations, turns
from functions.errors import TwilioPermanentError
from functions.integrations import secrets, twilio_messages
from functions.logic import clock
from functions.logic.replies import split_reply
from functions.observability import logger


def send_reply(task: SendInput) -> SentSummary:
    """Send the assistant turn, split into parts the channel accepts, in order. Parts
    already sent (by an earlier attempt) are not sent again. A permanent refusal is
    recorded on the conversation; when it is WhatsApp's closed 24-hour window and a
    template is configured, the template is sent instead. Nothing to send unless the
    AI answered."""
    if task.reply.answered_by != "ai":
        return SentSummary(message_sids=[], parts=0)
    conversation = conversations.require(task.conversation_id)
    turn = turns.require(task.conversation_id, task.assistant_turn_id)
    parts = split_reply(turn.body)
    sent = list(turn.message_sids)
    if len(sent) < len(parts):
        client = twilio_messages.client_for(secrets.twilio_credentials_for(conversation))
        send = partial(
            twilio_messages.send_message, client, conversation.our_address, conversation.user_address
        )
        try:
            for index in range(len(sent), len(parts)):
                sid = send(parts[index])
                turns.append_sent_part(task.conversation_id, task.assistant_turn_id, index, sid)
                sent.append(sid)
        except TwilioPermanentError as error:
            conversations.record_delivery_failure(task.conversation_id, error.code, clock.iso(clock.now()))
            template = get_settings().whatsapp_template_content_sid
            if error.code != twilio_messages.WHATSAPP_WINDOW_CLOSED or not template or sent:
                raise
            sid = send(content_sid=template)
            turns.append_sent_part(task.conversation_id, task.assistant_turn_id, 0, sid)
            logger.info("WhatsApp window closed: template sent instead", extra={"message_sid": sid})
            return SentSummary(message_sids=[sid], parts=1)
    logger.info("Reply sent", extra={"parts": len(parts), "message_sids": sent})
    return SentSummary(message_sids=sent, parts=len(parts))
