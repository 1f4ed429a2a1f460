"""A month at the given rate, by service: the rates (infra/capacity/traffic.py) times the
project's one price list (infra/prices.py), AWS apart from the vendors."""

from __future__ import annotations

import math
from typing import Any

from functions.registry import BY_NAME
from infra import prices
from infra.capacity import quotas
from infra.capacity.traffic import SECONDS_PER_MONTH, Assumptions, Rates, duration_seconds, rates, settings


def monthly_cost(a: Assumptions) -> dict[str, Any]:
    """A month (30 days) at the given rate, by service: AWS, then the vendors apart."""
    values = settings(a.overrides)
    r = rates(a, values)
    monthly = {
        name: per_second * SECONDS_PER_MONTH for name, per_second in _aws_per_second(a, values, r).items()
    }
    # Lambda's logs are priced by the month's volume, in tiers (infra/prices.py).
    lambda_log_gb = sum(r.invocations.values()) * a.log_bytes_per_invocation / 1e9 * SECONDS_PER_MONTH
    monthly["CloudWatch Logs: Lambda's (vended, tiered)"] = prices.lambda_logs_cost(lambda_log_gb)
    monthly["WAF web ACL and rule (fixed)"] = prices.waf_monthly()
    total = sum(monthly.values())
    return {
        "aws": {k: round(v, 2) for k, v in monthly.items()},
        "aws_total": round(total, 2),
        "step_functions_share": round(monthly["Step Functions (state transitions)"] / total, 3)
        if total
        else 0.0,
        "vendors": {k: round(v, 2) for k, v in _vendors_monthly(a, r).items()},
        "prices_as_of": prices.PRICES_AS_OF,
    }


def _aws_per_second(a: Assumptions, values: dict[str, Any], r: Rates) -> dict[str, float]:
    """What the traffic costs in AWS a second, by service."""
    gb_seconds = sum(
        rate * math.ceil(duration_seconds(f, a, values) * 1000) / 1000 * BY_NAME[f].memory_mb / 1024
        for f, rate in r.invocations.items()
    )
    state_machine_log_gb = r.history_events * a.log_bytes_per_history_event / 1e9
    return {
        "Step Functions (state transitions)": r.transitions * prices.STEP_FUNCTIONS_PER_TRANSITION,
        "Lambda requests": sum(r.invocations.values()) * prices.LAMBDA_PER_REQUEST,
        "Lambda duration (GB-seconds)": gb_seconds * prices.LAMBDA_ARM_PER_GB_SECOND,
        "DynamoDB reads (on-demand)": sum(r.read_units.values()) * prices.DYNAMODB_PER_READ_UNIT,
        "DynamoDB writes (on-demand)": sum(r.write_units.values()) * prices.DYNAMODB_PER_WRITE_UNIT,
        "API Gateway REST (webhooks and status callbacks)": r.api_requests
        * prices.API_GATEWAY_REST_PER_REQUEST,
        "WAF requests": r.api_requests * prices.WAF_PER_REQUEST,
        "Secrets Manager": r.cached("secretsmanager:GetSecretValue") * prices.SECRETS_MANAGER_PER_CALL,
        "EventBridge events": r.of_call("events:PutEvents") * prices.EVENTBRIDGE_PER_EVENT,
        "CloudWatch Logs: the state machine's": state_machine_log_gb * quotas.CLOUDWATCH_LOGS_PER_GB,
    }


def _vendors_monthly(a: Assumptions, r: Rates) -> dict[str, float]:
    """OpenAI's and Twilio's charges a month, which are not AWS's."""
    month = SECONDS_PER_MONTH
    return {
        f"OpenAI {prices.OPENAI_MODEL_PRICED} ({a.ai_input_tokens} in, {a.ai_output_tokens} out a call)": (
            r.ai_calls * prices.ai_cost(a.ai_input_tokens, a.ai_output_tokens) * month
        ),
        "Twilio WhatsApp replies (Twilio's fee per part)": r.reply_parts
        * prices.TWILIO_WHATSAPP_PER_MESSAGE
        * month,
    }
