"""The work of the state machine's task states, one function per state.

Each takes and returns small dicts of keys and counts (what flows through the state
machine and its history); texts are loaded and stored here, never passed along."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict

from functions.config import get_settings
from functions.dal import store
from functions.errors import (
    ConversationNotFound,
    ProcessingLockHeld,
    ProcessingLockLost,
    TwilioPermanentError,
)
from functions.logic import ai, clock, credentials, events, messaging
from functions.logic.debounce import BatchingRules, is_due_now, seconds_until_due
from functions.logic.merge import arrival_order, merged_body
from functions.logic.replies import split_reply
from functions.logic.windows import open_batch_window, send_wake
from functions.models import Conversation
from functions.observability import count, logger


class BatchRef(BaseModel):
    """The execution's identity, present in every task's input."""

    model_config = ConfigDict(extra="ignore")

    conversation_id: str
    window_id: str
    execution_name: str = ""

    @property
    def user_turn_id(self) -> str:
        return f"{self.window_id}#1-user"

    @property
    def assistant_turn_id(self) -> str:
        return f"{self.window_id}#2-assistant"


def _conversation(conversation_id: str) -> Conversation:
    conversation = store.get_conversation(conversation_id)
    if conversation is None:
        raise ConversationNotFound(conversation_id)
    return conversation


def acquire_processing_lock(ref: BatchRef) -> dict[str, Any]:
    settings = get_settings()
    moment = clock.now()
    if not store.acquire_lock(
        ref.conversation_id,
        ref.execution_name,
        int(moment.timestamp()),
        settings.lock_lease_seconds,
        clock.iso(moment),
    ):
        _conversation(ref.conversation_id)  # a missing conversation is not contention
        raise ProcessingLockHeld(f"conversation {ref.conversation_id} is being processed by another run")
    return {"acquired_at": clock.iso(moment)}


def merge_staged_messages(ref: BatchRef, staged_items: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge the queried staged messages into the pending user turn."""
    order = arrival_order(staged_items)
    if not order:
        return {"message_count": 0, "message_sids": []}
    messages = store.load_staged_messages(ref.conversation_id, order)
    body = merged_body(messages, order)
    received = sorted(m.received_at for m in messages)
    store.put_turn(
        {
            "conversation_id": ref.conversation_id,
            "turn_id": ref.user_turn_id,
            "role": "user",
            "status": "pending",
            "window_id": ref.window_id,
            "execution_name": ref.execution_name,
            "body": body,
            "first_message_sid": order[0],
            "message_sids": order,
            "message_count": len(order),
            "first_received_at": received[0] if received else None,
            "last_received_at": received[-1] if received else None,
            "created_at": clock.iso(clock.now()),
        }
    )
    logger.info("Batch merged", extra={"message_count": len(order), "chars": len(body)})
    count("BatchSize", len(order))
    return {"message_count": len(order), "message_sids": order, "chars": len(body)}


def generate_reply(ref: BatchRef) -> dict[str, Any]:
    """Ask OpenAI for the reply to the user turn; store it as the assistant turn. A retry
    after the reply was stored does not call OpenAI again."""
    existing = store.get_turn(ref.conversation_id, ref.assistant_turn_id)
    if existing is None:
        existing = _new_assistant_turn(ref)
    return {
        "reply_chars": len(existing["body"]),
        "prompt_tokens": existing["prompt_tokens"],
        "completion_tokens": existing["completion_tokens"],
        "total_tokens": existing["total_tokens"],
    }


def _new_assistant_turn(ref: BatchRef) -> dict[str, Any]:
    settings = get_settings()
    conversation = _conversation(ref.conversation_id)
    user_turn = store.get_turn(ref.conversation_id, ref.user_turn_id)
    if user_turn is None:
        raise ValueError(f"user turn {ref.user_turn_id} is missing")
    client = ai.client_for(credentials.openai_api_key(conversation.openai_api_key_secret))
    openai_conversation = conversation.openai_conversation_id
    if not openai_conversation:
        openai_conversation = ai.start_conversation(client, ref.conversation_id)
        store.set_openai_conversation(ref.conversation_id, openai_conversation)
    reply = ai.generate_reply(
        client,
        openai_conversation,
        user_turn["body"],
        conversation.ai_model or settings.openai_model,
        conversation.ai_instructions or settings.openai_instructions,
    )
    turn = {
        "conversation_id": ref.conversation_id,
        "turn_id": ref.assistant_turn_id,
        "role": "assistant",
        "status": "generated",
        "window_id": ref.window_id,
        "execution_name": ref.execution_name,
        "body": reply.text,
        "response_id": reply.response_id,
        "model": reply.model,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.total_tokens,
        "created_at": clock.iso(clock.now()),
    }
    store.put_turn(turn)
    logger.info("Reply generated", extra={"reply_chars": len(reply.text), "total_tokens": reply.total_tokens})
    return turn


