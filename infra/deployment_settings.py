"""A deployment's settings: a file of `NAME=value` lines (`make deploy SETTINGS=FILE`, CDK
context `settings_file`), with the names of docs/configuration.md.

The file is read with python-dotenv (comments, quotes and `export` as a shell or a `.env`
file writes them). Each name is one of two kinds:
- a function setting (`functions/config.py`'s `Settings`): validated at synth by that same
  model, so a value a function would refuse at its cold start fails `make synth` instead,
  naming the variable; each function is given the settings its code reads
  (`settings_read_by`, derived from the code, not kept by hand);
- a stack setting (`infra/names.py`'s `StackSettings`, the CDK context keys in capitals):
  `API_RATE_LIMIT=...` is `-c api_rate_limit=...`; a `-c` value wins over the file.
Names the stack sets itself (its resources' names) and names that are neither are refused;
secret values never belong in the file (a secret's name does)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dotenv import dotenv_values

from functions.config import Settings, SettingsError, read_settings
from functions.registry import FunctionDefinition
from functions.storage.tables import ALL_TABLES

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ROOT / "functions"

# What the stack itself gives every function: its resources' names and ARNs, and its URLs.
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
        # Only for the local stand-in of Twilio: on AWS it would send a tenant's credentials
        # to another host.
        "TWILIO_API_BASE_URL",
    }
)
# The local stack's only, refused in a settings file: on AWS, a tool endpoint on loopback
# would be the Lambda runtime's own API.
LOCAL_ONLY = frozenset({"TOOL_LOOPBACK_HTTP"})
# What a secret looks like: an OpenAI key, a Twilio auth token or API key secret.
_SECRET_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_-]{20,}|[0-9a-f]{32})\b")


class DeploymentSettingsError(ValueError):
    """A settings file amiss: each line names the setting (never its value)."""


def function_setting_names() -> frozenset[str]:
    return frozenset(name.upper() for name in Settings.model_fields)


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


def validate(chosen: Mapping[str, str]) -> Settings:
    """The functions' settings as a function would read them (the stack's own names stood in
    for): a value amiss fails here, named, as it would fail every function's cold start."""
    stand_ins = {name: f"set-by-stack-{name.lower()}" for name in SET_BY_STACK}
    try:
        settings = read_settings({**stand_ins, **chosen})
    except SettingsError as error:
        raise DeploymentSettingsError(str(error)) from None
    if settings.quiet_min_seconds > settings.quiet_max_seconds:  # settings that contradict each other
        raise DeploymentSettingsError("QUIET_MIN_SECONDS is above QUIET_MAX_SECONDS (adaptive mode's bounds)")
    return settings


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
    """The chosen function settings that this function's code reads."""
    reads = settings_read_by(definition.handler.rpartition(".")[0])
    return {name: value for name, value in chosen.items() if name in reads}


# --- which settings a function's code reads ------------------------------------------------
# A function reads a setting where any module its handler imports (directly or through other
# modules of `functions`) names the field as an attribute (`settings.batch_mode`,
# `get_settings().turns_table`), or calls a method of Settings that reads it
# (`settings.batching_defaults()`). A name matched elsewhere (another object's attribute of
# the same name) only gives a function one setting more; the test run checks the other way,
# that every setting a function read while the tests ran is one derived here (recorded by
# infra/local/aws_calls.py, judged by settings_not_given below).


@cache
def settings_read_by(module: str) -> frozenset[str]:
    """The environment variables of the settings that `module` and what it imports read."""
    fields_by_name = set(Settings.model_fields)
    methods = _settings_methods()
    read: set[str] = set()
    # config.py defines the fields (its methods are read above), it reads none of them itself.
    for name in _import_closure(module) - {"functions.config"}:
        for attribute in _attributes(name):
            if attribute in fields_by_name:
                read.add(attribute)
            read.update(methods.get(attribute, ()))
    return frozenset(field.upper() for field in read)


@cache
def _settings_methods() -> dict[str, frozenset[str]]:
    """Each method of Settings -> the fields it reads (`self.<field>`)."""
    tree = ast.parse((FUNCTIONS / "config.py").read_text())
    found: dict[str, frozenset[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == Settings.__name__:
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    found[method.name] = frozenset(
                        n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute) and _on_self(n)
                    )
    return found


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "self"


def _import_closure(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or _source(name) is None:
            continue
        seen.add(name)
        todo.extend(_imports(name))
    return seen


@cache
def _source(module: str) -> Path | None:
    """The file of one of our modules (None: not ours, or not a module)."""
    if module != "functions" and not module.startswith("functions."):
        return None
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _tree(module: str) -> ast.Module:
    path = _source(module)
    assert path is not None
    return ast.parse(path.read_text(), filename=str(path))


def _imports(module: str) -> Iterable[str]:
    """Our modules that `module` imports, wherever in it (a lazy import inside a function too),
    with the packages above them (importing a.b.c runs a/__init__ and a/b/__init__)."""
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))


@cache
def _attributes(module: str) -> frozenset[str]:
    return frozenset(node.attr for node in ast.walk(_tree(module)) if isinstance(node, ast.Attribute))


def settings_not_given(read: Iterable[tuple[str, str]]) -> list[str]:
    """The settings a function read while the tests ran (infra/local/aws_calls.py records
    them) that the stack would not give it: (function, variable) -> a line naming both."""
    from functions.registry import BY_NAME

    return [
        f"NOT GIVEN {function}: read {setting}, which a settings file would not reach"
        for function, setting in read
        if function in BY_NAME
        and setting not in settings_read_by(BY_NAME[function].handler.rpartition(".")[0])
    ]
