"""Wait For The Burst To End: the run parks its task token on its window until the burst
is due (Acquire Processing Lock re-checks the window next)."""

from __future__ import annotations

from functions import clock
from functions.batching import batch_windows, stepfunctions
from functions.batching.rules.debounce import hold_ms, is_due_now
from functions.contract import ParkInput, ParkOutput


def wait_for_the_burst_to_end(task: ParkInput) -> ParkOutput:
    """The run waits for its burst to end: leave its task token on the window, so that a
    message that makes the batch due (a flush) can wake it; wake it at once if due. A
    burst due within a second is held for here and woken at its due time: the wait's
    timeout, in whole seconds, cannot end it sooner than a second from now."""
    entered_ms = clock.iso_to_ms(task.entered_at)
    window = batch_windows.park_task_token(task.conversation_id, task.window_id, task.task_token, entered_ms)
    if window is not None:
        hold = hold_ms(task.rules, window, clock.epoch_ms(clock.now()))
        if hold:
            clock.sleep(hold / 1000)
    if window is None or is_due_now(task.rules, window, clock.epoch_ms(clock.now())):
        stepfunctions.wake(task.task_token)
    return ParkOutput(parked=window is not None)
