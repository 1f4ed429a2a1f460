"""A deployment's settings: a file of `NAME=value` lines (`make deploy SETTINGS=FILE`, CDK
context `settings_file`), with the names of docs/configuration.md.

The file is read with python-dotenv (comments, quotes and `export` as a shell or a `.env`
file writes them). Each name is one of two kinds:
- a function setting (a field of one of the settings models, functions/registry.py
  `ALL_SETTINGS`): validated at synth by that same model, so a value a function would refuse
  at its cold start fails `make synth` instead, naming the variable; each function is given
  the settings of the models its row in functions/registry.py declares, and no other;
- a stack setting (infra/stack_settings.py's `StackSettings`, the CDK context keys in
  capitals): `API_RATE_LIMIT=...` is `-c api_rate_limit=...`; a `-c` value wins over the file.
Names the stack sets itself (its resources' names) and names that are neither are refused;
secret values never belong in the file (a secret's name does)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from functions.batching.settings import BatchingSettings
from functions.config import SettingsError, SettingsModel, read_settings
from functions.registry import ALL_SETTINGS, BY_NAME, FunctionDefinition
from functions.storage.tables import ALL_TABLES

# What the stack sets itself, on the functions whose models name them: its resources' names and
# ARNs (a settings file may not give them).
SET_BY_STACK = frozenset(
    {
        *(table.env_var for table in ALL_TABLES),
        "STATE_MACHINE_ARN",
        "EVENT_BUS_NAME",
        "OPENAI_SECRET_NAME",
        "CONVERSATION_ID_KEY_SECRET_NAME",
        "TWILIO_TENANT_SECRET_PREFIX",
        "OPENAI_TENANT_SECRET_PREFIX",
        "TWILIO_TENANT_READER_ROLE_ARN",
        "OPENAI_TENANT_READER_ROLE_ARN",
        "TOOL_TENANT_SECRET_PREFIX",
        "TOOL_TENANT_READER_ROLE_ARN",
    }
)
# The local stack's only, refused in a settings file: on AWS, a tool endpoint on loopback
# would be the Lambda runtime's own API, and a Twilio stand-in's URL would send a tenant's
# credentials to another host.
LOCAL_ONLY = frozenset({"TOOL_LOOPBACK_HTTP", "TWILIO_API_BASE_URL"})
# What a secret looks like: an OpenAI key, a Twilio auth token or API key secret.
_SECRET_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_-]{20,}|[0-9a-f]{32})\b")


class DeploymentSettingsError(ValueError):
    """A settings file amiss: each line names the setting (never its value)."""


def function_setting_names() -> frozenset[str]:
    """Every function setting, by its environment variable."""
    return frozenset().union(*(model.variables() for model in ALL_SETTINGS))


def read_file(path: Path, stack_settings: Iterable[str]) -> dict[str, str]:
    """The `NAME=value` lines of a settings file, checked: every name a setting (of a function,
    or one of `stack_settings`), none the stack sets itself, no secret value."""
    if not path.is_file():
        raise DeploymentSettingsError(f"settings file {path}: not found")
    values = dotenv_values(path, interpolate=False)
    problems = []
    known = function_setting_names() | set(stack_settings)
    for name, value in values.items():
        if value is None:
            problems.append(f"{name}: no value (write {name}=value)")
        elif name in SET_BY_STACK:
            problems.append(f"{name}: set by the stack itself (its resources' names); leave it out")
        elif name in LOCAL_ONLY:
            problems.append(f"{name}: the local stack's only; leave it out")
        elif name not in known:
            problems.append(f"{name}: not a setting (docs/configuration.md lists them)")
        elif _SECRET_LIKE.search(value):
            problems.append(f"{name}: looks like a secret; keep secrets in Secrets Manager, not in this file")
    if problems:
        raise DeploymentSettingsError(f"settings file {path}:\n  " + "\n  ".join(problems))
    return {name: value for name, value in values.items() if value is not None}


def validate(chosen: Mapping[str, str]) -> dict[type[SettingsModel], SettingsModel]:
    """Every settings model as a function would read it (the stack's own names stood in for):
    a value amiss fails here, named, as it would fail the cold start of the functions that
    read it."""
    stand_ins = {name: f"set-by-stack-{name.lower()}" for name in SET_BY_STACK}
    try:
        models = read_settings({**stand_ins, **chosen}, ALL_SETTINGS)
    except SettingsError as error:
        raise DeploymentSettingsError(str(error)) from None
    read = {type(model): model for model in models}
    batching = next(m for m in models if isinstance(m, BatchingSettings))
    if batching.quiet_min_seconds > batching.quiet_max_seconds:  # settings that contradict each other
        raise DeploymentSettingsError("QUIET_MIN_SECONDS is above QUIET_MAX_SECONDS (adaptive mode's bounds)")
    return read


@dataclass(frozen=True)
class SettingsRecord:
    """What a deployment was given, recorded with the deployed stack (its output
    DeploymentSettings, which DescribeStacks returns with the stack) and compared with the
    next deploy's by `python -m infra.account`: the settings file's name (without its
    folder), the sha256 of the settings given (the file's and `-c`'s, as `NAME=value` lines
    in name order: comments, quotes and order do not count) and their names. Never a value:
    a hash of them all, which the file's rules keep free of secrets (`read_file`)."""

    file: str  # the settings file's name; empty: none was given
    sha256: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, file: str, given: Mapping[str, str]) -> SettingsRecord:
        lines = "".join(f"{name}={given[name]}\n" for name in sorted(given))
        return cls(file, hashlib.sha256(lines.encode()).hexdigest(), tuple(sorted(given)))

    def to_output(self) -> str:
        """The output's value: JSON, compact (an output value is a string)."""
        return json.dumps(
            {"file": self.file, "sha256": self.sha256, "names": list(self.names)}, separators=(",", ":")
        )

    @classmethod
    def from_output(cls, value: str) -> SettingsRecord | None:
        """The record an output holds; None for one this code cannot read."""
        try:
            data = json.loads(value)
            return cls(str(data["file"]), str(data["sha256"]), tuple(str(n) for n in data["names"]))
        except (ValueError, KeyError, TypeError):
            return None

    def __str__(self) -> str:
        given = f"settings file {self.file}" if self.file else "no settings file"
        names = ", ".join(self.names) if self.names else "no settings"
        return f"{given} (sha256 {self.sha256[:12]}; {names})"


def for_function(definition: FunctionDefinition, chosen: Mapping[str, str]) -> dict[str, str]:
    """The chosen settings of the models this function declares (functions/registry.py)."""
    return {name: value for name, value in chosen.items() if name in definition.variables}


def settings_not_given(read: Iterable[tuple[str, str]]) -> list[str]:
    """The settings models a function read while the tests ran (infra/local/aws_calls.py
    records them) that its row in functions/registry.py does not declare, so that the stack
    would not give it their settings: (function, model) -> a line naming both."""
    declared = {name: {model.__name__: model for model in d.settings} for name, d in BY_NAME.items()}
    every = {model.__name__: model for model in ALL_SETTINGS}
    lines = []
    for function, model in read:
        if function not in declared or model in declared[function]:
            continue
        names = ", ".join(sorted(every[model].variables())) if model in every else "not in ALL_SETTINGS"
        lines.append(
            f"NOT GIVEN {function}: read {model} ({names}), which its row in functions/registry.py "
            "does not declare"
        )
    return lines
