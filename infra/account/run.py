"""Running the checks: the Region and credentials first (without them nothing is checked),
then the stack as it stands, then each check; an AWS error in one check is its line."""

from __future__ import annotations

import os
from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable

from infra.account.checks import CHECKS
from infra.account.model import NEVER_CREATED, Clients, Deploy, Line, describe_stack, error_code


def _stack_line(deploy: Deploy) -> Line:
    if deploy.deployed is None:
        return Line("ok", "Stack", f"{deploy.stack} is not deployed: the deploy creates it")
    status = deploy.deployed["StackStatus"]
    if status.endswith("_IN_PROGRESS") and status != "REVIEW_IN_PROGRESS":
        return Line("FAIL", "Stack", f"{deploy.stack} is {status}: wait until it ends")
    if status in NEVER_CREATED:
        return Line(
            "ok", "Stack", f"{deploy.stack} is {status} (a create failed): cdk deploy creates it again"
        )
    return Line("ok", "Stack", f"{deploy.stack} is {status}: the deploy updates it")


def check(clients: Clients, deploy: Deploy) -> list[Line]:
    """Every check's line; a missing Region, missing or refused credentials, or an endpoint
    that does not answer end it at once with one line."""
    region = clients.session.region_name
    if not region:
        return [
            Line("FAIL", "Region", "none set: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)")
        ]
    try:
        identity = clients("sts").get_caller_identity()
    except EndpointUnreachable as error:
        where = error.kwargs.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL", "AWS")
        return [Line("FAIL", "Endpoint", f"{where} does not answer: check your network or AWS_ENDPOINT_URL")]
    except ClientError as error:
        return [
            Line(
                "FAIL",
                "Credentials",
                f"refused ({error_code(error)}): renew them or choose others (AWS_PROFILE)",
            )
        ]
    except BotoCoreError as error:  # none found, an expired SSO session, ...
        return [
            Line(
                "FAIL", "Credentials", f"{error}: configure them (aws configure, aws sso login, AWS_PROFILE)"
            )
        ]
    lines = [Line("ok", "Account", f"{identity['Account']} in {region}")]
    try:
        described = describe_stack(clients, deploy.stack)
    except (ClientError, BotoCoreError) as error:
        described = None
        lines.append(Line("warn", "Stack", f"could not read {deploy.stack} ({error}): taken as not deployed"))
    deploy = replace(deploy, account=identity["Account"], region=region, deployed=described)
    lines.append(_stack_line(deploy))
    for what, one_check in CHECKS:
        try:
            lines.append(one_check(clients, deploy))
        except (ClientError, BotoCoreError) as error:
            reason = error_code(error) if isinstance(error, ClientError) else type(error).__name__
            lines.append(Line("warn", what, f"could not check ({reason}): check it yourself"))
    return lines
