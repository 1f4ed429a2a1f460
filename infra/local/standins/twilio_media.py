"""The media half of the Twilio stand-in: the files people sent, served as Twilio serves
them to the service that fetches them from a webhook's `MediaUrlN`.

Twilio's media URL is `/2010-04-01/Accounts/<AccountSid>/Messages/<MessageSid>/Media/<MediaSid>`
on api.twilio.com; without an extension it returns the media with its MIME type
(https://www.twilio.com/docs/messaging/api/media-resource). "Twilio enforces HTTP Basic
Authentication for all media URLs" (same page): the account's SID and auth token, or
401 (code 20003). An authenticated request is redirected to a short-lived URL, "only
valid for 4 hours", on another host (mms.twiliocdn.com), which needs no credentials
(https://help.twilio.com/articles/223183748). The stand-in redirects (307) to
`/_media/<token>` on itself, valid for `link_seconds`.

Control:
  - `POST /_control/media` `{"account_sid", "auth_token", "content_type", "data_base64",
    "message_sid"?}` stores a file as if a user had sent it; the answer is its `url`.
  - `POST /_control/media_faults` `{"faults": [...]}`: each used by one media request
    (the authenticated one), in order: `{"status": 404}` (or any status, with Twilio's
    error body), `{"delay": 5}` (the answer comes 5 s late), `{"location": <url>}` (a
    redirect there instead), `{}` (let it through).
  - `GET /_control/media_requests` lists the media requests and the requests of their
    links (path `/_media/`), with the user they authenticated as and their answers.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import Fault, json_response
from infra.local.standins.twilio_accepting import twilio_error
from infra.local.standins.twilio_accounts import TwilioAccountsStandIn

API = "/2010-04-01/Accounts"


@dataclass
class StoredMedia:
    account_sid: str
    auth_token: str
    content_type: str
    data: bytes


class MediaStandIn(TwilioAccountsStandIn):
    rules = [
        *TwilioAccountsStandIn.rules,
        Rule(
            f"{API}/<account_sid>/Messages/<message_sid>/Media/<media_sid>",
            endpoint="media_api",
            methods=["GET"],
        ),
        Rule("/_media/<token>", endpoint="media_link", methods=["GET"]),
        Rule("/_control/media", endpoint="control_media", methods=["POST"]),
        Rule("/_control/media_faults", endpoint="control_media_faults", methods=["POST"]),
        Rule("/_control/media_requests", endpoint="control_media_requests", methods=["GET"]),
    ]

    def __init__(self, link_seconds: float = 4 * 3600) -> None:
        super().__init__()
        self.media: dict[str, StoredMedia] = {}  # by path
        self.links: dict[str, tuple[str, float]] = {}  # token → (path, expires at)
        self.media_requests: list[dict[str, Any]] = []
        self._media_faults: deque[Fault] = deque()
        self.link_seconds = link_seconds
        self._media_lock = threading.Lock()

    def _reset(self) -> None:
        with self._media_lock:
            self.media.clear()
            self.links.clear()
            self.media_requests.clear()
            self._media_faults.clear()

    # --- for tests ------------------------------------------------------------------------

    def add_media(
        self,
        account_sid: str,
        auth_token: str,
        content_type: str,
        data: bytes,
        message_sid: str | None = None,
    ) -> str:
        """Keep a file as if a user had sent it with a message; its path (the MediaUrl
        without the stand-in's base URL)."""
        message_sid = message_sid or "MM" + secrets.token_hex(16)
        path = f"{API}/{account_sid}/Messages/{message_sid}/Media/ME{secrets.token_hex(16)}"
        with self._media_lock:
            self.media[path] = StoredMedia(account_sid, auth_token, content_type, data)
        return path

    def inject_media_faults(self, *faults: Fault) -> None:
        with self._media_lock:
            self._media_faults.extend(faults)

    # --- the API --------------------------------------------------------------------------

    def media_api(self, request: Request, account_sid: str, message_sid: str, media_sid: str) -> Response:
        with self._media_lock:
            fault = dict(self._media_faults.popleft()) if self._media_faults else {}
            stored = self.media.get(request.path)
        time.sleep(float(fault.get("delay") or 0))
        auth = request.authorization
        if fault.get("location"):
            response = Response("", 307, headers={"Location": str(fault["location"])})
        elif fault.get("status"):
            status = int(fault["status"])
            response = twilio_error(status, int(fault.get("code") or status), "Injected fault")
        elif auth is None or (
            stored and (auth.username, auth.password) != (stored.account_sid, stored.auth_token)
        ):
            response = twilio_error(401, 20003, "Authenticate")
        elif stored is None:
            response = twilio_error(404, 20404, f"The requested resource {request.path} was not found")
        else:
            token = secrets.token_urlsafe(24)
            with self._media_lock:
                self.links[token] = (request.path, time.time() + self.link_seconds)
            response = Response("", 307, headers={"Location": f"{request.host_url}_media/{token}"})
        with self._media_lock:
            self.media_requests.append(
                {
                    "path": request.path,
                    "user": auth.username if auth else None,
                    "status": response.status_code,
                }
            )
        return response

    def media_link(self, request: Request, token: str) -> Response:
        """The short-lived URL a media request redirects to: no credentials needed."""
        with self._media_lock:
            path, expires = self.links.get(token, ("", 0.0))
            stored = self.media.get(path)
        if stored is None or time.time() > expires:
            response = Response("Request has expired", 403, content_type="text/plain")
        else:
            response = Response(stored.data, 200, content_type=stored.content_type)
        auth = request.authorization
        with self._media_lock:
            self.media_requests.append(
                {"path": "/_media/", "user": auth.username if auth else None, "status": response.status_code}
            )
        return response

    # --- control --------------------------------------------------------------------------

    def control_media(self, request: Request) -> Response:
        body = request.get_json(force=True)
        path = self.add_media(
            body["account_sid"],
            body["auth_token"],
            body["content_type"],
            base64.b64decode(body["data_base64"]),
            body.get("message_sid"),
        )
        return json_response({"url": request.host_url.rstrip("/") + path}, 201)

    def control_media_faults(self, request: Request) -> Response:
        self.inject_media_faults(*(request.get_json(force=True).get("faults") or []))
        with self._media_lock:
            return json_response({"queued": len(self._media_faults)})

    def control_media_requests(self, request: Request) -> Response:
        with self._media_lock:
            return json_response({"media_requests": list(self.media_requests)})
