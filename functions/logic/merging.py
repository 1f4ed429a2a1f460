"""Merge Staged Messages: the batch's fragments, in arrival order, become one user turn."""

from __future__ import annotations

from functions.contract import BatchSummary, MergeInput
from functions.dal import staged_messages, turns
from functions.dal.models import Turn
from functions.logic import clock
from functions.logic.merge import arrival_order, merged_body
from functions.observability import count, logger


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
