"""What can saturate, one function per AWS service or group of our settings, each giving its
components at the traffic's rate; COMPONENTS lists them in the order the report breaks ties
in (the first bottleneck is the first of the lowest)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.dal import usage_counters
from infra.capacity import quotas
from infra.capacity.traffic import SECONDS_PER_HOUR, Assumptions, Rates, rates, settings


@dataclass(frozen=True)
class Component:
    """One thing that can saturate: an AWS quota, a setting of ours, or a shared item."""

    name: str
    kind: str  # "AWS quota", "our setting", "shared item"
    use: float  # at the given rate, in `unit`
    limit: float
    unit: str
    saturates_at: float  # messages/s (math.inf: never)
    raise_by: str  # the Service Quotas request, or the setting to change
    raisable_on_request: bool  # AWS raises it when asked (or it is ours to change)
    note: str = ""

    @property
    def share(self) -> float:
        return self.use / self.limit if self.limit else math.inf


@dataclass(frozen=True)
class Traffic:
    """The model's inputs at one rate: the assumptions, our settings, what they make a second."""

    assumptions: Assumptions
    values: dict[str, Any]
    rates: Rates


def _component(
    t: Traffic,
    name: str,
    kind: str,
    use: float,
    limit: float,
    unit: str,
    raise_by: str,
    raisable: bool,
    note: str = "",
) -> Component:
    """A component that saturates where its use, linear in the rate, meets its limit."""
    if limit <= 0:  # 0: a setting turned off
        return Component(name, kind, use, 0, unit, math.inf, raise_by, raisable, note or "off")
    saturates = t.assumptions.messages_per_second * limit / use if use else math.inf
    return Component(name, kind, use, limit, unit, saturates, raise_by, raisable, note)


def _quota(t: Traffic, q: quotas.Quota, use: float, name: str) -> Component:
    return _component(t, name, "AWS quota", use, q.value, q.unit, q.request(), q.raisable, q.note)


def _setting(
    t: Traffic, name: str, use: float, limit: float, unit: str, raise_by: str, note: str = ""
) -> Component:
    return _component(t, name, "our setting", use, limit, unit, raise_by, True, note)


def api_gateway(t: Traffic) -> list[Component]:
    return [_quota(t, quotas.API_GATEWAY_THROTTLE, t.rates.api_requests, "API Gateway account throttle")]


def step_functions(t: Traffic) -> list[Component]:
    r = t.rates
    return [
        _quota(
            t, quotas.START_EXECUTION, r.of_call("states:StartExecution"), "Step Functions StartExecution"
        ),
        _quota(t, quotas.STATE_TRANSITIONS, r.transitions, "Step Functions state transitions (Standard)"),
        _quota(
            t, quotas.SEND_TASK_SUCCESS, r.of_call("states:SendTaskSuccess"), "Step Functions SendTaskSuccess"
        ),
    ]


def lambda_concurrency(t: Traffic) -> list[Component]:
    concurrency = sum(t.rates.concurrency.values())
    return [_quota(t, quotas.LAMBDA_CONCURRENCY, concurrency, "Lambda concurrent executions")]


def dynamodb_tables(t: Traffic) -> list[Component]:
    writes = [
        _quota(t, quotas.DYNAMODB_TABLE_WRITES, units, f"DynamoDB {table} writes")
        for table, units in sorted(t.rates.write_units.items())
    ]
    reads = [
        _quota(t, quotas.DYNAMODB_TABLE_READS, units, f"DynamoDB {table} reads")
        for table, units in sorted(t.rates.read_units.items())
    ]
    return writes + reads


def secrets_manager(t: Traffic) -> list[Component]:
    secrets = t.rates.cached_reads.get("secretsmanager:GetSecretValue", 0.0)
    return [_quota(t, quotas.SECRETS_MANAGER_READS, secrets, "Secrets Manager GetSecretValue")]


def eventbridge(t: Traffic) -> list[Component]:
    events = t.rates.of_call("events:PutEvents")
    return [_quota(t, quotas.EVENTBRIDGE_PUT_EVENTS, events, "EventBridge PutEvents")]


def edge_settings(t: Traffic) -> list[Component]:
    """The stage's throttle and the webhook's reserved concurrency."""
    reserved = float(t.values["webhook_reserved_concurrency"])
    return [
        _setting(
            t,
            "Stage throttle (API_RATE_LIMIT)",
            t.rates.api_requests,
            float(t.values["api_rate_limit"]),
            "requests/s (webhooks and status callbacks)",
            "CDK context api_rate_limit (infra/names.py); a 429 is a message lost",
        ),
        _setting(
            t,
            "Webhook reserved concurrency (WEBHOOK_RESERVED_CONCURRENCY)",
            t.rates.concurrency["Webhook"],
            reserved,
            "concurrent webhooks",
            "CDK context webhook_reserved_concurrency",
            "" if reserved else "0: none",
        ),
    ]


