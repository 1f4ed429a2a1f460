"""The model's input for a user turn with media, on fakes of Twilio's media, OpenAI's
transcription and the data layer: photos as images in their place, voice notes as
transcripts, and every failure a line that says so, never an error."""

from __future__ import annotations

import base64

import pytest

from functions.answer import media, openai_audio, turn_input, turns, twilio_media
from functions.answer.openai_audio import TranscriptionFailed
from functions.answer.rules.content import render
from functions.answer.twilio_media import Media, MediaUnavailable
from functions.storage.models import Conversation, StagedMessage, Turn
from functions.storage.tables import user_turn_id
from functions.tenancy import secrets
from tests.support.fake_clock import FakeMonotonic
from tests.support.media import PDF, PHOTO, STICKER, VOICE_NOTE

ACCOUNT = "AC" + "a" * 32
CONVERSATION = Conversation(
    conversation_id="c1",
    channel="whatsapp",
    user_address="whatsapp:+15551230000",
    our_address="whatsapp:+15559990000",
    created_at="2026-01-01T00:00:00+00:00",
    tenant_account_sid=ACCOUNT,
)


def url(n: int) -> str:
    return f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Messages/MM{n:032x}/Media/ME{n:032x}"


def staged(sid: int, body: str = "", message_type: str = "text", *media: str, **content) -> StagedMessage:
    return StagedMessage.from_item(
        {
            "conversation_id": "c1",
            "message_sid": f"SM{sid:032x}",
            "body": body,
            "message_type": message_type,
            "media": [{"url": url(sid * 10 + i), "content_type": t} for i, t in enumerate(media)],
            **content,
        }
    )


def user_turn(*messages: StagedMessage, transcripts: dict[str, str] | None = None) -> Turn:
    rendered = render(messages)
    return Turn(
        conversation_id="c1",
        turn_id=user_turn_id("w1"),
        role="user",
        body=rendered.body,
        media=rendered.media,
        transcripts=transcripts or {},
    )


class FakeVendors:
    """Twilio's media by URL, what OpenAI hears in each recording, and what was asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: dict[str, Media | Exception] = {}
        self.says: dict[bytes, str | Exception] = {}
        self.fetched: list[str] = []
        self.downloaded = 0  # bytes
        self.transcribed: list[tuple[str, str, str]] = []
        self.recorded: list[dict[str, str]] = []
        monkeypatch.setattr(
            secrets,
            "twilio_credentials_in_tenant_session",
            lambda c: secrets.TwilioCredentials(account_sid=ACCOUNT, auth_token="t"),
        )
        monkeypatch.setattr(twilio_media, "fetch", self.fetch)
        monkeypatch.setattr(openai_audio, "transcribe", self.transcribe)
        monkeypatch.setattr(
            turns, "record_transcripts", lambda c, t, transcripts: self.recorded.append(transcripts)
        )

    def fetch(self, media_url, credentials, max_bytes, deadline, budget=None):
        """As Twilio's media fetch: the file's bytes, announced (Content-Length), reserved
        from the batch's budget before they are downloaded."""
        self.fetched.append(media_url)
        found = self.files.get(media_url, MediaUnavailable("HTTP 404"))
        if isinstance(found, Exception):
            raise found
        if len(found.data) > max_bytes:
            raise MediaUnavailable("larger than the media size limit")
        if budget is not None:
            budget.reserve(len(found.data))
        self.downloaded += len(found.data)
        return found

    def transcribe(self, client, audio, name, content_type, model, timeout):
        self.transcribed.append((name, content_type, model))
        said = self.says.get(audio, "")
        if isinstance(said, Exception):
            raise said
        return said

    def serve(self, n: int, content_type: str, data: bytes) -> None:
        self.files[url(n)] = Media(content_type, data)


@pytest.fixture
def vendors(monkeypatch) -> FakeVendors:
    return FakeVendors(monkeypatch)


