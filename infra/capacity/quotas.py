"""The AWS quotas the capacity model compares each component's use with: default values for
us-east-1 (and the other large Regions where a quota differs by Region), per account and
Region unless said otherwise, whether AWS raises them on request, and where each was read.
Checked on CHECKED_ON with the project's documentation search; check the pages (and your
account's Service Quotas console, which shows the values applied to it) before relying on
them. New accounts start lower on some (Lambda concurrency, Step Functions transitions)."""

from __future__ import annotations

from dataclasses import dataclass

CHECKED_ON = "2026-11-26"


@dataclass(frozen=True)
class Quota:
    name: str  # as the Service Quotas console names it
    value: float  # the sustained rate (a token bucket's refill), or the count
    unit: str
    raisable: bool
    source: str  # the page it was read on
    code: str = ""  # the Service Quotas code, where known ("L-...")
    service_code: str = ""  # Service Quotas' service code
    note: str = ""
    raised_by: str = ""  # how, when it is not a Service Quotas request

    def request(self) -> str:
        """How to raise it: the Service Quotas request, or that it cannot be."""
        if not self.raisable:
            return "not raisable (a hard limit): design around it"
        if self.raised_by:
            return self.raised_by
        where = f"Service Quotas › {self.service_code or 'the service'} › {self.name!r}"
        return where + (f" ({self.code})" if self.code else "")


STEP_FUNCTIONS_PAGE = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"
START_EXECUTION = Quota(
    "StartExecution throttle token refill rate per second",
    300,
    "StartExecution/s",
    True,
    STEP_FUNCTIONS_PAGE,
    service_code="states",
    note="bucket 1,300; other Regions: 150/s, bucket 800",
)
STATE_TRANSITIONS = Quota(
    "StateTransition throttle token refill rate per second",
    1_500,
    "state transitions/s",
    True,
    STEP_FUNCTIONS_PAGE,
    service_code="states",
    note="Standard, bucket 5,000; other Regions: 500/s, bucket 800. The copy of the page the "
    "search reached says 1,500/s; AWS has raised it since in some Regions: read yours in "
    "Service Quotas. New accounts start lower and are raised automatically with use.",
)
SEND_TASK_SUCCESS = Quota(
    "SendTaskSuccess throttle token refill rate per second",
    500,
    "SendTaskSuccess/s",
    True,
    STEP_FUNCTIONS_PAGE,
    service_code="states",
    note="bucket 3,000",
)
LAMBDA_CONCURRENCY = Quota(
    "Concurrent executions",
    1_000,
    "concurrent executions",
    True,
    "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
    "L-B99A9384",
    "lambda",
    note="all functions of the account together; new accounts start lower. Each function "
    "also scales by at most 1,000 instances every 10 s "
    "(https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html): a step from zero "
    "to 5,000 concurrent takes 50 s",
)
API_GATEWAY_THROTTLE = Quota(
    "Throttle rate",
    10_000,
    "requests/s",
    True,
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html",
    "L-8A5B8E43",
    "apigateway",
    note="every API of the account in the Region; burst 5,000, set by AWS; 2,500/s in some newer Regions",
)
DYNAMODB_TABLE_WRITES = Quota(
    "Table-level write throughput limit",
    40_000,
    "write request units/s per table",
    True,
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html",
    "L-AB614373",
    "dynamodb",
    note="on-demand tables too. A new on-demand table serves 4,000 writes/s (12,000 reads/s) at "
    "once and up to double its previous peak within 30 minutes "
    "(https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb): warm the "
    "tables (warm throughput) before a launch",
)
DYNAMODB_TABLE_READS = Quota(
    "Table-level read throughput limit",
    40_000,
    "read request units/s per table",
    True,
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html",
    "L-CF0CBE56",
    "dynamodb",
)
DYNAMODB_PARTITION_WRITES = Quota(
    "Write request units per partition",
    1_000,
    "write request units/s per partition (one item at most that)",
    False,
    "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb",
    note="3,000 read units/s; transactions on one item conflict (TransactionConflict) well below it",
)
SECRETS_MANAGER_READS = Quota(
    "Combined rate of DescribeSecret and GetSecretValue API requests",
    10_000,
    "requests/s",
    False,
    "https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html",
)
EVENTBRIDGE_PUT_EVENTS = Quota(
    "PutEvents throttle limit in transactions per second",
    10_000,
    "PutEvents/s",
    True,
    "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html",
    "L-9B653E91",
    "events",
    note="us-east-1, us-west-2, eu-west-1; 2,400/s or less elsewhere",
)

