"""Hand-off to a person, end to end over HTTP on the local stack: an operator pauses a
conversation (`python -m infra.conversations`, in a shell of its own), its burst is
recorded and announced as `batch.handed_off`, unanswered; a helpdesk's `conversation.reply`
event on the bus goes out once through Twilio and into the OpenAI conversation; resumed,
the model answers again with the person's reply in its conversation; HANDOFF_KEYWORDS hands
off on typed text, never on a button's label."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

from functions.config import get_settings
from functions.storage.tables import user_turn_id
from infra.local.lambdas import invoke
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.operator_shell import ROOT, operator_shell

pytestmark = pytest.mark.e2e

HANDOFF_REPLY = "A person will answer you here soon."  # the setting's default


def conversations_command(harness: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.conversations", *args],
        cwd=ROOT,
        env=operator_shell(harness.stack),
        capture_output=True,
        text=True,
        timeout=60,
    )


def answered_once(harness: Any, user: str, body: str) -> str:
    """A first burst, answered by the model: the conversation's id."""
    harness.send(user, body)
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.replies_to(user) == [f"You said: {body}"]
    return conversation_id


def handed_off_batches(harness: Any) -> Any:
    """A queue subscribed to batch.handed_off; a function that reads its events' details."""
    sqs, events = harness.stack.client("sqs"), harness.stack.client("events")
    name = f"handed-off-{uuid.uuid4().hex[:8]}"
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    bus = get_settings().event_bus_name
    events.put_rule(
        Name=name, EventBusName=bus, EventPattern=json.dumps({"detail-type": ["batch.handed_off"]})
    )
    events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "queue", "Arn": queue_arn}])

    def details() -> list[dict[str, Any]]:
        received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        return [json.loads(m["Body"])["detail"] for m in received.get("Messages", [])]

    return details


def put_command(harness: Any, detail_type: str, detail: dict[str, Any], source: str | None = None) -> None:
    """A helpdesk's command, put on the bus as a helpdesk puts it (its tenant's own source,
    unless another is given)."""
    entry = {
        "EventBusName": get_settings().event_bus_name,
        "Source": source or f"helpdesk.{detail['AccountSid']}",
        "DetailType": detail_type,
        "Detail": json.dumps(detail),
    }
    assert harness.stack.client("events").put_events(Entries=[entry])["FailedEntryCount"] == 0


def wait_for(condition: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.1)
    return found


def openai_items(harness: Any, conversation_id: str) -> list[tuple[str, str]]:
    """The (role, text) of the items the OpenAI stand-in holds for the conversation."""
    openai_conversation = harness.conversation_item(conversation_id)["openai_conversation_id"]["S"]
    items = harness.stack.openai.conversation_items(openai_conversation)
    return [(i["role"], "\n".join(p.get("text", "") for p in i["content"])) for i in items]


def test_a_paused_conversation_gets_no_reply_and_its_burst_is_announced_handed_off(harness):
    user = harness.new_user()
    conversation_id = answered_once(harness, user, "hello")
    details = handed_off_batches(harness)

    paused = conversations_command(harness, "pause", user)
    assert paused.returncode == 0, paused.stderr
    harness.send(user, "is anyone there?")
    harness.send(user, "my parcel is late")
    runs = harness.wait_until_quiet(conversation_id, runs=2)

    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert harness.replies_to(user) == ["You said: hello"]
    assert harness.ai_inputs(conversation_id) == ["hello"]
    (detail,) = wait_for(lambda: [d for d in details() if d["conversation_id"] == conversation_id])
    assert detail["message_count"] == 2 and len(detail["message_sids"]) == 2
    assert detail["user_turn_id"] == user_turn_id(detail["window_id"]) and detail["reply_message_sids"] == []
    assert "parcel" not in json.dumps(detail) and user not in json.dumps(detail)  # keys and counts only
    shown = conversations_command(harness, "show", user)
    assert "handed off to a person" in shown.stdout and "by operator" in shown.stdout


def test_a_persons_reply_goes_out_once_and_the_model_sees_it_once_resumed(harness):
    user = harness.new_user()
    conversation_id = answered_once(harness, user, "where is my parcel?")
    assert conversations_command(harness, "pause", user, "--for", "2h").returncode == 0
    account_sid = harness.stack.config.twilio_account_sid
    person = "Hi, this is Sam: your parcel leaves today."

    put_command(
        harness, "conversation.reply", {"AccountSid": account_sid, "conversation": user, "body": person}
    )

    wait_for(lambda: person in harness.replies_to(user))
    assert harness.replies_to(user) == ["You said: where is my parcel?", person]
    assert wait_for(lambda: ("assistant", person) in openai_items(harness, conversation_id))
    assert conversations_command(harness, "resume", user).returncode == 0
    harness.send(user, "thanks!")
    harness.wait_until_quiet(conversation_id, runs=2)

    assert harness.replies_to(user) == ["You said: where is my parcel?", person, "You said: thanks!"]
    items = openai_items(harness, conversation_id)
    assert items[-3:] == [("assistant", person), ("user", "thanks!"), ("assistant", "You said: thanks!")]
    assert items.count(("assistant", person)) == 1
    shown = conversations_command(harness, "show", user, "--bodies")
    assert "answered by the assistant" in shown.stdout and person in shown.stdout


