"""The benchmark's cost model prices what the stack deploys: the web ACL on the API stage
inspects each webhook (its fixed monthly charge, by the rules in the template:
tests/infra/test_spend_guards.py)."""

from __future__ import annotations

from collections import Counter

from tests.support.bench import prices


def _burst(messages: int) -> prices.Burst:
    return prices.Burst(
        messages=messages,
        transitions=9,
        lambda_invocations=7,
        lambda_gb_seconds=1.0,
        aws_calls=Counter(),
        dynamodb_items=Counter(),
    )


def test_each_webhook_of_a_burst_is_one_request_the_web_acl_inspects():
    three, six = prices.aws_cost(_burst(3)), prices.aws_cost(_burst(6))

    assert three["WAF requests"] == 3 * prices.WAF_PER_REQUEST
    assert six["WAF requests"] == 2 * three["WAF requests"]
