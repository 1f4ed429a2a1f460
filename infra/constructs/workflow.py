"""The Standard state machine, loaded from the ASL file with its substitutions."""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.registry import TASKS
from functions.storage.tables import ALL_TABLES, BATCH_WINDOWS, CONVERSATIONS, PENDING_INDEX, STAGED_MESSAGES
from infra.constructs.functions import Functions
from infra.constructs.tables import Tables
from infra.names import state_machine_log_group_name, state_machine_name
from infra.stack_settings import StackSettings
from infra.statemachine import DEFINITION_FILE, definition_substitutions, placeholders


class BatchWorkflow(Construct):
    """The Standard state machine, loaded from the ASL file with its substitutions, and
    the exact permissions its direct integrations use."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        settings: StackSettings,
        tables: Tables,
        functions: Functions,
    ) -> None:
        super().__init__(scope, construct_id)
        # Named, so that functions that start runs can know its ARN without a reference
        # to it (the state machine refers to them: a reference back would be a cycle).
        self.name = state_machine_name(Stack.of(self).stack_name)
        self.arn = Stack.of(self).format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        every = definition_substitutions(
            {d.logical_id: tables[d.logical_id].table_name for d in ALL_TABLES},
            {f.logical_id: functions[f.logical_id].function_arn for f in TASKS},
        )
        self.substitutions = {name: every[name] for name in placeholders()}
        # Under /aws/vendedlogs/: Step Functions adds the log group to the account's CloudWatch
        # Logs resource policy, limited to 5,120 characters, unless it is under this prefix.
        log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=state_machine_log_group_name(self.name),
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "BatchWindow",
            state_machine_name=self.name,
            definition_body=sfn.DefinitionBody.from_file(str(DEFINITION_FILE)),
            definition_substitutions=self.substitutions,
            state_machine_type=sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group,
                level=sfn.LogLevel[settings.state_machine_log_level],
                include_execution_data=False,  # message SIDs only, but keep the logs lean
            ),
        )
        self._grant(self.state_machine.role, tables, functions)

    @staticmethod
    def _grant(role: iam.IRole, tables: Tables, functions: Functions) -> None:
        """What the definition's tasks and direct integrations call, and nothing more."""
        # The definition invokes each task by its unqualified ARN (no version, no alias).
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[functions[task.logical_id].function_arn for task in TASKS],
            )
        )
        # "Query Staged Messages" queries the pending index: IAM authorizes that on the index.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query"],
                resources=[f"{tables[STAGED_MESSAGES.logical_id].table_arn}/index/{PENDING_INDEX}"],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem"], resources=[tables[CONVERSATIONS.logical_id].table_arn]
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:DeleteItem"], resources=[tables[BATCH_WINDOWS.logical_id].table_arn]
            )
        )
        NagSuppressions.add_resource_suppressions(
            role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="X-Ray and CloudWatch Logs delivery actions support no resource-level "
                    "permissions.",
                    applies_to=["Resource::*"],
                )
            ],
            apply_to_children=True,
        )
