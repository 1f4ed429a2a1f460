"""The StagedMessages table: every accepted message until its batch is answered, then a
bodiless tombstone (with a TTL) so that a replayed MessageSid stays a duplicate."""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from typing import Any

from botocore.exceptions import ClientError

from functions.intake.inbound import InboundMessage, MessageContent
from functions.storage import dynamo, expressions
from functions.storage.models import AIRequest, PendingKey, StagedMessage
from functions.storage.settings import TableSettings
from functions.storage.tables import PENDING_INDEX


@cache
def _blank() -> dict[str, Any]:
    """A message's fields at their defaults (not stored). Built at first use, not at import."""
    return MessageContent().model_dump(mode="json")


def _name() -> str:
    return TableSettings.get().staged_messages_table


def _table() -> Any:
    return dynamo.table(_name())


class Staging(StrEnum):
    STAGED = "staged"
    DUPLICATE_PENDING = "duplicate_pending"  # staged before, not answered yet
    DUPLICATE_DONE = "duplicate_done"  # staged before and answered (or set aside)


def stage(conversation_id: str, message: InboundMessage, received_at: str) -> Staging:
    """Stage an accepted message, unless its MessageSid was staged before (a Twilio
    retry): nothing changes then, and the answer says whether it is still pending."""
    content = {k: v for k, v in message.content().model_dump(mode="json").items() if v != _blank()[k]}
    item: dict[str, Any] = {
        **content,
        "conversation_id": conversation_id,
        "message_sid": message.message_sid,
        "received_at": received_at,
        "pending_since": received_at,
        "body": message.body,
        "from_address": message.from_address,
    }
    if message.profile_name:
        item["profile_name"] = message.profile_name
    try:
        _table().put_item(
            Item=item,
            ConditionExpression=expressions.NEW_MESSAGE_SID,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not dynamo.condition_failed(error):
            raise
        existing = dynamo.old_item(error)
        return Staging.DUPLICATE_PENDING if "pending_since" in existing else Staging.DUPLICATE_DONE
    return Staging.STAGED


def claim_answer(tenant_account_sid: str, sender: str, now_ms: int, interval_seconds: int) -> bool:
    """Whether a configured answer may go to this sender now: none went to it within
    `interval_seconds` (then this one is recorded, in one conditional put). The record is
    an item of this table under a key of its own (`answer#<tenant>#<sender>`, never a
    conversation id), without `pending_since` (outside the pending index), removed by the
    table's TTL after the interval."""
    try:
        _table().put_item(
            Item={
                "conversation_id": f"answer#{tenant_account_sid}#{sender}",
                "message_sid": "answer",
                "answered_ms": now_ms,
                "expires_at": now_ms // 1000 + interval_seconds,
            },
            ConditionExpression=expressions.ANSWER_DUE,
            ExpressionAttributeValues={":since": now_ms - interval_seconds * 1000},
        )
    except ClientError as error:
        if not dynamo.condition_failed(error):
            raise
        return False
    return True


def staged_in(conversation_ids: list[str], message_sid: str) -> bool:
    """Whether this MessageSid was staged in one of these conversations (its item, or its
    tombstone, is there): the duplicate ledger of a person's forgotten conversations."""
    name = _name()
    for start in range(0, len(conversation_ids), 100):
        keys = [
            {"conversation_id": c, "message_sid": message_sid} for c in conversation_ids[start : start + 100]
        ]
        request: dict[str, Any] = {name: {"Keys": keys, "ProjectionExpression": expressions.MESSAGE_SID}}
        while request:
            response = dynamo.resource().batch_get_item(RequestItems=request)
            if response["Responses"].get(name):
                return True
            request = response.get("UnprocessedKeys") or {}
    return False


def load(conversation_id: str, message_sids: list[str]) -> list[StagedMessage]:
    """The staged messages with these SIDs (bodies included), in no particular order."""
    return [StagedMessage.from_item(i) for i in _get_many(conversation_id, message_sids)]


def ai_requests(conversation_id: str, message_sids: list[str]) -> dict[str, AIRequest]:
    """The OpenAI requests kept on these staged messages, by MessageSid (no bodies read)."""
    items = _get_many(conversation_id, message_sids, "message_sid, ai_request")
    return {i["message_sid"]: AIRequest.from_item(i["ai_request"]) for i in items if i.get("ai_request")}


def keep_ai_request(conversation_id: str, message_sid: str, request: AIRequest) -> None:
    """Keep the OpenAI request of a batch on its (still pending) first message."""
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id, "message_sid": message_sid},
            UpdateExpression=expressions.KEEP_AI_REQUEST,
            ConditionExpression=expressions.IS_PENDING,
            ExpressionAttributeValues={":r": dynamo.to_dynamo(request.to_item())},
        )
    except ClientError as error:
        if not dynamo.condition_failed(error):
            raise


def drop_ai_request(conversation_id: str, message_sid: str) -> None:
    _table().update_item(
        Key={"conversation_id": conversation_id, "message_sid": message_sid},
        UpdateExpression=expressions.DROP_AI_REQUEST,
    )


