"""Merge Staged Messages: the batch's fragments, in arrival order, become one user turn."""

from __future__ import annotations

from functions import clock
from functions.answer import turns
from functions.batching.rules.merge import arrival_order, last_consent, merged_turn, within_bytes
from functions.batching.settings import BatchingSettings
from functions.contract import BatchSummary, MergeInput
from functions.delivery.rules.replies import split_reply
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.storage.models import StagedMessage, Turn

# How far back the message a reply answers is looked for: the conversation's last twenty
# turns (ten answered batches), in one Query, made only when a message replies to one.
RECENT_TURNS = 20


def merge_staged_messages(task: MergeInput) -> BatchSummary:
    """Merge the queried staged messages into the pending user turn, in arrival order, up
    to the batch's byte cap (the rest stay pending for the next batch). The query read an
    eventually consistent index: each message is read again, consistently, and one that
    an earlier batch answered or set aside meanwhile is left out."""
    queried = arrival_order(task.staged_items)
    messages = [m for m in staged_messages.load(task.conversation_id, queried) if m.is_pending]
    still_pending = {m.message_sid for m in messages}
    order = within_bytes(
        messages, [sid for sid in queried if sid in still_pending], BatchingSettings.get().max_batch_bytes
    )
    if not order:
        return BatchSummary(message_count=0, message_sids=[])
    messages = [m for m in messages if m.message_sid in set(order)]
    merged = merged_turn(messages, order, _quoted_replies(task.conversation_id, messages))
    body = merged.body
    received = sorted(m.received_at for m in messages)
    arrivals = [clock.iso_to_ms(r) for r in received if r]
    turns.put(
        Turn.user(
            task,
            status="pending",
            body=body,
            first_message_sid=order[0],
            message_sids=order,
            message_count=len(order),
            media=merged.media,
            consent=last_consent(messages, order),
            first_received_at=received[0] if received else None,
            last_received_at=received[-1] if received else None,
            arrival_offsets_ms=[a - arrivals[0] for a in arrivals],
        )
    )
    logger.info(
        "Batch merged", extra={"message_count": len(order), "chars": len(body), "media": len(merged.media)}
    )
    count("BatchSize", len(order))
    return BatchSummary(
        message_count=len(order),
        message_sids=order,
        first_received_ms=arrivals[0] if arrivals else None,
        last_received_ms=arrivals[-1] if arrivals else None,
    )


def _quoted_replies(conversation_id: str, messages: list[StagedMessage]) -> dict[str, str]:
    """The text of each of our recent reply parts that a message replies to, by its
    MessageSid (a reply to an older message, or to one of the user's own, is not quoted)."""
    wanted = {m.replied_to_sid for m in messages if m.replied_to_sid}
    if not wanted:
        return {}
    quotes: dict[str, str] = {}
    for turn in turns.recent(conversation_id, RECENT_TURNS):
        if turn.role == "assistant" and wanted & set(turn.message_sids):
            for sid, part in zip(turn.message_sids, split_reply(turn.body), strict=False):
                if sid in wanted:
                    quotes[sid] = part
    return quotes
