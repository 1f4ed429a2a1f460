"""What a failed run's error says about its batch (functions/batching/rules/failures.py), on
every error the state machine's Catch can hand to Record Failed Batch, and when the
reconciler tries a batch again after an outage."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from functions.batching.rules.failures import (
    FailureKind,
    classify,
    pending_too_long,
    retry_delay_seconds,
    retry_due,
)
from infra.statemachine import DEFINITION_FILE

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


def lambda_cause(error_type: str, message: str) -> str:
    """A Lambda error's Cause, as the Catch passes it on."""
    return json.dumps({"errorMessage": message, "errorType": error_type})


def _retried_by_the_state_machine() -> set[str]:
    """The errors a Retry of the state machine's definition names: what it waits out."""
    states = json.loads(DEFINITION_FILE.read_text())["States"].values()
    return {error for state in states for retry in state.get("Retry", []) for error in retry["ErrorEquals"]}


# Retried, but not an outage once the retries are spent: every error, and DynamoDB's
# catch-all for what it does not name (a refusal as well as a failure).
RETRIED_NOT_AN_OUTAGE = {"States.ALL", "DynamoDB.AmazonDynamoDBException"}


@pytest.mark.parametrize(
    "error",
    [
        *sorted(_retried_by_the_state_machine() - RETRIED_NOT_AN_OUTAGE),
        # Not retried by a state, and an outage all the same: the state machine's own
        # timeouts, a lock lost to a run that took over, DynamoDB and botocore as a function
        # raises them.
        "States.Timeout",
        "States.HeartbeatTimeout",
        "ProcessingLockLost",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "EndpointConnectionError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
    ],
)
def test_an_outage_is_transient(error):
    assert classify(error, lambda_cause(error, "whatever it says")) is FailureKind.TRANSIENT


@pytest.mark.parametrize("code", ["ThrottlingException", "ProvisionedThroughputExceededException"])
def test_a_client_error_that_says_throttled_is_transient(code):
    cause = lambda_cause("ClientError", f"An error occurred ({code}) when calling the Query operation: Rate")

    assert classify("ClientError", cause) is FailureKind.TRANSIENT


def test_a_client_error_that_says_something_else_counts():
    cause = lambda_cause("ClientError", "An error occurred (ValidationException) when calling the Query")

    assert classify("ClientError", cause) is FailureKind.COUNTED


@pytest.mark.parametrize("error", ["AIPermanentError", "TwilioPermanentError"])
def test_a_vendor_refusal_is_permanent(error):
    # OpenAI's 4xx other than 429 (and 429 insufficient_quota), Twilio's permanent codes.
    assert classify(error, lambda_cause(error, "400 invalid_request_error")) is FailureKind.PERMANENT


def test_a_model_openai_does_not_serve_is_the_configuration():
    assert classify("AIModelUnavailable") is FailureKind.CONFIGURATION


@pytest.mark.parametrize(
    "error",
    [
        "ConversationNotFound",
        "SecretOutsideTenant",
        "ValidationError",  # a pydantic model refused its input
        "KeyError",
        "TypeError",
        "States.Runtime",
        "States.TaskFailed",
        "States.DataLimitExceeded",
        "DynamoDB.ConditionalCheckFailedException",
        "DynamoDB.ValidationException",
        "Unknown",  # no error at all
        "",
    ],
)
def test_anything_else_counts_an_attempt(error):
    assert classify(error, lambda_cause(error, "Throttled? no")) is FailureKind.COUNTED


def test_the_delay_doubles_from_the_first_up_to_the_cap():
    delays = [retry_delay_seconds(n, first_delay=60, max_delay=1800) for n in range(0, 9)]

    assert delays == [0, 60, 120, 240, 480, 960, 1800, 1800, 1800]
    assert retry_delay_seconds(10_000, first_delay=60, max_delay=1800) == 1800  # no overflow


def test_a_batch_is_due_once_its_delay_has_passed():
    last = NOW - timedelta(seconds=119)

    assert retry_due(0, None, NOW, first_delay=60, max_delay=1800)
    assert retry_due(1, last, NOW, first_delay=60, max_delay=1800)
    assert not retry_due(2, last, NOW, first_delay=60, max_delay=1800)  # 120 s after the second
    assert retry_due(2, last, NOW + timedelta(seconds=1), first_delay=60, max_delay=1800)


def test_a_batch_is_pending_too_long_from_max_pending_seconds_on():
    six_hours = 6 * 3600

    assert not pending_too_long(NOW - timedelta(seconds=six_hours - 1), NOW, six_hours)
    assert pending_too_long(NOW - timedelta(seconds=six_hours), NOW, six_hours)
