"""`python -m infra.account`: the account checked before the deploy (make deploy runs it
after make preflight, before cdk deploy). On moto in process; Lambda's GetAccountSettings,
which moto does not implement (404 "Not yet implemented" in 5.2.5), through botocore's
Stubber. The template tests: the stack that sets API Gateway's logging role itself, and
tables that a failed first create does not leave behind."""

from __future__ import annotations

import copy
import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from infra import account
from infra.account import Clients, Deploy

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's
ROOT = Path(__file__).resolve().parent.parent.parent

# The names CloudFormation gives the stack's tables: <stack>-<logical id>-<random>.
CONVERSATIONS = "BurstReply-TablesConversationsDFBD939C-1AB2CD3EF4GH"
TENANTS = "BurstReply-TablesTenantsE95A5149-9ZY8XW7VU6TS"
TEMPLATE = {
    "Parameters": {"BootstrapVersion": {"Default": "/cdk-bootstrap/hnb659fds/version"}},
    "Rules": {
        "CheckBootstrapVersion": {
            "Assertions": [
                {"Assert": {"Fn::Not": [{"Fn::Contains": [["1", "2", "3", "4", "5"], {"Ref": "X"}]}]}}
            ]
        }
    },
    "Resources": {
        "TablesConversationsDFBD939C": {"Type": "AWS::DynamoDB::Table"},
        "TablesTenantsE95A5149": {"Type": "AWS::DynamoDB::Table"},
        "FunctionsWebhook": {"Type": "AWS::Lambda::Function", "Properties": {}},
    },
}


def _no_aws_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials, no Region, no endpoint from this machine's environment or files."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Clients]:
    """A fresh account on moto, its clients; Lambda's account settings stubbed (1,000)."""
    _no_aws_settings(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        clients = Clients(boto3.Session())
        yield clients


def _concurrency(clients: Clients, *totals: int) -> None:
    """Lambda's answers to GetAccountSettings, one per call: nothing reserved yet."""
    stubber = Stubber(clients("lambda"))
    for total in totals:
        limits = {"ConcurrentExecutions": total, "UnreservedConcurrentExecutions": total}
        stubber.add_response("get_account_settings", {"AccountLimit": limits, "AccountUsage": {}})
    stubber.activate()


def _set_logging_role(clients: Clients) -> str:
    arn = clients("iam").create_role(RoleName="APIGatewayPushToCloudWatchLogs", AssumeRolePolicyDocument="{}")
    role_arn: str = arn["Role"]["Arn"]
    clients("apigateway").update_account(
        patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}]
    )
    return role_arn


def _bootstrap(clients: Clients, version: str = "27") -> None:
    clients("ssm").put_parameter(Name=account.DEFAULT_BOOTSTRAP_PARAMETER, Value=version, Type="String")


def _deploy(**chosen: Any) -> Deploy:
    fields: dict[str, Any] = {
        "stack": "BurstReply",
        "template": TEMPLATE,
        "manages_role": False,
        "account": ACCOUNT,
        "region": REGION,
    }
    return Deploy(**(fields | chosen))


def _run(clients: Clients, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = account.main(list(argv), clients=clients)
    return code, capsys.readouterr().out.splitlines()


def _line(lines: list[str], what: str) -> str:
    (found,) = [line for line in lines if f"] {what}:" in line]
    return found


# --- which stack ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "variable", "checked"),
    [
        ([], "Other", "Other"),
        (["--stack", "Given"], "Other", "Given"),
        (["-c", "stack_name=Deployed"], "Other", "Deployed"),
        ([], None, "BurstReply"),
    ],
    ids=["STACK_NAME", "--stack first", "the deploy's stack_name before STACK_NAME", "the default"],
)
def test_the_stack_is_named_as_for_every_operator_command(aws, capsys, monkeypatch, argv, variable, checked):
    """`--stack`, else the context's stack_name (the stack `cdk deploy` deploys), else
    STACK_NAME (infra/stack_lookup.py), else BurstReply."""
    _concurrency(aws, 1000)
    if variable is None:
        monkeypatch.delenv("STACK_NAME", raising=False)
    else:
        monkeypatch.setenv("STACK_NAME", variable)
    _, lines = _run(aws, capsys, *argv)
    assert lines[0] == f"Account checks (what the deploy of {checked} needs of the account):"


