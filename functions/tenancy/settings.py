"""Where the tenants' secrets lie and how the functions read them (docs/deploying.md#tenants):
the stack names the secrets and the roles; their defaults are the names of the stack named
STACK_NAME (the local stack's). The tenant reader roles' ARNs, the OpenAI key's and the key of
conversation ids each are a model of their own: the stack gives each only to the functions
that read it (infra/constructs/tenant_reader.py)."""

from __future__ import annotations

from pydantic import Field

from functions import stack_names
from functions.config import Name, SettingsModel
from functions.stack_names import STACK_NAME


class TenancySettings(SettingsModel):
    """The tenants' Twilio secrets, and how long a function keeps what it read of tenants."""

    docs = "deploying.md#the-tenants-settings"

    twilio_tenant_secret_prefix: Name = Field(
        stack_names.twilio_tenant_secret_prefix(STACK_NAME),
        description="Each tenant's Twilio credentials are the secret `<prefix><AccountSid>`.",
    )
    secrets_max_age_seconds: int = Field(
        300, ge=0, description="How long a function keeps a secret it read (Powertools' cache; 0: none)."
    )
    tenant_cache_seconds: float = Field(
        60,
        ge=0,
        description="How long a known tenant (and a number's own rate, retention) is kept in memory.",
    )
    unknown_tenant_cache_seconds: float = Field(
        300, ge=0, description="How long the webhook remembers an AccountSid that is no tenant."
    )


class TwilioSessionSettings(SettingsModel):
    """The role the functions that send for a conversation read its tenant's Twilio
    credentials through (a session tagged with the tenant, which reads no other tenant's)."""

    docs = "deploying.md#the-tenants-settings"

    twilio_tenant_reader_role_arn: str = Field(
        "", description="The Twilio secrets' tenant reader role (empty: read with the function's own role)."
    )


class OpenAIKeySettings(SettingsModel):
    """The OpenAI keys: the deployment's, or a tenant's own that a conversation names."""

    docs = "deploying.md#the-tenants-settings"

    openai_secret_name: str = Field(
        stack_names.openai_secret_name(STACK_NAME), description='The deployment\'s OpenAI key, {"api_key"}.'
    )
    openai_tenant_secret_prefix: Name = Field(
        stack_names.openai_tenant_secret_prefix(STACK_NAME),
        description="A tenant's own OpenAI keys lie under `<prefix><AccountSid>`.",
    )
    openai_tenant_reader_role_arn: str = Field(
        "", description="The tenant reader role of those keys (empty: read with the function's own role)."
    )


class ToolSecretSettings(SettingsModel):
    """Each tenant's tool-signing secret (docs/assistants.md), read by Call Tools alone."""

    docs = "deploying.md#the-tenants-settings"

    tool_tenant_secret_prefix: Name = Field(
        stack_names.tool_tenant_secret_prefix(STACK_NAME),
        description="Each tenant's tool-signing secret is `<prefix><AccountSid>`.",
    )
    tool_tenant_reader_role_arn: str = Field(
        "", description="The tenant reader role of those secrets (empty: read with the function's own role)."
    )


class ConversationIdSettings(SettingsModel):
    """The key new conversation ids are drawn with (functions/tenancy/id_key.py), read by the
    functions that create conversations, once per instance."""

    docs = "deploying.md#the-tenants-settings"

    conversation_id_key_secret_name: str = Field(
        stack_names.conversation_id_key_secret_name(STACK_NAME),
        description="The secret holding the key conversation ids are drawn with.",
    )
