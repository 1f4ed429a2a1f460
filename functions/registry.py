"""The functions of the service, defined once for the CDK stack and the local stack."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.dal import expressions
from functions.dal.tables import ALL_TABLES, PENDING_INDEX


@dataclass(frozen=True)
class FunctionDefinition:
    """One Lambda function. From a state's name in the console to its code: find the
    state in `states`, then open `handler` (functions/handlers/<phase>.py), whose one line
    names the logic function that does the work."""

    logical_id: str  # CDK construct id, also the function name locally
    handler: str  # "module.path.function"
    placeholder: str | None = None  # ${Placeholder} for its ARN in the state machine, if a task
    states: tuple[str, ...] = ()  # the task states it serves
    timeout_seconds: int = 30
    memory_mb: int = 256
    routes: tuple[str, ...] = ()  # the API resources it answers (POST), if an endpoint

    def load(self) -> Callable[[dict[str, Any], Any], Any]:
        module_name, _, attribute = self.handler.rpartition(".")
        return getattr(importlib.import_module(module_name), attribute)  # type: ignore[no-any-return]


def _task(
    logical_id: str, handler: str, *states: str, timeout: int = 30, memory: int = 256
) -> FunctionDefinition:
    return FunctionDefinition(
        logical_id, f"functions.handlers.{handler}", f"{logical_id}FunctionArn", states, timeout, memory
    )


WEBHOOK = FunctionDefinition(
    "Webhook", "functions.handlers.webhook.handler", timeout_seconds=15, routes=("/whatsapp", "/sms")
)
# Twilio's status callbacks for the messages we send: see functions/logic/delivery.py. Its
# timeout is below Twilio's 15 s read timeout, so that Twilio's retry of a callback never
# meets the attempt it retries still running.
STATUS_CALLBACK = FunctionDefinition(
    "StatusCallback",
    "functions.handlers.status.handler",
    timeout_seconds=12,
    routes=("/twilio/status/{conversation}/{window}/{message}",),
)
# Run every minute by a schedule: see functions/logic/reconcile.py.
RECONCILER = FunctionDefinition("Reconciler", "functions.handlers.reconciler.handler", timeout_seconds=120)

# One row per task function: the states it serves (as named in the console) and its
# entry point, whose one line names the logic function that does the work.
TASKS = (
    _task("ParkUntilDue", "waiting.park_until_due", "Wait For The Burst To End", timeout=10),
    _task("AcquireProcessingLock", "waiting.acquire_processing_lock", "Acquire Processing Lock", timeout=10),
    _task("MergeStagedMessages", "merging.merge_staged_messages", "Merge Staged Messages"),
    _task("GenerateReply", "generating.generate_reply", "Generate Reply", timeout=90, memory=512),
    _task("SendReply", "sending.send_reply", "Send Reply", timeout=60),
    _task("RecordTurns", "recording.record_turns", "Record Turns And Release Lock"),
    _task("CloseBatchWindow", "recording.close_batch_window", "Close Batch Window"),
    _task("RecordFailedBatch", "failure.record_failed_batch", "Record Failed Batch"),
)

ENDPOINTS = (WEBHOOK, STATUS_CALLBACK)
ALL_FUNCTIONS = (*ENDPOINTS, RECONCILER, *TASKS)
BY_NAME = {f.logical_id: f for f in ALL_FUNCTIONS}


def definition_substitutions(table_names: dict[str, str], function_arns: dict[str, str]) -> dict[str, str]:
    """The `${Placeholder}` map of the state machine: table names and task function ARNs,
    keyed by logical id, and the DynamoDB expressions of its direct integrations. CDK
    passes the same map as `definition_substitutions`."""
    values = {t.placeholder: table_names[t.logical_id] for t in ALL_TABLES}
    values.update(expressions.SUBSTITUTIONS)
    values["PendingIndexName"] = PENDING_INDEX
    values.update({f.placeholder: function_arns[f.logical_id] for f in TASKS if f.placeholder})
    return values
