"""The names the stack repeats, in one place (what a deployment chooses: infra/stack_settings.py)."""

from __future__ import annotations

from functions.observability import NAMESPACE, SERVICE
from functions.stack_names import (
    STACK_NAME,
    event_bus_name,
    metrics_namespace,
    openai_tenant_secret_prefix,
    state_machine_name,
    tool_tenant_secret_prefix,
    twilio_tenant_secret_prefix,
)

__all__ = [
    "NAMESPACE",
    "SERVICE",
    "STACK_NAME",
    "event_bus_name",
    "metrics_namespace",
    "openai_tenant_secret_prefix",
    "state_machine_log_group_name",
    "state_machine_name",
    "tool_tenant_secret_prefix",
    "twilio_tenant_secret_prefix",
]


def state_machine_log_group_name(machine_name: str) -> str:
    """Under /aws/vendedlogs/ (docs/adr/0048-what-aws-does-differently-checked-before.md): the
    state machine's run log."""
    return f"/aws/vendedlogs/states/{machine_name}"
