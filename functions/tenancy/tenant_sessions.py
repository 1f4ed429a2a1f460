"""Sessions that can read one tenant's secrets and no other's.

The roles of the functions that send for a conversation read no tenant's Twilio secret,
and Generate Reply's and Conversation Commands' no tenant's own OpenAI key. For the tenant
of the conversation at hand each assumes TWILIO_TENANT_READER_ROLE_ARN (the Twilio secrets)
or OPENAI_TENANT_READER_ROLE_ARN (the tenant's OpenAI keys) with the session tag
`tenant=<AccountSid>`; that role may read only the secrets named after the tag
(infra/constructs/tenant_reader.py).
Each tenant's session of each role is kept for most of its life (a Lambda instance serves one batch at
a time, but a tenant's batches follow one another), and with it a Powertools secrets
provider whose cache is the session's own."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.utilities.parameters import SecretsProvider

from functions.tenancy.settings import TwilioSessionSettings

TENANT_TAG = "tenant"
# STS's shortest session; a new one is taken this long before the old one ends.
SESSION_SECONDS = 900
RENEW_BEFORE_SECONDS = 60


@dataclass(frozen=True)
class _Session:
    secrets: SecretsProvider
    expires_at: float  # epoch seconds


_sessions: dict[tuple[str, str], _Session] = {}  # by (role, tenant)
_lock = threading.Lock()


@cache
def _sts() -> Any:
    return boto3.client("sts")


def secrets_of(tenant: str, role: str | None = None) -> SecretsProvider:
    """A secrets provider whose credentials can read only `tenant`'s secrets: a session of
    `role`, TWILIO_TENANT_READER_ROLE_ARN by default (which must then be set)."""
    role = role or TwilioSessionSettings.get().twilio_tenant_reader_role_arn
    with _lock:
        session = _sessions.get((role, tenant))
        if session is None or session.expires_at - RENEW_BEFORE_SECONDS < time.time():
            session = _sessions[(role, tenant)] = _assume(role, tenant)
    return session.secrets


def _assume(role: str, tenant: str) -> _Session:
    credentials = _sts().assume_role(
        RoleArn=role,
        RoleSessionName=f"tenant-{tenant}",
        DurationSeconds=SESSION_SECONDS,
        Tags=[{"Key": TENANT_TAG, "Value": tenant}],
    )["Credentials"]
    client = boto3.client(
        "secretsmanager",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    return _Session(SecretsProvider(boto3_client=client), credentials["Expiration"].timestamp())
