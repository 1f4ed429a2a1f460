"""Every AWS API call a function makes on the local stack, recorded with what IAM needs
to judge it: which function made it, the operation, and the names it was given (tables
and indexes, secrets, the event bus, the state machine and its runs).

moto evaluates no resource-level IAM, so the local stack cannot show a missing grant by
failing. Instead, each call made while a handler runs (infra/local/lambdas.py sets the
function) is kept here, and infra/iam evaluates it against that function's role in the
synthesized template, as IAM would (tests/conftest.py does at the end of every test run).
Calls made by anything else (the tests, the stand-ins, the local stack's own setup) are
not a function's and are not recorded.

It also keeps on whose behalf each DynamoDB item was written (the conversation a task ran
for, or the person a webhook or status callback was about; any write, its condition held or
not): an item every conversation writes is hot at volume (tests/e2e/pipeline/test_shared_items.py)."""

from __future__ import annotations

import base64
import contextvars
import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.parameters.secrets import SecretsProvider
from botocore.client import BaseClient

from functions.config import Settings, read_settings
from functions.storage.tables import ALL_TABLES

_function: contextvars.ContextVar[str | None] = contextvars.ContextVar("function", default=None)
# On whose behalf the handler runs: ("conversation", id) or ("person", address), or None.
_on_behalf_of: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "on_behalf_of", default=None
)