def image_url(data: bytes, mime: str = "image/jpeg") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def test_text_photo_voice_note_and_location_become_one_message_in_arrival_order(vendors):
    vendors.serve(20, "image/jpeg", PHOTO)
    vendors.serve(30, "audio/ogg", VOICE_NOTE)
    vendors.says[VOICE_NOTE] = "ring twice"
    turn = user_turn(
        staged(1, "Where do I leave it?"),
        staged(2, "", "image", "image/jpeg"),
        staged(3, "", "audio", "audio/ogg"),
        staged(4, "", "location", location={"latitude": "52.52", "longitude": "13.405"}),
    )

    built = turn_input.for_model(CONVERSATION, turn, client=None)

    assert built == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Where do I leave it?\n[photo 1 (image/jpeg)]"},
                {"type": "input_image", "image_url": image_url(PHOTO), "detail": "auto"},
                {
                    "type": "input_text",
                    "text": "[voice note 2, transcribed] ring twice\n[location: 52.52, 13.405]",
                },
            ],
        }
    ]
    assert vendors.transcribed == [("voice-note-2", "audio/ogg", "gpt-transcribe")]
    assert vendors.recorded == [{"2": "ring twice"}]  # kept with the turn for a retry


def test_a_turn_without_media_to_load_is_its_text_as_before(vendors):
    turn = user_turn(
        staged(1, "hi\u202e there"),
        staged(2, "", "video", "video/mp4"),
        staged(3, "", "document", "application/pdf"),
    )

    assert turn_input.for_model(CONVERSATION, turn, client=None) == (
        "hi there\n[video 1 (video/mp4)]\n[document 2: PDF (application/pdf)]"
    )
    assert vendors.fetched == []  # other media are described, not fetched


def test_transcripts_alone_stay_text_and_a_retry_reuses_them(vendors):
    turn = user_turn(staged(1, "", "audio", "audio/ogg"), staged(2, "and?"), transcripts={"1": "call me"})

    assert (
        turn_input.for_model(CONVERSATION, turn, client=None) == "[voice note 1, transcribed] call me\nand?"
    )
    assert vendors.fetched == [] and vendors.transcribed == [] and vendors.recorded == []


@pytest.mark.parametrize(
    ("prepare", "line"),
    [
        (lambda v: None, "[photo 1 (image/jpeg), which could not be loaded]"),  # 404
        (lambda v: v.serve(10, "image/jpeg", PDF), "[photo 1 (image/jpeg), which could not be loaded]"),
        (
            lambda v: v.serve(10, "image/jpeg", b"\xff\xd8\xff" + b"x" * 11_000_000),
            "[photo 1 (image/jpeg), which could not be loaded]",
        ),
        (
            lambda v: v.files.update({url(10): MediaUnavailable("out of time")}),
            "[photo 1 (image/jpeg), which could not be loaded]",
        ),
    ],
    ids=["not-found", "not-an-image", "too-large", "timeout"],
)
def test_a_photo_that_cannot_be_loaded_is_said_so_and_the_batch_goes_on(vendors, prepare, line):
    prepare(vendors)
    turn = user_turn(staged(1, "look", "image", "image/jpeg"))

    assert turn_input.for_model(CONVERSATION, turn, client=None) == f"{line}\nlook"


@pytest.mark.parametrize(
    "says", [TranscriptionFailed("OpenAI HTTP 500"), ""], ids=["transcription-fails", "no-speech"]
)
def test_a_voice_note_that_cannot_be_transcribed_is_said_so(vendors, says):
    vendors.serve(10, "audio/ogg", VOICE_NOTE)
    vendors.says[VOICE_NOTE] = says
    turn = user_turn(staged(1, "", "audio", "audio/ogg"))

    assert turn_input.for_model(CONVERSATION, turn, client=None) == (
        "[voice note 1 (audio/ogg), which could not be transcribed]"
    )
    assert vendors.recorded == []


def test_each_setting_turns_its_media_off(vendors, configure):
    vendors.serve(10, "image/jpeg", PHOTO)
    vendors.serve(20, "audio/ogg", VOICE_NOTE)
    turn = user_turn(staged(1, "", "image", "image/jpeg"), staged(2, "", "audio", "audio/ogg"))
    configure(MEDIA_IMAGE_INPUT="false", MEDIA_VOICE_TRANSCRIPTION="false")

    assert (
        turn_input.for_model(CONVERSATION, turn, client=None)
        == "[photo 1 (image/jpeg)]\n[voice note 2 (audio/ogg)]"
    )
    assert vendors.fetched == []


