"""The test message: the tenant number it goes to, the tenant's credentials it is signed
with, and its post to the webhook, as Twilio would post it."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass

import boto3
import requests
from botocore.exceptions import ClientError
from twilio.request_validator import RequestValidator

from functions.intake.inbound import Channel
from functions.public_url import public_base
from functions.tenancy import tenants
from functions.tenancy.secrets import TwilioCredentials
from infra import stack_lookup

DEFAULT_TEXT = "Smoke test: please answer in one short sentence."


class SmokeFailed(Exception):
    """The test message could not be sent or followed; the message says why."""


@dataclass(frozen=True)
class Target:
    channel: Channel
    user: str  # --from: the person's address
    ours: str  # --to: the tenant's number
    account_sid: str
    url: str  # where the message is posted, and what its signature covers


def find_target(user: str, ours: str | None, url: str | None) -> Target:
    channel = Channel.WHATSAPP if user.startswith("whatsapp:") else Channel.SMS
    if ours is None:
        on_channel = sorted(
            n
            for t in tenants.all_tenants()
            for n in t.numbers
            if n.startswith("whatsapp:") == (channel == "whatsapp")
        )
        if len(on_channel) != 1:
            which = (
                f"one of {', '.join(on_channel)}" if on_channel else "none is registered (infra.tenants add)"
            )
            raise SmokeFailed(f"name the {channel} number to write to with --to: {which}")
        ours = on_channel[0]
    if ours.startswith("whatsapp:") != (channel == "whatsapp"):
        raise SmokeFailed(f"--from {user} and --to {ours} are not on the same channel")
    account_sid = tenants.owner_of(ours)
    if account_sid is None:
        raise SmokeFailed(f"no tenant owns {ours}: register it with python -m infra.tenants add")
    base = public_base(os.environ.get("WEBHOOK_BASE_URL", ""), "").url
    return Target(channel, user, ours, account_sid, url or f"{base}/{channel}")


def tenant_credentials(account_sid: str) -> TwilioCredentials:
    """The tenant's Twilio credentials, as the webhook reads them (functions/tenancy/secrets.py)."""
    name = os.environ["TWILIO_TENANT_SECRET_PREFIX"] + account_sid
    try:
        secret = boto3.client("secretsmanager").get_secret_value(SecretId=name)["SecretString"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        raise SmokeFailed(
            f"tenant {account_sid} has no Twilio credentials ({name}): infra.tenants add"
        ) from None
    credentials = TwilioCredentials.model_validate(json.loads(secret))
    if credentials.account_sid != account_sid:
        raise SmokeFailed(f"the secret {name} holds another account's credentials")
    return credentials


def post(target: Target, credentials: TwilioCredentials, text: str) -> None:
    """Post the message, signed with the tenant's auth token (SmokeFailed: not accepted)."""
    form = inbound_form(text, target)
    signature = RequestValidator(credentials.auth_token).compute_signature(target.url, form)
    try:
        answer = requests.post(
            target.url,
            data=form,
            headers={"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature},
            timeout=30,
        )
    except requests.RequestException as error:
        local = " (the local stack's gateway: GATEWAY_PORT, or --url)" if stack_lookup.is_local() else ""
        raise SmokeFailed(f"cannot reach the webhook {target.url}{local}: {type(error).__name__}") from None
    print(f"Posted a message signed by {target.account_sid} to {target.url}: HTTP {answer.status_code}")
    if answer.status_code != 200:
        raise SmokeFailed(_refusal(answer))


def inbound_form(text: str, target: Target) -> dict[str, str]:
    """The form of a Twilio Messaging webhook for one text message (as in tests/events)."""
    message_sid = "SM" + secrets.token_hex(16)
    form = {
        "MessageSid": message_sid,
        "SmsMessageSid": message_sid,
        "SmsSid": message_sid,
        "AccountSid": target.account_sid,
        "From": target.user,
        "To": target.ours,
        "Body": text,
        "NumMedia": "0",
        "NumSegments": "1",
        "SmsStatus": "received",
        "ApiVersion": "2010-04-01",
    }
    if target.channel == Channel.WHATSAPP:
        form |= {"MessageType": "text", "WaId": target.user.removeprefix("whatsapp:+")}
    return form


def _refusal(answer: requests.Response) -> str:
    hint = {
        403: "the signature, the tenant or the number was refused: is --to registered to this "
        "tenant, and the URL the one the stack checks (its WebhookBaseUrl)?",
        429: "throttled by the API",
    }.get(answer.status_code, answer.text[:200])
    return f"the webhook answered {answer.status_code}: {hint}"
