"""IAM's decision on every request the deployed stack would make, from the synthesized
template's policies: each recorded call of a function against that function's role, each
direct integration of the state machine against the state machine's role, and a bus's
resource policy for what is put on it.

The decision is moto's policy evaluator's (moto.iam.access_control.IAMPolicy: Allow and
Deny, Action and NotAction, Resource with wildcards), applied as IAM's evaluation logic
orders it within one account: an explicit Deny in any policy denies; otherwise an Allow in
the role's policies or in the resource's policy (for this principal) allows; otherwise the
request is implicitly denied. A role a function assumes (sts:AssumeRole, sts:TagSession)
must also be allowed by that role's trust policy; the calls made with the session's
credentials are judged against that role's policies, with the session's tags as
`aws:PrincipalTag/...` and policy variables (`${aws:PrincipalTag/tenant}`) in resources
and condition values replaced by the request's values (a statement whose variable names a
key the request lacks applies to nothing, as IAM drops it; `Null` tests a key's absence).
What moto's evaluator does not judge as IAM does is refused rather than guessed: a
condition operator or key not modelled here, NotResource or NotPrincipal stops the
evaluation with an error. docs/adr/0045-least-privilege-evaluated-rather-than-copied.md says why
this evaluator."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from moto.iam.access_control import IAMPolicy, PermissionResult

from infra.iam.requests import Request, Unmapped, call_requests, state_machine_requests
from infra.iam.template import ACCOUNT, PARTITION, Deployed, arn
from infra.local.aws_calls import Recording, naming_settings

STATE_MACHINE = "StateMachine"
# Used by the Lambda and Step Functions services themselves (traces, log delivery), not by
# any call of our code: never reported as unused.
SERVICE_ACTIONS = re.compile(r"^(xray|logs):", re.IGNORECASE)


class NotEvaluable(Exception):
    """A policy element this evaluation cannot judge as IAM does."""


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    statements = document["Statement"]
    return statements if isinstance(statements, list) else [statements]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _pattern(text: str) -> str:
    """An IAM wildcard pattern as moto's matcher reads it (it turns `*` into `.*` and
    escapes nothing else): the rest escaped, `?` one character."""
    return re.escape(text).replace(r"\*", "*").replace(r"\?", ".")


VARIABLE = re.compile(r"\$\{([^}]*)\}")

# Condition operators judged here, before moto sees the statement (it judges none of these
# as IAM does), on the request's context keys: (negated, wildcards allowed).
CONDITIONS = {
    "StringEquals": (False, False),
    "StringNotEquals": (True, False),
    "StringLike": (False, True),
    "StringNotLike": (True, True),
    "ArnEquals": (False, True),
    "ArnLike": (False, True),
    "ArnNotEquals": (True, True),
    "ArnNotLike": (True, True),
}


# Tags are the only context keys the requests here know in full: a tag a request does not
# carry is absent, where any other key missing from the context is one not modelled.
TAG_KEYS = ("aws:RequestTag/", "aws:PrincipalTag/")


def _condition_holds(statement: dict[str, Any], context: dict[str, str]) -> bool:
    """IAM's condition block: every operator, every key must hold; a key with several
    values holds when any value matches (and a negated operator when none does). A value's
    policy variable is the request's; one the request lacks voids the statement (False)."""
    for operator, keys in statement.get("Condition", {}).items():
        if operator == "Null":  # {"key": "true"}: the request has no such key
            if any((key not in context) != (str(v).lower() == "true") for key, v in keys.items()):
                return False
            continue
        if operator not in CONDITIONS:
            raise NotEvaluable(f"condition {operator} in {statement}")
        negated, wildcards = CONDITIONS[operator]
        for key, values in keys.items():
            if key not in context and key.startswith(TAG_KEYS):
                if not negated:  # the request has no such tag: a positive operator fails
                    return False
                continue
            if key not in context:
                raise NotEvaluable(f"condition key {key} in {statement}")
            listed = [str(v) for v in _listed(values)]
            if any(k not in context for v in listed for k in VARIABLE.findall(v)):
                return False
            listed = [VARIABLE.sub(lambda m: context[m[1]], v) for v in listed]
            patterns = [_pattern(v) if wildcards else re.escape(v) for v in listed]
            matched = any(re.fullmatch(p.replace("*", ".*"), context[key]) for p in patterns)
            if matched == negated:
                return False
    return True


