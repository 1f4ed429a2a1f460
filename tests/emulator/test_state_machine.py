"""The state machine on the emulator: the real ASL file, the real handlers, moto's
interpreter. Runs are started by hand on staged messages, with no batch wait."""

from __future__ import annotations

import json
import threading
import time

import pytest

from functions.answer import turns
from functions.config import get_settings
from functions.intake import staged_messages
from functions.storage.tables import assistant_turn_id, user_turn_id
from functions.tenancy import conversations

pytestmark = pytest.mark.emulator


def test_happy_path_answers_the_batch_once_and_cleans_up(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(
        user, ["Hey", "I have a question about my order", "Order #12345"]
    )

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.ai_inputs(conversation_id) == ["Hey\nI have a question about my order\nOrder #12345"]
    assert harness.replies_to(user) == ["You said: Hey\nI have a question about my order\nOrder #12345"]
    assert harness.states_entered(run["executionArn"]) == [
        "Wait For The Burst To End",
        "Acquire Processing Lock",
        "Burst Over?",
        "Query Staged Messages",
        "Merge Staged Messages",
        "Generate Reply",
        "Send Reply",
        "Record Turns And Release Lock",
        "Close Batch Window",
    ]
    conversation = harness.conversation_item(conversation_id)
    assert "lock_owner" not in conversation
    assert conversation["turn_count"]["N"] == "2"
    assert staged_messages.pending(conversation_id) == []
    assert all("body" not in item for item in harness.staged(conversation_id))  # tombstones only
    user_turn, assistant_turn = turns.list_of(conversation_id)
    assert user_turn.role == "user" and user_turn.status == "answered"
    assert user_turn.message_count == 3 and len(user_turn.message_sids) == 3
    assert user_turn.first_message_sid == user_turn.message_sids[0]
    assert assistant_turn.role == "assistant" and assistant_turn.status == "sent"
    assert assistant_turn.message_sids == [m["sid"] for m in harness.stack.twilio.messages]
    assert assistant_turn.total_tokens > 0 and (assistant_turn.processing_time_ms or 0) >= 0


def test_run_waits_for_a_held_lock_and_proceeds_after_release(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["first", "second"])
    assert conversations.acquire_lock(conversation_id, "another-run", int(time.time()), 600, "now")

    arn = harness.start_run(conversation_id)
    time.sleep(2.5)
    assert harness.sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    assert harness.ai_inputs(conversation_id) == []  # nothing processed while the lock is held
    harness.dynamodb.update_item(
        TableName="Conversations",
        Key={"conversation_id": {"S": conversation_id}},
        UpdateExpression="REMOVE lock_owner, lock_expires_at",
    )

    run = harness.wait_for_run(arn)
    assert run["status"] == "SUCCEEDED"
    assert "ProcessingLockHeld" in harness.failures_in(arn)
    assert harness.ai_inputs(conversation_id) == ["first\nsecond"]
    assert len(harness.replies_to(user)) == 1


def test_a_lock_whose_lease_expired_is_taken_over(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello"])
    assert conversations.acquire_lock(conversation_id, "crashed-run", int(time.time()) - 700, 600, "then")

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == []
    assert len(harness.replies_to(user)) == 1


def test_openai_503_twice_then_success_is_retried_visibly(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["are you there?"])
    harness.stack.openai.inject({"status": 503}, {"status": 503})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["AIRetryableError", "AIRetryableError"]
    assert harness.ai_inputs(conversation_id) == ["are you there?"] * 3
    assert harness.replies_to(user) == ["You said: are you there?"]


def test_openai_permanent_failure_sends_the_fallback_and_sets_the_batch_aside(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["one", "two"])
    # A request OpenAI refuses for good (a 401 is the key's fault instead: kept, see
    # tests/e2e/tenancy/test_stale_credentials.py).
    harness.stack.openai.inject({"status": 400, "code": "invalid_prompt"})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED"
    assert run["error"] == "AIPermanentError"
    assert "OpenAI HTTP 400 invalid_prompt" in run["cause"]
    assert harness.failures_in(run["executionArn"]) == ["AIPermanentError"]  # not retried
    assert "Record Failed Batch" in harness.states_entered(run["executionArn"])
    assert "lock_owner" not in harness.conversation_item(conversation_id)
    assert harness.replies_to(user) == [get_settings().fallback_reply]
    # Kept with their bodies, recorded as failed, and no longer pending (not retried).
    staged = harness.staged(conversation_id)
    assert sorted(i["body"]["S"] for i in staged) == ["one", "two"]
    assert all("failed_in" in i for i in staged)
    assert staged_messages.pending(conversation_id) == []
    (user_turn,) = turns.list_of(conversation_id)
    assert user_turn.status == "failed" and user_turn.error == "AIPermanentError"
    assert user_turn.message_count == 2
    windows = harness.dynamodb.get_item(
        TableName="BatchWindows", Key={"conversation_id": {"S": conversation_id}}
    )
    assert "Item" not in windows  # closed, so the next message opens a new one


def test_twilio_429_then_success_sends_one_reply(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["ping"])
    harness.stack.twilio.inject({"status": 429, "code": 20429})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]
    assert harness.replies_to(user) == ["You said: ping"]
    assert len(harness.ai_inputs(conversation_id)) == 1  # the retry did not ask OpenAI again


def test_a_long_reply_is_sent_in_parts_in_order(harness):
    user = harness.new_user()
    words = [f"word{i}" for i in range(600)]
    conversation_id = harness.stage_directly(user, [" ".join(words)])

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    parts = harness.replies_to(user)
    assert len(parts) > 1 and all(len(p) <= 1600 for p in parts)
    assert " ".join(parts) == "You said: " + " ".join(words)


def test_a_message_staged_during_processing_gets_the_next_window(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["before"])
    harness.stack.openai.inject({"delay": 1.5})  # hold the run inside Generate Reply
    first = harness.start_run(conversation_id)

    def arrive_during_processing() -> None:
        while not turns.list_of(conversation_id):  # merged: the run is in Generate Reply
            time.sleep(0.05)
        harness.send(user, "during")

    sender = threading.Thread(target=arrive_during_processing)
    sender.start()
    assert harness.wait_for_run(first)["status"] == "SUCCEEDED"
    sender.join()

    runs = harness.wait_until_quiet(conversation_id, runs=2)
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == ["before", "during"]
    assert staged_messages.pending(conversation_id) == []


def test_a_message_counted_after_its_batch_took_it_opens_one_empty_window_not_an_endless_chain(harness):
    """The webhook stages a message, then counts it in the window: between the two, the
    run's query may take it. The window then counts more than its batch merged, with
    nothing pending, and Close Batch Window opens the next window in case the message is
    still on its way to the index. That window's run finds nothing and must stop there
    (it used to open another on the same guess, and so on, every few seconds, for ever)."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello"])
    harness.stack.openai.inject({"delay": 1.0})  # hold the run inside Generate Reply
    first = harness.start_run(conversation_id)
    while not turns.list_of(conversation_id):  # merged: the batch has taken the message
        time.sleep(0.05)
    harness.stack.client("dynamodb").update_item(
        TableName="BatchWindows",
        Key={"conversation_id": {"S": conversation_id}},
        UpdateExpression="ADD message_count :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )  # the webhook's count, late

    assert harness.wait_for_run(first)["status"] == "SUCCEEDED"
    runs = harness.wait_until_quiet(conversation_id, runs=2, timeout=20)
    time.sleep(2.5)  # a window and a run's length: no third run follows

    assert (
        [r["status"] for r in harness.runs(conversation_id)]
        == ["SUCCEEDED", "SUCCEEDED"]
        == [r["status"] for r in runs]
    )
    assert harness.ai_inputs(conversation_id) == ["hello"]
    assert harness.window_of(conversation_id) is None


def _answered_batch_event(harness, bodies: list[str]) -> tuple[str, str, dict]:
    """Run a batch of `bodies` with a queue subscribed to batch.answered; its event."""
    sqs, events = harness.stack.client("sqs"), harness.stack.client("events")
    queue_url = sqs.create_queue(QueueName="answered-batches")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="answered",
        EventBusName=get_settings().event_bus_name,
        EventPattern=json.dumps({"detail-type": ["batch.answered"]}),
    )
    events.put_targets(
        Rule="answered",
        EventBusName=get_settings().event_bus_name,
        Targets=[{"Id": "queue", "Arn": queue_arn}],
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, bodies)

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=2)["Messages"]
    details = [json.loads(m["Body"])["detail"] for m in received]
    return user, conversation_id, next(d for d in details if d["conversation_id"] == conversation_id)


def test_an_answered_batch_is_announced_with_keys_and_counts_only(harness):
    user, conversation_id, detail = _answered_batch_event(harness, ["where is", "my parcel"])

    assert len(detail["message_sids"]) == 2 and len(detail["reply_message_sids"]) == 1
    assert detail["message_count"] == 2 and detail["merged_chars"] == len("where is\nmy parcel")
    assert detail["reply_chars"] == len("You said: where is\nmy parcel")
    assert detail["tenant_account_sid"] == harness.stack.config.twilio_account_sid
    assert not {"merged_body", "reply_body", "user_address"} & set(detail)
    assert user not in json.dumps(detail) and "parcel" not in json.dumps(detail)


def test_a_conversation_with_thousands_of_turns_keeps_working(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["still there?"])
    dynamodb = harness.stack.client("dynamodb")
    earlier = [
        {
            "PutRequest": {
                "Item": {
                    "conversation_id": {"S": conversation_id},
                    "turn_id": {"S": turn_id(f"0000000000{n:03d}-old")},
                    "role": {"S": role},
                    "body": {"S": "x" * 400},
                }
            }
        }
        for n in range(1000)
        for role, turn_id in (("user", user_turn_id), ("assistant", assistant_turn_id))
    ]
    for start in range(0, len(earlier), 25):  # 2,000 turns, 800 KB: twice an item's limit
        dynamodb.batch_write_item(RequestItems={"Turns": earlier[start : start + 25]})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: still there?"]
    assert len(turns.list_of(conversation_id)) == 2002  # read across pages (a page holds 1 MB)
    assert "messages" not in harness.conversation_item(conversation_id)  # no growing list
