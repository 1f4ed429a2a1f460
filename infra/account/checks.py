"""The checks, one function each: what the deploy needs of the account, one line apiece."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable

from infra.account.model import Clients, Deploy, Line, error_code, resources_of
from infra.deployment_settings import SettingsRecord

# Lambda's quota "Concurrent executions" (Service Quotas code L-B99A9384). 1,000 is Lambda's
# default; new accounts start lower, as low as 10 ("New AWS accounts have reduced
# concurrency and memory quotas": https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
CONCURRENCY_QUOTA_CODE = "L-B99A9384"
RECOMMENDED_CONCURRENCY = 1_000
# Lambda keeps this many concurrent executions unreserved, or the whole limit where it is
# lower ("leave at least 100 simultaneous executions unreserved":
# https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
MINIMUM_UNRESERVED = 100
DEFAULT_BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
# The key on standard input, or typed at a prompt that does not echo it: never on a
# command line (a shell's history, `ps`; infra/account/put_key.py).
PUT_OPENAI_KEY = "python -m infra.account --stack {stack} --put-openai-key (it asks for the key)"
# API Gateway's name for a stage's execution log group, before `<restApiId>/<stage>`.
EXECUTION_LOGS = "API-Gateway-Execution-Logs_"
# The output in which a deployed stack records what its deploy was given (infra/stack.py).
SETTINGS_OUTPUT = "DeploymentSettings"


def settings_given(clients: Clients, deploy: Deploy) -> Line:
    """This deploy's settings against those the deployed stack records (its output
    DeploymentSettings). A deploy given no settings file over a stack deployed with settings
    would set each of them back to its default, unnoticed (the alarm e-mail, the cost
    ceilings, the reserved concurrency): refused, naming the file and hash recorded. The
    file itself is not reused: the stack holds its hash, not its values."""
    given = deploy.settings
    if given is None:
        return Line("ok", "Settings", "not compared (no settings read)")
    if deploy.creates:
        return Line("ok", "Settings", f"the deploy records {given}")
    assert deploy.deployed is not None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in deploy.deployed.get("Outputs", [])}
    recorded = SettingsRecord.from_output(outputs.get(SETTINGS_OUTPUT, ""))
    if recorded is None:
        return Line(
            "warn",
            "Settings",
            f"{deploy.stack} records none (deployed before deploys recorded them): if it was deployed "
            f"with a settings file, give it again (make deploy SETTINGS=FILE); the deploy records {given}",
        )
    if recorded.sha256 == given.sha256:
        return Line("ok", "Settings", f"as deployed: {given}")
    if recorded.names and not given.file:
        again = f"SETTINGS=<your {recorded.file}>" if recorded.file else "SETTINGS=FILE"
        return Line(
            "FAIL",
            "Settings",
            f"{deploy.stack} was deployed with {recorded}; this deploy is given no settings file and would "
            f"set each of them back to its default: give it again (make deploy {again}); to go back "
            "to the defaults on purpose, give an empty settings file",
        )
    added = [name for name in given.names if name not in recorded.names]
    dropped = [name for name in recorded.names if name not in given.names]
    changes = [
        *([f"added {', '.join(added)}"] if added else []),
        *([f"dropped {', '.join(dropped)} (back to their defaults)"] if dropped else []),
    ] or ["the same names, other values"]
    return Line(
        "warn",
        "Settings",
        f"not the deployed ones: {deploy.stack} was deployed with {recorded}; this deploy is given "
        f"{given}: {'; '.join(changes)}",
    )


def cloudwatch_role(clients: Clients, deploy: Deploy) -> Line:
    arn = clients("apigateway").get_account().get("cloudwatchRoleArn")
    if deploy.manages_role:
        now = f"; it replaces {arn} for every REST API in {deploy.region}" if arn else ""
        return Line("ok", "API Gateway logging role", f"the deploy sets the stack's own role{now}")
    if not arn:
        return Line(
            "FAIL",
            "API Gateway logging role",
            f"none set on the account in {deploy.region}: the stage's logs need it (CloudFormation "
            "fails with 'CloudWatch Logs role ARN must be set in account settings'); set it once "
            "(docs/deploying.md, Deploy) or have the deploy set it: MANAGE_API_GATEWAY_ACCOUNT_ROLE=true in "
            "its settings file (make deploy SETTINGS=FILE)",
        )
    try:
        clients("iam").get_role(RoleName=arn.rsplit("/", 1)[-1])
    except ClientError as error:
        if error_code(error) == "NoSuchEntity":
            return Line(
                "FAIL",
                "API Gateway logging role",
                f"the account names {arn}, which no longer exists: create it again or set another "
                "(docs/deploying.md, Deploy), or have the deploy set it: "
                "MANAGE_API_GATEWAY_ACCOUNT_ROLE=true in its settings file (make deploy SETTINGS=FILE)",
            )
    return Line("ok", "API Gateway logging role", arn)


def reserved_concurrency(template: dict[str, Any] | None) -> int:
    """What the stack's functions reserve (ReservedConcurrentExecutions), in all."""
    functions = resources_of(template, "AWS::Lambda::Function").values()
    values = (f.get("Properties", {}).get("ReservedConcurrentExecutions") for f in functions)
    return sum(v for v in values if isinstance(v, int))


