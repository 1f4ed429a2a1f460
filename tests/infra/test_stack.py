"""The synthesized CloudFormation template: resources, least privilege, cdk-nag and
cfn-lint clean, and no drift from the local stack (same ASL file, same tables).

The CDK (with its jsii runtime) and cfn-lint are imported inside the tests that use them:
every pytest-xdist worker collects this module, and only the worker that runs the
synthesized group needs them (tests/unit/design/test_isolation.py keeps it so)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import pytest

from functions.registry import ALL_FUNCTIONS, TASKS
from functions.storage import expressions
from functions.storage.tables import ALL_TABLES
from infra.iam.requests import resource_types
from infra.local import gateway
from infra.local.tables import create_table_request
from infra.names import NAMESPACE, SERVICE, StackSettings
from infra.statemachine import DEFINITION_FILE, placeholders

if TYPE_CHECKING:
    from aws_cdk.assertions import Template

pytestmark = pytest.mark.infra

DEFAULTS = StackSettings(code_directory=None, dependencies_directory=None)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def template(synthesized) -> Template:
    from aws_cdk.assertions import Template

    return Template.from_json(synthesized[1])


def resources(template_json: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template_json["Resources"].items() if v["Type"] == kind}


def logical_id_of(template_json: dict[str, Any], kind: str, path_part: str) -> str:
    matches = [
        k
        for k, v in resources(template_json, kind).items()
        if path_part in v.get("Metadata", {}).get("aws:cdk:path", "")
    ]
    assert len(matches) == 1, (kind, path_part, matches)
    return matches[0]


# --- resources ----------------------------------------------------------------------------


def test_tables_are_on_demand_encrypted_with_point_in_time_recovery(template):
    from aws_cdk.assertions import Match

    template.resource_count_is("AWS::DynamoDB::Table", len(ALL_TABLES))
    template.all_resources_properties(
        "AWS::DynamoDB::Table",
        {
            "BillingMode": "PAY_PER_REQUEST",
            "SSESpecification": {"SSEEnabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )
    for table in ALL_TABLES:
        if table.ttl_attribute:
            template.has_resource_properties(
                "AWS::DynamoDB::Table",
                {
                    "KeySchema": Match.array_with(
                        [{"AttributeName": table.partition_key, "KeyType": "HASH"}]
                    ),
                    "TimeToLiveSpecification": {"AttributeName": table.ttl_attribute, "Enabled": True},
                },
            )


def test_functions_are_arm64_current_python_traced_and_match_the_registry(synthesized, template):
    stack_json = synthesized[1]
    functions = {
        k: v
        for k, v in resources(stack_json, "AWS::Lambda::Function").items()
        if "Functions/" in v["Metadata"]["aws:cdk:path"]
    }
    assert sorted(v["Properties"]["Handler"] for v in functions.values()) == sorted(
        f.handler for f in ALL_FUNCTIONS
    )
    for function in functions.values():
        properties = function["Properties"]
        assert properties["Architectures"] == ["arm64"]
        # Lambda runs the Python the tests run on: they cannot drift apart.
        assert properties["Runtime"] == f"python{sys.version_info.major}.{sys.version_info.minor}"
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert properties["LoggingConfig"]["LogFormat"] == "JSON"
        assert len(properties["Layers"]) == 1
        environment = properties["Environment"]["Variables"]
        assert "POWERTOOLS_SERVICE_NAME" in environment
        assert not any(
            k in environment for k in ("TWILIO_AUTH_TOKEN", "OPENAI_API_KEY")
        )  # secrets by name only


def test_the_local_gateway_has_the_deployed_apis_stage_and_binary_media_types(template):
    """What the local gateway reproduces of the API (infra/local/gateway.py) is read off the
    synthesized template: its stage, and its binary media types (none: forms arrive as text)."""
    template.has_resource_properties("AWS::ApiGateway::Stage", {"StageName": gateway.STAGE})
    (api,) = template.find_resources("AWS::ApiGateway::RestApi").values()
    assert tuple(api["Properties"].get("BinaryMediaTypes", ())) == gateway.BINARY_MEDIA_TYPES


def test_the_api_has_the_two_webhooks_and_the_status_callbacks_throttled_and_access_logged(template):
    from aws_cdk.assertions import Match

    template.has_resource_properties("AWS::ApiGateway::Resource", {"PathPart": "whatsapp"})
    template.has_resource_properties("AWS::ApiGateway::Resource", {"PathPart": "sms"})
    for part in ("twilio", "status", "{conversation}", "{window}", "{message}"):
        template.has_resource_properties("AWS::ApiGateway::Resource", {"PathPart": part})
    template.resource_properties_count_is("AWS::ApiGateway::Method", {"HttpMethod": "POST"}, 3)
    template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "prod",
            "TracingEnabled": True,
            "AccessLogSetting": Match.object_like({"DestinationArn": Match.any_value()}),
            "MethodSettings": Match.array_with(
                [
                    Match.object_like(
                        {
                            "ThrottlingRateLimit": DEFAULTS.api_rate_limit,
                            "ThrottlingBurstLimit": DEFAULTS.api_burst_limit,
                            "DataTraceEnabled": False,
                        }
                    )
                ]
            ),
        },
    )


def test_the_api_is_regional_and_leaves_the_accounts_cloudwatch_role_alone(synthesized, template):
    template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}}
    )
    template.resource_count_is("AWS::ApiGateway::Account", 0)
    for role in resources(synthesized[1], "AWS::IAM::Role").values():
        assert "apigateway.amazonaws.com" not in json.dumps(role["Properties"]["AssumeRolePolicyDocument"])


def test_the_state_machine_logs_under_vendedlogs(synthesized):
    stack_json = synthesized[1]
    log_group = logical_id_of(stack_json, "AWS::Logs::LogGroup", "/Workflow/Logs/")
    name = stack_json["Resources"][log_group]["Properties"]["LogGroupName"]
    assert name == "/aws/vendedlogs/states/BurstReply-BatchWindow"
    (machine,) = resources(stack_json, "AWS::StepFunctions::StateMachine").values()
    (destination,) = machine["Properties"]["LoggingConfiguration"]["Destinations"]
    assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == {"Fn::GetAtt": [log_group, "Arn"]}


def test_the_state_machine_is_standard_traced_and_logged(template):
    from aws_cdk.assertions import Match

    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": Match.object_like({"Level": "ALL", "IncludeExecutionData": False}),
        },
    )


def test_secrets_alarms_bus_and_outputs_exist(template):
    # the OpenAI key and the key of conversation ids; the tenants' are not the stack's
    template.resource_count_is("AWS::SecretsManager::Secret", 2)
    template.resource_count_is("AWS::Events::EventBus", 1)
    template.resource_count_is("AWS::CloudWatch::Alarm", 22)
    for name in (
        "UndeliveredReplies",
        "FailedRuns",
        "ThrottledRuns",
        "WebhookThrottles",
        "TaskThrottles1",
        "Webhook5xx",
        "Webhook4xx",
        "WebhooksRefused",
        "OldestPendingMessage",
        "AIQuotaExhausted",
        "AIModelUnavailable",
        "AICredentialsRefused",
        "TwilioCredentialsRefused",
        "DeadLetteredBatches",
        "ToolCallsInDoubt",
        "TenantCeilingReached",
        "AICallsCeilingReached",
        "TokenCeilingReached",
        "CostLimitReached",
        "EdgeThrottled",
        "UnsignedFloodBlocked",
    ):
        assert any(name in k for k in template.find_resources("AWS::CloudWatch::Alarm"))
    outputs = template.to_json()["Outputs"]
    for output in (
        "WhatsAppWebhookUrl",
        "SmsWebhookUrl",
        "StateMachineArn",
        "WebhookBaseUrl",
        "TwilioWhatsAppWebhookUrl",
        "TwilioSmsWebhookUrl",
        "StatusCallbackUrl",
        "OpenAISecretName",
        "TwilioTenantSecretPrefix",
        "OpenAITenantSecretPrefix",
        "ToolTenantSecretPrefix",
        "EventBusName",
        "AlarmTopicArn",
        *(f"{t.logical_id}TableName" for t in ALL_TABLES),  # what infra.runs and the functions read
    ):
        assert output in outputs


def _alarm_topic(stack_json: dict[str, Any]) -> str:
    (topic,) = resources(stack_json, "AWS::SNS::Topic")
    return topic


def test_every_alarm_notifies_the_alarm_topic_when_it_fires_and_when_it_clears(synthesized):
    """Every alarm the template holds, whoever added it."""
    stack_json = synthesized[1]
    topic = {"Ref": _alarm_topic(stack_json)}
    alarms = resources(stack_json, "AWS::CloudWatch::Alarm")
    assert alarms
    for logical_id, alarm in alarms.items():
        properties = alarm["Properties"]
        assert properties.get("AlarmActions") == [topic], logical_id
        assert properties.get("OKActions") == [topic], logical_id
        assert properties.get("ActionsEnabled", True) is True, logical_id


def test_the_alarm_topic_is_encrypted_ssl_only_and_open_to_this_accounts_alarms(synthesized):
    stack_json = synthesized[1]
    topic_id = _alarm_topic(stack_json)
    (key_id,) = resources(stack_json, "AWS::KMS::Key")
    key = stack_json["Resources"][key_id]["Properties"]
    assert stack_json["Resources"][topic_id]["Properties"]["KmsMasterKeyId"] == {
        "Fn::GetAtt": [key_id, "Arn"]
    }
    assert key["EnableKeyRotation"] is True
    cloudwatch = {"Service": "cloudwatch.amazonaws.com"}
    assert any(
        s["Effect"] == "Allow"
        and s["Principal"] == cloudwatch
        and set(s["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
        for s in key["KeyPolicy"]["Statement"]
    )
    (policy,) = resources(stack_json, "AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )
    (publish,) = [s for s in statements if s.get("Principal") == cloudwatch]
    assert (publish["Effect"], publish["Action"]) == ("Allow", "sns:Publish")
    assert publish["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":alarm:*" in json.dumps(publish["Condition"]["ArnLike"]["aws:SourceArn"])


def test_an_email_hears_the_alarms_only_when_the_deployment_names_one(synthesized, tmp_path):
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk.assertions import Template

    from infra.app import build_app

    assert resources(synthesized[1], "AWS::SNS::Subscription") == {}
    (tmp_path / "code" / "functions").mkdir(parents=True)
    (tmp_path / "dependencies" / "python").mkdir(parents=True)
    _, stack = build_app(
        tmp_path / "code",
        tmp_path / "dependencies",
        outdir=str(tmp_path / "cdk.out"),
        context={"alarm_email": "oncall@example.com"},
    )
    # An alarm added anywhere, after the topic, gets its actions too.
    metric = cloudwatch.Metric(namespace="Elsewhere", metric_name="Added")
    cloudwatch.Alarm(stack.api, "AddedLater", metric=metric, threshold=1, evaluation_periods=1)
    stack_json = Template.from_stack(stack).to_json()
    added = logical_id_of(stack_json, "AWS::CloudWatch::Alarm", "/AddedLater/")
    assert stack_json["Resources"][added]["Properties"]["AlarmActions"] == [{"Ref": _alarm_topic(stack_json)}]
    (subscription,) = resources(stack_json, "AWS::SNS::Subscription").values()
    assert subscription["Properties"] == {
        "Protocol": "email",
        "Endpoint": "oncall@example.com",
        "TopicArn": {"Ref": _alarm_topic(stack_json)},
    }


def test_an_alarm_email_that_is_not_one_is_refused_at_synth():
    from pathlib import Path

    from infra.names import StackSettings

    with pytest.raises(ValueError, match="alarm_email"):
        StackSettings.from_context({"alarm_email": "oncall at example"}.get, Path("."), Path("."))
    assert StackSettings.from_context({"alarm_email": "a@b.example"}.get, Path("."), Path(".")).alarm_email
    camel = StackSettings.from_context({"alarmEmail": "a@b.example"}.get, Path("."), Path("."))
    assert camel.alarm_email == "a@b.example"  # CDK's own spelling of the same setting


def _alarm(stack_json: dict[str, Any], name: str) -> dict[str, Any]:
    return stack_json["Resources"][
        logical_id_of(stack_json, "AWS::CloudWatch::Alarm", f"/Monitoring/{name}/")
    ]["Properties"]


def test_refused_webhooks_alarm_on_the_metric_the_webhook_emits(synthesized):
    """The namespace and dimension are the ones Powertools gives the webhook's metrics
    (tests/e2e/intake/test_webhook_metrics.py reads them from the emitted EMF)."""
    properties = _alarm(synthesized[1], "WebhooksRefused")
    assert (properties["Namespace"], properties["MetricName"]) == (NAMESPACE, "WebhooksRefused")
    assert properties["Dimensions"] == [{"Name": "service", "Value": SERVICE}]
    assert (properties["Statistic"], properties["Period"], properties["Threshold"]) == ("Sum", 300, 5)
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


@pytest.mark.parametrize(
    ("alarm", "metric", "threshold"), [("Webhook4xx", "4XXError", 5), ("Webhook5xx", "5XXError", 1)]
)
def test_the_apis_4xx_and_5xx_are_alarmed_on_its_stage(synthesized, alarm, metric, threshold):
    stack_json = synthesized[1]
    properties = _alarm(stack_json, alarm)
    api = stack_json["Resources"][logical_id_of(stack_json, "AWS::ApiGateway::RestApi", "/Webhook/Api/")]
    assert (properties["Namespace"], properties["MetricName"]) == ("AWS/ApiGateway", metric)
    dimensions = {d["Name"]: d["Value"] for d in properties["Dimensions"]}
    assert dimensions["ApiName"] == api["Properties"]["Name"] == "BurstReply-webhooks"
    assert dimensions["Stage"] == {
        "Ref": logical_id_of(stack_json, "AWS::ApiGateway::Stage", "/Webhook/Api/")
    }
    assert (properties["Statistic"], properties["Threshold"]) == ("Sum", threshold)


# --- least privilege ----------------------------------------------------------------------


def _statements(stack_json: dict[str, Any], role_path: str) -> list[dict[str, Any]]:
    statements = []
    for policy in resources(stack_json, "AWS::IAM::Policy").values():
        if role_path in policy["Metadata"]["aws:cdk:path"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    actions: set[str] = set()
    for statement in statements:
        value = statement["Action"]
        actions |= {value} if isinstance(value, str) else set(value)
    return actions


# Least privilege is evaluated, not copied: every call the functions make in the tests is
# judged against these roles by infra/iam (tests/conftest.py), and so are the state
# machine's own integrations (tests/infra/test_iam.py). What is left here are properties of
# the grants themselves.


def _roles(stack_json: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each function's, and the state machine's, policy statements."""
    roles = {f.logical_id: _statements(stack_json, f"/Functions/{f.logical_id}/") for f in ALL_FUNCTIONS}
    roles["StateMachine"] = _statements(stack_json, "/Workflow/BatchWindow/Role/")
    return roles