def test_the_batch_has_a_media_size_budget_reserved_before_a_download(vendors, configure):
    configure(MEDIA_MAX_BATCH_BYTES=str(len(PHOTO) + 10))
    vendors.serve(10, "image/jpeg", PHOTO)
    vendors.serve(11, "image/jpeg", PHOTO)
    turn = user_turn(staged(1, "", "image", "image/jpeg", "image/jpeg"))

    built = turn_input.for_model(CONVERSATION, turn, client=None)

    assert vendors.downloaded == len(PHOTO)  # the second photo is not downloaded at all

    content = built[0]["content"]
    assert [p["type"] for p in content].count("input_image") == 1
    assert "which could not be loaded]" in content[-1]["text"]


def test_stickers_are_described_not_shown(vendors):
    vendors.serve(10, "image/webp", STICKER)
    turn = user_turn(staged(1, "", "sticker", "image/webp"))

    assert turn_input.for_model(CONVERSATION, turn, client=None) == "[sticker 1 (image/webp)]"
    assert vendors.fetched == []


def test_missing_credentials_leave_every_media_line_saying_so(vendors, monkeypatch):
    def no_secret(conversation):
        raise secrets.SecretOutsideTenant("no tenant")

    monkeypatch.setattr(secrets, "twilio_credentials_in_tenant_session", no_secret)
    turn = user_turn(staged(1, "", "image", "image/jpeg"))

    assert (
        turn_input.for_model(CONVERSATION, turn, client=None)
        == "[photo 1 (image/jpeg), which could not be loaded]"
    )


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (PHOTO, "image/jpeg"),
        (STICKER, "image/webp"),
        (b"\x89PNG\r\n\x1a\n....", "image/png"),
        (b"GIF89a..", None),
        (PDF, None),
        (b"RIFF....WAVE", None),
    ],
)
def test_images_are_told_by_their_first_bytes(data, kind):
    assert media.sniff_image(data) == kind


def test_the_media_time_budget_is_shared_by_the_batch(vendors, configure, monkeypatch):
    """Each fetch, like Twilio's media fetch (twilio_media.fetch), makes no request once its
    deadline has passed, and otherwise waits out the time it was given: one deadline for
    the batch lets one request spend the budget and the other photos get none; a deadline
    per item would let each of the six spend a budget of its own."""
    configure(MEDIA_TIME_BUDGET_SECONDS="0.2")
    clock = FakeMonotonic()
    requests: list[str] = []

    def slow(media_url, credentials, max_bytes, deadline, budget=None):
        with clock.lock:
            if clock.now >= deadline:
                raise MediaUnavailable("out of time")
            requests.append(media_url)
            clock.sleep(deadline - clock.now)
        raise MediaUnavailable("out of time")

    monkeypatch.setattr(media, "time", clock)
    monkeypatch.setattr(twilio_media, "fetch", slow)
    turn = user_turn(staged(1, "", "image", *["image/jpeg"] * 6))

    built = turn_input.for_model(CONVERSATION, turn, client=None)

    assert len(requests) == 1
    assert clock.elapsed == pytest.approx(0.2)  # the batch's budget, spent once
    assert built == "\n".join(f"[photo {n} (image/jpeg), which could not be loaded]" for n in range(1, 7))


def test_an_unexpected_error_loading_a_media_is_a_line_too(vendors, monkeypatch):
    def broken(media_url, credentials, max_bytes, deadline, budget=None):
        raise RuntimeError("a bug")

    monkeypatch.setattr(twilio_media, "fetch", broken)
    turn = user_turn(staged(1, "", "image", "image/jpeg"))

    assert (
        turn_input.for_model(CONVERSATION, turn, client=None)
        == "[photo 1 (image/jpeg), which could not be loaded]"
    )


def test_transcripts_that_cannot_be_kept_do_not_fail_the_batch(vendors, monkeypatch):
    def refused(conversation_id, turn_id, transcripts):
        raise RuntimeError("item too large")

    monkeypatch.setattr(turns, "record_transcripts", refused)
    vendors.serve(10, "audio/ogg", VOICE_NOTE)
    vendors.says[VOICE_NOTE] = "hello"
    turn = user_turn(staged(1, "", "audio", "audio/ogg"))

    assert turn_input.for_model(CONVERSATION, turn, client=None) == "[voice note 1, transcribed] hello"
