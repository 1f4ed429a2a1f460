"""The rule that delivers a helpdesk's commands on the service's bus (`conversation.pause`,
`conversation.resume`, `conversation.reply`: functions/registry.py CONVERSATION_COMMANDS)
to their function. EventBridge invokes it asynchronously: Lambda tries a failed invocation
twice more (its default), and the send-once protocol makes a redelivered reply go out once."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.registry import CONVERSATION_COMMANDS


class ConversationCommandsRule(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, bus: events.EventBus, function: lambda_.Function
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            event_bus=bus,
            description="A helpdesk's commands: pause, resume, a person's reply",
            event_pattern=events.EventPattern(detail_type=list(CONVERSATION_COMMANDS.detail_types)),
            # EventBridge's own retries of a delivery it could not make (throttled, say);
            # a command older than an hour is stale: a person's reply would come too late.
            targets=[targets.LambdaFunction(function, retry_attempts=5, max_event_age=Duration.hours(1))],
        )