@pytest.mark.parametrize("principal", [*(f.logical_id for f in ALL_FUNCTIONS), "StateMachine"])
def test_a_role_grants_every_resource_only_for_actions_that_name_none(synthesized, principal):
    """A `*` resource only where AWS's Service Authorization Reference lists no resource
    type for the action (X-Ray's traces, Logs' delivery, SendTaskSuccess's task token)."""
    for statement in _roles(synthesized[1])[principal]:
        if statement["Resource"] == "*":
            for action in _actions([statement]):
                assert resource_types(action) == [], (principal, action)


def _secret_statements(stack_json: dict[str, Any], function: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _statements(stack_json, f"/Functions/{function}/")
        if any(a.startswith("secretsmanager:") for a in _actions([s]))
    ]


@pytest.mark.parametrize(
    ("function", "prefixes"),
    [
        ("Webhook", ["BurstReply/tenants/twilio/*"]),
        ("StatusCallback", ["BurstReply/tenants/twilio/*"]),
        # Twilio's and the tenants' OpenAI keys, for these: through the tenant readers only
        ("SendReply", []),
        ("RecordFailedBatch", []),
        ("Reconciler", []),  # a part due for a resend after 63018; retention's OpenAI items
        ("GenerateReply", []),
        ("ConversationCommands", []),
    ],
)
def test_tenant_secrets_are_readable_under_their_own_prefix_only(synthesized, function, prefixes):
    """Each statement's resources, rendered: the webhook and the status callback get the
    Twilio prefix and nothing broader (a claimed tenant's signature), the OpenAI readers
    the deployment's key (by Ref); no role reads a tenant's OpenAI key, and the others read
    no tenant's secret with their own role: they read a tenant's Twilio token, or its own
    OpenAI key, in a session of a tenant reader (tests/infra/test_iam.py). (The key of
    conversation ids, which the webhook reads too: the test below.)"""
    stack_json = synthesized[1]
    openai_key = logical_id_of(stack_json, "AWS::SecretsManager::Secret", "/Credentials/OpenAI/")
    id_key = logical_id_of(stack_json, "AWS::SecretsManager::Secret", "/Credentials/ConversationIdKey/")
    patterns, refs = [], []
    for statement in _secret_statements(stack_json, function):
        assert _actions([statement]) == {"secretsmanager:GetSecretValue"}
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        for resource in resources:
            if resource == {"Ref": openai_key}:
                refs.append(resource)
                continue
            if resource == {"Ref": id_key}:
                continue
            parts = resource["Fn::Join"][1]
            assert parts[0] == "arn:" and ":secretsmanager:" in parts and ":secret:" in parts[-1], parts
            patterns.append(parts[-1].split(":secret:", 1)[1])
    assert patterns == prefixes
    reads_openai = function in ("GenerateReply", "ConversationCommands", "Reconciler")
    assert refs == ([{"Ref": openai_key}] if reads_openai else [])


