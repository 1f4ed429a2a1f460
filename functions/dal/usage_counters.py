"""The UsageCounters table: how many AI calls a conversation, and a sender at one tenant, made this hour
(the cost limits of functions/logic/shared/limits.py). One item per counter and hour, removed by
TTL once the hour is over."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.config import get_settings
from functions.dal import dynamo, expressions
from functions.errors import TransactionConflict


def count_within(counters: dict[str, int], expires_at: int) -> str | None:
    """Add one call to each counter (key → its limit) if every one is below its limit:
    all of them or none, in one transaction. None when counted; otherwise the key of a
    counter that is at its limit (nothing is counted then)."""
    if not counters:
        return None
    keys = list(counters)
    items: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": get_settings().usage_counters_table,
                "Key": {"counter_key": key},
                "UpdateExpression": expressions.COUNT_ONE_CALL,
                "ConditionExpression": expressions.BELOW_LIMIT,
                "ExpressionAttributeValues": {":one": 1, ":expires": expires_at, ":limit": counters[key]},
            }
        }
        for key in keys
    ]
    try:
        dynamo.client().transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = error.response.get("CancellationReasons") or []
        full = [k for k, r in zip(keys, reasons, strict=False) if r.get("Code") == "ConditionalCheckFailed"]
        if full:
            return full[0]
        if any(r.get("Code") == "TransactionConflict" for r in reasons):
            # Another AI call counted on a shared counter (the tenant's, everyone's) at the
            # same moment: nothing was counted; the task's Retry counts again.
            raise TransactionConflict(f"counting an AI call on {keys} conflicted") from error
        raise
    return None


def calls(key: str) -> int:
    """The calls counted on a counter (0 if none)."""
    item = dynamo.table(get_settings().usage_counters_table).get_item(Key={"counter_key": key}).get("Item")
    return int(item["calls"]) if item else 0