# --- API Gateway's logging role -------------------------------------------------------------


def test_an_account_without_api_gateways_logging_role_fails_with_the_reason_and_the_ways_out(aws, capsys):
    _concurrency(aws, 1000)
    _bootstrap(aws)
    code, lines = _run(aws, capsys)
    role = _line(lines, "API Gateway logging role")
    assert role.startswith("  [FAIL]")
    assert "CloudWatch Logs role ARN must be set in account settings" in role  # what CloudFormation says
    assert "docs/deploying.md" in role and "MANAGE_API_GATEWAY_ACCOUNT_ROLE=true in its settings file" in role
    assert code == 1


def test_an_account_with_the_logging_role_set_passes(aws, capsys):
    _concurrency(aws, 1000)
    _bootstrap(aws)
    arn = _set_logging_role(aws)
    code, lines = _run(aws, capsys)
    assert _line(lines, "API Gateway logging role") == f"  [ok] API Gateway logging role: {arn}"
    assert not [line for line in lines if "[FAIL]" in line], lines
    assert code == 0


def test_a_logging_role_that_no_longer_exists_fails(aws):
    arn = _set_logging_role(aws)
    aws("iam").delete_role(RoleName="APIGatewayPushToCloudWatchLogs")
    line = account.cloudwatch_role(aws, _deploy())
    assert (line.status, arn in line.detail, "no longer exists" in line.detail) == ("FAIL", True, True)


@pytest.mark.parametrize("given", ["context", "settings file"])
def test_the_deploy_that_sets_the_role_itself_passes_without_one(aws, capsys, tmp_path, given):
    _concurrency(aws, 1000)
    _bootstrap(aws)
    settings = tmp_path / "deploy.env"
    settings.write_text("MANAGE_API_GATEWAY_ACCOUNT_ROLE=true\n")
    chosen = (
        f"settings_file={settings}" if given == "settings file" else "manage_api_gateway_account_role=true"
    )
    code, lines = _run(aws, capsys, "-c", chosen)
    assert _line(lines, "API Gateway logging role").startswith("  [ok]")
    assert "sets the stack's own role" in _line(lines, "API Gateway logging role")
    assert code == 0


def test_the_context_flag_is_read_from_cdk_json_as_cdk_deploy_reads_it(tmp_path):
    (tmp_path / "cdk.json").write_text(json.dumps({"context": {"manage_api_gateway_account_role": "true"}}))
    assert account.cdk_context([], root=tmp_path)["manage_api_gateway_account_role"] == "true"
    given = account.cdk_context(["manage_api_gateway_account_role=false"], root=tmp_path)
    assert given["manage_api_gateway_account_role"] == "false"  # -c wins, as in the CDK CLI


# --- Lambda concurrency -----------------------------------------------------------------


def test_a_new_accounts_low_concurrency_warns_with_the_quota_request_but_does_not_fail(aws):
    _concurrency(aws, 10)
    line = account.concurrency(aws, _deploy())
    assert line.status == "warn"
    assert "10 concurrent executions" in line.detail
    assert (
        "--service-code lambda --quota-code L-B99A9384 --desired-value 1000 --region us-east-1" in line.detail
    )


def test_concurrency_the_stack_reserves_fails_when_lambda_cannot_keep_its_minimum_unreserved(aws):
    reserving = copy.deepcopy(TEMPLATE)
    reserving["Resources"]["FunctionsWebhook"]["Properties"]["ReservedConcurrentExecutions"] = 50
    _concurrency(aws, 120, 1000)
    line = account.concurrency(aws, _deploy(template=reserving))
    assert line.status == "FAIL"
    assert "the stack reserves 50" in line.detail and "keeps 100 unreserved" in line.detail
    assert account.concurrency(aws, _deploy(template=reserving)).status == "ok"


