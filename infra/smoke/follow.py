"""Following the run the test message started: its conversation, the run of its batch
window, each state as it is entered and exited, then the reply and Twilio's reports of it."""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from functions.answer import turns
from functions.batching import batch_windows
from functions.storage.models import Conversation, Turn
from functions.tenancy import conversations
from infra.runs import short_cause
from infra.smoke.message import SmokeFailed, Target

POLL_SECONDS = 1.0
FIND_SECONDS = 15.0  # to find the conversation, then the run, after the post
# What Twilio reports last of a message that reached the phone, or never will.
REACHED = ("delivered", "read")
NOT_DELIVERED = ("failed", "undelivered", "canceled")
FAILED_ATTEMPTS = ("TaskFailed", "LambdaFunctionFailed", "TaskTimedOut", "ExecutionFailed")


def conversation_of(target: Target, deadline: float) -> Conversation:
    """The conversation the message went to (the address index is eventually consistent)."""
    until = min(deadline, time.monotonic() + FIND_SECONDS)
    while (found := conversations.find(target.channel, target.user, target.ours, target.account_sid)) is None:
        if time.monotonic() > until:
            raise SmokeFailed(
                f"no conversation between {target.user} and {target.ours}: the deployment does not create "
                "one for an unknown sender; create it with python -m infra.conversations create "
                f"{target.user} --number {target.ours} (or turn on the tenant's own: python -m infra.tenants "
                f"auto-create {target.account_sid} on), then run this again"
            )
        time.sleep(POLL_SECONDS / 4)
    return found


def run_of(conversation: Conversation, deadline: float) -> str:
    """The run of the batch window the message opened or joined."""
    sfn = boto3.client("stepfunctions")
    prefix = os.environ["STATE_MACHINE_ARN"].replace(":stateMachine:", ":execution:")
    until = min(deadline, time.monotonic() + FIND_SECONDS)
    while time.monotonic() < until:
        window = batch_windows.get(conversation.conversation_id)
        if window is not None:
            arn = f"{prefix}:{window.execution_name}"
            try:
                sfn.describe_execution(executionArn=arn)
                return arn
            except ClientError as error:
                if error.response["Error"]["Code"] != "ExecutionDoesNotExist":
                    raise
        time.sleep(POLL_SECONDS / 4)
    raise SmokeFailed(
        f"no batch window open for conversation {conversation.conversation_id}: the message was not "
        "staged (an opt-out, a duplicate?) or its run ended already: python -m infra.runs list "
        f"--conversation {conversation.conversation_id}"
    )


def follow_run(execution_arn: str, deadline: float) -> dict[str, Any]:
    """Print each state of the run as it is entered and exited, until the run ends; the run."""
    sfn = boto3.client("stepfunctions")
    seen = 0
    start: datetime | None = None
    entered: dict[str, datetime] = {}
    last_state, last_failure = "", ("", "")
    while True:
        described = sfn.describe_execution(executionArn=execution_arn)
        pages = sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
        events = sorted((e for page in pages for e in page["events"]), key=lambda e: e["id"])
        for event in events[seen:]:
            start = start or event["timestamp"]
            offset = f"  +{(event['timestamp'] - start).total_seconds():7.2f}s"
            kind = event["type"]
            if kind.endswith("StateEntered"):
                last_state = event["stateEnteredEventDetails"]["name"]
                entered[last_state] = event["timestamp"]
                print(f"{offset}  entered {last_state}")
            elif kind.endswith("StateExited"):
                name = event["stateExitedEventDetails"]["name"]
                took = (event["timestamp"] - entered.get(name, event["timestamp"])).total_seconds()
                print(f"{offset}  exited  {name} ({took * 1000:.0f} ms)")
            elif _failed_attempt(event):
                details = _details(event)
                last_failure = (details.get("error", "?"), short_cause(details.get("cause", "")))
                if kind != "ExecutionFailed":
                    print(f"{offset}  attempt failed in {last_state}: {last_failure[0]}: {last_failure[1]}")
            elif kind in FAILED_ATTEMPTS:  # a waiting task's timer ran out: the wait is over
                print(f"{offset}  waited its full time in {last_state} (States.Timeout)")
        seen = len(events)
        if described["status"] != "RUNNING":
            break
        if time.monotonic() > deadline:
            raise SmokeFailed(f"the run is still running: python -m infra.runs show {described['name']}")
        time.sleep(POLL_SECONDS)
    took = ((described.get("stopDate") or described["startDate"]) - described["startDate"]).total_seconds()
    line = f"Run {described['status']} after {took:.1f} s"
    if described["status"] != "SUCCEEDED":
        error = described.get("error") or last_failure[0]
        cause = short_cause(described.get("cause", "")) or last_failure[1]
        line += f", in {_failed_state(events)}: {error}: {cause}"
    print(line)
    return described


def _failed_state(events: list[dict[str, Any]]) -> str:
    """The state whose attempt failed last (a Catch then runs other states), else the last
    state entered."""
    state = failed_in = ""
    for event in events:
        if event["type"].endswith("StateEntered"):
            state = event["stateEnteredEventDetails"]["name"]
        elif _failed_attempt(event) and event["type"] != "ExecutionFailed":
            failed_in = state
    return failed_in or state


def _details(event: dict[str, Any]) -> dict[str, Any]:
    return next((v for k, v in event.items() if k.endswith("EventDetails")), {})


def _failed_attempt(event: dict[str, Any]) -> bool:
    """A failed attempt, not a waiting task whose timer ran out (the burst is over)."""
    return event["type"] in FAILED_ATTEMPTS and _details(event).get("error") != "States.Timeout"


def wait_for_deliveries(reply: Turn, until: float) -> Turn:
    """The reply once Twilio has reported each part delivered or failed (status callbacks),
    or as it is when `until` comes."""
    while time.monotonic() < until:
        reports = [reply.deliveries.get(sid) for sid in reply.message_sids]
        if all(r is not None and r.status in REACHED + NOT_DELIVERED for r in reports):
            break
        time.sleep(POLL_SECONDS)
        reply = turns.get(reply.conversation_id, reply.turn_id) or reply
    return reply


def report_reply(reply: Turn, show_text: bool) -> int:
    """Print the reply's parts and what Twilio reported of each: 1 if one was not delivered."""
    print(f"Reply sent: {len(reply.message_sids)} part(s), {len(reply.body)} characters")
    for sid in reply.message_sids:
        delivery = reply.deliveries.get(sid)
        reported = "no report yet" if delivery is None else delivery.status
        if delivery is not None and delivery.error_code:
            reported += f" (error {delivery.error_code})"
        print(f"  {sid}: {reported}")
    if show_text:
        print("\n".join(f"  | {line}" for line in reply.body.splitlines()))
    failed = [d for d in reply.deliveries.values() if d.status in NOT_DELIVERED]
    return 1 if failed else 0