def _get_many(conversation_id: str, message_sids: list[str], projection: str | None = None) -> list[Any]:
    name = _name()
    found: list[Any] = []
    for start in range(0, len(message_sids), 100):
        keys = [
            {"conversation_id": conversation_id, "message_sid": sid}
            for sid in message_sids[start : start + 100]
        ]
        request: dict[str, Any] = {name: {"Keys": keys, "ConsistentRead": True}}
        if projection:
            request[name]["ProjectionExpression"] = projection
        while request:
            response = dynamo.resource().batch_get_item(RequestItems=request)
            found += [dynamo.from_dynamo(i) for i in response["Responses"].get(name, [])]
            request = response.get("UnprocessedKeys") or {}
    return found


def pending(conversation_id: str) -> list[PendingKey]:
    """Keys and arrival times of the staged messages not yet answered, oldest first, from
    the sparse `pending` index: answered tombstones are not in it, so its pages hold
    pending messages only, however long the conversation's history (an index is
    eventually consistent: a message staged a moment ago may not be in it yet)."""
    items = dynamo.all_items(
        _table().query,
        IndexName=PENDING_INDEX,
        KeyConditionExpression=expressions.OF_CONVERSATION,
        ProjectionExpression=expressions.PENDING_KEYS,
        ExpressionAttributeValues={":conversation": conversation_id},
    )
    return [PendingKey.from_item(i) for i in items]


def scan_pending() -> list[dict[str, Any]]:
    """Every pending message of every conversation (keys and pending_since), from the
    sparse `pending` index: its size is the backlog, not the history."""
    return dynamo.all_items(_table().scan, IndexName="pending")


def count_failed_attempt(conversation_id: str, message_sids: list[str]) -> int:
    """Add one failed attempt to each pending message; the highest count among them."""
    return _count_on_pending(conversation_id, message_sids, expressions.COUNT_ATTEMPT, "attempts", {})


def count_transient_failure(conversation_id: str, message_sids: list[str], at: str) -> int:
    """Add one transient failure (at `at`) to each pending message; the highest count
    among them (the reconciler waits longer after each: functions/batching/rules/failures.py)."""
    update = expressions.COUNT_TRANSIENT_FAILURE
    return _count_on_pending(conversation_id, message_sids, update, "transient_failures", {":at": at})


def _count_on_pending(
    conversation_id: str, message_sids: list[str], update: str, counter: str, values: dict[str, Any]
) -> int:
    """Add one to `counter` of each message still pending (`update`); the highest count."""
    highest = 0
    for sid in message_sids:
        try:
            item = _table().update_item(
                Key={"conversation_id": conversation_id, "message_sid": sid},
                UpdateExpression=update,
                ConditionExpression=expressions.IS_PENDING,
                ExpressionAttributeValues={":one": 1, **values},
                ReturnValues="UPDATED_NEW",
            )["Attributes"]
        except ClientError as error:
            if dynamo.condition_failed(error):
                continue  # answered or failed meanwhile
            raise
        highest = max(highest, int(item[counter]))
    return highest


def set_aside(conversation_id: str, message_sids: list[str], window_id: str, reason: str) -> None:
    """Set messages aside: kept with their bodies, no longer pending, not retried."""
    for sid in message_sids:
        try:
            _table().update_item(
                Key={"conversation_id": conversation_id, "message_sid": sid},
                UpdateExpression=expressions.SET_ASIDE,
                ConditionExpression=expressions.IS_PENDING,
                ExpressionAttributeValues={":w": window_id, ":r": reason},
            )
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise


def requeue_set_aside(conversation_id: str, now: str) -> int:
    """Make the conversation's set-aside (failed) messages pending again, with their
    attempts and transient failures reset, MAX_PENDING_SECONDS counted from now: the
    operator's redrive (at `now`). How many were requeued."""
    set_aside = dynamo.all_items(
        _table().query,
        KeyConditionExpression=expressions.OF_CONVERSATION,
        FilterExpression=expressions.IS_SET_ASIDE,
        ProjectionExpression=expressions.STAGED_KEYS,
        ExpressionAttributeValues={":conversation": conversation_id},
        ConsistentRead=True,
    )
    for item in set_aside:
        _table().update_item(
            Key={"conversation_id": conversation_id, "message_sid": item["message_sid"]},
            UpdateExpression=expressions.REQUEUE,
            ExpressionAttributeValues={":since": item["received_at"], ":now": now},
        )
    return len(set_aside)


def mark_answered(conversation_id: str, message_sids: list[str], window_id: str, expires_at: int) -> None:
    """Replace answered messages by bodiless tombstones (idempotent)."""
    with _table().batch_writer() as batch:
        for sid in message_sids:
            batch.put_item(
                Item={
                    "conversation_id": conversation_id,
                    "message_sid": sid,
                    "answered_in": window_id,
                    "expires_at": expires_at,
                }
            )
