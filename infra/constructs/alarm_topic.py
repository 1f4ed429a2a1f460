"""Where the alarms go: one SNS topic, encrypted with a key of its own, that every alarm
of the stack notifies when it goes to ALARM and back to OK, and an email subscribed to it
when the deployment names one (`alarm_email`)."""

from __future__ import annotations

import jsii
from aws_cdk import AspectPriority, Aspects, Duration, IAspect, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct, IConstruct

CLOUDWATCH = iam.ServicePrincipal("cloudwatch.amazonaws.com")


class AlarmTopic(Construct):
    """The topic, its key, and an aspect that gives every alarm of the stack the topic as
    its ALARM and OK action, wherever and whenever the alarm is added."""

    def __init__(self, scope: Construct, construct_id: str, *, alarm_email: str = "") -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        # An AWS managed key (alias/aws/sns) cannot be used: its policy cannot let
        # CloudWatch encrypt the notifications it publishes (docs/adr/0046-someone-hears-the-alarms.md).
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the alarm notifications",
            enable_key_rotation=True,
            pending_window=Duration.days(7),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublishEncrypted",
                principals=[CLOUDWATCH],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
            )
        )
        self.topic = sns.Topic(
            self, "Topic", display_name=f"{stack.stack_name} alarms", master_key=self.key, enforce_ssl=True
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccountPublish",
                principals=[CLOUDWATCH],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": stack.format_arn(service="cloudwatch", resource="alarm:*")},
                },
            )
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        Aspects.of(stack).add(
            NotifyOnEveryAlarm(actions.SnsAction(self.topic)), priority=AspectPriority.MUTATING
        )


@jsii.implements(IAspect)
class NotifyOnEveryAlarm:
    """Gives every alarm the action, for ALARM and for OK: the OK notification tells the
    operator that the condition cleared (after a redrive, a top-up, a fixed token)
    without opening the console."""

    def __init__(self, action: cloudwatch.IAlarmAction) -> None:
        self.action = action

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, cloudwatch.AlarmBase):
            node.add_alarm_action(self.action)
            node.add_ok_action(self.action)
