"""Register the tenants (Twilio accounts) the service answers for, and their numbers.

    python -m infra.tenants add ACCOUNT_SID --number whatsapp:+14155238886 [--number ...]
    python -m infra.tenants list
    python -m infra.tenants remove ACCOUNT_SID [--number NUMBER ...]
    python -m infra.tenants move NUMBER --to ACCOUNT_SID
    python -m infra.tenants signing-key ACCOUNT_SID SHARED_KEY_SID
    python -m infra.tenants openai-key ACCOUNT_SID [--name NAME]
    python -m infra.tenants auto-create ACCOUNT_SID on|off
    python -m infra.tenants sender-mps NUMBER [MPS | default]
    python -m infra.tenants retention ACCOUNT_SID [DAYS | default]

`add` reads the account's auth token from standard input (never from the command line, so
that it stays out of shell history and process lists), stores it in Secrets Manager as
<TwilioTenantSecretPrefix><AccountSid> and the numbers in the Tenants table; adding to an
existing tenant adds numbers and replaces its token. Each new token or signing key gets a
new token version, written in the secret and then on the tenant's item: a webhook that sees
another version on the item than in the secret it holds reads the secret again (no
Lambda waits out its cache for a rotated token). A number owned by another tenant is
refused: `move` hands a number over in one transaction. `remove` without numbers removes
the tenant, its numbers and its secrets. `signing-key` stores the secret of a Twilio
SharedKey (read from standard input) for webhooks signed with HMAC-SHA256; `openai-key`
stores a tenant's own OpenAI key (standard input) and prints the name a conversation's
`openai_api_key_secret` gives to use it. `auto-create on` has the webhook create a
conversation for any sender who writes to one of the tenant's numbers, whatever the
deployment's AUTO_CREATE_CONVERSATIONS (`off`: only when that is on); `list` marks such a
tenant `(auto-create on)`. One sender at a time: `python -m infra.conversations create`.
`sender-mps` gives a number's sender a rate of its own, messages a second (Twilio's
throughput for it; 0: not paced), in place of the deployment's TWILIO_SENDER_MPS
(`default` drops it; without MPS: prints it); a number added again keeps it, a number
removed loses it. Send Reply reads it within TENANT_CACHE_SECONDS.
`retention` gives a tenant its own turn-text retention, in days (0: kept until forgotten), in
place of the deployment's TURN_TEXT_RETENTION_DAYS (`default` drops it; without DAYS: prints
it); the reconciler reads it within TENANT_CACHE_SECONDS (docs/personal-data.md).

Names: TENANTS_TABLE, TWILIO_TENANT_SECRET_PREFIX and OPENAI_TENANT_SECRET_PREFIX when set;
otherwise, with AWS_ENDPOINT_URL set, the local stack's (nothing else to set); otherwise the
outputs of the stack on AWS (`--stack`, else STACK_NAME, else BurstReply; see
infra/stack_lookup.py). Tokens are never printed.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from functions import clock
from functions.intake.inbound import ACCOUNT_SID
from functions.storage.models import Tenant
from functions.storage.tables import TENANTS
from functions.tenancy import tenants
from infra import stack_lookup


@dataclass(frozen=True)
class Names:
    tenants_table: str
    twilio_prefix: str
    openai_prefix: str

    @classmethod
    def resolve(cls, stack_name: str, environ: dict[str, str] | None = None) -> Names:
        """The names in the environment, else the local stack's (AWS_ENDPOINT_URL set), else
        the stack's outputs (infra/stack_lookup.py)."""
        found = stack_lookup.names(stack_name, (TENANTS.env_var, "TWILIO_TENANT_SECRET_PREFIX"), environ)
        return cls(
            tenants_table=found[TENANTS.env_var],
            twilio_prefix=found["TWILIO_TENANT_SECRET_PREFIX"],
            openai_prefix=found.get("OPENAI_TENANT_SECRET_PREFIX", ""),
        )


