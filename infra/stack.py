"""The AWS stack, composed of constructs. Tables, functions and the state machine come
from the same definitions the local stack uses (functions.dal.tables, functions.registry,
statemachines/batch_window.asl.json)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.dal.tables import ALL_TABLES, BATCH_WINDOWS, CONVERSATIONS, PROJECTS, STAGED_MESSAGES, TURNS
from functions.observability import NAMESPACE
from functions.registry import (
    ALL_FUNCTIONS,
    RECONCILER,
    TASKS,
    WEBHOOK,
    FunctionDefinition,
    definition_substitutions,
)
from infra.statemachine import DEFINITION_FILE, placeholders

RUNTIME = lambda_.Runtime.PYTHON_3_14


@dataclass(frozen=True)
class StackSettings:
    """What a deployment chooses (cdk.json context or `-c name=value`)."""

    code_directory: Path  # holds the `functions` package
    dependencies_directory: Path  # holds `python/` with the runtime dependencies (a layer)
    batch_window_seconds: int = 10
    auto_create_conversations: bool = False
    state_machine_log_level: str = "ALL"  # ALL, ERROR, FATAL or OFF; payloads never logged
    api_rate_limit: int = 50  # requests per second, steady
    api_burst_limit: int = 100
    alarm_email: str | None = None


class Tables(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.by_logical_id: dict[str, dynamodb.Table] = {}
        for definition in ALL_TABLES:
            table = dynamodb.Table(
                self,
                definition.logical_id,
                partition_key=dynamodb.Attribute(
                    name=definition.partition_key, type=dynamodb.AttributeType.STRING
                ),
                sort_key=dynamodb.Attribute(name=definition.sort_key, type=dynamodb.AttributeType.STRING)
                if definition.sort_key
                else None,
                billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
                encryption=dynamodb.TableEncryption.AWS_MANAGED,
                point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                    point_in_time_recovery_enabled=True
                ),
                time_to_live_attribute=definition.ttl_attribute,
                removal_policy=RemovalPolicy.RETAIN,
            )
            for index in definition.indexes:
                table.add_global_secondary_index(
                    index_name=index.name,
                    partition_key=dynamodb.Attribute(
                        name=index.partition_key, type=dynamodb.AttributeType.STRING
                    ),
                    sort_key=dynamodb.Attribute(name=index.sort_key, type=dynamodb.AttributeType.STRING)
                    if index.sort_key
                    else None,
                )
            self.by_logical_id[definition.logical_id] = table

    def __getitem__(self, logical_id: str) -> dynamodb.Table:
        return self.by_logical_id[logical_id]

    def environment(self) -> dict[str, str]:
        return {d.env_var: self[d.logical_id].table_name for d in ALL_TABLES}


class Credentials(Construct):
    """The deployment's default credentials. Created with placeholder values: put the real
    ones in after the first deploy (README, "Deploy")."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.twilio = secretsmanager.Secret(
            self,
            "Twilio",
            description="Twilio credentials: {account_sid, auth_token}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template='{"account_sid": "set-me"}', generate_string_key="auth_token"
            ),
        )
        self.openai = secretsmanager.Secret(
            self,
            "OpenAI",
            description="OpenAI API key: {api_key}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}", generate_string_key="api_key"
            ),
        )
        # Other tenants' Twilio accounts and OpenAI keys live under this prefix.
        self.tenant_prefix = f"{Stack.of(self).stack_name}/tenants/"
        for secret in (self.twilio, self.openai):
            NagSuppressions.add_resource_suppressions(
                secret,
                [
                    NagPackSuppression(
                        id="AwsSolutions-SMG4",
                        reason="Twilio and OpenAI keys are rotated in their own consoles, not by a Lambda.",
                    )
                ],
            )

    def tenant_secrets_arn(self) -> str:
        stack = Stack.of(self)
        return stack.format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{self.tenant_prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )


