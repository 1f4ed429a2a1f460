"""The alarms an operator needs."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from functions.registry import WEBHOOK
from infra.constructs.api import WebhookApi
from infra.constructs.dashboard import Dashboard
from infra.constructs.functions import Functions
from infra.names import SERVICE, metrics_namespace

FIVE_MINUTES = Duration.minutes(5)


class Monitoring(Construct):
    """Alarms an operator needs: failed runs, throttling, webhook errors and refusals,
    messages waiting too long, OpenAI out of quota or not serving the model, replies not
    delivered, batches set aside. Each notifies the alarm topic (infra/constructs/alarm_topic.py
    gives every alarm of the stack its actions, so an alarm added here needs nothing more);
    and the dashboard (dashboard.py)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        state_machine: sfn.StateMachine,
        api: apigw.RestApi,
        functions: Functions,
        edge: WebhookApi,
    ) -> None:
        super().__init__(scope, construct_id)
        # The stack's own namespace: its functions emit there, and nothing of another stack does.
        self.namespace = metrics_namespace(Stack.of(self).stack_name)
        self.alarms = [
            *self._run_alarms(state_machine, functions),
            *self._api_alarms(api),
            *self._edge_alarms(edge),
            *self._service_alarms(),
            *self._credentials_and_delivery_alarms(),
            *self._spend_alarms(),
        ]
        # What the alarms watch, graphed.
        self.dashboard = Dashboard(self, "Dashboard", state_machine, self.namespace)

    def _alarm(
        self, alarm_id: str, description: str, metric: cloudwatch.IMetric, threshold: float = 1
    ) -> cloudwatch.Alarm:
        """Alarms when one five-minute period reaches the threshold; no data is fine."""
        return cloudwatch.Alarm(
            self,
            alarm_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _run_alarms(self, state_machine: sfn.StateMachine, functions: Functions) -> list[cloudwatch.Alarm]:
        """Runs that failed, and throttling of runs, of the webhook and of the other functions."""
        others = [f for name, f in functions.by_logical_id.items() if name != WEBHOOK.logical_id]
        return [
            self._alarm(
                "FailedRuns",
                "A batch run ended FAILED; its messages are kept. Inspect its history.",
                state_machine.metric_failed(period=FIVE_MINUTES, statistic="Sum"),
            ),
            self._alarm(
                "ThrottledRuns",
                "Step Functions throttled StartExecution or state transitions.",
                state_machine.metric_throttled(period=FIVE_MINUTES, statistic="Sum"),
            ),
            self._alarm(
                "WebhookThrottles",
                "The webhook was throttled (its reserved concurrency, webhook_reserved_concurrency, or "
                "the account's): API Gateway answered 500 and Twilio retries, up to its connection "
                "overrides' count; raise the concurrency if this is Twilio's traffic.",
                _throttles(functions[WEBHOOK.logical_id]),
            ),
            # An alarm sums at most 10 metrics: one alarm per group of 10 functions.
            *(
                self._alarm(
                    f"TaskThrottles{group + 1}",
                    "A task or the reconciler was throttled (the state machine retries).",
                    _sum_of([_throttles(f) for f in others[start : start + 10]], FIVE_MINUTES),
                )
                for group, start in enumerate(range(0, len(others), 10))
            ),
        ]

    def _api_alarms(self, api: apigw.RestApi) -> list[cloudwatch.Alarm]:
        """API Gateway's metrics of the stage Twilio calls (dimensions ApiName and Stage)."""
        return [
            self._alarm(
                "Webhook5xx",
                "The API answered 5xx: Twilio retries (the URLs carry its connection overrides), but "
                "look at the webhook's logs.",
                api.deployment_stage.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            ),
            self._alarm(
                "Webhook4xx",
                "The API answered 4xx a handful of times in 5 minutes: Twilio never retries a 4xx, so "
                "those messages are lost. Refused signatures (see WebhooksRefused), a wrong path in the "
                "URL given to Twilio (403 from API Gateway), throttling (429) or unreadable forms.",
                api.deployment_stage.metric_client_error(period=FIVE_MINUTES, statistic="Sum"),
                threshold=5,
            ),
        ]

    def _edge_alarms(self, edge: WebhookApi) -> list[cloudwatch.Alarm]:
        """What the edge refused: throttled requests (each of Twilio's is a message lost), and
        addresses the web ACL blocked for flooding without a signature."""
        return [
            self._alarm(
                "EdgeThrottled",
                "API Gateway throttled a request (429): Twilio never retries a 429 (its error 11217), so "
                "each throttled webhook is a message nobody sees. The stage's throttle (api_rate_limit, "
                "api_burst_limit) or the account's Region quota (Service Quotas, API Gateway, L-8A5B8E43) "
                "was reached: raise it (docs/deploying.md, sizing the edge).",
                edge.throttled_requests,
            ),
            self._alarm(
                "UnsignedFloodBlocked",
                "The web ACL answered 429 to an address that sent more than api_rate_limit_per_ip requests "
                "without an X-Twilio-Signature in 5 minutes: not Twilio, which signs every request. Nothing "
                "was lost; a flood that forges the header reaches the webhook (see WebhooksRefused).",
                edge.unsigned_requests_blocked,
            ),
        ]

    def _service_alarms(self) -> list[cloudwatch.Alarm]:
        """On the metrics our functions emit."""
        return [
            self._alarm(
                "WebhooksRefused",
                "The webhook refused a handful of messages in 5 minutes (403: bad signature, unknown "
                "account, not the tenant's number): Twilio does not retry them. After a deploy or a token "
                "rotation, check the tenant's auth token secret and the URL Twilio calls (WebhookBaseUrl).",
                self._ours("WebhooksRefused", "Sum", FIVE_MINUTES),
                threshold=5,
            ),
            self._alarm(
                "OldestPendingMessage",
                "A message has waited over 10 minutes for its answer (reported by the reconciler): "
                "runs are failing or not starting.",
                self._ours("OldestPendingMessageAge", "Maximum", FIVE_MINUTES),
                threshold=600,
            ),
            self._alarm(
                "AIQuotaExhausted",
                "OpenAI refused a request for quota or billing (429 insufficient_quota, spend limit): "
                "every batch gets the fallback reply until the account is topped up; then redrive.",
                self._ours("AIQuotaExhausted", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "AIModelUnavailable",
                "OpenAI does not serve the configured model (404 model_not_found: shut down, misspelt "
                "or not open to the key's project). With no OPENAI_FALLBACK_MODEL, batches stay pending "
                "and their runs fail until OPENAI_MODEL (or the conversation's ai_model) is changed.",
                self._ours("AIModelUnavailable", "Sum", FIVE_MINUTES),
            ),
        ]

    def _credentials_and_delivery_alarms(self) -> list[cloudwatch.Alarm]:
        """On the metrics our functions emit: refused credentials, replies not delivered, batches
        set aside."""
        return [
            self._alarm(
                "AICredentialsRefused",
                "OpenAI refused the key (401 invalid_api_key: revoked, rotated, another project's), also "
                "once it was read again from its secret. Batches stay pending and their runs fail until "
                "the secret (OpenAISecretName, or the tenant's own key: python -m infra.tenants openai-key) "
                "holds a key OpenAI accepts; the reconciler then answers them.",
                self._ours("AICredentialsRefused", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "TwilioCredentialsRefused",
                "Twilio refused a tenant's auth token (401, code 20003: rotated or revoked), also once it "
                "was read again from the tenant's secret. That tenant's batches stay pending and their runs "
                "fail until the secret holds the token Twilio accepts (python -m infra.tenants add "
                "ACCOUNT_SID, token on stdin); the reconciler then sends their replies.",
                self._ours("TwilioCredentialsRefused", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "UndeliveredReplies",
                "Twilio reported a message we sent as failed or undelivered (its status callback): "
                "see the conversation's last_delivery_error and the turn's deliveries (infra.runs show).",
                self._ours("UndeliveredReplies", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "ToolCallsInDoubt",
                "A tool call with side effects was sent and got no answer (a timeout, a 5xx, an attempt "
                "that ended while making it): it may or may not have been carried out, and it is never "
                "made again. The person was told it is being checked: look the call up in the ToolCalls "
                "table (status in_doubt) and at the business's endpoint, by its Idempotency-Key.",
                self._ours("ToolCallsInDoubt", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "DeadLetteredBatches",
                "A batch kept failing and was set aside (Turns status dead_lettered; its messages stay "
                "in StagedMessages with failed_in): MAX_BATCH_ATTEMPTS failures that were no outage, or "
                "an outage longer than MAX_PENDING_SECONDS (the turn's dead_letter_reason says which). "
                "Once fixed: python -m infra.runs redrive <conversation id>.",
                self._ours("DeadLetteredBatches", "Sum", FIVE_MINUTES),
            ),
        ]

    def _spend_alarms(self) -> list[cloudwatch.Alarm]:
        """Any batch a cost limit stopped (a person's, a tenant's, everyone's:
        functions/guards/limits.py), and a tenant, or all of them, at an hourly ceiling of AI
        calls or tokens."""
        return [
            self._alarm(
                "CostLimitReached",
                "A batch got no AI call because a cost limit was full (the conversation's or the "
                "sender's AI calls an hour, or a tenant's or everyone's ceiling: the turn's `limited` says "
                "which). Its person got no reply (LIMITED_REPLY, if set, once an hour); the batch is not "
                "retried. One person over MAX_AI_CALLS_PER_HOUR_PER_CONVERSATION is usually a flood; many "
                "is a limit set too low.",
                self._ours("CostLimitReached", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "TenantCeilingReached",
                "A tenant reached its AI calls, tokens or new conversations an hour "
                "(MAX_AI_CALLS_PER_HOUR_PER_TENANT, MAX_AI_TOKENS_PER_HOUR_PER_TENANT, "
                "MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT): its batches "
                "are recorded limited, unanswered, until the hour is over. The alarm's contributors name the "
                "tenant (AccountSid); see its senders.",
                self._by_tenant("TenantCeilingReached", FIVE_MINUTES),
            ),
            self._alarm(
                "AICallsCeilingReached",
                "All tenants together reached MAX_AI_CALLS_PER_HOUR: every batch is recorded limited, "
                "unanswered, until the hour is over.",
                self._ours("AICallsCeilingReached", "Sum", FIVE_MINUTES),
            ),
            self._alarm(
                "TokenCeilingReached",
                "A tenant (MAX_AI_TOKENS_PER_HOUR_PER_TENANT) or all tenants together "
                "(MAX_AI_TOKENS_PER_HOUR) reached the tokens OpenAI may bill an hour: their batches are "
                "recorded limited, unanswered, until the hour is over (a tenant's: TenantCeilingReached "
                "names it).",
                self._ours("TokenCeilingReached", "Sum", FIVE_MINUTES),
            ),
        ]

    def _ours(self, name: str, statistic: str, period: Duration) -> cloudwatch.Metric:
        """A metric our functions emit with Powertools (EMF, the stack's namespace, dimension
        `service`)."""
        return cloudwatch.Metric(
            namespace=self.namespace,
            metric_name=name,
            dimensions_map={"service": SERVICE},
            statistic=statistic,
            period=period,
        )

    def _by_tenant(self, name: str, period: Duration) -> cloudwatch.MathExpression:
        """A count our functions emit by Tenant (functions/observability.py count_by_tenant),
        as a Metrics Insights query grouped by Tenant: each tenant is a contributor of the one
        alarm, a tenant registered after the deploy too, with no alarm to add. The query reads
        the stack's own namespace only."""
        return cloudwatch.MathExpression(
            expression=f'SELECT SUM("{name}") FROM SCHEMA("{self.namespace}", service, Tenant) '
            f"WHERE service = '{SERVICE}' GROUP BY Tenant",
            using_metrics={},
            period=period,
        )


def _sum_of(metrics: list[cloudwatch.IMetric], period: Duration) -> cloudwatch.MathExpression:
    """One alarm may sum at most 10 metrics."""
    assert len(metrics) <= 10, "split this alarm"
    return cloudwatch.MathExpression(
        expression=" + ".join(f"m{i}" for i in range(len(metrics))),
        using_metrics={f"m{i}": metric for i, metric in enumerate(metrics)},
        period=period,
    )


def _throttles(function: lambda_.Function) -> cloudwatch.Metric:
    return function.metric_throttles(period=FIVE_MINUTES, statistic="Sum")
