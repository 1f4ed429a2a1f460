"""One Logger and one Metrics for the service; every handler wears them the same way:
logger.inject_lambda_context, then metrics.log_metrics.

No Powertools Tracer: creating one imports the X-Ray SDK, which doubled every cold start
(measured by `make bench`). Lambda's and Step Functions' active tracing still put each
run and each invocation on the X-Ray service map (docs/adr/0025-cold-starts-what-a-function-imports.md).

Every metric is emitted in the stack's own namespace, POWERTOOLS_METRICS_NAMESPACE, which
the CDK stack sets on every function to its name (functions/stack_names.py
metrics_namespace) and the local stack to its own: two stacks in one account and Region
never count into each other's alarms."""

import functools
import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, single_metric
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from functions.stack_names import STACK_NAME, metrics_namespace

SERVICE = "burst-reply"
# Powertools' own variable for the namespace (its Metrics reads it too).
NAMESPACE_VARIABLE = "POWERTOOLS_METRICS_NAMESPACE"
# The default stack's namespace (and the local stack's), where the variable is not set.
NAMESPACE = metrics_namespace(STACK_NAME)


def namespace() -> str:
    """The namespace of the stack this function belongs to, as its environment names it."""
    return os.environ.get(NAMESPACE_VARIABLE) or NAMESPACE


logger = Logger(service=SERVICE)
metrics = Metrics(namespace=namespace(), service=SERVICE)


def count(name: str, value: float = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def count_by_tenant(name: str, tenant: str, value: float = 1) -> None:
    """A count with the dimension Tenant (the AccountSid) besides `service`, printed at once
    (its own EMF record): an alarm on a Metrics Insights query grouped by Tenant watches
    every tenant, one added after the deploy too."""
    with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=namespace()) as metric:
        metric.add_dimension(name="service", value=SERVICE)
        metric.add_dimension(name="Tenant", value=tenant or "none")


def count_about(
    conversation_id: str, name: str, value: float = 1, unit: MetricUnit = MetricUnit.Count
) -> None:
    """One figure about one conversation (SplitBursts, FragmentsPerReply, ReplyDelay),
    printed at once as a record of its own with the conversation id as metadata (not a
    dimension: the metric stays one series, and CloudWatch Logs Insights finds the record)."""
    one = EphemeralMetrics(namespace=namespace(), service=SERVICE)
    one.add_metadata(key="conversation_id", value=conversation_id)
    one.add_metric(name=name, unit=unit, value=value)
    one.flush_metrics()


def milliseconds(name: str, value: float) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)


def count_by(name: str, dimension: str, value: str, conversation_id: str = "") -> None:
    """One count with a dimension of its own besides `service` (BurstEnd by `reason`),
    printed at once as a record of its own: the handler's other metrics keep only `service`."""
    one = EphemeralMetrics(namespace=namespace(), service=SERVICE)
    one.add_dimension(name=dimension, value=value)
    if conversation_id:
        one.add_metadata(key="conversation_id", value=conversation_id)
    one.add_metric(name=name, unit=MetricUnit.Count, value=1)
    one.flush_metrics()


def lambda_entry_point(handler: Callable[..., Any]) -> Callable[..., Any]:
    """The Powertools decorators every handler wears, in the same order: request context
    in the logs (cleared between invocations), metrics flushed in the stack's namespace
    (read at each invocation: a module imported before the environment was set, as in the
    tests, still emits where the stack's alarms look)."""
    flushed = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def in_the_stacks_namespace(event: Any, context: Any) -> Any:
        metrics.namespace = namespace()
        return flushed(event, context)

    return logger.inject_lambda_context(clear_state=True)(in_the_stacks_namespace)
