"""The project's one price list: what the capacity model (`python -m infra.capacity`) and the
benchmark (`make bench`, tests/support/bench/prices.py) multiply their counts by.

Prices: us-east-1 list prices as known to the project on 2026-11-26 (Step Functions,
Lambda arm64, DynamoDB on-demand after its November 2024 reduction, API Gateway REST,
AWS WAF, Secrets Manager, EventBridge custom events; OpenAI gpt-6.1-terra, the default model;
Twilio's per-message fee).
Check the vendors' pricing pages before relying on them: the counts that multiply them
are measured, the prices are not."""

from __future__ import annotations

import math

PRICES_AS_OF = "2026-11-26"
STEP_FUNCTIONS_PER_TRANSITION = 0.025 / 1000
LAMBDA_PER_REQUEST = 0.20 / 1_000_000
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
DYNAMODB_PER_WRITE_UNIT = 0.625 / 1_000_000
DYNAMODB_PER_READ_UNIT = 0.125 / 1_000_000
API_GATEWAY_REST_PER_REQUEST = 3.50 / 1_000_000
SECRETS_MANAGER_PER_CALL = 0.05 / 10_000
EVENTBRIDGE_PER_EVENT = 1.00 / 1_000_000
# AWS WAF on the API stage: the web ACL and its one rule (the per-IP rate rule) a month,
# and each request it inspects (https://aws.amazon.com/waf/pricing/).
WAF_WEB_ACL_PER_MONTH = 5.00
WAF_RULE_PER_MONTH = 1.00
WAF_RULES = 1
WAF_PER_REQUEST = 0.60 / 1_000_000
# Lambda SnapStart for Python (not enabled; docs/adr/0060-lambda-snapstart-what-it-would-give-and-cost.md):
# caching a published
# version's snapshot, per GB of the function's memory per second it is cached (at least
# 3 hours), and each restore of it, per GB (https://aws.amazon.com/lambda/pricing/).
SNAPSTART_CACHE_PER_GB_SECOND = 0.0000015046
SNAPSTART_RESTORE_PER_GB = 0.0001397998
# gpt-6.1-terra, standard tier, prompts up to 272K input tokens: $1.00 / $5.00 per million
# input / output tokens (https://developers.openai.com/api/docs/models/gpt-6.1-terra).
OPENAI_MODEL_PRICED = "gpt-6.1-terra"
OPENAI_PER_INPUT_TOKEN = 1.00 / 1_000_000
OPENAI_PER_OUTPUT_TOKEN = 5.00 / 1_000_000
# Lambda's logs in CloudWatch Logs (Standard class) are vended logs since May 2025, priced by
# volume in tiers, per account and month, for all of the account's functions together: the
# first 10 TB at $0.50/GB, the next 20 TB at $0.25, the next 20 TB at $0.10, over 50 TB at $0.05
# (https://aws.amazon.com/cloudwatch/pricing/, "Vended Logs"; AWS's announcement of 2025-05-01,
# "AWS Lambda introduces tiered pricing for Amazon CloudWatch logs"; Duckbill's worked example,
# 60 TB: $30,000 flat, $12,500 tiered, agrees). Other logs (the state machine's) stay at
# $0.50/GB (infra/capacity/quotas.py CLOUDWATCH_LOGS_PER_GB).
LAMBDA_LOGS_TIERS: tuple[tuple[float, float], ...] = (  # (GB in the tier, $ per GB), in order
    (10_000, 0.50),
    (20_000, 0.25),
    (20_000, 0.10),
    (math.inf, 0.05),
)
# Twilio's fee; Meta charges nothing for a reply within the 24-hour window.
TWILIO_WHATSAPP_PER_MESSAGE = 0.005
TWILIO_SMS_US_PER_SEGMENT = 0.0083
SEEDS_MONTHLY_AT_100K_PER_DAY = "$17-27 (Redis buffer design, seed 004)"


def waf_monthly() -> float:
    """The web ACL and its rules a month, whatever the traffic."""
    return WAF_WEB_ACL_PER_MONTH + WAF_RULES * WAF_RULE_PER_MONTH


def snapstart_cost(memory_gb: float, cached_seconds: float, restores: int) -> tuple[float, float]:
    """SnapStart's own charges for functions of `memory_gb` together, one version each:
    caching their snapshots for `cached_seconds`, and restoring each `restores` times."""
    return (
        memory_gb * max(cached_seconds, 3 * 3600) * SNAPSTART_CACHE_PER_GB_SECOND,
        memory_gb * restores * SNAPSTART_RESTORE_PER_GB,
    )


def lambda_logs_cost(gb_a_month: float) -> float:
    """A month of Lambda's logs in CloudWatch Logs (GB: 10^9 bytes; TB: 1,000 GB), tier by tier."""
    cost, left = 0.0, gb_a_month
    for size, per_gb in LAMBDA_LOGS_TIERS:
        cost += min(left, size) * per_gb
        left -= min(left, size)
        if left <= 0:
            break
    return cost


def ai_cost(input_tokens: int, output_tokens: int) -> float:
    return input_tokens * OPENAI_PER_INPUT_TOKEN + output_tokens * OPENAI_PER_OUTPUT_TOKEN
