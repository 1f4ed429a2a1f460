"""Entry points of the state machine's task states: parse the input, call the logic."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.logic import batch
from functions.logic.batch import BatchRef
from functions.logic.debounce import BatchingRules
from functions.observability import lambda_entry_point, logger


def _ref(event: dict[str, Any]) -> BatchRef:
    ref = BatchRef.model_validate(event)
    logger.append_keys(conversation_id=ref.conversation_id, execution_name=ref.execution_name)
    return ref


@lambda_entry_point
def acquire_processing_lock(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.acquire_processing_lock(_ref(event))


@lambda_entry_point
def merge_staged_messages(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.merge_staged_messages(_ref(event), event["staged_items"])


@lambda_entry_point
def generate_reply(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.generate_reply(_ref(event))


@lambda_entry_point
def send_reply(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.send_reply(_ref(event))


@lambda_entry_point
def record_turns(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    reply = event.get("reply")  # absent when the batch is handed off to a person
    tokens = (
        {k: int(reply[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens")} if reply else None
    )
    return batch.record_turns(
        _ref(event),
        event["lock"]["acquired_at"],
        event["batch"]["message_sids"],
        tokens,
        (event.get("sent") or {}).get("message_sids") or [],
    )


@lambda_entry_point
def close_batch_window(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.close_batch_window(_ref(event))


@lambda_entry_point
def open_next_window(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.open_next_window(_ref(event), _rules(event), event["window"])


@lambda_entry_point
def announce_answered_batch(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.announce_answered_batch(_ref(event))


@lambda_entry_point
def record_failed_batch(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = event.get("run") or {}
    message_sids = (run.get("batch") or {}).get("message_sids") or []
    return batch.record_failed_batch(_ref(event), run.get("error") or {}, message_sids)


@lambda_entry_point
def park_until_due(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.park_until_due(_ref(event), event["task_token"], _rules(event))


@lambda_entry_point
def check_batch_window(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return batch.check_batch_window(_ref(event), _rules(event))


def _rules(event: dict[str, Any]) -> BatchingRules:
    return BatchingRules.model_validate(event.get("rules") or {})