def test_only_the_functions_that_create_conversations_read_the_key_of_their_ids(synthesized):
    """The key is a secret of its own, generated; the webhook alone may read it, that secret
    only, and is the one function told its name."""
    from infra.constructs.permissions import CREATES_CONVERSATIONS

    stack_json = synthesized[1]
    id_key = logical_id_of(stack_json, "AWS::SecretsManager::Secret", "/Credentials/ConversationIdKey/")
    generated = stack_json["Resources"][id_key]["Properties"]["GenerateSecretString"]
    assert (generated["PasswordLength"], generated["ExcludePunctuation"]) == (64, True)
    reading = {
        f.logical_id: [
            s
            for s in _secret_statements(stack_json, f.logical_id)
            if {"Ref": id_key} in _listed(s["Resource"])
        ]
        for f in ALL_FUNCTIONS
    }
    told = {
        f.logical_id
        for f in ALL_FUNCTIONS
        if "CONVERSATION_ID_KEY_SECRET_NAME" in _environment(stack_json, f.logical_id)
    }
    assert {f for f, statements in reading.items() if statements} == told == set(CREATES_CONVERSATIONS)
    assert told == {"Webhook"}
    (statement,) = reading["Webhook"]
    assert statement["Resource"] == {"Ref": id_key}  # that one secret, no pattern
    assert _actions([statement]) == {"secretsmanager:GetSecretValue"}


