"""The benchmark's cost model: what one measured burst costs at the project's one price list
(infra/prices.py, re-exported here for the benchmark and its tests)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from infra import prices as listed
from infra.prices import *  # noqa: F403  (the one price list: infra/prices.py)

# Request units per call for the small items this service writes and reads (under 1 KB
# written, 4 KB read); a transaction costs two units per item; a write to a table with
# a GSI that the item enters or leaves costs one more unit (StagedMessages' `pending`).
_READS = {"GetItem": 1, "Query": 1, "Scan": 1, "BatchGetItem": 1}
_WRITES = {"PutItem": 1, "UpdateItem": 1, "DeleteItem": 1, "BatchWriteItem": 1, "TransactWriteItems": 2}


@dataclass(frozen=True)
class Burst:
    """What one answered burst did, measured on the local stack."""

    messages: int
    transitions: int
    lambda_invocations: int
    lambda_gb_seconds: float
    aws_calls: Counter[str]  # "service:Operation" → count, webhook and run together
    dynamodb_items: Counter[str]  # DynamoDB operation → items read or written


def aws_cost(burst: Burst) -> dict[str, float]:
    """The AWS cost of one burst, by service."""
    reads = sum(_READS.get(op, 0) * items for op, items in burst.dynamodb_items.items())
    writes = sum(_WRITES.get(op, 0) * items for op, items in burst.dynamodb_items.items())
    writes += 2 * burst.messages  # each staged message enters and leaves the `pending` index
    return {
        "Step Functions": burst.transitions * listed.STEP_FUNCTIONS_PER_TRANSITION,
        "Lambda requests": (burst.lambda_invocations + burst.messages) * listed.LAMBDA_PER_REQUEST,
        "Lambda duration": burst.lambda_gb_seconds * listed.LAMBDA_ARM_PER_GB_SECOND,
        "DynamoDB": reads * listed.DYNAMODB_PER_READ_UNIT + writes * listed.DYNAMODB_PER_WRITE_UNIT,
        "API Gateway": burst.messages * listed.API_GATEWAY_REST_PER_REQUEST,
        "WAF requests": burst.messages * listed.WAF_PER_REQUEST,
        "Secrets Manager": burst.aws_calls["secretsmanager:GetSecretValue"] * listed.SECRETS_MANAGER_PER_CALL,
        "EventBridge": burst.aws_calls["events:PutEvents"] * listed.EVENTBRIDGE_PER_EVENT,
    }
