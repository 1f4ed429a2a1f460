"""The Turns table: a user turn and an assistant turn per answered batch, one item each,
so that a long conversation never meets DynamoDB's 400 KB item limit."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from functions.errors import TransactionConflict
from functions.storage import dynamo, expressions
from functions.storage.models import Delivery, Turn, without_none
from functions.storage.settings import TableSettings


def _table() -> Any:
    return dynamo.table(TableSettings.get().turns_table)


def put(turn: Turn) -> None:
    _table().put_item(Item=dynamo.to_dynamo(turn.to_item()))


def get(conversation_id: str, turn_id: str) -> Turn | None:
    item = (
        _table()
        .get_item(Key={"conversation_id": conversation_id, "turn_id": turn_id}, ConsistentRead=True)
        .get("Item")
    )
    return Turn.from_item(item) if item else None


def list_of(conversation_id: str) -> list[Turn]:
    items = dynamo.all_items(
        _table().query, KeyConditionExpression=Key("conversation_id").eq(conversation_id)
    )
    return [Turn.from_item(i) for i in items]


def last_reply(conversation_id: str) -> Turn | None:
    """The newest assistant turn that was sent (turn ids sort by window, oldest first)."""
    request: dict[str, Any] = {
        "KeyConditionExpression": Key("conversation_id").eq(conversation_id),
        "FilterExpression": Attr("role").eq("assistant") & Attr("status").eq("sent"),
        "ScanIndexForward": False,
        "Limit": 20,
    }
    while True:
        response = _table().query(**request)
        if response["Items"]:
            return Turn.from_item(response["Items"][0])
        if "LastEvaluatedKey" not in response:
            return None
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def recent(conversation_id: str, limit: int) -> list[Turn]:
    """The conversation's last `limit` turns, newest first (turn ids sort by window)."""
    items = _table().query(
        KeyConditionExpression=Key("conversation_id").eq(conversation_id), ScanIndexForward=False, Limit=limit
    )["Items"]
    return [Turn.from_item(i) for i in items]


def record_transcripts(conversation_id: str, turn_id: str, transcripts: dict[str, str]) -> None:
    """Keep the voice notes' transcripts with the user turn (a retry reuses them)."""
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.SET_TRANSCRIPTS,
        ConditionExpression=expressions.IS_A_TURN,
        ExpressionAttributeValues={":t": transcripts},
    )


def pin_profile(conversation_id: str, turn_id: str, key: str, version: int) -> Turn:
    """Pin the assistant profile version (key "" and 0: none) the batch is asked with, unless
    an earlier attempt pinned one; the user turn with the version it holds."""
    try:
        updated = _table().update_item(
            Key={"conversation_id": conversation_id, "turn_id": turn_id},
            UpdateExpression=expressions.PIN_PROFILE,
            ConditionExpression=expressions.PROFILE_NOT_PINNED,
            ExpressionAttributeValues={":key": key, ":version": version},
            ReturnValues="ALL_NEW",
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return require(conversation_id, turn_id)
        raise
    return Turn.from_item(updated["Attributes"])


def mark_failed(conversation_id: str, turn_id: str, fields: dict[str, Any]) -> None:
    """Record a batch as failed on its user turn, creating the turn if the run failed
    before merging."""
    values = {f":{k}": v for k, v in dynamo.to_dynamo(fields).items()}
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in fields),
        ExpressionAttributeNames={f"#{k}": k for k in fields},
        ExpressionAttributeValues=values,
    )


def append_sent_part(
    conversation_id: str, turn_id: str, part_index: int, message_sid: str, accepted_at: str
) -> None:
    """Record that reply part `part_index` was sent (Twilio accepted it at `accepted_at`),
    exactly once per part; the turn keeps when its first part was."""
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.APPEND_MESSAGE_SID,
        ConditionExpression=Attr("message_sids").size().eq(part_index)
        if part_index
        else Attr("turn_id").exists()
        & (Attr("message_sids").not_exists() | Attr("message_sids").size().eq(0)),
        ExpressionAttributeValues={":sid": [message_sid], ":empty": [], ":at": accepted_at},
    )


def record_delivery(conversation_id: str, turn_id: str, message_sid: str, delivery: Delivery) -> bool:
    """Keep what Twilio reported of a message of the turn, unless a status of the same or
    a later rank is kept already (a repeated or late callback). False when nothing
    changed (or there is no such turn)."""
    key = {"conversation_id": conversation_id, "turn_id": turn_id}
    value = without_none(delivery.model_dump(mode="json"))
    for _ in range(2):
        try:
            _table().update_item(
                Key=key,
                UpdateExpression=expressions.RECORD_DELIVERY,
                ConditionExpression=expressions.LATER_DELIVERY,
                ExpressionAttributeNames={"#sid": message_sid, "#rank": "rank"},
                ExpressionAttributeValues={":delivery": value, ":rank": delivery.rank},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return True
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
            old = dynamo.old_item(error)
            if not old or "deliveries" in old:
                return False  # no such turn, or a status as late is kept
        try:  # the turn's first delivery (a fallback reply's, on the user turn)
            _table().update_item(
                Key=key,
                UpdateExpression=expressions.FIRST_DELIVERY,
                ConditionExpression=expressions.NO_DELIVERIES_YET,
                ExpressionAttributeValues={":deliveries": {message_sid: value}},
            )
            return True
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
    return False


def claim_template(conversation_id: str, turn_id: str, owner: str, now: str) -> Turn:
    """Claim sending the turn's WhatsApp template for `owner`, unless someone claimed it
    before; the turn as it is then (its `template_owner` says who sends it)."""
    updated = _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.CLAIM_TEMPLATE,
        ConditionExpression=Attr("turn_id").exists(),
        ExpressionAttributeValues={":owner": owner, ":now": now},
        ReturnValues="ALL_NEW",
    )
    return Turn.from_item(updated["Attributes"])


