"""An OpenAI outage through the local stack: fragments sent over the webhook while OpenAI
answers every request with 503, for longer than three runs spend on their retries. No run
sets the burst aside; the reconciler tries it again with growing delays, and once OpenAI
is back every fragment is answered, once, in one reply."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import requests

from functions import clock
from functions.answer import turns
from functions.intake import staged_messages
from infra.local.lambdas import invoke
from infra.local.stack import LocalStack

pytestmark = pytest.mark.e2e

FRAGMENTS = ["hi", "my order #12345", "it hasn't arrived"]
# Generate Reply's Retry on AIRetryableError: 6 retries after the first attempt.
ATTEMPTS_PER_RUN = 7


@pytest.fixture
def fast_retries(stack: LocalStack) -> Iterator[None]:
    """The state machine's Retry as deployed, its delays a hundredth as long."""
    stack.scale_retry_delays(0.01)
    yield
    stack.scale_retry_delays(1)


def openai_control(harness, path: str, body: dict) -> None:
    """The OpenAI stand-in's control API, over HTTP."""
    base = harness.stack.openai_url.removesuffix("/v1")
    requests.post(f"{base}/_control/{path}", json=body, timeout=10).raise_for_status()


def reconcile() -> dict[str, int]:
    summary, error = invoke("Reconciler", {})
    assert error is None, summary
    return summary  # type: ignore[no-any-return]


def ten_minutes_ago(harness, conversation_id: str, field: str) -> None:
    """Move a time the reconciler reads on the pending messages ten minutes back, instead
    of waiting: `pending_since` (it retries only messages that waited
    RECONCILE_AFTER_SECONDS, at least 10 s) or `last_failed_at` (the last failed run's
    delay). Their arrival time, which MAX_PENDING_SECONDS counts from, stays."""
    long_ago = {"S": clock.iso(clock.now() - timedelta(minutes=10))}
    for key in staged_messages.pending(conversation_id):
        harness.dynamodb.update_item(
            TableName="StagedMessages",
            Key={"conversation_id": {"S": conversation_id}, "message_sid": {"S": key.message_sid}},
            UpdateExpression="SET #field = :t",
            ExpressionAttributeNames={"#field": field},
            ExpressionAttributeValues={":t": long_ago},
        )


def retried_once_its_delay_is_over(harness, conversation_id: str) -> None:
    ten_minutes_ago(harness, conversation_id, "pending_since")
    assert reconcile()["windows_opened"] == 0  # not yet: the failed run's delay is not over
    ten_minutes_ago(harness, conversation_id, "last_failed_at")
    assert reconcile()["windows_opened"] == 1


def test_an_openai_outage_longer_than_three_runs_answers_every_fragment_once(
    harness, configure, fast_retries
):
    configure(
        BATCH_WINDOW_SECONDS="1",
        MAX_BATCH_ATTEMPTS="2",  # what used to set the burst aside after the second run
        TRANSIENT_RETRY_FIRST_SECONDS="60",  # the reconciler waits 1 minute, then 2, then 4
        TRANSIENT_RETRY_MAX_SECONDS="240",
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    openai_control(harness, "chaos", {"rate": 1.0, "faults": [{"status": 503}]})  # OpenAI down
    for fragment in FRAGMENTS:
        assert harness.send(user, fragment).status_code == 200

    (first,) = harness.wait_until_quiet(conversation_id, runs=1)
    assert first["status"] == "FAILED"
    assert harness.failures_in(first["executionArn"]) == ["AIRetryableError"] * ATTEMPTS_PER_RUN
    for run in (2, 3):
        retried_once_its_delay_is_over(harness, conversation_id)
        runs = harness.wait_until_quiet(conversation_id, runs=run)
        assert [r["status"] for r in runs] == ["FAILED"] * run
        assert len(staged_messages.pending(conversation_id)) == len(FRAGMENTS)  # none set aside

    openai_control(harness, "chaos", {"rate": 0})  # OpenAI is back
    retried_once_its_delay_is_over(harness, conversation_id)

    runs = harness.wait_until_quiet(conversation_id, runs=4)
    assert [r["status"] for r in runs] == ["FAILED", "FAILED", "FAILED", "SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: " + "\n".join(FRAGMENTS)]
    assert staged_messages.pending(conversation_id) == []
    assert [t for t in turns.list_of(conversation_id) if t.status == "dead_lettered"] == []
    assert len(harness.staged(conversation_id)) == len(FRAGMENTS)  # answered, as tombstones
    assert all("answered_in" in item for item in harness.staged(conversation_id))


@pytest.mark.parametrize("body", ['{"scale": 2}', '{"scale": -1}', '{"scale": "fast"}', "{}", "not json"])
def test_the_retry_delay_scale_refuses_what_is_not_a_share(stack: LocalStack, body: str):
    answer = requests.post(f"{stack.aws.url}/_local/retry_delay_scale", data=body, timeout=10)

    assert answer.status_code == 400 and "scale" in answer.json()["error"]
