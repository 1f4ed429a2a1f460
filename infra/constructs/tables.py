"""The DynamoDB tables, built from functions/storage/tables.py (as the local stack's are)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from functions.storage.tables import ALL_TABLES


def _attribute(name: str | None) -> dynamodb.Attribute | None:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING) if name else None


class Tables(Construct):
    """On demand, encrypted, point-in-time recovery, kept when the stack is destroyed or a
    table replaced, but removed when the stack's first create fails and rolls back
    (RETAIN_ON_UPDATE_OR_DELETE: CloudFormation's DeletionPolicy RetainExceptOnCreate), so
    that a failed first deploy leaves no empty tables behind (docs/deploying.md)."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.by_logical_id: dict[str, dynamodb.Table] = {}
        for definition in ALL_TABLES:
            table = dynamodb.Table(
                self,
                definition.logical_id,
                partition_key=_attribute(definition.partition_key),  # type: ignore[arg-type]
                sort_key=_attribute(definition.sort_key),
                billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
                encryption=dynamodb.TableEncryption.AWS_MANAGED,
                point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                    point_in_time_recovery_enabled=True
                ),
                time_to_live_attribute=definition.ttl_attribute,
                removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
            )
            for index in definition.indexes:
                table.add_global_secondary_index(
                    index_name=index.name,
                    partition_key=_attribute(index.partition_key),  # type: ignore[arg-type]
                    sort_key=_attribute(index.sort_key),
                )
            self.by_logical_id[definition.logical_id] = table

    def __getitem__(self, logical_id: str) -> dynamodb.Table:
        return self.by_logical_id[logical_id]

    def environment(self) -> dict[str, str]:
        return {d.env_var: self[d.logical_id].table_name for d in ALL_TABLES}
