"""The local stack writes DynamoDB item answers with json.dumps (infra/local/moto_speedups.py):
the same answer, to botocore, as moto's own serializer writes."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from moto.core.responses import ActionContext
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler, DynamoResult

from infra.local.moto_speedups import item_answer_as_json

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
