"""All DynamoDB access of the service. Handlers and logic never build an expression."""

from __future__ import annotations

import hashlib
import time
from decimal import Decimal
from enum import StrEnum
from functools import cache
from typing import Any

import boto3
from boto3.dynamodb.conditions import Attr, Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from functions.config import get_settings
from functions.models import Channel, Conversation, InboundMessage, StagedMessage, address_key

_DESERIALIZER = TypeDeserializer()


@cache
def _dynamodb() -> Any:
    return boto3.resource("dynamodb")


def _table(name: str) -> Any:
    return _dynamodb().Table(name)


def _conditional_check_failed(error: ClientError) -> bool:
    return error.response["Error"]["Code"] == "ConditionalCheckFailedException"


def _all_items(operation: Any, **request: Any) -> list[dict[str, Any]]:
    """Every item of a paginated Query or Scan."""
    items: list[dict[str, Any]] = []
    while True:
        response = operation(**request)
        items += response["Items"]
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def _old_item(error: ClientError) -> dict[str, Any]:
    """The item that failed a condition (ReturnValuesOnConditionCheckFailure=ALL_OLD);
    error responses are not deserialized by the resource layer, so do it here."""
    raw = error.response.get("Item") or {}
    return _from_dynamo({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()})


# --- conversations -------------------------------------------------------------------


def find_conversation(channel: Channel, user_address: str, our_address: str) -> Conversation | None:
    """The open conversation (task not complete) between this user and our number."""
    table = _table(get_settings().conversations_table)
    response = table.query(
        IndexName="by_address",
        KeyConditionExpression=Key("address_key").eq(address_key(channel, user_address, our_address)),
        ScanIndexForward=False,
        Limit=10,
    )
    for item in response["Items"]:
        if not item.get("task_complete"):
            return Conversation.model_validate(item)
    return None


def create_conversation(channel: Channel, user_address: str, our_address: str, now: str) -> Conversation:
    """Create the conversation of an unknown sender. Its id derives from the addresses, so
    two webhooks racing to create it agree on one record."""
    key = address_key(channel, user_address, our_address)
    conversation_id = "c" + hashlib.sha256(key.encode()).hexdigest()[:24]
    item = {
        "conversation_id": conversation_id,
        "address_key": key,
        "channel": channel.value,
        "user_address": user_address,
        "our_address": our_address,
        "created_at": now,
        "updated_at": now,
        "task_complete": False,
        "conversation_status": "open",
    }
    table = _table(get_settings().conversations_table)
    try:
        table.put_item(Item=item, ConditionExpression=Attr("conversation_id").not_exists())
    except ClientError as error:
        if not _conditional_check_failed(error):
            raise
        existing = get_conversation(conversation_id)
        if existing is not None:
            return existing
    return Conversation.model_validate(item)


def update_conversation(conversation_id: str, **fields: Any) -> None:
    """Set fields of a conversation record (an admin's change: rules, tenant secrets...);
    a None value removes the field."""
    to_set = {k: v for k, v in fields.items() if v is not None}
    to_remove = [k for k, v in fields.items() if v is None]
    expression = ""
    if to_set:
        expression += "SET " + ", ".join(f"#{k} = :{k}" for k in to_set)
    if to_remove:
        expression += " REMOVE " + ", ".join(f"#{k}" for k in to_remove)
    _table(get_settings().conversations_table).update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=expression.strip(),
        ConditionExpression=Attr("conversation_id").exists(),
        ExpressionAttributeNames={f"#{k}": k for k in fields},
        **(
            {"ExpressionAttributeValues": {f":{k}": _to_dynamo(v) for k, v in to_set.items()}}
            if to_set
            else {}
        ),
    )


def get_conversation(conversation_id: str) -> Conversation | None:
    item = (
        _table(get_settings().conversations_table)
        .get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True)
        .get("Item")
    )
    return Conversation.model_validate(item) if item else None


def set_openai_conversation(conversation_id: str, openai_conversation_id: str) -> None:
    _table(get_settings().conversations_table).update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression="SET openai_conversation_id = :o",
        ExpressionAttributeValues={":o": openai_conversation_id},
    )


def record_delivery_failure(conversation_id: str, code: int | None, at: str) -> None:
    """Remember on the conversation that a reply could not be delivered (and why)."""
    _table(get_settings().conversations_table).update_item(
        Key={"conversation_id": conversation_id},
        UpdateExpression=(
            "SET last_delivery_error = :code, last_delivery_error_at = :at ADD delivery_failures :one"
        ),
        ExpressionAttributeValues={":code": code if code is not None else 0, ":at": at, ":one": 1},
    )


# --- processing lock -----------------------------------------------------------------


