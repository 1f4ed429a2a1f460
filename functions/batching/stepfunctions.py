"""The Step Functions client: start a window's run, wake a parked run, read a run."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import ClientError

from functions.batching.settings import StateMachineSettings


@cache
def client() -> Any:
    return boto3.client("stepfunctions")


def start(name: str, run_input: str, already_open: bool = False) -> None:
    """Start the named run. With `already_open`, a run of that name that has ended is
    not an error (its window is about to close)."""
    try:
        client().start_execution(
            stateMachineArn=StateMachineSettings.get().state_machine_arn, name=name, input=run_input
        )
    except ClientError as error:
        if not (already_open and error.response["Error"]["Code"] == "ExecutionAlreadyExists"):
            raise


def wake(task_token: str) -> bool:
    """Complete a parked task token; False if it was completed already, or is gone."""
    try:
        client().send_task_success(taskToken=task_token, output=json.dumps({"woken": True}))
    except ClientError as error:
        if error.response["Error"]["Code"] in ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist"):
            return False
        raise
    return True


def status(execution_name: str) -> str | None:
    """RUNNING, SUCCEEDED, FAILED, ... of the named run of our state machine; None if
    there is no such run."""
    arn = (
        StateMachineSettings.get().state_machine_arn.replace(":stateMachine:", ":execution:")
        + ":"
        + execution_name
    )
    try:
        return str(client().describe_execution(executionArn=arn)["status"])
    except ClientError as error:
        if error.response["Error"]["Code"] == "ExecutionDoesNotExist":
            return None
        raise
