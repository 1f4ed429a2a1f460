"""Every webhook of the corpus (tests/events) through the local stack: signed, into the
webhook, staged, batched by the state machine, and answered (or, for an opt-out, recorded
and not answered), with what the model was given checked against the stand-in's calls."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pytest

from functions.answer import turns
from functions.config import Settings
from tests.support.events import event_names, load_event
from tests.support.local_stack import Harness
from tests.support.media import PHOTO, VOICE_NOTE_SAYS

pytestmark = pytest.mark.e2e

PHOTO_URL = f"data:image/jpeg;base64,{base64.b64encode(PHOTO).decode()}"
PHOTO_SEEN = f"[image image/jpeg, {len(PHOTO)} bytes]"  # how the stand-in echoes an image
LOCATION = (
    "[location: 37.787933, -122.393746; label: Twilio HQ; address: 101 Spear St, San Francisco, CA 94105]"
)


def text(value: str) -> dict[str, str]:
    return {"type": "input_text", "text": value}


IMAGE = {"type": "input_image", "image_url": PHOTO_URL, "detail": "auto"}

# What a WhatsApp opt-out is answered with, once (Twilio confirms an SMS opt-out itself).
CONFIRMATION = Settings.model_fields["opt_out_confirmation"].default

# event → what the model is given for it alone (None: an opt-out, no AI call).
INPUTS: dict[str, Any] = {
    "sms_text": "Hi, is my order 4471 on its way?",
    "sms_stop": None,
    "sms_start": "Start",  # from someone never opted out: a message like any
    "whatsapp_text": "Hi! I have a question about my order",
    "whatsapp_location": LOCATION,
    "whatsapp_location_pin": "[location: -33.8567844, 151.213108]",
    "whatsapp_image": [
        {
            "role": "user",
            "content": [text("[photo 1 (image/jpeg)]"), IMAGE, text("The box arrived like this")],
        }
    ],
    "whatsapp_sticker": "[sticker 1 (image/webp)]",
    "whatsapp_voice_note": f"[voice note 1, transcribed] {VOICE_NOTE_SAYS}",
    "whatsapp_video": "[video 1 (video/mp4)]",
    "whatsapp_document": "[document 1: PDF (application/pdf)]\nHere is the invoice",
    "whatsapp_contact": "[contact card 1 (text/vcard)]",
    "whatsapp_quick_reply": (
        '[replying to an earlier message]\n[tapped the button "Yes, reschedule" (payload: reschedule_yes)]'
    ),
    "whatsapp_reply": "[replying to an earlier message]\nMonday is too late, can it come sooner?",
    "whatsapp_ad_reply": (
        '[in answer to an ad: "Winter boots sale" — Handmade leather boots, 20% off this week only'
        " (https://fb.me/3cr4Wqqkk)]\nHi, is this still available?"
    ),
    "whatsapp_emoji": "👍🏽🙏",
    "whatsapp_several_media": [
        {
            "role": "user",
            "content": [
                text("[photo 1 (image/jpeg)]"),
                IMAGE,
                text("[photo 2 (image/jpeg)]"),
                IMAGE,
                text("[document 3: PDF (application/pdf)]\nFront, back and the receipt"),
            ],
        }
    ],
    "whatsapp_unknown_type": '[a message of type "order" that cannot be shown here]',
    "whatsapp_stop": None,
    "whatsapp_start": "START",
}


def echoed(model_input: Any) -> str:
    """The stand-in's reply to an input: its text, each image where it stood."""
    if isinstance(model_input, str):
        return f"You said: {model_input}"
    parts = model_input[0]["content"]
    return "You said: " + "\n".join(p["text"] if p["type"] == "input_text" else PHOTO_SEEN for p in parts)


@dataclass
class CorpusOutcome:
    status: int
    runs: list[str]
    ai_inputs: list[Any]
    replies: list[str]
    turns: list[Any]
    opted_out: bool


