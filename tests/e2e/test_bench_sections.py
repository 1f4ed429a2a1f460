"""The benchmark's sections measure what they say they measure."""

from __future__ import annotations

import pytest

from functions.config import get_settings
from functions.inbound import Channel
from functions.logic.rules.debounce import due_ms, resolve_rules
from tests.support.bench.run import long_windows

pytestmark = pytest.mark.e2e


def test_the_webhook_sections_windows_stay_open_for_ten_minutes(stack):
    """Each of its conversations has one window, which takes every later message: none
    is answered (and no run competes with the webhook) while the section runs."""
    with long_windows():
        rules = resolve_rules(get_settings().batching_defaults(), Channel.WHATSAPP)
    opened = 1_000_000
    assert due_ms(rules, opened, opened + 500_000, opened + 499_000) >= opened + 600_000
