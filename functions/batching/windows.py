"""Opening a batch window: the conditional put decides, the winner starts the run."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime

from functions import clock
from functions.batching import batch_windows, stepfunctions
from functions.batching.rules.adaptive import Learned, for_new_window
from functions.batching.rules.burst import BatchingRules
from functions.batching.rules.debounce import is_due_now, resolve_rules, seconds_until_due
from functions.batching.settings import BatchingSettings
from functions.contract import BurstStatus, RunInput
from functions.intake.inbound import Channel
from functions.observability import count, logger
from functions.storage.models import BatchWindow, Conversation
from functions.tenancy import projects

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_EXECUTION_NAME = 80
# A window's item outlives its run by this much before TTL removes it (fallback only).
_WINDOW_TTL_MARGIN_SECONDS = 3600


def new_window_id(opened_at: datetime) -> str:
    """Sortable by opening time, unique per conversation."""
    return f"{int(opened_at.timestamp() * 1000):013d}-{secrets.token_hex(3)}"


def execution_name(conversation_id: str, window_id: str) -> str:
    """`<conversation>-<window>`: unique per window, so StartExecution is idempotent and
    never collides with the 90-day reservation of an earlier window's name."""
    conversation = _NAME_UNSAFE.sub("_", conversation_id)
    name = f"{conversation}-{window_id}"
    if len(name) > _MAX_EXECUTION_NAME:
        digest = hashlib.sha256(conversation_id.encode()).hexdigest()[:16]
        keep = _MAX_EXECUTION_NAME - len(window_id) - len(digest) - 2
        name = f"{conversation[:keep]}_{digest}-{window_id}"
    return name


def new_window(
    conversation_id: str,
    rules: BatchingRules,
    *,
    opened_ms: int | None = None,
    last_message_ms: int | None = None,
    message_count: int = 1,
    flush: bool = False,
) -> BatchWindow:
    """A window opened now, with the input of its run. Its clock (first and last
    fragment, count) decides when its burst is over (see debounce.py); it starts now
    unless the caller opens it for messages that have waited already."""
    now = clock.now()
    now_ms = clock.epoch_ms(now)
    window_id = new_window_id(now)
    window = BatchWindow(
        conversation_id=conversation_id,
        window_id=window_id,
        opened_at=clock.iso(now),
        opened_ms=opened_ms or now_ms,
        last_message_ms=last_message_ms or opened_ms or now_ms,
        message_count=message_count,
        flush_requested=flush,
        execution_name=execution_name(conversation_id, window_id),
        expires_at=int(now.timestamp())
        + int(rules.max_wait_seconds)
        + BatchingSettings.get().lock_lease_seconds
        + _WINDOW_TTL_MARGIN_SECONDS,
    )
    over = is_due_now(rules, window, now_ms)
    burst = BurstStatus(over=over, wait_seconds=seconds_until_due(rules, window, now_ms))
    run_input = RunInput(
        conversation_id=conversation_id,
        window_id=window_id,
        rules=rules,
        burst=burst,
        batch_limit=BatchingSettings.get().max_batch_size,
    )
    window.execution_input = run_input.model_dump_json()
    return window


def count_in_window(conversation_id: str, rules: BatchingRules, now_ms: int, flush: bool) -> str | None:
    """The webhook's one write for a staged message: count it in the open window (moving
    its due time), or open a window with it and start the run. Wakes the waiting run if
    the message makes the batch due now (a flush keyword, max messages). The new
    window's id, or None when one was open."""
    candidate = new_window(conversation_id, rules, opened_ms=now_ms, flush=flush)
    window = batch_windows.count_message(candidate, now_ms, flush)
    if window.window_id == candidate.window_id:
        _start(window)
        return window.window_id
    wake_if_due(window, rules)
    return None


def open_batch_window(
    conversation_id: str,
    rules: BatchingRules,
    *,
    opened_ms: int | None = None,
    last_message_ms: int | None = None,
    message_count: int = 1,
    ensure_started: bool = False,
) -> str | None:
    """Open a batch window for messages that have waited (the reconciler, the next
    window of a run, a redrive) and start its run, unless a window is open already.
    Returns the new window's id, or None when one was open.

    A caller that may be a retry passes `ensure_started`: if a window is open, its run is
    started again with the same name and input, which AWS treats as the same request (a
    no-op while it runs) and which starts it if the opener died between the put and the
    start."""
    window = new_window(
        conversation_id,
        rules,
        opened_ms=opened_ms,
        last_message_ms=last_message_ms,
        message_count=message_count,
    )
    existing = batch_windows.open(window)
    if existing is not None:
        if ensure_started and existing.execution_input:
            stepfunctions.start(existing.execution_name, existing.execution_input, already_open=True)
        return None
    _start(window)
    return window.window_id


def _start(window: BatchWindow) -> None:
    """Start the run of a window this caller opened. If StartExecution fails, the window
    is closed again and the error raised, so that the caller's retry (Twilio's, or the
    state machine's) can open it anew."""
    try:
        stepfunctions.start(window.execution_name, window.execution_input)
    except Exception:
        logger.exception(
            "StartExecution failed; closing the window again", extra={"execution_name": window.execution_name}
        )
        batch_windows.close(window.conversation_id, window.window_id)
        raise
    logger.info("Batch window opened", extra={"execution_name": window.execution_name})
    count("WindowsOpened")


def wake_if_due(window: BatchWindow, rules: BatchingRules) -> bool:
    """Wake the window's waiting run now if a flush is due (a keyword, or enough
    messages) and the run has parked its task token. True if it was woken."""
    if not window.task_token or not is_due_now(rules, window, clock.epoch_ms(clock.now())):
        return False
    woken = stepfunctions.wake(window.task_token)
    if woken:
        count("EarlyFlushes")
    return woken


def conversation_rules(conversation: Conversation, channel: Channel) -> BatchingRules:
    """The global defaults, then the project's rules, then the conversation's own."""
    project = projects.own_rules(conversation.project_id) if conversation.project_id else None
    return resolve_rules(BatchingSettings.get().batching_defaults(), channel, project, conversation.batching)


def rules_for_new_window(conversation: Conversation, channel: Channel, now_ms: int) -> BatchingRules:
    """The rules of a window opened now: in `adaptive` mode with the quiet period the
    conversation has learned (functions/batching/rules/adaptive.py)."""
    learned = Learned(conversation.learned_quiet_ms, conversation.last_burst_ms, conversation.burst_closed_ms)
    return for_new_window(conversation_rules(conversation, channel), learned, now_ms)
