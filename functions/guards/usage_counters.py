"""The UsageCounters table: the hourly counters of the cost limits (functions/guards/limits.py):
AI calls and tokens, per conversation, sender, tenant and for everyone. One item per counter
and hour, removed by TTL once the hour is over.

A counter that many conversations share (a tenant's, everyone's) is spread over shards, so
that no item is written on behalf of every conversation: one item takes at most 1,000 writes
a second, and transactions on one item cancel each other (TransactionConflict) long before.
Shard i of a counter with ceiling L over n shards holds its share of L (L // n, one more for
the first L % n shards: the shares add up to L) and is keyed `<key>#<i>`. A conversation
counts on its home shard (a stable hash of its id); a shard at its share sends it to another
shard with room (read with one BatchGetItem), and the counter is full only when every shard
is: a call is refused only when the total has reached the ceiling, and never more than the
ceiling is admitted (exact). Counts that are never refused (`spill`: a request already
admitted asked again differently, tokens reported after a response) go to the home shard
while it is under its share, else to the least used shard, so that the shards fill evenly.

Each count can carry a mark, kept (in the same transaction) on the batch's first staged
message: a retry whose mark is there has counted already and counts nothing."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ClientError

from functions.errors import TransactionConflict
from functions.storage import dynamo, expressions
from functions.storage.settings import TableSettings

SHARDS = 64  # a shared counter's items: each takes 1/64 of its writes (ADR 0146)
# A token counter's shard holds at least this much of its ceiling: about what one long
# response uses, the most a shard passes its share by (so a small ceiling is one item).
TOKENS_PER_SHARD = 100_000
CONDITION_FAILED = "ConditionalCheckFailed"


@dataclass(frozen=True)
class Counter:
    """One hourly counter of calls or tokens, as one item or spread over shards."""

    key: str  # with the hour; a shard's key adds `#<shard>`
    limit: int  # the ceiling; 0: none (counted, never refused)
    attribute: Literal["calls", "tokens"] = "calls"
    shards: int = 1
    home: int = 0  # the shard the conversation counts on first

    @classmethod
    def sharded(
        cls, key: str, limit: int, conversation_id: str, attribute: Literal["calls", "tokens"] = "calls"
    ) -> Counter:
        """The counter spread over SHARDS items (fewer when its ceiling is lower: every
        shard holds at least one call, or TOKENS_PER_SHARD tokens), its home shard chosen
        by the conversation."""
        least = TOKENS_PER_SHARD if attribute == "tokens" else 1
        shards = max(1, min(SHARDS, limit // least)) if limit > 0 else SHARDS
        return cls(key, limit, attribute, shards, zlib.crc32(conversation_id.encode()) % shards)

    def shard_key(self, shard: int) -> str:
        return self.key if self.shards == 1 else f"{self.key}#{shard}"

    def share(self, shard: int) -> int:
        """The part of the ceiling that one shard holds."""
        return self.limit // self.shards + (1 if shard < self.limit % self.shards else 0)


@dataclass(frozen=True)
class Count:
    """Add `amount` to a counter. `refuse`: only within its ceiling (a full counter stops
    the transaction); `check`: add nothing, stop if the total has reached the ceiling;
    `spill`: always, on a shard under its share if there is one."""

    counter: Counter
    amount: int = 1
    when_full: Literal["refuse", "check", "spill"] = "refuse"


@dataclass(frozen=True)
class Mark:
    """What a count leaves on the batch's first staged message, so that it is made once."""

    conversation_id: str
    message_sid: str
    mark: str


def count(counts: list[Count], expires_at: int, mark: Mark | None = None) -> Counter | None:
    """Make the counts in one transaction, all or none (with the mark, if given, unless the
    mark is there already: then nothing is counted). None when counted (or counted before);
    otherwise the counter that is full (a `refuse` or `check` count), and nothing counted.
    A counter whose limit is off (0) is not counted: nobody reads it, and a shared one would be
    written on behalf of every conversation for nothing."""
    counts = [c for c in counts if c.counter.limit > 0]
    if not counts:
        return None
    shard = {i: c.counter.home for i, c in enumerate(counts)}
    settled: set[int] = set()  # checked against the total, or spilled: no condition any more
    for _ in range(2 * SHARDS * max(1, len(counts))):  # each round fills a shard or settles a count
        items = [_item(c, shard[i], i in settled, expires_at) for i, c in enumerate(counts)]
        sent = [i for i, item in enumerate(items) if item is not None]
        try:  # the mark first: a retry's transaction fails on it before any counter
            _transact(([_mark(mark)] if mark else []) + [item for item in items if item is not None])
            return None
        except ClientError as error:
            reasons = _reasons(error)
            if mark is not None and reasons[:1] == [CONDITION_FAILED]:
                return None  # counted by an earlier attempt
            reasons = reasons[1:] if mark is not None else reasons
            failed = [i for i, reason in zip(sent, reasons, strict=False) if reason == CONDITION_FAILED]
            if not failed:
                if "TransactionConflict" in reasons:
                    # Another count on one of these items at the same moment: nothing was
                    # counted; the task's Retry counts again.
                    keys = [c.counter.key for c in counts]
                    raise TransactionConflict(f"counting on {keys} conflicted") from error
                raise
        for i in failed:
            c = counts[i]
            if c.counter.shards == 1 and c.when_full != "spill":
                return c.counter
            used = _used(c.counter)
            if c.when_full == "check":
                if sum(used) >= c.counter.limit:
                    return c.counter
                settled.add(i)
            elif c.when_full == "spill":
                shard[i] = min(range(c.counter.shards), key=lambda s: used[s] - c.counter.share(s))
                settled.add(i)
            else:
                room = [s for s in _from_home(c.counter) if used[s] < c.counter.share(s)]
                if not room:
                    return c.counter
                shard[i] = room[0]
    raise TransactionConflict("the counters kept filling while counting")  # retried by the task