class Functions(Construct):
    """One Lambda function per registry entry, arm64, with Powertools, X-Ray and JSON logs."""

    def __init__(
        self, scope: Construct, construct_id: str, settings: StackSettings, environment: dict[str, str]
    ):
        super().__init__(scope, construct_id)
        code = lambda_.Code.from_asset(str(settings.code_directory))
        dependencies = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(settings.dependencies_directory)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="boto3, aws-lambda-powertools, pydantic, openai, twilio",
        )
        self.by_logical_id: dict[str, lambda_.Function] = {}
        for definition in ALL_FUNCTIONS:
            self.by_logical_id[definition.logical_id] = self._function(
                definition, code, dependencies, environment
            )

    def _function(
        self,
        definition: FunctionDefinition,
        code: lambda_.Code,
        dependencies: lambda_.ILayerVersion,
        environment: dict[str, str],
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{definition.logical_id}Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        function = lambda_.Function(
            self,
            definition.logical_id,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=definition.handler,
            code=code,
            layers=[dependencies],
            timeout=Duration.seconds(definition.timeout_seconds),
            memory_size=definition.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            environment={
                **environment,
                "POWERTOOLS_SERVICE_NAME": "burst-reply",
                "POWERTOOLS_METRICS_NAMESPACE": NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
            },
        )
        NagSuppressions.add_resource_suppressions(
            function,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM4",
                    reason="AWSLambdaBasicExecutionRole only lets the function write its own logs.",
                    applies_to=[
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
                    ],
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="X-Ray trace and telemetry actions support no resource-level permissions.",
                    applies_to=["Resource::*"],
                ),
            ],
            apply_to_children=True,
        )
        return function

    def __getitem__(self, logical_id: str) -> lambda_.Function:
        return self.by_logical_id[logical_id]


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
        self.name = f"{Stack.of(self).stack_name}-BatchWindow"
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
        log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
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
        role = self.state_machine.role
        for task in TASKS:
            functions[task.logical_id].grant_invoke(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query"], resources=[tables[STAGED_MESSAGES.logical_id].table_arn]
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
                    reason="lambda:InvokeFunction on <function>:* covers its versions (CDK's grant); "
                    "X-Ray and CloudWatch Logs delivery actions support no resource-level permissions.",
                    applies_to=[
                        *[f"Resource::<{_logical(functions[t.logical_id])}.Arn>:*" for t in TASKS],
                        "Resource::*",
                    ],
                )
            ],
            apply_to_children=True,
        )


def _logical(function: lambda_.Function) -> str:
    return Stack.of(function).get_logical_id(function.node.default_child)  # type: ignore[arg-type]


class WebhookApi(Construct):
    """REST API with POST /whatsapp and POST /sms, throttled, access-logged."""

    def __init__(
        self, scope: Construct, construct_id: str, settings: StackSettings, handler: lambda_.IFunction
    ):
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.api = apigw.RestApi(
            self,
            "Api",
            description="Twilio Messaging webhooks",
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.DESTROY,
            deploy_options=apigw.StageOptions(
                stage_name="prod",
                throttling_rate_limit=settings.api_rate_limit,
                throttling_burst_limit=settings.api_burst_limit,
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # bodies are personal data
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=False,
                ),
            ),
        )
        integration = apigw.LambdaIntegration(handler)
        self.whatsapp = self.api.root.add_resource("whatsapp")
        self.sms = self.api.root.add_resource("sms")
        for resource in (self.whatsapp, self.sms):
            resource.add_method("POST", integration)
        NagSuppressions.add_resource_suppressions(
            self.api,
            [
                NagPackSuppression(
                    id="AwsSolutions-APIG2",
                    reason="Twilio posts a signed form; the webhook validates the signature over the whole "
                    "form, which a request validator cannot do.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-APIG3",
                    reason="No WAF by default; attach a web ACL to the stage if needed.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-APIG4",
                    reason="Twilio cannot send IAM or Cognito credentials; every request is authenticated by "
                    "its X-Twilio-Signature in the webhook, and refused with 403 otherwise.",
                ),
                NagPackSuppression(
                    id="AwsSolutions-COG4", reason="Same as APIG4: Twilio signs its requests."
                ),
                NagPackSuppression(
                    id="AwsSolutions-IAM4",
                    reason="API Gateway's account role for CloudWatch Logs uses the AWS managed policy.",
                    applies_to=[
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                        "AmazonAPIGatewayPushToCloudWatchLogs"
                    ],
                ),
            ],
            apply_to_children=True,
        )

    def url_of(self, resource: apigw.Resource) -> str:
        return self.api.url_for_path(resource.path)


