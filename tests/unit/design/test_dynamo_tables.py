"""functions/storage/dynamo.py makes each Table object once, for the resource in use (boto3 resources compare
equal to one another: a cache keyed by resource once handed a test's moto table to the
local stack)."""

import boto3

from functions.storage import dynamo


def test_a_table_is_made_once_per_resource_and_belongs_to_the_resource_in_use(monkeypatch):
    first = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:1")
    second = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:2")
    monkeypatch.setattr(dynamo, "resource", lambda: first)
    table = dynamo.table("Turns")
    assert dynamo.table("Turns") is table
    assert table.meta.client is first.meta.client

    monkeypatch.setattr(dynamo, "resource", lambda: second)
    assert dynamo.table("Turns").meta.client is second.meta.client
