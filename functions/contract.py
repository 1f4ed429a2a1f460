"""The run contract: what each task state of statemachines/batch_window.asl.json passes
to its function (`...Input`) and what the state keeps of its result (`...Output`).

Handlers receive these models (functions/handlers/task_handler.py) and return them; the contract test
(tests/unit/design/test_contract.py) walks the ASL and checks every Payload key, every
ResultSelector and every `.$` path against them, so a dropped or misspelled field fails
a test instead of a run."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from functions.batching.rules.burst import BatchingRules, BurstEnd
from functions.storage.tables import assistant_turn_id, user_turn_id


class Contract(BaseModel):
    """A task's input or output, read strictly: a key the model does not know is an error,
    and so is a value of another JSON type (the string "3" is not the number 3). An error
    names the field, never its value (the run's history keeps the error's cause)."""

    model_config = ConfigDict(strict=True, extra="forbid", hide_input_in_errors=True, defer_build=True)


class Lenient(BaseModel):
    """What a Catch hands over, read leniently: any of its keys may be missing, and the
    ones the failure path does not use are ignored."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True, defer_build=True)


class BatchRef(Contract):
    """The run's identity, in every task's input."""

    conversation_id: str
    window_id: str
    execution_name: str

    @property
    def user_turn_id(self) -> str:
        return user_turn_id(self.window_id)

    @property
    def assistant_turn_id(self) -> str:
        return assistant_turn_id(self.window_id)


# --- the run's own input ------------------------------------------------------------------


class BurstStatus(Contract):
    """Is the burst over (and the lock taken)? If not, how long to wait for it, in whole
    seconds. Written by whoever opened the window, then by Acquire Processing Lock."""

    over: bool
    wait_seconds: int
    lock_acquired_at: str | None = None
    # Why the burst ended (debounce.burst_end_reason), once it is over; None before, or
    # when the window was found closed.
    ended_by: BurstEnd | None = None


class RunInput(Contract):
    """StartExecution's input, written by whoever opened the window."""

    conversation_id: str
    window_id: str
    rules: BatchingRules
    burst: BurstStatus
    batch_limit: int  # at most this many messages per batch (Query Staged Messages' Limit)
    # Replies discarded so far for newer fragments (`on_newer: merge`); "Answer Again With
    # Newer Fragments", the Catch of Generate Reply's NewerFragments, adds one.
    regenerations: int = 0


# --- Wait For The Burst To End, Acquire Processing Lock ------------------------------------


class ParkInput(BatchRef):
    task_token: str
    entered_at: str  # when this wait began: a later parking never yields to an earlier one
    rules: BatchingRules


class ParkOutput(Contract):
    parked: bool


class AcquireInput(BatchRef):
    rules: BatchingRules


# --- Merge Staged Messages ------------------------------------------------------------------


class MergeInput(BatchRef):
    staged_items: list[dict[str, Any]]  # keys from the Query state, in DynamoDB JSON


class BatchSummary(Contract):
    message_count: int
    message_sids: list[str]
    # The batch's first and last fragment's arrival (epoch ms; None when it is empty).
    first_received_ms: int | None = None
    last_received_ms: int | None = None


# --- Generate Reply, Send Reply -------------------------------------------------------------


class GenerateInput(BatchRef):
    batch: BatchSummary
    rules: BatchingRules
    # Defaults for a run that a deploy found already past Merge (its input lacks them).
    regenerations: int = 0  # replies of this batch discarded so far for newer fragments
    batch_limit: int = 50  # MAX_BATCH_SIZE's default


class ReplySummary(Contract):
    # nobody: an earlier run answered it all; limited: a cost limit stopped the AI call. A
    # reply discarded for newer fragments is no summary: Generate Reply fails with
    # NewerFragments (functions/errors.py), and the run answers again. person: never in a
    # run; a person's reply that a helpdesk sent, through Send Reply's code
    # (functions/handoff/person_reply.py).
    answered_by: Literal["ai", "human", "nobody", "limited", "person"]
    reply_chars: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    regenerations: int = 0  # replies of this batch discarded for newer fragments, so far


class CallToolsInput(BatchRef):
    batch: BatchSummary


class ToolsSummary(Contract):
    """Call Tools' round: the calls the response asked for, those made now (the others were
    made by an earlier attempt, or refused), and those whose outcome is in doubt or that got
    no answer. Counts only: the arguments and answers stay in DynamoDB."""

    calls: int
    made: int
    in_doubt: int
    failed: int


class SendInput(BatchRef):
    reply: ReplySummary


class SentSummary(Contract):
    message_sids: list[str]
    parts: int


# --- Record Turns And Release Lock, Close Batch Window --------------------------------------


class RecordInput(BatchRef):
    lock_acquired_at: str
    ended_by: BurstEnd | None = None  # why the burst ended (BurstStatus; None in a run from before)
    batch: BatchSummary
    reply: ReplySummary
    sent: SentSummary


class RecordOutput(Contract):
    processing_time_ms: int
    announced: bool


class CloseInput(BatchRef):
    rules: BatchingRules
    batch: BatchSummary


class CloseOutput(Contract):
    leftover_count: int  # messages staged while the batch was processed
    next_window_id: str | None  # the window opened for them (None: none, or opened by another)


# --- Record Failed Batch --------------------------------------------------------------------


class ErrorInfo(Lenient):
    """A Catch's error output (`Error`, `Cause`): the error name and its cause (built in
    code by the field names too)."""

    model_config = ConfigDict(**Lenient.model_config, populate_by_name=True)

    error: str = Field("Unknown", alias="Error")
    cause: str | None = Field("", alias="Cause")


class MergedOrQueried(Lenient):
    """`$.batch` as the failure path finds it: the merged batch's summary, or the Query
    state's keys (no SIDs merged yet), or nothing."""

    message_sids: list[str] = []


class FailedRun(Lenient):
    """The state of the run when a Catch sent it to the failure path (any of its
    fields may be missing, depending on where it failed)."""

    error: ErrorInfo | None = None
    batch: MergedOrQueried | None = None


class FailedInput(BatchRef):
    run: FailedRun


class FailedOutput(Contract):
    outcome: str  # failed, dead_lettered or kept
    message_count: int