def test_the_key_of_conversation_ids_is_named_by_an_output_for_the_operators_create(synthesized):
    """`python -m infra.conversations create` draws ids as the webhook does: it finds the
    key's secret by this output (infra/stack_lookup.py), never its value."""
    from infra.stack_lookup import OUTPUTS

    stack_json = synthesized[1]
    id_key = logical_id_of(stack_json, "AWS::SecretsManager::Secret", "/Credentials/ConversationIdKey/")
    output = stack_json["Outputs"]["ConversationIdKeySecretName"]["Value"]
    assert {"Ref": id_key} in _nested(output)
    assert OUTPUTS["ConversationIdKeySecretName"] == "CONVERSATION_ID_KEY_SECRET_NAME"


def _nested(value: Any) -> list[Any]:
    """Every value inside a template expression, itself included."""
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [value, *(v for item in inner for v in _nested(item))]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_webhook_checks_signatures_against_the_apis_own_url(synthesized):
    stack_json = synthesized[1]
    (webhook,) = [
        v
        for v in resources(stack_json, "AWS::Lambda::Function").values()
        if "/Functions/Webhook/" in v["Metadata"]["aws:cdk:path"]
    ]
    base = webhook["Properties"]["Environment"]["Variables"]["WEBHOOK_BASE_URL"]
    api = logical_id_of(stack_json, "AWS::ApiGateway::RestApi", "/Webhook/Api/")
    assert base["Fn::Join"][1][:2] == ["https://", {"Ref": api}]
    assert base["Fn::Join"][1][-1].endswith("/prod")
    assert stack_json["Outputs"]["WebhookBaseUrl"]["Value"] == base


