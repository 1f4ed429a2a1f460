"""The model the deployed functions use is the deployment's choice (CDK context
`openai_model`, `openai_fallback_model`), and `make synth` (python -m infra.app) warns on
standard error when OpenAI shuts it down within 30 days, or has."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from functions.answer.openai_models import DEFAULT_MODEL
from functions.answer.settings import AnswerSettings
from infra.stack_settings import StackSettings

# infra.app imports the CDK: inside the tests, which run on the worker that synthesizes the
# stack (tests/conftest.py SHARED_FIXTURES), so that one worker alone loads it.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("synthesized")]


def _environment(template: dict, function: str) -> dict[str, str]:
    (found,) = [
        resource
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and f"/Functions/{function}/" in resource["Metadata"]["aws:cdk:path"]
    ]
    return found["Properties"]["Environment"]["Variables"]


def test_synth_warns_about_a_retiring_model_and_deploys_the_configured_ones(tmp_path, capsys):
    from infra import app as cdk_app

    (tmp_path / "code" / "functions").mkdir(parents=True)
    (tmp_path / "code" / "functions" / "__init__.py").write_text("")
    (tmp_path / "dependencies" / "python").mkdir(parents=True)
    context = {"openai_model": "gpt-5-mini", "openai_fallback_model": DEFAULT_MODEL}
    app, stack = cdk_app.build_app(
        tmp_path / "code", tmp_path / "dependencies", str(tmp_path / "cdk.out"), context
    )

    cdk_app.warn_about_models(stack.settings, date(2026, 11, 26))  # as `main` does, with today

    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(
        "WARNING: OPENAI_MODEL gpt-5-mini is shut down by OpenAI on 2026-12-11, in 15 days"
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    environment = _environment(template, "GenerateReply")
    assert environment["OPENAI_MODEL"] == "gpt-5-mini"
    assert environment["OPENAI_FALLBACK_MODEL"] == DEFAULT_MODEL


def test_the_default_deployment_uses_the_default_model_and_is_not_warned_about():
    from infra import app as cdk_app

    settings = StackSettings(Path("."), Path("."))
    answer = settings.functions(AnswerSettings)
    assert (answer.openai_model, answer.openai_fallback_model) == (DEFAULT_MODEL, "")
    assert cdk_app.model_warnings(settings, date(2026, 11, 26)) == []


def test_a_retiring_fallback_model_is_warned_about_too():
    from infra import app as cdk_app

    settings = StackSettings(Path("."), Path("."), function_settings={"OPENAI_FALLBACK_MODEL": "o3"})
    (warning,) = cdk_app.model_warnings(settings, date(2026, 12, 1))
    assert warning.startswith("OPENAI_FALLBACK_MODEL o3 is shut down by OpenAI on 2026-12-11, in 10 days")
