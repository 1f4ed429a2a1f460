"""What each account check takes and gives: the deploy it checks for, the AWS clients it
asks, and the line it prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from infra.deployment_settings import SettingsRecord

# Quick answers or none: a check that waits a minute on a dead endpoint helps nobody.
CONFIG = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2, "mode": "standard"})
# A stack in these states holds no completed create: `cdk deploy` creates it (again).
NEVER_CREATED = {"ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "CREATE_FAILED", "REVIEW_IN_PROGRESS"}


@dataclass(frozen=True)
class Line:
    status: str  # ok, warn or FAIL
    what: str
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"

    def __str__(self) -> str:
        return f"[{self.status}] {self.what}: {self.detail}"


class Clients:
    """One boto3 client per service, from one session (tests stub one of them)."""

    def __init__(self, session: boto3.Session | None = None) -> None:
        self.session = session or boto3.Session()
        self._made: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        if service not in self._made:
            self._made[service] = self.session.client(service, config=CONFIG)  # type: ignore[call-overload]
        return self._made[service]


@dataclass(frozen=True)
class Deploy:
    """What the deploy will do: the stack, its synthesized template (None if not
    synthesized), the CDK context's choice; and where, once the credentials are known."""

    stack: str
    template: dict[str, Any] | None
    manages_role: bool
    account: str = ""
    region: str = ""
    deployed: dict[str, Any] | None = field(default=None)  # describe_stacks' answer
    # What this deploy is given (its settings file, the settings' hash and names).
    settings: SettingsRecord | None = None

    @property
    def creates(self) -> bool:
        """A first create (or a create again after a failed one), not an update."""
        return self.deployed is None or self.deployed["StackStatus"] in NEVER_CREATED


def describe_stack(clients: Clients, name: str) -> dict[str, Any] | None:
    """describe_stacks' answer for the stack, or None where it does not exist."""
    try:
        stacks = clients("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if error_code(error) == "ValidationError":  # "Stack with id ... does not exist"
            return None
        raise
    return stacks[0] if stacks else None


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", "Error"))


def resources_of(template: dict[str, Any] | None, kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in (template or {}).get("Resources", {}).items() if v.get("Type") == kind}
