import pytest
from pydantic import ValidationError

from functions.entry_points.webhook import invalid_fields
from functions.intake.inbound import InboundMessage

ACCOUNT = "AC" + "1" * 32
SID = "SM" + "a" * 32


def _form(**overrides: str) -> dict[str, str]:
    form = {
        "MessageSid": SID,
        "AccountSid": ACCOUNT,
        "From": "whatsapp:+15551230000",
        "To": "whatsapp:+15559990000",
        "Body": "hi",
        "NumMedia": "0",
    }
    form.update(overrides)
    return {k: v for k, v in form.items() if v is not None}


def test_a_twilio_form_parses():
    message = InboundMessage.from_form(_form(ProfileName="Ana"))
    assert (message.message_sid, message.from_address, message.body, message.profile_name) == (
        SID,
        "whatsapp:+15551230000",
        "hi",
        "Ana",
    )


def test_media_are_kept_with_their_types_for_a_message_without_body():
    message = InboundMessage.from_form(
        _form(
            Body="",
            NumMedia="2",
            MediaUrl0="https://m.example/0",
            MediaContentType0="image/jpeg",
            MediaUrl1="https://m.example/1",
        )
    )
    assert [(m.url, m.content_type) for m in message.media] == [
        ("https://m.example/0", "image/jpeg"),
        ("https://m.example/1", ""),
    ]


@pytest.mark.parametrize(
    "overrides",
    [
        {"MessageSid": None},
        {"MessageSid": "not-a-sid"},
        {"AccountSid": "AC123"},
        {"From": None},
        {"To": ""},
        {"Body": "", "NumMedia": "0"},
        {"NumMedia": "many"},
        {"Body": "x" * 10_001},
    ],
)
def test_bad_forms_are_refused(overrides):
    with pytest.raises(ValidationError):
        InboundMessage.from_form(_form(**overrides))


def test_a_ten_thousand_character_body_is_accepted():
    assert len(InboundMessage.from_form(_form(Body="y" * 10_000)).body) == 10_000


def test_a_malformed_message_is_named_by_its_fields_never_by_their_values():
    with pytest.raises(ValidationError) as error:
        InboundMessage.from_form(_form(MessageSid="SM-private-0123", Latitude="95.5", Longitude="1"))
    assert sorted(invalid_fields(error.value)) == ["location", "message_sid"]
    assert "SM-private-0123" not in str(error.value) and "95.5" not in str(error.value)
    with pytest.raises(ValidationError) as error:
        InboundMessage.from_form(_form(Body="", NumMedia="0"))
    assert invalid_fields(error.value) == ["message"]  # a rule of the whole message
