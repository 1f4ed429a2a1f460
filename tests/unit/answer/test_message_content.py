"""Each webhook of the corpus (tests/events) parses, and becomes the lines the model is
told, with nothing the person sent left out. The same events go through the local
stack in tests/e2e/answer/test_corpus.py."""

from __future__ import annotations

import pytest

from functions.answer.rules.content import render
from functions.intake.inbound import InboundMessage
from tests.support.events import event_names, load_event

# event → (the user turn it becomes alone, its opt-out or opt-in keyword)
TURNS: dict[str, tuple[str, str | None]] = {
    "sms_text": ("Hi, is my order 4471 on its way?", None),
    "sms_stop": ("Stop", "opt_out"),
    "sms_start": ("Start", "opt_in"),
    "whatsapp_text": ("Hi! I have a question about my order", None),
    "whatsapp_location": (
        "[location: 37.787933, -122.393746; label: Twilio HQ; "
        "address: 101 Spear St, San Francisco, CA 94105]",
        None,
    ),
    "whatsapp_location_pin": ("[location: -33.8567844, 151.213108]", None),
    "whatsapp_image": ("[photo 1 (image/jpeg)]\nThe box arrived like this", None),
    "whatsapp_sticker": ("[sticker 1 (image/webp)]", None),
    "whatsapp_voice_note": ("[voice note 1 (audio/ogg)]", None),
    "whatsapp_video": ("[video 1 (video/mp4)]", None),
    "whatsapp_document": ("[document 1: PDF (application/pdf)]\nHere is the invoice", None),
    "whatsapp_contact": ("[contact card 1 (text/vcard)]", None),
    "whatsapp_quick_reply": (
        '[replying to an earlier message]\n[tapped the button "Yes, reschedule" (payload: reschedule_yes)]',
        None,
    ),
    "whatsapp_reply": ("[replying to an earlier message]\nMonday is too late, can it come sooner?", None),
    "whatsapp_ad_reply": (
        '[in answer to an ad: "Winter boots sale" — Handmade leather boots, 20% off this week only'
        " (https://fb.me/3cr4Wqqkk)]\nHi, is this still available?",
        None,
    ),
    "whatsapp_emoji": ("👍🏽🙏", None),
    "whatsapp_several_media": (
        "[photo 1 (image/jpeg)]\n[photo 2 (image/jpeg)]\n[document 3: PDF (application/pdf)]\n"
        "Front, back and the receipt",
        None,
    ),
    "whatsapp_unknown_type": ('[a message of type "order" that cannot be shown here]', None),
    "whatsapp_stop": ("STOP", "opt_out"),
    "whatsapp_start": ("START", "opt_in"),
}


def test_every_event_of_the_corpus_has_its_expected_turn():
    assert sorted(TURNS) == event_names()


@pytest.mark.parametrize("name", sorted(TURNS))
def test_each_event_parses_into_what_the_model_is_told(name):
    message = InboundMessage.from_form(load_event(name))

    turn = render([message.content()])

    assert (turn.body, message.consent) == TURNS[name]
    assert [turn.body[m.offset : m.offset + m.length] for m in turn.media] == [
        line
        for line in turn.body.splitlines()
        if line.startswith(("[photo", "[sticker", "[voice", "[video", "[doc", "[contact"))
    ]


def test_a_reply_to_one_of_our_messages_quotes_it():
    message = InboundMessage.from_form(load_event("whatsapp_reply"))
    quotes = {message.replied_to_sid or "": "Your order ships on Monday.\nTracking: 1Z999"}

    assert render([message.content()], quotes).body.splitlines()[0] == (
        '[replying to your earlier message: "Your order ships on Monday. Tracking: 1Z999"]'
    )


def test_an_empty_text_is_not_a_message_but_an_unknown_kind_is():
    empty = {**load_event("whatsapp_text"), "Body": "  "}
    with pytest.raises(ValueError, match="needs a body"):
        InboundMessage.from_form(empty)
    assert InboundMessage.from_form(load_event("whatsapp_unknown_type")).has_content


@pytest.mark.parametrize(
    ("body", "opt_out_type", "consent"),
    [
        ("stop", None, "opt_out"),
        (" Unsubscribe ", None, "opt_out"),
        ("STOP please", None, None),  # only a single word opts out
        ("yes", None, "opt_in"),
        ("ARRET", "STOP", "opt_out"),  # a Messaging Service's own keyword, flagged by Twilio
        ("stop", "HELP", None),  # flagged as something else
        ("help", "HELP", None),
    ],
)
def test_opt_out_and_opt_in_keywords(body, opt_out_type, consent):
    form = {**load_event("sms_text"), "Body": body}
    if opt_out_type:
        form["OptOutType"] = opt_out_type
    assert InboundMessage.from_form(form).consent == consent


@pytest.mark.parametrize(
    "change",
    [
        {"Body": "Cancel", "ButtonText": "Cancel", "ButtonPayload": "cancel_booking"},  # a quick reply
        {"Body": "Stop", "ButtonText": "Stop"},
        {"Body": "STOP", "ButtonPayload": "stop"},
        {"Body": "Stop", "MessageType": "interactive", "ButtonText": ""},  # an interactive reply
        {"Body": "End", "MessageType": "interactive", "ListId": "end", "ListTitle": "End"},
        {"Body": "Quit", "MessageType": "text", "ListId": "quit"},
    ],
)
def test_a_tapped_button_or_an_interactive_reply_is_never_a_keyword(change):
    form = {**load_event("whatsapp_quick_reply"), "OriginalRepliedMessageSid": "", **change}
    if "MessageType" not in change:
        form["MessageType"] = "button"
    assert InboundMessage.from_form(form).consent is None
    typed = {**load_event("whatsapp_text"), "Body": change["Body"]}
    assert InboundMessage.from_form(typed).consent == "opt_out"  # typed, the same word is one
    flagged = {**form, "OptOutType": "STOP"}  # Twilio's Advanced Opt-Out has opted them out
    assert InboundMessage.from_form(flagged).consent == "opt_out"


@pytest.mark.parametrize(
    "change", [{"Latitude": "north"}, {"Latitude": "91", "Longitude": "0"}, {"Longitude": "-180.5"}]
)
def test_a_location_that_is_not_on_earth_is_refused(change):
    with pytest.raises(ValueError):
        InboundMessage.from_form({**load_event("whatsapp_location"), **change})


def test_long_labels_buttons_and_ad_texts_are_cut_not_a_reason_to_drop_the_message():
    form = {
        **load_event("whatsapp_ad_reply"),
        "ReferralBody": "boots " * 1_000,
        "OriginalRepliedMessageSid": "an-id-of-another-shape",
        "ProfileName": "A" * 500,
    }

    message = InboundMessage.from_form(form)

    assert message.referral is not None and len(message.referral.body or "") == 2_000
    assert message.replied_to_sid == "an-id-of-another-shape"
    assert message.profile_name == "A" * 200