def send_reply(ref: BatchRef) -> dict[str, Any]:
    """Send the assistant turn, split into parts the channel accepts, in order. Parts
    already sent (by an earlier attempt) are not sent again. A permanent refusal is
    recorded on the conversation; when it is WhatsApp's closed 24-hour window and a
    template is configured, the template is sent instead."""
    conversation = _conversation(ref.conversation_id)
    turn = store.get_turn(ref.conversation_id, ref.assistant_turn_id)
    if turn is None:
        raise ValueError(f"assistant turn {ref.assistant_turn_id} is missing")
    parts = split_reply(turn["body"])
    sent: list[str] = list(turn.get("message_sids") or [])
    if len(sent) < len(parts):
        client = messaging.client_for(credentials.twilio_credentials(conversation.twilio_credentials_secret))
        send = partial(messaging.send_message, client, conversation.our_address, conversation.user_address)
        try:
            for index in range(len(sent), len(parts)):
                sid = send(parts[index])
                store.append_sent_part(ref.conversation_id, ref.assistant_turn_id, index, sid)
                sent.append(sid)
        except TwilioPermanentError as error:
            store.record_delivery_failure(ref.conversation_id, error.code, clock.iso(clock.now()))
            template = get_settings().whatsapp_template_content_sid
            if error.code != messaging.WHATSAPP_WINDOW_CLOSED or not template or sent:
                raise
            sid = send(content_sid=template)
            store.append_sent_part(ref.conversation_id, ref.assistant_turn_id, 0, sid)
            logger.info("WhatsApp window closed: template sent instead", extra={"message_sid": sid})
            return {"message_sids": [sid], "parts": 1}
    logger.info("Reply sent", extra={"parts": len(parts), "message_sids": sent})
    return {"message_sids": sent, "parts": len(parts)}


def record_turns(
    ref: BatchRef,
    acquired_at: str,
    message_sids: list[str],
    tokens: dict[str, int] | None,
    sent_sids: list[str],
) -> dict[str, Any]:
    """Mark the batch's staged messages answered, then record the turns and release the
    processing lock in one transaction conditioned on this run still holding it. Without
    `tokens` the batch was handed off to a person: there is no assistant turn."""
    settings = get_settings()
    moment = clock.now()
    retention = int(moment.timestamp()) + settings.answered_message_retention_seconds
    store.mark_messages_answered(ref.conversation_id, message_sids, ref.window_id, retention)
    processing_ms = int((moment - clock.parse(acquired_at)).total_seconds() * 1000)
    handed_off = tokens is None
    recorded = store.record_answered_batch(
        conversation_id=ref.conversation_id,
        owner=ref.execution_name,
        user_turn_id=ref.user_turn_id,
        assistant_turn_id=None if handed_off else ref.assistant_turn_id,
        answered_at=clock.iso(moment),
        processing_time_ms=processing_ms,
        tokens=tokens or {},
        last_message_sid=sent_sids[-1] if sent_sids else None,
    )
    if not recorded:
        turn_id, done = (ref.user_turn_id, "handed_off") if handed_off else (ref.assistant_turn_id, "sent")
        if (store.get_turn(ref.conversation_id, turn_id) or {}).get("status") != done:
            raise ProcessingLockLost(f"{ref.execution_name} no longer holds the processing lock")
    return {"processing_time_ms": processing_ms}


def close_batch_window(ref: BatchRef) -> dict[str, Any]:
    """Close this window, then look for messages staged meanwhile."""
    store.close_window(ref.conversation_id, ref.window_id)
    leftovers = sorted(item["received_at"] for item in store.pending_messages(ref.conversation_id))
    return {
        "leftover_count": len(leftovers),
        "oldest_leftover_at": leftovers[0] if leftovers else None,
        "newest_leftover_at": leftovers[-1] if leftovers else None,
    }


def open_next_window(ref: BatchRef, rules: BatchingRules, leftovers: dict[str, Any]) -> dict[str, Any]:
    """Open the window for messages that arrived while this batch was processed: its
    clock starts at the oldest of them, as if it had opened the window."""
    oldest, newest = leftovers.get("oldest_leftover_at"), leftovers.get("newest_leftover_at")
    window_id = open_batch_window(
        ref.conversation_id,
        rules,
        opened_ms=_ms(oldest) if oldest else None,
        last_message_ms=_ms(newest) if newest else None,
        message_count=int(leftovers.get("leftover_count") or 1),
        ensure_started=True,
    )
    return {"window_id": window_id}


def park_until_due(ref: BatchRef, task_token: str, rules: BatchingRules) -> dict[str, Any]:
    """The run waits for its burst to end: leave its task token on the window, so that a
    message that makes the batch due (a flush) can wake it; wake it at once if due."""
    window = store.park_task_token(ref.conversation_id, ref.window_id, task_token)
    if window is None or is_due_now(rules, window, _now_ms()):
        send_wake(task_token)
    return {"parked": window is not None}


