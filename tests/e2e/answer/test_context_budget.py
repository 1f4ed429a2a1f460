"""A conversation's context budget (OPENAI_MAX_CONTEXT_TOKENS), over HTTP on the local stack:
once a conversation's input passes it, OpenAI compacts what came before (server-side
compaction, which the stand-in does as documented), so a long conversation costs no more per
call than about the budget, and every burst is still answered."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

BUDGET = 400


def _burst(n: int) -> str:
    return f"Burst {n}: " + " ".join(f"detail{n}x{i}" for i in range(58))  # 60 words


def _input_tokens(harness, conversation_id: str) -> list[int]:
    item = harness.conversation_item(conversation_id)
    openai_conversation = item["openai_conversation_id"]["S"]
    openai = harness.stack.openai
    calls = [c for c in openai.calls if c["conversation"] == openai_conversation and c["status"] == 200]
    return [openai.responses[c["response_id"]]["usage"]["input_tokens"] for c in calls]


def test_twelve_long_bursts_are_all_answered_and_each_calls_input_stays_near_the_budget(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", OPENAI_MAX_CONTEXT_TOKENS=str(BUDGET))
    user = harness.new_user()

    for n in range(12):
        harness.send(user, _burst(n))
        conversation_id = harness.conversation_of(user).conversation_id
        harness.wait_until_quiet(conversation_id, runs=n + 1)

    assert harness.replies_to(user) == [f"You said: {_burst(n)}" for n in range(12)]
    tokens = _input_tokens(harness, conversation_id)
    assert len(tokens) == 12
    assert max(tokens) <= 1.5 * BUDGET, tokens
    # Without a budget the twelfth call reads every turn before it (about 1,500 tokens here).
    assert sum(tokens) < 12 * 1.5 * BUDGET


def test_without_a_budget_the_input_grows_with_the_conversation(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", OPENAI_MAX_CONTEXT_TOKENS="0")
    user = harness.new_user()

    for n in range(4):
        harness.send(user, _burst(n))
        conversation_id = harness.conversation_of(user).conversation_id
        harness.wait_until_quiet(conversation_id, runs=n + 1)

    tokens = _input_tokens(harness, conversation_id)
    assert tokens == sorted(tokens) and tokens[-1] > tokens[0] + 3 * 100
