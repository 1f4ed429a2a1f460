"""Phase 1 of a run: wait until the burst is over."""

from __future__ import annotations

from functions.contract import CheckInput, ParkInput, ParkOutput, WaitStatus
from functions.dal import batch_windows
from functions.integrations import stepfunctions
from functions.logic import clock
from functions.logic.debounce import is_due_now, seconds_until_due


def park_until_due(task: ParkInput) -> ParkOutput:
    """The run waits for its burst to end: leave its task token on the window, so that a
    message that makes the batch due (a flush) can wake it; wake it at once if due."""
    window = batch_windows.park_task_token(task.conversation_id, task.window_id, task.task_token)
    if window is None or is_due_now(task.rules, window, clock.epoch_ms(clock.now())):
        stepfunctions.wake(task.task_token)
    return ParkOutput(parked=window is not None)


def check_batch_window(task: CheckInput) -> WaitStatus:
    """After a wait: is the burst over, or did new fragments move its end?"""
    window = batch_windows.get(task.conversation_id)
    if window is None or window.window_id != task.window_id:
        return WaitStatus(ready=True, wait_seconds=1)
    now_ms = clock.epoch_ms(clock.now())
    return WaitStatus(
        ready=is_due_now(task.rules, window, now_ms),
        wait_seconds=seconds_until_due(task.rules, window, now_ms),
    )
