"""The DynamoDB plumbing every table module shares: the resource, conditional-check
failures, paging, and conversions between Python values and DynamoDB's."""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from functions.storage.models import from_dynamo

_DESERIALIZER = TypeDeserializer()


@cache
def resource() -> Any:
    return boto3.resource("dynamodb")


def table(name: str) -> Any:
    """The resource's Table object for `name`, made once: boto3 builds each from its
    resource model, which costs more than the request it then makes. (Kept on the resource
    itself: resources compare equal to one another, so no cache can tell them apart.)"""
    dynamodb = resource()
    tables: dict[str, Any] = vars(dynamodb).setdefault("_tables_by_name", {})
    if name not in tables:
        tables[name] = dynamodb.Table(name)
    return tables[name]


def client() -> Any:
    return resource().meta.client


def condition_failed(error: ClientError) -> bool:
    return error.response["Error"]["Code"] == "ConditionalCheckFailedException"


def all_items(operation: Any, **request: Any) -> list[dict[str, Any]]:
    """Every item of a paginated Query or Scan (a page holds at most 1 MB)."""
    items: list[dict[str, Any]] = []
    while True:
        response = operation(**request)
        items += response["Items"]
        if "LastEvaluatedKey" not in response:
            return items
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def old_item(error: ClientError) -> dict[str, Any]:
    """The item that failed a condition (ReturnValuesOnConditionCheckFailure=ALL_OLD);
    error responses are not deserialized by the resource layer, so do it here."""
    raw = error.response.get("Item") or {}
    return from_dynamo({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()})  # type: ignore[no-any-return]


def to_dynamo(value: Any) -> Any:
    """Floats become Decimals; None values are left out."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: to_dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [to_dynamo(v) for v in value]
    return value
