"""A person's reply as the Turns table keeps it: an assistant turn `written_by: person`,
written once per helpdesk event (a redelivery finds it), marked sent once its parts are out,
and its assistant message in the OpenAI conversation: when the first attempt to add it
began (`item_since`) and its item id once added (`item_ids`)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.storage import dynamo, expressions
from functions.storage.models import Turn, from_dynamo
from functions.storage.settings import TableSettings


def _table() -> Any:
    return dynamo.table(TableSettings.get().turns_table)


def put_once(turn: Turn) -> Turn:
    """Write the turn unless it is written already; the turn as the table holds it."""
    try:
        _table().put_item(
            Item=dynamo.to_dynamo(turn.to_item()),
            ConditionExpression=expressions.NEW_TURN,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not dynamo.condition_failed(error):
            raise
        return Turn.from_item(dynamo.old_item(error))
    return turn


def record_sent(conversation_id: str, turn_id: str, sent_at: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.PERSON_REPLY_SENT,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":sent": "sent", ":at": sent_at},
    )


def claim_item(conversation_id: str, turn_id: str, now: str) -> tuple[list[str], str]:
    """Record that an attempt to add the reply's OpenAI item began at `now`, unless one
    did before: the item ids recorded, and when the first attempt began."""
    updated = _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.CLAIM_ITEM,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeValues={":now": now},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    return list(from_dynamo(updated.get("item_ids") or [])), str(updated["item_since"])


def record_item(conversation_id: str, turn_id: str, item_id: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.RECORD_ITEM,
        ExpressionAttributeValues={":ids": [item_id]},
    )