def _for_moto(statement: dict[str, Any]) -> dict[str, Any]:
    for element in ("NotResource", "NotPrincipal"):
        if element in statement:
            raise NotEvaluable(f"{element} in {statement}")
    statement = {k: v for k, v in statement.items() if k not in ("Principal", "Condition")}
    for key in ("Action", "NotAction"):  # IAM matches actions without regard to case
        if key in statement:
            statement[key] = [_pattern(a.lower()) for a in _listed(statement[key])]
    if "Resource" in statement:
        statement["Resource"] = [_pattern(r) for r in _listed(statement["Resource"])]
    return statement


def _with_variables(statement: dict[str, Any], context: dict[str, str]) -> dict[str, Any] | None:
    """The statement with the policy variables in its resources replaced by the request's
    values; a resource naming a key the request does not have matches nothing, and a
    statement left with no resource applies to nothing (None)."""
    if not any("${" in r for r in _listed(statement.get("Resource", []))):
        return statement
    resources = [
        VARIABLE.sub(lambda m: context[m[1]], r)
        for r in _listed(statement["Resource"])
        if all(key in context for key in VARIABLE.findall(r))
    ]
    return {**statement, "Resource": resources} if resources else None


def _decide(
    statements: Iterable[dict[str, Any]], request: Request, context: dict[str, str] | None = None
) -> PermissionResult:
    """moto's decision on the statements whose conditions hold for `context`, their policy
    variables replaced."""
    context = context or {}
    substituted = [_with_variables(s, context) for s in statements]
    applying = [s for s in substituted if s is not None and _condition_holds(s, context)]
    document = {"Version": "2012-10-17", "Statement": [_for_moto(s) for s in applying]}
    if not document["Statement"]:
        return PermissionResult.NEUTRAL
    return IAMPolicy(json.dumps(document)).is_action_permitted(request.action.lower(), request.resource)


def _names(statement: dict[str, Any], principal_arn: str) -> bool:
    """Whether a resource policy's statement names the principal (or everyone, or its account)."""
    principal = statement.get("Principal")
    if principal == "*":
        return True
    aws = _listed(principal.get("AWS", [])) if isinstance(principal, dict) else []
    return any(p in ("*", principal_arn, ACCOUNT, f"arn:{PARTITION}:iam::{ACCOUNT}:root") for p in aws)


@dataclass
class Principal:
    name: str
    arn: str
    statements: list[dict[str, Any]]


@dataclass
class Report:
    evaluated: list[Request] = field(default_factory=list)
    denied: list[tuple[Request, str]] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.denied and not self.unmapped

    def lines(self) -> list[str]:
        lines = [
            f"DENIED  {r.principal}: {r.action} on {r.resource} ({r.origin}): {why}" for r, why in self.denied
        ]
        lines += [f"UNKNOWN {u}" for u in self.unmapped]
        lines += [f"unused  {u}" for u in self.unused]
        return lines


