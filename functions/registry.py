"""The functions of the service, defined once for the CDK stack and the local stack."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.contract import (
    AcquireInput,
    BatchSummary,
    BurstStatus,
    CallToolsInput,
    CloseInput,
    CloseOutput,
    FailedInput,
    FailedOutput,
    GenerateInput,
    MergeInput,
    ParkInput,
    ParkOutput,
    RecordInput,
    RecordOutput,
    ReplySummary,
    SendInput,
    SentSummary,
    ToolsSummary,
)


@dataclass(frozen=True)
class FunctionDefinition:
    """One Lambda function, named by one rule: a task state's name ("Generate Reply") is
    its function's logical id (GenerateReply, also its name locally), its handler module
    (functions/handlers/generate_reply.py) and its logic module and function
    (functions/states/generate_reply.py, `generate_reply`); an entry point's logical
    id (StatusCallback) names its handler and logic modules the same way
    (functions/entry_points/status_callback.py). tests/unit/design/test_names.py keeps it so."""

    logical_id: str  # CDK construct id, also the function name locally
    timeout_seconds: int = 30
    memory_mb: int = 256
    state: str | None = None  # the task state it serves, as named in the console
    input_model: type | None = None  # a task's input and output (functions/contract.py)
    output_model: type | None = None
    routes: tuple[str, ...] = ()  # the API resources it answers (POST), if an endpoint
    # The detail types of the events on the service's bus that a rule delivers to it.
    detail_types: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The name of its handler and logic modules: generate_reply, status_callback."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.logical_id).lower()

    @property
    def handler(self) -> str:
        return f"functions.handlers.{self.module}.handler"

    @property
    def placeholder(self) -> str | None:
        """${Placeholder} for its ARN in the state machine, if a task."""
        return f"{self.logical_id}FunctionArn" if self.state else None

    @property
    def states(self) -> tuple[str, ...]:
        return (self.state,) if self.state else ()

    def load(self) -> Callable[[dict[str, Any], Any], Any]:
        return importlib.import_module(self.handler.rpartition(".")[0]).handler  # type: ignore[no-any-return]


def task(
    state: str, input_model: type, output_model: type, timeout: int = 30, memory: int = 256
) -> FunctionDefinition:
    """A task state's function, named after the state."""
    return FunctionDefinition(
        state.title().replace(" ", ""), timeout, memory, state, input_model, output_model
    )


WEBHOOK = FunctionDefinition("Webhook", timeout_seconds=15, routes=("/whatsapp", "/sms"))
# Twilio's status callbacks for the messages we send: see
# functions/entry_points/status_callback.py. Its timeout is below Twilio's 15 s read
# timeout, so that Twilio's retry of a callback never meets the attempt it retries still running.
STATUS_CALLBACK = FunctionDefinition(
    "StatusCallback", timeout_seconds=12, routes=("/twilio/status/{conversation}/{window}/{message}",)
)
# Run every minute by a schedule: see functions/entry_points/reconciler.py.
RECONCILER = FunctionDefinition("Reconciler", timeout_seconds=120)
# A helpdesk's commands, events on the bus: see functions/entry_points/conversation_commands.py.
# Its timeout holds a reply's send (a receipt waited for, parts paced) and OpenAI's time.
CONVERSATION_COMMANDS = FunctionDefinition(
    "ConversationCommands",
    timeout_seconds=90,
    detail_types=("conversation.pause", "conversation.resume", "conversation.reply"),
)

# One row per task state, in the order of a run: its name in the console, its input and
# output, and what its function may take.
TASKS = (
    task("Wait For The Burst To End", ParkInput, ParkOutput, timeout=10),
    task("Acquire Processing Lock", AcquireInput, BurstStatus, timeout=10),
    task("Merge Staged Messages", MergeInput, BatchSummary),
    task("Generate Reply", GenerateInput, ReplySummary, timeout=90, memory=512),
    # Each call within TOOL_TIMEOUT_SECONDS (at most 25): two of them, and the rest in the next attempt.
    task("Call Tools", CallToolsInput, ToolsSummary, timeout=60),
    task("Send Reply", SendInput, SentSummary, timeout=60),
    task("Record Turns And Release Lock", RecordInput, RecordOutput),
    task("Close Batch Window", CloseInput, CloseOutput),
    task("Record Failed Batch", FailedInput, FailedOutput),
)

ENDPOINTS = (WEBHOOK, STATUS_CALLBACK)
ALL_FUNCTIONS = (*ENDPOINTS, RECONCILER, CONVERSATION_COMMANDS, *TASKS)
BY_NAME = {f.logical_id: f for f in ALL_FUNCTIONS}

BY_STATE = {f.state: f for f in TASKS}
