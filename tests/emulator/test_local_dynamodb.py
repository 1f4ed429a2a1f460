"""The local stack's DynamoDB (moto in a process of its own, with infra/local/moto_speedups):
a cancelled transaction leaves every item as it was, as DynamoDB does, although only the
items it names are backed up, not the tables; an item answer written with json.dumps is,
to botocore, the answer moto's own serializer writes; an update expression parsed once
serves every request with that request's own names and values."""

from __future__ import annotations

import json
import secrets
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.core.responses import ActionContext
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler, DynamoResult

from infra.local.moto_speedups import item_answer_as_json

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


ITEM = {
    "conversation_id": DynamoType({"S": "c1"}),
    "count": DynamoType({"N": "3"}),
    "parts": DynamoType({"L": [{"S": "a"}, {"M": {"sid": {"S": "SM1"}, "sent": {"BOOL": True}}}]}),
    "tags": DynamoType({"SS": ["x", "y"]}),
    "gone": DynamoType({"NULL": True}),
}


@pytest.mark.parametrize(
    ("operation", "result"),
    [
        ("GetItem", {"Item": ITEM, "ConsumedCapacity": None}),
        ("UpdateItem", {"Attributes": ITEM}),
        ("UpdateItem", {}),
        (
            "Query",
            {
                "Items": [ITEM, ITEM],
                "Count": 2,
                "ScannedCount": 2,
                "LastEvaluatedKey": {"conversation_id": {"S": "c1"}},
            },
        ),
    ],
)
def test_an_item_answer_is_written_as_moto_writes_it(operation, result):
    service = get_service_model("dynamodb")
    context = ActionContext(
        service, service.operation_model(operation), get_serializer_class("dynamodb", "json"), DynamoHandler()
    )
    answer = DynamoResult(result)

    status, headers, body = item_answer_as_json(answer.result, context)
    moto_status, moto_headers, moto_body = answer.execute_result(context)

    assert (status, headers, json.loads(body)) == (moto_status, moto_headers, json.loads(moto_body))


def test_an_answer_holding_anything_but_json_values_is_left_to_moto():
    service = get_service_model("dynamodb")
    context = ActionContext(
        service, service.operation_model("GetItem"), get_serializer_class("dynamodb", "json"), DynamoHandler()
    )
    assert item_answer_as_json({"Item": {"n": Decimal(1)}}, context) is None


@pytest.mark.parametrize("with_range", [True, False])
def test_a_query_reads_its_partition_in_order_and_page_by_page(stack, with_range):
    """The speedup hands a Query its partition's items alone: the answer is DynamoDB's."""
    dynamodb = stack.client("dynamodb")
    table = _table(dynamodb, with_range=with_range)
    for pk in ("a", "b", "c"):
        for sk in ("3", "1", "2") if with_range else ("1",):
            dynamodb.put_item(
                TableName=table,
                Item={"pk": {"S": pk}, **({"sk": {"S": sk}} if with_range else {}), "n": {"N": sk}},
            )

    def page(start: dict[str, Any] | None = None) -> dict[str, Any]:
        return dynamodb.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "b"}},
            ScanIndexForward=False,
            Limit=2,
            **({"ExclusiveStartKey": start} if start else {}),
        )

    first = page()
    found = [i["n"]["N"] for i in first["Items"]]
    if "LastEvaluatedKey" in first:
        found += [i["n"]["N"] for i in page(first["LastEvaluatedKey"])["Items"]]
    assert found == (["3", "2", "1"] if with_range else ["1"])
    missing = dynamodb.query(
        TableName=table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": "z"}}
    )
    assert missing["Items"] == [] and missing["Count"] == 0


def test_an_update_expression_parsed_once_serves_each_request_with_its_own_values(stack):
    dynamodb = stack.client("dynamodb")
    table = _table(dynamodb, with_range=False)
    expression = (
        "SET #n = if_not_exists(#n, :zero) + :add, seen = list_append(if_not_exists(seen, :none), :one)"
    )

    def update(pk: str, add: int, name: str = "n") -> dict[str, Any]:
        return dynamodb.update_item(
            TableName=table,
            Key={"pk": {"S": pk}},
            UpdateExpression=expression,
            ExpressionAttributeNames={"#n": name},
            ExpressionAttributeValues={
                ":zero": {"N": "0"},
                ":add": {"N": str(add)},
                ":none": {"L": []},
                ":one": {"L": [{"S": f"{pk}+{add}"}]},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]

    update("a", 2)
    update("b", 5)
    assert update("a", 3) == {"pk": {"S": "a"}, "n": {"N": "5"}, "seen": {"L": [{"S": "a+2"}, {"S": "a+3"}]}}
    assert update("b", 1, name="m")["m"] == {"N": "1"}  # the same expression, another name
    assert _items(dynamodb, table) == {"a": "5", "b": "5"}
    for _ in range(2):  # one that does not parse is refused every time
        with pytest.raises(ClientError, match="ValidationException"):
            dynamodb.update_item(TableName=table, Key={"pk": {"S": "a"}}, UpdateExpression="SET = 1")
