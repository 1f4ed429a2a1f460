"""The cost limits' counters on DynamoDB (moto): a shared counter spread over shards admits
exactly its ceiling, however its conversations fall on the shards; a count made with a mark
is made once; a token ceiling stops the next call once the tokens counted reach it."""

from __future__ import annotations

import secrets

import pytest

from functions.guards import usage_counters
from functions.guards.usage_counters import SHARDS, TOKENS_PER_SHARD, Count, Counter, Mark

pytestmark = pytest.mark.emulator


def _key() -> str:
    return f"test#{secrets.token_hex(6)}"


@pytest.mark.parametrize(("ceiling", "conversations"), [(3, 7), (40, 90)])
def test_a_sharded_ceiling_admits_exactly_its_ceiling(harness, ceiling, conversations):
    key = _key()
    admitted = [
        usage_counters.count([Count(Counter.sharded(key, ceiling, f"c{n}"))], expires_at=0) is None
        for n in range(conversations)
    ]

    assert admitted.count(True) == ceiling
    assert admitted[ceiling:] == [False] * (conversations - ceiling)  # refused only once it is full
    assert usage_counters.total(Counter.sharded(key, ceiling, "any")) == ceiling


def test_a_count_made_with_its_mark_is_made_once(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello"])
    (staged,) = harness.staged(conversation_id)
    mark = Mark(conversation_id, staged["message_sid"]["S"], "abc call")
    counter = Counter(_key(), 10)

    for _ in range(3):  # an attempt and two retries
        assert usage_counters.count([Count(counter)], expires_at=0, mark=mark) is None
    other = Mark(conversation_id, staged["message_sid"]["S"], "abc asked again")
    assert usage_counters.count([Count(counter)], expires_at=0, mark=other) is None

    assert usage_counters.total(counter) == 2


def test_a_token_ceiling_stops_every_call_soon_after_the_tokens_reach_it_and_none_before(harness):
    """A response's tokens go to its conversation's shard while it is under its share, else
    to the least used one: every shard stays within one response of its share while one is
    under it. So a call is stopped only once the total has reached the ceiling, and every
    call is stopped once it passes it by one response per shard but one."""
    key, ceiling, response = _key(), SHARDS * TOKENS_PER_SHARD, 150_000

    def tokens(conversation: str) -> Counter:
        return Counter.sharded(key, ceiling, conversation, "tokens")

    def admitted(conversation: str) -> bool:
        return usage_counters.count([Count(tokens(conversation), 0, "check")], expires_at=0) is None

    spent, conversations = 0, [f"c{n}" for n in range(8)]
    assert tokens("any").shards == SHARDS
    while any(admitted(c) for c in conversations):
        assert spent < ceiling + (tokens("any").shards - 1) * response, "calls still admitted"
        usage_counters.count([Count(tokens("heavy"), response, "spill")], expires_at=0)
        spent += response
        if spent < ceiling:
            assert all(admitted(c) for c in conversations)

    assert usage_counters.total(tokens("any")) == spent
    used = usage_counters._used(tokens("any"))
    assert max(used) <= tokens("any").share(0) + response
