"""Turn-text retention, in our tables (functions/personal_data/retention.py decides when): the
reconciler walks the Turns table a page a run, from a cursor kept in one small item of the
UsageCounters table (`retention#turns`), and cuts an expired turn to its figures, the same
allow-list a forget keeps (functions/personal_data/forgetting_store.py TURN_FIGURES)."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from functions.personal_data.forgetting_store import texts_of
from functions.storage import dynamo, expressions
from functions.storage.settings import TableSettings

CURSOR_KEY = "retention#turns"


def load_cursor() -> dict[str, Any] | None:
    """Where the walk over Turns stopped (the key to start after), or None: from the start."""
    table = dynamo.table(TableSettings.get().usage_counters_table)
    item = table.get_item(Key={"counter_key": CURSOR_KEY}).get("Item") or {}
    return item.get("after") or None


def save_cursor(after: dict[str, Any] | None) -> None:
    """Keep where the walk stopped (None: it went round; the next run starts again)."""
    table = dynamo.table(TableSettings.get().usage_counters_table)
    table.put_item(Item={"counter_key": CURSOR_KEY, **({"after": after} if after else {})})


def turns_page(
    before: str, statuses: frozenset[str], after: dict[str, Any] | None, limit: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One page of the walk: of `limit` turns read (from `after`), those created before
    `before` whose status is one of `statuses`, as plain values; and the key to go on from
    (None at the table's end). `limit` bounds what is read, before the filter."""
    request: dict[str, Any] = {
        "Limit": limit,
        "FilterExpression": Attr("created_at").lt(before) & Attr("status").is_in(sorted(statuses)),
    }
    if after:
        request["ExclusiveStartKey"] = after
    page = dynamo.table(TableSettings.get().turns_table).scan(**request)
    return [dynamo.from_dynamo(i) for i in page["Items"]], page.get("LastEvaluatedKey")


def cut_to_figures(turn: dict[str, Any], statuses: frozenset[str], at: str) -> bool:
    """Remove the turn's texts (every attribute beyond its figures) in place, marked
    `texts_expired_at`, if its status is still one of `statuses`: an UpdateItem, so that a
    status callback recording a delivery meanwhile keeps it. False if there was nothing to
    cut or its status changed."""
    texts = texts_of(turn)
    if not texts:
        return False
    names = {f"#t{n}": name for n, name in enumerate(texts)} | {"#s": "status"}
    values: dict[str, Any] = {f":s{n}": status for n, status in enumerate(sorted(statuses))}
    try:
        dynamo.table(TableSettings.get().turns_table).update_item(
            Key={"conversation_id": turn["conversation_id"], "turn_id": turn["turn_id"]},
            UpdateExpression="REMOVE "
            + ", ".join(f"#t{n}" for n in range(len(texts)))
            + " SET texts_expired_at = :at",
            ConditionExpression=expressions.status_in(list(values)),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={**values, ":at": at},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            return False
        raise
    return True
