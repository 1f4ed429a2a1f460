"""make preflight's model line: every configured model (OPENAI_MODEL, OPENAI_FALLBACK_MODEL,
TRANSCRIPTION_MODEL, each given to Generate Reply or its default) against its shutdown
date; the date OpenAI's models API reports is preferred when OPENAI_API_KEY is set, and
without a key no request is made."""

from __future__ import annotations

from datetime import date
from types import SimpleNamespace
from typing import Any

import openai
import pytest

from functions.answer.settings import MediaSettings
from infra import preflight

pytestmark = pytest.mark.infra

DAY = date(2026, 11, 26)


def template(**variables: str) -> dict[str, Any]:
    """A template with Generate Reply given these settings."""
    function = {
        "Type": "AWS::Lambda::Function",
        "Metadata": {"aws:cdk:path": "BurstReply/Functions/GenerateReply/Resource"},
        "Properties": {"Environment": {"Variables": {"OPENAI_MODEL": "gpt-6.1-terra", **variables}}},
    }
    return {"Resources": {"GenerateReply": function}}


def test_the_transcription_model_is_checked_too(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    red = preflight.model(template(TRANSCRIPTION_MODEL="whisper-1"), date(2027, 2, 1))
    assert not red.ok and "TRANSCRIPTION_MODEL whisper-1 is shut down by OpenAI on 2027-02-26" in red.detail
    assert preflight.model(template(TRANSCRIPTION_MODEL="whisper-1"), DAY).ok


def test_a_setting_not_given_is_checked_at_its_default(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line = preflight.model(template(), DAY)
    default = MediaSettings.model_fields["transcription_model"].default
    assert line.ok and f"TRANSCRIPTION_MODEL={default}" in line.detail
    assert "OPENAI_FALLBACK_MODEL" not in line.detail  # none set


def test_the_date_openais_models_api_reports_is_preferred_to_the_list():
    sooner = {"gpt-6.1-terra": date(2026, 12, 1)}  # the API announces what the list does not have yet
    red = preflight.model(template(), DAY, announced=sooner)
    assert not red.ok and "OPENAI_MODEL gpt-6.1-terra is shut down by OpenAI on 2026-12-01" in red.detail
    postponed = {"gpt-5-mini": None}  # the list says 2026-12-11; the API, none
    assert not preflight.model(template(OPENAI_MODEL="gpt-5-mini"), DAY, announced={}).ok
    assert preflight.model(template(OPENAI_MODEL="gpt-5-mini"), DAY, announced=postponed).ok


def test_the_models_api_is_asked_only_with_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(openai, "OpenAI", lambda **_: pytest.fail("no key: no request"))
    assert preflight.api_shutdowns({"gpt-6.1-terra"}) == {}

    asked: list[str] = []

    def retrieve(name: str) -> SimpleNamespace:
        asked.append(name)
        if name == "unknown-model":
            raise openai.OpenAIError("404 model_not_found")
        return SimpleNamespace(shutdown_date="2027-01-14" if name == "gpt-4.1" else None)

    client = SimpleNamespace(models=SimpleNamespace(retrieve=retrieve))
    found = preflight.api_shutdowns({"gpt-4.1", "gpt-6.1-terra", "unknown-model"}, client)
    assert found == {"gpt-4.1": date(2027, 1, 14), "gpt-6.1-terra": None}  # the unknown left to the list
    assert sorted(asked) == ["gpt-4.1", "gpt-6.1-terra", "unknown-model"]
