"""Counting what a burst costs, independent of the machine: AWS calls made by a handler,
and the state transitions and Lambda invocations of a conversation's runs. Used by the
cost tests (tests/emulator/test_costs.py) and by `make bench`."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import botocore.client
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from functions.intake.settings import PublicUrlSettings
from infra.local.gateway import proxy_event
from infra.local.stack import LocalStack
from infra.local.webhooks import inbound_form, new_message_sid, sign


class AwsCallCounter:
    """Counts the AWS API calls the current thread makes while counting is on."""

    _installed: AwsCallCounter | None = None

    def __init__(self) -> None:
        self.local = threading.local()
        self.calls: Counter[str] = Counter()
        self.dynamodb_items: Counter[str] = Counter()  # operation → items it read or wrote
        self.all_threads = False  # count every thread's calls (a whole run's Lambdas)

    @classmethod
    def installed(cls) -> AwsCallCounter:
        """The one counter, wrapped around botocore's API call once per process."""
        if cls._installed is None:
            counter = cls._installed = cls()
            original = botocore.client.BaseClient._make_api_call

            def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
                if counter.all_threads or getattr(counter.local, "on", False):
                    service = client.meta.service_model.service_name
                    counter.calls[f"{service}:{operation}"] += 1
                    if service == "dynamodb":
                        counter.dynamodb_items[operation] += _items(operation, params)
                return original(client, operation, params)

            botocore.client.BaseClient._make_api_call = counted  # type: ignore[method-assign]
        return cls._installed

    def measure(self, call: Any, all_threads: bool = False) -> tuple[Any, Counter[str]]:
        self.calls, self.dynamodb_items = Counter(), Counter()
        self.local.on, self.all_threads = True, all_threads
        try:
            return call(), self.calls
        finally:
            self.local.on = self.all_threads = False


def _items(operation: str, params: dict[str, Any]) -> int:
    """How many items a DynamoDB call reads or writes (what it is billed by)."""
    if operation == "BatchWriteItem":
        return sum(len(requests) for requests in params["RequestItems"].values())
    if operation == "BatchGetItem":
        return sum(len(table["Keys"]) for table in params["RequestItems"].values())
    if operation == "TransactWriteItems":
        return len(params["TransactItems"])
    return 1


def webhook_event(stack: LocalStack, user: str, our_number: str, body: str) -> dict[str, Any]:
    """A signed API Gateway proxy event for one inbound message (no HTTP involved)."""
    url = f"{PublicUrlSettings.get().webhook_base_url}/whatsapp"  # the URL signatures cover
    form = inbound_form(body, user, our_number, stack.config.twilio_account_sid, new_message_sid())
    builder = EnvironBuilder(
        path="/whatsapp",
        base_url="http://costs.local",
        method="POST",
        data=form,
        headers={"X-Twilio-Signature": sign(url, form, stack.config.twilio_auth_token)},
    )
    return proxy_event(Request(builder.get_environ()))


@dataclass(frozen=True)
class RunCounts:
    runs: int
    transitions: int  # billed: each state entered, and each retry of a task
    lambda_invocations: int
    extensions: int  # quiet-mode extensions: the run went back to its wait
    regenerations: int = 0  # replies discarded for newer fragments (on_newer: merge)


def run_counts(stack: LocalStack, conversation_id: str) -> RunCounts:
    """What the conversation's runs cost, from their execution histories."""
    sfn = stack.client("stepfunctions")
    runs = transitions = invocations = extensions = regenerations = 0
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=stack.state_machine_arn)
    for run in (r for page in pages for r in page["executions"]):
        if not run["name"].startswith(conversation_id + "-"):
            continue
        events = sfn.get_execution_history(executionArn=run["executionArn"], maxResults=1000)["events"]
        entered = [
            e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")
        ]
        task_entries = sum(1 for e in events if e["type"] == "TaskStateEntered")
        scheduled = [e for e in events if e["type"] == "TaskScheduled"]
        runs += 1
        transitions += len(entered) + len(scheduled) - task_entries
        invocations += sum(1 for e in scheduled if e["taskScheduledEventDetails"]["resourceType"] == "lambda")
        extensions += entered.count("Wait For The Burst To End") - 1
        regenerations += entered.count("Answer Again With Newer Fragments")
    return RunCounts(runs, transitions, invocations, extensions, regenerations)
