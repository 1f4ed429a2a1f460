"""Credentials from Secrets Manager, cached by Powertools. Never logged.

Each tenant (a Twilio account) keeps its Twilio credentials in the secret
<TWILIO_TENANT_SECRET_PREFIX><AccountSid>, holding {"account_sid", "auth_token"} and, if
Twilio signs its webhooks with shared keys, {"signing_keys": {<SharedKey SID>: <secret>}};
`token_version` names the change that wrote them (infra/tenants.py writes the same version
on the tenant's item once the secret holds it).
OpenAI keys ({"api_key"}) are the deployment's (OPENAI_SECRET_NAME) unless a conversation
names one of its tenant's own, under <OPENAI_TENANT_SECRET_PREFIX><AccountSid>. A
conversation's tenant's secrets are read in a session tagged with the tenant
(tenant_sessions), which can read no other tenant's.

A conversation may name its secrets (`twilio_credentials_secret`, `openai_api_key_secret`),
but only within its own tenant's prefix: the name is checked here, where it is resolved,
before anything is read (SecretOutsideTenant otherwise)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore.exceptions import ClientError
from pydantic import BaseModel, ConfigDict, Field

from functions.errors import SecretOutsideTenant
from functions.storage.models import Conversation
from functions.tenancy import tenant_sessions
from functions.tenancy.settings import (
    OpenAIKeySettings,
    TenancySettings,
    ToolSecretSettings,
    TwilioSessionSettings,
)


class TwilioCredentials(BaseModel):
    """A tenant's Twilio credentials. The token and keys never reach a log or a traceback:
    they are left out of the model's repr and str, and an error reading the secret names
    the field, never its value."""

    model_config = ConfigDict(frozen=True, extra="ignore", hide_input_in_errors=True, defer_build=True)

    account_sid: str
    auth_token: str = Field(repr=False)
    signing_keys: dict[str, str] = Field(default_factory=dict, repr=False)
    token_version: str = ""


# The tenant item's token version for which each secret was last read past its cache: a
# version read once is not read again until the item names another (a secret written
# without it, by hand, is then taken when its cache expires).
_read_for_version: dict[str, str] = {}


def _secret(name: str, fresh: bool = False, provider: SecretsProvider | None = None) -> dict[str, Any]:
    """The secret `name` as JSON, read by `provider` (the function's own role's by default)."""
    max_age = TenancySettings.get().secrets_max_age_seconds
    value: Any
    if provider is None:
        value = parameters.get_secret(name, transform="json", max_age=max_age, force_fetch=fresh)
    else:
        value = provider.get(name, transform="json", max_age=max_age, force_fetch=fresh)
    if not isinstance(value, dict):
        raise ValueError(f"secret {name} is not a JSON object")
    return value


def twilio_credentials(
    secret_name: str, fresh: bool = False, provider: SecretsProvider | None = None
) -> TwilioCredentials:
    return TwilioCredentials.model_validate(_secret(secret_name, fresh, provider))


def tenant_twilio_credentials(account_sid: str, token_version: str = "") -> TwilioCredentials | None:
    """A registered tenant's Twilio credentials (the webhook checks signatures with them),
    or None when its secret is missing or names another account. `token_version`: the one
    the tenant's item names; cached credentials of another version are read again past the
    cache, once per version (never because a signature failed: a forger cannot make us
    read)."""
    name = TenancySettings.get().twilio_tenant_secret_prefix + account_sid
    try:
        credentials = twilio_credentials(name)
        if credentials.token_version != token_version and _read_for_version.get(name) != token_version:
            _read_for_version[name] = token_version
            credentials = twilio_credentials(name, fresh=True)
    except parameters.GetParameterError as error:
        if _not_found(error):
            return None
        raise  # a transient failure: the webhook answers 5xx and Twilio retries
    return credentials if credentials.account_sid == account_sid else None


def twilio_credentials_for(conversation: Conversation, fresh: bool = False) -> TwilioCredentials:
    """The Twilio credentials a conversation's replies are sent with: its tenant's, from
    the secret the conversation names if it lies within the tenant's prefix (`fresh`:
    read past the cache)."""
    return _twilio_credentials_for(conversation, fresh)


def twilio_credentials_in_tenant_session(
    conversation: Conversation, fresh: bool = False
) -> TwilioCredentials:
    """twilio_credentials_for, read through a session that can read only the conversation's
    tenant's secrets (tenant_sessions) where the deployment has a reader role for it, and
    with the function's own role where it has none (`fresh`: read past the cache)."""
    if not TwilioSessionSettings.get().twilio_tenant_reader_role_arn:
        return twilio_credentials_for(conversation, fresh)
    return _twilio_credentials_for(conversation, fresh, tenant_sessions.secrets_of(_tenant_of(conversation)))


