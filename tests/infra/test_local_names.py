"""The local stack is a stack named like the default deployed one: its event bus, state
machine and secrets are named as the synthesized stack names them, and the functions'
default settings are those names."""

from __future__ import annotations

import pytest

from functions.registry import ALL_SETTINGS
from infra.local.stack import EVENT_BUS_NAME, STATE_MACHINE_NAME
from infra.tenants import Names

pytestmark = pytest.mark.infra


def _only(stack_json, kind: str) -> dict:
    (found,) = [r for r in stack_json["Resources"].values() if r["Type"] == kind]
    return found["Properties"]


def test_the_local_bus_and_state_machine_are_named_as_the_default_stack_names_them(synthesized):
    stack, stack_json, _ = synthesized
    assert stack.stack_name == "BurstReply"
    assert _only(stack_json, "AWS::Events::EventBus")["Name"] == EVENT_BUS_NAME
    assert _only(stack_json, "AWS::StepFunctions::StateMachine")["StateMachineName"] == STATE_MACHINE_NAME


def test_the_local_secrets_are_named_as_the_default_stack_names_them(synthesized):
    outputs = {k: v["Value"] for k, v in synthesized[1]["Outputs"].items()}
    defaults = {name: f.default for model in ALL_SETTINGS for name, f in model.model_fields.items()}
    local = Names.resolve("BurstReply", {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000"})
    assert (
        defaults["twilio_tenant_secret_prefix"] == local.twilio_prefix == outputs["TwilioTenantSecretPrefix"]
    )
    assert (
        defaults["openai_tenant_secret_prefix"] == local.openai_prefix == outputs["OpenAITenantSecretPrefix"]
    )
