"""The reconciler, run on a schedule: nothing accepted stays stranded.

It closes windows whose run has ended (a run that died before closing its window would
otherwise keep the conversation from opening a new one until the TTL), and opens a
window for messages pending longer than RECONCILE_AFTER_SECONDS with none open (a run
that failed keeps its messages staged; this is what retries them, up to
MAX_BATCH_ATTEMPTS). It reports the age of the oldest pending message as a metric."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from functions.config import get_settings
from functions.dal import batch_windows, conversations, staged_messages
from functions.integrations import stepfunctions
from functions.logic.entry_points.webhook import window_rules
from functions.logic.rules import clock
from functions.logic.shared.windows import open_batch_window
from functions.observability import logger, metrics


def reconcile() -> dict[str, Any]:
    settings = get_settings()
    now = clock.now()
    closed = 0
    # A running run takes every pending message of its conversation (or leaves them to the
    # next window it opens): nothing to do there, however long its burst.
    running: set[str] = set()
    for window in batch_windows.scan():
        age = (now - clock.parse(window.opened_at)).total_seconds()
        if age < settings.reconcile_after_seconds + settings.batch_window_seconds:
            continue
        if stepfunctions.status(window.execution_name) == "RUNNING":
            running.add(window.conversation_id)
        else:
            closed += batch_windows.close(window.conversation_id, window.window_id) is not None

    oldest: dict[str, str] = defaultdict(str)
    pending = staged_messages.scan_pending()
    for item in pending:
        conversation_id, since = item["conversation_id"], item["pending_since"]
        if not oldest[conversation_id] or since < oldest[conversation_id]:
            oldest[conversation_id] = since
    opened = 0
    oldest_age = 0.0
    for conversation_id, since in oldest.items():
        age = (now - clock.parse(since)).total_seconds()
        oldest_age = max(oldest_age, age)
        if age < settings.reconcile_after_seconds or conversation_id in running:
            continue
        if open_window_due_now(conversation_id):
            opened += 1
    metrics.add_metric(name="OldestPendingMessageAge", unit=MetricUnit.Seconds, value=oldest_age)
    summary = {
        "windows_closed": closed,
        "windows_opened": opened,
        "pending_messages": len(pending),
        "oldest_pending_age_seconds": int(oldest_age),
    }
    logger.info("Reconciled", extra=summary)
    return summary


def redrive(conversation_id: str) -> dict[str, Any]:
    """Answer a conversation's set-aside messages after all (once their cause is fixed):
    they become pending again and a window opens for them at once."""
    requeued = staged_messages.requeue_set_aside(conversation_id)
    window_id = open_window_due_now(conversation_id) if requeued else None
    logger.info("Redriven", extra={"conversation_id": conversation_id, "requeued": requeued})
    return {"requeued": requeued, "window_id": window_id}


def open_window_due_now(conversation_id: str) -> str | None:
    """Open a window whose burst is over already (its messages have waited): the run
    goes straight to the answer. The new window's id, or None."""
    conversation = conversations.get(conversation_id)
    if conversation is None:
        return None
    now_ms = clock.epoch_ms(clock.now())
    rules = window_rules(conversation, conversation.channel, now_ms)
    long_ago = now_ms - int(rules.max_wait_seconds * 1000) - 1000
    return open_batch_window(conversation_id, rules, opened_ms=long_ago, ensure_started=True)
