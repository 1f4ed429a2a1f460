"""Credentials from Secrets Manager, cached by Powertools. Never logged.

A conversation may name its own secrets (a tenant's Twilio account or OpenAI key); the
deployment's default secrets are used otherwise.
Twilio secrets hold {"account_sid": ..., "auth_token": ...}; OpenAI secrets hold
{"api_key": ...}."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities import parameters
from botocore.exceptions import ClientError
from pydantic import BaseModel, SecretStr

from functions.config import get_settings


class TwilioCredentials(BaseModel):
    account_sid: str
    auth_token: SecretStr


def _secret(name: str) -> dict[str, Any]:
    value = parameters.get_secret(name, transform="json", max_age=get_settings().secrets_max_age_seconds)
    if not isinstance(value, dict):
        raise ValueError(f"secret {name} is not a JSON object")
    return value


def twilio_credentials(secret_name: str | None = None) -> TwilioCredentials:
    return TwilioCredentials.model_validate(_secret(secret_name or get_settings().twilio_secret_name))


def twilio_auth_token_for(account_sid: str) -> str | None:
    """The auth token of the Twilio account a webhook claims to come from, or None when
    that account is not one of ours."""
    settings = get_settings()
    default = twilio_credentials()
    if default.account_sid == account_sid:
        return default.auth_token.get_secret_value()
    try:
        tenant = twilio_credentials(settings.twilio_account_secret_prefix + account_sid)
    except parameters.GetParameterError as error:
        if _not_found(error):
            return None
        raise  # a transient failure: the webhook answers 5xx and Twilio retries
    return tenant.auth_token.get_secret_value() if tenant.account_sid == account_sid else None


def _not_found(error: Exception) -> bool:
    cause = error.__cause__ or error.__context__  # Powertools wraps the boto3 error
    return isinstance(cause, ClientError) and cause.response["Error"]["Code"] == "ResourceNotFoundException"


def openai_api_key(secret_name: str | None = None) -> str:
    return str(_secret(secret_name or get_settings().openai_secret_name)["api_key"])
