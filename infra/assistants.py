"""The tenants' assistants: a profile per tenant, and per project overriding the tenant's.

    python -m infra.assistants put --tenant ACCOUNT_SID [--project ID] FILE
    python -m infra.assistants show --tenant ACCOUNT_SID [--project ID] [--version N]
    python -m infra.assistants list
    python -m infra.assistants versions --tenant ACCOUNT_SID [--project ID]
    python -m infra.assistants knowledge add --tenant ACCOUNT_SID [--project ID] FILE...

FILE is JSON (docs/assistants.md): `model`, `instructions`, `tools` (function tools served by
the business: `name`, `description`, `parameters` as a strict JSON Schema, `url`,
`side_effects`), `knowledge` (`vector_store_ids`, `max_num_results`, `max_tool_calls`),
`max_tool_rounds`, `tool_timeout_seconds`. A file amiss is refused with a
message naming the field; nothing is written. `put` writes the next version (the batches
asked before it keep theirs); a profile with tools also makes sure the tenant has a
tool-signing secret, <ToolTenantSecretPrefix><AccountSid> (`signing_key`), which the
business reads once to check the signature on every call (it is never printed).
`knowledge add` uploads documents with the tenant's own OpenAI key (or the deployment's) to
the tenant's vector store, made at its first use and recorded on the tenant's item, and
writes a profile version that searches it. A profile may name only the tenant's own stores.

Names: ASSISTANT_PROFILES_TABLE, TENANTS_TABLE and the secrets' names when set; otherwise, with
AWS_ENDPOINT_URL set, the local stack's; otherwise the outputs of the stack on AWS
(`--stack`, else STACK_NAME, else BurstReply; see infra/stack_lookup.py)."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from pydantic import ValidationError

from functions import clock
from functions.assistant import assistant_profiles
from functions.assistant.assistant_profile import AssistantProfile, Knowledge
from functions.intake.inbound import ACCOUNT_SID
from functions.storage.tables import ASSISTANT_PROFILES, TENANTS
from functions.tenancy import tenants
from infra import stack_lookup
from infra.tenants import read_secret

PREFIX = "TOOL_TENANT_SECRET_PREFIX"


class ProfileRefused(ValueError):
    """A profile file amiss: the message names the field."""


def read_profile(path: Path) -> AssistantProfile:
    """The profile in a JSON file, validated (ProfileRefused names what is amiss)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ProfileRefused(f"{path}: not a JSON file ({error})") from None
    try:
        return AssistantProfile.model_validate(data)
    except ValidationError as error:
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the profile'}: {e['msg']}" for e in error.errors()
        )
        raise ProfileRefused(f"{path}: {reasons}") from None