def check_batch_window(ref: BatchRef, rules: BatchingRules) -> dict[str, Any]:
    """After a wait: is the burst over, or did new fragments move its end?"""
    window = store.get_window(ref.conversation_id)
    if window is None or window["window_id"] != ref.window_id:
        return {"ready": True, "wait_seconds": 1}
    now_ms = _now_ms()
    return {
        "ready": is_due_now(rules, window, now_ms),
        "wait_seconds": seconds_until_due(rules, window, now_ms),
    }


def _now_ms() -> int:
    return int(clock.now().timestamp() * 1000)


def _ms(iso: str) -> int:
    return int(clock.parse(iso).timestamp() * 1000)


def announce_answered_batch(ref: BatchRef) -> dict[str, Any]:
    """Publish the answered batch (conversation, merged fragments, reply) for other
    services. Runs after the lock is released; its failure does not fail the batch."""
    conversation = _conversation(ref.conversation_id)
    user_turn = store.get_turn(ref.conversation_id, ref.user_turn_id) or {}
    assistant_turn = store.get_turn(ref.conversation_id, ref.assistant_turn_id) or {}
    merged, merged_clipped = events.clip(user_turn.get("body", ""))
    reply, reply_clipped = events.clip(assistant_turn.get("body", ""))
    events.publish_batch_answered(
        {
            "conversation_id": ref.conversation_id,
            "channel": conversation.channel.value,
            "user_address": conversation.user_address,
            "our_address": conversation.our_address,
            "window_id": ref.window_id,
            "execution_name": ref.execution_name,
            "message_sids": user_turn.get("message_sids", []),
            "merged_body": merged,
            "reply_body": reply,
            "reply_message_sids": assistant_turn.get("message_sids", []),
            "truncated": merged_clipped or reply_clipped,
            "total_tokens": assistant_turn.get("total_tokens", 0),
        }
    )
    return {"published": True}


def record_failed_batch(ref: BatchRef, error: dict[str, Any], message_sids: list[str]) -> dict[str, Any]:
    """The failure path, before the lock is released. A permanent error sets the batch
    aside at once (with the fallback reply, for the AI); any other failure counts an
    attempt on the pending messages, which stay staged for a later window until they
    have failed `max_batch_attempts` times and are set aside too (dead-lettered)."""
    settings = get_settings()
    error_name = str(error.get("Error", "Unknown"))
    cause = _error_message(error.get("Cause"))
    if error_name in ("AIPermanentError", "TwilioPermanentError") and message_sids:
        if error_name == "AIPermanentError":
            _send_fallback(ref)
        _set_aside(ref, message_sids, error_name, cause, outcome="failed")
        return {"outcome": "failed", "message_count": len(message_sids)}
    pending = [str(item["message_sid"]) for item in store.pending_messages(ref.conversation_id)]
    attempts = store.count_failed_attempt(ref.conversation_id, pending)
    if pending and attempts >= settings.max_batch_attempts:
        _set_aside(ref, pending, error_name, cause, outcome="dead_lettered")
        count("DeadLetteredBatches")
        return {"outcome": "dead_lettered", "message_count": len(pending), "attempts": attempts}
    return {"outcome": "kept", "message_count": len(pending), "attempts": attempts}


def _set_aside(ref: BatchRef, message_sids: list[str], error_name: str, cause: str, outcome: str) -> None:
    reason = f"{error_name}: {cause}"[:500]
    store.mark_messages_failed(ref.conversation_id, message_sids, ref.window_id, reason)
    store.mark_turn_failed(
        ref.conversation_id,
        ref.user_turn_id,
        {
            "role": "user",
            "status": outcome,
            "error": error_name,
            "cause": cause[:500],
            "message_sids": message_sids,
            "message_count": len(message_sids),
            "window_id": ref.window_id,
            "execution_name": ref.execution_name,
            "failed_at": clock.iso(clock.now()),
        },
    )
    logger.warning(
        "Batch set aside", extra={"outcome": outcome, "error": error_name, "message_count": len(message_sids)}
    )


def _send_fallback(ref: BatchRef) -> None:
    """Tell the user we cannot answer (best effort: the batch is recorded either way)."""
    text = get_settings().fallback_reply
    if not text:
        return
    try:
        conversation = _conversation(ref.conversation_id)
        client = messaging.client_for(credentials.twilio_credentials(conversation.twilio_credentials_secret))
        messaging.send_message(client, conversation.our_address, conversation.user_address, text)
        count("FallbackReplies")
    except Exception:
        logger.exception("Fallback reply not sent")


def _error_message(cause: Any) -> str:
    """A Lambda error's cause is JSON with errorMessage; other causes are plain text."""
    if not isinstance(cause, str):
        return ""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    return str(parsed.get("errorMessage", cause)) if isinstance(parsed, dict) else cause
