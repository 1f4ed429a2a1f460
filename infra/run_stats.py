"""`python -m infra.runs stats --since 1h`: the burst's figures computed from the Turns
table, the same ones the functions emit as metrics (functions/batching/batch_metrics.py,
the webhook's SplitBursts), so that they can be read locally, or on AWS without CloudWatch.

- batches recorded (user turns answered, handed off or limited since then), and why each
  burst ended (`burst_ended_by`: BurstEnd by reason);
- FragmentsPerReply and ReplyDelay (last fragment to the first part Twilio accepted) of
  the replies sent;
- SplitBursts: batches whose first fragment came within SPLIT_SECONDS of the reply before
  (the time it was recorded sent, as the conversation's `last_reply_at` is);
- RepliesDiscarded is a metric only: the tables keep no discarded reply;
- HandedOffBatches: batches recorded for a person (not answered by the assistant, or
  answered only with HANDOFF_REPLY), and the conversations they belong to (the metric
  HandedOff counts the hand-offs themselves); PersonReplies: a person's replies sent.

Only keys, times and counts are read (no bodies)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from functions import clock
from functions.batching.rules.burst import BURST_END_REASONS
from functions.batching.rules.debounce import splits_a_burst
from functions.handoff.rules.pause import HANDED_OFF, PERSON
from functions.storage import expressions
from functions.storage.models import Turn, from_dynamo
from functions.storage.tables import assistant_turn_id

_SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(value: str, now: datetime) -> datetime:
    """`1h`, `30m`, `2d`, `90s` before `now`, or an ISO 8601 time."""
    span = _SPAN.match(value.strip())
    if span:
        return now - timedelta(**{_UNITS[span.group(2)]: float(span.group(1))})
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"--since {value!r}: give a span such as 1h, 30m, 2d, or an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class BurstStats:
    since: datetime
    split_seconds: float
    batches: int = 0
    burst_ends: Counter[str] = field(default_factory=Counter)
    fragments_per_reply: list[int] = field(default_factory=list)
    reply_delays_ms: list[int] = field(default_factory=list)
    split_bursts: int = 0
    handed_off_batches: int = 0
    handed_off: set[str] = field(default_factory=set)  # their conversations
    person_replies: int = 0

    def lines(self) -> list[str]:
        ends = ", ".join(f"{r} {self.burst_ends.get(r, 0)}" for r in BURST_END_REASONS)
        other = sum(n for r, n in self.burst_ends.items() if r not in BURST_END_REASONS)
        fragments, delays = self.fragments_per_reply, sorted(self.reply_delays_ms)
        return [
            f"Since {clock.iso(self.since)} (from the Turns table)",
            f"  Batches recorded    {self.batches}",
            f"  BurstEnd            {ends}" + (f", not recorded {other}" if other else ""),
            f"  FragmentsPerReply   {_mean_max(fragments)} ({len(fragments)} replies)",
            f"  ReplyDelay          {_spread_ms(delays)} ({len(delays)} replies)",
            f"  SplitBursts         {self.split_bursts} (begun within {self.split_seconds:g} s of a reply)",
            "  RepliesDiscarded    a metric only (CloudWatch): the tables keep no discarded reply",
            f"  HandedOffBatches    {self.handed_off_batches} (of {len(self.handed_off)} conversations)",
            f"  PersonReplies       {self.person_replies} (sent from a helpdesk)",
        ]


def burst_stats(turns: Iterable[Turn], since: datetime, split_seconds: float) -> BurstStats:
    """The figures of the batches recorded since `since` (SplitBursts: of those begun since)."""
    stats, start = BurstStats(since=since, split_seconds=split_seconds), clock.iso(since)
    by_conversation: dict[str, dict[str, Turn]] = defaultdict(dict)
    for turn in turns:
        by_conversation[turn.conversation_id][turn.turn_id] = turn
    for conversation in by_conversation.values():
        replies = sorted(
            t.sent_at for t in conversation.values() if t.role == "assistant" and t.sent_at and t.message_sids
        )
        for user in (t for t in conversation.values() if t.role == "user"):
            reply = conversation.get(assistant_turn_id(user.window_id))
            if user.answered_at and user.answered_at >= start:
                _count_batch(stats, user, reply)
            if user.first_received_at and user.first_received_at >= start:
                stats.split_bursts += _split(replies, user.first_received_at, split_seconds)
        written = [t for t in conversation.values() if t.written_by == PERSON and t.sent_at]
        stats.person_replies += sum(1 for t in written if (t.sent_at or "") >= start)
    return stats


def _count_batch(stats: BurstStats, user: Turn, reply: Turn | None) -> None:
    stats.batches += 1
    stats.burst_ends[user.burst_ended_by or "unknown"] += 1
    if user.status == "handed_off" or (reply is not None and reply.limited == HANDED_OFF):
        stats.handed_off_batches += 1
        stats.handed_off.add(user.conversation_id)
    if reply is None or reply.status != "sent" or not reply.message_sids:
        return  # no reply to the batch: handed off, limited, or nothing sent
    stats.fragments_per_reply.append(user.message_count)
    if reply.first_part_at and user.last_received_at:
        delay = clock.iso_to_ms(reply.first_part_at) - clock.iso_to_ms(user.last_received_at)
        stats.reply_delays_ms.append(max(0, delay))


def _split(replies: list[str], first_received_at: str, split_seconds: float) -> int:
    before = [r for r in replies if r <= first_received_at]
    last = clock.iso_to_ms(before[-1]) if before else None
    return int(splits_a_burst(last, clock.iso_to_ms(first_received_at), split_seconds))


def scan_turns(dynamodb: Any, table: str, since: datetime, split_seconds: float) -> list[Turn]:
    """The turns that can count since `since`: keys, times and counts, no bodies. The
    replies of the `split_seconds` before are read too (a burst begun since may follow them)."""
    early = clock.iso(since - timedelta(seconds=split_seconds))
    request = {
        "TableName": table,
        "ProjectionExpression": expressions.TURN_FIGURES,
        "FilterExpression": expressions.TURNS_SINCE,
        # `limited` is one of DynamoDB's reserved words, as `role` and `status` are.
        "ExpressionAttributeNames": {"#role": "role", "#status": "status", "#limited": "limited"},
        "ExpressionAttributeValues": {":early": {"S": early}},
    }
    deserialize = TypeDeserializer().deserialize
    found = []
    for page in dynamodb.get_paginator("scan").paginate(**request):
        for item in page["Items"]:
            found.append(Turn.model_validate(from_dynamo({k: deserialize(v) for k, v in item.items()})))
    return found


def _mean_max(values: list[int]) -> str:
    return f"mean {sum(values) / len(values):.1f}, max {max(values)}" if values else "-"


def _spread_ms(values: list[int]) -> str:
    """Median, 90th percentile (nearest rank) and maximum of sorted values."""
    if not values:
        return "-"
    p50, p90 = values[(len(values) - 1) // 2], values[max(0, -(-len(values) * 9 // 10) - 1)]
    return f"p50 {p50} ms, p90 {p90} ms, max {values[-1]} ms"
