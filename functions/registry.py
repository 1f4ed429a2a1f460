"""The functions of the service, defined once for the CDK stack and the local stack."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.answer.settings import AnswerSettings, MediaSettings, OpenAISettings
from functions.assistant.settings import AssistantSettings
from functions.batching.settings import BatchingSettings, FailureSettings, StateMachineSettings
from functions.config import SettingsModel
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
from functions.delivery.settings import DeliverySettings, EventSettings, TwilioSettings
from functions.guards.settings import GuardSettings
from functions.intake.settings import EndpointSettings, IntakeSettings, PublicUrlSettings
from functions.personal_data.settings import RetentionSettings
from functions.storage.settings import TableSettings
from functions.tenancy.settings import (
    ConversationIdSettings,
    OpenAIKeySettings,
    TenancySettings,
    ToolSecretSettings,
    TwilioSessionSettings,
)

Settings = tuple[type[SettingsModel], ...]


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
    # The settings models its code reads: the stack gives it their variables, and no other;
    # the tests fail a run where it read another (tests/conftest.py).
    settings: Settings = ()

    @property
    def variables(self) -> frozenset[str]:
        """The environment variables of its settings."""
        return frozenset().union(*(model.variables() for model in self.settings))

    def read_settings(self) -> None:
        """Read every model it declares (at cold start: a setting the stack left out, or one
        amiss, fails the function then, not at its first request)."""
        for model in self.settings:
            model.get()

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


def task_function(
    state: str,
    input_model: type,
    output_model: type,
    settings: Settings,
    timeout: int = 30,
    memory: int = 256,
) -> FunctionDefinition:
    """A task state's function, named after the state."""
    name = state.title().replace(" ", "")
    return FunctionDefinition(name, timeout, memory, state, input_model, output_model, settings=settings)


# What the functions that send for a conversation read: Twilio's API, its tenant's
# credentials (in a session tagged with the tenant), the status callbacks' URL.
SENDING: Settings = (
    TenancySettings,
    TwilioSessionSettings,
    TwilioSettings,
    DeliverySettings,
    PublicUrlSettings,
)

WEBHOOK = FunctionDefinition(
    "Webhook",
    timeout_seconds=15,
    routes=("/whatsapp", "/sms"),
    settings=(
        TableSettings,
        EndpointSettings,
        PublicUrlSettings,
        TenancySettings,
        IntakeSettings,
        ConversationIdSettings,
        GuardSettings,
        BatchingSettings,
        StateMachineSettings,
    ),
)
# Twilio's status callbacks for the messages we send: see
# functions/entry_points/status_callback.py. Its timeout is below Twilio's 15 s read
# timeout, so that Twilio's retry of a callback never meets the attempt it retries still running.
STATUS_CALLBACK = FunctionDefinition(
    "StatusCallback",
    timeout_seconds=12,
    routes=("/twilio/status/{conversation}/{window}/{message}",),
    settings=(TableSettings, EndpointSettings, *SENDING, FailureSettings),
)
# Run every minute by a schedule: see functions/entry_points/reconciler.py.
RECONCILER = FunctionDefinition(
    "Reconciler",
    timeout_seconds=120,
    settings=(
        TableSettings,
        BatchingSettings,
        StateMachineSettings,
        FailureSettings,
        *SENDING,
        OpenAIKeySettings,
        RetentionSettings,
    ),
)
# A helpdesk's commands, events on the bus: see functions/entry_points/conversation_commands.py.
# Its timeout holds a reply's send (a receipt waited for, parts paced) and OpenAI's time.
CONVERSATION_COMMANDS = FunctionDefinition(
    "ConversationCommands",
    timeout_seconds=90,
    detail_types=("conversation.pause", "conversation.resume", "conversation.reply"),
    settings=(TableSettings, GuardSettings, OpenAISettings, OpenAIKeySettings, *SENDING),
)

# One row per task state, in the order of a run: its name in the console, its input and
# output, and what its function may take.
TASKS = (
    task_function("Wait For The Burst To End", ParkInput, ParkOutput, (TableSettings,), timeout=10),
    task_function(
        "Acquire Processing Lock", AcquireInput, BurstStatus, (TableSettings, BatchingSettings), timeout=10
    ),
    task_function("Merge Staged Messages", MergeInput, BatchSummary, (TableSettings, BatchingSettings)),
    task_function(
        "Generate Reply",
        GenerateInput,
        ReplySummary,
        (
            TableSettings,
            AnswerSettings,
            OpenAISettings,
            MediaSettings,
            AssistantSettings,
            GuardSettings,
            OpenAIKeySettings,
            TenancySettings,
            TwilioSessionSettings,
            TwilioSettings,
        ),
        timeout=90,
        memory=512,
    ),
    # Each call within TOOL_TIMEOUT_SECONDS (at most 25): two of them, and the rest in the next attempt.
    task_function(
        "Call Tools",
        CallToolsInput,
        ToolsSummary,
        (TableSettings, AssistantSettings, TenancySettings, ToolSecretSettings),
        timeout=60,
    ),
    task_function("Send Reply", SendInput, SentSummary, (TableSettings, GuardSettings, *SENDING), timeout=60),
    task_function(
        "Record Turns And Release Lock",
        RecordInput,
        RecordOutput,
        (TableSettings, RetentionSettings, EventSettings),
    ),
    task_function(
        "Close Batch Window", CloseInput, CloseOutput, (TableSettings, BatchingSettings, StateMachineSettings)
    ),
    task_function(
        "Record Failed Batch", FailedInput, FailedOutput, (TableSettings, FailureSettings, *SENDING)
    ),
)

ENDPOINTS = (WEBHOOK, STATUS_CALLBACK)
ALL_FUNCTIONS = (*ENDPOINTS, RECONCILER, CONVERSATION_COMMANDS, *TASKS)
BY_NAME = {f.logical_id: f for f in ALL_FUNCTIONS}

BY_STATE = {f.state: f for f in TASKS}

# Every settings model, by feature: each is read by some function (tests/unit/design/test_settings.py).
ALL_SETTINGS: Settings = (
    TableSettings,
    EventSettings,
    StateMachineSettings,
    TenancySettings,
    TwilioSessionSettings,
    OpenAIKeySettings,
    ToolSecretSettings,
    ConversationIdSettings,
    IntakeSettings,
    PublicUrlSettings,
    EndpointSettings,
    BatchingSettings,
    FailureSettings,
    AnswerSettings,
    OpenAISettings,
    MediaSettings,
    AssistantSettings,
    GuardSettings,
    TwilioSettings,
    DeliverySettings,
    RetentionSettings,
)
