"""The typing-indicator half of the Twilio stand-in: `POST /v2/Indicators/Typing.json`, as
on Twilio's messaging host (https://messaging.twilio.com), with the form fields
`messageId` and `channel` and the account's Basic authentication
(https://www.twilio.com/docs/whatsapp/api/typing-indicators-resource). It shows the
indicator only for a WhatsApp message the stand-in received for that account (the local
gateway tells it of every webhook it is given, as Twilio would have received the
message), answering `{"success": true}`, the resource's one field. A malformed id, a
channel other than `whatsapp`, and an id it holds no inbound WhatsApp message of (never
received, another account's, an SMS, or a message we sent) are refused with 400, as
Twilio answers an id without inbound data ("Unable to create record: invalid or incomplete
inbound data in MDR", https://github.com/twilio/twilio-python/issues/894); Twilio's page
documents no error answer.

Control:
  - `GET /_control/indicators` lists the indicator requests, oldest first: `message_id`,
    `channel`, `account_sid` (the user it authenticated as), `at` (epoch seconds) and the
    answer's `status`.
  - `POST /_control/typing` `{"success": false}`: answer 200 with `{"success": false}`
    from now on (until a reset): an indicator Twilio did not show.
"""

from __future__ import annotations

import re
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import json_response
from infra.local.standins.twilio_accepting import twilio_error
from infra.local.standins.twilio_media import MediaStandIn

MESSAGE_ID = re.compile(r"^(SM|MM)[0-9a-fA-F]{32}$")


class TypingStandIn(MediaStandIn):
    rules = [
        *MediaStandIn.rules,
        Rule("/v2/Indicators/Typing.json", endpoint="typing_api", methods=["POST"]),
        Rule("/_control/indicators", endpoint="control_indicators", methods=["GET"]),
        Rule("/_control/typing", endpoint="control_typing", methods=["POST"]),
    ]

    def __init__(self, link_seconds: float = 4 * 3600) -> None:
        super().__init__(link_seconds)
        self.received: dict[str, dict[str, str]] = {}  # inbound messages, by MessageSid
        self.indicators: list[dict[str, Any]] = []
        self.typing_success = True  # what a 200 says in `success`

    def _reset(self) -> None:
        super()._reset()
        self.received.clear()
        self.indicators.clear()
        self.typing_success = True

    def receive(self, form: dict[str, str]) -> None:
        """An inbound message, as Twilio received it before posting its webhook."""
        sid = form.get("MessageSid") or ""
        with self._lock:
            self.received[sid] = {
                "account_sid": form.get("AccountSid") or "",
                "from": form.get("From") or "",
                "to": form.get("To") or "",
            }

    def typing_api(self, request: Request) -> Response:
        message_id, channel = request.form.get("messageId") or "", request.form.get("channel") or ""
        account = request.authorization.username if request.authorization else None
        record = {"message_id": message_id, "channel": channel, "account_sid": account, "at": time.time()}
        with self._lock:
            received = self.received.get(message_id)
        if account is None:
            answer = twilio_error(401, 20003, "Authenticate")
        elif channel != "whatsapp" or not MESSAGE_ID.match(message_id):
            answer = twilio_error(400, 400, "Invalid 'messageId' or 'channel'")
        elif (
            received is None
            or received["account_sid"] != account
            or not received["to"].startswith("whatsapp:")
        ):
            answer = twilio_error(
                400, 400, "Unable to create record: invalid or incomplete inbound data in MDR"
            )
        else:
            answer = json_response({"success": self.typing_success})
        record["status"] = answer.status_code
        with self._lock:
            self.indicators.append(record)
        return answer

    def control_indicators(self, request: Request) -> Response:
        with self._lock:
            return json_response({"indicators": list(self.indicators)})

    def control_typing(self, request: Request) -> Response:
        with self._lock:
            self.typing_success = bool(request.get_json(force=True).get("success", True))
            return json_response({"success": self.typing_success})
