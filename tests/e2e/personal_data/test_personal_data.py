"""A person's data, over HTTP on the local stack, with the operator's commands run as a
shell runs them (`python -m infra.conversations export|forget`, a process of its own):
`export` gives back their turns; `forget` leaves nothing they wrote or were answered in any
table of the stack, in OpenAI's conversations or in the tenant's Twilio Messages list, and
their next message is answered in a new conversation, without history. A forget cut short
by Twilio says what is left, exits non-zero, and its next run finishes it; a conversation a
run holds is refused."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from typing import Any

import pytest
import requests
from twilio.rest import Client

from functions import clock
from functions.assistant import tool_calls
from functions.batching import batch_windows
from functions.personal_data import forgetting_store
from functions.personal_data.forgetting_store import Busy
from functions.storage.models import BatchWindow
from functions.storage.tables import ALL_TABLES
from tests.support.events import load_event
from tests.support.operator_shell import ROOT, operator_shell
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


def conversations_command(harness: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a shell of its own, pointed at the stack and its stand-ins (the
    addresses `make local` prints)."""
    stack = harness.stack
    shell = operator_shell(stack, OPENAI_BASE_URL=stack.openai_url, TWILIO_API_BASE_URL=stack.twilio_url)
    return subprocess.run(
        [sys.executable, "-m", "infra.conversations", *args],
        cwd=ROOT,
        env=shell,
        capture_output=True,
        text=True,
        timeout=120,
    )


def answered_burst(harness: Any, user: str, phrase: str) -> str:
    """A burst that carries `phrase`, a photo among its fragments, answered: its conversation."""
    assert harness.send(user, f"Hello, about {phrase}").status_code == 200
    assert (
        harness.send_event(load_event("whatsapp_image"), user, Body=f"the {phrase} photo").status_code == 200
    )
    assert harness.send(user, "it hasn't arrived").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    assert run["status"] == "SUCCEEDED"
    assert any(phrase in reply for reply in harness.replies_to(user))  # the stand-in echoes it
    return str(conversation_id)


def items_holding(harness: Any, *needles: str) -> list[str]:
    """Every item of every table of the stack that holds one of `needles`: `table: key`."""
    dynamodb = harness.stack.client("dynamodb")
    found = []
    for table in ALL_TABLES:
        pages = dynamodb.get_paginator("scan").paginate(TableName=table.logical_id, ConsistentRead=True)
        for item in (i for page in pages for i in page["Items"]):
            if any(needle in json.dumps(item) for needle in needles):
                found.append(f"{table.logical_id}: {item.get(table.partition_key)}")
    return found


def openai_conversations_holding(harness: Any, phrase: str) -> list[str]:
    """The OpenAI conversations (deleted ones' items included) whose items hold `phrase`,
    through the stand-in's control API."""
    control = harness.stack.openai_url.removesuffix("/v1") + "/_control/conversations"
    listed = requests.get(control, timeout=5).json()["conversations"]
    return [c["conversation"]["id"] for c in listed if phrase in json.dumps(c["items"])]


def twilio_messages_holding(harness: Any, phrase: str) -> list[str]:
    """The tenant's messages, received and sent, that hold `phrase`, through Twilio's API."""
    config = harness.stack.config
    client = Client(config.twilio_account_sid, config.twilio_auth_token)
    client.api.base_url = harness.stack.twilio_url
    return [m.sid for m in client.messages.list() if phrase in (m.body or "")]


def test_export_gives_back_the_turns_then_forget_leaves_nothing_and_the_next_message_starts_anew(harness):
    user, phrase = harness.new_user(), f"marmalade-{secrets.token_hex(5)}"
    tenant = harness.stack.config.twilio_account_sid
    first = answered_burst(harness, user, phrase)
    now = (
        clock.now()
    )  # a tool call of the burst, its output with the phrase (functions/assistant/tool_calls.py)
    tool_calls.claim(first, "call-1", "lookup_order", False, "w", clock.iso(now), int(now.timestamp()))
    tool_calls.record(first, "call-1", "answered", json.dumps({"order": phrase}), clock.iso(now))
    photo_paths = list(harness.stack.twilio.media)
    assert photo_paths and items_holding(harness, phrase) and twilio_messages_holding(harness, phrase)

    exported = conversations_command(harness, "export", user, "--tenant", tenant)

    assert exported.returncode == 0, exported.stderr
    (conversation,) = json.loads(exported.stdout)["conversations"]
    asked, answered = conversation["turns"]
    assert conversation["conversation_id"] == first and conversation["with"] == "whatsapp:+15550000001"
    assert (asked["written_by"], answered["written_by"]) == ("you", "assistant")
    assert phrase in asked["text"] and phrase in answered["text"] and asked["at"] <= answered["at"]
    assert [m["content_type"] for m in asked["media"]] == ["image/jpeg"]
    assert answered["message_sids"] and answered["deliveries"]  # what was sent, what Twilio reported

    forgotten = conversations_command(harness, "forget", user, "--tenant", tenant)

    assert forgotten.returncode == 0, forgotten.stderr
    assert f"{first}: forgotten." in forgotten.stdout and "1 tool calls" in forgotten.stdout
    assert items_holding(harness, phrase, user.removeprefix("whatsapp:")) == []
    assert openai_conversations_holding(harness, phrase) == []
    assert twilio_messages_holding(harness, phrase) == []
    config = harness.stack.config
    for path in photo_paths:  # the photo, at Twilio
        fetched = requests.get(
            harness.stack.twilio_url + path,
            auth=(config.twilio_account_sid, config.twilio_auth_token),
            allow_redirects=False,
            timeout=5,
        )
        assert fetched.status_code == 404
    again = conversations_command(harness, "forget", user, "--tenant", tenant)
    assert again.returncode == 0 and "nothing to forget" in again.stdout

    assert harness.send(user, "hello again").status_code == 200
    second = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(second, runs=1)
    assert second != first
    assert harness.ai_inputs(second) == ["hello again"]  # a new OpenAI conversation: no history
    assert harness.replies_to(user) == ["You said: hello again"]


