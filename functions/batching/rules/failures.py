"""What a failed run's error says about its batch, and when the reconciler tries it again.

The failure path (Record Failed Batch) receives the error that the state machine's Catch
caught (`$.error`: its name and cause). Four kinds:

- PERMANENT: the vendor refused this batch for good (AIPermanentError, TwilioPermanentError):
  set aside at once.
- CONFIGURATION: the deployment is at fault (AIModelUnavailable; AICredentialsRefused and
  TwilioCredentialsRefused, a key or token the vendor refused even after it was read
  again): kept, nothing counted, retried by the reconciler until it is fixed.
- TRANSIENT: the outage, not the batch (timeouts, throttling, 5xx, a vendor unreachable,
  the state machine's retries exhausted on any of them): kept and retried by the reconciler
  with growing delays, until the batch has been pending MAX_PENDING_SECONDS.
- COUNTED: anything else (a bug, bad data, a secret outside its tenant): counts an attempt,
  set aside after MAX_BATCH_ATTEMPTS.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum


class FailureKind(StrEnum):
    PERMANENT = "permanent"
    CONFIGURATION = "configuration"
    TRANSIENT = "transient"
    COUNTED = "counted"


PERMANENT_ERRORS = frozenset({"AIPermanentError", "TwilioPermanentError"})
CONFIGURATION_ERRORS = frozenset({"AIModelUnavailable", "AICredentialsRefused", "TwilioCredentialsRefused"})
TRANSIENT_ERRORS = frozenset(
    {
        # Step Functions: a task's own timeout; Lambda reports an invocation stopped at its
        # timeout (or out of memory) as Sandbox.Timedout or Lambda.Unknown.
        "States.Timeout",
        "States.HeartbeatTimeout",
        "Sandbox.Timedout",
        "Lambda.Unknown",
        # The Lambda service itself (the state machine retries these first).
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.ClientExecutionTimeoutException",
        "Lambda.TooManyRequestsException",
        # The project's own retryable errors (functions/errors.py), once their Retry is spent.
        "AIRetryableError",
        "TwilioRetryableError",
        "ToolCallRetryableError",
        "ProcessingLockHeld",
        "ProcessingLockLost",
        "TransactionConflict",
    }
)
# AWS errors that say "throttled, busy or unreachable", however they are prefixed: a direct
# DynamoDB integration's `DynamoDB.ThrottlingException`, an SDK integration's
# `DynamoDb.ThrottlingException`, a function's botocore exception class name, or the code
# in a ClientError's message ("An error occurred (ThrottlingException) when calling ...").
_AWS_TRANSIENT = (
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "RequestLimitExceededException",
    "InternalServerError",
    "InternalServerErrorException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "TooManyRequestsException",
    "TransactionConflictException",
    "SdkClientException",
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
)
_CLIENT_ERROR_CODE = re.compile(r"An error occurred \((\w+)\)")


def classify(error_name: str, cause: str = "") -> FailureKind:
    """The kind of a failure, from the error name the Catch caught and its cause."""
    if error_name in PERMANENT_ERRORS:
        return FailureKind.PERMANENT
    if error_name in CONFIGURATION_ERRORS:
        return FailureKind.CONFIGURATION
    if error_name in TRANSIENT_ERRORS or error_name.rpartition(".")[2] in _AWS_TRANSIENT:
        return FailureKind.TRANSIENT
    if error_name == "ClientError":
        code = _CLIENT_ERROR_CODE.search(cause)
        if code and code.group(1) in _AWS_TRANSIENT:
            return FailureKind.TRANSIENT
    return FailureKind.COUNTED


def retry_delay_seconds(failures: int, first_delay: float, max_delay: float) -> float:
    """How long the reconciler waits after the `failures`-th transient failure in a row
    before it tries the batch again: first_delay, then twice as long each time, at most
    max_delay (60 s, 120 s, 240 s, ... with the defaults)."""
    if failures <= 0:
        return 0.0
    return float(min(first_delay * 2 ** min(failures - 1, 32), max_delay))


def retry_due(
    failures: int, last_failed_at: datetime | None, now: datetime, first_delay: float, max_delay: float
) -> bool:
    """Whether a batch that failed transiently `failures` times, the last at
    `last_failed_at`, may be tried again now."""
    if failures <= 0 or last_failed_at is None:
        return True
    wait = retry_delay_seconds(failures, first_delay, max_delay)
    return now >= last_failed_at + timedelta(seconds=wait)


def pending_too_long(pending_since: datetime, now: datetime, max_pending_seconds: float) -> bool:
    """Whether a batch whose oldest message has been waiting since `pending_since` has
    waited past MAX_PENDING_SECONDS: it is set aside at its next transient failure."""
    return (now - pending_since).total_seconds() >= max_pending_seconds
