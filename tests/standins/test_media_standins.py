"""What people send, in the stand-ins: Twilio serves media behind its credentials and a
short-lived redirect; OpenAI transcribes recordings and reads images, refusing what it
cannot take, through the real SDK and over plain HTTP."""

from __future__ import annotations

import base64
import hashlib
import time

import openai
import pytest
import requests

from functions.answer.openai_models import DEFAULT_MODEL as MODEL
from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN, OPENAI_KEY
from tests.support.media import PDF, PHOTO, VOICE_NOTE

# --- Twilio: media ------------------------------------------------------------------------


def test_media_need_the_accounts_credentials_and_redirect_to_a_short_lived_link(twilio_standin):
    standin, url = twilio_standin
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)

    unsigned = requests.get(media_url, allow_redirects=False, timeout=3)
    wrong = requests.get(media_url, auth=(ACCOUNT_SID, "not-the-token"), allow_redirects=False, timeout=3)
    signed = requests.get(media_url, auth=(ACCOUNT_SID, AUTH_TOKEN), allow_redirects=False, timeout=3)

    assert [unsigned.status_code, wrong.status_code] == [401, 401]
    assert unsigned.json()["code"] == 20003
    assert signed.status_code == 307 and "/_media/" in signed.headers["Location"]
    link = requests.get(signed.headers["Location"], timeout=3)  # no credentials needed
    assert (link.status_code, link.headers["Content-Type"], link.content) == (200, "image/jpeg", PHOTO)
    assert [(r["path"][:8], r["user"], r["status"]) for r in standin.media_requests] == [
        ("/2010-04", None, 401),
        ("/2010-04", ACCOUNT_SID, 401),
        ("/2010-04", ACCOUNT_SID, 307),
        ("/_media/", None, 200),
    ]


def test_an_expired_link_and_an_unknown_media_are_refused(twilio_standin):
    standin, url = twilio_standin
    standin.link_seconds = 0.1
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "audio/ogg", VOICE_NOTE)
    link = requests.get(media_url, auth=(ACCOUNT_SID, AUTH_TOKEN), allow_redirects=False, timeout=3)
    time.sleep(0.2)

    assert requests.get(link.headers["Location"], timeout=3).status_code == 403
    unknown = media_url.rsplit("/", 1)[0] + "/ME" + "0" * 32
    assert requests.get(unknown, auth=(ACCOUNT_SID, AUTH_TOKEN), timeout=3).status_code == 404


def test_media_faults_and_the_control_api_over_http(twilio_standin):
    _, url = twilio_standin
    stored = requests.post(
        f"{url}/_control/media",
        json={
            "account_sid": ACCOUNT_SID,
            "auth_token": AUTH_TOKEN,
            "content_type": "application/pdf",
            "data_base64": base64.b64encode(PDF).decode(),
        },
        timeout=3,
    )
    media_url = stored.json()["url"]
    assert requests.post(f"{url}/_control/media_faults", json={"faults": [{"status": 500}, {}]}, timeout=3).ok

    answers = [requests.get(media_url, auth=(ACCOUNT_SID, AUTH_TOKEN), timeout=3) for _ in range(2)]

    assert [a.status_code for a in answers] == [500, 200]
    assert answers[1].content == PDF and answers[1].headers["Content-Type"] == "application/pdf"
    listed = requests.get(f"{url}/_control/media_requests", timeout=3).json()["media_requests"]
    assert [r["status"] for r in listed] == [500, 307, 200]


# --- OpenAI: transcriptions -----------------------------------------------------------------


def test_a_recording_is_transcribed_as_it_was_told_and_unknown_audio_is_silence(ai, openai_standin):
    standin, _ = openai_standin
    standin.say(VOICE_NOTE, "ring twice")

    told = ai.audio.transcriptions.create(model="gpt-transcribe", file=("voice.ogg", VOICE_NOTE, "audio/ogg"))
    silent = ai.audio.transcriptions.create(model="gpt-transcribe", file=("other.ogg", b"OggS-other"))
    plain = ai.audio.transcriptions.create(
        model="gpt-transcribe", file=("voice.ogg", VOICE_NOTE), response_format="text"
    )

    assert (told.text, silent.text, plain) == ("ring twice", "", "ring twice")
    assert [(t["model"], t["filename"], t["status"]) for t in standin.transcriptions] == [
        ("gpt-transcribe", "voice.ogg", 200),
        ("gpt-transcribe", "other.ogg", 200),
        ("gpt-transcribe", "voice.ogg", 200),
    ]


def test_a_transcription_refuses_formats_and_sizes_it_does_not_take(ai, openai_standin):
    standin, url = openai_standin
    with pytest.raises(openai.BadRequestError, match="Invalid file format"):
        ai.audio.transcriptions.create(model="gpt-transcribe", file=("voice.amr", b"#!AMR\n"))
    with pytest.raises(openai.APIStatusError) as too_large:
        ai.audio.transcriptions.create(
            model="gpt-transcribe", file=("long.ogg", b"\x00" * (25 * 1024 * 1024 + 1))
        )
    assert too_large.value.status_code == 413
    standin.inject_transcription_faults({"status": 500})
    with pytest.raises(openai.InternalServerError):
        ai.audio.transcriptions.create(model="gpt-transcribe", file=("voice.ogg", VOICE_NOTE))

    # The same over plain HTTP, with what the recording says set by its hash.
    digest = hashlib.sha256(VOICE_NOTE).hexdigest()
    requests.post(f"{url}/_control/transcripts", json={"audio_sha256": digest, "text": "hi"}, timeout=3)
    answer = requests.post(
        f"{url}/v1/audio/transcriptions",
        files={"file": ("v.ogg", VOICE_NOTE)},
        data={"model": "gpt-transcribe"},
        headers={"Authorization": f"Bearer {OPENAI_KEY}"},
        timeout=3,
    )
    assert answer.json() == {"text": "hi"}
    listed = requests.get(f"{url}/_control/transcriptions", timeout=3).json()["transcriptions"]
    assert [t["status"] for t in listed] == [400, 413, 500, 200]


# --- OpenAI: images -------------------------------------------------------------------------


def _image(data: bytes, mime: str = "image/jpeg") -> dict[str, str]:
    return {
        "type": "input_image",
        "image_url": f"data:{mime};base64,{base64.b64encode(data).decode()}",
        "detail": "auto",
    }


def test_an_image_is_read_where_it_stands_among_the_text(ai):
    response = ai.responses.create(
        model=MODEL,
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "[photo 1 (image/jpeg)]"},
                    _image(PHOTO),
                    {"type": "input_text", "text": "is it broken?"},
                ],
            }
        ],
    )
    assert (
        response.output_text
        == f"You said: [photo 1 (image/jpeg)]\n[image image/jpeg, {len(PHOTO)} bytes]\nis it broken?"
    )


@pytest.mark.parametrize(
    ("part", "code"),
    [
        (_image(PDF, "image/jpeg"), "invalid_image_format"),  # not what it says it is
        (_image(PHOTO, "application/pdf"), "invalid_image_format"),  # not an image type
        (
            {"type": "input_image", "image_url": "data:image/jpeg;base64,***", "detail": "auto"},
            "invalid_image_format",
        ),
        (
            {"type": "input_image", "image_url": "https://media.example/photo.jpg", "detail": "auto"},
            "invalid_image_url",
        ),
    ],
)
def test_an_image_the_model_cannot_read_fails_the_request(ai, part, code):
    with pytest.raises(openai.BadRequestError) as refused:
        ai.responses.create(model=MODEL, input=[{"role": "user", "content": [part]}])
    assert refused.value.code == code
