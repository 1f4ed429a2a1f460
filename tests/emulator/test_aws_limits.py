"""AWS as it really behaves, where the emulator would let it pass: a Query page holds at
most 1 MB counted before its filter, an item at most 400 KB, and a wait's Lambda may
start after the wait has timed out."""

from __future__ import annotations

import time

import pytest

from functions import clock
from functions.batching import batch_windows
from functions.batching.rules.debounce import BatchingRules
from functions.batching.windows import new_window
from functions.intake import staged_messages

pytestmark = pytest.mark.emulator


def test_a_pending_message_behind_a_megabyte_of_answered_tombstones_is_answered_once(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    tombstones = [
        {
            "PutRequest": {
                "Item": {
                    "conversation_id": {"S": conversation_id},
                    "message_sid": {"S": f"SM{n:032x}"},  # they all sort before the new message
                    "answered_in": {"S": "0000000000000-old000"},
                    "expires_at": {"N": str(int(time.time()) + 86_400)},
                    "note": {"S": "x" * 200},  # about 300 bytes each: 6,000 of them pass 1 MB
                }
            }
        }
        for n in range(6_000)
    ]
    dynamodb = harness.stack.client("dynamodb")
    for start in range(0, len(tombstones), 25):
        dynamodb.batch_write_item(RequestItems={"StagedMessages": tombstones[start : start + 25]})

    late = "SM" + "f" * 32
    assert harness.send(user, "still waiting for my parcel", message_sid=late).status_code == 200
    runs = harness.wait_until_quiet(conversation_id, runs=1, timeout=30)

    assert harness.replies_to(user) == ["You said: still waiting for my parcel"]
    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert staged_messages.pending(conversation_id) == []


def test_fragments_adding_up_past_an_items_limit_are_answered_in_batches_in_order(harness, configure):
    configure(MAX_BATCH_BYTES="300000")
    bodies = [f"{n:03d} " + "y" * 9_996 for n in range(41)]  # 410,000 characters in one burst
    conversation_id = harness.stage_directly(harness.new_user(), bodies)  # all staged when the burst ends

    harness.start_run(conversation_id)
    runs = harness.wait_until_quiet(conversation_id, runs=2, timeout=90)

    answered = [
        line for turn in harness.ai_inputs(conversation_id, answered_only=True) for line in turn.split("\n")
    ]
    assert answered == bodies  # every fragment, once, in order, over two batches
    assert all(r["status"] == "SUCCEEDED" for r in runs)
    assert staged_messages.pending(conversation_id) == []  # nothing dead-lettered or left


def test_a_late_parking_never_replaces_the_token_of_a_later_wait(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, [])
    window = new_window(conversation_id, BatchingRules())
    assert batch_windows.open(window) is None  # opened, no run started: nothing else parks
    now = clock.epoch_ms(clock.now())

    newer = batch_windows.park_task_token(conversation_id, window.window_id, "token-of-the-second-wait", now)
    older = batch_windows.park_task_token(
        conversation_id, window.window_id, "token-of-the-first-wait", now - 1000
    )

    assert newer is not None and older is None
    parked = batch_windows.get(conversation_id)
    assert parked is not None and parked.task_token == "token-of-the-second-wait"
    batch_windows.close(conversation_id, window.window_id)
