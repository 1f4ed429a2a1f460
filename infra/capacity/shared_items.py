"""Items that many conversations write, as components: DynamoDB takes at most 1,000 write
units a second on one item, and cancels a transaction that touches an item another one holds
(TransactionConflict) long before that.

The cost counters of the limits (functions/guards/limits.py) that everyone's and a
tenant's conversations share are spread over shards (functions/guards/usage_counters.py), and
each is touched inside a TransactWriteItems: an AI call's admission checks the token counters
(and counts the AI-call counters, when their ceilings are set), its response's tokens are
added to them. With transactions arriving on a shard at λ a second, each holding it for τ
seconds, a transaction finds the shard held with probability 1 - exp(-λτ): the conflicting
one fails, and Generate Reply's attempt is retried (its Retry on TransactionConflict: 1 s,
doubling, 5 times), each retry a transition and an invocation more. A counter whose ceiling
is off (0) is not written.

A sender's turns are booked on its pace items (functions/delivery/sender_budget.py): one
conditional UpdateItem a reply part, not a transaction."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from functions.delivery import sender_budget
from functions.guards import usage_counters
from infra.capacity import burst, quotas
from infra.capacity.saturation import Component, Traffic, component

# Where a conflict is said to bite: this share of the transactions on a counter's item conflict
# (with three such transactions a burst, about one Generate Reply attempt in seven is retried).
CONFLICT_SHARE = 0.05
TRANSACTIONAL_WRITE_UNITS = 2  # a transaction's item (a ConditionCheck's too) costs two write units


@dataclass(frozen=True)
class SharedCounter:
    """A counter of the limits that conversations share, and the transactions a burst
    touches it with."""

    name: str
    setting: str  # its ceiling (0: off, not written)
    attribute: Literal["calls", "tokens"]
    per_tenant: bool
    touches: burst.PerBurst


# Tokens: checked at each admission (each Generate Reply that asks: one, and one more per
# tool round) and added once per response. AI calls: counted at each admission, and once more
# per tool round (its request counted as asked again).
COUNTERS = (
    SharedCounter(
        "everyone's token counter", "max_ai_tokens_per_hour", "tokens", False, burst.PerBurst(2, tool_round=2)
    ),
    SharedCounter(
        "a tenant's token counter",
        "max_ai_tokens_per_hour_per_tenant",
        "tokens",
        True,
        burst.PerBurst(2, tool_round=2),
    ),
    SharedCounter(
        "everyone's AI-call counter", "max_ai_calls_per_hour", "calls", False, burst.PerBurst(1, tool_round=2)
    ),
    SharedCounter(
        "a tenant's AI-call counter",
        "max_ai_calls_per_hour_per_tenant",
        "calls",
        True,
        burst.PerBurst(1, tool_round=2),
    ),
)


def conflict_share(transactions_at_once: float) -> float:
    """The share of transactions that find their item held by another (Poisson arrivals)."""
    return 1 - math.exp(-transactions_at_once)


def cost_counters(t: Traffic) -> list[Component]:
    """Each shared counter's hottest shard: its write units, and its transactions at once."""
    found: list[Component] = []
    a = t.assumptions
    for counter in COUNTERS:
        limit = int(t.values.get(counter.setting, 0))
        if limit <= 0:
            continue
        shards = usage_counters.Counter.sharded("capacity", limit, "capacity", counter.attribute).shards
        per_shard = (
            a.bursts_per_second
            * a.per_burst(counter.touches)
            / (a.tenants if counter.per_tenant else 1)
            / shards
        )
        at_once = per_shard * a.transaction_seconds
        more_shards = f"usage_counters.SHARDS ({usage_counters.SHARDS}): more shards"
        found.append(
            component(
                t,
                f"UsageCounters: {counter.name}, hottest of {shards} shards",
                "shared item",
                per_shard * TRANSACTIONAL_WRITE_UNITS,
                quotas.DYNAMODB_PARTITION_WRITES.value,
                "write units/s on one item",
                more_shards,
                True,
                "per-partition limit (hard); a conversation's home shard is a hash of its id",
            )
        )
        found.append(
            component(
                t,
                f"UsageCounters: {counter.name}, transactions at once on a shard",
                "shared item",
                at_once,
                -math.log(1 - CONFLICT_SHARE),
                f"transactions holding one item at once ({CONFLICT_SHARE:.0%} conflict at the limit)",
                f"{more_shards}, or count without a transaction (docs/capacity.md)",
                True,
                f"{conflict_share(at_once):.1%} of its transactions conflict at this rate "
                f"({a.per_burst(counter.touches):g} a burst touch it, each holding it "
                f"{a.transaction_seconds * 1000:g} ms: assumed); a conflict retries Generate Reply",
            )
        )
    return found


def sender_pace(t: Traffic) -> list[Component]:
    """A sender's pace items: one conditional write a reply part, on its shard."""
    mps = float(t.values["twilio_sender_mps"])
    if mps <= 0:
        return []  # not paced: no turn is booked
    shards = sender_budget.shards_for(mps)
    return [
        component(
            t,
            f"UsageCounters: a sender's pace item (pace#<sender>#<shard>), hottest of {shards}",
            "shared item",
            t.rates.reply_parts / t.assumptions.senders / shards,
            quotas.DYNAMODB_PARTITION_WRITES.value,
            "write units/s on one item (one conditional UpdateItem a part)",
            f"sender_budget.SHARD_MPS ({sender_budget.SHARD_MPS}): fewer turns a shard",
            True,
            f"a shard books at most {sender_budget.SHARD_MPS} turns a second: its sender saturates first",
        )
    ]