def deployed_template(clients: Clients, deploy: Deploy) -> dict[str, Any] | None:
    """The template the deployed stack runs (None before a first create)."""
    if deploy.creates:
        return None
    body = clients("cloudformation").get_template(StackName=deploy.stack)["TemplateBody"]
    return json.loads(body) if isinstance(body, str) else dict(body)  # botocore parses JSON itself


def concurrency(clients: Clients, deploy: Deploy) -> Line:
    limits = clients("lambda").get_account_settings()["AccountLimit"]
    total, unreserved = limits["ConcurrentExecutions"], limits["UnreservedConcurrentExecutions"]
    reserved = reserved_concurrency(deploy.template)
    minimum = min(MINIMUM_UNRESERVED, total)
    # The deployed stack's own reservations are out of the unreserved pool already; the
    # update gives them back before it takes the new ones.
    held = reserved_concurrency(deployed_template(clients, deploy))
    room = unreserved + held
    desired = max(RECOMMENDED_CONCURRENCY, reserved + MINIMUM_UNRESERVED)
    increase = (
        f"aws service-quotas request-service-quota-increase --service-code lambda --quota-code "
        f"{CONCURRENCY_QUOTA_CODE} --desired-value {desired} --region {deploy.region}"
    )
    figures = f"{total} concurrent executions, {unreserved} unreserved; the stack reserves {reserved}"
    figures += f" (the deployed stack reserves {held})" if held else ""
    if reserved and room - reserved < minimum:
        return Line(
            "FAIL",
            "Lambda concurrency",
            f"{figures}, and Lambda keeps {minimum} unreserved: the functions fail to create; ask for more: "
            f"{increase}",
        )
    if total < RECOMMENDED_CONCURRENCY:
        return Line(
            "warn",
            "Lambda concurrency",
            f"{figures}: enough to deploy, not for real volume (every function shares them; beyond them "
            f"the webhook and the runs are throttled); ask for {RECOMMENDED_CONCURRENCY}: {increase}",
        )
    return Line("ok", "Lambda concurrency", figures)


def _bootstrap_parameter(template: dict[str, Any] | None) -> str:
    parameter = (template or {}).get("Parameters", {}).get("BootstrapVersion", {})
    return str(parameter.get("Default", DEFAULT_BOOTSTRAP_PARAMETER))


def _versions_refused(template: dict[str, Any] | None) -> list[str]:
    """The bootstrap versions the template's CheckBootstrapVersion rule refuses (too old)."""
    rule = (template or {}).get("Rules", {}).get("CheckBootstrapVersion", {})
    for assertion in rule.get("Assertions", []):
        try:
            return [str(v) for v in assertion["Assert"]["Fn::Not"][0]["Fn::Contains"][0]]
        except (KeyError, IndexError, TypeError):
            continue
    return []