@dataclass(frozen=True)
class AwsCall:
    """One call, as IAM sees it before the names are turned into ARNs."""

    function: str  # the function's logical id (functions/registry.py)
    service: str  # the signing name, which is IAM's prefix: dynamodb, states, secretsmanager, events
    operation: str  # the API operation: Query, TransactWriteItems, GetSecretValue, ...
    names: tuple[tuple[str, str], ...]  # (kind, name) pairs: ("table", "Turns"), ("index", ...)
    # Made with the credentials of a role the function assumed: that role, and the session's tags.
    session: tuple[tuple[str, str], ...] = ()  # (("role", <ARN>), ("tag:tenant", "AC..."), ...)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> AwsCall:
        """The call from its JSON form (dataclasses.asdict)."""
        pairs = [tuple((k, v) for k, v in data.get(key, [])) for key in ("names", "session")]
        return cls(data["function"], data["service"], data["operation"], pairs[0], pairs[1])

    def sort_key(self) -> tuple[str, str, str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
        return (self.function, self.service, self.operation, self.names, self.session)


def names_of(service: str, operation: str, params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The resource names a call's parameters carry, with their kind. A transaction's or a
    batch's items each name their table, and a transaction item its own operation."""
    found: list[tuple[str, str]] = []
    if "TableName" in params:
        found.append(("table", params["TableName"]))
    if "IndexName" in params:
        found.append(("index", params["IndexName"]))
    for table in params.get("RequestItems", {}):
        found.append(("table", table))
    for item in params.get("TransactItems", []):
        for kind, request in item.items():  # {"Update": {"TableName": ...}}
            found.append((f"transact:{kind}", request["TableName"]))
    for key in ("SecretId", "stateMachineArn", "executionArn", "RoleArn"):
        if key in params:
            found.append((key, params[key]))
    for tag in params.get("Tags", []) if service == "sts" else []:  # a session's tags
        found.append((f"tag:{tag['Key']}", tag["Value"]))
    for entry in params.get("Entries", []):
        if "EventBusName" in entry:
            found.append(("EventBusName", entry["EventBusName"]))
        if "Source" in entry:  # the condition key events:source
            found.append(("Source", entry["Source"]))
        if "DetailType" in entry:  # and events:detail-type
            found.append(("DetailType", entry["DetailType"]))
    return tuple(sorted(set(found)))


WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def _key_of(table: str, item: dict[str, Any]) -> str:
    """An item's key as text, from its key attributes (a PutItem's item carries more)."""
    definition = next((d for d in ALL_TABLES if table in (d.logical_id, os.environ.get(d.env_var))), None)
    names = [definition.partition_key, definition.sort_key] if definition else sorted(item)
    return "|".join(
        next(iter(item[n].values())) if isinstance(item[n], dict) else str(item[n])
        for n in names
        if n and n in item
    )


def items_written(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """The (table, key) of each item a DynamoDB call writes (low-level parameters)."""
    if operation in WRITES:
        return [(params["TableName"], _key_of(params["TableName"], params.get("Key") or params["Item"]))]
    found = []
    if operation == "BatchWriteItem":
        for table, requests in params["RequestItems"].items():
            for request in requests:
                for (
                    write
                ) in request.values():  # {"PutRequest": {"Item": ...}} or {"DeleteRequest": {"Key": ...}}
                    found.append((table, _key_of(table, write.get("Key") or write["Item"])))
    for item in params.get("TransactItems", []) if operation == "TransactWriteItems" else []:
        for kind, write in item.items():
            if kind != "ConditionCheck":  # a check writes nothing
                found.append(
                    (write["TableName"], _key_of(write["TableName"], write.get("Key") or write["Item"]))
                )
    return found


def on_behalf_of(payload: Any) -> tuple[str, str] | None:
    """Whom an invocation is for: a task's conversation, or the person a webhook is from (a
    status callback: to)."""
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("conversation_id"), str):
        return ("conversation", payload["conversation_id"])
    body = payload.get("body")
    if not isinstance(body, str):
        return None
    if payload.get("isBase64Encoded"):
        body = base64.b64decode(body).decode(errors="replace")
    form = dict(urllib.parse.parse_qsl(body))
    person = form.get("To") if "MessageStatus" in form else form.get("From")
    return ("person", person) if person else None


class Recorder:
    """The calls recorded in this process, each distinct one once."""

    def __init__(self) -> None:
        self._calls: set[AwsCall] = set()
        # (table, key) -> on whose behalf it was written
        self._writes: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._lock = threading.Lock()
        self._original: Any = None
        # The sessions functions assumed, by their access key: the role and the session's tags.
        self._sessions: dict[str, tuple[tuple[str, str], ...]] = {}
        # The settings each function read: (function, environment variable).
        self._settings_read: set[tuple[str, str]] = set()

    def install(self) -> None:
        """Record every call a function makes through any botocore client from now on."""
        if self._original is not None:
            return
        original = self._original = BaseClient._make_api_call
        recorder = self

        def recording(client: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
            if _function.get() is None:  # not a function's call
                return original(client, operation_name, api_params)
            service = client.meta.service_model.signing_name  # IAM's prefix
            names = names_of(service, operation_name, api_params)
            recorder._add(service, operation_name, names, client)
            if service == "dynamodb":
                recorder._add_writes(operation_name, api_params)
            result = original(client, operation_name, api_params)
            if operation_name == "AssumeRole":
                recorder._keep_session(result, names)
            return result

        BaseClient._make_api_call = recording  # type: ignore[method-assign]
        self._record_cached_secrets()
        self._record_settings_read()

    def _record_settings_read(self) -> None:
        """Each setting a function's code reads while it runs (an attribute of its Settings), for
        the check that the stack gives it (infra/deployment_settings.py derives them from the code)."""
        recorder, original, names = self, Settings.__getattribute__, frozenset(Settings.model_fields)

        def reading(settings: Settings, name: str) -> Any:
            if name in names and (function := _function.get()) is not None:
                with recorder._lock:
                    recorder._settings_read.add((function, name.upper()))
            return original(settings, name)

        Settings.__getattribute__ = reading  # type: ignore[method-assign,assignment]

    def settings_read(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._settings_read)

    def _record_cached_secrets(self) -> None:
        """Powertools caches secrets in the process: here one process for every function,
        on AWS one each. A read the cache answered is recorded as the call that function's
        own process would have made."""
        recorder, original = self, SecretsProvider.get

        def get(provider: SecretsProvider, name: str, *args: Any, **kwargs: Any) -> Any:
            recorder._add("secretsmanager", "GetSecretValue", (("SecretId", name),), provider.client)
            return original(provider, name, *args, **kwargs)

        SecretsProvider.get = get  # type: ignore[method-assign,assignment]

    def _keep_session(self, result: dict[str, Any], names: tuple[tuple[str, str], ...]) -> None:
        """A role a function assumed: the calls made with its credentials are that role's."""
        role = dict(names)["RoleArn"]
        session = (("role", role), *((k, v) for k, v in names if k.startswith("tag:")))
        with self._lock:
            self._sessions[result["Credentials"]["AccessKeyId"]] = session

    def _add(self, service: str, operation: str, names: tuple[tuple[str, str], ...], client: Any) -> None:
        """Keep the call if a function's handler is making it, with the session whose
        credentials the client signs with, if a function assumed it."""
        function = _function.get()
        if function is None:
            return
        credentials = getattr(getattr(client, "_request_signer", None), "_credentials", None)
        with self._lock:
            session = self._sessions.get(getattr(credentials, "access_key", None) or "", ())
            self._calls.add(AwsCall(function, service, operation, names, session))
            if session:  # one process shares the sessions here; on AWS each function assumes its own
                tags = [(k, v) for k, v in session if k.startswith("tag:")]
                assumed = tuple(sorted({("RoleArn", dict(session)["role"]), *tags}))
                self._calls.add(AwsCall(function, "sts", "AssumeRole", assumed))

    def _add_writes(self, operation: str, params: dict[str, Any]) -> None:
        whom = _on_behalf_of.get()
        if whom is None:
            return
        written = items_written(operation, params)
        with self._lock:
            for item in written:
                self._writes.setdefault(item, set()).add(whom)

    def writers(self) -> dict[tuple[str, str], set[tuple[str, str]]]:
        """Each DynamoDB item written so far ((table, key)), and on whose behalf: a copy."""
        with self._lock:
            return {item: set(whom) for item, whom in self._writes.items()}

    def calls(self) -> list[AwsCall]:
        with self._lock:
            return sorted(self._calls, key=AwsCall.sort_key)

    def dump(self, path: Path) -> None:
        """Write the calls recorded so far to `path` (JSON), for infra.iam and make preflight,
        with the settings that named their resources locally (the deployed functions are
        given the same settings with the deployed names)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        environment = naming_settings(dict(os.environ))
        calls = [asdict(c) for c in self.calls()]
        data = {"environment": environment, "calls": calls, "settings_read": self.settings_read()}
        path.write_text(json.dumps(data, indent=1))


# The settings that name an AWS resource: tables, secrets and their prefixes, the event
# bus, the state machine.
NAMING_SETTINGS = ("_TABLE", "_PREFIX", "_NAME", "_ARN")


def naming_settings(environ: dict[str, str]) -> dict[str, str]:
    """The settings a function reads from `environ` (its defaults included) that name an
    AWS resource, by their environment variable."""
    settings = read_settings(environ)
    values = settings.model_dump()
    return {n.upper(): str(v) for n, v in values.items() if n.upper().endswith(NAMING_SETTINGS)}


@dataclass(frozen=True)
class Recording:
    environment: dict[str, str]
    calls: list[AwsCall]
    # The settings the functions read: (function, environment variable).
    settings_read: list[tuple[str, str]] = field(default_factory=list)


def load(path: Path) -> Recording:
    data = json.loads(path.read_text())
    read = [(f, s) for f, s in data.get("settings_read", [])]
    return Recording(data["environment"], [AwsCall.from_data(c) for c in data["calls"]], read)


@contextmanager
def made_by(function: str, payload: Any = None) -> Iterator[None]:
    """The calls made inside this block are `function`'s (a handler's invocation, given
    `payload`)."""
    token, whom = _function.set(function), _on_behalf_of.set(on_behalf_of(payload))
    try:
        yield
    finally:
        _function.reset(token)
        _on_behalf_of.reset(whom)


RECORDER = Recorder()
