"""The failure path of a run, before its lock is released: set the batch aside or keep
it for a later window, and tell the user when the AI cannot answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from functions import clock
from functions.answer import turns
from functions.batching.rules import failures
from functions.batching.rules.failures import FailureKind
from functions.config import get_settings
from functions.contract import BatchRef, FailedInput, FailedOutput
from functions.delivery.callback_urls import FALLBACK, status_callback_url
from functions.delivery.send_once import Claim, receipt_of, send_once
from functions.errors import TwilioRetryableError
from functions.intake import staged_messages
from functions.observability import count, logger
from functions.storage.models import Conversation, PendingKey, Turn
from functions.tenancy import conversations, secrets

if TYPE_CHECKING:
    from twilio.rest import Client


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
            _send_fallback(task)
        _set_aside(task, message_sids, error_name, cause, outcome="failed")
        return FailedOutput(outcome="failed", message_count=len(message_sids))
    pending = staged_messages.pending(task.conversation_id)
    if kind is FailureKind.TRANSIENT:
        return _transient(task, pending, error_name, cause)
    sids = [key.message_sid for key in pending]
    attempts = staged_messages.count_failed_attempt(task.conversation_id, sids)
    logger.warning("Batch failed", extra={"error": error_name, "attempts": attempts, "pending": len(sids)})
    if sids and attempts >= get_settings().max_batch_attempts:
        return _dead_letter(task, sids, error_name, cause, reason="max_batch_attempts")
    return FailedOutput(outcome="kept", message_count=len(sids))


def _transient(task: FailedInput, pending: list[PendingKey], error_name: str, cause: str) -> FailedOutput:
    """An outage: the batch stays pending for the reconciler's next try (later after each
    failure in a row), unless its oldest message has waited MAX_PENDING_SECONDS."""
    settings, now = get_settings(), clock.now()
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


def _send_fallback(ref: BatchRef) -> None:
    """Tell the user we cannot answer, once (send_once.py): the first attempt records when
    it began (`fallback_since`), a later one looks for the fallback an earlier one may
    have sent (a late answer, a crash: its status callback, Twilio's list, a bounded wait)
    before sending it, and its SID is
    kept on the user turn. A transient Twilio error is raised, so that the state retries,
    and so is a failure to record the SID of a fallback sent (the retry finds it); any
    other failure is logged (the batch is recorded either way)."""
    text = get_settings().fallback_reply
    if not text:
        return
    turn = turns.get(ref.conversation_id, ref.user_turn_id)
    if turn is not None and turn.fallback_message_sid:
        return
    # Twilio's REST client is loaded here, where it is used: most failed batches are kept
    # for a later window and send nothing, and the function's cold start skips the SDK.
    from functions.delivery import twilio_messages

    sent: list[str] = []
    try:
        conversation = conversations.require(ref.conversation_id)
        client = twilio_messages.client_for(secrets.twilio_credentials_in_tenant_session(conversation))
        send_once(_Fallback(ref, turn, text, conversation, client, sent))
    except TwilioRetryableError:
        raise
    except Exception:
        if sent:  # found or sent, and not recorded
            raise
        logger.exception("Fallback reply not sent")
        return
    count("FallbackReplies")


@dataclass(frozen=True)
class _Fallback:
    """The fallback reply of a batch set aside, for send_once: when the first attempt to
    send it began (`fallback_since`) and its SID are kept on the user turn. (Twilio's
    integration is imported where it is used: see _send_fallback.)"""

    ref: BatchRef
    turn: Turn | None  # as it was before this attempt
    text: str
    conversation: Conversation
    client: Client
    sent: list[str]  # its SID, once found or sent

    def claim(self, now: str) -> Claim:
        if self.turn is not None and self.turn.fallback_since:
            return Claim(earlier_since=clock.parse(self.turn.fallback_since))
        turns.mark_failed(self.ref.conversation_id, self.ref.user_turn_id, {"fallback_since": now})
        return Claim()

    def reported(self) -> str | None:
        """Its status callback names it (`fallback`): recorded on the user turn."""
        turn = turns.get(self.ref.conversation_id, self.ref.user_turn_id)
        deliveries = turn.deliveries if turn else {}
        return receipt_of(deliveries, FALLBACK)

    def refused(self) -> None:
        """Nothing kept: a retry waits for a receipt first (a fallback is rarely retried)."""

    def find(self, since: datetime) -> str | None:
        from functions.delivery import twilio_messages

        our, user = self.conversation.our_address, self.conversation.user_address
        return twilio_messages.find_sent(self.client, our, user, self.text, since)

    def send(self) -> str:
        from functions.delivery import twilio_messages

        ref, our, user = self.ref, self.conversation.our_address, self.conversation.user_address
        callback = status_callback_url(ref.conversation_id, ref.window_id, FALLBACK)
        return twilio_messages.send_message(self.client, our, user, self.text, status_callback=callback)

    def record(self, sid: str) -> None:
        self.sent.append(sid)
        turns.mark_failed(self.ref.conversation_id, self.ref.user_turn_id, {"fallback_message_sid": sid})


def error_message(cause: str | None) -> str:
    """A Lambda error's cause is JSON with errorMessage; other causes are plain text."""
    if not cause:
        return ""
    try:
        parsed = json.loads(cause)
    except ValueError:
        return cause
    return str(parsed.get("errorMessage", cause)) if isinstance(parsed, dict) else cause
