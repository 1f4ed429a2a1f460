"""The resource policy of the bus that `batch.answered` events go to: only the function
that announces answered batches may put events on it."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


class AnsweredBatchBusPolicy(Construct):
    """Denies PutEvents on the bus to every principal but the publisher's role: the
    events carry conversation keys (and texts, if configured), so no one else may forge
    them. Nothing outside the account may put events anyway (no Allow for it)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, bus: events.EventBus, publisher: lambda_.Function
    ) -> None:
        super().__init__(scope, construct_id)
        role = publisher.role
        assert role is not None, "a function has a role"
        bus.add_to_resource_policy(
            iam.PolicyStatement(
                sid="OnlyTheRecordingFunctionPublishes",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["events:PutEvents"],
                resources=[bus.event_bus_arn],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": role.role_arn}},
            )
        )
