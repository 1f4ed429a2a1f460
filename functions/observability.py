"""One Logger, Tracer and Metrics for the service; every handler stacks them the same way:
logger.inject_lambda_context, tracer.capture_lambda_handler, metrics.log_metrics."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = "burst-reply"
NAMESPACE = "BurstReply"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def count(name: str, value: float = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, value: float) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)


def lambda_entry_point(handler: Callable[..., Any]) -> Callable[..., Any]:
    """The Powertools decorators every handler wears, in the same order: request context
    in the logs (cleared between invocations), an X-Ray segment, metrics flushed."""
    return logger.inject_lambda_context(clear_state=True)(
        tracer.capture_lambda_handler(metrics.log_metrics(handler))
    )
