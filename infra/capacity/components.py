"""What can saturate, one function per AWS service or group of our settings, each giving its
components at the traffic's rate (the vendors' limits: vendors.py; items many conversations
write: shared_items.py); COMPONENTS lists them in the order the report breaks ties in (the
first bottleneck is the first of the lowest)."""

from __future__ import annotations

import math
from collections.abc import Callable

from infra.capacity import burst, quotas, shared_items, vendors
from infra.capacity.saturation import Component, Traffic, quota, setting
from infra.capacity.traffic import SECONDS_PER_HOUR, Assumptions, rates, settings

__all__ = ["COMPONENTS", "Component", "Traffic", "components"]


def api_gateway(t: Traffic) -> list[Component]:
    return [quota(t, quotas.API_GATEWAY_THROTTLE, t.rates.api_requests, "API Gateway account throttle")]


def step_functions(t: Traffic) -> list[Component]:
    r = t.rates
    return [
        quota(t, quotas.START_EXECUTION, r.of_call("states:StartExecution"), "Step Functions StartExecution"),
        quota(
            t,
            quotas.STATE_TRANSITIONS,
            r.transitions,
            "Step Functions state transitions (Standard)",
            f"{t.assumptions.per_burst(burst.TRANSITIONS):g} a burst: 9, 3 per extension of its window "
            f"({t.assumptions.extensions_per_burst:g} a burst), 2 per tool round "
            f"({t.assumptions.tool_rounds:g}), 1 per retry (none counted). {quotas.STATE_TRANSITIONS.note}",
        ),
        quota(
            t, quotas.SEND_TASK_SUCCESS, r.of_call("states:SendTaskSuccess"), "Step Functions SendTaskSuccess"
        ),
    ]


def lambda_concurrency(t: Traffic) -> list[Component]:
    concurrency = sum(t.rates.concurrency.values())
    return [quota(t, quotas.LAMBDA_CONCURRENCY, concurrency, "Lambda concurrent executions")]


def dynamodb_tables(t: Traffic) -> list[Component]:
    writes = [
        quota(t, quotas.DYNAMODB_TABLE_WRITES, units, f"DynamoDB {table} writes")
        for table, units in sorted(t.rates.write_units.items())
        if units  # ToolCalls: only with tool rounds
    ]
    reads = [
        quota(t, quotas.DYNAMODB_TABLE_READS, units, f"DynamoDB {table} reads")
        for table, units in sorted(t.rates.read_units.items())
        if units
    ]
    return writes + reads


def secrets_manager(t: Traffic) -> list[Component]:
    secrets = t.rates.cached("secretsmanager:GetSecretValue")
    return [quota(t, quotas.SECRETS_MANAGER_READS, secrets, "Secrets Manager GetSecretValue")]


def sts(t: Traffic) -> list[Component]:
    """The tenant readers' sessions: each function's warm instances take one per tenant they
    serve every 14 minutes (infra/capacity/traffic.py _cached_reads), against the account's
    STS requests a second."""
    by_function = {f: rate for (f, call), rate in t.rates.cached_reads.items() if call == "sts:AssumeRole"}
    bound = t.assumptions.tenants / burst.SESSION_RENEWED_EVERY
    shares = ", ".join(f"{f} {rate:,.2f}/s" for f, rate in by_function.items() if rate)
    note = (
        f"{shares or 'none'} ({t.assumptions.tenants} tenant(s)). "
        f"{', '.join(burst.TENANT_SESSIONS_ON_FAILURE)} take sessions only on failures or for a "
        f"person's commands: not counted, each warm instance at most {bound:,.2f}/s. "
        f"{quotas.STS_REQUESTS.note}"
    )
    return [quota(t, quotas.STS_REQUESTS, sum(by_function.values()), "STS AssumeRole (tenant readers)", note)]


def eventbridge(t: Traffic) -> list[Component]:
    events = t.rates.of_call("events:PutEvents")
    return [quota(t, quotas.EVENTBRIDGE_PUT_EVENTS, events, "EventBridge PutEvents")]


def edge_settings(t: Traffic) -> list[Component]:
    """The stage's throttle and the webhook's reserved concurrency."""
    reserved = float(t.values["webhook_reserved_concurrency"])
    return [
        setting(
            t,
            "Stage throttle (API_RATE_LIMIT)",
            t.rates.api_requests,
            float(t.values["api_rate_limit"]),
            "requests/s (webhooks and status callbacks)",
            "API_RATE_LIMIT in the deployment's settings file; a 429 is a message lost",
        ),
        setting(
            t,
            "Webhook reserved concurrency (WEBHOOK_RESERVED_CONCURRENCY)",
            t.rates.concurrency["Webhook"],
            reserved,
            "concurrent webhooks",
            "WEBHOOK_RESERVED_CONCURRENCY in the deployment's settings file",
            "" if reserved else "0: none",
        ),
    ]


def hourly_ceilings(t: Traffic) -> list[Component]:
    """Our hourly ceilings on AI calls and new conversations, in all and per tenant."""
    a, r, values = t.assumptions, t.rates, t.values
    return [
        setting(
            t,
            "MAX_AI_CALLS_PER_HOUR",
            r.ai_calls * SECONDS_PER_HOUR,
            float(values["max_ai_calls_per_hour"]),
            "AI calls/hour (one per burst)",
            "MAX_AI_CALLS_PER_HOUR (a batch over it is answered without a reply)",
        ),
        setting(
            t,
            "MAX_AI_CALLS_PER_HOUR_PER_TENANT",
            r.ai_calls * SECONDS_PER_HOUR / a.tenants,
            float(values["max_ai_calls_per_hour_per_tenant"]),
            f"AI calls/hour per tenant ({a.tenants} tenant(s), traffic shared evenly)",
            "MAX_AI_CALLS_PER_HOUR_PER_TENANT",
        ),
        setting(
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
        setting(
            t,
            name.upper(),
            t.rates.ai_calls * tokens * SECONDS_PER_HOUR / per,
            float(t.values[name]),
            f"tokens/hour{' per tenant' if per > 1 or 'tenant' in name else ''} ({tokens} a call)",
            name.upper(),
        )
        for name, per in (("max_ai_tokens_per_hour", 1), ("max_ai_tokens_per_hour_per_tenant", a.tenants))
        if name in t.values
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
            "API_RATE_LIMIT_PER_IP in the deployment's settings file",
            True,
            "counts only requests without an X-Twilio-Signature (infra/constructs/api.py): never Twilio's",
        )
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
    sts,
    vendors.twilio_senders,
    vendors.openai_limits,
    shared_items.cost_counters,
    shared_items.sender_pace,
)


def components(a: Assumptions) -> list[Component]:
    """Each component at the given rate, the rate at which it saturates, how to raise it."""
    values = settings(a.overrides)
    traffic = Traffic(a, values, rates(a, values))
    return [found for of_service in COMPONENTS for found in of_service(traffic)]
