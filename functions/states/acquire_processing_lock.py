"""Acquire Processing Lock: re-check the burst's end first (new fragments may have moved
it, so that a quiet-mode extension costs three state transitions and no more; a burst due
within a second is held for here), then take the conversation's processing lock (with what
an `adaptive` conversation learned from the burst) and say why the burst ended."""

from __future__ import annotations

from datetime import datetime

from functions import clock
from functions.batching import batch_windows
from functions.batching.rules.adaptive import after_burst
from functions.batching.rules.burst import BatchingRules, BurstEnd
from functions.batching.rules.debounce import burst_end_reason, hold_ms, seconds_until_due
from functions.batching.settings import BatchingSettings
from functions.contract import AcquireInput, BurstStatus
from functions.errors import ProcessingLockHeld
from functions.storage.models import BatchWindow
from functions.tenancy import conversations


def acquire_processing_lock(task: AcquireInput) -> BurstStatus:
    """If new fragments moved the burst's end, say how long to wait again. Otherwise take
    the conversation's processing lock (free, ours, or its lease expired), and say why the
    burst ended (Record Turns And Release Lock counts it: BurstEnd)."""
    moment, window, ended_by = _burst_end(task)
    if window is not None and ended_by is None:
        return BurstStatus(
            over=False, wait_seconds=seconds_until_due(task.rules, window, clock.epoch_ms(moment))
        )
    if not conversations.acquire_lock(
        task.conversation_id,
        task.execution_name,
        int(moment.timestamp()),
        BatchingSettings.get().lock_lease_seconds,
        clock.iso(moment),
        learned=_learned(task.rules, window, clock.epoch_ms(moment)),
    ):
        conversations.require(task.conversation_id)  # a missing conversation is not contention
        raise ProcessingLockHeld(f"conversation {task.conversation_id} is being processed by another run")
    return BurstStatus(over=True, wait_seconds=0, lock_acquired_at=clock.iso(moment), ended_by=ended_by)


def _burst_end(task: AcquireInput) -> tuple[datetime, BatchWindow | None, BurstEnd | None]:
    """Now, the run's window (None: it is closed already, and there is no reason to tell)
    and why its burst ended (None: it has not). A burst due within a second is held for
    here (the whole-second wait ended just before its due time), then the window is read
    again: a fragment that came meanwhile moves its end."""
    moment = clock.now()
    window = _window_of(task)
    if window is None:
        return moment, None, None
    hold = hold_ms(task.rules, window, clock.epoch_ms(moment))
    if hold:
        clock.sleep(hold / 1000)
        moment = clock.now()
        window = _window_of(task)
        if window is None:
            return moment, None, None
    return moment, window, burst_end_reason(task.rules, window, clock.epoch_ms(moment))


def _window_of(task: AcquireInput) -> BatchWindow | None:
    window = batch_windows.get(task.conversation_id)
    return window if window is not None and window.window_id == task.window_id else None


def _learned(rules: BatchingRules, window: BatchWindow | None, now_ms: int) -> dict[str, int] | None:
    """In `adaptive` mode, what the conversation learns from the burst now over (kept
    with the processing lock, in its write)."""
    if rules.mode != "adaptive" or window is None:
        return None
    learned = after_burst(rules, window.opened_ms, window.last_message_ms, window.message_count, now_ms)
    return {
        "learned_quiet_ms": learned.quiet_ms or 0,
        "last_burst_ms": learned.last_burst_ms or window.last_message_ms,
        "burst_closed_ms": learned.burst_closed_ms or now_ms,
    }
