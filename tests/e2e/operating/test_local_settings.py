"""`make local` passes the OpenAI timeout on to the functions (the settings are read from
the process environment that it sets up)."""

from __future__ import annotations

from infra.local.stack import LocalConfig


def test_make_local_honours_openai_timeout_seconds():
    config = LocalConfig.from_env({"OPENAI_TIMEOUT_SECONDS": "7.5", "BATCH_WINDOW_SECONDS": "4"})

    assert config.openai_timeout_seconds == 7.5
    assert config.function_settings()["OPENAI_TIMEOUT_SECONDS"] == "7.5"
    assert config.function_settings()["BATCH_WINDOW_SECONDS"] == "4"


def test_without_it_the_functions_default_applies():
    assert "OPENAI_TIMEOUT_SECONDS" not in LocalConfig.from_env({}).function_settings()
