"""The capacity model's arithmetic (infra/capacity): the rate at which a component
saturates, the bottleneck it names, the settings it reads from the code, its cost lines and
its JSON output. Its per-burst counts are held to a recorded run in
tests/e2e/test_capacity_counts.py."""

from __future__ import annotations

import json
import math

import pytest

from functions.config import Settings
from infra.capacity import burst, model
from infra.capacity.__main__ import main
from infra.names import StackSettings

# Our hourly ceilings turned off (0), so that the one a test sets is the first to saturate.
CEILINGS_OFF = {
    name: 0
    for name in model.settings({})
    if name.startswith("max_ai_") or name == "max_new_conversations_per_hour_per_tenant"
}


def by_name(assumptions: model.Assumptions) -> dict[str, model.Component]:
    return {c.name: c for c in model.components(assumptions)}


def test_at_the_rate_a_component_saturates_its_use_is_its_limit():
    components = by_name(model.Assumptions(messages_per_second=7))

    for name, component in components.items():
        if math.isinf(component.saturates_at):
            continue
        at_saturation = by_name(model.Assumptions(messages_per_second=component.saturates_at))[name]
        assert at_saturation.use == pytest.approx(component.limit), name


def test_the_stage_throttle_saturates_when_webhooks_and_status_callbacks_reach_it():
    # 3 fragments and one reply part with 3 status callbacks: 6 requests a burst, 2 a message.
    assumptions = model.Assumptions(messages_per_second=1, overrides={"api_rate_limit": 100})

    throttle = by_name(assumptions)["Stage throttle (API_RATE_LIMIT)"]

    assert throttle.use == pytest.approx(2)
    assert throttle.saturates_at == pytest.approx(50)


def test_the_first_bottleneck_is_named_with_its_rate_and_the_setting_to_change():
    overrides = {**CEILINGS_OFF, "MAX_AI_CALLS_PER_HOUR": 36_000}  # 10 AI calls a second
    assumptions = model.Assumptions(messages_per_second=1, fragments_per_burst=3, overrides=overrides)

    first = model.first_bottleneck(model.components(assumptions))

    assert (first.name, first.kind) == ("MAX_AI_CALLS_PER_HOUR", "our setting")
    assert first.saturates_at == pytest.approx(30)  # one AI call per burst of 3 messages
    assert "MAX_AI_CALLS_PER_HOUR" in first.raise_by


def test_with_our_ceilings_off_the_first_bottleneck_is_an_aws_quota_with_its_request():
    assumptions = model.Assumptions(messages_per_second=1000, overrides=CEILINGS_OFF)

    first = model.first_bottleneck(model.components(assumptions))

    assert first.kind == "AWS quota"
    assert first.raise_by.startswith("Service Quotas")


def test_our_settings_are_read_from_the_codes_defaults():
    components = by_name(model.Assumptions(messages_per_second=1))
    stack_defaults = StackSettings(code_directory=None, dependencies_directory=None)  # type: ignore[arg-type]

    assert components["MAX_AI_CALLS_PER_HOUR"].limit == Settings.model_fields["max_ai_calls_per_hour"].default
    assert (
        components["MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT"].limit
        == Settings.model_fields["max_new_conversations_per_hour_per_tenant"].default
    )
    assert components["Stage throttle (API_RATE_LIMIT)"].limit == stack_defaults.api_rate_limit


def test_a_shared_counter_spread_over_more_shards_saturates_later(monkeypatch):
    from functions.dal import usage_counters

    name = "UsageCounters: everyone's AI-call counter, hottest of {} shards"
    assumptions = model.Assumptions(messages_per_second=1)
    monkeypatch.setattr(usage_counters, "SHARDS", 1)
    one = by_name(assumptions)[name.format(1)]
    monkeypatch.setattr(usage_counters, "SHARDS", 16)
    sixteen = by_name(assumptions)[name.format(16)]

    assert sixteen.saturates_at == pytest.approx(16 * one.saturates_at)
    # one transactional write (2 units) per AI call, one AI call per 3 messages
    assert one.saturates_at == pytest.approx(1_000 / 2 * 3)


def test_a_months_step_functions_cost_is_the_bursts_transitions_at_their_price():
    from tests.support.bench import prices

    cost = model.monthly_cost(model.Assumptions(messages_per_second=30, fragments_per_burst=3))

    transitions = 10 * burst.TRANSITIONS.at(3, 3)  # 10 bursts a second
    expected = transitions * prices.STEP_FUNCTIONS_PER_TRANSITION * model.SECONDS_PER_MONTH
    assert cost["aws"]["Step Functions (state transitions)"] == pytest.approx(expected, abs=0.01)
    assert cost["aws_total"] == pytest.approx(sum(cost["aws"].values()), abs=0.05)


def test_the_json_output_names_every_component_the_bottleneck_and_every_service_cost(capsys):
    assert main(["--messages-per-second", "10", "--json"]) == 0

    data = json.loads(capsys.readouterr().out)
    assert data["assumptions"]["messages_per_second"] == 10
    assert data["quotas_checked_on"] == "2026-11-26"
    fields = {"name", "kind", "use", "limit", "unit", "saturates_at", "raise_by", "raisable_on_request"}
    assert all(fields <= set(c) for c in data["components"])
    assert data["first_bottleneck"] in data["components"]
    assert data["first_bottleneck"] == data["components"][0]  # sorted by saturation
    services = " ".join(data["monthly_cost_usd"]["aws"])
    for service in (
        "Step Functions",
        "Lambda requests",
        "Lambda duration",
        "DynamoDB reads",
        "DynamoDB writes",
        "API Gateway",
        "Secrets Manager",
        "EventBridge",
        "CloudWatch Logs",
    ):
        assert service in services
    assert any(name.startswith("OpenAI") for name in data["monthly_cost_usd"]["vendors"])


def test_an_unknown_setting_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--messages-per-second", "1", "--set", "NO_SUCH_SETTING=1"])
    assert "no such setting" in capsys.readouterr().err
