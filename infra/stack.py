"""The AWS stack, composed of one construct per file (infra/constructs/). Tables,
functions and the state machine come from the same definitions the local stack uses
(functions/storage/tables.py, functions/registry.py, statemachines/batch_window.asl.json)."""

from __future__ import annotations

import hashlib

from aws_cdk import Aws, CfnOutput, CfnWaitConditionHandle, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from functions.intake.settings import PublicUrlSettings
from functions.public_url import PublicBase
from functions.registry import CONVERSATION_COMMANDS, RECONCILER, STATUS_CALLBACK, WEBHOOK
from functions.storage.tables import ALL_TABLES
from infra.constructs.alarm_topic import AlarmTopic
from infra.constructs.api import WebhookApi
from infra.constructs.api_gateway_account import ApiGatewayAccount
from infra.constructs.conversation_commands import ConversationCommandsRule
from infra.constructs.credentials import Credentials
from infra.constructs.event_bus import AnsweredBatchBusPolicy
from infra.constructs.functions import Functions
from infra.constructs.monitoring import Monitoring
from infra.constructs.permissions import Permissions
from infra.constructs.tables import Tables
from infra.constructs.workflow import BatchWorkflow
from infra.deployment_settings import SettingsRecord
from infra.names import event_bus_name
from infra.stack_settings import StackSettings


class BurstReplyStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, settings: StackSettings, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.settings = settings
        tables = Tables(self, "Tables")
        credentials = Credentials(self, "Credentials")
        bus = events.EventBus(self, "Events", event_bus_name=event_bus_name(self.stack_name))
        # The stack's own names, and the deployment's settings: each function gets those of
        # the models its row declares (functions/registry.py).
        environment = {
            **tables.environment(),
            "OPENAI_SECRET_NAME": credentials.openai.secret_name,
            "TWILIO_TENANT_SECRET_PREFIX": credentials.twilio_prefix,
            "OPENAI_TENANT_SECRET_PREFIX": credentials.openai_prefix,
            "TOOL_TENANT_SECRET_PREFIX": credentials.tool_prefix,
            "EVENT_BUS_NAME": bus.event_bus_name,
        }
        functions = Functions(self, "Functions", settings, environment, settings.functions_environment())
        workflow = BatchWorkflow(self, "Workflow", settings, tables, functions)
        Permissions(
            self,
            "Permissions",
            tables=tables,
            credentials=credentials,
            bus=bus,
            functions=functions,
            state_machine_arn=workflow.arn,
        )
        self._on_the_bus(bus, functions)
        api = WebhookApi(
            self, "Webhook", settings, functions[WEBHOOK.logical_id], functions[STATUS_CALLBACK.logical_id]
        )
        if settings.manage_api_gateway_account_role:
            ApiGatewayAccount(self, "ApiGatewayAccount", stage=api.api.deployment_stage)
        self.public = self._give_public_base(settings, functions, api)
        Monitoring(self, "Monitoring", workflow.state_machine, api.api, functions, edge=api)
        alarms = AlarmTopic(self, "Alarms", alarm_email=settings.alarm_email)
        CfnOutput(self, "AlarmTopicArn", value=alarms.topic.topic_arn, description="every alarm notifies it")
        events.Rule(
            self,
            "ReconcileSchedule",
            description="Run the reconciler: nothing accepted stays stranded",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[targets.LambdaFunction(functions[RECONCILER.logical_id], retry_attempts=0)],
        )
        self._outputs(tables, credentials, bus, workflow, api)
        self.tables, self.functions, self.workflow, self.api = tables, functions, workflow, api

    def _on_the_bus(self, bus: events.EventBus, functions: Functions) -> None:
        """Who may put the service's own events on the bus, and the rule for a helpdesk's commands."""
        policy = AnsweredBatchBusPolicy(
            self, "EventsPolicy", bus=bus, publisher=functions["RecordTurnsAndReleaseLock"]
        )
        CfnOutput(
            self,
            "HelpdeskCommandsPolicyArn",
            value=policy.helpdesk_policy.managed_policy_arn,
            description="a helpdesk's role, tagged tenant=<AccountSid>, attaches it to put its commands",
        )
        commands = functions[CONVERSATION_COMMANDS.logical_id]
        ConversationCommandsRule(self, "ConversationCommands", bus=bus, function=commands)

    @staticmethod
    def _give_public_base(settings: StackSettings, functions: Functions, api: WebhookApi) -> PublicBase:
        """The URL Twilio signs: the API's own (built from its id and the stage name, not
        from the stage resource, which depends on the function) or the configured one
        (WEBHOOK_BASE_URL, TWILIO_CONNECTION_OVERRIDES: PublicUrlSettings); given to the
        functions that read it (those that check Twilio's signatures, and those that give
        Twilio status callbacks)."""
        configured = settings.functions(PublicUrlSettings).public_base()
        public = configured._replace(
            url=configured.url
            or f"https://{api.api.rest_api_id}.execute-api.{Aws.REGION}.{Aws.URL_SUFFIX}/{api.stage_name}"
        )
        functions.give("WEBHOOK_BASE_URL", public.url)
        functions.give("TWILIO_CONNECTION_OVERRIDES", public.overrides)
        return public

    def _outputs(
        self,
        tables: Tables,
        credentials: Credentials,
        bus: events.EventBus,
        workflow: BatchWorkflow,
        api: WebhookApi,
    ) -> None:
        """What the deploy guide and `python -m infra.runs` need: the webhook URLs, the
        secrets to fill in, and every name the functions' settings carry."""
        CfnOutput(
            self, "WhatsAppWebhookUrl", value=api.url_of(api.whatsapp), description="Twilio: WhatsApp sender"
        )
        CfnOutput(self, "SmsWebhookUrl", value=api.url_of(api.sms), description="Twilio: number's messaging")
        CfnOutput(self, "WebhookBaseUrl", value=self.public.url, description="the URL base signatures cover")
        for output, path, where in (
            ("TwilioWhatsAppWebhookUrl", "/whatsapp", "WhatsApp sender"),
            ("TwilioSmsWebhookUrl", "/sms", "number's messaging"),
        ):
            CfnOutput(
                self,
                output,
                value=self.public.given_to_twilio(path),
                description=f"paste in Twilio ({where}): the webhook with its connection overrides",
            )
        CfnOutput(
            self,
            "StatusCallbackUrl",
            value=f"{self.public.url}/twilio/status",
            description="where Twilio reports the messages sent (set on each message)",
        )
        self._record_settings(self.settings.recorded or SettingsRecord.of("", {}))
        CfnOutput(
            self,
            "ConversationIdKeySecretName",
            value=credentials.conversation_id_key.secret_name,
            description="the key of conversation ids, for python -m infra.conversations create",
        )
        self._name_outputs(tables, credentials, bus, workflow)

    def _name_outputs(
        self, tables: Tables, credentials: Credentials, bus: events.EventBus, workflow: BatchWorkflow
    ) -> None:
        """Every name the functions' settings carry (infra/stack_lookup.py reads them)."""
        for output, value in (
            ("StateMachineArn", workflow.state_machine.state_machine_arn),
            ("OpenAISecretName", credentials.openai.secret_name),
            ("TwilioTenantSecretPrefix", credentials.twilio_prefix),
            ("OpenAITenantSecretPrefix", credentials.openai_prefix),
            ("ToolTenantSecretPrefix", credentials.tool_prefix),
            ("EventBusName", bus.event_bus_name),
        ):
            CfnOutput(self, output, value=value)
        for table in ALL_TABLES:
            CfnOutput(
                self,
                f"{table.logical_id}TableName",
                value=tables[table.logical_id].table_name,
                description=f"set {table.env_var} to this",
            )

    def _record_settings(self, record: SettingsRecord) -> None:
        """What the deploy was given, in the output DeploymentSettings (DescribeStacks returns
        it with the stack; `python -m infra.account` compares the next deploy's with it).
        CloudFormation updates no output by itself, only with a change to a resource: a
        resource named after the record (a wait condition handle: no properties, no cost)
        changes with it, so a deploy whose settings changed nothing else still records them."""
        CfnOutput(
            self,
            "DeploymentSettings",
            value=record.to_output(),
            description="what the deploy was given: its settings file, the settings' sha256 and names "
            "(never a value)",
        )
        changes_with_it = hashlib.sha256(record.to_output().encode()).hexdigest()[:16]
        CfnWaitConditionHandle(self, f"DeploymentSettings{changes_with_it}")