def claim_typing(conversation_id: str, turn_id: str, field: str, now: str) -> bool:
    """Claim showing the user turn's typing indicator (`typing_shown_at`) or its refresh
    (`typing_refreshed_at`): True for the one caller that set it."""
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id, "turn_id": turn_id},
            UpdateExpression=expressions.CLAIM_TYPING,
            ConditionExpression=expressions.UNCLAIMED_TYPING,
            ExpressionAttributeNames={"#f": field},
            ExpressionAttributeValues={":now": now},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def record_template(conversation_id: str, turn_id: str, message_sid: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=expressions.RECORD_TEMPLATE,
        ExpressionAttributeValues={":sid": message_sid},
    )


def record_answered_batch(
    *,
    conversation_id: str,
    owner: str,
    user_turn_id: str,
    assistant_turn_id: str | None,
    answered_at: str,
    processing_time_ms: int,
    tokens: dict[str, int],
    last_message_sid: str | None,
    limited: bool = False,
    ended_by: str | None = None,
) -> bool:
    """In one transaction: mark the user turn answered (or handed off to a person, when
    there is no assistant turn, or limited, when a cost limit stopped the AI call) with
    why its burst ended, the assistant turn sent (or limited), update the conversation's
    totals (and when it last got a reply, if a message went out) and release the
    processing lock, on condition that this run still holds it. False if the lock is no
    longer ours. (The resource's client takes plain Python values.)"""
    handed_off = assistant_turn_id is None
    answered, sent = ("limited", "limited") if limited else ("answered", "sent")
    user_status = "handed_off" if handed_off else answered
    status = "awaiting_agent" if handed_off else ("limited" if limited else "reply_sent")
    ended = {":status": user_status, ":ended": ended_by}
    items = [_turn_update(conversation_id, user_turn_id, expressions.ANSWER_USER_TURN, ended, answered_at)]
    if assistant_turn_id is not None:
        values = {":sent": sent, ":ms": processing_time_ms}
        items.append(
            _turn_update(
                conversation_id, assistant_turn_id, expressions.SEND_ASSISTANT_TURN, values, answered_at
            )
        )
    turn_count = 1 if handed_off else 2
    items.append(
        _totals_update(conversation_id, owner, status, answered_at, tokens, last_message_sid, turn_count)
    )
    return _transact(items, conversation_id)


def _turn_update(
    conversation_id: str, turn_id: str, expression: str, values: dict[str, Any], at: str
) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": TableSettings.get().turns_table,
            "Key": {"conversation_id": conversation_id, "turn_id": turn_id},
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {**values, ":at": at},
        }
    }


def _totals_update(
    conversation_id: str,
    owner: str,
    status: str,
    at: str,
    tokens: dict[str, int],
    last_message_sid: str | None,
    turns: int,
) -> dict[str, Any]:
    """The conversation's totals and status, and the processing lock released, if `owner`
    still holds it."""
    return {
        "Update": {
            "TableName": TableSettings.get().conversations_table,
            "Key": {"conversation_id": conversation_id},
            "UpdateExpression": expressions.RECORD_REPLY_AND_RELEASE_LOCK
            if last_message_sid
            else expressions.RECORD_ANSWER_AND_RELEASE_LOCK,
            "ConditionExpression": expressions.HOLDS_LOCK,
            "ExpressionAttributeValues": {
                ":at": at,
                ":status": status,
                ":sid": last_message_sid or "",
                ":p": tokens.get("prompt_tokens", 0),
                ":c": tokens.get("completion_tokens", 0),
                ":t": tokens.get("total_tokens", 0),
                ":turns": turns,
                ":me": owner,
            },
        }
    }


def _transact(items: list[dict[str, Any]], conversation_id: str) -> bool:
    """Write `items` in one transaction; False if a condition failed (the lock is not
    ours), TransactionConflict if another write to one of them got in the way."""
    try:
        dynamo.client().transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = {r.get("Code") for r in error.response.get("CancellationReasons", [])}
        if "TransactionConflict" in reasons:  # another write to one of the items: try again
            raise TransactionConflict(f"recording the batch of {conversation_id} conflicted") from error
        return False
    return True


def require(conversation_id: str, turn_id: str) -> Turn:
    """A turn an earlier state of the run stored; an error if it is missing."""
    if (turn := get(conversation_id, turn_id)) is None:
        raise ValueError(f"turn {turn_id} of {conversation_id} is missing")
    return turn
