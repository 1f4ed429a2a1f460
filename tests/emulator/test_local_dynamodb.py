"""The local stack's DynamoDB (moto in a process of its own, with infra/local/moto_speedups):
a cancelled transaction leaves every item as it was, as DynamoDB does, although only the
items it names are backed up, not the tables."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.emulator


def _table(dynamodb: Any, *, with_range: bool) -> str:
    name = f"transactions-{secrets.token_hex(4)}"
    keys = [("pk", "HASH"), *([("sk", "RANGE")] if with_range else [])]
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": a, "KeyType": t} for a, t in keys],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a, _ in keys],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _items(dynamodb: Any, table: str) -> dict[str, str]:
    found = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return {f"{i['pk']['S']}{i.get('sk', {}).get('S', '')}": i["n"]["N"] for i in found}


@pytest.mark.parametrize("with_range", [True, False])
def test_a_cancelled_transaction_leaves_every_item_as_it_was(stack, with_range):
    dynamodb = stack.client("dynamodb")
    table = _table(dynamodb, with_range=with_range)

    def key(pk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, **({"sk": {"S": "1"}} if with_range else {})}

    for pk in ("kept", "updated", "deleted"):
        dynamodb.put_item(TableName=table, Item={**key(pk), "n": {"N": "1"}})
    before = _items(dynamodb, table)
    writes = [
        {"Update": {"TableName": table, "Key": key("updated"), "UpdateExpression": "SET n = :two",
                    "ExpressionAttributeValues": {":two": {"N": "2"}}}},
        {"Put": {"TableName": table, "Item": {**key("added"), "n": {"N": "3"}}}},
        {"Delete": {"TableName": table, "Key": key("deleted")}},
    ]  # fmt: skip
    failing = {
        "ConditionCheck": {
            "TableName": table,
            "Key": key("absent"),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }

    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(TransactItems=[*writes, failing])

    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert _items(dynamodb, table) == before
    dynamodb.transact_write_items(TransactItems=writes)
    suffix = "1" if with_range else ""
    assert _items(dynamodb, table) == {f"kept{suffix}": "1", f"updated{suffix}": "2", f"added{suffix}": "3"}