def test_an_update_adds_back_the_deployed_reservation_and_asks_for_the_reservation_plus_lambdas_minimum(aws):
    """1,000 in all, 1,000 unreserved (the deployed stack reserves none), the new template
    950: Lambda would refuse it (100 must stay unreserved), so the check fails; and the quota
    it asks for leaves 100 beside the new reservation."""
    deployed, reserving = copy.deepcopy(TEMPLATE), copy.deepcopy(TEMPLATE)
    reserving["Resources"]["FunctionsWebhook"]["Properties"]["ReservedConcurrentExecutions"] = 950
    deployed["Resources"]["FunctionsWebhook"]["Properties"]["ReservedConcurrentExecutions"] = 900
    settings, templates = Stubber(aws("lambda")), Stubber(aws("cloudformation"))
    for unreserved, template in ((1000, TEMPLATE), (100, deployed)):
        limits = {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": unreserved}
        settings.add_response("get_account_settings", {"AccountLimit": limits, "AccountUsage": {}})
        body = {"TemplateBody": json.dumps(template)}
        templates.add_response("get_template", body, {"StackName": "BurstReply"})
    settings.activate()
    templates.activate()
    updating = {"StackName": "BurstReply", "StackStatus": "UPDATE_COMPLETE"}

    line = account.concurrency(aws, _deploy(template=reserving, deployed=updating))
    assert line.status == "FAIL", line.detail
    assert "--desired-value 1050" in line.detail
    # 100 unreserved beside the 900 the deployed stack holds: 1,000 - 950 = 50 would be left
    line = account.concurrency(aws, _deploy(template=reserving, deployed=updating))
    assert line.status == "FAIL" and "the deployed stack reserves 900" in line.detail


# --- CDK bootstrap, the OpenAI key, WAF -------------------------------------------------


def test_an_account_not_bootstrapped_fails_with_the_command(aws):
    line = account.bootstrap(aws, _deploy())
    assert line.status == "FAIL"
    assert f"npx cdk bootstrap aws://{ACCOUNT}/{REGION}" in line.detail
    _bootstrap(aws, "5")  # one the template's CheckBootstrapVersion rule refuses
    assert account.bootstrap(aws, _deploy()).status == "FAIL"
    aws("ssm").put_parameter(Name=account.DEFAULT_BOOTSTRAP_PARAMETER, Value="27", Overwrite=True)
    assert account.bootstrap(aws, _deploy()) == account.Line("ok", "CDK bootstrap", "version 27")


def test_the_openai_key_before_the_first_deploy_is_a_warning_with_the_command_for_after_it(aws):
    line = account.openai_secret(aws, _deploy())
    assert line.status == "warn"
    assert "python -m infra.account --stack BurstReply --put-openai-key" in line.detail
    # the key itself is never on a command line it suggests (shell history, ps)
    assert "--secret-string" not in line.detail and "sk-" not in line.detail


def _deployed_with_openai_secret(aws: Clients, name: str = "OpenAI-generated-name") -> str:
    """A deployed stack whose output OpenAISecretName names a secret holding the placeholder."""
    secret = aws("secretsmanager").create_secret(Name=name, SecretString='{"api_key": "placeholder"}')["Name"]
    body = {
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {"OpenAISecretName": {"Value": secret}},
    }
    aws("cloudformation").create_stack(StackName="BurstReply", TemplateBody=json.dumps(body))
    return str(secret)


def test_put_openai_key_reads_the_key_from_standard_input_and_puts_it_in_the_stacks_secret(
    aws, capsys, monkeypatch
):
    import io

    name = _deployed_with_openai_secret(aws)
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-test-from-stdin\n"))

    code, lines = _run(aws, capsys, "--stack", "BurstReply", "--put-openai-key")

    assert code == 0
    stored = json.loads(aws("secretsmanager").get_secret_value(SecretId=name)["SecretString"])
    assert stored == {"api_key": "sk-test-from-stdin"}
    assert lines == [f"[ok] OpenAI key: put in {name}"]  # never the key
    deployed = {
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": "OpenAISecretName", "OutputValue": name}],
    }
    assert account.openai_secret(aws, _deploy(deployed=deployed)).status == "ok"


@pytest.mark.parametrize("given", ["", "   \n", "not an OpenAI key\n"])
def test_put_openai_key_refuses_an_empty_or_malformed_key_and_puts_nothing(aws, capsys, monkeypatch, given):
    import io

    name = _deployed_with_openai_secret(aws)
    monkeypatch.setattr("sys.stdin", io.StringIO(given))

    code, lines = _run(aws, capsys, "--put-openai-key")

    assert code == 1 and lines[0].startswith("[FAIL] OpenAI key:")
    assert "not an OpenAI key" not in "".join(lines)  # what was given is never echoed
    stored = json.loads(aws("secretsmanager").get_secret_value(SecretId=name)["SecretString"])
    assert stored == {"api_key": "placeholder"}


def test_put_openai_key_needs_a_deployed_stack(aws, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("sk-test-never-put\n"))
    code, lines = _run(aws, capsys, "--put-openai-key")
    assert code == 1 and "BurstReply" in lines[0] and "OpenAISecretName" in lines[0]


def test_a_deployed_stacks_openai_secret_is_checked_for_a_key_put_after_the_deploy(aws):
    secrets = aws("secretsmanager")
    name = secrets.create_secret(Name="OpenAI-generated-name", SecretString='{"api_key": "placeholder"}')[
        "Name"
    ]
    deployed = {
        "StackStatus": "UPDATE_COMPLETE",
        "Outputs": [{"OutputKey": "OpenAISecretName", "OutputValue": name}],
    }
    assert account.openai_secret(aws, _deploy(deployed=deployed)).status == "warn"  # the placeholder
    secrets.put_secret_value(SecretId=name, SecretString='{"api_key": "sk-test"}')
    assert account.openai_secret(aws, _deploy(deployed=deployed)).status == "ok"
    secrets.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)
    assert account.openai_secret(aws, _deploy(deployed=deployed)).status == "FAIL"