def test_only_the_announcing_function_may_put_the_services_own_events_on_the_bus(synthesized):
    stack_json = synthesized[1]
    statements = [
        p["Properties"]["Statement"] for p in resources(stack_json, "AWS::Events::EventBusPolicy").values()
    ]
    (statement,) = [s for s in statements if s["Sid"].endswith("OnlyTheRecordingFunctionPublishes")]
    role = logical_id_of(stack_json, "AWS::IAM::Role", "/Functions/RecordTurnsAndReleaseLock/ServiceRole/")
    assert (statement["Effect"], statement["Action"], statement["Principal"]) == (
        "Deny",
        "events:PutEvents",
        {"AWS": "*"},
    )
    assert statement["Condition"] == {
        "ArnNotEquals": {"aws:PrincipalArn": {"Fn::GetAtt": [role, "Arn"]}},
        "StringEquals": {"events:source": "burst-reply"},  # a helpdesk's commands are its own
    }
    bus = logical_id_of(stack_json, "AWS::Events::EventBus", "/Events/")
    assert statement["Resource"] == {"Fn::GetAtt": [bus, "Arn"]}


# --- checks -------------------------------------------------------------------------------


def test_cdk_nag_aws_solutions_finds_nothing_unsuppressed(synthesized):
    from aws_cdk.assertions import Annotations, Match

    stack = synthesized[0]
    errors = Annotations.from_stack(stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in errors + warnings] == []


