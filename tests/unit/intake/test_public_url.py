"""The public base URL and the connection overrides: one reading of the configuration,
the same for the functions, the CDK stack and the local stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.config import read_settings
from functions.public_url import public_base, with_overrides
from functions.storage.tables import ALL_TABLES
from infra.names import StackSettings

TABLES = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}


@pytest.mark.parametrize(
    ("configured", "setting", "url", "overrides"),
    [
        ("", "rc=5&rp=all", "", "rc=5&rp=all"),  # not configured: the overrides still apply
        ("https://hooks.example/b/", "rc=5&rp=all", "https://hooks.example/b", "rc=5&rp=all"),
        ("https://hooks.example/b#rc=3&rp=5xx", "rc=5&rp=all", "https://hooks.example/b", "rc=3&rp=5xx"),
        ("https://hooks.example/b/#", "rc=5&rp=all", "https://hooks.example/b", ""),  # `#`: none
        ("https://hooks.example", "#rc=2", "https://hooks.example", "rc=2"),
        ("https://hooks.example", "", "https://hooks.example", ""),
    ],
)
def test_the_base_url_loses_its_fragment_which_wins_over_the_setting(configured, setting, url, overrides):
    assert public_base(configured, setting) == (url, overrides)


def test_a_url_given_to_twilio_carries_the_overrides_as_its_fragment_when_there_are_any():
    assert public_base("https://h.example/", "rc=5&rp=all").given_to_twilio("/sms") == (
        "https://h.example/sms#rc=5&rp=all"
    )
    assert with_overrides("https://h.example/sms", "") == "https://h.example/sms"


@pytest.mark.parametrize(
    ("configured", "setting"),
    [("https://hooks.example/b/#rc=3&rp=5xx", "rc=5&rp=all"), ("https://hooks.example", "rc=1")],
)
def test_the_functions_and_the_stack_read_the_same_configuration_alike(configured, setting):
    functions = read_settings(
        {**TABLES, "WEBHOOK_BASE_URL": configured, "TWILIO_CONNECTION_OVERRIDES": setting}
    )
    stack = StackSettings(
        Path("."), Path("."), webhook_base_url=configured, twilio_connection_overrides=setting
    )
    assert functions.public_base() == stack.public_base() == public_base(configured, setting)
