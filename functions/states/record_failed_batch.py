"""The failure path of a run, before its lock is released: set the batch aside or keep
it for a later window, and tell the user when the AI cannot answer."""

from __future__ import annotations

import json

from functions import clock
from functions.answer import turns
from functions.batching.rules import failures
from functions.batching.rules.failures import FailureKind
from functions.batching.settings import FailureSettings
from functions.contract import BatchRef, FailedInput, FailedOutput
from functions.delivery.fallback import send_fallback
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.storage.models import PendingKey


def record_failed_batch(task: FailedInput) -> FailedOutput:
    """What the error says about the batch (functions/batching/rules/failures.py) decides:
    a permanent error sets it aside at once (with the fallback reply, for the AI); a
    configuration error keeps it pending, nothing counted; a transient one (an outage)
    keeps it for the reconciler, which tries again with growing delays, and sets it aside
    only once it has been pending MAX_PENDING_SECONDS; any other failure counts an attempt,
    and sets it aside (dead-lettered) after MAX_BATCH_ATTEMPTS."""
    error = task.run.error
    error_name = error.error if error else "Unknown"
    cause = error_message(error.cause if error else "")
    message_sids = task.run.batch.message_sids if task.run.batch else []
    kind = failures.classify(error_name, cause)
    if kind is FailureKind.CONFIGURATION:
        kept = staged_messages.pending(task.conversation_id)
        logger.error("Batch kept: the configuration is at fault", extra={"error": error_name})
        return FailedOutput(outcome="kept", message_count=len(kept))
    if kind is FailureKind.PERMANENT and message_sids:
        if error_name == "AIPermanentError":
            send_fallback(task)
        _set_aside(task, message_sids, error_name, cause, outcome="failed")
        return FailedOutput(outcome="failed", message_count=len(message_sids))
    pending = staged_messages.pending(task.conversation_id)
    if kind is FailureKind.TRANSIENT:
        return _transient(task, pending, error_name, cause)
    sids = [key.message_sid for key in pending]
    attempts = staged_messages.count_failed_attempt(task.conversation_id, sids)
    logger.warning("Batch failed", extra={"error": error_name, "attempts": attempts, "pending": len(sids)})
    if sids and attempts >= FailureSettings.get().max_batch_attempts:
        return _dead_letter(task, sids, error_name, cause, reason="max_batch_attempts")
    return FailedOutput(outcome="kept", message_count=len(sids))


def _transient(task: FailedInput, pending: list[PendingKey], error_name: str, cause: str) -> FailedOutput:
    """An outage: the batch stays pending for the reconciler's next try (later after each
    failure in a row), unless its oldest message has waited MAX_PENDING_SECONDS."""
    settings, now = FailureSettings.get(), clock.now()
    sids = [key.message_sid for key in pending]
    if not sids:
        return FailedOutput(outcome="kept", message_count=0)
    since = clock.parse(min(key.pending_since() for key in pending))
    if failures.pending_too_long(since, now, settings.max_pending_seconds):
        return _dead_letter(task, sids, error_name, cause, reason="max_pending_seconds")
    in_a_row = staged_messages.count_transient_failure(task.conversation_id, sids, clock.iso(now))
    delay = failures.retry_delay_seconds(
        in_a_row, settings.transient_retry_first_seconds, settings.transient_retry_max_seconds
    )
    extra = {"error": error_name, "transient_failures": in_a_row, "retry_in_seconds": delay}
    extra["pending"] = len(sids)
    logger.warning("Batch failed for a transient reason: kept for the reconciler", extra=extra)
    return FailedOutput(outcome="kept", message_count=len(sids))


def _dead_letter(task: BatchRef, sids: list[str], error_name: str, cause: str, reason: str) -> FailedOutput:
    """Set the pending messages aside for good (alarmed: DeadLetteredBatches); `reason`
    says which limit it met."""
    _set_aside(task, sids, error_name, cause, outcome="dead_lettered", reason=reason)
    count("DeadLetteredBatches")
    return FailedOutput(outcome="dead_lettered", message_count=len(sids))


def _set_aside(
    ref: BatchRef, message_sids: list[str], error_name: str, cause: str, outcome: str, reason: str = ""
) -> None:
    staged_messages.set_aside(
        ref.conversation_id, message_sids, ref.window_id, f"{error_name}: {cause}"[:500]
    )
    turns.mark_failed(
        ref.conversation_id,
        ref.user_turn_id,
        {
            "role": "user",
            "status": outcome,
            "error": error_name,
            **({"dead_letter_reason": reason} if reason else {}),
            "cause": cause[:500],
            "message_sids": message_sids,
            "message_count": len(message_sids),
            "window_id": ref.window_id,
            "execution_name": ref.execution_name,
            "failed_at": clock.iso(clock.now()),
        },
    )
    logger.warning(
        "Batch set aside",
        extra={"outcome": outcome, "reason": reason, "error": error_name, "message_count": len(message_sids)},
    )


def error_message(cause: str | None) -> str:
    """A Lambda error's cause is JSON with errorMessage; other causes are plain text."""
    if not cause:
        return ""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    return str(parsed.get("errorMessage", cause)) if isinstance(parsed, dict) else cause