class TenantAdmin:
    """What the CLI does, also used by the local stack to register its default tenant."""

    def __init__(self, names: Names, secretsmanager: Any | None = None) -> None:
        self.names = names
        self.secrets = secretsmanager or boto3.client("secretsmanager")

    def add(self, account_sid: str, auth_token: str, numbers: list[str]) -> None:
        _check_account(account_sid)
        if not auth_token:
            raise ValueError("the auth token is empty")
        tenants.register(account_sid, numbers, clock.iso(clock.now()), self.names.tenants_table)
        name = self.names.twilio_prefix + account_sid
        signing_keys = self._read(name).get("signing_keys", {})
        credentials = {"account_sid": account_sid, "auth_token": auth_token, "signing_keys": signing_keys}
        self._put_credentials(account_sid, credentials)

    def tenants(self) -> list[Tenant]:
        return tenants.all_tenants(self.names.tenants_table)

    def remove(self, account_sid: str, numbers: list[str] | None = None) -> list[str]:
        removed = tenants.remove(account_sid, numbers, self.names.tenants_table)
        if numbers is None:
            for prefix in (self.names.twilio_prefix, self.names.openai_prefix):
                for name in self._names_of(prefix, account_sid):
                    self.secrets.delete_secret(SecretId=name, RecoveryWindowInDays=7)
        return removed

    def set_auto_create(self, account_sid: str, on: bool) -> None:
        _check_account(account_sid)
        tenants.set_auto_create(account_sid, on, self.names.tenants_table)

    def move(self, number: str, to_account_sid: str) -> str:
        _check_account(to_account_sid)
        return tenants.move_number(number, to_account_sid, self.names.tenants_table)

    def set_signing_key(self, account_sid: str, key_sid: str, secret: str) -> None:
        name = self.names.twilio_prefix + account_sid
        credentials = self._read(name)
        if not credentials or not secret:
            raise ValueError(
                f"{account_sid} has no Twilio credentials (add it first), or the secret is empty"
            )
        credentials.setdefault("signing_keys", {})[key_sid] = secret
        self._put_credentials(account_sid, credentials)

    def set_openai_key(self, account_sid: str, api_key: str, name: str = "") -> str:
        _check_account(account_sid)
        if not api_key or not self.names.openai_prefix:
            raise ValueError("the key is empty, or the stack names no OpenAI tenant prefix")
        secret_name = self.names.openai_prefix + account_sid + (f"/{name}" if name else "")
        self._put(secret_name, {"api_key": api_key}, f"OpenAI key of tenant {account_sid}")
        return secret_name

    def set_sender_mps(self, number: str, mps: float | None) -> None:
        """The number's own sender rate (None: the deployment's TWILIO_SENDER_MPS)."""
        tenants.set_sender_mps(number, mps, self.names.tenants_table)

    def sender_mps(self, number: str) -> float | None:
        return tenants.own_sender_mps(number, self.names.tenants_table)

    def set_retention(self, account_sid: str, days: int | None) -> None:
        """The tenant's own turn-text retention (None: the deployment's)."""
        _check_account(account_sid)
        tenants.set_turn_text_retention(account_sid, days, self.names.tenants_table)

    def retention(self, account_sid: str) -> int | None:
        tenant = tenants.get(account_sid, self.names.tenants_table)
        if tenant is None:
            raise tenants.TenantChangeRefused(f"{account_sid} is not a tenant")
        return tenant.turn_text_retention_days

    def _put_credentials(self, account_sid: str, credentials: dict[str, Any]) -> None:
        """Store the tenant's Twilio credentials under a new token version, then name that
        version on its item: the secret holds it before any webhook is told of it."""
        version = uuid.uuid4().hex
        name = self.names.twilio_prefix + account_sid
        versioned = {**credentials, "token_version": version}
        self._put(name, versioned, f"Twilio credentials of tenant {account_sid}")
        tenants.set_token_version(account_sid, version, self.names.tenants_table)

    def _read(self, name: str) -> dict[str, Any]:
        return read_secret(self.secrets, name)

    def _put(self, name: str, value: dict[str, Any], description: str) -> None:
        text = json.dumps(value)
        try:
            self.secrets.create_secret(Name=name, SecretString=text, Description=description)
            return
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "InvalidRequestException":  # scheduled for deletion: bring it back
                self.secrets.restore_secret(SecretId=name)
            elif code != "ResourceExistsException":
                raise
        self.secrets.put_secret_value(SecretId=name, SecretString=text)

    def _names_of(self, prefix: str, account_sid: str) -> list[str]:
        if not prefix:
            return []
        own = prefix + account_sid
        pages = self.secrets.get_paginator("list_secrets").paginate(
            Filters=[{"Key": "name", "Values": [own]}]
        )
        names = [s["Name"] for page in pages for s in page["SecretList"]]
        return [n for n in names if n == own or n.startswith(own + "/")]


AUTO_CREATE_MEANS = {
    "on": "the webhook creates a conversation for any sender of its numbers",
    "off": "the webhook creates conversations as the deployment's AUTO_CREATE_CONVERSATIONS says",
}


def _own_or_default[T](given: str, read: Callable[[str], T], what: str) -> T | None:
    """A number's or tenant's own value as given (`read` from its text), or None for `default`
    (the deployment's setting applies again); a ValueError naming `what` otherwise."""
    if given == "default":
        return None
    try:
        return read(given)
    except ValueError:
        raise ValueError(f"{what}, or `default`, not {given!r}") from None


def _sender_mps(admin: TenantAdmin, number: str, given: str | None) -> str:
    """Set (or drop, `default`) the number's own sender rate, or read it; the line to print."""
    if given is not None:
        admin.set_sender_mps(number, _own_or_default(given, float, "MPS: a number of messages a second"))
    own = admin.sender_mps(number)
    if own is None:
        return f"{number}: no rate of its own (the deployment's TWILIO_SENDER_MPS)"
    return f"{number}: {own:g} messages a second" + (" (not paced)" if own == 0 else "")


