"""Phase 3 of a run: record the answered batch, announce it, close the window, and open
the next one for messages that arrived meanwhile."""

from __future__ import annotations

from functions.config import get_settings
from functions.contract import (
    AnnounceOutput,
    BatchRef,
    Leftovers,
    OpenNextInput,
    OpenNextOutput,
    RecordInput,
    RecordOutput,
)
from functions.dal import batch_windows, conversations, staged_messages, turns
from functions.errors import ProcessingLockLost
from functions.integrations import event_bus
from functions.logic import clock
from functions.logic.windows import open_batch_window


def record_turns(task: RecordInput) -> RecordOutput:
    """Mark the batch's staged messages answered, then record the turns and release the
    processing lock in one transaction conditioned on this run still holding it. Without
    a reply the batch was handed off to a person: there is no assistant turn."""
    moment = clock.now()
    retention = int(moment.timestamp()) + get_settings().answered_message_retention_seconds
    staged_messages.mark_answered(task.conversation_id, task.batch.message_sids, task.window_id, retention)
    processing_ms = int((moment - clock.parse(task.lock.acquired_at)).total_seconds() * 1000)
    handed_off = task.reply is None
    # A reply is never empty (an empty AI output is an AIPermanentError): no characters
    # means a cost limit stopped the AI call (limits.py).
    limited = task.reply is not None and task.reply.reply_chars == 0
    sent_sids = task.sent.message_sids if task.sent else []
    recorded = turns.record_answered_batch(
        conversation_id=task.conversation_id,
        owner=task.execution_name,
        user_turn_id=task.user_turn_id,
        assistant_turn_id=None if handed_off else task.assistant_turn_id,
        answered_at=clock.iso(moment),
        processing_time_ms=processing_ms,
        tokens=task.reply.model_dump(exclude={"reply_chars"}) if task.reply else {},
        last_message_sid=sent_sids[-1] if sent_sids else None,
        limited=limited,
    )
    if not recorded:
        turn_id, done = (task.user_turn_id, "handed_off") if handed_off else (task.assistant_turn_id, "sent")
        done = "limited" if limited else done
        turn = turns.get(task.conversation_id, turn_id)
        if turn is None or turn.status != done:  # not a retry of our own transaction
            raise ProcessingLockLost(f"{task.execution_name} no longer holds the processing lock")
    return RecordOutput(processing_time_ms=processing_ms)


def announce_answered_batch(ref: BatchRef) -> AnnounceOutput:
    """Publish the answered batch for other services: keys and counts; the texts and the
    user's address only when EVENT_INCLUDES_TEXTS is on (they are personal data). Runs
    after the lock is released; its failure does not fail the batch."""
    conversation = conversations.require(ref.conversation_id)
    user_turn = turns.get(ref.conversation_id, ref.user_turn_id)
    assistant_turn = turns.get(ref.conversation_id, ref.assistant_turn_id)
    merged_text = user_turn.body if user_turn else ""
    reply_text = assistant_turn.body if assistant_turn else ""
    detail = {
        "conversation_id": ref.conversation_id,
        "tenant_account_sid": conversation.tenant_account_sid,
        "channel": conversation.channel.value,
        "our_address": conversation.our_address,
        "window_id": ref.window_id,
        "execution_name": ref.execution_name,
        "message_sids": user_turn.message_sids if user_turn else [],
        "message_count": user_turn.message_count if user_turn else 0,
        "merged_chars": len(merged_text),
        "reply_message_sids": assistant_turn.message_sids if assistant_turn else [],
        "reply_chars": len(reply_text),
        "total_tokens": assistant_turn.total_tokens if assistant_turn else 0,
        "limited": assistant_turn.limited if assistant_turn else None,
    }
    if get_settings().event_includes_texts:
        merged, merged_clipped = event_bus.clip(merged_text)
        reply, reply_clipped = event_bus.clip(reply_text)
        detail |= {
            "user_address": conversation.user_address,
            "merged_body": merged,
            "reply_body": reply,
            "truncated": merged_clipped or reply_clipped,
        }
    event_bus.publish_batch_answered(detail)
    return AnnounceOutput(published=True)


def close_batch_window(ref: BatchRef) -> Leftovers:
    """Close this window, then look for messages staged meanwhile."""
    batch_windows.close(ref.conversation_id, ref.window_id)
    arrived = sorted(key.received_at for key in staged_messages.pending(ref.conversation_id))
    return Leftovers(
        leftover_count=len(arrived),
        oldest_leftover_at=arrived[0] if arrived else None,
        newest_leftover_at=arrived[-1] if arrived else None,
    )


def open_next_window(task: OpenNextInput) -> OpenNextOutput:
    """Open the window for messages that arrived while this batch was processed: its
    clock starts at the oldest of them, as if it had opened the window, and its last
    fragment is the newest of them."""
    oldest, newest = task.window.oldest_leftover_at, task.window.newest_leftover_at
    window_id = open_batch_window(
        task.conversation_id,
        task.rules,
        opened_ms=clock.iso_to_ms(oldest) if oldest else None,
        last_message_ms=clock.iso_to_ms(newest) if newest else None,
        message_count=task.window.leftover_count or 1,
        ensure_started=True,
    )
    return OpenNextOutput(window_id=window_id)
