"""Counting an AI call is one DynamoDB transaction over several counters, some shared by
many conversations of a tenant or by everyone (spread over shards): two AI calls at the
same moment on one shard make DynamoDB cancel one with TransactionConflict. Nothing was
counted then, and the task's Retry (Generate Reply retries TransactionConflict) counts
again. A shared counter's shards hold its ceiling between them, each conversation starting
on its own shard. (Filling and spilling over the shards: tests/emulator/test_sharded_counters.py.)"""

import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from functions.errors import TransactionConflict
from functions.guards import usage_counters
from functions.guards.usage_counters import SHARDS, TOKENS_PER_SHARD, Count, Counter
from functions.storage import dynamo

DEFINITION = Path(__file__).resolve().parents[3] / "statemachines" / "batch_window.asl.json"


class CancellingClient:
    def __init__(self, *codes: str) -> None:
        self.codes = codes

    def transact_write_items(self, **_: object) -> None:
        reasons = [{"Code": code} for code in self.codes]
        raise ClientError(
            {"Error": {"Code": "TransactionCanceledException"}, "CancellationReasons": reasons},
            "TransactWriteItems",
        )


def _count(monkeypatch, *codes: str) -> str | None:
    monkeypatch.setattr(dynamo, "client", lambda: CancellingClient(*codes))
    counts = [Count(Counter("sender#AC1#u#h", 10)), Count(Counter("conversation#c#h", 100))]
    full = usage_counters.count(counts, expires_at=0)
    return full.key if full else None


def test_a_conflict_on_a_shared_counter_is_retried_by_the_task(monkeypatch):
    with pytest.raises(TransactionConflict):
        _count(monkeypatch, "None", "TransactionConflict")

    retried = {
        e
        for r in json.loads(DEFINITION.read_text())["States"]["Generate Reply"]["Retry"]
        for e in r["ErrorEquals"]
    }
    assert "TransactionConflict" in retried


def test_a_full_counter_is_named_not_retried(monkeypatch):
    assert _count(monkeypatch, "None", "ConditionalCheckFailed") == "conversation#c#h"


@pytest.mark.parametrize("ceiling", [1, 3, 16, 17, 1_000, 5_000_003])
def test_the_shards_hold_the_ceiling_between_them_each_at_least_one(ceiling):
    counter = Counter.sharded("tenant#AC1#h", ceiling, "c1")
    shares = [counter.share(s) for s in range(counter.shards)]
    assert sum(shares) == ceiling
    assert counter.shards == min(SHARDS, ceiling) and min(shares) >= 1
    assert max(shares) - min(shares) <= 1


def test_conversations_start_on_shards_spread_over_all_of_them():
    homes = [Counter.sharded("all#h", 10_000, f"c{n}").home for n in range(400)]
    assert set(homes) == set(range(SHARDS))
    assert max(homes.count(s) for s in range(SHARDS)) < 400 / SHARDS * 2  # spread, not piled up


@pytest.mark.parametrize("ceiling", [10, TOKENS_PER_SHARD, 5 * TOKENS_PER_SHARD, 5_000_000])
def test_a_token_counters_shard_holds_at_least_what_a_long_response_uses(ceiling):
    counter = Counter.sharded("tenant_tokens#AC1#h", ceiling, "c1", "tokens")
    assert counter.shards == max(1, min(SHARDS, ceiling // TOKENS_PER_SHARD))
    assert sum(counter.share(s) for s in range(counter.shards)) == ceiling
