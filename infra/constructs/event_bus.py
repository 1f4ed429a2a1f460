"""The resource policy of the bus that `batch.answered` and `batch.handed_off` events go to:
only the function that announces batches may put events of the service's own source on it,
and a helpdesk's commands (`conversation.*`, functions/entry_points/conversation_commands.py)
only with its own tenant's source, `helpdesk.<AccountSid>`, as its role's `tenant` tag names it.
The managed policy a helpdesk's role attaches to put them (HelpdeskCommandsPolicyArn)."""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.delivery.event_bus import SOURCE
from functions.registry import CONVERSATION_COMMANDS

COMMANDS = "conversation.*"  # every detail type of CONVERSATION_COMMANDS
# The only source a tenant's commands may have: the tag of the role that puts them.
TENANTS_OWN_SOURCE = "helpdesk.${aws:PrincipalTag/tenant}"
assert all(d.startswith(COMMANDS[:-1]) for d in CONVERSATION_COMMANDS.detail_types)


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
        deny = {
            "OnlyTheRecordingFunctionPublishes": {
                "ArnNotEquals": {"aws:PrincipalArn": role.role_arn},
                "StringEquals": {"events:source": SOURCE},
            },
            # A command names its tenant (`detail.AccountSid`): only a principal tagged with
            # that tenant may put it, with that tenant's source, which the function checks
            # against the AccountSid. A principal without the tag puts no command at all (a
            # policy variable that does not resolve would leave the statement above unapplied).
            "CommandsOnlyWithTheirTenantsSource": {
                "StringLike": {"events:detail-type": COMMANDS},
                "StringNotEquals": {"events:source": TENANTS_OWN_SOURCE},
            },
            "CommandsOnlyFromATenantsPrincipal": {
                "StringLike": {"events:detail-type": COMMANDS},
                "Null": {"aws:PrincipalTag/tenant": "true"},
            },
        }
        for sid, conditions in deny.items():
            bus.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=["events:PutEvents"],
                    resources=[bus.event_bus_arn],
                    conditions=conditions,
                )
            )
        self.helpdesk_policy = self._helpdesk_policy(bus)

    def _helpdesk_policy(self, bus: events.EventBus) -> iam.ManagedPolicy:
        """What a helpdesk's role (tagged `tenant` = its AccountSid) attaches to put its
        tenant's commands, and nothing else, on this bus."""
        return iam.ManagedPolicy(
            self,
            "HelpdeskCommands",
            description="Put a tenant's conversation commands on the bus "
            "(for a role tagged tenant=<AccountSid>)",
            statements=[
                iam.PolicyStatement(
                    actions=["events:PutEvents"],
                    resources=[bus.event_bus_arn],
                    conditions={
                        "StringEquals": {"events:source": TENANTS_OWN_SOURCE},
                        "StringLike": {"events:detail-type": COMMANDS},
                    },
                )
            ],
        )
