"""The stack's CloudWatch dashboard (infra/constructs/dashboard.py): the burst's own
metrics (ReplyDelay, FragmentsPerReply, SplitBursts, BurstEnd by each reason,
RepliesDiscarded) beside the AI, delivery, error and cost-limit ones, in the namespace and
dimension the functions emit them with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.batching.rules.burst import BURST_END_REASONS
from infra.names import NAMESPACE, SERVICE

pytestmark = pytest.mark.infra


def _dashboard_bodies(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Each dashboard's body as JSON (CloudFormation joins it around references: those
    become a placeholder string)."""
    bodies = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        body = resource["Properties"]["DashboardBody"]
        if isinstance(body, dict):
            body = "".join(p if isinstance(p, str) else "REF" for p in body["Fn::Join"][1])
        bodies.append(json.loads(body))
    return bodies


def _graphed(body: dict[str, Any]) -> set[tuple[str, ...]]:
    """(namespace, metric, dimension, value, ...) of every metric graphed, statistics left out."""
    found = set()
    for widget in body["widgets"]:
        for metric in widget.get("properties", {}).get("metrics", []):
            found.add(tuple(part for part in metric if isinstance(part, str)))
    return found


def test_the_dashboard_shows_how_the_burst_feels_and_the_existing_metrics(synthesized):
    [body] = _dashboard_bodies(synthesized[1])
    graphed = _graphed(body)

    def emitted(name: str) -> tuple[str, ...]:
        return (NAMESPACE, name, "service", SERVICE)

    for name in (
        "ReplyDelay",
        "FragmentsPerReply",
        "SplitBursts",
        "RepliesDiscarded",
        *("AILatency", "AIErrors", "AIQuotaExhausted", "AIModelUnavailable"),
        *("TwilioLatency", "TwilioErrors", "UndeliveredReplies", "FallbackReplies"),
        *("WebhooksRefused", "DeadLetteredBatches", "OldestPendingMessageAge"),
        *("CostLimitReached", "ReplyPartsCapped"),
        *("HandedOff", "HandedOffBatches", "PersonReplies"),
    ):
        assert emitted(name) in graphed, name
    assert set(BURST_END_REASONS) == {"fixed", "quiet", "cap", "flush", "max_messages"}
    for reason in BURST_END_REASONS:
        dimensions = {("service", SERVICE), ("reason", reason)}
        assert any(
            m[:2] == (NAMESPACE, "BurstEnd") and set(zip(m[2::2], m[3::2], strict=True)) == dimensions
            for m in graphed
        ), reason
    assert any(m[:2] == ("AWS/States", "ExecutionsFailed") for m in graphed)