def test_every_suppression_gives_its_reason(synthesized):
    for resource in synthesized[1]["Resources"].values():
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
            assert len(rule["reason"]) >= 20, rule


def test_cfn_lint_finds_nothing(synthesized):
    from cfnlint.api import ManualArgs, lint

    # W3005 (a DependsOn also implied by a GetAtt) is how CDK orders a function after its
    # role's policy; it is harmless and not ours to change.
    config = ManualArgs(regions=["us-east-1"], ignore_checks=["W3005"])
    matches = lint(json.dumps(synthesized[1]), config=config)
    assert [str(m) for m in matches] == []


# --- no drift -----------------------------------------------------------------------------


def test_the_deployed_state_machine_is_the_asl_file_with_its_substitutions(synthesized):
    stack_json = synthesized[1]
    (machine,) = resources(stack_json, "AWS::StepFunctions::StateMachine").values()
    properties = machine["Properties"]
    # CDK uploads the file as an asset: cdk.out/asset.<key>
    uploaded = synthesized[2] / f"asset.{properties['DefinitionS3Location']['Key']}"
    assert uploaded.read_text() == DEFINITION_FILE.read_text()
    substitutions = properties["DefinitionSubstitutions"]
    assert set(substitutions) == placeholders()
    for table in ALL_TABLES:
        if table.placeholder not in substitutions:
            continue  # a table the definition does not name
        assert substitutions[table.placeholder] == {
            "Ref": logical_id_of(stack_json, "AWS::DynamoDB::Table", f"/Tables/{table.logical_id}/")
        }
    for task in TASKS:
        function_id = logical_id_of(stack_json, "AWS::Lambda::Function", f"/Functions/{task.logical_id}/")
        assert substitutions[task.placeholder] == {"Fn::GetAtt": [function_id, "Arn"]}
    for name, expression in expressions.SUBSTITUTIONS.items():  # the same constants as the Python code
        assert substitutions[name] == expression


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.logical_id)
def test_the_local_tables_match_the_deployed_ones(synthesized, table):
    stack_json = synthesized[1]
    deployed = stack_json["Resources"][
        logical_id_of(stack_json, "AWS::DynamoDB::Table", f"/Tables/{table.logical_id}/")
    ]
    properties = deployed["Properties"]
    local = create_table_request(table)
    assert properties["KeySchema"] == local["KeySchema"]
    assert sorted(properties["AttributeDefinitions"], key=str) == sorted(
        local["AttributeDefinitions"], key=str
    )
    deployed_indexes = [
        {"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]}
        for i in properties.get("GlobalSecondaryIndexes", [])
    ]
    assert deployed_indexes == local.get("GlobalSecondaryIndexes", [])
    assert properties["BillingMode"] == local["BillingMode"]


def test_the_reconciler_runs_every_minute(synthesized):
    stack_json = synthesized[1]
    (rule,) = [
        r
        for r in resources(stack_json, "AWS::Events::Rule").values()
        if "ScheduleExpression" in r["Properties"]
    ]
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    reconciler = logical_id_of(stack_json, "AWS::Lambda::Function", "/Functions/Reconciler/")
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [reconciler, "Arn"]}