class Monitoring(Construct):
    """Alarms an operator needs: failed runs, throttling, webhook errors, messages waiting
    too long, batches set aside."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        state_machine: sfn.StateMachine,
        api: apigw.RestApi,
        functions: Functions,
    ) -> None:
        super().__init__(scope, construct_id)
        five_minutes = Duration.minutes(5)
        others = [f for name, f in functions.by_logical_id.items() if name != WEBHOOK.logical_id]

        def alarm(
            alarm_id: str, description: str, metric: cloudwatch.IMetric, threshold: float = 1
        ) -> cloudwatch.Alarm:
            """Alarms when one five-minute period reaches the threshold; no data is fine."""
            return cloudwatch.Alarm(
                self,
                alarm_id,
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )

        def throttles(function: lambda_.Function) -> cloudwatch.Metric:
            return function.metric_throttles(period=five_minutes, statistic="Sum")

        self.alarms = [
            alarm(
                "FailedRuns",
                "A batch run ended FAILED; its messages are kept. Inspect its history.",
                state_machine.metric_failed(period=five_minutes, statistic="Sum"),
            ),
            alarm(
                "ThrottledRuns",
                "Step Functions throttled StartExecution or state transitions.",
                state_machine.metric_throttled(period=five_minutes, statistic="Sum"),
            ),
            alarm(
                "WebhookThrottles",
                "The webhook was throttled: Twilio retries; raise its concurrency.",
                throttles(functions[WEBHOOK.logical_id]),
            ),
            # An alarm sums at most 10 metrics: one alarm per group of 10 functions.
            *(
                alarm(
                    f"TaskThrottles{group + 1}",
                    "A task or the reconciler was throttled (the state machine retries).",
                    _sum_of([throttles(f) for f in others[start : start + 10]], five_minutes),
                )
                for group, start in enumerate(range(0, len(others), 10))
            ),
            alarm(
                "Webhook5xx",
                "The webhook answered 5xx: Twilio retries, but look at the webhook's logs.",
                api.metric_server_error(period=five_minutes, statistic="Sum"),
            ),
            alarm(
                "OldestPendingMessage",
                "A message has waited over 10 minutes for its answer (reported by the reconciler): "
                "runs are failing or not starting.",
                _service_metric("OldestPendingMessageAge", "Maximum", five_minutes),
                threshold=600,
            ),
            alarm(
                "DeadLetteredBatches",
                "A batch kept failing and was set aside (Turns status dead_lettered; its messages stay "
                "in StagedMessages with failed_in).",
                _service_metric("DeadLetteredBatches", "Sum", five_minutes),
            ),
        ]


def _sum_of(metrics: list[cloudwatch.IMetric], period: Duration) -> cloudwatch.MathExpression:
    """One alarm may sum at most 10 metrics."""
    assert len(metrics) <= 10, "split this alarm"
    return cloudwatch.MathExpression(
        expression=" + ".join(f"m{i}" for i in range(len(metrics))),
        using_metrics={f"m{i}": metric for i, metric in enumerate(metrics)},
        period=period,
    )


def _service_metric(name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
    """A metric our functions emit with Powertools (EMF, dimension `service`)."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": "burst-reply"},
        statistic=statistic,
        period=period,
    )


class BurstReplyStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, settings: StackSettings, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        tables = Tables(self, "Tables")
        credentials = Credentials(self, "Credentials")
        bus = events.EventBus(self, "Events", event_bus_name=f"{self.stack_name}-events")
        environment = {
            **tables.environment(),
            "BATCH_WINDOW_SECONDS": str(settings.batch_window_seconds),
            "AUTO_CREATE_CONVERSATIONS": "true" if settings.auto_create_conversations else "false",
            "TWILIO_SECRET_NAME": credentials.twilio.secret_name,
            "OPENAI_SECRET_NAME": credentials.openai.secret_name,
            "TWILIO_ACCOUNT_SECRET_PREFIX": f"{credentials.tenant_prefix}twilio/",
            "EVENT_BUS_NAME": bus.event_bus_name,
        }
        functions = Functions(self, "Functions", settings, environment)
        workflow = BatchWorkflow(self, "Workflow", settings, tables, functions)
        webhook = functions[WEBHOOK.logical_id]
        self._grant(tables, credentials, bus, functions, workflow.arn)
        api = WebhookApi(self, "Webhook", settings, webhook)
        Monitoring(self, "Monitoring", workflow.state_machine, api.api, functions)
        events.Rule(
            self,
            "ReconcileSchedule",
            description="Run the reconciler: nothing accepted stays stranded",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[targets.LambdaFunction(functions[RECONCILER.logical_id], retry_attempts=0)],
        )

        CfnOutput(
            self,
            "WhatsAppWebhookUrl",
            value=api.url_of(api.whatsapp),
            description="Twilio: WhatsApp sender webhook",
        )
        CfnOutput(
            self, "SmsWebhookUrl", value=api.url_of(api.sms), description="Twilio: number's messaging webhook"
        )
        CfnOutput(self, "StateMachineArn", value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, "TwilioSecretName", value=credentials.twilio.secret_name)
        CfnOutput(self, "OpenAISecretName", value=credentials.openai.secret_name)
        CfnOutput(self, "TurnsTableName", value=tables[TURNS.logical_id].table_name)
        CfnOutput(self, "EventBusName", value=bus.event_bus_name)
        self.tables, self.functions, self.workflow, self.api = tables, functions, workflow, api

    def _grant(
        self,
        tables: Tables,
        credentials: Credentials,
        bus: events.EventBus,
        functions: Functions,
        state_machine_arn: str,
    ) -> None:
        """Least privilege: each function gets the actions it uses on the tables it uses."""
        conversations, staged = tables[CONVERSATIONS.logical_id], tables[STAGED_MESSAGES.logical_id]
        windows, turns = tables[BATCH_WINDOWS.logical_id], tables[TURNS.logical_id]
        projects = tables[PROJECTS.logical_id]
        tenant_secrets = credentials.tenant_secrets_arn()

        def allow(function_id: str, actions: list[str], resources: list[str]) -> None:
            functions[function_id].add_to_role_policy(
                iam.PolicyStatement(actions=actions, resources=resources)
            )

        def open_windows(function_id: str) -> None:
            allow(function_id, ["dynamodb:PutItem", "dynamodb:DeleteItem"], [windows.table_arn])
            allow(function_id, ["states:StartExecution"], [state_machine_arn])
            functions[function_id].add_environment("STATE_MACHINE_ARN", state_machine_arn)

        # The webhook: find or create the conversation, stage, open the window.
        allow("Webhook", ["dynamodb:Query"], [f"{conversations.table_arn}/index/by_address"])
        allow("Webhook", ["dynamodb:GetItem", "dynamodb:PutItem"], [conversations.table_arn])
        allow("Webhook", ["dynamodb:PutItem"], [staged.table_arn])
        open_windows("Webhook")
        allow("Webhook", ["dynamodb:UpdateItem"], [windows.table_arn])  # count the message in
        allow("Webhook", ["states:SendTaskSuccess"], [state_machine_arn])  # wake on a flush
        allow("Webhook", ["dynamodb:GetItem"], [projects.table_arn])  # the project's rules
        credentials.twilio.grant_read(functions["Webhook"])
        allow("Webhook", ["secretsmanager:GetSecretValue"], [tenant_secrets])

        allow("ParkUntilDue", ["dynamodb:UpdateItem"], [windows.table_arn])
        allow("ParkUntilDue", ["states:SendTaskSuccess"], [state_machine_arn])
        allow("CheckBatchWindow", ["dynamodb:GetItem"], [windows.table_arn])
        allow("AcquireProcessingLock", ["dynamodb:UpdateItem", "dynamodb:GetItem"], [conversations.table_arn])
        allow("MergeStagedMessages", ["dynamodb:BatchGetItem"], [staged.table_arn])
        allow("MergeStagedMessages", ["dynamodb:PutItem"], [turns.table_arn])
        allow("GenerateReply", ["dynamodb:GetItem", "dynamodb:UpdateItem"], [conversations.table_arn])
        allow("GenerateReply", ["dynamodb:GetItem", "dynamodb:PutItem"], [turns.table_arn])
        credentials.openai.grant_read(functions["GenerateReply"])
        allow("GenerateReply", ["secretsmanager:GetSecretValue"], [tenant_secrets])
        allow("SendReply", ["dynamodb:GetItem", "dynamodb:UpdateItem"], [conversations.table_arn])
        allow("SendReply", ["dynamodb:GetItem", "dynamodb:UpdateItem"], [turns.table_arn])
        credentials.twilio.grant_read(functions["SendReply"])
        allow("SendReply", ["secretsmanager:GetSecretValue"], [tenant_secrets])
        allow("RecordTurns", ["dynamodb:BatchWriteItem", "dynamodb:PutItem"], [staged.table_arn])
        allow("RecordTurns", ["dynamodb:UpdateItem", "dynamodb:GetItem"], [turns.table_arn])
        allow("RecordTurns", ["dynamodb:UpdateItem"], [conversations.table_arn])
        allow("AnnounceAnsweredBatch", ["dynamodb:GetItem"], [conversations.table_arn, turns.table_arn])
        bus.grant_put_events_to(functions["AnnounceAnsweredBatch"])
        allow("CloseBatchWindow", ["dynamodb:DeleteItem"], [windows.table_arn])
        allow("CloseBatchWindow", ["dynamodb:Query"], [staged.table_arn])
        open_windows("OpenNextWindow")
        allow("RecordFailedBatch", ["dynamodb:Query", "dynamodb:UpdateItem"], [staged.table_arn])
        allow("RecordFailedBatch", ["dynamodb:UpdateItem"], [turns.table_arn])
        allow("RecordFailedBatch", ["dynamodb:GetItem"], [conversations.table_arn])
        credentials.twilio.grant_read(functions["RecordFailedBatch"])  # the fallback reply
        allow("RecordFailedBatch", ["secretsmanager:GetSecretValue"], [tenant_secrets])
        allow("Reconciler", ["dynamodb:Scan"], [f"{staged.table_arn}/index/pending", windows.table_arn])
        open_windows("Reconciler")
        executions = state_machine_arn.replace(":stateMachine:", ":execution:") + ":*"
        allow("Reconciler", ["states:DescribeExecution"], [executions])
        allow("Reconciler", ["dynamodb:GetItem"], [conversations.table_arn, projects.table_arn])
        NagSuppressions.add_resource_suppressions(
            functions["Reconciler"],
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="The reconciler checks runs of this state machine by name (execution ARNs).",
                    applies_to=[
                        "Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                        f"{self.stack_name}-BatchWindow:*"
                    ],
                )
            ],
            apply_to_children=True,
        )
        NagSuppressions.add_resource_suppressions(
            [functions[f] for f in ("Webhook", "GenerateReply", "SendReply", "RecordFailedBatch")],
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="Tenants' credentials are secrets under one prefix, read by name at run time.",
                    applies_to=[
                        f"Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
                        f"{credentials.tenant_prefix}*"
                    ],
                )
            ],
            apply_to_children=True,
        )
