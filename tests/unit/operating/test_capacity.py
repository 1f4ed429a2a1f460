"""The capacity model's arithmetic (infra/capacity): the rate at which a component
saturates, the bottleneck it names, the settings it reads from the code, its cost lines and
its JSON output. Its per-burst counts are held to a recorded run in
tests/e2e/operating/test_capacity_counts.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from functions.config import Settings
from infra import prices
from infra.capacity import burst, model, quotas, shared_items
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
    # Enough senders, and an OpenAI organisation far above its tier's limits.
    assumptions = model.Assumptions(
        messages_per_second=1000, overrides=CEILINGS_OFF, senders=20, openai_rpm=1e9, openai_tpm=1e12
    )

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
    from functions.guards import usage_counters

    name = "UsageCounters: everyone's AI-call counter, hottest of {} shards"
    assumptions = model.Assumptions(messages_per_second=1, overrides={"MAX_AI_CALLS_PER_HOUR": 1_000_000})
    monkeypatch.setattr(usage_counters, "SHARDS", 1)
    one = by_name(assumptions)[name.format(1)]
    monkeypatch.setattr(usage_counters, "SHARDS", 16)
    sixteen = by_name(assumptions)[name.format(16)]

    assert sixteen.saturates_at == pytest.approx(16 * one.saturates_at)
    # one transactional write (2 units) per AI call, one AI call per 3 messages
    assert one.saturates_at == pytest.approx(1_000 / 2 * 3)


def test_a_counter_whose_ceiling_is_off_is_not_written():
    from functions.guards.usage_counters import SHARDS

    names = by_name(model.Assumptions(messages_per_second=1))  # AI-call ceilings off by default

    assert not [n for n in names if n.startswith("UsageCounters: everyone's AI-call counter")]
    assert f"UsageCounters: everyone's token counter, hottest of {SHARDS} shards" in names


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


# --- what the model knows since issue 39 item 8 ------------------------------------------

TRANSITIONS = "Step Functions state transitions (Standard)"
TOKEN_CONFLICTS = "UsageCounters: everyone's token counter, transactions at once on a shard"


def _states() -> dict[str, dict]:
    return json.loads((Path(__file__).parents[3] / "statemachines" / "batch_window.asl.json").read_text())[
        "States"
    ]


def _cycle(states: dict[str, dict], start: str, first: str) -> list[str]:
    """The states a run enters from `first` (reached from `start`) until it is back at `start`."""
    entered, name = [], first
    while name != start:
        entered.append(name)
        assert len(entered) < len(states), f"{first} does not lead back to {start}"
        name = states[name]["Next"]
    return entered


def test_an_extension_and_a_tool_round_cost_the_transitions_the_state_machine_enters():
    states = _states()
    [again] = [c["Next"] for c in states["Burst Over?"]["Choices"]]  # the burst's end moved
    [tools] = [
        c["Next"] for c in states["Generate Reply"]["Catch"] if c["ErrorEquals"] == ["ToolCallsRequested"]
    ]

    extension = ["Burst Over?", *_cycle(states, "Burst Over?", again)]
    tool_round = _cycle(states, "Generate Reply", tools) + ["Generate Reply"]

    assert extension == ["Burst Over?", "Wait For The Burst To End", "Acquire Processing Lock"]
    assert burst.TRANSITIONS.extension == len(extension) == 3
    assert tool_round == ["Call Tools", "Generate Reply"]
    assert burst.TRANSITIONS.tool_round == len(tool_round) == 2


def test_one_extension_a_burst_lowers_the_transitions_bottleneck_from_500_to_375_messages_a_second():
    plain = by_name(model.Assumptions(messages_per_second=1))[TRANSITIONS]
    extended = by_name(model.Assumptions(messages_per_second=1, extensions_per_burst=1))[TRANSITIONS]

    assert plain.saturates_at == pytest.approx(1_500 / 9 * 3)  # 500
    assert extended.saturates_at == pytest.approx(1_500 / 12 * 3)  # 375


def test_a_tool_round_adds_an_ai_call_two_transitions_and_call_tools_work():
    plain = model.Assumptions(messages_per_second=30, overrides=CEILINGS_OFF)
    rounds = model.Assumptions(messages_per_second=30, overrides=CEILINGS_OFF, tool_rounds=1)

    before, after = by_name(plain), by_name(rounds)

    assert after[TRANSITIONS].use == pytest.approx(10 * 11)  # 10 bursts a second, 9 + 2
    openai = "OpenAI requests per minute (gpt-6.1-terra, Grow tier)"
    assert after[openai].use == pytest.approx(2 * before[openai].use)  # asked again with the outputs
    assert "DynamoDB ToolCalls writes" in after and "DynamoDB ToolCalls writes" not in before
    assert after["Lambda concurrent executions"].use > before["Lambda concurrent executions"].use


def test_with_one_sender_at_80_a_second_the_sender_stops_replies_above_80_a_second():
    # The counters' ceilings off: no transaction on a shared counter to saturate first.
    one = model.Assumptions(messages_per_second=1, overrides=CEILINGS_OFF)
    twenty = model.Assumptions(messages_per_second=1, overrides=CEILINGS_OFF, senders=20)

    first = model.first_bottleneck(model.components(one))
    assert first.name == "Twilio WhatsApp sender (1 sender(s), 80 messages/s each)"
    assert first.kind == "vendor limit"
    assert first.saturates_at == pytest.approx(80 * 3)  # 80 replies a second, 3 fragments each
    assert "--senders" in first.raise_by
    assert not model.first_bottleneck(model.components(twenty)).name.startswith("Twilio")
    faster = model.Assumptions(messages_per_second=1, overrides={**CEILINGS_OFF, "TWILIO_SENDER_MPS": 400})
    assert by_name(faster)["Twilio WhatsApp sender (1 sender(s), 400 messages/s each)"].saturates_at == 1_200


def test_a_senders_pace_items_take_one_write_a_part_over_its_shards():
    slow = by_name(model.Assumptions(messages_per_second=3))
    fast = by_name(model.Assumptions(messages_per_second=3, overrides={"TWILIO_SENDER_MPS": 400}))

    assert slow["UsageCounters: a sender's pace item (pace#<sender>#<shard>), hottest of 1"].use == 1
    assert fast["UsageCounters: a sender's pace item (pace#<sender>#<shard>), hottest of 4"].use == 0.25
    unpaced = by_name(model.Assumptions(messages_per_second=3, overrides={"TWILIO_SENDER_MPS": 0}))
    assert not [n for n in unpaced if "pace item" in n]


def test_openai_limits_are_the_assumed_tiers_unless_given():
    tier = quotas.OPENAI_TIER
    default = by_name(model.Assumptions(messages_per_second=3))
    given = by_name(model.Assumptions(messages_per_second=3, openai_rpm=600, openai_tpm=1e6))

    requests = default[f"OpenAI requests per minute (gpt-6.1-terra, {tier.name} tier)"]
    assert (requests.use, requests.limit) == (60, tier.requests_per_minute)  # one call a second
    assert requests.saturates_at == pytest.approx(3 * tier.requests_per_minute / 60)
    tokens = default[f"OpenAI tokens per minute (gpt-6.1-terra, {tier.name} tier)"]
    reserved = 2_000 + Settings.model_fields["openai_max_output_tokens"].default
    assert tokens.use == 60 * reserved
    assert given["OpenAI requests per minute (gpt-6.1-terra, your tier)"].saturates_at == pytest.approx(30)


def test_sts_sessions_follow_the_tenants_and_stay_below_one_per_invocation():
    def assume_role(tenants: int) -> float:
        return by_name(model.Assumptions(messages_per_second=300, tenants=tenants))[
            "STS AssumeRole (tenant readers)"
        ].use

    few, many, countless = assume_role(1), assume_role(500), assume_role(10**7)

    assert few < 1 < many < countless
    bursts = 100  # Generate Reply and Send Reply each take one session per invocation at most
    assert countless == pytest.approx(2 * bursts, rel=0.01)
    assert countless < 2 * bursts


def test_every_function_that_assumes_a_tenant_reader_is_in_the_sts_model():
    from infra.constructs import permissions

    readers = {
        *permissions.TENANT_SESSION_READERS,
        *permissions.OPENAI_KEY_READERS,
        *permissions.TOOL_SECRET_READERS,
    }
    modelled = {r.function for r in burst.CACHED_READS if r.call == "sts:AssumeRole"}

    assert modelled | set(burst.TENANT_SESSIONS_ON_FAILURE) == readers
    assert {"GenerateReply", "SendReply", "CallTools"} <= modelled


def test_transactions_on_a_token_counters_shard_conflict_well_before_its_1000_writes():
    from functions.guards.usage_counters import SHARDS

    counters = by_name(model.Assumptions(messages_per_second=1))
    conflicts = counters[TOKEN_CONFLICTS]
    writes = counters[f"UsageCounters: everyone's token counter, hottest of {SHARDS} shards"]

    # 2 transactions a burst (the admission's check, the tokens' count) over SHARDS shards,
    # each holding one for 10 ms: 5% of them conflict where λτ = -ln 0.95.
    per_shard = 2 / 3 / SHARDS
    assert conflicts.use == pytest.approx(per_shard * 0.010)
    assert conflicts.saturates_at == pytest.approx(-math.log(0.95) / (per_shard * 0.010))
    assert conflicts.saturates_at < writes.saturates_at / 50
    assert shared_items.conflict_share(conflicts.use * conflicts.saturates_at) == pytest.approx(0.05)
    quicker = by_name(model.Assumptions(messages_per_second=1, transaction_seconds=0.005))[TOKEN_CONFLICTS]
    assert quicker.saturates_at == pytest.approx(2 * conflicts.saturates_at)


def test_more_shards_or_no_token_ceiling_move_the_conflicts(monkeypatch):
    from functions.guards import usage_counters

    today = by_name(model.Assumptions(messages_per_second=1))[TOKEN_CONFLICTS]
    monkeypatch.setattr(usage_counters, "SHARDS", 4 * usage_counters.SHARDS)
    four_times = by_name(model.Assumptions(messages_per_second=1))[TOKEN_CONFLICTS]
    off = by_name(model.Assumptions(messages_per_second=1, overrides={"MAX_AI_TOKENS_PER_HOUR": 0}))

    assert four_times.saturates_at == pytest.approx(4 * today.saturates_at)
    assert TOKEN_CONFLICTS not in off


def test_lambdas_logs_are_priced_in_tiers_the_state_machines_flat():
    assert prices.lambda_logs_cost(1_000) == 500  # within the first 10 TB: $0.50/GB
    assert prices.lambda_logs_cost(60_000) == 12_500  # 10 TB at 0.50, 20 at 0.25, 20 at 0.10, 10 at 0.05

    def logs(rate: float) -> tuple[float, float]:
        cost = model.monthly_cost(model.Assumptions(messages_per_second=rate))["aws"]
        return cost["CloudWatch Logs: Lambda's (vended, tiered)"], cost[
            "CloudWatch Logs: the state machine's"
        ]

    (small_lambda, small_machine), (big_lambda, big_machine) = logs(1), logs(1000)
    assert big_machine == pytest.approx(1000 * small_machine, rel=0.001)  # flat: linear
    assert big_lambda < 0.85 * 1000 * small_lambda  # past 10 TB a month, each GB costs less
