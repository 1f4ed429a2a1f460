"""The BatchWindows table: at most one open batch window per conversation. The
conditional put that creates it decides which webhook starts the run."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.config import get_settings
from functions.dal import dynamo, expressions
from functions.dal.models import BatchWindow


def _table() -> Any:
    return dynamo.table(get_settings().batch_windows_table)


def open(window: BatchWindow) -> BatchWindow | None:
    """Open the conversation's batch window unless one is open. None for the one winner;
    otherwise the window that is open."""
    try:
        _table().put_item(
            Item=dynamo.to_dynamo(window.to_item()),
            ConditionExpression=expressions.NO_OPEN_WINDOW,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return BatchWindow.model_validate(dynamo.old_item(error))
        raise
    return None


def record_arrival(conversation_id: str, now_ms: int, flush: bool) -> BatchWindow | None:
    """Count a new message in the open window (its time, the one before, how many, and
    a flush request); the window after the update, or None if no window is open."""
    values: dict[str, Any] = {":now": now_ms, ":one": 1}
    if flush:
        values[":flush"] = True
    return _update(
        conversation_id,
        expressions.A_WINDOW_IS_OPEN,
        UpdateExpression="SET previous_message_ms = last_message_ms, last_message_ms = :now"
        + (", flush_requested = :flush" if flush else "")
        + " ADD message_count :one",
        ExpressionAttributeValues=values,
    )


def park_task_token(conversation_id: str, window_id: str, task_token: str) -> BatchWindow | None:
    """Leave the waiting run's task token on its window, for a flush to wake it; the
    window after the update, or None if that window is closed."""
    return _update(
        conversation_id,
        expressions.IS_THIS_WINDOW,
        UpdateExpression="SET task_token = :token",
        ExpressionAttributeValues={":token": task_token, ":window": window_id},
    )


def _update(conversation_id: str, condition: str, **update: Any) -> BatchWindow | None:
    """A conditional update of the conversation's window: the window after it, or None
    when the condition does not hold."""
    try:
        item = _table().update_item(
            Key={"conversation_id": conversation_id},
            ConditionExpression=condition,
            ReturnValues="ALL_NEW",
            **update,
        )["Attributes"]
    except ClientError as error:
        if dynamo.condition_failed(error):
            return None
        raise
    return BatchWindow.model_validate(dynamo.from_dynamo(item))


def get(conversation_id: str) -> BatchWindow | None:
    item = _table().get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True).get("Item")
    return BatchWindow.model_validate(dynamo.from_dynamo(item)) if item else None


def scan() -> list[BatchWindow]:
    """The open windows (the table holds nothing else)."""
    return [BatchWindow.model_validate(dynamo.from_dynamo(i)) for i in dynamo.all_items(_table().scan)]


def close(conversation_id: str, window_id: str) -> bool:
    """Close the window if it is still this one. False if it was already closed."""
    try:
        _table().delete_item(
            Key={"conversation_id": conversation_id},
            ConditionExpression=expressions.IS_THIS_WINDOW,
            ExpressionAttributeValues={":window": window_id},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True
