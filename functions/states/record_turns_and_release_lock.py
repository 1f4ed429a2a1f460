"""Record Turns And Release Lock, and announce the answered batch."""

from __future__ import annotations

from functions import clock
from functions.answer import turns
from functions.batching.batch_metrics import count_answered_batch
from functions.contract import BatchRef, RecordInput, RecordOutput
from functions.delivery import event_bus
from functions.delivery.settings import EventSettings
from functions.errors import ProcessingLockLost
from functions.guards import limits
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.personal_data.settings import RetentionSettings
from functions.storage.models import Turn
from functions.tenancy import conversations


def record_turns_and_release_lock(task: RecordInput) -> RecordOutput:
    """Mark the batch's staged messages answered, then record the turns and release the
    processing lock in one transaction conditioned on this run still holding it; then
    announce the batch. A batch handed off to a person has no assistant turn; one that a
    cost limit stopped is recorded as limited (functions/guards/limits.py); an empty batch
    (answered by an earlier run) only releases the lock."""
    moment = clock.now()
    processing_ms = int((moment - clock.parse(task.lock_acquired_at)).total_seconds() * 1000)
    if task.reply.answered_by == "nobody":
        conversations.release_lock(task.conversation_id, task.execution_name)
        return RecordOutput(processing_time_ms=processing_ms, announced=False)
    retention = int(moment.timestamp()) + RetentionSettings.get().answered_message_retention_seconds
    staged_messages.mark_answered(task.conversation_id, task.batch.message_sids, task.window_id, retention)
    handed_off = task.reply.answered_by == "human"
    limited = task.reply.answered_by == "limited"
    recorded = turns.record_answered_batch(
        conversation_id=task.conversation_id,
        owner=task.execution_name,
        user_turn_id=task.user_turn_id,
        assistant_turn_id=None if handed_off else task.assistant_turn_id,
        answered_at=clock.iso(moment),
        processing_time_ms=processing_ms,
        tokens={
            "prompt_tokens": task.reply.prompt_tokens,
            "completion_tokens": task.reply.completion_tokens,
            "total_tokens": task.reply.total_tokens,
        },
        last_message_sid=task.sent.message_sids[-1] if task.sent.message_sids else None,
        limited=limited,
        ended_by=task.ended_by,
    )
    if not recorded:
        turn_id, done = (task.user_turn_id, "handed_off") if handed_off else (task.assistant_turn_id, "sent")
        done = "limited" if limited else done
        turn = turns.get(task.conversation_id, turn_id)
        if turn is None or turn.status != done:  # not a retry of our own transaction
            raise ProcessingLockLost(f"{task.execution_name} no longer holds the processing lock")
    return RecordOutput(processing_time_ms=processing_ms, announced=_measure_and_announce(task))


def _measure_and_announce(task: RecordInput) -> bool:
    """Count how the batch felt to the person (functions/batching/batch_metrics.py), then
    publish it for other services (`batch.handed_off` when it is for a person to answer):
    keys and counts; the texts and the user's address only when EVENT_INCLUDES_TEXTS is on
    (they are personal data). The batch is answered already: a failure is logged and counted, never raised."""
    try:
        user_turn = turns.get(task.conversation_id, task.user_turn_id)
        assistant_turn = turns.get(task.conversation_id, task.assistant_turn_id)
        count_answered_batch(task, user_turn, assistant_turn)
        detail = _answered_batch(task, user_turn, assistant_turn)
        if _handed_off(task, assistant_turn):  # for a person to answer: a helpdesk shows it
            count("HandedOffBatches")
            event_bus.publish(event_bus.BATCH_HANDED_OFF, detail | {"user_turn_id": task.user_turn_id})
        else:
            event_bus.publish_batch_answered(detail)
    except Exception:
        logger.exception("batch event not published")
        count("AnnounceFailures")
        return False
    return True


def _handed_off(task: RecordInput, assistant_turn: Turn | None) -> bool:
    """Recorded for a person: not answered (`answer: human`, or a paused conversation), or
    answered only with HANDOFF_REPLY (the batch that asked for a person)."""
    asked = assistant_turn is not None and assistant_turn.limited == limits.Limit.HANDED_OFF.value
    return task.reply.answered_by == "human" or asked


def _answered_batch(ref: BatchRef, user_turn: Turn | None, assistant_turn: Turn | None) -> dict[str, object]:
    conversation = conversations.require(ref.conversation_id)
    merged_text = user_turn.body if user_turn else ""
    reply_text = assistant_turn.body if assistant_turn else ""
    detail: dict[str, object] = {
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
        "tools_called": assistant_turn.tools_called if assistant_turn else [],  # names, never arguments
    }
    if EventSettings.get().event_includes_texts:
        merged, merged_clipped = event_bus.clip(merged_text)
        reply, reply_clipped = event_bus.clip(reply_text)
        detail |= {
            "user_address": conversation.user_address,
            "merged_body": merged,
            "reply_body": reply,
            "truncated": merged_clipped or reply_clipped,
        }
    return detail
