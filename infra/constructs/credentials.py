"""The deployment's secrets: its OpenAI key, the key of conversation ids, and the prefixes
under which the tenants' secrets live (created by `python -m infra.tenants`, not by the
stack)."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.names import openai_tenant_secret_prefix, tool_tenant_secret_prefix, twilio_tenant_secret_prefix


class Credentials(Construct):
    """The deployment's OpenAI key, created with a placeholder value: put the real one in
    after the first deploy (README, "Deploy"); the key of conversation ids, generated and
    never to be set. Each tenant's Twilio credentials are the secret
    <twilio_prefix><AccountSid>; a tenant's own OpenAI keys lie under
    <openai_prefix><AccountSid>."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.openai = secretsmanager.Secret(
            self,
            "OpenAI",
            description="OpenAI API key: {api_key}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}", generate_string_key="api_key"
            ),
        )
        # HMAC key of new conversation ids (functions/tenancy/id_key.py): generated
        # here, never shown, read by the functions that create conversations.
        self.conversation_id_key = secretsmanager.Secret(
            self,
            "ConversationIdKey",
            description="The key conversation ids are drawn with (generated; never to be set by hand)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
        )
        stack_name = Stack.of(self).stack_name
        self.twilio_prefix = twilio_tenant_secret_prefix(stack_name)
        self.openai_prefix = openai_tenant_secret_prefix(stack_name)
        self.tool_prefix = tool_tenant_secret_prefix(stack_name)
        NagSuppressions.add_resource_suppressions(
            self.openai,
            [
                NagPackSuppression(
                    id="AwsSolutions-SMG4",
                    reason="OpenAI keys are rotated in OpenAI's console, not by a Lambda.",
                )
            ],
        )
        NagSuppressions.add_resource_suppressions(
            self.conversation_id_key,
            [
                NagPackSuppression(
                    id="AwsSolutions-SMG4",
                    reason="Not rotated: ids are drawn once and stored; rotating the key would "
                    "let two webhooks racing to create one conversation draw two ids.",
                )
            ],
        )

    def secrets_under(self, prefix: str) -> str:
        """The ARN pattern of every secret whose name starts with `prefix` (a secret's ARN
        ends with its name and a random suffix)."""
        return Stack.of(self).format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