def test_waf_unavailable_in_the_region_fails(aws):
    assert account.firewall(aws, _deploy()).status == "ok"  # moto answers
    stubber = Stubber(aws("wafv2"))
    stubber.add_client_error("list_web_acls", "WAFInvalidOperationException", "not in this Region")
    stubber.activate()
    line = account.firewall(aws, _deploy())
    assert (line.status, "another Region" in line.detail) == ("FAIL", True)


# --- tables left behind -----------------------------------------------------------------


def _table(clients: Clients, name: str) -> None:
    clients("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def test_empty_tables_of_a_failed_create_are_named_with_how_to_delete_them(aws):
    assert account.orphan_tables(aws, _deploy()).status == "ok"
    for name in (CONVERSATIONS, TENANTS, "BurstReply-Staging-TablesTenantsE95A5149-X", "Other"):
        _table(aws, name)
    line = account.orphan_tables(aws, _deploy())
    assert line.status == "warn"
    assert line.detail.startswith("2 empty tables of an earlier, failed create of BurstReply")
    assert CONVERSATIONS in line.detail and TENANTS in line.detail
    assert "Staging" not in line.detail and "Other" not in line.detail  # another stack's, or none's
    assert "aws dynamodb delete-table --table-name" in line.detail


def test_tables_of_an_earlier_stack_that_hold_data_stop_a_create(aws):
    _table(aws, TENANTS)
    aws("dynamodb").put_item(TableName=TENANTS, Item={"pk": {"S": "account#AC1"}})
    line = account.orphan_tables(aws, _deploy())
    assert line.status == "FAIL"
    assert TENANTS in line.detail and "npx cdk import" in line.detail and "create-backup" in line.detail


# --- no Region, no credentials, no endpoint: one line each --------------------------------


def _closed_port() -> int:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return int(free.getsockname()[1])


@pytest.mark.parametrize(
    ("setting", "what"),
    [
        ({"AWS_DEFAULT_REGION": REGION}, "Credentials"),
        ({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}, "Region"),
        (
            {
                "AWS_DEFAULT_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "x",
                "AWS_ENDPOINT_URL": "{closed}",
            },
            "Endpoint",
        ),
    ],
    ids=["no credentials", "no region", "endpoint down"],
)
def test_what_stops_every_check_is_one_line_without_a_traceback(monkeypatch, tmp_path, capsys, setting, what):
    _no_aws_settings(monkeypatch, tmp_path)
    for name, value in setting.items():
        monkeypatch.setenv(name, value.format(closed=f"http://127.0.0.1:{_closed_port()}"))
    code, lines = _run(Clients(), capsys)
    assert code == 1
    assert len(lines) == 2, lines  # the heading and the one line
    assert re.fullmatch(rf"  \[FAIL\] {what}: .+", lines[1]), lines


# --- make deploy --------------------------------------------------------------------------


def test_make_deploy_checks_the_account_after_the_preflight_and_before_cdk_deploy():
    dry = subprocess.run(
        ["make", "-n", "deploy"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    steps = [
        line for line in dry.splitlines() if re.search(r"infra\.preflight|infra\.account|cdk deploy", line)
    ]
    assert [re.search(r"preflight|account|cdk deploy", s).group() for s in steps] == [  # type: ignore[union-attr]
        "preflight",
        "account",
        "cdk deploy",
    ]


# --- the template -------------------------------------------------------------------------


@pytest.mark.infra
def test_tables_are_kept_on_update_or_delete_but_not_left_behind_by_a_failed_first_create(synthesized):
    tables = [r for r in synthesized[1]["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert tables
    assert {(t["DeletionPolicy"], t["UpdateReplacePolicy"]) for t in tables} == {
        ("RetainExceptOnCreate", "Retain")
    }


@pytest.mark.infra
def test_with_manage_api_gateway_account_role_the_stack_sets_the_role_before_the_stage(synthesized, tmp_path):
    from aws_cdk.assertions import Annotations, Match, Template

    from infra.app import build_app

    (tmp_path / "code" / "functions").mkdir(parents=True)
    (tmp_path / "dependencies" / "python").mkdir(parents=True)
    _, stack = build_app(
        tmp_path / "code",
        tmp_path / "dependencies",
        outdir=str(tmp_path / "cdk.out"),
        context={"manage_api_gateway_account_role": "true"},
    )
    resources = Template.from_stack(stack).to_json()["Resources"]
    (account_id,) = [k for k, v in resources.items() if v["Type"] == "AWS::ApiGateway::Account"]
    role_id = resources[account_id]["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    trust = resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "apigateway.amazonaws.com"}]
    assert "AmazonAPIGatewayPushToCloudWatchLogs" in json.dumps(
        resources[role_id]["Properties"]["ManagedPolicyArns"]
    )
    # Kept when the stack is deleted (the account keeps naming it), not when its create fails.
    for logical_id in (account_id, role_id):
        assert resources[logical_id]["DeletionPolicy"] == "RetainExceptOnCreate"
    (stage,) = [v for v in resources.values() if v["Type"] == "AWS::ApiGateway::Stage"]
    assert account_id in stage["DependsOn"]
    found = Annotations.from_stack(stack).find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    found += Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in found] == []
    # By default the account's setting is left alone.
    assert "AWS::ApiGateway::Account" not in {r["Type"] for r in synthesized[1]["Resources"].values()}


# --- the settings a deploy is given, against the deployed stack's -------------------------

PRODUCTION = {
    "ALARM_EMAIL": "oncall@example.com",
    "MAX_AI_CALLS_PER_HOUR": "5000",
    "WEBHOOK_RESERVED_CONCURRENCY": "50",
}


def _settings_file(folder: Path, settings: dict[str, str], name: str = "production.env") -> Path:
    path = folder / name
    path.write_text("# the deployment's settings\n" + "".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def _recorded(path: Path | None) -> Any:
    """What a deploy given `path` (None: no file) records, as infra.app reads its context."""
    from infra.stack_settings import StackSettings

    context = {"settings_file": str(path)} if path else {}
    return StackSettings.from_context(context.get, Path("."), Path(".")).recorded


def _deployed_with(aws: Clients, recorded: Any) -> dict[str, Any]:
    """A deployed stack on moto whose output DeploymentSettings holds `recorded`."""
    body = {
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {"DeploymentSettings": {"Value": recorded.to_output()}},
    }
    aws("cloudformation").create_stack(StackName="BurstReply", TemplateBody=json.dumps(body))
    (stack,) = aws("cloudformation").describe_stacks(StackName="BurstReply")["Stacks"]
    return dict(stack)


def test_a_deploy_without_settings_over_a_stack_deployed_with_a_file_is_refused_naming_it(
    aws, capsys, tmp_path
):
    """`make deploy` without SETTINGS would set the alarm e-mail, the ceilings and the
    reserved concurrency back to their defaults: make account (and so make deploy) stops."""
    _concurrency(aws, 1000, 1000)
    path = _settings_file(tmp_path, PRODUCTION)
    recorded = _recorded(path)
    _deployed_with(aws, recorded)

    code, lines = _run(aws, capsys)

    assert code == 1
    line = _line(lines, "Settings")
    assert line.startswith("  [FAIL] Settings: BurstReply was deployed with settings file production.env")
    assert recorded.sha256[:12] in line and "make deploy SETTINGS=" in line
    assert all(name in line for name in PRODUCTION)
    assert not any(value in "\n".join(lines) for value in PRODUCTION.values())  # never a value

    code, lines = _run(aws, capsys, "-c", f"settings_file={path}")  # what make deploy SETTINGS=... passes
    assert _line(lines, "Settings") == f"  [ok] Settings: as deployed: {recorded}"


def test_other_settings_than_the_deployed_ones_are_reported_by_name(aws, tmp_path):
    deployed = _deployed_with(aws, _recorded(_settings_file(tmp_path, PRODUCTION)))
    changed = {**PRODUCTION, "MAX_AI_CALLS_PER_HOUR": "6000"}
    line = account.settings_given(
        aws, _deploy(deployed=deployed, settings=_recorded(_settings_file(tmp_path, changed)))
    )
    assert line.status == "warn" and "the same names, other values" in line.detail
    assert "6000" not in line.detail and "5000" not in line.detail

    fewer = {"ALARM_EMAIL": "oncall@example.com", "BATCH_MODE": "quiet"}
    given = _recorded(_settings_file(tmp_path, fewer, "other.env"))
    line = account.settings_given(aws, _deploy(deployed=deployed, settings=given))
    assert line.status == "warn"
    assert "settings file production.env" in line.detail and "settings file other.env" in line.detail
    assert "added BATCH_MODE" in line.detail
    assert (
        "dropped MAX_AI_CALLS_PER_HOUR, WEBHOOK_RESERVED_CONCURRENCY (back to their defaults)" in line.detail
    )
    # The defaults on purpose: an empty file is a file given.
    empty = account.settings_given(
        aws, _deploy(deployed=deployed, settings=_recorded(_settings_file(tmp_path, {}, "none.env")))
    )
    assert empty.status == "warn" and "dropped ALARM_EMAIL" in empty.detail


def test_comments_quotes_and_order_do_not_change_the_recorded_hash(tmp_path):
    first = _settings_file(tmp_path, PRODUCTION, "a.env")
    second = tmp_path / "b.env"
    second.write_text("".join(f'export {k}="{v}"  # ours\n' for k, v in reversed(PRODUCTION.items())))
    assert _recorded(first).sha256 == _recorded(second).sha256 != _recorded(None).sha256


@pytest.mark.parametrize(
    "recorded", [None, "no settings"], ids=["recorded nothing", "deployed without settings"]
)
def test_a_stack_that_records_no_file_is_not_refused(aws, tmp_path, recorded):
    if recorded is None:
        deployed = {"StackStatus": "UPDATE_COMPLETE", "Outputs": []}  # deployed before the record
    else:
        deployed = _deployed_with(aws, _recorded(None))
    line = account.settings_given(aws, _deploy(deployed=deployed, settings=_recorded(None)))
    assert line.status == ("warn" if recorded is None else "ok")
    first = account.settings_given(aws, _deploy(settings=_recorded(_settings_file(tmp_path, PRODUCTION))))
    assert first.status == "ok" and first.detail.startswith("the deploy records settings file production.env")


@pytest.mark.infra
def test_the_stack_records_its_settings_in_an_output_and_a_resource_that_changes_with_them(
    synthesized, tmp_path
):
    """The output DescribeStacks returns holds the record that infra.account compares, and
    a resource named after it: CloudFormation updates no output by itself."""
    from aws_cdk.assertions import Template

    from infra.app import build_app

    (tmp_path / "code" / "functions").mkdir(parents=True)
    (tmp_path / "dependencies" / "python").mkdir(parents=True)
    path = _settings_file(tmp_path, PRODUCTION)
    _, stack = build_app(
        tmp_path / "code",
        tmp_path / "dependencies",
        outdir=str(tmp_path / "cdk.out"),
        context={"settings_file": str(path)},
    )
    template = Template.from_stack(stack).to_json()
    value = template["Outputs"]["DeploymentSettings"]["Value"]
    assert value == _recorded(path).to_output()
    assert json.loads(value) == {
        "file": "production.env",
        "sha256": _recorded(path).sha256,
        "names": sorted(PRODUCTION),
    }
    assert "oncall@example.com" not in value

    def handles(resources: dict[str, Any]) -> set[str]:
        return {
            logical_id
            for logical_id, resource in resources.items()
            if resource["Type"] == "AWS::CloudFormation::WaitConditionHandle"
            and logical_id.startswith("DeploymentSettings")
        }

    ours, default = handles(template["Resources"]), handles(synthesized[1]["Resources"])
    assert len(ours) == len(default) == 1 and ours != default
    assert json.loads(synthesized[1]["Outputs"]["DeploymentSettings"]["Value"])["names"] == []


# --- the stage's execution log group -------------------------------------------------------

# The template's group, as infra/constructs/api.py names it (tests/infra/test_api_logs.py).
EXECUTION_LOGS_TEMPLATE = TEMPLATE | {
    "Resources": {
        **TEMPLATE["Resources"],
        "WebhookExecutionLogs": {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {
                "LogGroupName": {
                    "Fn::Join": ["", ["API-Gateway-Execution-Logs_", {"Ref": "WebhookApi"}, "/prod"]]
                }
            },
        },
    }
}


def test_an_execution_log_group_api_gateway_made_for_the_deployed_stack_stops_the_update(aws):
    """A stack deployed before it created its own: API Gateway made the group, and the
    update that creates it would fail (already exists) and roll back."""
    body = {"Resources": {"WebhookApi": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "x"}}}}
    aws("cloudformation").create_stack(StackName="BurstReply", TemplateBody=json.dumps(body))
    (api,) = aws("cloudformation").list_stack_resources(StackName="BurstReply")["StackResourceSummaries"]
    deployed = {"StackStatus": "UPDATE_COMPLETE"}
    deploy = _deploy(template=EXECUTION_LOGS_TEMPLATE, deployed=deployed)
    name = f"API-Gateway-Execution-Logs_{api['PhysicalResourceId']}/prod"

    assert account.execution_logs(aws, deploy) == account.Line(
        "ok", "Execution logs", f"the deploy creates {name} with the stack"
    )
    aws("logs").create_log_group(logGroupName=name)  # API Gateway's own, at the stage's first error
    line = account.execution_logs(aws, deploy)
    assert line.status == "FAIL"
    assert f"aws logs delete-log-group --log-group-name '{name}'" in line.detail
    # A first create, or a template without the group, is not concerned.
    assert account.execution_logs(aws, _deploy(template=EXECUTION_LOGS_TEMPLATE)).status == "ok"
    assert account.execution_logs(aws, _deploy(deployed=deployed)).status == "ok"