def bootstrap(clients: Clients, deploy: Deploy) -> Line:
    name = _bootstrap_parameter(deploy.template)
    run = f"npx cdk bootstrap aws://{deploy.account}/{deploy.region}"
    try:
        version = clients("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as error:
        if error_code(error) != "ParameterNotFound":
            raise
        return Line(
            "FAIL", "CDK bootstrap", f"{name} not found: bootstrap this account and Region once: {run}"
        )
    if version in _versions_refused(deploy.template):
        return Line("FAIL", "CDK bootstrap", f"version {version} is older than the stack needs: {run}")
    return Line("ok", "CDK bootstrap", f"version {version}")


def openai_secret(clients: Clients, deploy: Deploy) -> Line:
    """The stack creates the secret with a generated placeholder (infra/constructs/credentials.py)
    and names it in its output OpenAISecretName; the key is put in it after the deploy. A
    secret that was put has a second version (AWSPREVIOUS): its value is never read."""
    if deploy.creates:
        return Line(
            "warn",
            "OpenAI key",
            "the deploy creates its secret with a placeholder; then put the key in it (output "
            f"OpenAISecretName): {PUT_OPENAI_KEY.format(stack=deploy.stack)}",
        )
    assert deploy.deployed is not None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in deploy.deployed.get("Outputs", [])}
    name = outputs.get("OpenAISecretName")
    if not name:
        return Line(
            "warn", "OpenAI key", f"{deploy.stack} has no output OpenAISecretName yet: the deploy adds it"
        )
    secret: dict[str, Any] | None
    try:
        secret = clients("secretsmanager").describe_secret(SecretId=name)
    except ClientError as error:
        if error_code(error) != "ResourceNotFoundException":
            raise
        secret = None
    if secret is None or secret.get("DeletedDate"):
        return Line(
            "FAIL",
            "OpenAI key",
            f"the stack's secret {name} is gone or scheduled for deletion: restore it "
            f"(aws secretsmanager restore-secret --secret-id {name}) or the replies fail",
        )
    if len(secret.get("VersionIdsToStages", {})) < 2:
        return Line(
            "warn",
            "OpenAI key",
            f"{name} still holds the placeholder: {PUT_OPENAI_KEY.format(stack=deploy.stack)}",
        )
    return Line("ok", "OpenAI key", f"{name} holds a value put after the deploy")


def firewall(clients: Clients, deploy: Deploy) -> Line:
    try:
        clients("wafv2").list_web_acls(Scope="REGIONAL", Limit=1)
    except EndpointUnreachable:
        problem = "no endpoint"
    except ClientError as error:
        if error_code(error) in ("AccessDeniedException", "AccessDenied"):
            raise
        problem = error_code(error)
    else:
        return Line("ok", "AWS WAF", f"REGIONAL web ACLs available in {deploy.region}")
    return Line(
        "FAIL",
        "AWS WAF",
        f"REGIONAL web ACLs unavailable in {deploy.region} ({problem}): the stage's web ACL needs them; "
        "deploy to another Region",
    )


def _table_prefixes(deploy: Deploy) -> list[str]:
    """CloudFormation names a table `<stack>-<logical id>-<random>`: the template's logical
    ids, or the construct's prefix (infra/constructs/tables.py) without a template."""
    logical_ids = resources_of(deploy.template, "AWS::DynamoDB::Table") or {"Tables": {}}
    return [f"{deploy.stack}-{logical_id}" for logical_id in logical_ids]


def _stack_tables(clients: Clients, deploy: Deploy) -> set[str]:
    if deploy.deployed is None:
        return set()
    pages = clients("cloudformation").get_paginator("list_stack_resources").paginate(StackName=deploy.stack)
    return {
        r.get("PhysicalResourceId", "")
        for page in pages
        for r in page["StackResourceSummaries"]
        if r["ResourceType"] == "AWS::DynamoDB::Table" and not r["ResourceStatus"].startswith("DELETE_")
    }


