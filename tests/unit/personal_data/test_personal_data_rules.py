"""What `forget` deletes at the vendors for a conversation, read from its items alone: every
message the person sent (staged, or merged in a user turn), every message sent to them (reply
parts, resends, the template, the fallback, any SID a status was reported for), the media
they sent, and every OpenAI response asked for them; and what `export` gives back."""

from __future__ import annotations

from functions.intake.inbound import Attachment
from functions.personal_data.rules.person_data import exported_turn, media_of, vendor_ids
from functions.storage.models import AIRequest, Delivery, Resend, StagedMessage, Turn, TurnMedia
from functions.storage.tables import assistant_turn_id, user_turn_id

AC = "AC" + "0" * 32
MM, ME = "MM" + "1" * 32, "ME" + "2" * 32
MEDIA_URL = f"https://api.twilio.com/2010-04-01/Accounts/{AC}/Messages/{MM}/Media/{ME}"


def sid(n: int) -> str:
    return f"SM{n:032d}"


def test_every_message_sent_and_received_and_every_response_is_found():
    staged = [
        StagedMessage(conversation_id="c", message_sid=sid(1), received_at="t1", body="pending"),
        StagedMessage(
            conversation_id="c",
            message_sid=MM,
            received_at="t2",
            media=(Attachment(url=MEDIA_URL, content_type="image/jpeg"),),
            ai_request=AIRequest(
                message_sids=[MM],
                window_id="w2",
                openai_conversation_id="conv",
                requested_at="t",
                response_id="resp_2",
            ),
        ),
        StagedMessage(
            conversation_id="c", message_sid=sid(9), answered_in="forgotten", ai_response_id="resp_9"
        ),
    ]
    user = Turn(
        conversation_id="c",
        turn_id=user_turn_id("w1"),
        role="user",
        message_sids=[sid(3), sid(4)],
        fallback_message_sid=sid(5),
        deliveries={sid(5): Delivery(message="fallback", status="read", rank=4)},
        media=[
            TurnMedia(url=MEDIA_URL, content_type="image/jpeg", kind="image", number=1, offset=0, length=9)
        ],
    )
    reply = Turn(
        conversation_id="c",
        turn_id=assistant_turn_id("w1"),
        role="assistant",
        message_sids=[sid(6)],
        template_sid=sid(7),
        resends={"0": Resend(owner=sid(6), since="t", sid=sid(8))},
        deliveries={sid(10): Delivery(message="0", status="failed", rank=3)},
        response_id="resp_1",
    )

    ids = vendor_ids(staged, [user, reply], "conv_1")

    assert ids.twilio_messages == [
        sid(1),
        MM,
        sid(9),
        sid(3),
        sid(4),
        sid(5),
        sid(6),
        sid(7),
        sid(8),
        sid(10),
    ]
    assert ids.twilio_media == [(MM, ME)]  # the staged message's and the turn's, once
    assert ids.openai_responses == ["resp_9", "resp_2", "resp_1"]
    assert ids.openai_conversation == "conv_1"


def test_a_media_url_names_its_message_and_media_and_no_other_url_does():
    assert media_of(MEDIA_URL) == (MM, ME)
    assert media_of(MEDIA_URL + "?x=1") == (MM, ME)
    assert media_of("https://example.com/Media/ME1") is None and media_of(None) is None


def test_an_exported_turn_says_who_wrote_what_when_and_what_became_of_it():
    asked = Turn(
        conversation_id="c",
        turn_id=user_turn_id("w"),
        role="user",
        body="where is it?",
        first_received_at="t1",
        answered_at="t3",
        status="answered",
    )
    answered = Turn(
        conversation_id="c",
        turn_id=assistant_turn_id("w"),
        role="assistant",
        body="on its way",
        sent_at="t2",
        status="sent",
        message_sids=[sid(1)],
        deliveries={sid(1): Delivery(message="0", status="read", rank=4, at="t4")},
    )

    mine, theirs = exported_turn(asked), exported_turn(answered)

    assert (mine["written_by"], mine["text"], mine["at"], mine["answered_at"]) == (
        "you",
        "where is it?",
        "t1",
        "t3",
    )
    assert (theirs["written_by"], theirs["text"], theirs["at"]) == ("assistant", "on its way", "t2")
    assert theirs["deliveries"] == [{"message_sid": sid(1), "status": "read", "error_code": None, "at": "t4"}]
