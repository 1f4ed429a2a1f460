"""API Gateway's CloudWatch role, set on the account: only with the CDK context
`manage_api_gateway_account_role=true` (infra/stack_settings.py).

The setting is the account's, one per Region, shared by every REST API there: the last
stack to set it wins, and deleting the stack leaves it set ("When you delete a stack
containing this resource, API Gateway can still assume the provided IAM role":
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-apigateway-account.html).
So the role is kept when the stack is deleted or the resource replaced, as CDK keeps the one
of `RestApi(cloud_watch_role=True)` (its `cloudWatchRoleRemovalPolicy` defaults to RETAIN):
deleting it would break the logging of every API in the Region. It is removed with the rest
when the stack's first create fails (RETAIN_ON_UPDATE_OR_DELETE)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct, IConstruct


class ApiGatewayAccount(Construct):
    """The role API Gateway assumes to write the stage's logs, and the account setting that
    names it; `stage` is created after it (a stage that logs fails to create without it)."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: IConstruct) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "CloudWatchRole",
            description="API Gateway writes the account's API logs to CloudWatch Logs",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(
                    "service-role/AmazonAPIGatewayPushToCloudWatchLogs"
                )
            ],
        )
        self.account = apigw.CfnAccount(self, "Account", cloud_watch_role_arn=self.role.role_arn)
        for resource in (self.role, self.account):
            resource.apply_removal_policy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
        stage.node.add_dependency(self.account)
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM4",
                    reason="AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API "
                    "Gateway's account-wide logging role (CDK's own cloudWatchRole uses it too).",
                    applies_to=[
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                        "AmazonAPIGatewayPushToCloudWatchLogs"
                    ],
                )
            ],
        )