@pytest.fixture(scope="module")
def outcomes(stack) -> dict[str, CorpusOutcome]:
    """Every event sent at once, each from its own user; what became of each."""
    harness = Harness(stack)
    stack.openai.reset()
    stack.twilio.reset()
    sent = {name: (harness.new_user(), None) for name in event_names()}
    users = {}
    for name, (user, _) in sent.items():
        event = load_event(name)
        users[name] = user.removeprefix("whatsapp:") if not event["To"].startswith("whatsapp:") else user
        sent[name] = (user, harness.send_event(event, user).status_code)
    found = {}
    for name, user in users.items():
        our = None if user.startswith("whatsapp:") else "+15550000002"
        conversation = harness.conversation_of(user, our) if our else harness.conversation_of(user)
        runs = harness.wait_until_quiet(conversation.conversation_id, runs=1)
        item = harness.conversation_item(conversation.conversation_id)
        found[name] = CorpusOutcome(
            status=sent[name][1] or 0,
            runs=[r["status"] for r in runs],
            ai_inputs=harness.ai_inputs(conversation.conversation_id),
            replies=harness.replies_to(user),
            turns=sorted(turns.list_of(conversation.conversation_id), key=lambda t: t.turn_id),
            opted_out=item.get("opted_out", {}).get("BOOL", False),
        )
    stack.openai.reset()
    stack.twilio.reset()
    return found


def send_burst(harness: Harness, user: str, names: list[str], **changes: dict[str, str]) -> str:
    """Send these events as one burst, answered once the last is in (whatever the
    machine's speed); the conversation's id. `changes`: fields to change, by event."""
    conversation = harness.conversation_of(user)
    conversation_id = conversation.conversation_id if conversation else harness.stage_directly(user, [])
    rules = {"mode": "fixed", "window_seconds": 10, "max_messages": len(names)}
    harness.set_conversation(conversation_id, batching=rules)
    for name in names:
        assert harness.send_event(load_event(name), user, **changes.get(name, {})).status_code == 200
    return conversation_id


def test_every_event_of_the_corpus_has_a_defined_outcome():
    assert sorted(INPUTS) == event_names()


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_each_event_is_staged_batched_and_answered_with_what_it_held(outcomes, name):
    outcome, expected = outcomes[name], INPUTS[name]

    assert outcome.status == 200
    assert outcome.runs == ["SUCCEEDED"]
    user_turn = outcome.turns[0]
    assert (user_turn.role, user_turn.message_count) == ("user", 1)  # recorded, whatever happened
    if expected is None:
        assert outcome.ai_inputs == []
        assert outcome.replies == ([CONFIRMATION] if name.startswith("whatsapp") else [])
        assert [(t.role, t.status, t.limited) for t in outcome.turns] == [
            ("user", "limited", None),
            ("assistant", "limited", "opted_out"),
        ]
        assert outcome.opted_out
    else:
        assert outcome.ai_inputs == [expected]
        assert outcome.replies == [echoed(expected)]
        assert [t.status for t in outcome.turns] == ["answered", "sent"]
        assert not outcome.opted_out


def test_a_burst_of_text_photo_voice_note_and_location_makes_one_ai_call_with_all_of_it_in_order(harness):
    user = harness.new_user()
    burst = ["whatsapp_text", "whatsapp_image", "whatsapp_voice_note", "whatsapp_location"]
    conversation_id = send_burst(harness, user, burst)

    runs = harness.wait_until_quiet(conversation_id, runs=1)

    expected = [
        {
            "role": "user",
            "content": [
                text("Hi! I have a question about my order\n[photo 1 (image/jpeg)]"),
                IMAGE,
                text(f"The box arrived like this\n[voice note 2, transcribed] {VOICE_NOTE_SAYS}\n{LOCATION}"),
            ],
        }
    ]
    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == [expected]  # one AI call, all of it, in order
    assert harness.replies_to(user) == [echoed(expected)]
    assert [t["filename"] for t in harness.stack.openai.transcriptions] == ["voice-note-2.ogg"]
    (user_turn, _) = sorted(turns.list_of(conversation_id), key=lambda t: t.turn_id)
    assert user_turn.transcripts == {"2": VOICE_NOTE_SAYS}  # recorded with the turn


def test_a_media_that_cannot_be_fetched_or_transcribed_is_mentioned_and_the_batch_answered(harness):
    user = harness.new_user()
    account = harness.stack.config.twilio_account_sid
    gone = (
        f"{harness.stack.twilio_url}/2010-04-01/Accounts/{account}/Messages/MM{'0' * 32}/Media/ME{'0' * 32}"
    )
    harness.stack.openai.inject_transcription_faults({"status": 500})
    burst = ["whatsapp_image", "whatsapp_voice_note"]
    conversation_id = send_burst(harness, user, burst, whatsapp_image={"MediaUrl0": gone})  # Twilio: 404

    runs = harness.wait_until_quiet(conversation_id, runs=1)

    assert [r["status"] for r in runs] == ["SUCCEEDED"]
    assert harness.ai_inputs(conversation_id) == [
        "[photo 1 (image/jpeg), which could not be loaded]\nThe box arrived like this\n"
        "[voice note 2 (audio/ogg), which could not be transcribed]"
    ]
    assert len(harness.replies_to(user)) == 1
    assert sorted(r["status"] for r in harness.stack.twilio.media_requests) == [200, 307, 404]


