"""Least privilege, as data: each function may do the actions it uses on the resources
it uses, nothing more. Nothing here is checked against a copy of itself: every AWS call the
functions make in the tests is evaluated against the synthesized template as IAM would
(infra/iam), and grants that no call used are reported."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.constructs.credentials import Credentials
from infra.constructs.functions import Functions
from infra.constructs.tables import Tables
from infra.constructs.tenant_reader import TenantReader
from infra.names import state_machine_name

# function → (actions, resources). Resources name a table ("Conversations"), an index
# ("StagedMessages/index/pending"), the state machine ("state-machine"), its runs
# ("executions"), the deployment's OpenAI key ("secret:openai"), the key of conversation
# ids ("secret:conversation-id-key"), the tenants' Twilio secrets ("secrets:twilio-tenants")
# or the event bus ("bus"). The tenants' own OpenAI keys are read by no function's role:
# only in a session tagged with the tenant (OPENAI_KEY_READERS).
Grants = list[tuple[tuple[str, ...], tuple[str, ...]]]
OPEN_WINDOWS: Grants = [
    (("dynamodb:PutItem", "dynamodb:DeleteItem"), ("BatchWindows",)),
    (("states:StartExecution",), ("state-machine",)),
]
# SendTaskSuccess authorizes no resource: IAM evaluates it against "*" (the Service
# Authorization Reference lists no resource type for it), so a grant on the state machine
# would be denied.
WAKE_RUNS: Grants = [(("states:SendTaskSuccess",), ("*",))]
TWILIO_SECRETS: Grants = [(("secretsmanager:GetSecretValue",), ("secrets:twilio-tenants",))]
# The functions that read a tenant's Twilio secret for a conversation only in a session
# tagged with the tenant (infra/constructs/tenant_reader.py), never with their own role:
# the conversation's tenant is a stored fact where they read it. (The webhook and the
# status callback also read it with their own roles, to check the signature of a claimed
# tenant: docs/adr/0110-tenant-sessions-which-functions-keep-a-wider.md; the status callback's
# template goes out in a session.)
TENANT_SESSION_READERS = (
    "GenerateReply",
    "SendReply",
    "RecordFailedBatch",
    "ConversationCommands",
    "Reconciler",
    "StatusCallback",
)
# The functions that ask OpenAI with a tenant's own key (a conversation's
# `openai_api_key_secret`): read only in a session of the OpenAI reader tagged with the
# tenant; the deployment's key ("secret:openai") with their own roles.
OPENAI_KEY_READERS = ("GenerateReply", "ConversationCommands", "Reconciler")
# The functions that sign tool calls with a tenant's tool-signing secret: read only in a
# session of the tool reader tagged with the tenant.
TOOL_SECRET_READERS = ("CallTools",)
GRANTS: dict[str, Grants] = {
    "Webhook": [
        (("dynamodb:Query",), ("Conversations/index/by_address",)),
        (("dynamodb:GetItem", "dynamodb:PutItem"), ("Conversations",)),
        (("dynamodb:UpdateItem",), ("Conversations",)),  # a hand-off keyword pauses it
        (("dynamodb:PutItem",), ("StagedMessages",)),
        # a replay of a forgotten conversation's message: its tombstone, found by its SID
        (("dynamodb:BatchGetItem",), ("StagedMessages",)),
        *OPEN_WINDOWS,
        (("dynamodb:UpdateItem",), ("BatchWindows",)),  # count the message in
        *WAKE_RUNS,  # wake on a flush
        (("dynamodb:GetItem",), ("Projects",)),  # the project's rules
        (("dynamodb:GetItem",), ("Tenants",)),  # is the account a tenant, and its numbers
        # a tenant's new conversations, counted before one is created (when a ceiling is set)
        (("dynamodb:UpdateItem", "dynamodb:BatchGetItem"), ("UsageCounters",)),
        *TWILIO_SECRETS,
        (("secretsmanager:GetSecretValue",), ("secret:conversation-id-key",)),  # a new conversation's id
    ],
    "StatusCallback": [
        (("dynamodb:GetItem",), ("Tenants",)),  # is the account a tenant, and its numbers
        (("dynamodb:GetItem", "dynamodb:UpdateItem"), ("Conversations",)),  # and its delivery failures
        (
            ("dynamodb:UpdateItem", "dynamodb:GetItem"),
            ("Turns",),
        ),  # the statuses; the template's claim and receipt
        (("dynamodb:PutItem",), ("BatchWindows",)),  # a part due for a resend (63018)
        *TWILIO_SECRETS,  # the claimed tenant's signature (its template: in a tenant session)
    ],
    "WaitForTheBurstToEnd": [
        (("dynamodb:UpdateItem",), ("BatchWindows",)),
        *WAKE_RUNS,
    ],
    "AcquireProcessingLock": [
        (("dynamodb:GetItem",), ("BatchWindows",)),  # re-check the burst's end
        (("dynamodb:UpdateItem", "dynamodb:GetItem"), ("Conversations",)),
    ],
    "MergeStagedMessages": [
        (("dynamodb:BatchGetItem",), ("StagedMessages",)),
        (("dynamodb:PutItem",), ("Turns",)),
        (("dynamodb:Query",), ("Turns",)),  # our recent replies, quoted when a message replies to one
    ],
    "GenerateReply": [
        (("dynamodb:GetItem", "dynamodb:UpdateItem"), ("Conversations",)),
        (("dynamodb:GetItem", "dynamodb:PutItem"), ("Turns",)),
        (("dynamodb:UpdateItem",), ("Turns",)),  # voice notes' transcripts, kept with the user turn
        # the cost limits: counted on their shards, read when a shard is full, tokens checked
        (("dynamodb:UpdateItem", "dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem"), ("UsageCounters",)),
        # the OpenAI request kept on the batch's first message, read again by a retry
        (("dynamodb:BatchGetItem", "dynamodb:UpdateItem"), ("StagedMessages",)),
        (("dynamodb:Query",), ("Turns",)),  # the last reply, to tell a lost request's copies
        (("dynamodb:GetItem",), ("BatchWindows",)),  # fragments counted after the merge (on_newer)
        # the assistant profile in force (Query), and the version a batch pinned (GetItem)
        (("dynamodb:Query", "dynamodb:GetItem"), ("AssistantProfiles",)),
        (("dynamodb:BatchGetItem",), ("ToolCalls",)),  # the outputs of a round's calls
        (("dynamodb:GetItem",), ("Tenants",)),  # the vector stores a profile's knowledge may name
        # the deployment's OpenAI key; a tenant's own: in a tenant session (OPENAI_KEY_READERS)
        (("secretsmanager:GetSecretValue",), ("secret:openai",)),
        # The media people sent and "typing…" use the tenant's Twilio credentials, read
        # through a session of the tenant's own (infra/constructs/tenant_reader.py).
    ],
    "CallTools": [
        (("dynamodb:BatchGetItem",), ("StagedMessages",)),  # the calls kept with the batch's request
        (
            ("dynamodb:GetItem",),
            ("Conversations", "Turns", "AssistantProfiles"),
        ),  # its tenant, pinned profile
        (("dynamodb:UpdateItem",), ("ToolCalls",)),  # each call claimed, its outcome recorded
        # a confirm: true tool's proposal, read and used; the last reply sent (the proposing batch's)
        (("dynamodb:GetItem", "dynamodb:PutItem"), ("ToolCalls",)),
        (("dynamodb:Query",), ("Turns",)),
        # the tenant's tool-signing secret: in a tenant session (TOOL_SECRET_READERS)
    ],
    "SendReply": [
        (("dynamodb:GetItem", "dynamodb:UpdateItem"), ("Conversations", "Turns")),
        (("dynamodb:GetItem",), ("Tenants",)),  # the number's own sender rate (cached)
        (("dynamodb:UpdateItem",), ("UsageCounters",)),  # its sender's turn, before each create
        # the reply's (and its template's) tenant's Twilio credentials: in a tenant session
    ],
    "RecordTurnsAndReleaseLock": [
        (("dynamodb:BatchWriteItem",), ("StagedMessages",)),
        (("dynamodb:UpdateItem", "dynamodb:GetItem"), ("Turns",)),
        (("dynamodb:UpdateItem", "dynamodb:GetItem"), ("Conversations",)),
        (("events:PutEvents",), ("bus",)),  # announce the answered batch
    ],
    "CloseBatchWindow": [
        (("dynamodb:Query",), ("StagedMessages/index/pending",)),  # messages that arrived meanwhile
        (("dynamodb:GetItem",), ("Conversations",)),  # adaptive: the quiet period learned
        *OPEN_WINDOWS,  # close this window, open the next
    ],
    "RecordFailedBatch": [
        (("dynamodb:Query",), ("StagedMessages/index/pending",)),
        (("dynamodb:UpdateItem",), ("StagedMessages",)),
        (("dynamodb:UpdateItem", "dynamodb:GetItem"), ("Turns",)),  # GetItem: the fallback, once
        (("dynamodb:GetItem",), ("Conversations",)),
        # the fallback reply's tenant's Twilio credentials: in a tenant session
    ],
    "ConversationCommands": [
        # the conversation named by its id or its person's address (the tenant's numbers)
        (("dynamodb:GetItem", "dynamodb:UpdateItem"), ("Conversations",)),  # pause, resume
        (("dynamodb:Query",), ("Conversations/index/by_address",)),
        (("dynamodb:GetItem",), ("Tenants",)),
        # a person's reply: its turn, sent once (Send Reply's code), its OpenAI item
        (("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"), ("Turns",)),
        # the command limits: each event's receipt, counted on the counters' shards
        (("dynamodb:UpdateItem", "dynamodb:BatchGetItem"), ("UsageCounters",)),
        # its Twilio credentials: in a tenant session, as Send Reply reads them; the
        # deployment's OpenAI key (a tenant's own: in a tenant session, OPENAI_KEY_READERS)
        (("secretsmanager:GetSecretValue",), ("secret:openai",)),
    ],
    "Reconciler": [
        (("dynamodb:Scan",), ("StagedMessages/index/pending", "BatchWindows")),
        *OPEN_WINDOWS,
        (("states:DescribeExecution",), ("executions",)),
        (("dynamodb:GetItem",), ("Conversations", "Projects")),
        # the parts due for a resend (63018): claimed, found and recorded on the assistant turn
        (("dynamodb:GetItem", "dynamodb:UpdateItem"), ("Turns",)),
        # their Twilio credentials: in a tenant session (TENANT_SESSION_READERS)
        # the turn-text retention (functions/personal_data/retention.py): the tenants' own days,
        # a page of Turns (cut with UpdateItem, above), its cursor, the OpenAI conversation's
        # items deleted with the deployment's key (a tenant's own: OPENAI_KEY_READERS)
        (("dynamodb:Scan",), ("Tenants", "Turns")),
        (("dynamodb:GetItem", "dynamodb:PutItem"), ("UsageCounters",)),
        (("dynamodb:GetItem",), ("BatchWindows",)),
        (("secretsmanager:GetSecretValue",), ("secret:openai",)),
    ],
}
# The functions that start runs, and so are told the state machine's ARN (StateMachineSettings).
STARTS_RUNS = ("Webhook", "CloseBatchWindow", "Reconciler")
# The functions that create conversations, and so are told the key of their ids
# (ConversationIdSettings).
CREATES_CONVERSATIONS = ("Webhook",)


class Permissions(Construct):
    """Attaches GRANTS to the functions' roles, with the reasons cdk-nag asks for."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: Tables,
        credentials: Credentials,
        bus: events.EventBus,
        functions: Functions,
        state_machine_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        arns = {logical_id: table.table_arn for logical_id, table in tables.by_logical_id.items()}
        arns.update(
            {
                "Conversations/index/by_address": f"{arns['Conversations']}/index/by_address",
                "StagedMessages/index/pending": f"{arns['StagedMessages']}/index/pending",
                "state-machine": state_machine_arn,
                "executions": state_machine_arn.replace(":stateMachine:", ":execution:") + ":*",
                "secret:openai": credentials.openai.secret_arn,
                "secret:conversation-id-key": credentials.conversation_id_key.secret_arn,
                "secrets:twilio-tenants": credentials.secrets_under(credentials.twilio_prefix),
                "bus": bus.event_bus_arn,
                "*": "*",
            }
        )
        for function_id, grants in GRANTS.items():
            for actions, resources in grants:
                functions[function_id].add_to_role_policy(
                    iam.PolicyStatement(actions=list(actions), resources=[arns[r] for r in resources])
                )
        functions.give("STATE_MACHINE_ARN", state_machine_arn, STARTS_RUNS)
        name = credentials.conversation_id_key.secret_name
        functions.give("CONVERSATION_ID_KEY_SECRET_NAME", name, CREATES_CONVERSATIONS)
        self._tenant_readers(functions, credentials)
        self._explain(functions, credentials)

    def _tenant_readers(self, functions: Functions, credentials: Credentials) -> None:
        """Three readers, one per prefix: a session for sending reads no OpenAI key nor
        tool-signing secret, and the reverse (functions/stack_names.py). Each reader's role
        is told to the functions whose models hold its setting, which must be its readers."""
        for construct_id, readers, prefix, role_setting, what in (
            (
                "TwilioTenantReader",
                TENANT_SESSION_READERS,
                credentials.twilio_prefix,
                "TWILIO_TENANT_READER_ROLE_ARN",
                "Twilio secrets",
            ),
            (
                "OpenAITenantReader",
                OPENAI_KEY_READERS,
                credentials.openai_prefix,
                "OPENAI_TENANT_READER_ROLE_ARN",
                "own OpenAI keys",
            ),
            (
                "ToolTenantReader",
                TOOL_SECRET_READERS,
                credentials.tool_prefix,
                "TOOL_TENANT_READER_ROLE_ARN",
                "tool-signing secrets",
            ),
        ):
            reader = TenantReader(
                self, construct_id, readers=[functions[f] for f in readers], prefix=prefix, what=what
            )
            functions.give(role_setting, reader.role.role_arn, readers)

    @staticmethod
    def _explain(functions: Functions, credentials: Credentials) -> None:
        stack_name = Stack.of(functions).stack_name
        NagSuppressions.add_resource_suppressions(
            functions["Reconciler"],
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="The reconciler checks runs of this state machine by name (execution ARNs).",
                    applies_to=[
                        "Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
                        f"{state_machine_name(stack_name)}:*"
                    ],
                )
            ],
            apply_to_children=True,
        )
        # the webhook's and the status callback's: a claimed tenant's signature
        readers = [f for f, grants in GRANTS.items() if any("secrets:twilio-tenants" in r for _, r in grants)]
        NagSuppressions.add_resource_suppressions(
            [functions[f] for f in readers],
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="Each tenant's secret is named after its account under one prefix, "
                    "read by name at run time; the prefix holds nothing else.",
                    applies_to=[
                        "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:"
                        f"secret:{credentials.twilio_prefix}*"
                    ],
                )
            ],
            apply_to_children=True,
        )
