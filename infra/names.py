"""The names the stack repeats, and what a deployment may choose, in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from functions.answer.openai_models import DEFAULT_MODEL
from functions.config import read_flag
from functions.observability import NAMESPACE, SERVICE
from functions.public_url import PublicBase, public_base
from functions.stack_names import (
    STACK_NAME,
    event_bus_name,
    metrics_namespace,
    openai_tenant_secret_prefix,
    state_machine_name,
    tool_tenant_secret_prefix,
    twilio_tenant_secret_prefix,
)

if TYPE_CHECKING:
    from infra.deployment_settings import SettingsRecord

__all__ = [
    "NAMESPACE",
    "SERVICE",
    "STACK_NAME",
    "StackSettings",
    "event_bus_name",
    "metrics_namespace",
    "openai_tenant_secret_prefix",
    "state_machine_name",
    "tool_tenant_secret_prefix",
    "twilio_tenant_secret_prefix",
]

LogLevel = Literal["ALL", "ERROR", "FATAL", "OFF"]
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# Context keys also accepted in CDK's own camelCase spelling (`-c alarmEmail=...`).
CAMEL_CASE = {"alarm_email": "alarmEmail"}
# The fields of StackSettings that are no setting a deployment gives (what the app passes,
# and what it derives).
NOT_GIVEN = frozenset({"code_directory", "dependencies_directory", "function_settings", "recorded"})


def state_machine_log_group_name(machine_name: str) -> str:
    """Under /aws/vendedlogs/ (docs/adr/0048-what-aws-does-differently-checked-before.md): the
    state machine's run log."""
    return f"/aws/vendedlogs/states/{machine_name}"


# A WAFv2 rate-based statement's Limit, requests per evaluation window: 10 to 2,000,000,000
# (AWS WAF API reference, RateBasedStatement); another fails the create and rolls the stack back.
WAF_RATE_LIMITS = (10, 2_000_000_000)


@dataclass(frozen=True)
class StackSettings:
    """What a deployment chooses: CDK context (`-c name=value`, or cdk.json's context).
    These defaults are the only ones."""

    code_directory: Path  # holds the `functions` package
    dependencies_directory: Path  # holds `python/` with the runtime dependencies (a layer)
    batch_window_seconds: int = 10
    auto_create_conversations: bool = False
    state_machine_log_level: LogLevel = "ALL"  # payloads never logged
    # The stage's throttle, webhooks and status callbacks together: a request over it is a
    # 429, which Twilio never retries (a message lost). The defaults are the account's own
    # Region quota (10,000 a second, burst 5,000): the stage refuses nothing before AWS does.
    api_rate_limit: int = 10_000  # requests per second, steady
    api_burst_limit: int = 5_000
    # The web ACL's rate rule: requests one IP address may send in 5 minutes without an
    # X-Twilio-Signature header (Twilio signs every request: its own are never counted).
    api_rate_limit_per_ip: int = 3_000
    # The webhook's reserved concurrency, the cost cap of a flood of forged requests (a
    # request over it is a 500, which Twilio retries); 0: none (docs/deploying.md).
    webhook_reserved_concurrency: int = 0
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
    # Create API Gateway's CloudWatch role and set it on the account (account-wide: one per
    # Region, the last stack to set it wins, kept when the stack is deleted; docs/deploying.md).
    manage_api_gateway_account_role: bool = False

    # The functions' settings a settings file gives (`-c settings_file=FILE`; by environment
    # variable, validated: infra/deployment_settings.py), each given to the functions that read it.
    function_settings: dict[str, str] = field(default_factory=dict)
    # What the deployment was given (the file's name, the settings' hash and names; never a
    # value), recorded with the deployed stack (its output DeploymentSettings).
    recorded: SettingsRecord | None = None

    def __post_init__(self) -> None:
        if self.alarm_email and not EMAIL.fullmatch(self.alarm_email):
            raise ValueError(f"alarm_email is not an email address: {self.alarm_email!r}")
        if self.state_machine_log_level not in get_args(LogLevel):
            raise ValueError(f"state_machine_log_level: one of {', '.join(get_args(LogLevel))}")
        for name in ("api_rate_limit", "api_burst_limit", "api_rate_limit_per_ip", "batch_window_seconds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: at least 1")
        if not WAF_RATE_LIMITS[0] <= self.api_rate_limit_per_ip <= WAF_RATE_LIMITS[1]:
            raise ValueError("api_rate_limit_per_ip: from 10 to 2000000000 (AWS WAF's rate-based rule)")
        if self.webhook_reserved_concurrency < 0:
            raise ValueError("webhook_reserved_concurrency: 0 (none) or more")

    def functions_environment(self) -> dict[str, str]:
        """Every function setting this deployment chooses (the file's, and the four the CDK
        context has always set), validated as the functions will read them."""
        from infra.deployment_settings import validate

        chosen = {
            **self.function_settings,
            "BATCH_WINDOW_SECONDS": str(self.batch_window_seconds),
            "AUTO_CREATE_CONVERSATIONS": "true" if self.auto_create_conversations else "false",
            "OPENAI_MODEL": self.openai_model,
            **({"OPENAI_FALLBACK_MODEL": self.openai_fallback_model} if self.openai_fallback_model else {}),
        }
        validate(chosen)
        return chosen

    def public_base(self) -> PublicBase:
        """The configured base URL without its fragment, and the connection overrides."""
        return public_base(self.webhook_base_url, self.twilio_connection_overrides)

    @classmethod
    def from_context(cls, context: Any, code_directory: Path, dependencies_directory: Path) -> StackSettings:
        """Settings from a CDK context lookup (`app.node.try_get_context`)."""
        from infra.deployment_settings import SettingsRecord, function_setting_names, read_file

        settings_file = context("settings_file")
        given = read_file(Path(settings_file), stack_setting_names()) if settings_file else {}
        recorded = dict(given)  # every setting given, by its name in capitals: the file's, then -c's
        chosen: dict[str, Any] = {}
        for setting in fields(cls):
            if setting.name in NOT_GIVEN:
                continue
            value = context(setting.name)
            if value is None and setting.name in CAMEL_CASE:
                value = context(CAMEL_CASE[setting.name])
            if value is not None:
                recorded[setting.name.upper()] = str(value)
            else:  # `-c` wins over the file
                value = given.pop(setting.name.upper(), None)
            given.pop(setting.name.upper(), None)
            if value is None:
                continue
            try:
                if setting.type == "bool":
                    value = read_flag(value)
                elif setting.type == "int":
                    value = int(value)
            except ValueError as error:
                raise ValueError(f"{setting.name.upper()} (CDK context {setting.name}): {error}") from None
            chosen[setting.name] = value
        functions = {name: value for name, value in given.items() if name in function_setting_names()}
        return cls(
            code_directory=code_directory,
            dependencies_directory=dependencies_directory,
            function_settings=functions,
            recorded=SettingsRecord.of(Path(settings_file).name if settings_file else "", recorded),
            **chosen,
        )


def stack_setting_names() -> dict[str, str]:
    """The stack settings a file may give, by their name in capitals -> their context key."""
    return {f.name.upper(): f.name for f in fields(StackSettings) if f.name not in NOT_GIVEN}