class AssistantAdmin:
    def __init__(self, names: dict[str, str], secretsmanager: Any | None = None) -> None:
        self.names = names
        self.table = names[ASSISTANT_PROFILES.env_var]
        self.tool_prefix = names[PREFIX]
        self.secrets = secretsmanager or boto3.client("secretsmanager")

    def put(self, tenant: str, project: str | None, profile: AssistantProfile) -> int:
        _check_account(tenant)
        found = tenants.get(tenant, self.names[TENANTS.env_var])
        if found is None:
            raise ValueError(f"{tenant} is not a tenant (python -m infra.tenants add)")
        foreign = profile.stores_not_among(found.vector_store_ids)
        if foreign:
            raise ValueError(
                f"knowledge.vector_store_ids: {', '.join(foreign)} is not a store of tenant {tenant}"
                " (python -m infra.assistants knowledge add makes one)"
            )
        if profile.tools:
            self.ensure_signing_secret(tenant)
        key = assistant_profiles.profile_key(tenant, project)
        return assistant_profiles.put(key, profile, clock.iso(clock.now()), self.table)

    def ensure_signing_secret(self, tenant: str) -> str:
        """The tenant's tool-signing secret's name, created (random) if it has none."""
        name = self.tool_prefix + tenant
        value = json.dumps({"signing_key": secrets.token_hex(32)})
        try:
            self.secrets.create_secret(
                Name=name, SecretString=value, Description=f"Tool-signing secret of tenant {tenant}"
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ResourceExistsException":
                raise
        return name

    def add_knowledge(
        self, tenant: str, project: str | None, files: list[Path], client: Any
    ) -> tuple[str, int]:
        """Upload `files` to the tenant's vector store (made at its first use) with `client`
        (the tenant's OpenAI key, or the deployment's), and write the profile's next version
        searching it; the store's id and the version."""
        _check_account(tenant)
        table = self.names[TENANTS.env_var]
        found = tenants.get(tenant, table)
        if found is None:
            raise ValueError(f"{tenant} is not a tenant (python -m infra.tenants add)")
        missing = [str(path) for path in files if not path.is_file()]
        if missing or not files:
            raise ValueError(f"no such file: {', '.join(missing) or '(none given)'}")
        key = assistant_profiles.profile_key(tenant, project)
        newest = assistant_profiles.versions(key, self.table)
        profile = newest[-1].profile if newest else AssistantProfile()
        named = profile.knowledge.vector_store_ids if profile.knowledge else []
        store = next(iter(named or found.vector_store_ids), "")
        if not store:
            store = client.vector_stores.create(name=f"{tenant} knowledge", metadata={"tenant": tenant}).id
            tenants.add_vector_store(tenant, store, table)
        for path in files:
            with path.open("rb") as document:
                uploaded = client.files.create(file=(path.name, document), purpose="assistants")
            client.vector_stores.files.create_and_poll(vector_store_id=store, file_id=uploaded.id)
        knowledge = profile.knowledge or Knowledge(vector_store_ids=[store])
        if store not in knowledge.vector_store_ids:
            knowledge = knowledge.model_copy(
                update={"vector_store_ids": [*knowledge.vector_store_ids, store]}
            )
        return store, self.put(tenant, project, profile.model_copy(update={"knowledge": knowledge}))

    def openai_client(self, tenant: str) -> Any:
        """An OpenAI client with the tenant's own key if it has one, else the deployment's
        (OPENAI_BASE_URL, where set, names the API: the local stack's stand-in)."""
        import openai

        key = self._secret(self.names.get("OPENAI_TENANT_SECRET_PREFIX", "") + tenant)
        key = key or self._secret(self.names.get("OPENAI_SECRET_NAME", ""))
        if not key.get("api_key"):
            raise ValueError("no OpenAI key: neither the tenant's own nor the deployment's")
        return openai.OpenAI(api_key=key["api_key"], max_retries=2)

    def _secret(self, name: str) -> dict[str, Any]:
        return read_secret(self.secrets, name) if name else {}

    def show(
        self, tenant: str, project: str | None, version: int | None
    ) -> assistant_profiles.ProfileVersion | None:
        key = assistant_profiles.profile_key(tenant, project)
        if version is not None:
            return assistant_profiles.get(key, version, self.table)
        found = assistant_profiles.versions(key, self.table)
        return found[-1] if found else None


def _check_account(account_sid: str) -> None:
    if not ACCOUNT_SID.fullmatch(account_sid):
        raise ValueError(f"not a Twilio AccountSid: {account_sid!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.assistants", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    put = commands.add_parser("put", help="write a profile's next version from a JSON file")
    show = commands.add_parser("show", help="a profile as JSON (the newest version, or --version N)")
    versions = commands.add_parser("versions", help="a profile's versions, oldest first")
    for command in (put, show, versions):
        command.add_argument("--tenant", required=True)
        command.add_argument("--project", default=None)
    put.add_argument("file", type=Path)
    show.add_argument("--version", type=int, default=None)
    commands.add_parser("list", help="every profile and its newest version")
    knowledge = commands.add_parser("knowledge", help="documents the assistant searches")
    knowledge.add_argument("action", choices=["add"])
    knowledge.add_argument("--tenant", required=True)
    knowledge.add_argument("--project", default=None)
    knowledge.add_argument("files", nargs="+", type=Path)
    stack_lookup.add_stack_option(parser, *commands.choices.values())
    args = parser.parse_args(argv)
    return stack_lookup.one_line_errors("infra.assistants", lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    stack_lookup.local_credentials()
    needed = (ASSISTANT_PROFILES.env_var, TENANTS.env_var, PREFIX)
    names = stack_lookup.names(stack_lookup.chosen_stack(args.stack), needed)
    admin = AssistantAdmin(names)
    try:
        if args.command == "put":
            version = admin.put(args.tenant, args.project, read_profile(args.file))
            print(f"{assistant_profiles.profile_key(args.tenant, args.project)}: version {version} written")
        elif args.command == "show":
            found = admin.show(args.tenant, args.project, args.version)
            if found is None:
                print(
                    f"{assistant_profiles.profile_key(args.tenant, args.project)}: no such profile",
                    file=sys.stderr,
                )
                return 1
            print(json.dumps(found.profile.model_dump(mode="json", exclude_none=True), indent=2))
        elif args.command == "knowledge":
            client = admin.openai_client(args.tenant)
            store, version = admin.add_knowledge(args.tenant, args.project, args.files, client)
            key = assistant_profiles.profile_key(args.tenant, args.project)
            print(
                f"{key}: {len(args.files)} document(s) in vector store {store}; version {version} searches it"
            )
        elif args.command == "versions":
            key = assistant_profiles.profile_key(args.tenant, args.project)
            for found in assistant_profiles.versions(key, admin.table):
                tools = ", ".join(tool.name for tool in found.profile.tools) or "no tools"
                model = found.profile.model or "(default model)"
                print(f"{found.version}  {found.written_at}  {model}  {tools}")
        else:
            listed = assistant_profiles.keys(admin.table)
            for key, version in listed.items():
                print(f"{key}  version {version}")
            if not listed:
                print("No assistant profiles.")
    except (ValueError, assistant_profiles.ProfileChangeRefused, tenants.TenantChangeRefused) as error:
        print(f"Refused: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
