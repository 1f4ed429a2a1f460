"""The BatchWindows table: at most one open batch window per conversation. The
conditional put that creates it decides which webhook starts the run."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.delivery.due_resends import DueResend, is_due_resend
from functions.storage import dynamo, expressions
from functions.storage.models import BatchWindow
from functions.storage.settings import TableSettings


def _table() -> Any:
    return dynamo.table(TableSettings.get().batch_windows_table)


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
            return BatchWindow.from_item(dynamo.old_item(error))
        raise
    return None


def count_message(candidate: BatchWindow, now_ms: int, flush: bool) -> BatchWindow:
    """Count a new message in the conversation's window (its time, the one before, how
    many, and a flush request), opening `candidate` if none is open: one UpdateItem. The
    window after the update: `candidate` itself if this call opened it."""
    item = dynamo.to_dynamo(candidate.to_item())
    opening = {k: v for k, v in item.items() if k in _SET_ON_OPEN}
    item = _table().update_item(
        Key={"conversation_id": candidate.conversation_id},
        UpdateExpression=expressions.COUNT_MESSAGE.format(
            open=", ".join(f"{k} = if_not_exists({k}, :{k})" for k in opening),
            flush=":flush" if flush else "if_not_exists(flush_requested, :flush)",
        ),
        ExpressionAttributeValues={
            **{f":{k}": v for k, v in opening.items()},
            ":now": now_ms,
            ":none": 0,
            ":one": 1,
            ":flush": flush,
        },
        ReturnValues="ALL_NEW",
    )["Attributes"]
    return BatchWindow.from_item(item)


# What a message that opens the window sets; a later one leaves them as they are.
_SET_ON_OPEN = ("window_id", "opened_at", "opened_ms", "execution_name", "execution_input", "expires_at")


def park_task_token(
    conversation_id: str, window_id: str, task_token: str, entered_ms: int
) -> BatchWindow | None:
    """Leave the waiting run's task token on its window, for a flush to wake it, unless a
    later wait of the run parked its own already (on AWS a wait's timeout runs while its
    Lambda starts, so a parking can arrive late). The window after the update, or None if
    that window is closed or holds a newer token."""
    return _update(
        conversation_id,
        expressions.PARK_IF_NEWER,
        UpdateExpression=expressions.PARK_TOKEN,
        ExpressionAttributeValues={":token": task_token, ":window": window_id, ":entered": entered_ms},
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
    return BatchWindow.from_item(item)


def get(conversation_id: str) -> BatchWindow | None:
    item = _table().get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True).get("Item")
    return BatchWindow.from_item(item) if item else None


def scan() -> list[BatchWindow]:
    """The open windows."""
    return scan_with_resends()[0]


def scan_with_resends() -> tuple[list[BatchWindow], list[DueResend]]:
    """The open windows and the reply parts due for a resend later: the table holds
    nothing else (functions/delivery/due_resends.py), one Scan reads both."""
    items = dynamo.all_items(_table().scan)
    windows = [BatchWindow.from_item(i) for i in items if not is_due_resend(i)]
    return windows, [DueResend.from_item(i) for i in items if is_due_resend(i)]


def close(conversation_id: str, window_id: str) -> BatchWindow | None:
    """Close the window if it is still this one: the window as it was when closed, or
    None if it was already closed."""
    try:
        old = _table().delete_item(
            Key={"conversation_id": conversation_id},
            ConditionExpression=expressions.IS_THIS_WINDOW,
            ExpressionAttributeValues={":window": window_id},
            ReturnValues="ALL_OLD",
        )["Attributes"]
    except ClientError as error:
        if dynamo.condition_failed(error):
            return None
        raise
    return BatchWindow.from_item(old)
