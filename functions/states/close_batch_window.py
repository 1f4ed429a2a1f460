"""Close Batch Window, and open the next one for messages that arrived meanwhile: the
run's last step."""

from __future__ import annotations

from functions import clock
from functions.batching import batch_windows
from functions.batching.rules.adaptive import Learned, for_new_window
from functions.batching.rules.burst import BatchingRules
from functions.batching.windows import open_batch_window
from functions.contract import CloseInput, CloseOutput
from functions.intake import staged_messages
from functions.observability import logger
from functions.tenancy import conversations


def close_batch_window(task: CloseInput) -> CloseOutput:
    """Close this window first, then look for messages staged meanwhile (or left over by
    the batch's caps) and open the next window for them: its clock starts at the oldest of
    them, as if it had opened the window, and its last fragment is the newest (a
    quiet-mode burst is not split). The pending index is eventually consistent: if the
    window counted more messages than the batch merged, some are on their way to it, and
    the next window opens all the same."""
    closed = batch_windows.close(task.conversation_id, task.window_id)
    pending = sorted(key.received_at for key in staged_messages.pending(task.conversation_id))
    arrived = pending
    if not pending and closed is not None and closed.message_count > task.batch.message_count:
        # A guess: the window counted a message its batch did not merge. It may be on its
        # way to the index, or merged already (staged, taken by this batch's query, and
        # only then counted in). The next window counts none of its own, so that its run,
        # if it finds nothing, opens no other (a guess on a guess never ended).
        arrived = [clock.iso(clock.now())]
        logger.info("Counted messages not yet in the pending index: opening the next window")
    if not arrived:
        return CloseOutput(leftover_count=0, next_window_id=None)
    next_window_id = open_batch_window(
        task.conversation_id,
        _next_rules(task, clock.iso_to_ms(arrived[0])),
        opened_ms=clock.iso_to_ms(arrived[0]),
        last_message_ms=clock.iso_to_ms(arrived[-1]),
        message_count=len(pending),
        ensure_started=True,
    )
    return CloseOutput(leftover_count=len(pending), next_window_id=next_window_id)


def _next_rules(task: CloseInput, first_ms: int) -> BatchingRules:
    """The next window's rules: the same, except in `adaptive` mode, where the quiet period
    is what the conversation has learned (Acquire Processing Lock kept it with the lock),
    nudged up if the next window's first message came after this burst was declared over
    (we answered too soon: a split burst), as the webhook does for a window it opens."""
    if task.rules.mode != "adaptive":
        return task.rules
    conversation = conversations.get(task.conversation_id)
    if conversation is None:
        return task.rules
    learned = Learned(conversation.learned_quiet_ms, conversation.last_burst_ms, conversation.burst_closed_ms)
    return for_new_window(task.rules, learned, first_ms)
