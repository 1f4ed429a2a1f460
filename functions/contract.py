"""The run contract: what each task state of statemachines/batch_window.asl.json passes
to its function (`...Input`) and what the state keeps of its result (`...Output`).

Handlers receive these models (Powertools parser) and return them; the contract test
(tests/unit/test_contract.py) walks the ASL and checks every Payload key, every
ResultSelector and every `.$` path against them, so a dropped or misspelled field fails
a test instead of a run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from functions.logic.debounce import BatchingRules


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BatchRef(Contract):
    """The run's identity, in every task's input."""

    conversation_id: str
    window_id: str
    execution_name: str

    @property
    def user_turn_id(self) -> str:
        return f"{self.window_id}#1-user"

    @property
    def assistant_turn_id(self) -> str:
        return f"{self.window_id}#2-assistant"


# --- the run's own input ------------------------------------------------------------------


class WaitStatus(Contract):
    """Is the burst over, and if not, how long to wait for it (whole seconds)."""

    ready: bool
    wait_seconds: int


class RunInput(Contract):
    """StartExecution's input, written by whoever opened the window."""

    conversation_id: str
    window_id: str
    rules: BatchingRules
    wait: WaitStatus


# --- Wait For The Burst To End, Check Batch Window ---------------------------------------


class ParkInput(BatchRef):
    task_token: str
    rules: BatchingRules


class ParkOutput(Contract):
    parked: bool


class CheckInput(BatchRef):
    rules: BatchingRules


# --- Acquire Processing Lock ----------------------------------------------------------------


class LockOutput(Contract):
    acquired_at: str


# --- Merge Staged Messages ------------------------------------------------------------------


class MergeInput(BatchRef):
    staged_items: list[dict[str, Any]]  # keys from the Query state, in DynamoDB JSON


class BatchSummary(Contract):
    message_count: int
    message_sids: list[str]


# --- Generate Reply, Send Reply -------------------------------------------------------------


class ReplySummary(Contract):
    reply_chars: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class SentSummary(Contract):
    message_sids: list[str]
    parts: int


# --- Record Turns And Release Lock, Record Turn For A Person -----------------------------


class RecordInput(BatchRef):
    lock: LockOutput
    batch: BatchSummary
    reply: ReplySummary | None = None  # absent when the batch is handed off to a person
    sent: SentSummary | None = None


class RecordOutput(Contract):
    processing_time_ms: int


class AnnounceOutput(Contract):
    published: bool


# --- Close Batch Window, Open Next Window ---------------------------------------------------


class Leftovers(Contract):
    """Messages staged while the batch was processed."""

    leftover_count: int
    oldest_leftover_at: str | None
    newest_leftover_at: str | None


class OpenNextInput(BatchRef):
    window: Leftovers
    rules: BatchingRules


class OpenNextOutput(Contract):
    window_id: str | None


# --- Record Failed Batch --------------------------------------------------------------------


class ErrorInfo(BaseModel):
    """A Catch's error output: the error name and its cause."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    error: str = Field("Unknown", alias="Error")
    cause: str | None = Field("", alias="Cause")


class MergedOrQueried(BaseModel):
    """`$.batch` as the failure path finds it: the merged batch's summary, or the Query
    state's keys (no SIDs merged yet), or nothing."""

    model_config = ConfigDict(extra="ignore")

    message_sids: list[str] = []


class FailedRun(BaseModel):
    """The state of the run when a Catch sent it to the failure path (any of its
    fields may be missing, depending on where it failed)."""

    model_config = ConfigDict(extra="ignore")

    error: ErrorInfo | None = None
    batch: MergedOrQueried | None = None


class FailedInput(BatchRef):
    run: FailedRun


class FailedOutput(Contract):
    outcome: str  # failed, dead_lettered or kept
    message_count: int
