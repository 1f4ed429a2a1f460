"""The batching rules a run carries in its input (`rules`), and why a burst ended: the
data of the run contract (functions/contract.py), read by the pure rules that decide
when a burst is over (functions/batching/rules/debounce.py). Plain data, no I/O,
as every module of a feature's rules/ (tests/unit/design/test_rules_are_pure.py)."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from functions.setting_values import BatchMode

# No wait longer than this, whatever a conversation or project asks: each wait that new
# fragments extend adds about 15 events to the run's history, which AWS caps at 25,000,
# and a wait lasts at least a second.
MAX_WAIT_LIMIT_SECONDS = 600
# Each answer discarded for newer fragments costs an AI call and four state transitions.
MAX_REGENERATIONS_LIMIT = 5

Positive = Annotated[float, Field(gt=0)]


class BatchingRules(BaseModel):
    """A run carries its rules in its input, where they are read strictly like the rest of
    the run contract (functions/contract.py); `parse` reads a record's or a setting's.
    Keys that are not rules are ignored: a conversation's rules must never stop its messages."""

    model_config = ConfigDict(
        strict=True, frozen=True, extra="ignore", hide_input_in_errors=True, defer_build=True
    )

    mode: BatchMode = "fixed"
    # First, so that the waits below are clamped to it (a field validator sees the fields
    # before its own).
    max_wait_seconds: Positive = 60
    window_seconds: Positive = 10
    quiet_seconds: Positive = 3
    typing_gap_seconds: Annotated[float, Field(ge=0)] = 2
    typing_quiet_seconds: Positive = 6
    quiet_min_seconds: Positive = 2.5
    quiet_max_seconds: Positive = 20
    max_messages: Annotated[int, Field(ge=0)] = 0  # 0: no limit
    # A JSON array: strict as JSON is (a list is a tuple), not as Python is.
    flush_keywords: Annotated[tuple[str, ...], Field(strict=False)] = ()
    answer: Literal["ai", "human"] = "ai"
    # Typed words that hand the conversation off to a person, and what it is told then
    # (functions/handoff/rules/pause.py).
    handoff_keywords: Annotated[tuple[str, ...], Field(strict=False)] = ()
    handoff_reply: str = ""
    on_newer: Literal["merge", "next"] = "merge"
    max_regenerations: Annotated[int, Field(ge=0)] = 2

    @field_validator("max_wait_seconds")
    @classmethod
    def _at_most_the_limit(cls, longest: float) -> float:
        """Clamped, not refused: a conversation's rules must never stop its messages."""
        return min(longest, MAX_WAIT_LIMIT_SECONDS)

    @field_validator("max_regenerations")
    @classmethod
    def _at_most_the_regeneration_limit(cls, times: int) -> int:
        return min(times, MAX_REGENERATIONS_LIMIT)

    @field_validator(
        "window_seconds", "quiet_seconds", "typing_quiet_seconds", "quiet_min_seconds", "quiet_max_seconds"
    )
    @classmethod
    def _at_most_the_longest_wait(cls, wait: float, info: ValidationInfo) -> float:
        return min(wait, info.data.get("max_wait_seconds", MAX_WAIT_LIMIT_SECONDS))

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> "BatchingRules":
        """Rules from a record's or the settings' values, leniently (numbers may be strings
        there)."""
        return cls.model_validate(values, strict=False)


# Why a burst ended (Acquire Processing Lock decides it; Record Turns And Release Lock
# counts it, metric BurstEnd by reason).
BurstEnd = Literal["fixed", "quiet", "cap", "flush", "max_messages"]
BURST_END_REASONS: tuple[BurstEnd, ...] = get_args(BurstEnd)
