"""The settings, read from the environment into small models, one per feature or concern:
typed, checked, failing fast, each field described once; and the one way a yes-or-no value
is read (tests/infra/test_yes_or_no.py: the CDK context and the local stack read it the
same way)."""

import importlib
from pathlib import Path

import pytest

from functions.batching.settings import BatchingSettings
from functions.config import SettingsError, SettingsModel, forget_settings, read_flag, read_settings
from functions.delivery.settings import EventSettings
from functions.intake.settings import EndpointSettings
from functions.registry import ALL_FUNCTIONS, ALL_SETTINGS
from functions.storage.settings import TableSettings
from functions.storage.tables import ALL_TABLES

ROOT = Path(__file__).resolve().parents[3]
TABLES = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}
YES_OR_NO = [("true", True), ("True", True), (" yes ", True), ("on", True), ("1", True), ("Y", True)] + [
    ("false", False),
    ("FALSE", False),
    ("no", False),
    ("off", False),
    ("0", False),
    ("n", False),
]
MOST_FIELDS = 25


def test_each_setting_is_the_environment_variable_of_its_name_in_capitals():
    environ = {**TABLES, "MAX_BATCH_SIZE": "20", "QUIET_SECONDS": "1.5", "PATH": "/bin"}
    tables, batching = TableSettings.read(environ), BatchingSettings.read(environ)
    assert (tables.turns_table, batching.max_batch_size, batching.quiet_seconds) == ("Turns", 20, 1.5)
    assert batching.handoff_reply  # a default


@pytest.mark.parametrize(("written", "read"), YES_OR_NO)
def test_booleans_are_read_in_any_of_the_usual_spellings(written, read):
    assert EventSettings.read({**TABLES, "EVENT_INCLUDES_TEXTS": written}).event_includes_texts is read


@pytest.mark.parametrize("written", ["maybe", "yess", "2", "tru e"])
def test_a_value_that_is_neither_yes_nor_no_is_an_error_never_false(written):
    with pytest.raises(ValueError, match="yes-or-no"):
        read_flag(written)
    with pytest.raises(SettingsError) as error:
        EndpointSettings.read({**TABLES, "WEBHOOK_TRUST_FORWARDED_HEADERS": written})
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
        (  # in two models: one error names both
            {**TABLES, "QUIET_SECONDS": "soon", "EVENT_INCLUDES_TEXTS": "maybe"},
            ("EVENT_INCLUDES_TEXTS", "QUIET_SECONDS"),
        ),
    ],
)
def test_a_missing_or_invalid_setting_is_an_error_naming_it(environ, amiss):
    with pytest.raises(SettingsError) as error:
        read_settings(environ, ALL_SETTINGS)
    assert error.value.names == amiss
    assert all(name in str(error.value) for name in amiss)


def test_the_error_names_a_setting_but_never_repeats_its_value():
    with pytest.raises(SettingsError) as error:
        read_settings({**TABLES, "OPENAI_TIMEOUT_SECONDS": "sk-not-a-number-1234"}, ALL_SETTINGS)
    assert error.value.names == ("OPENAI_TIMEOUT_SECONDS",)
    assert "sk-not-a-number" not in str(error.value)
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_a_model_is_read_from_the_environment_once_until_the_settings_are_forgotten(monkeypatch):
    monkeypatch.setenv("QUIET_SECONDS", "1.5")
    forget_settings()
    first = BatchingSettings.get()
    monkeypatch.setenv("QUIET_SECONDS", "2.5")
    assert BatchingSettings.get() is first and first.quiet_seconds == 1.5
    forget_settings()
    assert BatchingSettings.get().quiet_seconds == 2.5
    monkeypatch.undo()
    forget_settings()


@pytest.mark.parametrize("model", ALL_SETTINGS, ids=lambda m: m.__name__)
def test_every_model_is_small_and_every_field_described_in_one_sentence(model):
    assert 0 < len(model.model_fields) <= MOST_FIELDS, f"{model.__name__}: split it by concern"
    for name, field in model.model_fields.items():
        description = field.description or ""
        assert description.strip(), f"{name.upper()}: no description"
        assert len(description) <= 120 and "\n" not in description, f"{name.upper()}: one short sentence"


def test_every_setting_is_a_field_of_one_model_only():
    names = [name for model in ALL_SETTINGS for name in model.model_fields]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_every_model_is_listed_and_read_by_some_function():
    """ALL_SETTINGS holds every model defined under functions/ (each in its feature's
    settings.py), and each is declared by some function's row."""
    for path in sorted((ROOT / "functions").rglob("settings.py")):
        importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))

    def subclasses(cls: type) -> list[type]:
        return [s for sub in cls.__subclasses__() for s in (sub, *subclasses(sub))]

    defined = {m for m in subclasses(SettingsModel) if m.__module__.startswith("functions.")}
    assert defined == set(ALL_SETTINGS)
    assert len(ALL_SETTINGS) == len(set(ALL_SETTINGS))
    assert {m for f in ALL_FUNCTIONS for m in f.settings} == set(ALL_SETTINGS)


def test_the_table_settings_are_the_tables_names():
    assert TableSettings.variables() == {t.env_var for t in ALL_TABLES}