def _retention(admin: TenantAdmin, account_sid: str, given: str | None) -> str:
    """Set (or drop, `default`) the tenant's own turn-text retention, or read it; the line."""
    if given is not None:
        admin.set_retention(account_sid, _own_or_default(given, int, "DAYS: a whole number of days"))
    own = admin.retention(account_sid)
    if own is None:
        return f"{account_sid}: no retention of its own (the deployment's TURN_TEXT_RETENTION_DAYS)"
    return f"{account_sid}: answered turns' texts kept " + (f"{own} days" if own else "until forgotten")


def read_secret(secretsmanager: Any, name: str) -> dict[str, Any]:
    """A JSON secret's value; {} if there is none (or it is scheduled for deletion)."""
    try:
        value = json.loads(secretsmanager.get_secret_value(SecretId=name)["SecretString"])
    except ClientError as error:
        if error.response["Error"]["Code"] in ("ResourceNotFoundException", "InvalidRequestException"):
            return {}
        raise
    return value if isinstance(value, dict) else {}


def _check_account(account_sid: str) -> None:
    if not ACCOUNT_SID.fullmatch(account_sid):
        raise ValueError(f"not a Twilio AccountSid: {account_sid!r}")


def _read_secret(prompt: str) -> str:
    """A secret from standard input: typed without echo at a terminal, else its first line."""
    if sys.stdin.isatty():
        return getpass.getpass(prompt).strip()
    return sys.stdin.readline().strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.tenants", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="register a tenant or add numbers (auth token on stdin)")
    add.add_argument("account_sid")
    add.add_argument("--number", action="append", default=[], dest="numbers")
    commands.add_parser("list", help="the tenants and their numbers")
    remove = commands.add_parser("remove", help="remove numbers, or the tenant with all of them")
    remove.add_argument("account_sid")
    remove.add_argument("--number", action="append", dest="numbers")
    move = commands.add_parser("move", help="move a number to another tenant, atomically")
    move.add_argument("number")
    move.add_argument("--to", required=True, dest="to_account_sid")
    key = commands.add_parser("signing-key", help="a Twilio SharedKey's secret (on stdin)")
    key.add_argument("account_sid")
    key.add_argument("key_sid")
    openai_key = commands.add_parser("openai-key", help="a tenant's own OpenAI key (on stdin)")
    openai_key.add_argument("account_sid")
    openai_key.add_argument("--name", default="")
    auto_create = commands.add_parser(
        "auto-create", help="whether the webhook creates conversations for the tenant's unknown senders"
    )
    auto_create.add_argument("account_sid")
    auto_create.add_argument("state", choices=("on", "off"))
    rate = commands.add_parser("sender-mps", help="a number's own sender rate, messages a second")
    rate.add_argument("number")
    rate.add_argument("mps", nargs="?", help="0 or more (0: not paced); `default`: TWILIO_SENDER_MPS")
    keep = commands.add_parser("retention", help="a tenant's own turn-text retention, in days")
    keep.add_argument("account_sid")
    keep.add_argument("days", nargs="?", help="0 or more (0: until forgotten); `default`: the deployment's")
    stack_lookup.add_stack_option(parser, *commands.choices.values())
    args = parser.parse_args(argv)
    return stack_lookup.one_line_errors("infra.tenants", lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    stack_lookup.local_credentials()
    admin = TenantAdmin(Names.resolve(stack_lookup.chosen_stack(args.stack)))
    try:
        if args.command == "add":
            admin.add(args.account_sid, _read_secret("Auth token: "), args.numbers)
            print(f"{args.account_sid}: registered with {', '.join(args.numbers) or 'no new numbers'}")
        elif args.command == "list":
            for tenant in admin.tenants():
                on = "  (auto-create on)" if tenant.auto_create_conversations else ""
                print(f"{tenant.account_sid}  {', '.join(tenant.numbers) or '(no numbers)'}{on}")
        elif args.command == "remove":
            removed = admin.remove(args.account_sid, args.numbers)
            print(f"{args.account_sid}: removed {', '.join(removed) or 'no numbers'}")
        elif args.command == "move":
            previous = admin.move(args.number, args.to_account_sid)
            print(f"{args.number}: moved from {previous} to {args.to_account_sid}")
        elif args.command == "signing-key":
            admin.set_signing_key(args.account_sid, args.key_sid, _read_secret("SharedKey secret: "))
            print(f"{args.account_sid}: signing key {args.key_sid} stored")
        elif args.command == "auto-create":
            admin.set_auto_create(args.account_sid, args.state == "on")
            print(f"{args.account_sid}: auto-create {args.state}: {AUTO_CREATE_MEANS[args.state]}")
        elif args.command == "sender-mps":
            print(_sender_mps(admin, args.number, args.mps))
        elif args.command == "retention":
            print(_retention(admin, args.account_sid, args.days))
        else:
            name = admin.set_openai_key(args.account_sid, _read_secret("OpenAI key: "), args.name)
            print(f"{args.account_sid}: OpenAI key stored; set openai_api_key_secret={name}")
    except (ValueError, tenants.TenantChangeRefused) as error:
        print(f"Refused: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