def test_a_reply_to_our_earlier_message_quotes_it(harness):
    user = harness.new_user()
    harness.send_event(load_event("whatsapp_text"), user)
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    (ours,) = [m["sid"] for m in harness.stack.twilio.messages if m["to"] == user]

    harness.send_event(load_event("whatsapp_reply"), user, OriginalRepliedMessageSid=ours)
    harness.wait_until_quiet(conversation_id, runs=2)

    assert harness.ai_inputs(conversation_id)[1] == (
        '[replying to your earlier message: "You said: Hi! I have a question about my order"]\n'
        "Monday is too late, can it come sooner?"
    )


def test_after_stop_nothing_is_answered_until_start(harness):
    user = harness.new_user()
    bursts = [
        ["whatsapp_text"],
        ["whatsapp_stop"],
        ["whatsapp_emoji"],
        ["whatsapp_start", "whatsapp_location_pin"],
    ]
    for number, burst in enumerate(bursts, start=1):
        conversation_id = send_burst(harness, user, burst)
        harness.wait_until_quiet(conversation_id, runs=number)

    assert [r["status"] for r in harness.runs(conversation_id)] == ["SUCCEEDED"] * 4
    assert harness.ai_inputs(conversation_id) == [
        "Hi! I have a question about my order",
        "START\n[location: -33.8567844, 151.213108]",
    ]
    assert harness.replies_to(user) == [
        "You said: Hi! I have a question about my order",
        CONFIRMATION,  # once, and nothing while opted out
        "You said: START\n[location: -33.8567844, 151.213108]",
    ]
    recorded = sorted(turns.list_of(conversation_id), key=lambda t: t.turn_id)
    assert [(t.role, t.body, t.status, t.limited) for t in recorded] == [
        ("user", "Hi! I have a question about my order", "answered", None),
        ("assistant", "You said: Hi! I have a question about my order", "sent", None),
        ("user", "STOP", "limited", None),
        ("assistant", CONFIRMATION, "limited", "opted_out"),
        ("user", "👍🏽🙏", "limited", None),  # recorded while opted out, not answered
        ("assistant", "", "limited", "opted_out"),
        ("user", "START\n[location: -33.8567844, 151.213108]", "answered", None),
        ("assistant", "You said: START\n[location: -33.8567844, 151.213108]", "sent", None),
    ]

    assert len(recorded[3].message_sids) == 1  # the confirmation, kept with its turn


def test_a_stop_sent_again_while_opted_out_is_not_confirmed_again_nor_without_a_text(harness, configure):
    user = harness.new_user()
    for number, burst in enumerate([["whatsapp_stop"], ["whatsapp_stop"]], start=1):
        conversation_id = send_burst(harness, user, burst)
        harness.wait_until_quiet(conversation_id, runs=number)
    assert harness.replies_to(user) == [CONFIRMATION]

    configure(OPT_OUT_CONFIRMATION="")
    other = harness.new_user()
    conversation_id = send_burst(harness, other, ["whatsapp_stop"])
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.replies_to(other) == []
    assert harness.conversation_item(conversation_id)["opted_out"]["BOOL"]


@pytest.mark.parametrize("label", ["Stop", "Cancel"])
def test_a_button_labelled_stop_or_cancel_is_an_answer_not_an_opt_out(harness, label):
    user = harness.new_user()
    tap = {
        "Body": label,
        "ButtonText": label,
        "ButtonPayload": label.lower(),
        "OriginalRepliedMessageSid": "",
    }
    conversation_id = send_burst(harness, user, ["whatsapp_quick_reply"], whatsapp_quick_reply=tap)

    harness.wait_until_quiet(conversation_id, runs=1)

    expected = f'[tapped the button "{label}" (payload: {label.lower()})]'
    assert harness.ai_inputs(conversation_id) == [expected]
    assert harness.replies_to(user) == [echoed(expected)]
    assert not harness.conversation_item(conversation_id).get("opted_out", {}).get("BOOL", False)
