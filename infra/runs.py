"""Inspect runs of the batch-window state machine, locally or on AWS (same code; only
the endpoint differs): list recent runs, and show one as a timeline of its states with
their durations, retries and errors, beside the conversation's recorded turns.

    python -m infra.runs list [--status FAILED] [--conversation ID] [--limit N]
    python -m infra.runs show EXECUTION_NAME_OR_ARN [--bodies]
    python -m infra.runs redrive CONVERSATION_ID
    python -m infra.runs stats [--since 1h]

`redrive` makes a conversation's set-aside messages (a permanent error, or a batch that
kept failing) pending again and opens a window for them. `stats` prints the burst's
figures (reply delay, fragments per reply, split bursts, burst ends by reason) computed
from the Turns table, as the functions' metrics count them (infra/run_stats.py).

Names: the stack is `--stack NAME` (before or after the command), else STACK_NAME, else
BurstReply. On AWS every name comes from the stack's outputs; with AWS_ENDPOINT_URL set
to the local stack's AWS endpoint (`make local` prints it), the local stack's, with nothing
else to set. A name set in the environment (STATE_MACHINE_ARN, TURNS_TABLE, ...) wins
(infra/stack_lookup.py). An AWS error is one line on standard error, exit status 1.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import boto3

from functions.storage import expressions
from functions.storage.tables import turn_ids_of_window
from infra.stack_lookup import FUNCTION_SETTINGS, add_stack_option, chosen_stack, one_line_errors, use_stack


@dataclass
class StateSpan:
    name: str
    entered: datetime
    exited: datetime | None = None
    failed_attempts: list[tuple[str, str]] = field(default_factory=list)  # (error, cause)

    @property
    def duration_ms(self) -> int | None:
        return None if self.exited is None else int((self.exited - self.entered).total_seconds() * 1000)


def timeline(events: list[dict[str, Any]]) -> list[StateSpan]:
    """The states a run went through, in order, from its history events."""
    spans: list[StateSpan] = []
    for event in sorted(events, key=lambda e: e["id"]):
        kind = event["type"]
        if kind.endswith("StateEntered"):
            spans.append(StateSpan(event["stateEnteredEventDetails"]["name"], event["timestamp"]))
        elif kind.endswith("StateExited") and spans:
            spans[-1].exited = event["timestamp"]
        elif kind in ("TaskFailed", "LambdaFunctionFailed", "TaskTimedOut") and spans:
            details: dict[str, Any] = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
            spans[-1].failed_attempts.append(
                (details.get("error", "?"), short_cause(details.get("cause", "")))
            )
    return spans


def short_cause(cause: str) -> str:
    """Lambda errors carry a JSON cause with a stack trace; keep its message."""
    try:
        parsed = json.loads(cause)
    except (TypeError, ValueError):
        return cause[:200]
    return str(parsed.get("errorMessage", cause))[:200] if isinstance(parsed, dict) else cause[:200]


def format_timeline(spans: list[StateSpan]) -> builtins.list[str]:
    if not spans:
        return ["  (no states yet)"]
    start = spans[0].entered
    lines = []
    for span in spans:
        offset = (span.entered - start).total_seconds()
        duration = "running" if span.duration_ms is None else f"{span.duration_ms:>6} ms"
        lines.append(f"  +{offset:7.2f}s  {span.name:<34} {duration}")
        for error, cause in span.failed_attempts:
            if error == "States.Timeout":  # a waiting task's timer ran out: the wait is over
                lines.append(f"  {'':9}    ↳ waited its full time (States.Timeout)")
            else:
                lines.append(f"  {'':9}    ↳ attempt failed: {error}: {cause}")
    return lines


class Runs:
    def __init__(self, state_machine_arn: str, turns_table: str) -> None:
        self.state_machine_arn = state_machine_arn
        self.turns_table = turns_table
        self.sfn = boto3.client("stepfunctions")
        self.dynamodb = boto3.client("dynamodb")

    def list(
        self, status: str | None = None, conversation: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        request: dict[str, Any] = {"stateMachineArn": self.state_machine_arn, "maxResults": 1000}
        if status:
            request["statusFilter"] = status
        runs = []
        for page in self.sfn.get_paginator("list_executions").paginate(**request):
            runs += [
                r for r in page["executions"] if not conversation or r["name"].startswith(conversation + "-")
            ]
        runs.sort(key=lambda r: r["startDate"], reverse=True)
        return runs[:limit]

    def arn_of(self, name_or_arn: str) -> str:
        if name_or_arn.startswith("arn:"):
            return name_or_arn
        execution_prefix = self.state_machine_arn.replace(":stateMachine:", ":execution:")
        return f"{execution_prefix}:{name_or_arn}"

    def show(self, name_or_arn: str, bodies: bool = False) -> builtins.list[str]:
        arn = self.arn_of(name_or_arn)
        described = self.sfn.describe_execution(executionArn=arn)
        events: list[dict[str, Any]] = []
        for page in self.sfn.get_paginator("get_execution_history").paginate(executionArn=arn):
            events += page["events"]
        run_input = json.loads(described.get("input") or "{}")
        lines = [
            f"Run {described['name']}",
            f"  status {described['status']}, started {described['startDate']:%Y-%m-%d %H:%M:%S}",
        ]
        if described.get("error"):
            lines.append(f"  error {described['error']}: {short_cause(described.get('cause', ''))}")
        lines += ["", "States:", *format_timeline(timeline(events))]
        conversation_id, window_id = run_input.get("conversation_id"), run_input.get("window_id")
        if conversation_id and window_id:
            lines += ["", f"Turns of this window (conversation {conversation_id}):"]
            lines += self._turns(conversation_id, window_id, bodies)
        return lines

    def _turns(self, conversation_id: str, window_id: str, bodies: bool) -> builtins.list[str]:
        items = self.dynamodb.query(
            TableName=self.turns_table,
            KeyConditionExpression=expressions.TURNS_OF_WINDOW,
            ExpressionAttributeValues={
                ":c": {"S": conversation_id},
                ":w": {"S": turn_ids_of_window(window_id)},
            },
            ConsistentRead=True,
        )["Items"]
        if not items:
            return ["  (none recorded)"]
        lines = []
        for item in items:
            role, status = item["role"]["S"], item.get("status", {}).get("S", "?")
            body = item.get("body", {}).get("S", "")
            sids = [s["S"] for s in item.get("message_sids", {}).get("L", [])]
            deliveries = _deliveries(item)
            listed = ", ".join(f"{sid} ({deliveries[sid][1]})" if sid in deliveries else sid for sid in sids)
            lines.append(f"  {role:<9} {status:<8} {len(body):>5} chars  messages {listed or '-'}")
            lines += [
                f"  {'':9} {message:<8} {'':11} {sid} ({reported})"
                for sid, (message, reported) in deliveries.items()
                if sid not in sids
            ]
            if bodies:
                lines += [f"      | {line}" for line in body.splitlines()]
        return lines


def _deliveries(item: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """MessageSid → (which message: a part's index, `template` or `fallback`; its latest
    status as Twilio reported it, with the error code of a failure)."""
    found = {}
    for sid, value in item.get("deliveries", {}).get("M", {}).items():
        fields = value.get("M", {})
        status = fields.get("status", {}).get("S", "?")
        code = fields.get("error_code", {}).get("N")
        found[sid] = (fields.get("message", {}).get("S", "?"), f"{status} {code}" if code else status)
    return found


# The names each command needs (the functions' settings, as environment variables).
NEEDED = {
    "list": ("STATE_MACHINE_ARN",),
    "show": ("STATE_MACHINE_ARN", "TURNS_TABLE"),
    "redrive": FUNCTION_SETTINGS,  # it runs the reconciler's redrive, with the functions' settings
    "stats": ("TURNS_TABLE",),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.runs", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="recent runs, newest first")
    listing.add_argument("--status", choices=["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"])
    listing.add_argument("--conversation")
    listing.add_argument("--limit", type=int, default=20)
    showing = commands.add_parser("show", help="one run as a timeline, with its turns")
    showing.add_argument("execution", help="execution name or ARN")
    showing.add_argument("--bodies", action="store_true", help="also print message texts (personal data)")
    redriving = commands.add_parser("redrive", help="answer a conversation's set-aside messages after all")
    redriving.add_argument("conversation")
    stating = commands.add_parser("stats", help="the burst's figures, from the tables")
    stating.add_argument("--since", default="1h", help="a span (1h, 30m, 2d) or an ISO 8601 time")
    add_stack_option(parser, listing, showing, redriving, stating)
    args = parser.parse_args(argv)
    return one_line_errors("infra.runs", lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    use_stack(chosen_stack(args.stack), NEEDED[args.command])
    if args.command == "stats":
        return _stats(args.since)
    runs = Runs(os.environ["STATE_MACHINE_ARN"], os.environ.get("TURNS_TABLE", ""))
    if args.command == "redrive":
        from functions.entry_points.reconciler import redrive  # needs the functions' settings

        print(json.dumps(redrive(args.conversation)))
        return 0
    if args.command == "list":
        found = runs.list(args.status, args.conversation, args.limit)
        for run in found:
            stopped = run.get("stopDate")
            took = f"{(stopped - run['startDate']).total_seconds():7.1f}s" if stopped else "running"
            print(f"{run['startDate']:%Y-%m-%d %H:%M:%S}  {run['status']:<9} {took}  {run['name']}")
        if not found:
            which = [f"status {args.status}"] * bool(args.status)
            which += [f"conversation {args.conversation}"] * bool(args.conversation)
            print(f"No runs{' (' + ', '.join(which) + ')' if which else ''}.")
    else:
        print("\n".join(runs.show(args.execution, args.bodies)))
    return 0


def _stats(since: str) -> int:
    from functions import clock
    from functions.batching.settings import BatchingSettings  # SPLIT_SECONDS, as the webhook reads it
    from infra.run_stats import burst_stats, parse_since, scan_turns

    try:
        start = parse_since(since, clock.now())
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    split_seconds = BatchingSettings.read(os.environ).split_seconds
    turns = scan_turns(boto3.client("dynamodb"), os.environ["TURNS_TABLE"], start, split_seconds)
    print("\n".join(burst_stats(turns, start, split_seconds).lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
