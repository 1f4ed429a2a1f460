"""Acquire Processing Lock: re-check the burst's end first (new fragments may have moved
it, so that a quiet-mode extension costs three state transitions and no more), then take
the conversation's processing lock."""

from __future__ import annotations

from datetime import datetime

from functions.config import get_settings
from functions.contract import AcquireInput, BurstStatus
from functions.dal import batch_windows, conversations
from functions.errors import ProcessingLockHeld
from functions.logic.rules import clock
from functions.logic.rules.debounce import hold_ms, is_due_now, seconds_until_due


def acquire_processing_lock(task: AcquireInput) -> BurstStatus:
    """If new fragments moved the burst's end, say how long to wait again. Otherwise take
    the conversation's processing lock (free, ours, or its lease expired)."""
    moment, waiting = _burst_end(task)
    if waiting is not None:
        return waiting
    if not conversations.acquire_lock(
        task.conversation_id,
        task.execution_name,
        int(moment.timestamp()),
        get_settings().lock_lease_seconds,
        clock.iso(moment),
    ):
        conversations.require(task.conversation_id)  # a missing conversation is not contention
        raise ProcessingLockHeld(f"conversation {task.conversation_id} is being processed by another run")
    return BurstStatus(over=True, wait_seconds=0, lock_acquired_at=clock.iso(moment))


def _burst_end(task: AcquireInput) -> tuple[datetime, BurstStatus | None]:
    """Now, and how long to wait again if the burst is not over. A burst due within a
    second is held for here (the whole-second wait ended just before its due time), then
    the window is read again: a fragment that came meanwhile moves its end."""
    moment = clock.now()
    window = batch_windows.get(task.conversation_id)
    if window is None or window.window_id != task.window_id:
        return moment, None
    now_ms = clock.epoch_ms(moment)
    hold = hold_ms(task.rules, window, now_ms)
    if hold:
        clock.sleep(hold / 1000)
        moment = clock.now()
        now_ms = clock.epoch_ms(moment)
        window = batch_windows.get(task.conversation_id)
        if window is None or window.window_id != task.window_id:
            return moment, None
    if is_due_now(task.rules, window, now_ms):
        return moment, None
    return moment, BurstStatus(over=False, wait_seconds=seconds_until_due(task.rules, window, now_ms))
