"""Acquire Processing Lock: re-check the burst's end first (new fragments may have moved
it, so that a quiet-mode extension costs three state transitions and no more), then take
the conversation's processing lock."""

from __future__ import annotations

from functions.config import get_settings
from functions.contract import AcquireInput, BurstStatus
from functions.dal import batch_windows, conversations
from functions.errors import ProcessingLockHeld
from functions.logic.rules import clock
from functions.logic.rules.debounce import burst_end_reason, seconds_until_due


def acquire_processing_lock(task: AcquireInput) -> BurstStatus:
    """If new fragments moved the burst's end, say how long to wait again. Otherwise take
    the conversation's processing lock (free, ours, or its lease expired), and say why the
    burst ended (Record Turns And Release Lock counts it: BurstEnd)."""
    moment = clock.now()
    window = batch_windows.get(task.conversation_id)
    ended_by = None  # the window is closed already: no reason to tell
    if window is not None and window.window_id == task.window_id:
        now_ms = clock.epoch_ms(moment)
        ended_by = burst_end_reason(task.rules, window, now_ms)
        if ended_by is None:
            return BurstStatus(over=False, wait_seconds=seconds_until_due(task.rules, window, now_ms))
    if not conversations.acquire_lock(
        task.conversation_id,
        task.execution_name,
        int(moment.timestamp()),
        get_settings().lock_lease_seconds,
        clock.iso(moment),
    ):
        conversations.require(task.conversation_id)  # a missing conversation is not contention
        raise ProcessingLockHeld(f"conversation {task.conversation_id} is being processed by another run")
    return BurstStatus(over=True, wait_seconds=0, lock_acquired_at=clock.iso(moment), ended_by=ended_by)
