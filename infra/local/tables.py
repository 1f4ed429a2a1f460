"""The local stack's tables, created from the same definitions as the deployed ones
(functions/storage/tables.py); tests/infra compares the two."""

from __future__ import annotations

from typing import Any

from functions.storage.tables import TableDefinition


def create_table_request(table: TableDefinition) -> dict[str, Any]:
    """A CreateTable request for the table definition (on-demand capacity)."""

    def key_schema(partition: str, sort: str | None) -> list[dict[str, str]]:
        schema = [{"AttributeName": partition, "KeyType": "HASH"}]
        if sort:
            schema.append({"AttributeName": sort, "KeyType": "RANGE"})
        return schema

    request: dict[str, Any] = {
        "TableName": table.logical_id,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": key_schema(table.partition_key, table.sort_key),
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": "S"} for n in table.key_attributes()],
    }
    if table.indexes:
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index.name,
                "KeySchema": key_schema(index.partition_key, index.sort_key),
                "Projection": {"ProjectionType": "ALL"},
            }
            for index in table.indexes
        ]
    return request
