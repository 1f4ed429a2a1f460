"""Phase 2 of a run: take the lock, merge the batch, generate the reply, send it.

Each step takes and returns the small models of functions/contract.py (keys and counts:
what flows through the state machine and its history); texts are loaded and stored
here, never passed along."""

from __future__ import annotations

from functools import partial

from functions.config import get_settings
from functions.contract import BatchRef, BatchSummary, LockOutput, MergeInput, ReplySummary, SentSummary
from functions.dal import conversations, staged_messages, turns
from functions.dal.models import Turn
from functions.errors import ProcessingLockHeld, TwilioPermanentError
from functions.integrations import openai_responses, secrets, twilio_messages
from functions.logic import clock, limits
from functions.logic.merge import arrival_order, merged_body
from functions.logic.replies import split_reply
from functions.logic.sanitize import model_input
from functions.observability import count, logger


def acquire_processing_lock(ref: BatchRef) -> LockOutput:
    moment = clock.now()
    if not conversations.acquire_lock(
        ref.conversation_id,
        ref.execution_name,
        int(moment.timestamp()),
        get_settings().lock_lease_seconds,
        clock.iso(moment),
    ):
        conversations.require(ref.conversation_id)  # a missing conversation is not contention
        raise ProcessingLockHeld(f"conversation {ref.conversation_id} is being processed by another run")
    return LockOutput(acquired_at=clock.iso(moment))


def merge_staged_messages(task: MergeInput) -> BatchSummary:
    """Merge the queried staged messages into the pending user turn."""
    order = arrival_order(task.staged_items)
    if not order:
        return BatchSummary(message_count=0, message_sids=[])
    messages = staged_messages.load(task.conversation_id, order)
    body = merged_body(messages, order)
    received = sorted(m.received_at for m in messages)
    turns.put(
        Turn(
            conversation_id=task.conversation_id,
            turn_id=task.user_turn_id,
            role="user",
            status="pending",
            window_id=task.window_id,
            execution_name=task.execution_name,
            body=body,
            first_message_sid=order[0],
            message_sids=order,
            message_count=len(order),
            first_received_at=received[0] if received else None,
            last_received_at=received[-1] if received else None,
            created_at=clock.iso(clock.now()),
        )
    )
    logger.info("Batch merged", extra={"message_count": len(order), "chars": len(body)})
    count("BatchSize", len(order))
    return BatchSummary(message_count=len(order), message_sids=order)


def generate_reply(ref: BatchRef) -> ReplySummary:
    """Ask OpenAI for the reply to the user turn; store it as the assistant turn. A retry
    after the reply was stored does not call OpenAI again."""
    turn = turns.get(ref.conversation_id, ref.assistant_turn_id) or _new_assistant_turn(ref)
    return ReplySummary(
        reply_chars=len(turn.body),
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        total_tokens=turn.total_tokens,
    )


def _new_assistant_turn(ref: BatchRef) -> Turn:
    settings = get_settings()
    conversation = conversations.require(ref.conversation_id)
    user_turn = turns.require(ref.conversation_id, ref.user_turn_id)
    limited = limits.admit_ai_call(conversation)
    if limited is not None:
        return limits.store_limited_turn(ref, limited)  # no AI call
    client = openai_responses.client_for(secrets.openai_api_key_for(conversation))
    openai_conversation = conversation.openai_conversation_id
    if not openai_conversation:
        openai_conversation = openai_responses.start_conversation(client, ref.conversation_id)
        conversations.set_openai_conversation(ref.conversation_id, openai_conversation)
    reply = openai_responses.generate_reply(
        client,
        openai_conversation,
        model_input(user_turn.body),
        conversation.ai_model or settings.openai_model,
        conversation.ai_instructions or settings.openai_instructions,
    )
    text, capped = limits.cap_reply_parts(reply.text)
    turn = Turn(
        conversation_id=ref.conversation_id,
        turn_id=ref.assistant_turn_id,
        role="assistant",
        status="generated",
        window_id=ref.window_id,
        execution_name=ref.execution_name,
        body=text,
        limited=limits.Limit.REPLY_PARTS.value if capped else None,
        response_id=reply.response_id,
        model=reply.model,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        total_tokens=reply.total_tokens,
        created_at=clock.iso(clock.now()),
    )
    turns.put(turn)
    logger.info("Reply generated", extra={"reply_chars": len(reply.text), "total_tokens": reply.total_tokens})
    return turn


def send_reply(ref: BatchRef) -> SentSummary:
    """Send the assistant turn, split into parts the channel accepts, in order. Parts
    already sent (by an earlier attempt) are not sent again. A permanent refusal is
    recorded on the conversation; when it is WhatsApp's closed 24-hour window and a
    template is configured, the template is sent instead."""
    conversation = conversations.require(ref.conversation_id)
    turn = turns.require(ref.conversation_id, ref.assistant_turn_id)
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
                turns.append_sent_part(ref.conversation_id, ref.assistant_turn_id, index, sid)
                sent.append(sid)
        except TwilioPermanentError as error:
            conversations.record_delivery_failure(ref.conversation_id, error.code, clock.iso(clock.now()))
            template = get_settings().whatsapp_template_content_sid
            if error.code != twilio_messages.WHATSAPP_WINDOW_CLOSED or not template or sent:
                raise
            sid = send(content_sid=template)
            turns.append_sent_part(ref.conversation_id, ref.assistant_turn_id, 0, sid)
            logger.info("WhatsApp window closed: template sent instead", extra={"message_sid": sid})
            return SentSummary(message_sids=[sid], parts=1)
    logger.info("Reply sent", extra={"parts": len(parts), "message_sids": sent})
    return SentSummary(message_sids=sent, parts=len(parts))
