"""The resource policy of the bus that `batch.answered` and `batch.handed_off` events go to:
only the function that announces batches may put events of the service's own source on it.
Others (a helpdesk's commands, functions/logic/entry_points/conversation_commands.py) put
events of their own source, as their IAM policies allow."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.integrations.event_bus import SOURCE


class AnsweredBatchBusPolicy(Construct):
    """Denies PutEvents of the service's own source (`events:source`,
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-conditions.html) to every
    principal but the publisher's role: those events carry conversation keys (and texts,
    if configured), so no one else may forge them. Nothing outside the account may put
    events anyway (no Allow for it)."""

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
                conditions={
                    "ArnNotEquals": {"aws:PrincipalArn": role.role_arn},
                    "StringEquals": {"events:source": SOURCE},
                },
            )
        )
