"""`python -m infra.runs` on AWS reads every name it needs from the stack's outputs."""

import boto3
from botocore.stub import Stubber

from functions.dal.tables import ALL_TABLES
from infra import runs


def test_the_stack_outputs_give_every_setting_the_commands_need(monkeypatch):
    client = boto3.client("cloudformation", region_name="us-east-1")
    outputs = [
        {"OutputKey": f"{t.logical_id}TableName", "OutputValue": f"real-{t.logical_id}"} for t in ALL_TABLES
    ]
    outputs += [
        {"OutputKey": "StateMachineArn", "OutputValue": "arn:aws:states:us-east-1:1:stateMachine:X"},
        {"OutputKey": "EventBusName", "OutputValue": "real-bus"},
        {"OutputKey": "WhatsAppWebhookUrl", "OutputValue": "https://example.invalid/whatsapp"},
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
        monkeypatch.setattr(runs.boto3, "client", lambda service: client)
        settings = runs.settings_from_stack("BurstReply")

    assert settings == {
        **{t.env_var: f"real-{t.logical_id}" for t in ALL_TABLES},
        "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:X",
        "EVENT_BUS_NAME": "real-bus",
    }
