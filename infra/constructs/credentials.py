"""The deployment's secrets: the default Twilio and OpenAI credentials, and the prefix
under which other tenants' secrets live."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.names import tenant_secret_prefix


class Credentials(Construct):
    """The deployment's default credentials. Created with placeholder values: put the real
    ones in after the first deploy (README, "Deploy")."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.twilio = secretsmanager.Secret(
            self,
            "Twilio",
            description="Twilio credentials: {account_sid, auth_token}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template='{"account_sid": "set-me"}', generate_string_key="auth_token"
            ),
        )
        self.openai = secretsmanager.Secret(
            self,
            "OpenAI",
            description="OpenAI API key: {api_key}",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}", generate_string_key="api_key"
            ),
        )
        self.tenant_prefix = tenant_secret_prefix(Stack.of(self).stack_name)
        for secret in (self.twilio, self.openai):
            NagSuppressions.add_resource_suppressions(
                secret,
                [
                    NagPackSuppression(
                        id="AwsSolutions-SMG4",
                        reason="Twilio and OpenAI keys are rotated in their own consoles, not by a Lambda.",
                    )
                ],
            )

    def tenant_secrets_arn(self) -> str:
        stack = Stack.of(self)
        return stack.format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{self.tenant_prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
