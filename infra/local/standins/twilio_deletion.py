"""Deleting what Twilio keeps of a person, as Twilio deletes it, and the messages people sent
in the Messages list beside the ones we sent (a Message resource "represents an inbound or
outbound message": https://www.twilio.com/docs/messaging/api/message-resource).

- Each webhook the local gateway is given is a message Twilio received: it is kept as an
  inbound Message resource (`direction` `inbound`, `status` `received`, its Body and
  NumMedia), listed and fetched with the messages we sent, never in `.messages` (the list of
  those we sent, which tests read).
- `DELETE /2010-04-01/Accounts/<sid>/Messages/<MessageSid>.json` answers 204 with no body;
  the message is gone from the list, and fetching or deleting it again answers 404 (20404).
  "Deleting a Message resource also deletes any associated Media": the stand-in deletes the
  files stored under the message. Twilio keeps message bodies "for up to 30 days after an
  HTTP DELETE request in our database backups", out of anyone's reach (Twilio's Message
  resource page, "Delete a Message resource").
- A message Twilio has not finished with is refused with code 20009, "Cannot delete this
  resource before it is complete": "You attempted to delete a call or message resource
  before it was completed ... wait several minutes and try again"
  (https://www.twilio.com/docs/api/errors/20009). The stand-in refuses a message still
  `accepted`, `scheduled`, `queued`, `sending` or `sent` (no delivery receipt yet: the
  20009 page's "before all of Twilio's systems finished processing it"), with HTTP 400 (the
  page gives the code, not the HTTP status).
- `DELETE .../Messages/<MessageSid>/Media/<MediaSid>.json` deletes one media file
  (https://www.twilio.com/docs/messaging/api/media-resource, "Delete a Media resource"):
  204, then 404 for the file and for its URL.

Control: `POST /_control/delete_faults` `{"faults": [{"status": 503}, {}, ...]}`: each used by
one DELETE (message or media), in order: `{"status": 503}` (any status, `code` optional)
refuses it with Twilio's error body and deletes nothing; `{}` lets it through.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import Fault, json_response
from infra.local.standins.twilio_accepting import API, inbound_message, twilio_error
from infra.local.standins.twilio_typing import TypingStandIn

# The statuses of a message Twilio has not finished with: deleting it is refused (20009).
NOT_COMPLETE = ("accepted", "scheduled", "queued", "sending", "sent")
CANNOT_DELETE_YET = 20009


class DeletionStandIn(TypingStandIn):
    rules = [
        *TypingStandIn.rules,
        Rule(f"{API}/<account_sid>/Messages/<sid>.json", endpoint="delete_message_api", methods=["DELETE"]),
        Rule(
            f"{API}/<account_sid>/Messages/<message_sid>/Media/<media_sid>.json",
            endpoint="delete_media_api",
            methods=["DELETE"],
        ),
        Rule("/_control/delete_faults", endpoint="control_delete_faults", methods=["POST"]),
    ]
    messages: list[dict[str, Any]]  # the messages we sent (twilio.py)

    def __init__(self, link_seconds: float = 4 * 3600) -> None:
        super().__init__(link_seconds)
        self.inbound: dict[str, dict[str, Any]] = {}  # the messages people sent, by MessageSid
        self._delete_faults: deque[Fault] = deque()
        self._deletion_lock = threading.Lock()

    def _reset(self) -> None:
        super()._reset()
        with self._deletion_lock:
            self.inbound.clear()
            self._delete_faults.clear()

    def receive(self, form: dict[str, str]) -> None:
        """An inbound message, as Twilio received it before posting its webhook: kept as the
        Message resource Twilio lists (a retried webhook is the same message)."""
        super().receive(form)
        sid = form.get("MessageSid") or ""
        with self._deletion_lock:
            if sid and sid not in self.inbound:
                self.inbound[sid] = inbound_message(form)

    def stored_messages(self) -> list[dict[str, Any]]:
        """Every message the account's list holds: those we sent, and those people sent."""
        with self._deletion_lock:
            return [*self.messages, *self.inbound.values()]

    def inject_delete_faults(self, *faults: Fault) -> None:
        with self._deletion_lock:
            self._delete_faults.extend(faults)

    # --- the API --------------------------------------------------------------------------

    def delete_message_api(self, request: Request, account_sid: str, sid: str) -> Response:
        if not self.authenticates(account_sid, request.authorization):
            return twilio_error(401, 20003, "Authenticate")
        if (refused := self._delete_fault()) is not None:
            return refused
        with self._lock, self._deletion_lock:
            sent = [m for m in self.messages if m["sid"] == sid and m["account_sid"] == account_sid]
            received = self.inbound.get(sid)
            found = (
                sent[0] if sent else received if received and received["account_sid"] == account_sid else None
            )
            if found is None:
                return twilio_error(404, 20404, f"The requested resource {request.path} was not found")
            if found["status"] in NOT_COMPLETE:
                return twilio_error(
                    400, CANNOT_DELETE_YET, "Cannot delete this resource before it is complete"
                )
            if sent:
                self.messages.remove(found)
            else:
                del self.inbound[sid]
        self._forget_media_of(account_sid, sid)
        return Response(status=204)

    def delete_media_api(
        self, request: Request, account_sid: str, message_sid: str, media_sid: str
    ) -> Response:
        if not self.authenticates(account_sid, request.authorization):
            return twilio_error(401, 20003, "Authenticate")
        if (refused := self._delete_fault()) is not None:
            return refused
        path = f"{API}/{account_sid}/Messages/{message_sid}/Media/{media_sid}"
        with self._media_lock:
            stored = self.media.pop(path, None)
        if stored is None:
            return twilio_error(404, 20404, f"The requested resource {request.path} was not found")
        return Response(status=204)

    def _delete_fault(self) -> Response | None:
        with self._deletion_lock:
            fault = dict(self._delete_faults.popleft()) if self._delete_faults else {}
        if not fault.get("status"):
            return None
        status = int(fault["status"])
        return twilio_error(status, int(fault.get("code") or status), "Injected fault")

    def _forget_media_of(self, account_sid: str, message_sid: str) -> None:
        """A deleted message's media go with it."""
        under = f"{API}/{account_sid}/Messages/{message_sid}/Media/"
        with self._media_lock:
            for path in [p for p in self.media if p.startswith(under)]:
                del self.media[path]

    # --- control --------------------------------------------------------------------------

    def control_delete_faults(self, request: Request) -> Response:
        self.inject_delete_faults(*(request.get_json(force=True).get("faults") or []))
        with self._deletion_lock:
            return json_response({"queued": len(self._delete_faults)})