def _item(c: Count, shard: int, settled: bool, expires_at: int) -> dict[str, Any] | None:
    """The transaction's item for a count on `shard`: an Update (conditioned on the shard's
    share, unless the count is settled or has no ceiling), or a ConditionCheck; None for a
    check that has nothing to check."""
    counter = c.counter
    request: dict[str, Any] = {
        "TableName": TableSettings.get().usage_counters_table,
        "Key": {"counter_key": counter.shard_key(shard)},
        "ExpressionAttributeNames": {"#n": counter.attribute},
        "ExpressionAttributeValues": {},
    }
    if counter.limit > 0 and not settled and (c.when_full != "spill" or counter.shards > 1):
        request["ConditionExpression"] = expressions.BELOW_LIMIT
        request["ExpressionAttributeValues"][":limit"] = counter.share(shard)
    if c.when_full == "check":
        return {"ConditionCheck": request} if "ConditionExpression" in request else None
    request["UpdateExpression"] = expressions.COUNT
    request["ExpressionAttributeValues"].update({":amount": c.amount, ":expires": expires_at})
    return {"Update": request}


def _mark(mark: Mark) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": TableSettings.get().staged_messages_table,
            "Key": {"conversation_id": mark.conversation_id, "message_sid": mark.message_sid},
            "UpdateExpression": expressions.MARK_COUNTED,
            "ConditionExpression": expressions.NOT_COUNTED,
            "ExpressionAttributeValues": {":marks": {mark.mark}, ":mark": mark.mark},
        }
    }


def _transact(items: list[dict[str, Any]]) -> None:
    if items:
        dynamo.client().transact_write_items(TransactItems=items)


def _reasons(error: ClientError) -> list[str]:
    if error.response["Error"]["Code"] != "TransactionCanceledException":
        raise error
    return [r.get("Code") or "None" for r in error.response.get("CancellationReasons") or []]


def _from_home(counter: Counter) -> list[int]:
    """The shards in the order a conversation tries them: its home shard, then the next."""
    return [(counter.home + k) % counter.shards for k in range(counter.shards)]


def _used(counter: Counter) -> list[int]:
    """What each shard of the counter holds (one BatchGetItem, eventually consistent: a
    count never goes down within its hour, so a stale read shows too little, never too much)."""
    keys = [counter.shard_key(s) for s in range(counter.shards)]
    table = TableSettings.get().usage_counters_table
    found: dict[str, int] = {}
    request: dict[str, Any] = {
        table: {
            "Keys": [{"counter_key": k} for k in keys],
            "ProjectionExpression": expressions.COUNTER_SHARD,
            "ExpressionAttributeNames": {"#n": counter.attribute},
        }
    }
    while request:
        response = dynamo.client().batch_get_item(RequestItems=request)
        for item in response["Responses"].get(table, []):
            found[item["counter_key"]] = int(item.get(counter.attribute, 0))
        request = response.get("UnprocessedKeys") or {}
    return [found.get(k, 0) for k in keys]


def total(counter: Counter) -> int:
    """What a counter holds, over all its shards (0 if none)."""
    return sum(_used(counter))


@dataclass(frozen=True)
class CommandReceipt:
    """A helpdesk's command (one event, however often delivered): when it was first
    received, and whether the command limits admitted it (None: not decided yet)."""

    received_at: str
    admitted: bool | None


def receive_command(event_id: str, now: str, expires_at: int) -> CommandReceipt:
    """The command's receipt: `now` for its first delivery, the first delivery's after."""
    item = dynamo.table(TableSettings.get().usage_counters_table).update_item(
        Key={"counter_key": f"command#{event_id}"},
        UpdateExpression=expressions.RECEIVE_COMMAND,
        ExpressionAttributeValues={":now": now, ":exp": expires_at},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    admitted = item.get("admitted")
    return CommandReceipt(str(item["received_at"]), None if admitted is None else bool(admitted))


def record_admission(event_id: str, admitted: bool) -> None:
    dynamo.table(TableSettings.get().usage_counters_table).update_item(
        Key={"counter_key": f"command#{event_id}"},
        UpdateExpression=expressions.ADMIT_COMMAND,
        ExpressionAttributeValues={":admitted": admitted},
    )


def calls(key: str) -> int:
    """The calls counted on an unsharded counter (0 if none)."""
    return total(Counter(key, 0))