def test_a_helpdesks_commands_on_the_bus_go_to_their_function(synthesized):
    stack_json = synthesized[1]
    (rule,) = [
        r for r in resources(stack_json, "AWS::Events::Rule").values() if "EventPattern" in r["Properties"]
    ]
    commands = logical_id_of(stack_json, "AWS::Lambda::Function", "/Functions/ConversationCommands/")
    bus = logical_id_of(stack_json, "AWS::Events::EventBus", "/Events/")
    assert rule["Properties"]["EventBusName"] == {"Ref": bus}
    assert rule["Properties"]["EventPattern"] == {
        "detail-type": ["conversation.pause", "conversation.resume", "conversation.reply"]
    }
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [commands, "Arn"]}


def _environment(stack_json: dict[str, Any], function: str) -> dict[str, Any]:
    (found,) = [
        v
        for v in resources(stack_json, "AWS::Lambda::Function").values()
        if f"/Functions/{function}/" in v["Metadata"]["aws:cdk:path"]
    ]
    return found["Properties"]["Environment"]["Variables"]


def test_urls_given_to_twilio_carry_the_connection_overrides_that_make_it_retry_a_5xx(synthesized):
    stack_json = synthesized[1]
    base = _environment(stack_json, "Webhook")["WEBHOOK_BASE_URL"]
    for function in ("Webhook", "StatusCallback", "SendReply", "RecordFailedBatch"):
        environment = _environment(stack_json, function)
        assert environment["WEBHOOK_BASE_URL"] == base, function
        assert environment["TWILIO_CONNECTION_OVERRIDES"] == "rc=5&rp=all", function
    outputs = stack_json["Outputs"]
    for output, path in (("TwilioWhatsAppWebhookUrl", "/whatsapp"), ("TwilioSmsWebhookUrl", "/sms")):
        parts = outputs[output]["Value"]["Fn::Join"][1]
        assert parts[:2] == base["Fn::Join"][1][:2] and parts[-1].endswith(f"/prod{path}#rc=5&rp=all")
    assert outputs["StatusCallbackUrl"]["Value"]["Fn::Join"][1][-1].endswith("/prod/twilio/status")


def test_a_configured_base_url_with_a_fragment_gives_the_overrides():
    from pathlib import Path

    from infra.names import StackSettings

    settings = StackSettings(Path("."), Path("."), webhook_base_url="https://hooks.example/b/#rc=3&rp=5xx")
    assert settings.public_base() == ("https://hooks.example/b", "rc=3&rp=5xx")
    assert StackSettings(Path("."), Path(".")).public_base() == ("", "rc=5&rp=all")
