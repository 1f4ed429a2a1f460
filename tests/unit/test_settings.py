"""The settings, read from the environment: typed, checked, failing fast."""

import msgspec
import pytest

from functions.config import read_settings
from functions.dal.tables import ALL_TABLES

TABLES = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}


def test_each_setting_is_the_environment_variable_of_its_name_in_capitals():
    settings = read_settings({**TABLES, "MAX_BATCH_SIZE": "20", "QUIET_SECONDS": "1.5", "PATH": "/bin"})
    assert (settings.turns_table, settings.max_batch_size, settings.quiet_seconds) == ("Turns", 20, 1.5)
    assert settings.fallback_reply  # a default


@pytest.mark.parametrize(
    ("written", "read"),
    [("true", True), ("True", True), ("yes", True), ("on", True), ("1", True)]
    + [("false", False), ("FALSE", False), ("no", False), ("off", False), ("0", False)],
)
def test_booleans_are_read_in_any_of_the_usual_spellings(written, read):
    assert read_settings({**TABLES, "EVENT_INCLUDES_TEXTS": written}).event_includes_texts is read


@pytest.mark.parametrize(
    "environ",
    [
        {k: v for k, v in TABLES.items() if k != "TURNS_TABLE"},  # a table the stack names
        {**TABLES, "TURNS_TABLE": ""},
        {**TABLES, "MAX_BATCH_SIZE": "500"},  # out of range
        {**TABLES, "EVENT_INCLUDES_TEXTS": "maybe"},
    ],
)
def test_a_missing_or_invalid_setting_is_an_error_naming_it(environ):
    with pytest.raises(msgspec.ValidationError) as error:
        read_settings(environ)
    assert any(name in str(error.value) for name in ("TURNS_TABLE", "MAX_BATCH_SIZE", "EVENT_INCLUDES_TEXTS"))
