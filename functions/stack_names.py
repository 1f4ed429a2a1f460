"""The names of a stack's resources, from its name: the CDK stack gives them to its
resources, and the local stack, a stack named like the default deployed one
(`STACK_NAME`), gives them to its own. The functions' settings default to that stack's."""

from __future__ import annotations

STACK_NAME = "BurstReply"  # the default; `-c stack_name=...` changes it


def metrics_namespace(stack_name: str) -> str:
    """The CloudWatch namespace of the metrics a stack's functions emit, and of every metric
    its alarms and dashboard read that is not AWS's own: the stack's name, unique in an
    account and Region, so that two stacks there never count into each other's alarms
    (docs/adr/0139-a-stacks-metrics-are-in-a-namespace.md). A stack name (letters, digits,
    hyphens; at most 128) is always a valid namespace; the default stack's is `BurstReply`,
    where its metrics always were."""
    return stack_name


def state_machine_name(stack_name: str) -> str:
    return f"{stack_name}-BatchWindow"


def event_bus_name(stack_name: str) -> str:
    return f"{stack_name}-events"


def twilio_tenant_secret_prefix(stack_name: str) -> str:
    """Each tenant's Twilio credentials are the secret <prefix><AccountSid>."""
    return f"{stack_name}/tenants/twilio/"


def openai_tenant_secret_prefix(stack_name: str) -> str:
    """A tenant's own OpenAI keys lie under <prefix><AccountSid>: a separate prefix, so
    that the functions that send with Twilio cannot read OpenAI keys, and the reverse."""
    return f"{stack_name}/tenants/openai/"


def tool_tenant_secret_prefix(stack_name: str) -> str:
    """A tenant's tool-signing secret is <prefix><AccountSid>: read by Call Tools alone, in a
    session tagged with the tenant, apart from the Twilio and OpenAI secrets."""
    return f"{stack_name}/tenants/tools/"


def openai_secret_name(stack_name: str) -> str:
    """The deployment's OpenAI key where the stack names it: the local stack, and the
    functions' default. The CDK stack's secret keeps the name CloudFormation generated
    (renaming a secret replaces it, value and all); OPENAI_SECRET_NAME carries it."""
    return f"{stack_name}/openai"


def conversation_id_key_secret_name(stack_name: str) -> str:
    """The key conversation ids are drawn with, where the stack names it: the local stack,
    and the functions' default. The CDK stack's secret keeps its generated name
    (CONVERSATION_ID_KEY_SECRET_NAME carries it)."""
    return f"{stack_name}/conversation-id-key"
