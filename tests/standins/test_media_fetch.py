"""The service's media fetch and transcription against the stand-ins: Twilio's media URLs
only, with the account's credentials on the first request and none on the redirect,
within a size limit; anything else refused before a request is made."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest
import requests

from functions.answer import openai_audio, twilio_media
from functions.answer.openai_audio import TranscriptionFailed
from functions.answer.twilio_media import MediaUnavailable
from functions.config import forget_settings
from functions.stack_names import STACK_NAME, event_bus_name
from functions.storage.tables import ALL_TABLES
from functions.tenancy.secrets import TwilioCredentials
from tests.standins.conftest import ACCOUNT_SID, AUTH_TOKEN
from tests.support.media import PHOTO, VOICE_NOTE

CREDENTIALS = TwilioCredentials(account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN)


@pytest.fixture
def twilio_at(twilio_standin, monkeypatch) -> Iterator[tuple[object, str]]:
    """The stand-in as the Twilio API the functions are configured with."""
    standin, url = twilio_standin
    for table in ALL_TABLES:
        monkeypatch.setenv(table.env_var, table.logical_id)
    monkeypatch.setenv("EVENT_BUS_NAME", event_bus_name(STACK_NAME))
    monkeypatch.setenv("TWILIO_API_BASE_URL", url)
    forget_settings()
    yield standin, url
    monkeypatch.undo()
    forget_settings()


def soon() -> float:
    return time.monotonic() + 3


def test_a_media_is_fetched_with_the_accounts_credentials_and_its_redirect_without(twilio_at):
    standin, url = twilio_at
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)

    fetched = twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, soon())

    assert (fetched.content_type, fetched.data) == ("image/jpeg", PHOTO)
    assert [(r["path"][:8], r["user"], r["status"]) for r in standin.media_requests] == [
        ("/2010-04", ACCOUNT_SID, 307),
        ("/_media/", None, 200),  # the short-lived link gets no credentials
    ]


@pytest.mark.parametrize(
    "media_url",
    [
        "https://media.example/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",  # not Twilio
        "http://api.twilio.com/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",  # not https
        "https://api.twilio.com.example/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",
        "https://api.twilio.com@media.example/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",
        "https://api.twilio.com:8443/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",
        "https://api.twilio.com/2010-04-01/Accounts/AC{h}/Messages/MM{h}/Media/ME{h}",  # another account's
        "https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}?x=1",
        "https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages/MM{h}.json",  # not a media
        "{standin}/2010-04-01/Accounts/AC{h}/Messages/MM{h}/Media/ME{h}",  # another account's, locally
        # a redirect's hosts are never where the credentials go
        "https://mms.twiliocdn.com/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",
        "https://s3-external-1.amazonaws.com/2010-04-01/Accounts/{sid}/Messages/MM{h}/Media/ME{h}",
    ],
)
def test_only_media_urls_of_the_account_on_twilios_hosts_are_fetched(twilio_at, media_url):
    standin, url = twilio_at
    media_url = media_url.format(sid=ACCOUNT_SID, h="f" * 32, standin=url)

    assert not twilio_media.is_twilio_media_url(media_url, ACCOUNT_SID)
    with pytest.raises(MediaUnavailable, match="not a media URL"):
        twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, soon())
    assert standin.media_requests == []  # refused before any request


def test_twilios_own_media_urls_are_allowed(twilio_at):
    url = f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT_SID}/Messages/MM{'a' * 32}/Media/ME{'b' * 32}"
    assert twilio_media.is_twilio_media_url(url, ACCOUNT_SID)
    assert not twilio_media.is_twilio_media_url(url, "AC" + "9" * 32)


def test_a_redirect_off_twilios_hosts_is_not_followed(twilio_at):
    standin, url = twilio_at
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)
    standin.inject_media_faults({"location": "https://media.example/elsewhere"})

    with pytest.raises(MediaUnavailable, match="redirected off"):
        twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, soon())


class _LegacyMediaHost(requests.adapters.BaseAdapter):
    """Twilio's older media host, answered here: records each request it is sent."""

    def __init__(self, seen: list[requests.PreparedRequest]) -> None:
        super().__init__()
        self.seen = seen

    def send(self, request: requests.PreparedRequest, **kwargs: object) -> requests.Response:
        self.seen.append(request)
        response = requests.Response()
        response.status_code, response.url, response.request = 200, str(request.url), request
        response.headers["Content-Type"] = "image/jpeg"
        response.raw = io.BytesIO(PHOTO)
        return response

    def close(self) -> None:
        pass