# Read on 2026-12-05, as the vendors' limits below.
STS_REQUESTS = Quota(
    "AWS STS requests per second (AssumeRole, GetCallerIdentity, GetSessionToken... together)",
    600,
    "requests/s",
    True,
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html",
    note="per account and Region, made with AWS credentials (a function's role assuming a tenant "
    'reader counts; AWS services assuming roles do not). Not in Service Quotas: "To request an '
    'increase to STS request quotas, please open a ticket with AWS support" (the same page); '
    "AWS's knowledge center says service rate limits cannot be raised: plan as if it could not",
    raised_by="an AWS Support ticket (not in Service Quotas; not assured): take fewer sessions",
)

ALL = (
    START_EXECUTION,
    STATE_TRANSITIONS,
    SEND_TASK_SUCCESS,
    LAMBDA_CONCURRENCY,
    API_GATEWAY_THROTTLE,
    DYNAMODB_TABLE_WRITES,
    DYNAMODB_TABLE_READS,
    DYNAMODB_PARTITION_WRITES,
    SECRETS_MANAGER_READS,
    EVENTBRIDGE_PUT_EVENTS,
    STS_REQUESTS,
)

# The vendors' limits (not AWS's), as their pages stated them on 2026-12-05.


@dataclass(frozen=True)
class OpenAITier:
    """An OpenAI usage tier's rate limits for one model, per organisation (and project)."""

    name: str
    requests_per_minute: float
    tokens_per_minute: float


# gpt-6.1-terra (functions/default_model.py), as its model page lists them by usage tier
# (https://developers.openai.com/api/docs/models/gpt-6.1-terra, read through apidog's guide of
# 2026-10-27, https://apidog.com/blog/gpt-6-1-terra-api/: the page's own table was not reached).
# The limits are the organisation's, whatever its projects and keys; a usage tier rises with
# what the organisation has paid (https://developers.openai.com/api/docs/guides/rate-limits).
OPENAI_TIERS = (
    OpenAITier("Build", 5_000, 1_000_000),
    OpenAITier("Launch", 10_000, 4_000_000),
    OpenAITier("Grow", 15_000, 40_000_000),
)
# A deployment at hundreds of messages a second pays OpenAI millions a month: the highest
# tier listed. --openai-rpm and --openai-tpm set your organisation's own.
OPENAI_TIER = OPENAI_TIERS[-1]
OPENAI_LIMITS_PAGE = "https://platform.openai.com/settings/organization/limits"

# Twilio sends from one WhatsApp sender at 80 messages a second by default, up to 400 for text
# on request, and queues the rest (https://www.twilio.com/docs/whatsapp/best-practices-and-faqs,
# "What is the MPS limit for outbound WhatsApp messages?"); TWILIO_SENDER_MPS paces to it.
TWILIO_SENDER_MPS = 80
TWILIO_SENDER_MPS_ON_REQUEST = 400

# Metrics are written as Embedded Metric Format log lines (aws-lambda-powertools), not with
# PutMetricData: its quota does not apply, their cost is the logs' (infra/prices.py: Lambda's
# logs in tiers, the state machine's at CLOUDWATCH_LOGS_PER_GB).
CLOUDWATCH_LOGS_PER_GB = (
    0.50  # us-east-1, Standard class, first tier (https://aws.amazon.com/cloudwatch/pricing/)
)
