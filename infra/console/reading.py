"""What the console reads, through the AWS APIs only, and nothing else: the stack's tables
(Get, Query, Scan) and the state machine's runs (List, Describe, GetExecutionHistory).

Every client comes from one boto3 session that refuses, before sending it, any operation
but the reads listed in `READS`: the console cannot change data, nor read a secret,
whatever credentials the operator holds. Items become the table modules' models
(functions/storage/models.py).

A tool call's output (the endpoint's answer, personal data) is read only to tell why a call
was refused, and dropped here: past this module no page has it (`calls_and_proposals`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import boto3
from boto3.dynamodb.conditions import Attr, Key

from functions.assistant.rules import tools as tool_rules
from functions.delivery import due_resends
from functions.storage import expressions
from functions.storage.models import BatchWindow, Confirmation, Conversation, StagedMessage, ToolCall, Turn
from infra.stack_lookup import TABLES

# Every AWS operation the console sends (StackReader's, and the reachability check of
# infra/console/__main__.py), by name: any other is refused unsent. A list, not name
# prefixes: GetSecretValue begins with Get too.
READS = frozenset(
    {
        "GetItem",  # DynamoDB
        "Query",
        "Scan",
        "DescribeExecution",  # Step Functions
        "DescribeStateMachine",
        "GetExecutionHistory",
        "ListExecutions",
    }
)
# The stack's names the console needs (environment variables, infra/stack_lookup.py).
NEEDED = (*TABLES, "STATE_MACHINE_ARN")
# At most this many pages of a Scan or of the run list per page shown (a Scan page is 1 MB
# at most, a page of runs 1,000 runs): a large deployment shows its most recent part.
MAX_PAGES = 10
SET_ASIDE = ("failed", "dead_lettered")  # a user turn's status when its batch was set aside


class WriteRefused(RuntimeError):
    """The console asked for an operation that is not one of its reads: a bug, refused unsent."""


def _refuse_writes(model: Any, **_: Any) -> None:
    if model.name not in READS:
        raise WriteRefused(f"the console only reads: {model.name} refused")


def read_only_session() -> boto3.Session:
    """A boto3 session (the environment's credentials, region and AWS_ENDPOINT_URL) whose
    clients refuse every operation but the console's reads (`READS`)."""
    session = boto3.Session()
    session.events.register("before-call", _refuse_writes)
    return session


class ConversationRow(Conversation):
    """A conversation as the start page lists it: the record, and what the functions write
    by expression beside it (when it was last answered, its status)."""

    updated_at: str | None = None
    conversation_status: str | None = None


Refusal = Literal["endpoint", "proposed", "not_confirmed", "unknown_tool", "no_signing_secret"]
CONFIRMATION_PREFIX = "confirm#"  # a proposal's key (functions/assistant/rules/tools.py)


class ToolCallRow(ToolCall):
    """A tool call as the console shows it: never its output; a refused call says who
    refused it: the endpoint, or Call Tools itself (functions/states/call_tools.py)."""

    refused_by: Refusal | None = None


def calls_and_proposals(items: list[dict[str, Any]]) -> tuple[list[ToolCallRow], list[Confirmation]]:
    """The ToolCalls table's items: the calls (their outputs dropped) and the proposals of
    `confirm: true` calls."""
    calls, proposals = [], []
    for item in items:
        if str(item.get("call_key", "")).startswith(CONFIRMATION_PREFIX):
            proposals.append(Confirmation.from_item(item))
            continue
        call = ToolCallRow.from_item(item)
        refused_by = _refused_by(call.output or "", call.name) if call.status == "refused" else None
        calls.append(call.model_copy(update={"output": None, "refused_by": refused_by}))
    return calls, proposals


def _refused_by(output: str, name: str) -> Refusal:
    """Who refused a call: what Call Tools told the model, else the endpoint's refusal."""
    told: dict[str, Refusal] = {
        tool_rules.NEEDS_CONFIRMATION: "proposed",
        tool_rules.NOT_CONFIRMED: "not_confirmed",
        tool_rules.unknown_tool(name): "unknown_tool",
        tool_rules.UNAVAILABLE: "no_signing_secret",  # the one refusal Call Tools words so
    }
    return told.get(output, "endpoint")


@dataclass
class Run:
    """One run of the state machine: the list's summary, and once described, its input
    and failure, and its history's events."""

    name: str
    arn: str
    status: str
    started: datetime
    stopped: datetime | None = None
    run_input: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    cause: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


class StackReader:
    """The tables and runs of one stack, read-only. `names`: the stack's names by
    environment variable (infra/stack_lookup.py `names`)."""

    def __init__(self, names: Mapping[str, str], session: boto3.Session | None = None) -> None:
        session = session or read_only_session()
        self.session = session
        dynamodb = session.resource("dynamodb")
        self.conversations = dynamodb.Table(names["CONVERSATIONS_TABLE"])
        self.staged_messages = dynamodb.Table(names["STAGED_MESSAGES_TABLE"])
        self.batch_windows = dynamodb.Table(names["BATCH_WINDOWS_TABLE"])
        self.turns = dynamodb.Table(names["TURNS_TABLE"])
        self.tool_calls = dynamodb.Table(names["TOOL_CALLS_TABLE"])
        self.sfn = session.client("stepfunctions")
        self.state_machine_arn = names["STATE_MACHINE_ARN"]
        self.region = self.state_machine_arn.split(":")[3]

    # --- the start page ------------------------------------------------------------------

    def all_conversations(self) -> list[ConversationRow]:
        return [ConversationRow.from_item(i) for i in _pages(self.conversations.scan)]

    def open_windows(self) -> dict[str, BatchWindow]:
        """Every open batch window, by conversation (the table holds nothing else)."""
        items = _pages(self.batch_windows.scan)
        windows = (BatchWindow.from_item(i) for i in items if not due_resends.is_due_resend(i))
        return {w.conversation_id: w for w in windows}

    def set_aside_batches(self) -> dict[str, list[Turn]]:
        """The user turns of batches set aside (failed or dead-lettered), by conversation."""
        found: dict[str, list[Turn]] = {}
        request = {
            "FilterExpression": Attr("role").eq("user") & Attr("status").is_in(list(SET_ASIDE)),
            "ProjectionExpression": expressions.SET_ASIDE_TURN_FIELDS,
            "ExpressionAttributeNames": {"#r": "role", "#s": "status"},
        }
        for item in _pages(self.turns.scan, **request):
            turn = Turn.from_item(item)
            found.setdefault(turn.conversation_id, []).append(turn)
        return found

    def failed_runs(self) -> list[Run]:
        return self.runs(status="FAILED")

    # --- a conversation ------------------------------------------------------------------

    def conversation(self, conversation_id: str) -> ConversationRow | None:
        item = self.conversations.get_item(Key={"conversation_id": conversation_id}).get("Item")
        return ConversationRow.from_item(item) if item else None

    def turns_of(self, conversation_id: str) -> list[Turn]:
        query = self.turns.query
        items = _pages(query, KeyConditionExpression=Key("conversation_id").eq(conversation_id))
        return [Turn.from_item(i) for i in items]

    def staged_of(self, conversation_id: str) -> list[StagedMessage]:
        """The conversation's staged messages that still hold what was sent (pending, or set
        aside); the answered ones are bodiless tombstones and are left out."""
        query = self.staged_messages.query
        items = _pages(query, KeyConditionExpression=Key("conversation_id").eq(conversation_id))
        return [StagedMessage.from_item(i) for i in items if i.get("received_at")]

    def window_of(self, conversation_id: str) -> BatchWindow | None:
        item = self.batch_windows.get_item(Key={"conversation_id": conversation_id}).get("Item")
        return BatchWindow.from_item(item) if item else None

    def tool_calls_of(self, conversation_id: str) -> tuple[list[ToolCallRow], list[Confirmation]]:
        """The conversation's tool calls (never their outputs) and proposals."""
        query = self.tool_calls.query
        items = _pages(query, KeyConditionExpression=Key("conversation_id").eq(conversation_id))
        return calls_and_proposals(items)

    def runs(self, name_prefix: str = "", status: str | None = None) -> list[Run]:
        """The most recent runs (MAX_PAGES pages at most) whose names start with
        `name_prefix`, oldest first."""
        request: dict[str, Any] = {"stateMachineArn": self.state_machine_arn, "maxResults": 1000}
        if status:
            request["statusFilter"] = status
        found: list[Run] = []
        pages = self.sfn.get_paginator("list_executions").paginate(**request)
        for number, page in enumerate(pages):
            found += [_run(e) for e in page["executions"] if e["name"].startswith(name_prefix)]
            if number + 1 >= MAX_PAGES:
                break
        return sorted(found, key=lambda r: r.started)

    def described(self, run: Run) -> Run:
        """The run with its input, its failure and its history."""
        described = self.sfn.describe_execution(executionArn=run.arn)
        events: list[dict[str, Any]] = []
        for page in self.sfn.get_paginator("get_execution_history").paginate(executionArn=run.arn):
            events += page["events"]
        run.status, run.stopped = described["status"], described.get("stopDate")
        run.run_input = _json_object(described.get("input"))
        run.error, run.cause = described.get("error"), described.get("cause")
        run.events = events
        return run


def _run(summary: dict[str, Any]) -> Run:
    return Run(
        name=summary["name"],
        arn=summary["executionArn"],
        status=summary["status"],
        started=summary["startDate"],
        stopped=summary.get("stopDate"),
    )


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _pages(operation: Any, **request: Any) -> list[dict[str, Any]]:
    """The items of a Query or Scan, MAX_PAGES pages at most."""
    items: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        response = operation(**request)
        items += response["Items"]
        if "LastEvaluatedKey" not in response:
            break
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
    return items
