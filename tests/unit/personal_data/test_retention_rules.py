"""Turn-text retention's rules (functions/personal_data/rules/retention.py): which turns' texts have
expired (answered and older than the tenant's or the deployment's days; pending ones never),
and which items of the OpenAI conversation go with them (never a call without its output)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.answer.rules.openai_items import ConversationItem
from functions.personal_data.rules import retention

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def days_ago(days: float) -> str:
    return clock.iso(NOW - timedelta(days=days))


@pytest.mark.parametrize("status", ["answered", "sent", "limited", "handed_off"])
def test_an_answered_turn_older_than_the_days_has_expired(status):
    assert retention.expired(status, days_ago(31), 30, NOW)


@pytest.mark.parametrize("status", ["pending", "generated", "failed", ""])
def test_a_turn_whose_batch_is_not_over_never_expires(status):
    assert not retention.expired(status, days_ago(400), 30, NOW)


def test_a_turn_younger_than_the_days_keeps_its_text():
    assert not retention.expired("answered", days_ago(29.9), 30, NOW)


def test_zero_days_keeps_texts_until_forgotten():
    assert not retention.expired("answered", days_ago(4000), 0, NOW)


def test_the_tenants_own_days_come_before_the_deployments():
    assert retention.retention_days(None, 30) == 30
    assert retention.retention_days(7, 30) == 7
    assert retention.retention_days(0, 30) == 0  # this tenant keeps texts until forgotten


def test_the_sweep_looks_from_the_shortest_retention_in_force_or_not_at_all():
    assert retention.shortest_days(0, []) is None
    assert retention.shortest_days(0, [0]) is None
    assert retention.shortest_days(0, [14, 3]) == 3
    assert retention.shortest_days(30, [0, 90]) == 30
    assert retention.cutoff(NOW, 3) == days_ago(3)


def message(item_id: str, role: str = "user") -> ConversationItem:
    return ConversationItem(id=item_id, role=role, text="t")


def call(item_id: str, call_id: str, output: bool = False) -> ConversationItem:
    kind = "function_call_output" if output else "function_call"
    return ConversationItem(id=item_id, role="", text="", kind=kind, call_id=call_id)


def test_the_items_up_to_the_newest_expired_reply_go_the_rest_stays():
    items = [
        message("u1"),
        message("a1", "assistant"),
        message("u2"),
        message("a2", "assistant"),
        message("u3"),
    ]
    assert retention.expired_items(items, ["a1"]) == ["u1", "a1"]
    assert retention.expired_items(items, ["a2", "a1"]) == ["u1", "a1", "u2", "a2"]
    assert retention.expired_items(items, ["gone"]) == []


def test_a_tool_round_goes_whole_with_its_reply():
    items = [
        message("u1"),
        call("f1", "c1"),
        call("o1", "c1", output=True),
        message("a1", "assistant"),
        message("u2"),
    ]
    # Each call deleted right after its output: cut short, a call is left without its output
    # (the next request closes it as cancelled), never an output without its call.
    assert retention.expired_items(items, ["a1"]) == ["u1", "o1", "f1", "a1"]


def test_a_call_whose_output_stays_is_never_cut_from_it():
    items = [message("u1"), message("a1", "assistant"), call("f1", "c1"), message("x", "assistant")]
    items += [call("o1", "c1", output=True), message("a2", "assistant")]
    assert retention.expired_items(items, ["x"]) == ["u1", "a1"]
