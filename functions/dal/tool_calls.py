"""The ToolCalls table: each tool call claimed before it is made, its outcome recorded after
(models.ToolCall), as send-once does for a reply part. Kept TOOL_CALL_RETENTION_SECONDS,
well past any retry, rerun or redrive of its batch."""

from __future__ import annotations

from typing import Any

from functions.config import get_settings
from functions.dal import dynamo, expressions
from functions.dal.models import ToolCall

TOOL_CALL_RETENTION_SECONDS = 30 * 24 * 3600


def _table() -> Any:
    return dynamo.table(get_settings().tool_calls_table)


def claim(
    conversation_id: str, call_key: str, name: str, side_effects: bool, window_id: str, now: str, now_s: int
) -> ToolCall:
    """Claim the call for this attempt, counting the attempt; the call as it now is. A call
    found finished is not to be made; one found `claimed` with an earlier attempt was being
    made when that attempt ended (in doubt)."""
    item = _table().update_item(
        Key={"conversation_id": conversation_id, "call_key": call_key},
        UpdateExpression=expressions.CLAIM_TOOL_CALL,
        ExpressionAttributeNames={"#name": "name", "#status": "status"},
        ExpressionAttributeValues={
            ":name": name,
            ":side": side_effects,
            ":claimed": "claimed",
            ":window": window_id,
            ":now": now,
            ":expires": now_s + TOOL_CALL_RETENTION_SECONDS,
            ":one": 1,
        },
        ReturnValues="ALL_NEW",
    )["Attributes"]
    return ToolCall.from_item(item)


def mark_making(conversation_id: str, call_key: str) -> None:
    """The call is about to be made (again, after `not_made`): in doubt if this attempt ends."""
    _set(conversation_id, call_key, "claimed", None, None)


def record(conversation_id: str, call_key: str, status: str, output: str | None, now: str | None) -> None:
    """The call's outcome (`not_made`: none yet, it may be made again)."""
    _set(conversation_id, call_key, status, output, now)


def _set(conversation_id: str, call_key: str, status: str, output: str | None, now: str | None) -> None:
    values: dict[str, Any] = {":status": status}
    update = expressions.MARK_TOOL_CALL
    if output is not None:
        update = expressions.RECORD_TOOL_CALL
        values.update({":output": output, ":now": now})
    _table().update_item(
        Key={"conversation_id": conversation_id, "call_key": call_key},
        UpdateExpression=update,
        ExpressionAttributeNames={
            "#status": "status",
            **({"#output": "output"} if output is not None else {}),
        },
        ExpressionAttributeValues=values,
    )


def get_many(conversation_id: str, call_keys: list[str]) -> dict[str, ToolCall]:
    """The calls recorded under these keys (consistent reads)."""
    if not call_keys:
        return {}
    name = get_settings().tool_calls_table
    keys = [{"conversation_id": conversation_id, "call_key": key} for key in dict.fromkeys(call_keys)]
    found: dict[str, ToolCall] = {}
    request: dict[str, Any] = {name: {"Keys": keys, "ConsistentRead": True}}
    while request:
        response = dynamo.resource().batch_get_item(RequestItems=request)
        for item in response["Responses"].get(name, []):
            call = ToolCall.from_item(item)
            found[call.call_key] = call
        request = response.get("UnprocessedKeys") or {}
    return found
