"""The functions of the service, defined once for the CDK stack and the local stack."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.dal import expressions
from functions.dal.tables import ALL_TABLES


@dataclass(frozen=True)
class FunctionDefinition:
    """One Lambda function. From a state's name in the console to its code: find the
    state in `states`, then open `handler` (functions/handlers/tasks.py), whose one line
    names the logic function that does the work."""

    logical_id: str  # CDK construct id, also the function name locally
    handler: str  # "module.path.function"
    placeholder: str | None = None  # ${Placeholder} for its ARN in the state machine, if a task
    states: tuple[str, ...] = ()  # the task states it serves
    timeout_seconds: int = 30
    memory_mb: int = 256

    def load(self) -> Callable[[dict[str, Any], Any], Any]:
        module_name, _, attribute = self.handler.rpartition(".")
        return getattr(importlib.import_module(module_name), attribute)  # type: ignore[no-any-return]


def _task(
    logical_id: str, handler: str, *states: str, timeout: int = 30, memory: int = 256
) -> FunctionDefinition:
    return FunctionDefinition(
        logical_id, f"functions.handlers.tasks.{handler}", f"{logical_id}FunctionArn", states, timeout, memory
    )


WEBHOOK = FunctionDefinition("Webhook", "functions.handlers.webhook.handler", timeout_seconds=15)
# Run every minute by a schedule: see functions/logic/reconcile.py.
RECONCILER = FunctionDefinition("Reconciler", "functions.handlers.reconciler.handler", timeout_seconds=120)

TASKS = (
    _task("ParkUntilDue", "park_until_due", "Wait For The Burst To End", timeout=10),
    _task("CheckBatchWindow", "check_batch_window", "Check Batch Window", timeout=10),
    _task("AcquireProcessingLock", "acquire_processing_lock", "Acquire Processing Lock", timeout=10),
    _task("MergeStagedMessages", "merge_staged_messages", "Merge Staged Messages"),
    _task("GenerateReply", "generate_reply", "Generate Reply", timeout=60, memory=512),
    _task("SendReply", "send_reply", "Send Reply", timeout=60),
    _task("RecordTurns", "record_turns", "Record Turns And Release Lock", "Record Turn For A Person"),
    _task("AnnounceAnsweredBatch", "announce_answered_batch", "Announce Answered Batch", timeout=15),
    _task("CloseBatchWindow", "close_batch_window", "Close Batch Window"),
    _task("RecordFailedBatch", "record_failed_batch", "Record Failed Batch"),
    _task("OpenNextWindow", "open_next_window", "Open Next Window"),
)

ALL_FUNCTIONS = (WEBHOOK, RECONCILER, *TASKS)
BY_NAME = {f.logical_id: f for f in ALL_FUNCTIONS}


def definition_substitutions(table_names: dict[str, str], function_arns: dict[str, str]) -> dict[str, str]:
    """The `${Placeholder}` map of the state machine: table names and task function ARNs,
    keyed by logical id, and the DynamoDB expressions of its direct integrations. CDK
    passes the same map as `definition_substitutions`."""
    values = {t.placeholder: table_names[t.logical_id] for t in ALL_TABLES}
    values.update(expressions.SUBSTITUTIONS)
    values.update({f.placeholder: function_arns[f.logical_id] for f in TASKS if f.placeholder})
    return values
