"""The names the stack repeats, and what a deployment may choose, in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from functions.config import read_flag
from functions.integrations.openai_models import DEFAULT_MODEL
from functions.observability import NAMESPACE, SERVICE
from functions.public_url import PublicBase, public_base
from functions.stack_names import (
    STACK_NAME,
    event_bus_name,
    openai_tenant_secret_prefix,
    state_machine_name,
    twilio_tenant_secret_prefix,
)

__all__ = [
    "NAMESPACE",
    "SERVICE",
    "STACK_NAME",
    "StackSettings",
    "event_bus_name",
    "openai_tenant_secret_prefix",
    "state_machine_name",
    "twilio_tenant_secret_prefix",
]

EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# Context keys also accepted in CDK's own camelCase spelling (`-c alarmEmail=...`).
CAMEL_CASE = {"alarm_email": "alarmEmail"}


def state_machine_log_group_name(machine_name: str) -> str:
    """Under /aws/vendedlogs/ (docs/decisions.md): the state machine's run log."""
    return f"/aws/vendedlogs/states/{machine_name}"


@dataclass(frozen=True)
class StackSettings:
    """What a deployment chooses: CDK context (`-c name=value`, or cdk.json's context).
    These defaults are the only ones."""

    code_directory: Path  # holds the `functions` package
    dependencies_directory: Path  # holds `python/` with the runtime dependencies (a layer)
    batch_window_seconds: int = 10
    auto_create_conversations: bool = False
    state_machine_log_level: str = "ALL"  # ALL, ERROR, FATAL or OFF; payloads never logged
    api_rate_limit: int = 50  # requests per second, steady
    api_burst_limit: int = 100
    # The web ACL's rate rule: requests one IP address may send in 5 minutes (a fifth of
    # the stage's steady rate), so that one address cannot crowd Twilio out of the throttle.
    api_rate_limit_per_ip: int = 3_000
    # The public base URL Twilio calls (a custom domain, with its base path); empty: the
    # API's own execute-api URL with its stage. Signatures are checked against it. A
    # fragment on it sets the connection overrides instead of the next setting.
    webhook_base_url: str = ""
    # The connection overrides the URLs given to Twilio carry (its "Webhooks connection
    # overrides"): without them Twilio does not retry a webhook that answered 5xx.
    twilio_connection_overrides: str = "rc=5&rp=all"
    # Who hears the alarms: an email subscribed to the alarm topic (confirmed by a link
    # AWS sends it). Empty: the topic has no subscriber; subscribe someone to it yourself.
    alarm_email: str = ""
    # The functions' OPENAI_MODEL, and OPENAI_FALLBACK_MODEL (empty: none), which answers
    # when OpenAI does not serve the first (`make synth` warns 30 days before a shutdown).
    openai_model: str = DEFAULT_MODEL
    openai_fallback_model: str = ""

    def __post_init__(self) -> None:
        if self.alarm_email and not EMAIL.fullmatch(self.alarm_email):
            raise ValueError(f"alarm_email is not an email address: {self.alarm_email!r}")

    def public_base(self) -> PublicBase:
        """The configured base URL without its fragment, and the connection overrides."""
        return public_base(self.webhook_base_url, self.twilio_connection_overrides)

    @classmethod
    def from_context(cls, context: Any, code_directory: Path, dependencies_directory: Path) -> StackSettings:
        """Settings from a CDK context lookup (`app.node.try_get_context`)."""
        chosen: dict[str, Any] = {}
        for field in fields(cls):
            value = context(field.name)
            if value is None and field.name in CAMEL_CASE:
                value = context(CAMEL_CASE[field.name])
            if value is None or field.name.endswith("_directory"):
                continue
            try:
                if field.type == "bool":
                    value = read_flag(value)
                elif field.type == "int":
                    value = int(value)
            except ValueError as error:
                raise ValueError(f"CDK context {field.name}: {error}") from None
            chosen[field.name] = value
        return cls(code_directory=code_directory, dependencies_directory=dependencies_directory, **chosen)