def acquire_lock(conversation_id: str, owner: str, now_epoch: int, lease_seconds: int, now: str) -> bool:
    """Take the conversation's processing lock for `owner` (an execution name), if it is
    free, already ours, or its lease has expired. False when someone else holds it."""
    try:
        _table(get_settings().conversations_table).update_item(
            Key={"conversation_id": conversation_id},
            UpdateExpression="SET lock_owner = :me, lock_expires_at = :exp, lock_acquired_at = :now",
            ConditionExpression=Attr("conversation_id").exists()
            & (
                Attr("lock_owner").not_exists()
                | Attr("lock_owner").eq(owner)
                | Attr("lock_expires_at").lt(now_epoch)
            ),
            ExpressionAttributeValues={
                ":me": owner,
                ":exp": now_epoch + lease_seconds,
                ":now": now,
            },
        )
    except ClientError as error:
        if _conditional_check_failed(error):
            return False
        raise
    return True


# --- staged messages -----------------------------------------------------------------


class Staging(StrEnum):
    STAGED = "staged"
    DUPLICATE_PENDING = "duplicate_pending"  # staged before, not answered yet
    DUPLICATE_DONE = "duplicate_done"  # staged before and answered (or set aside)


def stage_message(conversation_id: str, message: InboundMessage, received_at: str) -> Staging:
    """Stage an accepted message, unless its MessageSid was staged before (a Twilio
    retry): nothing changes then, and the answer says whether it is still pending."""
    item: dict[str, Any] = {
        "conversation_id": conversation_id,
        "message_sid": message.message_sid,
        "received_at": received_at,
        "pending_since": received_at,
        "body": message.body,
        "from_address": message.from_address,
    }
    if message.media_urls:
        item["media_urls"] = list(message.media_urls)
    if message.profile_name:
        item["profile_name"] = message.profile_name
    try:
        _table(get_settings().staged_messages_table).put_item(
            Item=item,
            ConditionExpression=Attr("message_sid").not_exists(),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not _conditional_check_failed(error):
            raise
        existing = _old_item(error)
        return Staging.DUPLICATE_PENDING if "pending_since" in existing else Staging.DUPLICATE_DONE
    return Staging.STAGED


def load_staged_messages(conversation_id: str, message_sids: list[str]) -> list[StagedMessage]:
    """The staged messages with these SIDs (bodies included), in no particular order."""
    name = get_settings().staged_messages_table
    found: list[StagedMessage] = []
    for start in range(0, len(message_sids), 100):
        keys: list[dict[str, Any]] = [
            {"conversation_id": conversation_id, "message_sid": sid}
            for sid in message_sids[start : start + 100]
        ]
        request: dict[str, Any] = {name: {"Keys": keys, "ConsistentRead": True}}
        while request:
            response = _dynamodb().batch_get_item(RequestItems=request)
            found += [StagedMessage.model_validate(i) for i in response["Responses"].get(name, [])]
            request = response.get("UnprocessedKeys") or {}
    return found


def pending_messages(conversation_id: str) -> list[dict[str, Any]]:
    """Keys and arrival times of the staged messages not yet answered."""
    return _all_items(
        _table(get_settings().staged_messages_table).query,
        KeyConditionExpression=Key("conversation_id").eq(conversation_id),
        FilterExpression=Attr("answered_in").not_exists() & Attr("failed_in").not_exists(),
        ProjectionExpression="message_sid, received_at, attempts",
        ConsistentRead=True,
    )


def count_failed_attempt(conversation_id: str, message_sids: list[str]) -> int:
    """Add one failed attempt to each pending message; the highest count among them."""
    table = _table(get_settings().staged_messages_table)
    highest = 0
    for sid in message_sids:
        try:
            item = table.update_item(
                Key={"conversation_id": conversation_id, "message_sid": sid},
                UpdateExpression="ADD attempts :one",
                ConditionExpression=Attr("pending_since").exists(),
                ExpressionAttributeValues={":one": 1},
                ReturnValues="UPDATED_NEW",
            )["Attributes"]
        except ClientError as error:
            if _conditional_check_failed(error):
                continue  # answered or failed meanwhile
            raise
        highest = max(highest, int(item["attempts"]))
    return highest


def mark_messages_failed(conversation_id: str, message_sids: list[str], window_id: str, reason: str) -> None:
    """Set messages aside: kept with their bodies, no longer pending, not retried."""
    table = _table(get_settings().staged_messages_table)
    for sid in message_sids:
        try:
            table.update_item(
                Key={"conversation_id": conversation_id, "message_sid": sid},
                UpdateExpression="SET failed_in = :w, failure = :r REMOVE pending_since",
                ConditionExpression=Attr("pending_since").exists(),
                ExpressionAttributeValues={":w": window_id, ":r": reason},
            )
        except ClientError as error:
            if not _conditional_check_failed(error):
                raise


def requeue_set_aside_messages(conversation_id: str) -> int:
    """Make the conversation's set-aside (failed) messages pending again, with their
    attempts reset: the operator's redrive. How many were requeued."""
    table = _table(get_settings().staged_messages_table)
    set_aside = _all_items(
        table.query,
        KeyConditionExpression=Key("conversation_id").eq(conversation_id),
        FilterExpression=Attr("failed_in").exists(),
        ProjectionExpression="message_sid, received_at",
        ConsistentRead=True,
    )
    for item in set_aside:
        table.update_item(
            Key={"conversation_id": conversation_id, "message_sid": item["message_sid"]},
            UpdateExpression="SET pending_since = :since REMOVE failed_in, failure, attempts",
            ExpressionAttributeValues={":since": item["received_at"]},
        )
    return len(set_aside)


def scan_pending_messages() -> list[dict[str, Any]]:
    """Every pending message of every conversation (keys and pending_since), from the
    sparse `pending` index: its size is the backlog, not the history."""
    return _all_items(_table(get_settings().staged_messages_table).scan, IndexName="pending")


def mark_messages_answered(
    conversation_id: str, message_sids: list[str], window_id: str, expires_at: int
) -> None:
    """Replace answered messages by bodiless tombstones (idempotent)."""
    with _table(get_settings().staged_messages_table).batch_writer() as batch:
        for sid in message_sids:
            batch.put_item(
                Item={
                    "conversation_id": conversation_id,
                    "message_sid": sid,
                    "answered_in": window_id,
                    "expires_at": expires_at,
                }
            )


# --- batch windows -------------------------------------------------------------------


def open_window(window: dict[str, Any]) -> dict[str, Any] | None:
    """Open the conversation's batch window (a window item) unless one is open. None for
    the one winner; otherwise the window that is open."""
    try:
        _table(get_settings().batch_windows_table).put_item(
            Item=_to_dynamo(window),
            ConditionExpression=Attr("conversation_id").not_exists(),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if _conditional_check_failed(error):
            return _old_item(error)
        raise
    return None


def record_arrival(conversation_id: str, now_ms: int, flush: bool) -> dict[str, Any] | None:
    """Count a new message in the open window (its time, the one before, how many, and
    a flush request); the window after the update, or None if no window is open."""
    values: dict[str, Any] = {":now": now_ms, ":one": 1}
    if flush:
        values[":flush"] = True
    return _update_window(
        conversation_id,
        Attr("conversation_id").exists(),
        UpdateExpression="SET previous_message_ms = last_message_ms, last_message_ms = :now"
        + (", flush_requested = :flush" if flush else "")
        + " ADD message_count :one",
        ExpressionAttributeValues=values,
    )


def park_task_token(conversation_id: str, window_id: str, task_token: str) -> dict[str, Any] | None:
    """Leave the waiting run's task token on its window, for a flush to wake it; the
    window after the update, or None if that window is closed."""
    return _update_window(
        conversation_id,
        Attr("window_id").eq(window_id),
        UpdateExpression="SET task_token = :token",
        ExpressionAttributeValues={":token": task_token},
    )


def _update_window(conversation_id: str, condition: Any, **update: Any) -> dict[str, Any] | None:
    """A conditional update of the conversation's window: the window after it, or None
    when the condition does not hold."""
    try:
        item = _table(get_settings().batch_windows_table).update_item(
            Key={"conversation_id": conversation_id},
            ConditionExpression=condition,
            ReturnValues="ALL_NEW",
            **update,
        )["Attributes"]
    except ClientError as error:
        if _conditional_check_failed(error):
            return None
        raise
    return _from_dynamo(item)  # type: ignore[no-any-return]


_projects: dict[str, tuple[float, dict[str, Any] | None]] = {}
_PROJECT_CACHE_SECONDS = 60


def project_batching_rules(project_id: str) -> dict[str, Any] | None:
    """A project's batching rules (cached for a minute: read on every message)."""
    cached = _projects.get(project_id)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    item = _table(get_settings().projects_table).get_item(Key={"project_id": project_id}).get("Item") or {}
    rules = _from_dynamo(item.get("batching")) if item.get("batching") else None
    _projects[project_id] = (time.monotonic() + _PROJECT_CACHE_SECONDS, rules)
    return rules


def put_project(item: dict[str, Any]) -> None:
    _table(get_settings().projects_table).put_item(Item=_to_dynamo(item))
    _projects.pop(item["project_id"], None)


def get_window(conversation_id: str) -> dict[str, Any] | None:
    item = (
        _table(get_settings().batch_windows_table)
        .get_item(Key={"conversation_id": conversation_id}, ConsistentRead=True)
        .get("Item")
    )
    return _from_dynamo(item) if item else None


def scan_windows() -> list[dict[str, Any]]:
    """The open windows (the table holds nothing else)."""
    return [_from_dynamo(i) for i in _all_items(_table(get_settings().batch_windows_table).scan)]


def close_window(conversation_id: str, window_id: str) -> bool:
    """Close the window if it is still this one. False if it was already closed."""
    try:
        _table(get_settings().batch_windows_table).delete_item(
            Key={"conversation_id": conversation_id},
            ConditionExpression=Attr("window_id").eq(window_id),
        )
    except ClientError as error:
        if _conditional_check_failed(error):
            return False
        raise
    return True


# --- turns ---------------------------------------------------------------------------


def put_turn(item: dict[str, Any]) -> None:
    _table(get_settings().turns_table).put_item(Item=_to_dynamo(item))


def get_turn(conversation_id: str, turn_id: str) -> dict[str, Any] | None:
    item = (
        _table(get_settings().turns_table)
        .get_item(Key={"conversation_id": conversation_id, "turn_id": turn_id}, ConsistentRead=True)
        .get("Item")
    )
    return _from_dynamo(item) if item else None


def list_turns(conversation_id: str) -> list[dict[str, Any]]:
    table = _table(get_settings().turns_table)
    response = table.query(KeyConditionExpression=Key("conversation_id").eq(conversation_id))
    return [_from_dynamo(i) for i in response["Items"]]


def mark_turn_failed(conversation_id: str, turn_id: str, fields: dict[str, Any]) -> None:
    """Record a batch as failed on its user turn, creating the turn if the run failed
    before merging."""
    values = {f":{k}": v for k, v in _to_dynamo(fields).items()}
    assignments = ", ".join(f"#{k} = :{k}" for k in fields)
    _table(get_settings().turns_table).update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression=f"SET {assignments}",
        ExpressionAttributeNames={f"#{k}": k for k in fields},
        ExpressionAttributeValues=values,
    )


def append_sent_part(conversation_id: str, turn_id: str, part_index: int, message_sid: str) -> None:
    """Record that reply part `part_index` was sent, exactly once per part."""
    _table(get_settings().turns_table).update_item(
        Key={"conversation_id": conversation_id, "turn_id": turn_id},
        UpdateExpression="SET message_sids = list_append(if_not_exists(message_sids, :empty), :sid)",
        ConditionExpression=Attr("message_sids").not_exists() & Attr("turn_id").exists()
        if part_index == 0
        else Attr("message_sids").size().eq(part_index),
        ExpressionAttributeValues={":sid": [message_sid], ":empty": []},
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
) -> bool:
    """In one transaction: mark the user turn answered (or handed off to a person, when
    there is no assistant turn), the assistant turn sent, update the conversation's totals
    and release the processing lock, on condition that this run still holds it. False if
    the lock is no longer ours."""
    settings = get_settings()
    turn_key = {"conversation_id": conversation_id}
    handed_off = assistant_turn_id is None
    user_turn: dict[str, Any] = {
        "TableName": settings.turns_table,
        "Key": {**turn_key, "turn_id": user_turn_id},
        "UpdateExpression": "SET #s = :status, answered_at = :at",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {
            ":status": "handed_off" if handed_off else "answered",
            ":at": answered_at,
        },
    }
    conversation: dict[str, Any] = {
        "TableName": settings.conversations_table,
        "Key": {"conversation_id": conversation_id},
        "UpdateExpression": (
            "SET updated_at = :at, conversation_status = :status, last_assistant_message_sid = :sid "
            "ADD prompt_tokens :p, completion_tokens :c, total_tokens :t, turn_count :turns "
            "REMOVE lock_owner, lock_expires_at, lock_acquired_at"
        ),
        "ConditionExpression": "lock_owner = :me",
        "ExpressionAttributeValues": {
            ":at": answered_at,
            ":status": "awaiting_agent" if handed_off else "reply_sent",
            ":sid": last_message_sid or "",
            ":p": tokens.get("prompt_tokens", 0),
            ":c": tokens.get("completion_tokens", 0),
            ":t": tokens.get("total_tokens", 0),
            ":turns": 1 if handed_off else 2,
            ":me": owner,
        },
    }
    items: list[dict[str, Any]] = [{"Update": user_turn}, {"Update": conversation}]
    if assistant_turn_id is not None:
        assistant_turn = {
            "TableName": settings.turns_table,
            "Key": {**turn_key, "turn_id": assistant_turn_id},
            "UpdateExpression": "SET #s = :sent, sent_at = :at, processing_time_ms = :ms",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":sent": "sent", ":at": answered_at, ":ms": processing_time_ms},
        }
        items.insert(1, {"Update": assistant_turn})
    try:
        _dynamodb().meta.client.transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] == "TransactionCanceledException":
            return False
        raise
    return True


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value
