"""The batching rules every conversation starts from, what becomes of a batch whose runs
fail, and the state machine the runs are of (docs/how-it-works.md#batching-rules-when-is-a-burst-over,
docs/failures.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from functions.config import BatchMode, SettingsModel


def _words(written: str) -> tuple[str, ...]:
    return tuple(word.strip() for word in written.split(",") if word.strip())


class BatchingSettings(SettingsModel):
    """The global batching rules (functions/batching/rules/debounce.py): a project's or a
    conversation's own rules override them."""

    docs = "how-it-works.md#batching-rules-when-is-a-burst-over"

    batch_mode: BatchMode = Field(
        "fixed", description="How a burst's end is found: fixed, quiet or adaptive."
    )
    batch_window_seconds: int = Field(10, ge=1, le=3600, description="W, the fixed batch window.")
    quiet_seconds: float = Field(
        3, gt=0, description="Quiet mode: the burst ends after this long without a fragment."
    )
    typing_gap_seconds: float = Field(
        2, ge=0, description="Quiet mode: fragments this close together are a person typing in a row."
    )
    typing_quiet_seconds: float = Field(
        6, gt=0, description="Quiet mode: the quiet wait while a person types in a row."
    )
    quiet_min_seconds: float = Field(
        2.5,
        gt=0,
        description="Adaptive mode: the shortest quiet period it learns (not above QUIET_MAX_SECONDS).",
    )
    quiet_max_seconds: float = Field(
        20, gt=0, description="Adaptive mode: the longest quiet period it learns."
    )
    # At most 600: the wait task's timeout (functions/batching/rules/burst.py MAX_WAIT_LIMIT_SECONDS).
    max_wait_seconds: float = Field(
        60, gt=0, le=600, description="The cap on any wait after a burst's first fragment."
    )
    max_batch_messages: int = Field(
        0, ge=0, description="Answer at once when this many fragments are in (0: no limit)."
    )
    on_newer: Literal["merge", "next"] = Field(
        "merge",
        description="A fragment that arrives while the reply is written: `merge` answers it in that reply, "
        "`next` in the next window.",
    )
    max_regenerations: int = Field(
        2, ge=0, le=5, description="How many replies of one batch `merge` may discard."
    )
    split_seconds: float = Field(
        30,
        ge=0,
        description="A burst begun this soon after the last reply counts as split (SplitBursts; 0: none).",
    )
    max_batch_size: int = Field(
        50, ge=1, le=100, description="A batch's cap in messages; the rest go to the next batch, in order."
    )
    max_batch_bytes: int = Field(
        64_000,
        ge=12_000,
        le=300_000,
        description="A batch's cap in body bytes (the merged turn is one DynamoDB item).",
    )
    flush_keywords: str = Field("", description="Comma-separated words that answer at once.")
    handoff_keywords: str = Field(
        "", description="Comma-separated words that, typed, hand the conversation to a person."
    )
    handoff_reply: str = Field(
        "A person will answer you here soon.",
        description="Sent once to the batch whose keyword handed the conversation off (empty: none).",
    )
    lock_lease_seconds: int = Field(
        600, ge=30, description="The processing lock's lease; an expired lock can be taken over."
    )

    def batching_defaults(self) -> dict[str, Any]:
        """The rules as functions/batching/rules/burst.py's BatchingRules reads them."""
        return {
            "mode": self.batch_mode,
            "window_seconds": self.batch_window_seconds,
            "quiet_seconds": self.quiet_seconds,
            "typing_gap_seconds": self.typing_gap_seconds,
            "typing_quiet_seconds": self.typing_quiet_seconds,
            "quiet_min_seconds": self.quiet_min_seconds,
            "quiet_max_seconds": self.quiet_max_seconds,
            "max_wait_seconds": self.max_wait_seconds,
            "max_messages": self.max_batch_messages,
            "on_newer": self.on_newer,
            "max_regenerations": self.max_regenerations,
            "flush_keywords": _words(self.flush_keywords),
            "handoff_keywords": _words(self.handoff_keywords),
            "handoff_reply": self.handoff_reply,
        }


class FailureSettings(SettingsModel):
    """What becomes of a batch whose runs fail (functions/batching/rules/failures.py): tried
    again by the reconciler, set aside, answered with the fallback reply (docs/failures.md)."""

    docs = "failures.md#settings-in-detail"

    max_batch_attempts: int = Field(
        3, ge=1, description="Failed runs (not an outage) after which a batch is dead-lettered."
    )
    max_pending_seconds: int = Field(
        6 * 3600,
        ge=1,
        le=24 * 3600,
        description="A batch failing for a transient reason is dead-lettered once pending this long.",
    )
    transient_retry_first_seconds: int = Field(
        60, ge=1, description="The reconciler's first wait before trying a transiently failed batch again."
    )
    transient_retry_max_seconds: int = Field(
        1800, ge=1, description="The longest such wait (each one twice the last)."
    )
    reconcile_after_seconds: int = Field(
        120, ge=10, description="The reconciler acts on messages pending, and windows open, longer than this."
    )
    fallback_reply: str = Field(
        "Sorry, I can't answer right now. Please try again later.",
        description="Sent when the AI fails for good (empty: nothing is sent).",
    )


class StateMachineSettings(SettingsModel):
    """The state machine, for the functions that start or inspect its runs."""

    docs = "how-it-works.md#settings-in-detail"

    state_machine_arn: str = Field("", description="The state machine's ARN.")