def test_a_reply_event_delivered_twice_is_sent_once_and_another_tenants_is_refused(harness):
    user = harness.new_user()
    conversation_id = answered_once(harness, user, "hello")
    event = {
        "id": str(uuid.uuid4()),
        "detail-type": "conversation.reply",
        "source": f"helpdesk.{harness.stack.config.twilio_account_sid}",
        "time": "2026-11-26T10:00:00Z",
        "detail": {
            "AccountSid": harness.stack.config.twilio_account_sid,
            "conversation": conversation_id,
            "body": "A person here.",
        },
    }
    stranger, _ = harness.add_tenant()
    foreign = {**event, "id": str(uuid.uuid4()), "detail": {**event["detail"], "AccountSid": stranger}}

    first, second = invoke("ConversationCommands", event)[0], invoke("ConversationCommands", event)[0]
    refused, error = invoke("ConversationCommands", foreign)

    assert (first["outcome"], second["outcome"], first["message_sids"]) == (
        "sent",
        "sent",
        second["message_sids"],
    )
    assert harness.replies_to(user) == ["You said: hello", "A person here."]
    assert error is None and refused == {"outcome": "refused"}
    assert openai_items(harness, conversation_id).count(("assistant", "A person here.")) == 1


def test_a_command_counts_only_from_its_tenants_own_source_and_keeps_the_persons_opt_out(harness):
    user, stopped = harness.new_user(), harness.new_user()
    conversation_id = answered_once(harness, user, "hello")
    tenant = harness.stack.config.twilio_account_sid
    stranger, _ = harness.add_tenant()
    harness.send(stopped, "STOP")
    harness.wait_until_quiet(harness.conversation_of(stopped).conversation_id, runs=1)
    sent_to_stopped = harness.replies_to(stopped)

    reply = {"AccountSid": tenant, "conversation": user}
    put_command(harness, "conversation.reply", reply | {"body": "from A's helpdesk"}, f"helpdesk.{stranger}")
    put_command(harness, "conversation.reply", reply | {"body": "from anyone"}, "helpdesk.example")
    put_command(harness, "conversation.reply", {"AccountSid": stranger, "conversation": user, "body": "A's"})
    put_command(harness, "conversation.reply", reply | {"body": "You typed STOP"} | {"conversation": stopped})
    put_command(harness, "conversation.reply", reply | {"body": "B's own helpdesk"})

    wait_for(lambda: "B's own helpdesk" in harness.replies_to(user))
    time.sleep(1)  # the refused commands were put first: any that went out would be here by now
    assert harness.replies_to(user) == ["You said: hello", "B's own helpdesk"]
    assert harness.replies_to(stopped) == sent_to_stopped
    assert openai_items(harness, conversation_id).count(("assistant", "B's own helpdesk")) == 1


def test_a_helpdesk_pauses_and_resumes_with_events_on_the_bus(harness):
    user = harness.new_user()
    conversation_id = answered_once(harness, user, "hello")
    tenant = {"AccountSid": harness.stack.config.twilio_account_sid, "conversation": user}

    put_command(harness, "conversation.pause", tenant | {"for_seconds": 60})
    item = wait_for(lambda: (i := harness.conversation_item(conversation_id)).get("paused_at") and i)
    put_command(harness, "conversation.resume", tenant)
    wait_for(lambda: "paused_at" not in harness.conversation_item(conversation_id))

    assert (item["paused_by"]["S"], "paused_until" in item) == ("helpdesk", True)


def test_typing_a_handoff_keyword_hands_off_once_and_a_button_does_not(harness, configure):
    configure(HANDOFF_KEYWORDS="human")
    config = harness.stack.config
    tapper = harness.new_user()
    button = {"MessageType": "button", "ButtonText": "human", "ButtonPayload": "human"}
    form = inbound_form("human", tapper, OUR_WHATSAPP, config.twilio_account_sid, **button)
    assert post_webhook(harness.stack.whatsapp_url, form, config.twilio_auth_token).status_code == 200
    typist = harness.new_user()
    harness.send(typist, "I want a human")

    tapped = harness.conversation_of(tapper).conversation_id
    typed = harness.conversation_of(typist).conversation_id
    harness.wait_until_quiet(tapped, runs=1)
    harness.wait_until_quiet(typed, runs=1)
    harness.send(typist, "hello? a human please")
    harness.wait_until_quiet(typed, runs=2)

    assert harness.replies_to(tapper) == ['You said: [tapped the button "human" (payload: human)]']
    assert harness.replies_to(typist) == [HANDOFF_REPLY]
    assert harness.ai_inputs(typed) == []
    assert harness.conversation_item(typed)["paused_by"]["S"] == "keyword"
    assert "paused_at" not in harness.conversation_item(tapped)
