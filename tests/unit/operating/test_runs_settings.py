"""`python -m infra.runs` (and the other operator commands) on AWS read every name they need
from the stack's outputs (infra/stack_lookup.py)."""

import boto3
from botocore.stub import Stubber

from functions.storage.tables import ALL_TABLES
from infra import stack_lookup


def test_the_stack_outputs_give_every_setting_the_commands_need(monkeypatch):
    client = boto3.client("cloudformation", region_name="us-east-1")
    outputs = [
        {"OutputKey": f"{t.logical_id}TableName", "OutputValue": f"real-{t.logical_id}"} for t in ALL_TABLES
    ]
    outputs += [
        {"OutputKey": "StateMachineArn", "OutputValue": "arn:aws:states:us-east-1:1:stateMachine:X"},
        {"OutputKey": "EventBusName", "OutputValue": "real-bus"},
        {"OutputKey": "WhatsAppWebhookUrl", "OutputValue": "https://example.invalid/prod/whatsapp"},
        {"OutputKey": "WebhookBaseUrl", "OutputValue": "https://example.invalid/prod"},
        {"OutputKey": "TwilioTenantSecretPrefix", "OutputValue": "BurstReply/tenants/twilio/"},
    ]
    stack = {
        "StackName": "BurstReply",
        "CreationTime": "2026-01-01T00:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
    }
    with Stubber(client) as stubber:
        stubber.add_response(
            "describe_stacks", {"Stacks": [{**stack, "Outputs": outputs}]}, {"StackName": "BurstReply"}
        )
        monkeypatch.setattr(stack_lookup.boto3, "client", lambda service: client)
        settings = stack_lookup.outputs_of("BurstReply")

    assert settings == {
        **{t.env_var: f"real-{t.logical_id}" for t in ALL_TABLES},
        "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:X",
        "EVENT_BUS_NAME": "real-bus",
        "WEBHOOK_BASE_URL": "https://example.invalid/prod",
        "TWILIO_TENANT_SECRET_PREFIX": "BurstReply/tenants/twilio/",
    }