def test_a_forget_cut_short_by_twilio_says_what_is_left_and_its_next_run_finishes_it(harness):
    user, phrase = harness.new_user(), f"quince-{secrets.token_hex(5)}"
    tenant = harness.stack.config.twilio_account_sid
    conversation_id = answered_burst(harness, user, phrase)
    harness.stack.twilio.inject_delete_faults({}, {"status": 503})  # the second delete fails

    cut_short = conversations_command(harness, "forget", user, "--tenant", tenant)

    assert cut_short.returncode == 1
    assert f"{conversation_id}: left: " in cut_short.stderr and "Twilio messages" in cut_short.stderr
    assert "503" in cut_short.stderr and "run the same command again" in cut_short.stderr
    assert twilio_messages_holding(harness, phrase)  # Twilio still holds some
    assert items_holding(harness, phrase) == []  # our tables hold none already
    assert openai_conversations_holding(harness, phrase) == []

    finished = conversations_command(harness, "forget", user, "--tenant", tenant)

    assert finished.returncode == 0, finished.stderr
    assert f"{conversation_id}: forgotten." in finished.stdout
    assert twilio_messages_holding(harness, phrase) == []
    assert items_holding(harness, phrase, user.removeprefix("whatsapp:")) == []


def test_a_conversation_a_run_holds_is_not_forgotten(harness):
    user = harness.new_user()
    control = harness.stack.openai_url.removesuffix("/v1") + "/_control/faults"
    assert requests.post(control, json={"faults": [{"delay": 6}]}, timeout=5).status_code == 200
    assert harness.send(user, "first words").status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    wait_until(lambda: harness.ai_inputs(conversation_id), timeout=15)  # the reply is being written

    refused = conversations_command(harness, "forget", user)

    assert refused.returncode == 1
    assert f"{conversation_id}: not forgotten: a run holds it" in refused.stderr
    assert harness.conversation_of(user).conversation_id == conversation_id  # nothing changed
    (run,) = harness.wait_until_quiet(conversation_id, runs=1)
    assert run["status"] == "SUCCEEDED" and harness.replies_to(user) == ["You said: first words"]
    assert conversations_command(harness, "forget", user).returncode == 0
    assert items_holding(harness, "first words") == []


def test_a_replayed_message_of_a_forgotten_conversation_stays_a_duplicate(harness):
    user, sid = harness.new_user(), "SM" + secrets.token_hex(16)
    assert harness.send(user, "a message to replay", message_sid=sid).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    assert conversations_command(harness, "forget", user).returncode == 0

    assert harness.send(user, "a message to replay", message_sid=sid).status_code == 200

    assert harness.conversation_of(user) is None  # nothing created, nothing staged
    assert harness.replies_to(user) == []  # its reply deleted by the forget, and none since
    assert items_holding(harness, "a message to replay", user.removeprefix("whatsapp:")) == []
    # The person writes again, then the old message is replayed into their new conversation.
    assert harness.send(user, "a new start").status_code == 200
    second = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(second, runs=1)
    assert harness.send(user, "a message to replay", message_sid=sid).status_code == 200
    assert harness.staged(second)[0]["message_sid"]["S"] != sid and len(harness.staged(second)) == 1
    assert harness.window_of(second) is None and harness.replies_to(user) == ["You said: a new start"]


def test_an_open_batch_window_refuses_a_forget_and_marks_nothing(harness):
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["words still being collected"])
    now = clock.now()
    window = BatchWindow(
        conversation_id=conversation_id,
        window_id="w1",
        opened_at=clock.iso(now),
        opened_ms=clock.epoch_ms(now),
        last_message_ms=clock.epoch_ms(now),
        execution_name=f"{conversation_id}-w1",
        expires_at=int(now.timestamp()) + 60,
    )
    assert batch_windows.open(window) is None

    busy = forgetting_store.begin(conversation_id, clock.iso(now), int(now.timestamp()))

    assert busy is Busy.WINDOW
    item = harness.conversation_item(conversation_id)
    assert "forget_started_at" not in item and item["task_complete"] == {"BOOL": False}  # nothing marked
    batch_windows.close(conversation_id, "w1")
    assert forgetting_store.begin(conversation_id, clock.iso(now), int(now.timestamp())) is None
    assert harness.conversation_of(user) is None  # from then on, no webhook finds it
