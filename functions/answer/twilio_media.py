"""Fetching the media a person sent, from the URL in Twilio's webhook (`MediaUrlN`).

Only Twilio's media URLs are fetched, and only with the credentials of the account they
belong to: the URL must be `https://api.twilio.com/2010-04-01/Accounts/<AccountSid>/
Messages/<MessageSid>/Media/<MediaSid>` (https://www.twilio.com/docs/messaging/api/media-resource)
with the conversation's own AccountSid, on Twilio's API host (TWILIO_MEDIA_HOSTS, https),
and every redirect must go to one of Twilio's media hosts (MEDIA_REDIRECT_HOSTS, https).
Twilio requires HTTP Basic authentication on media URLs and redirects an authenticated
request to a short-lived URL on mms.twiliocdn.com; media stored before authentication was
enforced stays on its older public host, s3-external-1.amazonaws.com
(https://help.twilio.com/articles/223183748). Neither needs credentials: they are sent
to the first URL only, never on a redirect. A file over the size limit is not read to
its end, and a batch's files share a byte budget (ByteBudget, MEDIA_MAX_BATCH_BYTES) that a
fetch reserves from before it reads: the whole file when Twilio announces its
Content-Length, else each chunk as the download's running total grows. Locally,
TWILIO_API_BASE_URL (the Twilio stand-in) stands for Twilio's hosts."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests

from functions.answer.settings import MediaSettings
from functions.delivery.settings import TwilioSettings
from functions.tenancy.secrets import TwilioCredentials

MEDIA_PATH = re.compile(
    r"^/2010-04-01/Accounts/(?P<account>AC[0-9a-fA-F]{32})/Messages/(MM|SM)[0-9a-fA-F]{32}"
    r"/Media/ME[0-9a-fA-F]{32}$"
)
MAX_REDIRECTS = 3
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Media:
    content_type: str
    data: bytes


class MediaUnavailable(Exception):
    """The media could not be fetched, or may not be: the reason, without the URL."""


class ByteBudget:
    """The bytes a batch's media may still take, shared by the threads that fetch them: a
    fetch reserves its bytes before it reads them, and gives back what it did not keep."""

    def __init__(self, total: int) -> None:
        self.left = total
        self._lock = threading.Lock()

    def reserve(self, size: int) -> None:
        with self._lock:
            if size > self.left:
                raise MediaUnavailable("over the batch's media size limit")
            self.left -= size

    def give_back(self, size: int) -> None:
        with self._lock:
            self.left += size


def is_twilio_media_url(url: str, account_sid: str) -> bool:
    """Whether `url` is a media URL of this account on Twilio's media hosts."""
    parts = urlsplit(url)
    match = MEDIA_PATH.fullmatch(parts.path)
    return bool(
        _on_host(url, MediaSettings.get().twilio_media_hosts)
        and match
        and match["account"] == account_sid
        and not parts.query
        and not parts.fragment
    )


def fetch(
    url: str,
    credentials: TwilioCredentials,
    max_bytes: int,
    deadline: float,
    budget: ByteBudget | None = None,
) -> Media:
    """The media at `url`, at most `max_bytes`, before `deadline` (time.monotonic()), its
    bytes reserved from the batch's `budget` before they are read."""
    if not is_twilio_media_url(url, credentials.account_sid):
        raise MediaUnavailable("not a media URL of the conversation's account on Twilio's media hosts")
    session = requests.Session()
    session.trust_env = False  # no .netrc credentials, no proxies from the environment
    auth: tuple[str, str] | None = (credentials.account_sid, credentials.auth_token)
    target = url
    try:
        for _ in range(MAX_REDIRECTS + 1):
            response = session.get(
                target, auth=auth, allow_redirects=False, stream=True, timeout=_left(deadline)
            )
            if not response.is_redirect:
                with response:
                    return _read(response, max_bytes, deadline, budget or ByteBudget(max_bytes))
            target = urljoin(target, response.headers.get("Location", ""))
            response.close()
            if not _on_host(target, MediaSettings.get().media_redirect_hosts):
                raise MediaUnavailable("redirected off Twilio's media hosts")
            auth = None  # a redirect's short-lived URL needs none, and gets none
        raise MediaUnavailable("too many redirects")
    except requests.RequestException as error:
        raise MediaUnavailable(f"unreachable: {type(error).__name__}") from error
    finally:
        session.close()


def _read(response: requests.Response, max_bytes: int, deadline: float, budget: ByteBudget) -> Media:
    """The body, its bytes reserved from `budget` before it is read: all of them when the
    response announces its length, else as the running total grows (a chunk at most past
    the budget, held only until it is refused). A failed read gives its bytes back."""
    if response.status_code != 200:
        raise MediaUnavailable(f"HTTP {response.status_code}")
    announced = int(response.headers.get("Content-Length") or 0)
    if announced > max_bytes:
        raise MediaUnavailable("larger than the media size limit")
    reserved = 0
    try:
        budget.reserve(announced)
        reserved = announced
        data = bytearray()
        for chunk in response.iter_content(CHUNK_BYTES):
            data += chunk
            if len(data) > max_bytes:
                raise MediaUnavailable("larger than the media size limit")
            if len(data) > reserved:  # no length announced, or more than announced
                budget.reserve(len(data) - reserved)
                reserved = len(data)
            if time.monotonic() > deadline:
                raise MediaUnavailable("out of time")
    except BaseException:
        budget.give_back(reserved)
        raise
    budget.give_back(reserved - len(data))  # announced more than it sent
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    return Media(content_type=content_type, data=bytes(data))


def _on_host(url: str, setting: str) -> bool:
    """Whether `url` is https on one of the hosts of `setting` (comma-separated), or on the
    Twilio stand-in."""
    standin = TwilioSettings.get().twilio_api_base_url.rstrip("/")
    if standin and url.startswith(standin + "/"):
        return True
    parts = urlsplit(url)
    hosts = {h.strip().lower() for h in setting.split(",") if h.strip()}
    return (
        parts.scheme == "https"
        and parts.hostname in hosts
        and parts.port in (None, 443)
        and not parts.username
    )


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise MediaUnavailable("out of time")
    return left
