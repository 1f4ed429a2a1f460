"""The models the project knows: the default one is served on the day of deploy and long
after; the announced shutdowns match the `openai` SDK's own notes; a model within 30 days
of its shutdown, or past it, is warned about."""

from __future__ import annotations

import inspect
import re
import typing
from datetime import UTC, date, datetime
from pathlib import Path

import openai
import pytest
from openai.types.shared import chat_model

from functions.answer import openai_models
from functions.answer.openai_models import (
    CURRENT_MODELS,
    SHUTDOWNS,
    served,
    shutdown_of,
    warn_if_retiring,
)
from functions.config import read_settings
from functions.storage.tables import ALL_TABLES

TABLES = {**{t.env_var: t.logical_id for t in ALL_TABLES}, "EVENT_BUS_NAME": "bus"}
DEPLOY_DAY = date(2026, 11, 26)


def _sdk_shutdowns() -> dict[str, date]:
    """The SDK's notes on ChatModel: `- "a", "b": Announced shutdown date: YYYY-MM-DD.`"""
    notes = inspect.getsource(chat_model).split('"""Deprecated values:', 1)[1]
    found = {}
    for entry in re.split(r"\n- ", notes):
        dated = re.search(r"Announced\s+shutdown\s+date:\s+(\d{4}-\d{2}-\d{2})", entry)
        if dated:
            names = re.findall(r'"([^"]+)"', entry.split(":", 1)[0])
            found.update(dict.fromkeys(names, date.fromisoformat(dated.group(1))))
    return found


def test_the_default_model_is_served_on_the_day_of_deploy_and_not_retiring():
    model = read_settings(TABLES).openai_model
    for day in (DEPLOY_DAY, datetime.now(UTC).date()):
        assert served(model, day), model
        assert warn_if_retiring(model, day) is None, warn_if_retiring(model, day)
    assert model in typing.get_args(chat_model.ChatModel)  # a model the pinned SDK knows


def test_every_shutdown_the_sdk_announces_is_in_the_list_with_its_date():
    announced = _sdk_shutdowns()
    assert announced["gpt-5-mini"] == date(2026, 12, 11)  # the notes were read
    assert {m: SHUTDOWNS.get(m) for m in announced} == announced


def test_every_model_the_sdk_lists_is_current_announced_or_not_a_model():
    listed = set(typing.get_args(chat_model.ChatModel))
    assert listed - CURRENT_MODELS - set(SHUTDOWNS) == {"gpt-5.1-mini"}  # "Not a supported model ID"
    assert not CURRENT_MODELS & set(SHUTDOWNS)


@pytest.mark.parametrize(
    ("today", "warned"),
    [
        (date(2026, 11, 10), None),  # 31 days before
        (date(2026, 11, 11), "is shut down by OpenAI on 2026-12-11, in 30 days"),
        (DEPLOY_DAY, "is shut down by OpenAI on 2026-12-11, in 15 days"),
        (date(2026, 12, 10), "is shut down by OpenAI on 2026-12-11, in 1 day."),
        (date(2026, 12, 11), "was shut down by OpenAI on 2026-12-11"),
        (date(2027, 3, 1), "was shut down by OpenAI on 2026-12-11"),
    ],
)
def test_a_model_within_30_days_of_its_shutdown_or_past_it_is_warned_about(today, warned):
    warning = warn_if_retiring("gpt-5-mini", today)
    if warned is None:
        assert warning is None
    else:
        assert warning is not None and warned in warning and openai_models.SOURCE in warning
        assert warning.startswith("OPENAI_MODEL gpt-5-mini ")


def test_served_follows_the_shutdown_date_and_fine_tuned_models_follow_their_base():
    assert served("gpt-5-mini", date(2026, 12, 10)) and not served("gpt-5-mini", date(2026, 12, 11))
    assert not served("gpt-5.1-mini", DEPLOY_DAY) and not served("m", DEPLOY_DAY)
    assert shutdown_of("ft:gpt-4o-mini-2024-07-18:acme::abc123") == date(2027, 1, 14)
    assert served("ft:gpt-4.1-mini-2025-04-14:acme::abc123", DEPLOY_DAY)
    assert warn_if_retiring("some-model-of-our-own", DEPLOY_DAY) is None


NOTE = r'-\s+((?:"[^"]+",?\s*)+):\s*Announced\s+shutdown\s+date:\s*([\d-]{10})'


def _every_sdk_shutdown() -> dict[str, date]:
    """Every `"a", "b": Announced shutdown date: YYYY-MM-DD` note in the SDK's docstrings
    (chat models, the Responses-only models, speech to text, realtime, speech)."""
    root = Path(openai.__file__).parent
    found: dict[str, date] = {}
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "shutdown date" not in text:
            continue
        flat = re.sub(r"\n\s*(#\s*)?", " ", text)
        for names, day in re.findall(
            r'-\s+((?:"[^"]+",?\s*)+):\s*Announced\s+shutdown\s+date:\s*([\d-]{10})', flat
        ):
            found.update(dict.fromkeys(re.findall(r'"([^"]+)"', names), date.fromisoformat(day)))
    return found


def test_every_shutdown_the_sdk_notes_anywhere_is_in_the_list_with_its_date():
    announced = _every_sdk_shutdown()
    assert (
        announced["whisper-1"] == announced["gpt-4o-transcribe"] == date(2027, 2, 26)
    )  # the notes were read
    assert {"o1-pro", "o3-deep-research", "gpt-5-codex", "computer-use-preview"} <= set(announced)
    assert {m: SHUTDOWNS.get(m) for m in announced} == announced


def test_the_default_transcription_model_is_served_and_not_retiring():
    model = read_settings(TABLES).transcription_model
    assert served(model, DEPLOY_DAY) and warn_if_retiring(model, DEPLOY_DAY) is None


@pytest.mark.parametrize(
    ("model", "takes_one"),
    [
        (openai_models.DEFAULT_MODEL, True),
        ("gpt-5-mini", True),
        ("o4-mini", True),
        ("ft:gpt-5-mini-2025-08-07:acme::abc123", True),
        ("gpt-4.1", False),  # does not reason
        ("gpt-4o", False),
        ("gpt-5-chat-latest", False),  # no effort of ours to choose
        ("gpt-5-pro", False),  # `high` only
        ("o3-deep-research", False),
        ("gpt-transcribe", False),
    ],
)
def test_the_reasoning_effort_goes_only_to_models_that_take_one(model, takes_one):
    assert openai_models.takes_reasoning_effort(model) is takes_one
