"""A role that can read one tenant's secrets under one prefix, and no other tenant's.

Two of them: the Twilio reader and the OpenAI reader (the tenants' Twilio secrets and
their own OpenAI keys lie under separate prefixes, so that a session for sending reads no
OpenAI key, and the reverse: functions/stack_names.py).
Generate Reply fetches the media a person sent and shows them "typing…", Send Reply sends
the reply (and Conversation Commands a person's, with Send Reply's code), Record Failed
Batch the fallback reply, Status Callback the WhatsApp template, each with the Twilio
credentials of the conversation's tenant (its `tenant_account_sid`, a fact of the stored
conversation by then); Generate Reply and Conversation Commands ask OpenAI with the
tenant's own key when the conversation names one. Their own roles read no tenant's secret
of that kind: each assumes the reader for the tenant at hand, tagging the session
`tenant=<AccountSid>`, and the reader's policy allows only the secrets named after the
session's tag (`${aws:PrincipalTag/tenant}`, an IAM policy variable). A mistake that
resolved another tenant's secret for a conversation is then refused by IAM, not only by
the code (functions/tenancy/tenant_sessions.py).

https://docs.aws.amazon.com/IAM/latest/UserGuide/id_session-tags.html
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from functions.tenancy.tenant_sessions import TENANT_TAG

# The values the session tag that names the tenant may take (a Twilio AccountSid).
TENANT_PATTERN = "AC*"


class TenantReader(Construct):
    """The role, assumable by the `readers`' roles only, with a tag naming a Twilio account,
    that reads the secrets under `prefix` of that account (the stack tells the functions its
    ARN: TWILIO_TENANT_READER_ROLE_ARN, OPENAI_TENANT_READER_ROLE_ARN, ...)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        readers: list[lambda_.Function],
        prefix: str,
        what: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.CompositePrincipal(*(_tagged(reader) for reader in readers)),
            max_session_duration=Duration.hours(1),
            description=f"Reads the {what} of the one tenant its session is tagged with",
        )
        own = f"{prefix}${{aws:PrincipalTag/{TENANT_TAG}}}"
        stack = Stack.of(self)
        secrets = [
            stack.format_arn(
                service="secretsmanager",
                resource="secret",
                resource_name=name,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            # the tenant's secret (its ARN ends with six random characters), and those under it
            for name in (f"{own}-??????", f"{own}/*")
        ]
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=secrets)
        )
        for reader in readers:
            reader.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["sts:AssumeRole", "sts:TagSession"], resources=[self.role.role_arn]
                )
            )
        self._explain(prefix)

    def _explain(self, prefix: str) -> None:
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="The secrets under the one tenant's name that the session is tagged with.",
                    applies_to=[  # cdk-nag writes the policy variable ${x} as <x>
                        "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:"
                        f"secret:{prefix}<aws:PrincipalTag/{TENANT_TAG}>/*"
                    ],
                )
            ],
            apply_to_children=True,
        )


def _tagged(reader: lambda_.Function) -> iam.IPrincipal:
    """The reader's role, allowed only with a session tag naming a Twilio account."""
    if reader.role is None:
        raise ValueError(f"{reader.node.id} has no role to assume this one with")
    return iam.PrincipalWithConditions(
        iam.ArnPrincipal(reader.role.role_arn).with_session_tags(),
        {"StringLike": {f"aws:RequestTag/{TENANT_TAG}": TENANT_PATTERN}},
    )
