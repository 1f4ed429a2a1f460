"""The benchmark's sections measure what they say they measure."""

from __future__ import annotations

import statistics
from types import SimpleNamespace

import pytest

from functions import clock
from functions.batching.rules.debounce import due_ms, resolve_rules
from functions.config import get_settings
from functions.intake.inbound import Channel
from functions.tenancy import conversations
from tests.support.bench import answer_delay
from tests.support.bench.run import long_windows
from tests.support.local_stack import OUR_WHATSAPP

pytestmark = pytest.mark.e2e


def test_the_webhook_sections_windows_stay_open_for_ten_minutes(stack):
    """Each of its conversations has one window, which takes every later message: none
    is answered (and no run competes with the webhook) while the section runs."""
    with long_windows():
        rules = resolve_rules(get_settings().batching_defaults(), Channel.WHATSAPP)
    opened = 1_000_000
    assert due_ms(rules, opened, opened + 500_000, opened + 499_000) >= opened + 600_000


def test_the_end_of_a_burst_section_times_each_reply_from_the_bursts_last_fragment(harness):
    """`make bench`'s figure for the end of a burst, on two quick bursts: one delay per
    burst, to the reply that answers its last fragment, none shorter than the quiet period
    when the burst was answered in one pass, and the figure is their median over it.
    Under this suite's load a slow post can stretch a gap between fragments past the quiet
    period: the stack then answers in two runs, or discards a reply and answers again at
    once (double texting), and the bench counts the burst instead of holding it to that."""
    result = answer_delay.measure_answer_delay(harness.stack, OUR_WHATSAPP, bursts=2, quiet_seconds=1)

    assert len(result["delays"]) == len(result["one_pass"]) == 2
    assert all(delay >= 1 for delay, one in zip(result["delays"], result["one_pass"], strict=True) if one)
    assert result["median_over_quiet"] == statistics.median(result["delays"]) - 1
    assert answer_delay.row(result)[1].startswith(f"+{result['median_over_quiet']:.2f} s")


def test_a_split_bursts_delay_runs_to_the_reply_that_answers_its_last_fragment():
    """The reply to the fragments before it, sent after the last fragment was posted, is
    not that burst's answer: it is counted as a split."""
    earlier = {"to": "u", "status": 201, "at": 10.5, "body": "You said: hello\nmy order"}
    answer = {"to": "u", "status": 201, "at": 11.6, "body": "You said: has not arrived"}
    stack = SimpleNamespace(twilio=SimpleNamespace(calls=[earlier, answer]))

    assert answer_delay._reply_at(stack, "u", "has not arrived", timeout=0.1) == (11.6, 1)


def test_a_burst_answered_again_for_a_late_fragment_is_not_one_pass(harness):
    """Its conversation asked the AI twice (a reply discarded for newer fragments)."""
    account = harness.stack.config.twilio_account_sid
    created = conversations.create(
        Channel.WHATSAPP, harness.new_user(), OUR_WHATSAPP, clock.iso(clock.now()), account
    )
    conversations.set_openai_conversation(created.conversation_id, "conv_ours")
    calls = [{"conversation": "conv_ours"}, {"conversation": "conv_another"}]
    stack = SimpleNamespace(openai=SimpleNamespace(calls=calls))

    assert answer_delay._ai_calls(stack, created.conversation_id) == 1
    calls.append({"conversation": "conv_ours"})
    assert answer_delay._ai_calls(stack, created.conversation_id) == 2