class Evaluation:
    """The deployed stack's principals and resource policies, ready to judge requests."""

    def __init__(self, deployed: Deployed, definition_asset: str) -> None:
        self.deployed = deployed
        self.principals: dict[str, Principal] = {}
        self.environments: dict[str, dict[str, str]] = {}
        for logical_id, function in deployed.of_type("AWS::Lambda::Function").items():
            path = function.get("Metadata", {}).get("aws:cdk:path", "")
            match = re.search(r"/Functions/(\w+)/Resource$", path)
            if match:
                self.principals[match[1]] = self._principal(match[1], logical_id)
                variables = deployed.resolve(
                    function["Properties"].get("Environment", {}).get("Variables", {})
                )
                self.environments[match[1]] = naming_settings({k: str(v) for k, v in variables.items()})
        # Roles a function may assume, by their ARN, and who may assume them (trust policies).
        self.trust: dict[str, list[dict[str, Any]]] = {}
        for logical_id, role in deployed.of_type("AWS::IAM::Role").items():
            document = role.get("Properties", {}).get("AssumeRolePolicyDocument", {"Statement": []})
            trust = _statements(deployed.resolve(document))
            if any(isinstance(s.get("Principal"), dict) and "AWS" in s["Principal"] for s in trust):
                role_arn = deployed.get_att(logical_id, "Arn")
                path = role.get("Metadata", {}).get("aws:cdk:path", "")
                name = path.split("/")[-3] if path.endswith("/Role/Resource") else logical_id
                statements = [s for d in deployed.identity_policies(logical_id) for s in _statements(d)]
                self.principals[role_arn] = Principal(name, role_arn, statements)
                self.trust[role_arn] = trust
        self.definition: dict[str, Any] = {"States": {}}
        for machine in deployed.of_type("AWS::StepFunctions::StateMachine"):  # the one
            self.principals[STATE_MACHINE] = self._principal(STATE_MACHINE, machine)
            self.definition = deployed.state_machine_definition(machine, definition_asset)
        self.bus_policies: dict[str, list[dict[str, Any]]] = {}
        for policy in deployed.of_type("AWS::Events::EventBusPolicy").values():
            properties = deployed.resolve(policy["Properties"])
            bus = arn("events", f"event-bus/{properties['EventBusName']}")
            self.bus_policies.setdefault(bus, []).extend(_listed(properties["Statement"]))

    def _principal(self, name: str, logical_id: str) -> Principal:
        role = self.deployed.role_of(logical_id)
        statements = [s for d in self.deployed.identity_policies(role) for s in _statements(d)]
        return Principal(name, self.deployed.get_att(role, "Arn"), statements)

    def decide(self, request: Request) -> str | None:
        """None when IAM allows the request; otherwise why it does not."""
        principal = self.principals.get(request.principal)
        if principal is None:
            return "no such function in the template"
        context = _context(principal, request)
        if request.action.lower() in ("sts:assumerole", "sts:tagsession"):
            # The role's trust policy must allow it too (required here even where IAM would
            # let a trust policy that names the caller's role allow it alone).
            trust = [s for s in self.trust.get(request.resource, []) if _names(s, principal.arn)]
            if _decide(trust, request, context) is not PermissionResult.PERMITTED:
                return "the role's trust policy does not allow it"
        results = [_decide(principal.statements, request, context)]
        resource_policy = [s for s in self.bus_policies.get(request.resource, []) if _names(s, principal.arn)]
        results.append(_decide(resource_policy, request, context))
        if PermissionResult.DENIED in results:
            return "explicitly denied"
        if PermissionResult.PERMITTED in results:
            return None
        return "no statement allows it"

    def unused(self, requests: list[Request]) -> list[str]:
        """Each role's grants (an action on a resource) that no request used, a line a role."""
        lines = []
        for key, principal in self.principals.items():
            mine = [r for r in requests if r.principal == key]
            grants = [
                f"{action} on {resource.split(':', 5)[-1]}"
                for statement in principal.statements
                if statement["Effect"] == "Allow"
                for action in _listed(statement.get("Action", []))
                if not SERVICE_ACTIONS.match(action)
                for resource in _listed(statement.get("Resource", "*"))
                if not _used({**statement, "Action": action, "Resource": resource}, mine, principal)
            ]
            if grants:
                lines.append(f"{principal.name} may, and no recorded call did: {'; '.join(grants)}")
        return lines


def _context(principal: Principal, request: Request) -> dict[str, str]:
    """The request's context keys that conditions and policy variables here may name."""
    return {"aws:PrincipalArn": principal.arn, "aws:PrincipalAccount": ACCOUNT, **dict(request.context)}


def _used(grant: dict[str, Any], requests: list[Request], principal: Principal) -> bool:
    """Whether any request is allowed by this one grant (one that cannot be judged here is
    counted as used: the evaluation reports it as a failure already)."""
    try:
        return any(
            _decide([grant], r, _context(principal, r)) is PermissionResult.PERMITTED for r in requests
        )
    except NotEvaluable:
        return True


def evaluate(deployed: Deployed, definition_asset: str, recording: Recording) -> Report:
    evaluation = Evaluation(deployed, definition_asset)
    report = Report()
    requests = list(state_machine_requests(evaluation.definition, STATE_MACHINE))
    for call in recording.calls:
        deployed_settings = evaluation.environments.get(call.function)
        if deployed_settings is None:
            report.unmapped.append(f"{call.function}: not a function of the template")
            continue
        try:
            requests.extend(call_requests(call, recording.environment, deployed_settings))
        except Unmapped as error:
            report.unmapped.append(f"{call.function}: {call.operation}: {error}")
    for request in dict.fromkeys(requests):
        report.evaluated.append(request)
        try:
            why = evaluation.decide(request)
        except NotEvaluable as error:  # not judged as IAM would: a failure, not a pass
            why = f"cannot be evaluated here: {error}"
        if why:
            report.denied.append((request, why))
    report.unused = evaluation.unused(report.evaluated)
    return report
