"""What a deployment chooses for the stack itself (CDK context, or lines of its settings
file), and the functions' settings it gives (infra/deployment_settings.py), in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from functions.config import SettingsModel, read_flag
from infra.deployment_settings import (
    LOCAL_ONLY,
    SET_BY_STACK,
    DeploymentSettingsError,
    SettingsRecord,
    function_setting_names,
    read_file,
    validate,
)

LogLevel = Literal["ALL", "ERROR", "FATAL", "OFF"]
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# Context keys also accepted in CDK's own camelCase spelling (`-c alarmEmail=...`).
CAMEL_CASE = {"alarm_email": "alarmEmail"}
# The fields of StackSettings that are no setting a deployment gives (what the app passes,
# and what it derives).
NOT_GIVEN = frozenset({"code_directory", "dependencies_directory", "function_settings", "recorded"})
# A WAFv2 rate-based statement's Limit, requests per evaluation window: 10 to 2,000,000,000
# (AWS WAF API reference, RateBasedStatement); another fails the create and rolls the stack back.
WAF_RATE_LIMITS = (10, 2_000_000_000)


def _option(default: Any, description: str) -> Any:
    """A stack option: its default, and one sentence for docs/configuration.md."""
    return field(default=default, metadata={"description": description})


@dataclass(frozen=True)
class StackSettings:
    """What a deployment chooses: the stack's own options (CDK context `-c name=value`, or
    cdk.json's context, or a line NAME=value of the settings file), and the functions'
    settings. These defaults are the only ones."""

    code_directory: Path  # holds the `functions` package
    dependencies_directory: Path  # holds `python/` with the runtime dependencies (a layer)
    state_machine_log_level: LogLevel = _option(
        "ALL", "The state machine's run log level: ALL, ERROR, FATAL or OFF (payloads never logged)."
    )
    # The stage's throttle, webhooks and status callbacks together: a request over it is a
    # 429, which Twilio never retries (a message lost). The defaults are the account's own
    # Region quota (10,000 a second, burst 5,000): the stage refuses nothing before AWS does.
    api_rate_limit: int = _option(10_000, "The API stage's steady throttle, requests a second (at least 1).")
    api_burst_limit: int = _option(5_000, "The API stage's burst throttle (at least 1).")
    # Twilio signs every request: its own are never counted.
    api_rate_limit_per_ip: int = _option(
        3_000,
        "Requests one IP address may send in 5 minutes without a Twilio signature (10 to 2,000,000,000).",
    )
    # A request over it is a 500, which Twilio retries (docs/deploying.md).
    webhook_reserved_concurrency: int = _option(
        0, "The webhook's reserved concurrency, the cost cap of a flood of forged requests (0: none)."
    )
    # Confirmed by a link AWS sends it; empty: subscribe someone to the topic yourself.
    alarm_email: str = _option("", "An email subscribed to the alarm topic (empty: none).")
    # Account-wide: one per Region, the last stack to set it wins, kept when the stack is
    # deleted (docs/deploying.md).
    manage_api_gateway_account_role: bool = _option(
        False, "Create API Gateway's CloudWatch role and set it on the account (yes or no)."
    )

    # The functions' settings the deployment gives (its settings file's, and the CDK context's
    # in lower case), by environment variable: each given to the functions whose models hold it.
    function_settings: dict[str, str] = field(default_factory=dict)
    # What the deployment was given (the file's name, the settings' hash and names; never a
    # value), recorded with the deployed stack (its output DeploymentSettings).
    recorded: SettingsRecord | None = None

    def __post_init__(self) -> None:
        if self.alarm_email and not EMAIL.fullmatch(self.alarm_email):
            raise ValueError(f"alarm_email is not an email address: {self.alarm_email!r}")
        if self.state_machine_log_level not in get_args(LogLevel):
            raise ValueError(f"state_machine_log_level: one of {', '.join(get_args(LogLevel))}")
        for name in ("api_rate_limit", "api_burst_limit", "api_rate_limit_per_ip"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: at least 1")
        if not WAF_RATE_LIMITS[0] <= self.api_rate_limit_per_ip <= WAF_RATE_LIMITS[1]:
            raise ValueError("api_rate_limit_per_ip: from 10 to 2000000000 (AWS WAF's rate-based rule)")
        if self.webhook_reserved_concurrency < 0:
            raise ValueError("webhook_reserved_concurrency: 0 (none) or more")

    def functions_environment(self) -> dict[str, str]:
        """Every function setting this deployment chooses, validated as the functions will
        read them."""
        validate(self.function_settings)
        return dict(self.function_settings)

    def functions[Model: SettingsModel](self, model: type[Model]) -> Model:
        """One of the functions' settings models as this deployment gives it (its defaults
        where nothing is chosen): the stack reads what it needs of the functions' settings
        through the model that owns them (WEBHOOK_BASE_URL, OPENAI_MODEL, ...)."""
        read = validate(self.function_settings)[model]
        assert isinstance(read, model)
        return read

    @classmethod
    def from_context(cls, context: Any, code_directory: Path, dependencies_directory: Path) -> StackSettings:
        """Settings from a CDK context lookup (`app.node.try_get_context`): the stack's own
        options by their field names, any function setting by its variable in lower case
        (`-c batch_window_seconds=5`, `-c openai_model=...`), and a settings file
        (`settings_file`) of both in capitals; `-c` wins over the file."""
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
        for name in sorted(function_setting_names()):
            value = context(name.lower())
            if value is None:
                continue
            if name in SET_BY_STACK | LOCAL_ONLY:
                why = "set by the stack itself" if name in SET_BY_STACK else "the local stack's only"
                raise DeploymentSettingsError(f"{name} (CDK context {name.lower()}): {why}")
            recorded[name] = str(value)
            functions[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        validate(functions)
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
