"""The settings, read from the environment: typed, checked, failing fast; and the one way
a yes-or-no value is read (tests/infra/test_yes_or_no.py: the CDK context and the local
stack read it the same way)."""

import pytest

from functions.config import SettingsError, read_flag, read_settings
from functions.storage.tables import ALL_TABLES

TABLES = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}
YES_OR_NO = [("true", True), ("True", True), (" yes ", True), ("on", True), ("1", True), ("Y", True)] + [
    ("false", False),
    ("FALSE", False),
    ("no", False),
    ("off", False),
    ("0", False),
    ("n", False),
]


def test_each_setting_is_the_environment_variable_of_its_name_in_capitals():
    settings = read_settings({**TABLES, "MAX_BATCH_SIZE": "20", "QUIET_SECONDS": "1.5", "PATH": "/bin"})
    assert (settings.turns_table, settings.max_batch_size, settings.quiet_seconds) == ("Turns", 20, 1.5)
    assert settings.fallback_reply  # a default


@pytest.mark.parametrize(("written", "read"), YES_OR_NO)
def test_booleans_are_read_in_any_of_the_usual_spellings(written, read):
    assert read_settings({**TABLES, "EVENT_INCLUDES_TEXTS": written}).event_includes_texts is read


@pytest.mark.parametrize("written", ["maybe", "yess", "2", "tru e"])
def test_a_value_that_is_neither_yes_nor_no_is_an_error_never_false(written):
    with pytest.raises(ValueError, match="yes-or-no"):
        read_flag(written)
    with pytest.raises(SettingsError) as error:
        read_settings({**TABLES, "WEBHOOK_TRUST_FORWARDED_HEADERS": written})
    assert error.value.names == ("WEBHOOK_TRUST_FORWARDED_HEADERS",)


@pytest.mark.parametrize(
    ("environ", "amiss"),
    [
        ({k: v for k, v in TABLES.items() if k != "TURNS_TABLE"}, ("TURNS_TABLE",)),  # one left out
        ({**TABLES, "TURNS_TABLE": ""}, ("TURNS_TABLE",)),
        ({**TABLES, "MAX_BATCH_SIZE": "500"}, ("MAX_BATCH_SIZE",)),  # out of range
        ({**TABLES, "EVENT_INCLUDES_TEXTS": "maybe"}, ("EVENT_INCLUDES_TEXTS",)),
        (
            {**TABLES, "QUIET_SECONDS": "soon", "LOCK_LEASE_SECONDS": "5"},
            ("QUIET_SECONDS", "LOCK_LEASE_SECONDS"),
        ),
    ],
)
def test_a_missing_or_invalid_setting_is_an_error_naming_it(environ, amiss):
    with pytest.raises(SettingsError) as error:
        read_settings(environ)
    assert error.value.names == amiss
    assert all(name in str(error.value) for name in amiss)


def test_the_error_names_a_setting_but_never_repeats_its_value():
    with pytest.raises(SettingsError) as error:
        read_settings({**TABLES, "OPENAI_TIMEOUT_SECONDS": "sk-not-a-number-1234"})
    assert error.value.names == ("OPENAI_TIMEOUT_SECONDS",)
    assert "sk-not-a-number" not in str(error.value)
    assert error.value.__cause__ is None and error.value.__suppress_context__
