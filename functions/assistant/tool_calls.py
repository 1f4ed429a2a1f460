"""The ToolCalls table: each tool call claimed before it is made, its outcome recorded after
(models.ToolCall), as send-once does for a reply part. Kept TOOL_CALL_RETENTION_SECONDS,
well past any retry, rerun or redrive of its batch."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.assistant.rules import tools as tool_rules
from functions.storage import dynamo, expressions
from functions.storage.models import AskedCall, Confirmation, ToolCall
from functions.storage.settings import TableSettings

TOOL_CALL_RETENTION_SECONDS = 30 * 24 * 3600


def _table() -> Any:
    return dynamo.table(TableSettings.get().tool_calls_table)


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


def propose(confirmation: Confirmation) -> None:
    """Record (or renew) the model's proposal of a `confirm: true` call."""
    _table().put_item(Item=confirmation.to_item())


def confirmation(conversation_id: str, key: str) -> Confirmation | None:
    item = _table().get_item(Key={"conversation_id": conversation_id, "call_key": key}, ConsistentRead=True)
    return Confirmation.from_item(item["Item"]) if "Item" in item else None


def use_confirmation(conversation_id: str, key: str, batch_key: str) -> bool:
    """Use the proposal for this batch's call: True for the one batch that does (a retry of
    that batch included), False if another batch used it first."""
    try:
        _table().update_item(
            Key={"conversation_id": conversation_id, "call_key": key},
            UpdateExpression=expressions.USE_CONFIRMATION,
            ConditionExpression=expressions.UNUSED_CONFIRMATION,
            ExpressionAttributeValues={":batch": batch_key},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True


def get_many(conversation_id: str, call_keys: list[str]) -> dict[str, ToolCall]:
    """The calls recorded under these keys (consistent reads)."""
    if not call_keys:
        return {}
    name = TableSettings.get().tool_calls_table
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


def recorded_outputs(
    tenant: str, conversation_id: str, batch_key: str, calls: list[AskedCall], missing: str | None = None
) -> list[str] | None:
    """Each call's recorded output (Call Tools'), in order, the calls of the batch whose key
    (its first MessageSid) is `batch_key`; None while one has none, unless `missing` stands
    in for it (a lost round asked again: its calls were answered before it was first asked,
    and are not to be made now)."""
    keys = [_call_key(tenant, conversation_id, batch_key, call) for call in calls]
    found = get_many(conversation_id, [k for k in keys if k])
    outputs: list[str] = []
    for key in keys:
        if key is None:  # arguments that are no JSON object: nothing to call
            outputs.append(tool_rules.bad_arguments())
            continue
        recorded = found.get(key)
        if recorded is not None and recorded.finished and recorded.output is not None:
            outputs.append(recorded.output)
        elif missing is not None:
            outputs.append(missing)
        else:
            return None
    return outputs


def _call_key(tenant: str, conversation_id: str, batch_key: str, call: AskedCall) -> str | None:
    """The key the call is claimed under (functions/assistant/rules/tools.py)."""
    arguments = tool_rules.arguments_of(call.arguments)
    if arguments is None:
        return None
    return tool_rules.call_key(tenant, conversation_id, batch_key, call.name, arguments)
