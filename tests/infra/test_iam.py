"""IAM, evaluated (infra/iam): what a recorded call asks IAM for, and IAM's answer under a
role's policies. The small templates here are CloudFormation as CDK writes it; the test
run itself evaluates every call the functions made against the real synthesized template
(tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.registry import TASKS
from infra.iam import evaluate_recording
from infra.iam.template import ACCOUNT, REGION, SECRET_SUFFIX
from infra.local.aws_calls import AwsCall, Recording, names_of, naming_settings

pytestmark = pytest.mark.infra

LOCAL = {"STAGED_MESSAGES_TABLE": "StagedMessages", "STATE_MACHINE_ARN": "arn:local:machine"}
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/staged-prod"
REQUIRED = {
    "CONVERSATIONS_TABLE": "c",
    "BATCH_WINDOWS_TABLE": "b",
    "TURNS_TABLE": "t",
    "PROJECTS_TABLE": "p",
    "TENANTS_TABLE": "te",
    "USAGE_COUNTERS_TABLE": "u",
    "ASSISTANT_PROFILES_TABLE": "ap",
    "TOOL_CALLS_TABLE": "tc",
    "EVENT_BUS_NAME": "bus",
}


def template(*statements: dict[str, Any]) -> dict[str, Any]:
    """One function, its role, and a policy of `statements` on that role."""
    return {
        "Resources": {
            "Staged": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "staged-prod"}},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Policy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": list(statements)},
                    "Roles": [{"Ref": "Role"}],
                },
            },
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Metadata": {"aws:cdk:path": "BurstReply/Functions/CloseBatchWindow/Resource"},
                "Properties": {
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Environment": {
                        "Variables": {
                            **REQUIRED,
                            "STAGED_MESSAGES_TABLE": {"Ref": "Staged"},
                            "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:m",
                        }
                    },
                },
            },
        }
    }


def allow(action: str, resource: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource}


def call(operation: str, service: str = "dynamodb", **params: Any) -> AwsCall:
    return AwsCall("CloseBatchWindow", service, operation, names_of(service, operation, params))


def decide(tmpl: dict[str, Any], *calls: AwsCall) -> list[str]:
    report = evaluate_recording(tmpl, Recording({**REQUIRED, **LOCAL}, list(calls)))
    return [f"{r.action} {r.resource}: {why}" for r, why in report.denied] + report.unmapped


QUERY_PENDING = call("Query", TableName="StagedMessages", IndexName="pending")


def test_a_query_on_an_index_is_denied_by_a_grant_on_its_table_alone():
    assert decide(template(allow("dynamodb:Query", {"Fn::GetAtt": ["Staged", "Arn"]})), QUERY_PENDING) == [
        f"dynamodb:Query {TABLE_ARN}/index/pending: no statement allows it"
    ]
    on_index = allow(
        "dynamodb:Query", {"Fn::Join": ["", [{"Fn::GetAtt": ["Staged", "Arn"]}, "/index/pending"]]}
    )
    assert decide(template(on_index), QUERY_PENDING) == []


def test_send_task_success_names_no_resource_so_a_grant_on_the_state_machine_is_denied():
    wake = call("SendTaskSuccess", "states", taskToken="t", output="{}")
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:m"
    assert decide(template(allow("states:SendTaskSuccess", machine)), wake) == [
        "states:SendTaskSuccess *: no statement allows it"
    ]
    assert decide(template(allow("states:SendTaskSuccess", "*")), wake) == []


def test_an_explicit_deny_wins_and_actions_match_without_regard_to_case():
    on_index = f"{TABLE_ARN}/index/*"
    assert decide(template(allow("DynamoDB:query", on_index)), QUERY_PENDING) == []
    deny = {"Effect": "Deny", "Action": "dynamodb:*", "Resource": "*"}
    assert decide(template(allow("dynamodb:Query", on_index), deny), QUERY_PENDING) == [
        f"dynamodb:Query {TABLE_ARN}/index/pending: explicitly denied"
    ]


def test_each_item_of_a_transaction_needs_its_own_action():
    transaction = call(
        "TransactWriteItems",
        TransactItems=[
            {"Update": {"TableName": "StagedMessages"}},
            {"ConditionCheck": {"TableName": "StagedMessages"}},
        ],
    )
    assert decide(template(allow("dynamodb:UpdateItem", TABLE_ARN)), transaction) == [
        f"dynamodb:ConditionCheckItem {TABLE_ARN}: no statement allows it"
    ]


def test_a_resource_the_deployed_function_is_not_told_of_is_reported():
    assert decide(template(allow("dynamodb:*", "*")), call("GetItem", TableName="SomeOtherTable")) == [
        "CloseBatchWindow: GetItem: no setting of the deployed function names 'SomeOtherTable'"
    ]


def test_a_condition_the_evaluator_cannot_judge_fails_the_evaluation_rather_than_passing():
    conditional = {**allow("dynamodb:Query", "*"), "Condition": {"ArnLike": {"aws:SourceArn": "x"}}}
    (line,) = decide(template(conditional), QUERY_PENDING)
    assert "cannot be evaluated here" in line


def test_a_grant_no_call_used_is_reported():
    report = evaluate_recording(
        template(allow("dynamodb:Query", f"{TABLE_ARN}/index/pending"), allow("dynamodb:PutItem", TABLE_ARN)),
        Recording({**REQUIRED, **LOCAL}, [QUERY_PENDING]),
    )
    assert report.ok
    assert report.unused == [
        "CloseBatchWindow may, and no recorded call did: dynamodb:PutItem on table/staged-prod"
    ]


def test_the_state_machines_own_integrations_are_allowed_by_its_role(synthesized):
    """Read from the deployed definition: each task's Lambda, the pending index's query,
    the lock's release and the window's deletion."""
    report = evaluate_recording(synthesized[1], Recording({}, []))
    assert [r for r, _ in report.denied] == []
    invoked = {r.resource for r in report.evaluated if r.action == "lambda:InvokeFunction"}
    assert len(invoked) == len(TASKS)
    assert any(
        r.resource.endswith("/index/pending") for r in report.evaluated if r.action == "dynamodb:Query"
    )


def test_a_bus_policy_denying_everyone_but_one_role_is_judged_by_its_condition():
    tmpl = template(allow("events:PutEvents", "*"))
    tmpl["Resources"]["Bus"] = {"Type": "AWS::Events::EventBus", "Properties": {"Name": "prod-events"}}
    tmpl["Resources"]["Fn"]["Properties"]["Environment"]["Variables"]["EVENT_BUS_NAME"] = {"Ref": "Bus"}
    only = {"ArnNotEquals": {"aws:PrincipalArn": "arn:aws:iam::123456789012:role/announcer"}}
    tmpl["Resources"]["BusPolicy"] = {
        "Type": "AWS::Events::EventBusPolicy",
        "Properties": {
            "EventBusName": {"Ref": "Bus"},
            "Statement": {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "events:PutEvents",
                          "Resource": {"Fn::GetAtt": ["Bus", "Arn"]}, "Condition": only},
        },
    }  # fmt: skip
    announce = call("PutEvents", "events", Entries=[{"EventBusName": "bus"}])
    bus = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/prod-events"
    assert decide(tmpl, announce) == [f"events:PutEvents {bus}: explicitly denied"]
    tmpl["Resources"]["Role"]["Properties"]["RoleName"] = "announcer"
    assert decide(tmpl, announce) == []


# --- a role assumed for one tenant ------------------------------------------------------
READER = "arn:local:tenant-reader"
OPENAI_READER = "arn:local:openai-tenant-reader"
TOOL_READER = "arn:local:tool-tenant-reader"
TENANT_A, TENANT_B = "AC" + "a" * 32, "AC" + "b" * 32
# What the local stack names, by the settings the functions read (defaults included).
LOCAL_NAMES = naming_settings(
    {
        **REQUIRED,
        **LOCAL,
        "TWILIO_TENANT_READER_ROLE_ARN": READER,
        "OPENAI_TENANT_READER_ROLE_ARN": OPENAI_READER,
        "TOOL_TENANT_READER_ROLE_ARN": TOOL_READER,
    }
)


def as_function(function: str, operation: str, service: str, session: tuple = (), **params: Any) -> AwsCall:
    return AwsCall(function, service, operation, names_of(service, operation, params), session)


def assume(function: str = "GenerateReply", role: str = READER, **tags: str) -> AwsCall:
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    return as_function(function, "AssumeRole", "sts", RoleArn=role, RoleSessionName="s", Tags=tag_list)


def read_secret(
    tenant: str,
    session_tenant: str | None,
    suffix: str = "",
    *,
    function: str = "GenerateReply",
    role: str = READER,
    prefix_setting: str = "TWILIO_TENANT_SECRET_PREFIX",
) -> AwsCall:
    session = (("role", role), ("tag:tenant", session_tenant)) if session_tenant else ()
    prefix = LOCAL_NAMES[prefix_setting]
    return as_function(
        function, "GetSecretValue", "secretsmanager", session, SecretId=prefix + tenant + suffix
    )


def refusals(template_json: dict[str, Any], *calls: AwsCall) -> list[tuple[str, str, str]]:
    """(action, the resource's last part, why) for each request refused; a call whose
    function is not told the resource's name is refused too."""
    report = evaluate_recording(template_json, Recording(LOCAL_NAMES, list(calls)))
    unmapped = [("", "", line) for line in report.unmapped]
    return [(r.action, r.resource.rsplit("/", 1)[-1], why) for r, why in report.denied] + unmapped


def test_generate_reply_reads_a_tenants_twilio_token_only_in_a_session_tagged_with_that_tenant(synthesized):
    template_json = synthesized[1]
    allowed = [
        assume(tenant=TENANT_A),
        read_secret(TENANT_A, TENANT_A),
        read_secret(TENANT_A, TENANT_A, "/x"),
    ]
    assert refusals(template_json, *allowed) == []

    assert refusals(template_json, read_secret(TENANT_B, TENANT_A)) == [
        ("secretsmanager:GetSecretValue", f"{TENANT_B}{SECRET_SUFFIX}", "no statement allows it")
    ]
    assert refusals(template_json, read_secret(TENANT_A, None)) == [  # with Generate Reply's own role
        ("secretsmanager:GetSecretValue", f"{TENANT_A}{SECRET_SUFFIX}", "no statement allows it")
    ]


def read_openai_key(function: str, tenant: str, session_tenant: str | None, suffix: str = "") -> AwsCall:
    return read_secret(
        tenant,
        session_tenant,
        suffix,
        function=function,
        role=OPENAI_READER,
        prefix_setting="OPENAI_TENANT_SECRET_PREFIX",
    )


OPENAI_KEY_READERS = ("GenerateReply", "ConversationCommands", "Reconciler")  # Reconciler: retention


@pytest.mark.parametrize("reader", OPENAI_KEY_READERS)
def test_a_tenants_own_openai_key_is_read_only_in_a_session_tagged_with_that_tenant(synthesized, reader):
    template_json = synthesized[1]
    allowed = [
        assume(reader, OPENAI_READER, tenant=TENANT_A),
        read_openai_key(reader, TENANT_A, TENANT_A),
        read_openai_key(reader, TENANT_A, TENANT_A, "/support"),
    ]
    assert refusals(template_json, *allowed) == []

    assert refusals(template_json, read_openai_key(reader, TENANT_B, TENANT_A, "/support")) == [
        ("secretsmanager:GetSecretValue", f"support{SECRET_SUFFIX}", "no statement allows it")
    ]
    assert refusals(template_json, read_openai_key(reader, TENANT_A, None, "/support")) == [  # its own role
        ("secretsmanager:GetSecretValue", f"support{SECRET_SUFFIX}", "no statement allows it")
    ]
    assert refusals(template_json, read_openai_key(reader, TENANT_A, None)) == [
        ("secretsmanager:GetSecretValue", f"{TENANT_A}{SECRET_SUFFIX}", "no statement allows it")
    ]


def test_the_openai_reader_is_assumed_only_by_the_functions_that_ask_openai(synthesized):
    trust = "the role's trust policy does not allow it"
    for other in ("SendReply", "RecordFailedBatch", "Webhook", "StatusCallback", "CallTools"):
        assert trust in {
            r[2] for r in refusals(synthesized[1], assume(other, OPENAI_READER, tenant=TENANT_A))
        }
    (untagged,) = refusals(synthesized[1], assume("GenerateReply", OPENAI_READER))
    assert untagged[2] == trust


def test_a_twilio_tenant_session_reads_no_openai_key_and_the_reverse(synthesized):
    """Two readers: the functions that send with Twilio read no OpenAI key (stack_names)."""
    twilio_session_reads_openai = read_secret(
        TENANT_A, TENANT_A, "/support", function="SendReply", prefix_setting="OPENAI_TENANT_SECRET_PREFIX"
    )
    assert refusals(synthesized[1], twilio_session_reads_openai) == [
        ("secretsmanager:GetSecretValue", f"support{SECRET_SUFFIX}", "no statement allows it")
    ]
    openai_session_reads_twilio = read_secret(TENANT_A, TENANT_A, role=OPENAI_READER)
    assert refusals(synthesized[1], openai_session_reads_twilio) == [
        ("secretsmanager:GetSecretValue", f"{TENANT_A}{SECRET_SUFFIX}", "no statement allows it")
    ]


def read_signing_key(function: str, tenant: str, session_tenant: str | None) -> AwsCall:
    return read_secret(
        tenant,
        session_tenant,
        function=function,
        role=TOOL_READER,
        prefix_setting="TOOL_TENANT_SECRET_PREFIX",
    )


def test_call_tools_reads_a_tenants_tool_signing_secret_only_in_a_session_tagged_with_that_tenant(
    synthesized,
):
    template_json = synthesized[1]
    allowed = [
        assume("CallTools", TOOL_READER, tenant=TENANT_A),
        read_signing_key("CallTools", TENANT_A, TENANT_A),
    ]
    assert refusals(template_json, *allowed) == []

    assert refusals(template_json, read_signing_key("CallTools", TENANT_B, TENANT_A)) == [
        ("secretsmanager:GetSecretValue", f"{TENANT_B}{SECRET_SUFFIX}", "no statement allows it")
    ]
    assert refusals(template_json, read_signing_key("CallTools", TENANT_A, None)) == [  # its own role
        ("secretsmanager:GetSecretValue", f"{TENANT_A}{SECRET_SUFFIX}", "no statement allows it")
    ]
    trust = "the role's trust policy does not allow it"
    for other in ("GenerateReply", "SendReply", "Webhook", "ConversationCommands"):
        assert trust in {r[2] for r in refusals(template_json, assume(other, TOOL_READER, tenant=TENANT_A))}
    # a tool session reads no Twilio token nor OpenAI key of its own tenant
    for prefix in ("TWILIO_TENANT_SECRET_PREFIX", "OPENAI_TENANT_SECRET_PREFIX"):
        other_secret = read_secret(
            TENANT_A, TENANT_A, function="CallTools", role=TOOL_READER, prefix_setting=prefix
        )
        assert refusals(template_json, other_secret) == [
            ("secretsmanager:GetSecretValue", f"{TENANT_A}{SECRET_SUFFIX}", "no statement allows it")
        ]


def test_the_deployments_own_openai_key_is_still_read_with_the_functions_own_role(synthesized):
    for reader in OPENAI_KEY_READERS:
        own = as_function(
            reader, "GetSecretValue", "secretsmanager", SecretId=LOCAL_NAMES["OPENAI_SECRET_NAME"]
        )
        assert refusals(synthesized[1], own) == []


# The functions whose conversation's tenant is a stored fact when they read its Twilio
# secret (the status callback's is a claim it checked, when it sends the template).
TENANT_SESSION_READERS = (
    "GenerateReply",
    "SendReply",
    "RecordFailedBatch",
    "ConversationCommands",
    "Reconciler",
    "StatusCallback",
)


@pytest.mark.parametrize("reader", TENANT_SESSION_READERS)
def test_the_tenant_reader_is_assumed_by_the_functions_that_know_the_tenant_with_an_account_as_its_tag(
    synthesized, reader
):
    trust = "the role's trust policy does not allow it"
    assert refusals(synthesized[1], assume(reader, tenant=TENANT_A)) == []
    (untagged,) = refusals(synthesized[1], assume(reader))
    assert untagged[0] == "sts:AssumeRole" and untagged[2] == trust
    assert {r[2] for r in refusals(synthesized[1], assume(reader, tenant="not-an-account"))} == {trust}


@pytest.mark.parametrize("other", ["Webhook", "MergeStagedMessages", "AcquireProcessingLock"])
def test_the_tenant_reader_is_not_assumed_by_the_other_functions(synthesized, other):
    trust = "the role's trust policy does not allow it"
    assert trust in {r[2] for r in refusals(synthesized[1], assume(other, tenant=TENANT_A))}


# --- a helpdesk's commands on the bus ------------------------------------------------------
HELPDESK = "arn:aws:iam::123456789012:role/helpdesk"


def helpdesk_puts(synthesized: Any, source: str, detail_type: str, tenant: str | None) -> str | None:
    """IAM's decision on a helpdesk's role putting one event on the bus: the role has the
    managed policy the stack outputs (HelpdeskCommandsPolicyArn) and, if given, the tag
    `tenant`; the bus's resource policy as synthesized. None: allowed."""
    from infra.iam import DEFINITION_FILE
    from infra.iam.evaluate import Evaluation, Principal
    from infra.iam.requests import Request
    from infra.iam.template import Deployed

    deployed = Deployed(synthesized[1])
    evaluation = Evaluation(deployed, DEFINITION_FILE.read_text())
    (policy,) = deployed.of_type("AWS::IAM::ManagedPolicy").values()
    statements = deployed.resolve(policy["Properties"]["PolicyDocument"])["Statement"]
    evaluation.principals[HELPDESK] = Principal("Helpdesk", HELPDESK, statements)
    (bus,) = evaluation.bus_policies
    context = (("events:source", source), ("events:detail-type", detail_type))
    tags = (("aws:PrincipalTag/tenant", tenant),) if tenant else ()
    return evaluation.decide(Request(HELPDESK, "events:PutEvents", bus, "a helpdesk", context + tags))


def test_a_helpdesk_role_puts_commands_only_with_its_own_tenants_source(synthesized):
    own = f"helpdesk.{TENANT_A}"
    assert helpdesk_puts(synthesized, own, "conversation.reply", TENANT_A) is None
    assert helpdesk_puts(synthesized, own, "conversation.pause", TENANT_A) is None
    # another tenant's source, from A's role: denied by the bus, whatever its own policy says
    assert helpdesk_puts(synthesized, f"helpdesk.{TENANT_B}", "conversation.reply", TENANT_A) == (
        "explicitly denied"
    )
    assert (
        helpdesk_puts(synthesized, "helpdesk.example", "conversation.reply", TENANT_A) == "explicitly denied"
    )
    # a role with no tenant tag puts no command at all
    assert helpdesk_puts(synthesized, own, "conversation.reply", None) == "explicitly denied"
    # the service's own events stay the announcing function's
    assert helpdesk_puts(synthesized, "burst-reply", "batch.answered", TENANT_A) == "explicitly denied"