def hourly_ceilings(t: Traffic) -> list[Component]:
    """Our hourly ceilings on AI calls and new conversations, in all and per tenant."""
    a, r, values = t.assumptions, t.rates, t.values
    return [
        _setting(
            t,
            "MAX_AI_CALLS_PER_HOUR",
            r.ai_calls * SECONDS_PER_HOUR,
            float(values["max_ai_calls_per_hour"]),
            "AI calls/hour (one per burst)",
            "MAX_AI_CALLS_PER_HOUR (a batch over it is answered without a reply)",
        ),
        _setting(
            t,
            "MAX_AI_CALLS_PER_HOUR_PER_TENANT",
            r.ai_calls * SECONDS_PER_HOUR / a.tenants,
            float(values["max_ai_calls_per_hour_per_tenant"]),
            f"AI calls/hour per tenant ({a.tenants} tenant(s), traffic shared evenly)",
            "MAX_AI_CALLS_PER_HOUR_PER_TENANT",
        ),
        _setting(
            t,
            "MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT",
            r.new_conversations * SECONDS_PER_HOUR / a.tenants,
            float(values["max_new_conversations_per_hour_per_tenant"]),
            f"new conversations/hour per tenant (one every {a.bursts_per_conversation:g} bursts)",
            "MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT",
        ),
    ]


def token_ceilings(t: Traffic) -> list[Component]:
    """Our hourly token ceilings, in all and per tenant, where the code has them."""
    a = t.assumptions
    tokens = a.ai_input_tokens + a.ai_output_tokens
    return [
        _setting(
            t,
            setting.upper(),
            t.rates.ai_calls * tokens * SECONDS_PER_HOUR / per,
            float(t.values[setting]),
            f"tokens/hour{' per tenant' if per > 1 or 'tenant' in setting else ''} ({tokens} a call)",
            setting.upper(),
        )
        for setting, per in (("max_ai_tokens_per_hour", 1), ("max_ai_tokens_per_hour_per_tenant", a.tenants))
        if setting in t.values
    ]


def waf_rule(t: Traffic) -> list[Component]:
    """The web ACL's per-IP rate rule: never met by Twilio's signed requests."""
    return [
        Component(
            "WAF per-IP rate rule (API_RATE_LIMIT_PER_IP)",
            "our setting",
            0.0,
            float(t.values["api_rate_limit_per_ip"]),
            "unsigned requests per IP per 5 minutes",
            math.inf,
            "CDK context api_rate_limit_per_ip",
            True,
            "counts only requests without an X-Twilio-Signature (infra/constructs/api.py): never Twilio's",
        )
    ]


def usage_counter_shards(t: Traffic) -> list[Component]:
    """Items every conversation writes: the shared cost counters, spread over shards."""
    shards = usage_counters.SHARDS
    per_ai_call = 2  # one transactional write (two write units) on one shard of the counter
    counters = (
        ("everyone's AI-call counter", t.rates.ai_calls),
        ("a tenant's AI-call counter", t.rates.ai_calls / t.assumptions.tenants),
    )
    return [
        _component(
            t,
            f"UsageCounters: {counter}, hottest of {shards} shards",
            "shared item",
            calls * per_ai_call / shards,
            quotas.DYNAMODB_PARTITION_WRITES.value,
            "write units/s on one item",
            f"usage_counters.SHARDS ({shards}): more shards",
            True,
            "per-partition limit (hard); the shards are chosen by a hash of the conversation",
        )
        for counter, calls in counters
    ]


COMPONENTS: tuple[Callable[[Traffic], list[Component]], ...] = (
    api_gateway,
    step_functions,
    lambda_concurrency,
    dynamodb_tables,
    secrets_manager,
    eventbridge,
    edge_settings,
    hourly_ceilings,
    token_ceilings,
    waf_rule,
    usage_counter_shards,
)


def components(a: Assumptions) -> list[Component]:
    """Each component at the given rate, the rate at which it saturates, how to raise it."""
    values = settings(a.overrides)
    traffic = Traffic(a, values, rates(a, values))
    return [component for of_service in COMPONENTS for component in of_service(traffic)]