def orphan_tables(clients: Clients, deploy: Deploy) -> Line:
    dynamodb = clients("dynamodb")
    prefixes = tuple(_table_prefixes(deploy))
    owned = _stack_tables(clients, deploy)
    names = [
        name
        for page in dynamodb.get_paginator("list_tables").paginate()
        for name in page["TableNames"]
        if name.startswith(prefixes) and name not in owned
    ]
    if not names:
        return Line("ok", "Tables left behind", f"none of an earlier {deploy.stack}")
    holding = [n for n in names if dynamodb.scan(TableName=n, Limit=1, Select="COUNT")["Count"]]
    if not holding:
        return Line(
            "warn",
            "Tables left behind",
            f"{len(names)} empty tables of an earlier, failed create of {deploy.stack}, used by nothing "
            f"({', '.join(names)}); delete each: aws dynamodb delete-table --table-name <name>",
        )
    status = "FAIL" if deploy.creates else "warn"
    effect = (
        "the deploy creates new, empty tables beside them (no conversations, no tenants)"
        if deploy.creates
        else "the stack does not use them"
    )
    return Line(
        status,
        "Tables left behind",
        f"{len(holding)} tables of an earlier {deploy.stack} hold data ({', '.join(holding)}): {effect}; "
        "import them into the stack (npx cdk import, docs/deploying.md) or back each up "
        "(aws dynamodb create-backup) and delete it"
        + (f"; {len(names) - len(holding)} more are empty" if len(names) > len(holding) else ""),
    )


def _execution_log_stage(template: dict[str, Any] | None) -> str | None:
    """The stage whose execution log group the template creates (`API-Gateway-Execution-Logs_`
    joined to the API's id and `/<stage>`: infra/constructs/api.py), if it does."""
    for group in resources_of(template, "AWS::Logs::LogGroup").values():
        name = group.get("Properties", {}).get("LogGroupName")
        parts = name.get("Fn::Join", ["", []])[1] if isinstance(name, dict) else []
        if parts and parts[0] == EXECUTION_LOGS and isinstance(parts[-1], str):
            return parts[-1].lstrip("/")
    return None


def execution_logs(clients: Clients, deploy: Deploy) -> Line:
    """The stage's execution log group, which the stack creates: one API Gateway created
    itself for a stack deployed before (outside it, kept for ever) makes the update fail
    ("already exists") and roll back."""
    stage = _execution_log_stage(deploy.template)
    if stage is None or deploy.creates:
        return Line("ok", "Execution logs", "the deploy creates the stage's log group with the stack")
    pages = clients("cloudformation").get_paginator("list_stack_resources").paginate(StackName=deploy.stack)
    resources = [r for page in pages for r in page["StackResourceSummaries"]]
    apis = [r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::ApiGateway::RestApi"]
    if not apis:
        return Line("ok", "Execution logs", f"{deploy.stack} has no API yet: the deploy creates the group")
    name = f"{EXECUTION_LOGS}{apis[0]}/{stage}"
    groups = {r.get("PhysicalResourceId") for r in resources if r["ResourceType"] == "AWS::Logs::LogGroup"}
    if name in groups:
        return Line("ok", "Execution logs", f"{name} is the stack's")
    found = clients("logs").describe_log_groups(logGroupNamePrefix=name)["logGroups"]
    if not any(group["logGroupName"] == name for group in found):
        return Line("ok", "Execution logs", f"the deploy creates {name} with the stack")
    return Line(
        "FAIL",
        "Execution logs",
        f"API Gateway created {name} itself, outside the stack, which now creates it (with a retention, "
        f"deleted with the stack): the update would fail (already exists) and roll back. Delete it first "
        f"(its lines are the stage's errors; export what you want to keep): aws logs delete-log-group "
        f"--log-group-name '{name}'",
    )


CHECKS: tuple[tuple[str, Callable[[Clients, Deploy], Line]], ...] = (
    ("Settings", settings_given),
    ("API Gateway logging role", cloudwatch_role),
    ("Lambda concurrency", concurrency),
    ("CDK bootstrap", bootstrap),
    ("OpenAI key", openai_secret),
    ("AWS WAF", firewall),
    ("Tables left behind", orphan_tables),
    ("Execution logs", execution_logs),
)