def _twilio_credentials_for(
    conversation: Conversation, fresh: bool, provider: SecretsProvider | None = None
) -> TwilioCredentials:
    tenant = _tenant_of(conversation)
    credentials = twilio_credentials(_conversation_secret(conversation, tenant), fresh, provider)
    if credentials.account_sid != tenant:
        raise SecretOutsideTenant(f"the Twilio secret of {conversation.conversation_id} is another account's")
    return credentials


def _conversation_secret(conversation: Conversation, tenant: str) -> str:
    prefix = TenancySettings.get().twilio_tenant_secret_prefix
    return within_tenant(prefix, tenant, conversation.twilio_credentials_secret)


def openai_api_key_for(conversation: Conversation, fresh: bool = False) -> str:
    """The OpenAI key for a conversation: the deployment's, read with the function's own
    role, or the tenant's own key that the conversation names (within the tenant's OpenAI
    prefix), read through a session that can read only that tenant's keys where the
    deployment has a reader role for them (OPENAI_TENANT_READER_ROLE_ARN) (`fresh`: read
    past the cache)."""
    settings = OpenAIKeySettings.get()
    if not conversation.openai_api_key_secret:
        return str(_secret(settings.openai_secret_name, fresh)["api_key"])
    tenant = _tenant_of(conversation)
    name = within_tenant(settings.openai_tenant_secret_prefix, tenant, conversation.openai_api_key_secret)
    provider = _tenant_provider(tenant, settings.openai_tenant_reader_role_arn)
    return str(_secret(name, fresh, provider)["api_key"])


def tool_signing_key(conversation: Conversation) -> str | None:
    """The key Call Tools signs the tenant's tool calls with (the secret
    <TOOL_TENANT_SECRET_PREFIX><AccountSid>, `signing_key`), read through a session that can
    read only that tenant's (TOOL_TENANT_READER_ROLE_ARN); None if the tenant has none."""
    settings = ToolSecretSettings.get()
    tenant = _tenant_of(conversation)
    provider = _tenant_provider(tenant, settings.tool_tenant_reader_role_arn)
    try:
        return str(_secret(settings.tool_tenant_secret_prefix + tenant, provider=provider)["signing_key"])
    except parameters.GetParameterError as error:
        if _not_found(error):
            return None
        raise


def within_tenant(prefix: str, account_sid: str, requested: str | None) -> str:
    """The secret name to read: `requested` if it is the tenant's secret <prefix><sid> or
    lies under it (<prefix><sid>/...), the tenant's secret if nothing is requested."""
    own = prefix + account_sid
    if not requested or requested == own:
        return own
    if requested.startswith(own + "/"):
        return requested
    raise SecretOutsideTenant(f"secret {requested!r} is outside the prefix of tenant {account_sid}")


def _tenant_provider(tenant: str, role: str) -> SecretsProvider | None:
    """Secrets read through a session of `role` tagged with `tenant` (it reads only that
    tenant's); None when the deployment has no such role: the function's own role reads them."""
    return tenant_sessions.secrets_of(tenant, role) if role else None


def _tenant_of(conversation: Conversation) -> str:
    if not conversation.tenant_account_sid:
        raise SecretOutsideTenant(f"conversation {conversation.conversation_id} has no tenant")
    return conversation.tenant_account_sid


def _not_found(error: Exception) -> bool:
    cause = error.__cause__ or error.__context__  # Powertools wraps the boto3 error
    return isinstance(cause, ClientError) and cause.response["Error"]["Code"] == "ResourceNotFoundException"
