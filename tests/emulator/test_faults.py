"""Failures on the emulator: lost locks, permanent Twilio errors, partial sends,
dead-lettering, and the reconciler that leaves nothing stranded."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from functions import clock
from functions.answer import turns
from functions.batching import batch_windows
from functions.batching.windows import execution_name
from functions.entry_points import reconciler as reconcile_module
from functions.entry_points.reconciler import redrive
from functions.intake import staged_messages
from functions.storage.models import BatchWindow
from infra.local.lambdas import invoke
from tests.support.waiting import wait_until

MESSAGING_SERVICE = "MG" + "3" * 32

pytestmark = pytest.mark.emulator


def test_a_run_that_lost_its_lock_does_not_overwrite_the_new_holder(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["slow one"])
    harness.stack.openai.inject({"delay": 1.5})
    arn = harness.start_run(conversation_id)

    def take_over_the_lock() -> None:
        while not turns.list_of(conversation_id):  # merged: the run is in Generate Reply
            time.sleep(0.05)
        harness.dynamodb.update_item(
            TableName="Conversations",
            Key={"conversation_id": {"S": conversation_id}},
            UpdateExpression="SET lock_owner = :other",
            ExpressionAttributeValues={":other": {"S": "the-new-holder"}},
        )

    thief = threading.Thread(target=take_over_the_lock)
    thief.start()
    run = harness.wait_for_run(arn)
    thief.join()

    assert run["status"] == "FAILED" and run["error"] == "ProcessingLockLost"
    assert harness.conversation_item(conversation_id)["lock_owner"]["S"] == "the-new-holder"
    assert harness.replies_to(user) == ["You said: slow one"]  # sent once, and not again
    assert staged_messages.pending(conversation_id) == []  # answered: no later window repeats it


@pytest.mark.parametrize("code", [21610, 63014, 21211, 21614, 21617])
def test_a_permanent_twilio_error_is_not_retried_and_is_recorded(harness, code):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?"])
    harness.stack.twilio.inject({"status": 400, "code": code})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "TwilioPermanentError"
    assert harness.failures_in(run["executionArn"]) == ["TwilioPermanentError"]
    conversation = harness.conversation_item(conversation_id)
    assert conversation["last_delivery_error"]["N"] == str(code)
    assert "lock_owner" not in conversation
    assert staged_messages.pending(conversation_id) == []  # set aside, not retried
    assert harness.replies_to(user) == []


def test_closed_whatsapp_window_sends_the_configured_template(harness, configure):
    configure(WHATSAPP_TEMPLATE_CONTENT_SID="HX" + "1" * 32, TWILIO_MESSAGING_SERVICE_SID=MESSAGING_SERVICE)
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["back after two days"])
    harness.stack.twilio.inject({"status": 400, "code": 63016})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    sent = [m for m in harness.stack.twilio.messages if m["to"] == user]
    assert [m["content_sid"] for m in sent] == ["HX" + "1" * 32]
    assert harness.conversation_item(conversation_id)["last_delivery_error"]["N"] == "63016"


def test_closed_whatsapp_window_without_template_is_recorded(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["anyone?"])
    harness.stack.twilio.inject({"status": 400, "code": 63016})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "TwilioPermanentError"
    assert harness.conversation_item(conversation_id)["last_delivery_error"]["N"] == "63016"


def test_a_send_that_fails_midway_sends_only_the_missing_parts_on_retry(harness, configure):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="1")  # a 503 leaves part 2 in doubt: a short wait
    user = harness.new_user()
    words = [f"w{i:04d}" for i in range(700)]  # a reply of three parts
    conversation_id = harness.stage_directly(user, [" ".join(words)])
    harness.stack.twilio.inject({}, {"status": 503})  # part 1 goes out, part 2 fails once

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "SUCCEEDED"
    assert harness.failures_in(run["executionArn"]) == ["TwilioRetryableError"]
    parts = harness.replies_to(user)
    assert len(parts) == 3 and len(set(parts)) == 3
    assert " ".join(parts) == "You said: " + " ".join(words)


def test_a_batch_that_keeps_failing_is_dead_lettered_after_the_attempts(harness, configure):
    configure(MAX_BATCH_ATTEMPTS="2")
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["doomed"])
    harness.set_conversation(conversation_id, openai_api_key_secret="no-such-secret")

    first = harness.wait_for_run(harness.start_run(conversation_id))
    assert first["status"] == "FAILED"
    assert len(staged_messages.pending(conversation_id)) == 1  # kept for another attempt
    second = harness.wait_for_run(harness.start_run(conversation_id))

    assert second["status"] == "FAILED"
    assert staged_messages.pending(conversation_id) == []
    (staged,) = harness.staged(conversation_id)
    assert staged["body"]["S"] == "doomed" and "failed_in" in staged  # set aside, visible
    dead = [t for t in turns.list_of(conversation_id) if t.status == "dead_lettered"]
    assert len(dead) == 1 and dead[0].message_count == 1

    harness.set_conversation(conversation_id, openai_api_key_secret=None)  # the operator fixes it
    assert redrive(conversation_id)["requeued"] == 1

    runs = harness.wait_until_quiet(conversation_id, runs=3)
    assert runs[-1]["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: doomed"]
    assert staged_messages.pending(conversation_id) == []


def reconcile() -> dict[str, int]:
    """One pass of the Reconciler function, run as its schedule runs it (so its AWS calls
    are recorded and evaluated against its role)."""
    summary, error = invoke("Reconciler", {})
    assert error is None, summary
    return summary  # type: ignore[no-any-return]


def test_the_reconciler_opens_a_window_for_stranded_messages(harness):
    user = harness.new_user()
    long_ago = clock.iso(clock.now() - timedelta(minutes=10))
    conversation_id = harness.stage_directly(user, ["stranded"], received_at=long_ago)
    assert harness.window_of(conversation_id) is None

    summary = reconcile()

    assert summary["windows_opened"] >= 1
    runs = harness.wait_until_quiet(conversation_id, runs=1)
    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: stranded"]


def test_the_reconciler_leaves_a_conversation_whose_run_is_waiting_alone(harness, monkeypatch):
    """A waiting run will take its conversation's pending messages: the reconciler checks
    that it runs and does nothing more, however long its burst lasts (it used to open a
    window and start a run for it again, three calls on every pass for every waiting run,
    which held back the stranded conversations behind them)."""
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    harness.set_conversation(conversation_id, batching={"mode": "fixed", "window_seconds": 600})
    assert harness.send(user, "a long burst").status_code == 200
    (run,) = harness.runs(conversation_id)
    (message,) = staged_messages.pending(conversation_id)
    long_ago = clock.iso(clock.now() - timedelta(minutes=10))  # past the reconciler's threshold
    dynamodb = harness.stack.client("dynamodb")
    key = {"conversation_id": {"S": conversation_id}}
    dynamodb.update_item(
        TableName="BatchWindows", Key=key, UpdateExpression="SET opened_at = :t",
        ExpressionAttributeValues={":t": {"S": long_ago}},
    )  # fmt: skip
    dynamodb.update_item(
        TableName="StagedMessages", Key={**key, "message_sid": {"S": message.message_sid}},
        UpdateExpression="SET pending_since = :t", ExpressionAttributeValues={":t": {"S": long_ago}},
    )  # fmt: skip
    # The run parks its task token on the window once its wait begins: read the window after.
    window = wait_until(lambda: (w := harness.window_of(conversation_id)) and w.task_token and w, timeout=10)
    tried: list[str] = []
    original = reconcile_module.open_window_due_now
    monkeypatch.setattr(
        reconcile_module, "open_window_due_now", lambda cid: tried.append(cid) or original(cid)
    )

    reconcile()

    assert conversation_id not in tried
    assert [r["status"] for r in harness.runs(conversation_id)] == ["RUNNING"]
    assert harness.window_of(conversation_id) == window
    harness.stack.client("stepfunctions").stop_execution(executionArn=run["executionArn"])
    batch_windows.close(conversation_id, window.window_id)


def test_the_reconciler_closes_a_window_whose_run_has_ended(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    opened = clock.now() - timedelta(minutes=30)
    window_id = "0000000000001-dead00"
    window = BatchWindow(
        conversation_id=conversation_id,
        window_id=window_id,
        opened_at=clock.iso(opened),
        opened_ms=clock.epoch_ms(opened),
        last_message_ms=clock.epoch_ms(opened),
        message_count=0,
        execution_name=execution_name(conversation_id, window_id),  # a run that never started
        expires_at=int(time.time()) + 3600,
    )
    assert batch_windows.open(window) is None

    reconcile()

    assert harness.window_of(conversation_id) is None
