"""What a burst costs in counts that do not depend on the machine: state transitions and
Lambda invocations per run, AWS calls per webhook. Timings stay in `make bench`."""

from __future__ import annotations

import time

import pytest

from infra.local.lambdas import invoke
from tests.support.costs import AwsCallCounter, run_counts, webhook_event
from tests.support.local_stack import OUR_WHATSAPP

pytestmark = pytest.mark.emulator

# Wait, Acquire, Burst Over?, Query, Merge, Generate, Send, Record, Close
ANSWERED_BURST_TRANSITIONS = 9
ANSWERED_BURST_LAMBDAS = 7  # all but the Choice and the Query (a direct DynamoDB integration)
PER_EXTENSION_TRANSITIONS = 3  # Wait, Acquire, Burst Over?
# Generate Reply failing with NewerFragments is caught: Answer Again With Newer Fragments,
# Query, Merge, Generate; Merge and Generate. Only the bursts that regenerate pay for it.
PER_REGENERATION_TRANSITIONS, PER_REGENERATION_LAMBDAS = 4, 2


def burst(harness, rules: dict, gaps: list[float]) -> str:
    """A conversation with `rules` receives one fragment after each gap, over HTTP."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching=rules)
    for number, gap in enumerate(gaps):
        time.sleep(gap)
        assert harness.send(user, f"fragment {number}").status_code == 200
    harness.wait_until_quiet(conversation_id, runs=1)
    assert len(harness.replies_to(user)) == 1
    return conversation_id


@pytest.mark.parametrize(
    ("rules", "gaps"),
    [
        # 2 s: three sends fit in it even on a slow machine (CI once split them at 1 s).
        ({"mode": "fixed", "window_seconds": 2, "max_wait_seconds": 10}, [0, 0.1, 0.1]),
        # Quiet mode without an extension: no fragment after the first moves the end.
        ({"mode": "quiet", "quiet_seconds": 1, "typing_gap_seconds": 0, "max_wait_seconds": 10}, [0]),
        # Adaptive: what it learns is written with the processing lock, in the same step.
        ({"mode": "adaptive", "quiet_seconds": 1, "max_wait_seconds": 10}, [0]),
    ],
    ids=["fixed", "quiet", "adaptive"],
)
def test_an_answered_burst_takes_nine_transitions_and_seven_lambda_invocations(harness, rules, gaps):
    conversation_id = burst(harness, rules, gaps)

    counts = run_counts(harness.stack, conversation_id)

    assert (counts.runs, counts.extensions) == (1, 0)
    assert counts.transitions == ANSWERED_BURST_TRANSITIONS
    assert counts.lambda_invocations == ANSWERED_BURST_LAMBDAS


def test_each_quiet_mode_extension_takes_three_transitions(harness):
    rules = {"mode": "quiet", "quiet_seconds": 1.5, "typing_gap_seconds": 0, "max_wait_seconds": 20}
    # The run's first wait ends before the last fragment's quiet period: it waits again.
    conversation_id = burst(harness, rules, [0, 1.0, 1.0])

    counts = run_counts(harness.stack, conversation_id)

    assert counts.runs == 1 and counts.extensions >= 1
    assert counts.transitions == ANSWERED_BURST_TRANSITIONS + PER_EXTENSION_TRANSITIONS * counts.extensions


def test_one_openai_retry_adds_one_transition_and_one_invocation(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?"])
    harness.stack.openai.inject({"status": 503})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert harness.failures_in(run["executionArn"]) == ["AIRetryableError"]  # the retry happened
    counts = run_counts(harness.stack, conversation_id)
    assert counts.transitions == ANSWERED_BURST_TRANSITIONS + 1
    assert counts.lambda_invocations == ANSWERED_BURST_LAMBDAS + 1


def test_a_reply_discarded_for_a_newer_fragment_adds_four_transitions_and_two_invocations(harness, configure):
    configure(BATCH_WINDOW_SECONDS="1", ON_NEWER="merge")
    user = harness.new_user()
    conversation_id = harness.send_while_generating(user, "hello", "one more thing")
    harness.wait_until_quiet(conversation_id, runs=1)

    counts = run_counts(harness.stack, conversation_id)

    assert (counts.runs, counts.regenerations) == (1, 1)
    assert counts.transitions == ANSWERED_BURST_TRANSITIONS + PER_REGENERATION_TRANSITIONS
    assert counts.lambda_invocations == ANSWERED_BURST_LAMBDAS + PER_REGENERATION_LAMBDAS


def test_the_webhook_makes_four_aws_calls_for_a_windows_first_message_and_three_later(harness, configure):
    configure(BATCH_WINDOW_SECONDS="600")  # the window stays open while we count
    counter = AwsCallCounter.installed()
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    invoke("Webhook", webhook_event(harness.stack, harness.new_user(), OUR_WHATSAPP, "warm-up"))  # caches

    made = []
    for body in ("first", "second", "third"):
        (result, _), calls = counter.measure(
            lambda b=body: invoke("Webhook", webhook_event(harness.stack, user, OUR_WHATSAPP, b))
        )
        assert result["statusCode"] == 200
        made.append(calls)

    assert sum(made[0].values()) == 4, made[0]  # find, stage, open the window, start the run
    assert made[0]["stepfunctions:StartExecution"] == 1
    assert [sum(m.values()) for m in made[1:]] == [3, 3], made  # find, stage, count in the window
    harness.stack.client("dynamodb").delete_item(
        TableName="BatchWindows", Key={"conversation_id": {"S": conversation_id}}
    )
