"""make preflight's checklist on the synthesized template: each line goes red for what it
names (the asset and lock lines run in `make preflight` itself, on the built asset)."""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any

import pytest

from functions.answer.openai_models import shutdown_of
from infra import preflight

pytestmark = pytest.mark.infra


def test_the_runtime_line_is_green_only_for_the_python_the_tests_run(synthesized):
    assert preflight.runtime(synthesized[1]).ok
    other = copy.deepcopy(synthesized[1])
    for resource in other["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            resource["Properties"]["Runtime"] = "python3.14"
    assert not preflight.runtime(other).ok


def test_the_alarms_line_is_red_for_a_silent_alarm(synthesized):
    assert preflight.alarms(synthesized[1]).ok
    silent = copy.deepcopy(synthesized[1])
    alarm = next(r for r in silent["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm")
    alarm["Properties"].pop("AlarmActions")
    assert not preflight.alarms(silent).ok


def _with_model(template: dict[str, Any], model: str) -> dict[str, Any]:
    changed = copy.deepcopy(template)
    for resource in changed["Resources"].values():
        path = resource.get("Metadata", {}).get("aws:cdk:path", "")
        if resource["Type"] == "AWS::Lambda::Function" and "/Functions/GenerateReply/" in path:
            resource["Properties"]["Environment"]["Variables"]["OPENAI_MODEL"] = model
    return changed


def test_the_model_line_is_red_within_30_days_of_a_shutdown(synthesized):
    assert preflight.model(synthesized[1], date(2026, 11, 26)).ok
    retiring = _with_model(synthesized[1], "gpt-5-mini")
    shutdown = shutdown_of("gpt-5-mini")
    assert shutdown is not None
    assert not preflight.model(retiring, shutdown.replace(day=1)).ok
    assert preflight.model(retiring, date(shutdown.year - 1, 1, 1)).ok


def test_the_bus_policy_line_reads_the_statement_form(synthesized):
    assert preflight.bus_policy(synthesized[1]).ok
    old = copy.deepcopy(synthesized[1])
    policy = next(r for r in old["Resources"].values() if r["Type"] == "AWS::Events::EventBusPolicy")
    policy["Properties"] = {"Action": "events:PutEvents", "Principal": "*", "StatementId": "x"}
    assert not preflight.bus_policy(old).ok


def test_the_iam_line_is_red_without_a_recording(synthesized, tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, "CALLS_FILE", tmp_path / "none.json")
    line = preflight.iam(synthesized[1])
    assert not line.ok and "make test" in line.detail


def test_tested_reads_the_template_the_test_run_judged_and_says_when_there_is_none(
    synthesized, tmp_path, monkeypatch, capsys
):
    """make test's preflight (`--tested`): the test run's template, not cdk.out's."""
    tested = tmp_path / "template.json"
    monkeypatch.setattr(preflight, "TESTED_TEMPLATE_FILE", tested)
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path / "absent"))
    read: list[dict[str, Any]] = []
    monkeypatch.setattr(
        preflight, "CHECKS", (lambda t: read.append(t) or preflight.Line(True, "Read", "ok"),)
    )

    assert preflight.main(["--tested"]) == 2
    assert str(tested) in capsys.readouterr().err
    tested.write_text(json.dumps(synthesized[1]))

    assert preflight.main(["--tested"]) == 0
    assert read == [synthesized[1]]
    assert preflight.main([]) == 2  # without it: cdk.out's, which is absent here


def test_preflight_judges_the_template_of_the_stack_synth_named(synthesized, tmp_path, monkeypatch, capsys):
    """`STACK_NAME=ShopTwo make synth` writes cdk.out/ShopTwo.template.json; preflight reads
    that one, not BurstReply's (an old one, or none)."""
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path))
    monkeypatch.setenv("STACK_NAME", "ShopTwo")
    read: list[dict[str, Any]] = []
    monkeypatch.setattr(
        preflight, "CHECKS", (lambda t: read.append(t) or preflight.Line(True, "Read", "ok"),)
    )
    (tmp_path / "BurstReply.template.json").write_text(json.dumps({"Resources": {}}))

    assert preflight.main([]) == 2
    assert "ShopTwo.template.json" in capsys.readouterr().err
    (tmp_path / "ShopTwo.template.json").write_text(json.dumps(synthesized[1]))
    assert preflight.main([]) == 0
    assert read == [synthesized[1]]
