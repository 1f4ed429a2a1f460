"""The benchmark's sections measure what they say they measure."""

from __future__ import annotations

import statistics

import pytest

from functions.config import get_settings
from functions.inbound import Channel
from functions.logic.rules.debounce import due_ms, resolve_rules
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
    burst, none shorter than the quiet period (the reply never comes before the burst is
    over), and the figure is their median over it."""
    result = answer_delay.measure_answer_delay(harness.stack, OUR_WHATSAPP, bursts=2, quiet_seconds=1)

    assert len(result["delays"]) == 2 and result["split"] == 0
    assert min(result["delays"]) >= 1
    assert result["median_over_quiet"] == statistics.median(result["delays"]) - 1
    assert answer_delay.row(result)[1].startswith(f"+{result['median_over_quiet']:.2f} s")
