"""Two stacks in one account and Region: every alarm and the dashboard of one watch only
its own metrics, and its functions emit where its own alarms look (the stack's namespace,
POWERTOOLS_METRICS_NAMESPACE, set by the CDK on every function: infra/names.py
metrics_namespace; docs/adr/0139-a-stacks-metrics-are-in-a-namespace.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.emf import emf_records

pytestmark = pytest.mark.infra

SECOND = "ShopTwo"
# A metric as CloudWatch names it: (namespace, metric name, its dimensions, sorted).
Identity = tuple[str, str, tuple[tuple[str, str], ...]]


@pytest.fixture(scope="module")
def second(
    synthesized: tuple[Any, dict[str, Any], Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The template of a stack deployed as `STACK_NAME=ShopTwo make deploy`, beside the default."""
    from aws_cdk.assertions import Template

    from infra.app import build_app

    root = tmp_path_factory.mktemp("second-stack")
    (root / "code" / "functions").mkdir(parents=True)
    (root / "dependencies" / "python").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STACK_NAME", SECOND)
        _, stack = build_app(root / "code", root / "dependencies", outdir=str(root / "cdk.out"))
    assert stack.stack_name == SECOND != synthesized[0].stack_name
    return dict(Template.from_stack(stack).to_json())


def _value(value: Any, stack: str) -> str:
    """A dimension's value: a reference to a resource is that stack's own resource (its
    physical name is the stack's); a pseudo parameter (AWS::Region) is the same in both."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and str(value.get("Ref", "")).startswith("AWS::"):
        return json.dumps(value, sort_keys=True)
    return json.dumps({"of stack": stack, "reference": value}, sort_keys=True)


def _identity(metric: dict[str, Any], stack: str) -> Identity:
    dimensions = tuple(sorted((d["Name"], _value(d["Value"], stack)) for d in metric.get("Dimensions", [])))
    return (metric["Namespace"], metric["MetricName"], dimensions)


# SELECT SUM("X") FROM SCHEMA("BurstReply", service, Tenant) WHERE service = 'burst-reply' GROUP BY Tenant
_QUERY = re.compile(
    r'SELECT \w+\("(?P<metric>\w+)"\) FROM SCHEMA\("(?P<namespace>[^"]+)", (?P<keys>[\w, ]+)\)'
    r"(?: WHERE (?P<where>.*?))?(?: GROUP BY .*)?$"
)


def _queried(expression: str) -> Identity:
    """A Metrics Insights query's metrics: its namespace, metric and dimension keys, the
    values its WHERE fixes (`*` for a key it groups by)."""
    found = _QUERY.match(expression)
    assert found, expression
    fixed = dict(re.findall(r"(\w+) = '([^']*)'", found["where"] or ""))
    keys = [key.strip() for key in found["keys"].split(",")]
    return (found["namespace"], found["metric"], tuple(sorted((k, fixed.get(k, "*")) for k in keys)))


def watched(template: dict[str, Any], stack: str) -> dict[str, set[Identity]]:
    """Each alarm (by logical id) -> the metrics it reads: its metric, each metric of its
    math, or the metrics of its Metrics Insights query."""
    alarms: dict[str, set[Identity]] = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        if "MetricName" in properties:
            alarms[logical_id] = {_identity(properties, stack)}
            continue
        read = set()
        for query in properties["Metrics"]:
            if "MetricStat" in query:
                read.add(_identity(query["MetricStat"]["Metric"], stack))
            elif "SCHEMA(" in query.get("Expression", ""):
                read.add(_queried(query["Expression"]))
        alarms[logical_id] = read
    return alarms


def test_no_alarm_of_a_second_stack_watches_a_metric_the_first_stacks_alarms_watch(synthesized, second):
    first = watched(synthesized[1], synthesized[0].stack_name)
    theirs = watched(second, SECOND)
    assert len(theirs) == len(first) > 20
    assert all(theirs.values()), [alarm for alarm, metrics in theirs.items() if not metrics]  # each is read
    everything_first_watches = set().union(*first.values())
    shared = {alarm: sorted(metrics & everything_first_watches) for alarm, metrics in theirs.items()}
    assert {alarm: metrics for alarm, metrics in shared.items() if metrics} == {}
    # The same stack synthesized again would share every one: the comparison sees a match.
    assert (
        set().union(*watched(synthesized[1], synthesized[0].stack_name).values()) == everything_first_watches
    )


def test_the_alarms_on_what_the_functions_emit_and_on_the_access_log_read_the_stacks_own_namespace(second):
    alarms = watched(second, SECOND)
    ours = {metric for metrics in alarms.values() for metric in metrics if not metric[0].startswith("AWS/")}
    names = {metric[1] for metric in ours}
    assert {"WebhooksRefused", "EdgeThrottled", "TenantCeilingReached", "DeadLetteredBatches"} <= names
    assert {metric[0] for metric in ours} == {SECOND}


def test_the_second_stacks_dashboard_graphs_its_own_metrics(second):
    from tests.infra.test_dashboard import _dashboard_bodies, _graphed

    [body] = _dashboard_bodies(second)
    graphed = _graphed(body)
    namespaces = {metric[0] for metric in graphed if not metric[0].startswith("AWS/")}
    assert namespaces == {SECOND}
    assert (SECOND, "ReplyDelay", "service", "burst-reply") in graphed


def _environment(template: dict[str, Any], function: str) -> dict[str, Any]:
    (found,) = [
        resource["Properties"]["Environment"]["Variables"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function" and logical_id.startswith(f"Functions{function}")
    ]
    return dict(found)


def test_what_a_function_of_the_second_stack_emits_is_what_its_alarms_read(second, monkeypatch, capsys):
    """A handler run with the environment the second stack gives it (the entry point every
    handler wears, and each way the functions count) prints EMF records in that stack's
    namespace, each one a metric one of its alarms reads."""
    from functions import observability
    from infra.local.lambdas import LocalContext

    variables = _environment(second, "Webhook")
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == SECOND
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", variables["POWERTOOLS_METRICS_NAMESPACE"])
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    @observability.lambda_entry_point
    def handler(event: dict[str, Any], context: Any) -> None:
        observability.count("WebhooksRefused")
        observability.count_by_tenant("TenantCeilingReached", "AC" + "1" * 32)
        observability.count_by("BurstEnd", "reason", "quiet")
        observability.count_about("conversation-1", "SplitBursts")

    capsys.readouterr()
    handler({}, LocalContext("Webhook", 15))
    records = emf_records(capsys.readouterr().out)

    emitted: dict[str, Identity] = {}
    for record in records:
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        for metric in directive["Metrics"]:
            for keys in directive["Dimensions"]:
                emitted[metric["Name"]] = (
                    directive["Namespace"],
                    metric["Name"],
                    tuple(sorted((key, str(record[key])) for key in keys)),
                )
    assert {name: identity[0] for name, identity in emitted.items()} == {
        name: SECOND for name in ("WebhooksRefused", "TenantCeilingReached", "BurstEnd", "SplitBursts")
    }
    read = set().union(*watched(second, SECOND).values())
    assert emitted["WebhooksRefused"] in read
    (tenants,) = [metric for metric in read if metric[1] == "TenantCeilingReached"]
    assert emitted["TenantCeilingReached"][:2] == tenants[:2]
    assert [key for key, _ in emitted["TenantCeilingReached"][2]] == [key for key, _ in tenants[2]]
    assert ("service", "burst-reply") in tenants[2] and ("service", "burst-reply") in emitted[
        "TenantCeilingReached"
    ][2]
