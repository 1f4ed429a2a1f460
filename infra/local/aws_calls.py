"""Every AWS API call a function makes on the local stack, recorded with what IAM needs
to judge it: which function made it, the operation, and the names it was given (tables
and indexes, secrets, the event bus, the state machine and its runs).

moto evaluates no resource-level IAM, so the local stack cannot show a missing grant by
failing. Instead, each call made while a handler runs (infra/local/lambdas.py sets the
function) is kept here, and infra/iam evaluates it against that function's role in the
synthesized template, as IAM would (tests/conftest.py does at the end of every test run).
Calls made by anything else (the tests, the stand-ins, the local stack's own setup) are
not a function's and are not recorded."""

from __future__ import annotations

import contextvars
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.parameters.secrets import SecretsProvider
from botocore.client import BaseClient

from functions.config import read_settings

_function: contextvars.ContextVar[str | None] = contextvars.ContextVar("function", default=None)


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
    return tuple(sorted(set(found)))


class Recorder:
    """The calls recorded in this process, each distinct one once."""

    def __init__(self) -> None:
        self._calls: set[AwsCall] = set()
        self._lock = threading.Lock()
        self._original: Any = None
        # The sessions functions assumed, by their access key: the role and the session's tags.
        self._sessions: dict[str, tuple[tuple[str, str], ...]] = {}

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
            result = original(client, operation_name, api_params)
            if operation_name == "AssumeRole":
                recorder._keep_session(result, names)
            return result

        BaseClient._make_api_call = recording  # type: ignore[method-assign]
        self._record_cached_secrets()

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
        path.write_text(json.dumps({"environment": environment, "calls": calls}, indent=1))


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


def load(path: Path) -> Recording:
    data = json.loads(path.read_text())
    return Recording(data["environment"], [AwsCall.from_data(c) for c in data["calls"]])


@contextmanager
def made_by(function: str) -> Iterator[None]:
    """The calls made inside this block are `function`'s (a handler's invocation)."""
    token = _function.set(function)
    try:
        yield
    finally:
        _function.reset(token)


RECORDER = Recorder()
