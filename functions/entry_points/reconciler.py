"""The reconciler, run on a schedule: nothing accepted stays stranded.

It closes windows whose run has ended (a run that died before closing its window would
otherwise keep the conversation from opening a new one until the TTL), and opens a
window for messages pending longer than RECONCILE_AFTER_SECONDS with none open (a run
that failed keeps its messages staged; this is what retries them: up to MAX_BATCH_ATTEMPTS
times, or, after failures for a transient reason, with growing delays until they have been
pending MAX_PENDING_SECONDS). It sends the reply parts due for a resend after Twilio
reported them failed with 63018 (functions/delivery/part_resend.py). It reports the
age of the oldest pending message as a metric. Last, in the time left, it cuts the texts of
answered turns past their retention (functions/personal_data/retention.py)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from functions import clock
from functions.batching import batch_windows, stepfunctions
from functions.batching.rules import failures
from functions.batching.settings import BatchingSettings, FailureSettings
from functions.batching.windows import open_batch_window, rules_for_new_window
from functions.delivery import part_resend
from functions.intake import staged_messages
from functions.observability import logger, metrics
from functions.personal_data import retention
from functions.registry import RECONCILER
from functions.tenancy import conversations

# Of the function's timeout, what no resend may take: the log and metrics after them.
RESERVE_SECONDS = 5


def reconcile() -> dict[str, Any]:
    started = time.monotonic()
    after = FailureSettings.get().reconcile_after_seconds
    now = clock.now()
    closed = 0
    # A running run takes every pending message of its conversation (or leaves them to the
    # next window it opens): nothing to do there, however long its burst.
    running: set[str] = set()
    windows, resends = batch_windows.scan_with_resends()
    for window in windows:
        age = (now - clock.parse(window.opened_at)).total_seconds()
        if age < after + BatchingSettings.get().batch_window_seconds:
            continue
        if stepfunctions.status(window.execution_name) == "RUNNING":
            running.add(window.conversation_id)
        else:
            closed += batch_windows.close(window.conversation_id, window.window_id) is not None

    pending = staged_messages.scan_pending()
    opened = 0
    oldest_age = 0.0
    for conversation_id, waiting in _by_conversation(pending).items():
        age = (now - clock.parse(waiting.since)).total_seconds()
        oldest_age = max(oldest_age, age)
        if age < after or conversation_id in running:
            continue
        if not waiting.retry_due(now):
            continue  # its last run failed for a transient reason: later
        if open_window_due_now(conversation_id):
            opened += 1
    metrics.add_metric(name="OldestPendingMessageAge", unit=MetricUnit.Seconds, value=oldest_age)
    # Last, in the time the pass has left: the reply parts due for a resend after a 63018.
    deadline = started + RECONCILER.timeout_seconds - RESERVE_SECONDS
    resent = part_resend.send_due_resends(resends, now, deadline)
    swept = retention.sweep(deadline)
    summary = {
        "windows_closed": closed,
        "windows_opened": opened,
        "parts_resent": resent,
        "pending_messages": len(pending),
        "oldest_pending_age_seconds": int(oldest_age),
        **swept,
    }
    logger.info("Reconciled", extra=summary)
    return summary


@dataclass
class _Waiting:
    """A conversation's pending messages, as the reconciler sees them: since when the
    oldest has waited, and how its runs have failed for transient reasons so far."""

    since: str = ""
    transient_failures: int = 0
    last_failed_at: str = ""

    def add(self, item: dict[str, Any]) -> None:
        if not self.since or item["pending_since"] < self.since:
            self.since = item["pending_since"]
        self.transient_failures = max(self.transient_failures, int(item.get("transient_failures") or 0))
        self.last_failed_at = max(self.last_failed_at, str(item.get("last_failed_at") or ""))

    def retry_due(self, now: datetime) -> bool:
        settings = FailureSettings.get()
        last = clock.parse(self.last_failed_at) if self.last_failed_at else None
        first, cap = settings.transient_retry_first_seconds, settings.transient_retry_max_seconds
        return failures.retry_due(self.transient_failures, last, now, first, cap)


def _by_conversation(pending: list[dict[str, Any]]) -> dict[str, _Waiting]:
    waiting: dict[str, _Waiting] = defaultdict(_Waiting)
    for item in pending:
        waiting[item["conversation_id"]].add(item)
    return waiting


def redrive(conversation_id: str) -> dict[str, Any]:
    """Answer a conversation's set-aside messages after all (once their cause is fixed):
    they become pending again (MAX_PENDING_SECONDS counted from now) and a window opens
    for them at once."""
    requeued = staged_messages.requeue_set_aside(conversation_id, clock.iso(clock.now()))
    window_id = open_window_due_now(conversation_id) if requeued else None
    logger.info("Redriven", extra={"conversation_id": conversation_id, "requeued": requeued})
    return {"requeued": requeued, "window_id": window_id}


def open_window_due_now(conversation_id: str) -> str | None:
    """Open a window whose burst is over already (its messages have waited): the run
    goes straight to the answer. The new window's id, or None."""
    conversation = conversations.get(conversation_id)
    if conversation is None or conversation.forget_started_at:  # being forgotten: no run
        return None
    now_ms = clock.epoch_ms(clock.now())
    rules = rules_for_new_window(conversation, conversation.channel, now_ms)
    long_ago = now_ms - int(rules.max_wait_seconds * 1000) - 1000
    return open_batch_window(conversation_id, rules, opened_ms=long_ago, ensure_started=True)
