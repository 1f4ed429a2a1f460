"""The functions of the service, defined once for the CDK stack and the local stack."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.dal.tables import ALL_TABLES


@dataclass(frozen=True)
class FunctionDefinition:
    logical_id: str  # CDK construct id, also the function name locally
    handler: str  # "module.path.function"
    placeholder: str | None  # ${Placeholder} for its ARN in the state machine, if a task
    timeout_seconds: int = 30
    memory_mb: int = 256

    def load(self) -> Callable[[dict[str, Any], Any], Any]:
        module_name, _, attribute = self.handler.rpartition(".")
        return getattr(importlib.import_module(module_name), attribute)  # type: ignore[no-any-return]


WEBHOOK = FunctionDefinition("Webhook", "functions.handlers.webhook.handler", None, 15)
# Run every minute by a schedule: see functions/logic/reconcile.py.
RECONCILER = FunctionDefinition("Reconciler", "functions.handlers.reconciler.handler", None, 120)

TASKS = (
    FunctionDefinition(
        "ParkUntilDue",
        "functions.handlers.tasks.park_until_due",
        "ParkUntilDueFunctionArn",
        10,
    ),
    FunctionDefinition(
        "CheckBatchWindow",
        "functions.handlers.tasks.check_batch_window",
        "CheckBatchWindowFunctionArn",
        10,
    ),
    FunctionDefinition(
        "AcquireProcessingLock",
        "functions.handlers.tasks.acquire_processing_lock",
        "AcquireProcessingLockFunctionArn",
        10,
    ),
    FunctionDefinition(
        "MergeStagedMessages",
        "functions.handlers.tasks.merge_staged_messages",
        "MergeStagedMessagesFunctionArn",
        30,
    ),
    FunctionDefinition(
        "GenerateReply",
        "functions.handlers.tasks.generate_reply",
        "GenerateReplyFunctionArn",
        60,
        512,
    ),
    FunctionDefinition("SendReply", "functions.handlers.tasks.send_reply", "SendReplyFunctionArn", 60),
    FunctionDefinition(
        "RecordTurns",
        "functions.handlers.tasks.record_turns",
        "RecordTurnsFunctionArn",
        30,
    ),
    FunctionDefinition(
        "AnnounceAnsweredBatch",
        "functions.handlers.tasks.announce_answered_batch",
        "AnnounceAnsweredBatchFunctionArn",
        15,
    ),
    FunctionDefinition(
        "CloseBatchWindow",
        "functions.handlers.tasks.close_batch_window",
        "CloseBatchWindowFunctionArn",
        30,
    ),
    FunctionDefinition(
        "RecordFailedBatch",
        "functions.handlers.tasks.record_failed_batch",
        "RecordFailedBatchFunctionArn",
        30,
    ),
    FunctionDefinition(
        "OpenNextWindow",
        "functions.handlers.tasks.open_next_window",
        "OpenNextWindowFunctionArn",
        30,
    ),
)

ALL_FUNCTIONS = (WEBHOOK, RECONCILER, *TASKS)
BY_NAME = {f.logical_id: f for f in ALL_FUNCTIONS}


def definition_substitutions(table_names: dict[str, str], function_arns: dict[str, str]) -> dict[str, str]:
    """The `${Placeholder}` map of the state machine: table names and task function ARNs,
    keyed by logical id. CDK passes the same map as `definition_substitutions`."""
    values = {t.placeholder: table_names[t.logical_id] for t in ALL_TABLES}
    values.update({f.placeholder: function_arns[f.logical_id] for f in TASKS if f.placeholder})
    return values
