"""The senders' turns: each of our numbers sends at its rate (messages a second), and every
Send Reply, whichever conversation it answers, takes its sender's next turn before it asks
Twilio to send, so that Twilio's queue for the sender stays short and no reply outlives its
ValidityPeriod there (functions/delivery/sender_pace.py).

A sender's turns are booked on one UsageCounters item, `pace#<sender>#<shard>`, holding
`next_us`: when its next free turn begins (epoch microseconds). Taking a turn is one
UpdateItem, conditioned so that it can never book two replies on one turn:
- busy (a turn is booked ahead): ADD one gap to `next_us`, if it begins between now and the
  latest time the caller will wait for; the turn is the old value;
- idle (`next_us` passed, or none): SET it to now plus one gap; the turn is now.
A condition that fails tells which case holds (the item is returned with the failure): the
other is tried, or the turn begins too late and nothing is booked. This instance remembers
the last `next_us` it saw, to try the likelier case first: one write a turn, whatever the
load. The item is kept an hour after its last turn (TTL).

One item takes at most 1,000 writes a second, failed conditions included: a sender faster
than SHARD_MPS spreads its turns over ceil(mps / SHARD_MPS) items (400 a second: 4 shards),
each with its share of the rate; a conversation books on its home shard (a stable hash),
and on the next one only when its home's turns are booked too far ahead."""

from __future__ import annotations

import math
from typing import Any

from botocore.exceptions import ClientError

from functions.storage import dynamo, expressions
from functions.storage.settings import TableSettings

KEY = "pace#"
SHARD_MPS = 100  # a shard's rate at most: 100 turns a second, a tenth of an item's writes
KEPT_SECONDS = 3600  # an idle sender's item is removed (TTL) this long after its last turn
_ROUNDS = 4  # busy, idle, busy, idle: the item changed between two writes each time

# The last `next_us` this instance saw on each shard: the case it tries first.
_seen: dict[str, int] = {}


def shards_for(mps: float) -> int:
    return max(1, math.ceil(mps / SHARD_MPS))


def gap_us(mps: float) -> int:
    """The time between two turns of one shard, in microseconds."""
    return max(1, math.ceil(shards_for(mps) * 1_000_000 / mps))


def shard_key(sender: str, shard: int) -> str:
    return f"{KEY}{sender}#{shard}"


def take_turn(sender: str, mps: float, now_us: int, latest_us: int, home: int = 0) -> int | None:
    """Book the sender's next turn, if it begins by `latest_us`: when it begins (epoch
    microseconds, `now_us` at the earliest). None when every shard's next turn begins later:
    nothing is booked. `home`: the shard to try first (any number: taken modulo the shards)."""
    shards = shards_for(mps)
    gap = gap_us(mps)
    for n in range(shards):
        turn = _take(shard_key(sender, (home + n) % shards), gap, now_us, latest_us)
        if turn is not None:
            return turn
    return None


def _take(key: str, gap: int, now_us: int, latest_us: int) -> int | None:
    busy = _seen.get(key, 0) >= now_us
    expires = now_us // 1_000_000 + KEPT_SECONDS
    for _ in range(_ROUNDS):
        try:
            if busy:
                new = _update(
                    key,
                    expressions.TAKE_NEXT_TURN,
                    expressions.NEXT_TURN_BOOKED_BY,
                    {":gap": gap, ":now": now_us, ":latest": latest_us, ":expires": expires},
                )
                _seen[key] = new
                return new - gap
            _update(
                key,
                expressions.TAKE_TURN_NOW,
                expressions.NO_TURN_BOOKED,
                {":next": now_us + gap, ":now": now_us, ":expires": expires},
            )
            _seen[key] = now_us + gap
            return now_us
        except ClientError as error:
            if not dynamo.condition_failed(error):
                raise
            booked = dynamo.old_item(error).get("next_us")
            _seen[key] = int(booked) if booked is not None else 0
            if booked is not None and int(booked) > latest_us:
                return None  # booked too far ahead
            busy = booked is not None and int(booked) >= now_us
    return None  # the item kept changing between the two cases: as busy (the caller retries)


def _update(key: str, update: str, condition: str, values: dict[str, Any]) -> int:
    table = dynamo.table(TableSettings.get().usage_counters_table)
    response = table.update_item(
        Key={"counter_key": key},
        UpdateExpression=update,
        ConditionExpression=condition,
        ExpressionAttributeValues=values,
        ReturnValues="UPDATED_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    return int(response["Attributes"]["next_us"])


def forget() -> None:
    """Forget the turns seen (tests: as a new Lambda instance)."""
    _seen.clear()
