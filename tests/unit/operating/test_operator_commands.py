"""The operator's commands (`infra.runs`, `infra.tenants`, `infra.replay`, `infra.smoke`) name
their stack one way, `--stack NAME` or STACK_NAME (infra/stack_lookup.py), find every name
they need in its outputs, and meet an AWS problem with one line on standard error and a
non-zero exit, never a traceback."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from functions.config import get_settings
from functions.entry_points import reconciler
from functions.storage.tables import ALL_TABLES
from infra import conversations, runs, smoke, stack_lookup, tenants
from infra.replay import __main__ as replay

STATE_MACHINE = "arn:aws:states:eu-west-1:111122223333:stateMachine:Other-BatchWindow"
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "runs": runs.main,
    "tenants": tenants.main,
    "replay": replay.main,
    "smoke": smoke.main,
    "conversations": conversations.main,
}
# Each command, as an operator would run it, before and after its stack option.
ARGUMENTS = {
    "runs": ["list"],
    "tenants": ["list"],
    "replay": ["--since", "1d"],
    "smoke": ["--from", "whatsapp:+15550001111"],
    "conversations": ["create", "whatsapp:+15550001111"],
}


@pytest.fixture
def on_aws(monkeypatch, tmp_path) -> None:
    """An operator's shell on AWS: a region and credentials, none of the stack's names."""
    for name in (
        "STACK_NAME",
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "AWS_REGION",
        *stack_lookup.OUTPUTS.values(),
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # a new session reads this environment
    yield
    get_settings.cache_clear()


def _no_stack_called(names: list[str]) -> Callable[..., Any]:
    """boto3.client, whose CloudFormation knows no stack (and records the names asked for)."""
    real_client = boto3.client

    def client(service: str, *args: Any, **kwargs: Any) -> Any:
        made = real_client(service, *args, **kwargs)
        if service == "cloudformation":

            def describe_stacks(StackName: str) -> dict[str, Any]:  # noqa: N803 (boto3's name)
                names.append(StackName)
                message = f"Stack with id {StackName} does not exist"
                raise ClientError(
                    {"Error": {"Code": "ValidationError", "Message": message}}, "DescribeStacks"
                )

            made.describe_stacks = describe_stacks
        return made

    return client


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("how", ["--stack", "STACK_NAME", "--stack after the command"])
def test_every_command_names_its_stack_with_the_option_or_the_variable(
    command, how, on_aws, monkeypatch, capsys
):
    asked: list[str] = []
    monkeypatch.setattr(boto3, "client", _no_stack_called(asked))
    arguments = ARGUMENTS[command]
    if how == "STACK_NAME":
        monkeypatch.setenv("STACK_NAME", "Other")
    elif how == "--stack":
        arguments = ["--stack", "Other", *arguments]
    else:
        arguments = [*arguments, "--stack", "Other"]

    status = COMMANDS[command](arguments)

    assert asked == ["Other"]
    assert status != 0
    (line,) = capsys.readouterr().err.splitlines()  # one line, no traceback
    assert "no stack Other" in line


def _outputs(stack: str) -> list[dict[str, str]]:
    outputs = [
        {"OutputKey": f"{t.logical_id}TableName", "OutputValue": f"{stack}-{t.logical_id}-XYZ"}
        for t in ALL_TABLES
    ]
    return [
        *outputs,
        {"OutputKey": "StateMachineArn", "OutputValue": STATE_MACHINE},
        {"OutputKey": "EventBusName", "OutputValue": f"{stack}-events"},
    ]


def test_redrive_on_aws_with_the_state_machine_set_reads_the_stacks_tables(on_aws, monkeypatch, capsys):
    """STATE_MACHINE_ARN in the shell used to skip the stack's outputs: redrive then failed
    for want of CONVERSATIONS_TABLE (or read tables named like the local stack's)."""
    monkeypatch.setenv("STATE_MACHINE_ARN", STATE_MACHINE)
    cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
    stubber = Stubber(cloudformation)
    stack = {
        "StackName": "BurstReply",
        "CreationTime": "2026-01-01T00:00:00Z",
        "StackStatus": "CREATE_COMPLETE",
    }
    stubber.add_response(
        "describe_stacks",
        {"Stacks": [{**stack, "Outputs": _outputs("BurstReply")}]},
        {"StackName": "BurstReply"},
    )
    monkeypatch.setattr(boto3, "client", lambda service, *a, **k: cloudformation)
    tables_used: list[tuple[str, str]] = []

    def redrive(conversation_id: str) -> dict[str, Any]:  # the reconciler's, seeing the settings
        settings = get_settings()
        tables_used.append((settings.staged_messages_table, settings.batch_windows_table))
        return {"requeued": 0, "window_id": None}

    monkeypatch.setattr(reconciler, "redrive", redrive)

    with stubber:
        assert runs.main(["redrive", "c-1"]) == 0

    assert tables_used == [("BurstReply-StagedMessages-XYZ", "BurstReply-BatchWindows-XYZ")]
    assert get_settings().state_machine_arn == STATE_MACHINE  # the shell's, as set


def _one_line(capsys) -> str:
    (line,) = capsys.readouterr().err.splitlines()
    return line


def test_no_region_is_one_line(on_aws, monkeypatch, capsys):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert runs.main(["list"]) == 1
    assert _one_line(capsys) == (
        "infra.runs: no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)"
    )


def test_no_credentials_is_one_line(on_aws, monkeypatch, capsys):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    assert runs.main(["show", "some-run"]) == 1
    assert _one_line(capsys).startswith("infra.runs: no AWS credentials: ")


def test_an_endpoint_that_is_down_is_one_line(on_aws, monkeypatch, capsys):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    assert runs.main(["list"]) == 1
    line = _one_line(capsys)
    assert f"http://127.0.0.1:{port}" in line and line.endswith("(is the local stack running? make local)")


def test_the_local_stack_needs_nothing_looked_up(on_aws, monkeypatch):
    """With AWS_ENDPOINT_URL set, the local stack's names (infra/local/stack.py), no call."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    monkeypatch.setenv("TURNS_TABLE", "Mine")  # a name set wins
    found = stack_lookup.names("BurstReply", stack_lookup.FUNCTION_SETTINGS)
    assert found["TURNS_TABLE"] == "Mine" and found["CONVERSATIONS_TABLE"] == "Conversations"
    assert found["STATE_MACHINE_ARN"] == (
        "arn:aws:states:eu-west-1:123456789012:stateMachine:BurstReply-BatchWindow"
    )
    assert found["WEBHOOK_BASE_URL"] == "http://127.0.0.1:3000"
    assert found["CONVERSATION_ID_KEY_SECRET_NAME"] == "BurstReply/conversation-id-key"  # as it makes it
