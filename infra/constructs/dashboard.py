"""The operator's CloudWatch dashboard: how the burst feels to the person (ReplyDelay,
FragmentsPerReply, SplitBursts, BurstEnd by reason, RepliesDiscarded), then the AI, the
deliveries, the errors, the cost limits and the hand-offs to a person, from the metrics the
functions emit (EMF, the stack's own namespace, dimension `service`) and the state machine's own."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from functions.batching.rules.burst import BURST_END_REASONS
from infra.names import SERVICE

PERIOD = Duration.minutes(5)
# The rows of count (Sum) graphs below the burst's own: title, metrics.
COUNT_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("AI", ("AIErrors", "AIQuotaExhausted", "AIModelUnavailable", "AIRepliesCut", "AIRepliesFiltered")),
    (
        "Delivery",
        ("TwilioErrors", "UndeliveredReplies", "FallbackReplies", "TemplatesSent", "ReplyPartsFoundSent"),
    ),
    ("Errors", ("WebhooksRefused", "WebhooksMalformed", "DeadLetteredBatches", "AnnounceFailures")),
    ("Cost limits", ("CostLimitReached", "ReplyPartsCapped", "OptOuts")),
    (
        "Hand-off to a person",
        (
            "HandedOff",
            "HandedOffBatches",
            "PersonReplies",
            "PersonRepliesNotSent",
            "ConversationCommandsRefused",
        ),
    ),
)


class Dashboard(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, state_machine: sfn.StateMachine, namespace: str
    ) -> None:
        """`namespace`: the stack's own, where its functions emit (infra/names.py metrics_namespace)."""
        super().__init__(scope, construct_id)
        ours = _Ours(namespace)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(*_burst_row(ours))
        self.dashboard.add_widgets(
            _graph("AI latency (ms)", ours.spread("AILatency")),
            _graph("Twilio latency (ms)", ours.spread("TwilioLatency")),
            _graph(
                "Runs",
                [
                    state_machine.metric_succeeded(period=PERIOD, statistic="Sum"),
                    state_machine.metric_failed(period=PERIOD, statistic="Sum"),
                ],
            ),
            _graph("Oldest pending message (s)", [ours.metric("OldestPendingMessageAge", "Maximum")]),
        )
        for title, names in COUNT_ROWS:
            self.dashboard.add_widgets(_graph(title, [ours.metric(name, "Sum") for name in names], width=24))


def _burst_row(ours: _Ours) -> list[cloudwatch.IWidget]:
    return [
        _graph("Reply delay: last fragment to first part (ms)", ours.spread("ReplyDelay")),
        _graph("Fragments per reply", [ours.metric("FragmentsPerReply", s) for s in ("Average", "Maximum")]),
        _graph(
            "Burst ends, by reason",
            [ours.metric("BurstEnd", "Sum", reason=reason, label=reason) for reason in BURST_END_REASONS],
        ),
        _graph(
            "Split bursts and discarded replies",
            [ours.metric("SplitBursts", "Sum"), ours.metric("RepliesDiscarded", "Sum")],
        ),
    ]


def _graph(title: str, metrics: list[cloudwatch.IMetric], width: int = 6) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=metrics, width=width, height=6)


class _Ours:
    """The metrics the functions emit, in the stack's namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def spread(self, name: str) -> list[cloudwatch.IMetric]:
        """A time's median, 90th percentile and maximum."""
        return [self.metric(name, statistic) for statistic in ("p50", "p90", "Maximum")]

    def metric(
        self, name: str, statistic: str, reason: str | None = None, label: str | None = None
    ) -> cloudwatch.Metric:
        """A metric the functions emit; BurstEnd also has the dimension `reason`."""
        dimensions = {"service": SERVICE} | ({"reason": reason} if reason else {})
        return cloudwatch.Metric(
            namespace=self.namespace,
            metric_name=name,
            dimensions_map=dimensions,
            statistic=statistic,
            period=PERIOD,
            label=label or f"{name} {statistic}",
        )