@pytest.fixture
def legacy_host(monkeypatch) -> list[requests.PreparedRequest]:
    """Requests to s3-external-1.amazonaws.com answered without leaving the machine."""
    seen: list[requests.PreparedRequest] = []

    class Session(requests.Session):
        def __init__(self) -> None:
            super().__init__()
            self.mount(f"https://{LEGACY_HOST}/", _LegacyMediaHost(seen))

    monkeypatch.setattr(twilio_media.requests, "Session", Session)
    return seen


LEGACY_HOST = "s3-external-1.amazonaws.com"


def test_a_redirect_to_twilios_older_media_host_is_followed_by_default_without_credentials(
    twilio_at, legacy_host
):
    standin, url = twilio_at
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)
    standin.inject_media_faults({"location": f"https://{LEGACY_HOST}/media.twiliocdn.com/{ACCOUNT_SID}/x"})

    fetched = twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, soon())

    assert fetched.data == PHOTO
    assert [r["user"] for r in standin.media_requests] == [ACCOUNT_SID]
    (followed,) = legacy_host
    assert "Authorization" not in followed.headers


def test_the_hosts_a_media_may_redirect_to_are_a_setting(twilio_at, legacy_host, monkeypatch):
    standin, url = twilio_at
    monkeypatch.setenv("MEDIA_REDIRECT_HOSTS", "mms.twiliocdn.com")
    forget_settings()
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)
    standin.inject_media_faults({"location": f"https://{LEGACY_HOST}/media.twiliocdn.com/{ACCOUNT_SID}/x"})

    with pytest.raises(MediaUnavailable, match="redirected off"):
        twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, soon())
    assert legacy_host == []


@pytest.mark.parametrize(
    ("fault", "reason"),
    [({"status": 404}, "HTTP 404"), ({"status": 401}, "HTTP 401"), ({"delay": 1}, "unreachable")],
)
def test_a_failed_fetch_says_why(twilio_at, fault, reason):
    standin, url = twilio_at
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)
    standin.inject_media_faults(fault)

    with pytest.raises(MediaUnavailable, match=reason):
        twilio_media.fetch(media_url, CREDENTIALS, 1_000_000, time.monotonic() + 0.3)


def test_a_media_over_the_size_limit_is_refused(twilio_at):
    standin, url = twilio_at
    media_url = url + standin.add_media(ACCOUNT_SID, AUTH_TOKEN, "image/jpeg", PHOTO)

    with pytest.raises(MediaUnavailable, match="size limit"):
        twilio_media.fetch(media_url, CREDENTIALS, len(PHOTO) - 1, soon())


def test_a_voice_note_is_transcribed_and_a_failure_is_a_transcription_failure(ai, openai_standin):
    standin, _ = openai_standin
    standin.say(VOICE_NOTE, "ring twice")

    said = openai_audio.transcribe(ai, VOICE_NOTE, "voice-note-1", "audio/ogg", "gpt-transcribe", 3)

    assert said == "ring twice"
    assert standin.transcriptions[-1]["filename"] == "voice-note-1.ogg"
    standin.inject_transcription_faults({"status": 503})
    with pytest.raises(TranscriptionFailed, match="HTTP 503"):
        openai_audio.transcribe(ai, VOICE_NOTE, "voice-note-1", "audio/ogg", "gpt-transcribe", 3)
    with pytest.raises(TranscriptionFailed, match="does not take"):
        openai_audio.transcribe(ai, b"#!AMR", "voice-note-1", "audio/amr", "gpt-transcribe", 3)
