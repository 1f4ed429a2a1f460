"""The Twilio stand-in: create, list and fetch Messages under `/2010-04-01/Accounts/<sid>/`,
with the status progression and signed status callbacks of twilio_delivery.py, the list
filters and paging of twilio_listing.py, the media people sent (twilio_media.py) and
WhatsApp's typing indicator (twilio_typing.py), the messages people sent and the deletion of
messages and media (twilio_deletion.py). Messages are created, listed and fetched
only with an account's SID and one of its tokens (twilio_accounts.py; 401, code 20003,
otherwise), and their status callbacks are signed with the account's token of the moment.

`messages.create` takes no idempotency key (none among its parameters in
https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource), and
the docs say nothing of a request whose answer is lost: the stand-in takes the case hardest
on the client. A `delay` fault accepts the message first (it is listed and gets its status
callbacks) and only then answers, late: a client that timed out has still sent it.

Faults (see base.py for the queue) are used by the message create:
  - `{"status": 429, "code": 20429}`, `{"status": 400, "code": 63016}`, `{"status": 503}`:
    refused with that HTTP status and Twilio error code (after `delay`, if given); nothing
    is created;
  - `{"delay": 12}`: accepted, answered 12 s later;
  - `{"outcome": "undelivered", "error_code": 63016, "after": 0.5}`: accepted (201, queued),
    then reported `undelivered` with that ErrorCode 0.5 s later. Outcomes: `delivered` (SMS
    default), `read` (WhatsApp default), `sent`, `undelivered`, `failed`. Combines with `delay`.
  - `{"queued_seconds": 12}`: accepted, then kept `queued` 12 s (no callback, not sent)
    before it is sent, or failed with 30036 once its ValidityPeriod has passed
    (twilio_queue.py). Combines with `delay` and `outcome`.
Without `after`, each status step takes `step_seconds` (0.05 s by default).
`GET /_control/callbacks` lists the status callbacks POSTed, with their answers.
`POST /_control/signing` `{"url_fragment": false}` signs callbacks without the URL's
fragment (default: with it; Twilio does not document which).
`POST /_control/list_lag` `{"seconds": 30}` shows a created message in the Messages list
only that long after its creation (default 0: at once). Twilio promises nothing about how
soon it appears there.
`POST /_control/rate` `{"per_recipient_seconds": 3, "at": "create"}` lets one message
through per that many seconds from one number to one recipient (twilio_rate.py): sooner is
refused at create (`"create"`: 400, code 63018) or reported `failed` with 63018 by status
callback (`"callback"`). Seconds 0 turns it off (the default).
`POST /_control/sender_mps` `{"from": "whatsapp:+1...", "mps": 2}` makes that sender send
`mps` messages a second, the rest waiting their turn in Twilio's queue in the order they
were created; a message whose ValidityPeriod passes while it waits is failed with 30036
(twilio_queue.py). `mps` 0 sends at once again (the default for every sender).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import Fault, json_response
from infra.local.standins.twilio_accepting import API, twilio_error
from infra.local.standins.twilio_accepting import new_message as _new_message
from infra.local.standins.twilio_accepting import refusal as _refusal
from infra.local.standins.twilio_deletion import DeletionStandIn
from infra.local.standins.twilio_delivery import (
    apply_status,
    callback_params,
    post_callback,
    statuses_after_acceptance,
)
from infra.local.standins.twilio_listing import matcher, newest_first, page_of
from infra.local.standins.twilio_queue import (
    INVALID_VALIDITY_PERIOD,
    VALIDITY_PERIOD_EXPIRED,
    SenderQueue,
    validity_period,
)
from infra.local.standins.twilio_rate import CHANNEL_RATE_LIMITED, RecipientRate

# Kept with each message for tests, but not part of Twilio's Message resource.
_NOT_IN_RESOURCE = ("content_sid", "status_callback", "created_monotonic")


class TwilioStandIn(DeletionStandIn):
    rules = [
        *DeletionStandIn.rules,
        Rule(f"{API}/<account_sid>/Messages.json", endpoint="messages_api", methods=["GET", "POST"]),
        Rule(f"{API}/<account_sid>/Messages/<sid>.json", endpoint="message_api", methods=["GET"]),
        Rule("/_control/callbacks", endpoint="control_callbacks", methods=["GET"]),
        Rule("/_control/signing", endpoint="control_signing", methods=["POST"]),
        Rule("/_control/list_lag", endpoint="control_list_lag", methods=["POST"]),
        Rule("/_control/rate", endpoint="control_rate", methods=["POST"]),
        Rule("/_control/sender_mps", endpoint="control_sender_mps", methods=["POST"]),
    ]

    def __init__(self, step_seconds: float = 0.05, link_seconds: float = 4 * 3600) -> None:
        super().__init__(link_seconds)
        self.messages: list[dict[str, Any]] = []  # accepted, oldest first
        self.callbacks: list[dict[str, Any]] = []  # status callback attempts
        self.step_seconds = step_seconds
        self.sign_url_fragment = True  # whether callbacks are signed over the URL's fragment too
        self.list_lag_seconds = 0.0  # how long a created message stays out of the list
        self.rate = RecipientRate()
        self.senders = SenderQueue()  # each sender's rate: its messages wait their turn

    def _reset(self) -> None:
        super()._reset()
        self.messages.clear()
        self.callbacks.clear()
        self.sign_url_fragment = True
        self.list_lag_seconds = 0.0
        self.rate.set(0)
        self.senders.clear()

    def list_lag(self, seconds: float) -> None:
        """Show a created message in the Messages list only `seconds` after its creation."""
        with self._lock:
            self.list_lag_seconds = max(0.0, float(seconds))

    def messages_endpoint_for(self, account_sid: str) -> str:
        return f"{API}/{account_sid}/Messages.json"

    # --- the API --------------------------------------------------------------------------

    def messages_api(self, request: Request, account_sid: str) -> Response:
        if not self.authenticates(account_sid, request.authorization):  # twilio_accounts.py
            return twilio_error(401, 20003, "Authenticate")
        if request.method == "GET":
            return self._list(request, account_sid)
        return self._create(request, account_sid)

    def message_api(self, request: Request, account_sid: str, sid: str) -> Response:
        if not self.authenticates(account_sid, request.authorization):
            return twilio_error(401, 20003, "Authenticate")
        with self._lock:
            found = [m for m in self.stored_messages() if m["sid"] == sid and m["account_sid"] == account_sid]
            if not found:
                return twilio_error(404, 20404, f"The requested resource {request.path} was not found")
            return json_response(resource(found[0]))

    def _list(self, request: Request, account_sid: str) -> Response:
        args = request.args.to_dict()
        try:
            matches = matcher(args)
        except ValueError:
            return twilio_error(400, 20001, "Invalid DateSent")
        with self._lock:
            shown = time.monotonic() - self.list_lag_seconds
            listed = [
                resource(m)
                for m in self.stored_messages()
                if m["account_sid"] == account_sid and m["created_monotonic"] <= shown and matches(m)
            ]
            return json_response(page_of(newest_first(listed), args, request.path))

    def _create(self, request: Request, account_sid: str) -> Response:
        form = request.form
        fault = self._next_fault()
        call: dict[str, Any] = {
            "to": form.get("To"),
            "from": form.get("From"),
            "body": form.get("Body"),
            "content_sid": form.get("ContentSid"),
            "status_callback": form.get("StatusCallback"),
            "sid": None,
            "at": time.time(),
            "fault": fault or None,
        }
        delay = float(fault.get("delay") or 0)
        if fault.get("status"):
            time.sleep(delay)
            status = int(fault["status"])
            return self._answer(
                call, twilio_error(status, int(fault.get("code") or status), "Injected fault")
            )
        refusal = _refusal(form)
        if refusal is not None:
            return self._answer(call, refusal)
        refused = self.rate.refusal(form.get("From") or "", form.get("To") or "")
        if refused == "create":
            error = twilio_error(400, CHANNEL_RATE_LIMITED, "Rate limit exceeded for Channel")
            return self._answer(call, error)
        if refused == "callback":
            fault = {**fault, "outcome": "failed", "error_code": CHANNEL_RATE_LIMITED}
        validity = validity_period(form)
        if validity is None:
            error = twilio_error(400, INVALID_VALIDITY_PERIOD, "Invalid validity period value")
            return self._answer(call, error)
        # twilio_queue.py: kept queued (a fault's time, then its sender's turn), then sent or expired
        sender, fault_held = form.get("From") or "", float(fault.get("queued_seconds") or 0)
        held = self.senders.turn(sender, validity, fault_held)
        fault = {**fault, "queued_seconds": held.seconds}
        if held.expires:
            fault = {**fault, "outcome": "failed", "error_code": VALIDITY_PERIOD_EXPIRED}
        message = _new_message(account_sid, form)
        statuses = statuses_after_acceptance(message, fault.get("outcome"))
        with self._lock:
            self.messages.append(message)
            created, epoch = resource(message), self._epoch
        call["sid"] = message["sid"]
        self._answer(call, json_response(created, 201))
        args = (message, statuses, fault, epoch)
        threading.Thread(target=self._deliver, args=args, daemon=True).start()
        time.sleep(delay)  # accepted already: a client that gives up meanwhile has still sent it
        return json_response(created, 201)

    def _answer(self, call: dict[str, Any], response: Response) -> Response:
        call["status"] = response.status_code
        self._record(call)
        return response

    # --- after acceptance -----------------------------------------------------------------

    def _deliver(self, message: dict[str, Any], statuses: list[str], fault: Fault, epoch: int) -> None:
        """Move the message through its statuses, reporting each to its StatusCallback."""
        after = fault.get("after")
        steps = len(statuses)
        started = time.monotonic() + float(fault.get("queued_seconds") or 0)  # in Twilio's queue
        for n, status in enumerate(statuses, start=1):
            at = float(after) * n / steps if after is not None else self.step_seconds * n
            time.sleep(max(0.0, started + at - time.monotonic()))
            with self._lock:
                if not self._current(epoch):
                    return
                apply_status(message, status, fault.get("error_code") or fault.get("code"))
                params = callback_params(message)
            url = message["status_callback"]
            if url:
                # Signed with the account's token now, not the one the create was sent with.
                token = self.signing_token(message["account_sid"])
                attempts = post_callback(url, params, token, self.sign_url_fragment)
                with self._lock:
                    if self._current(epoch):
                        self.callbacks.extend(attempts)

    # --- control --------------------------------------------------------------------------

    def control_callbacks(self, request: Request) -> Response:
        with self._lock:
            return json_response({"callbacks": list(self.callbacks)})

    def control_list_lag(self, request: Request) -> Response:
        self.list_lag(float(request.get_json(force=True).get("seconds", 0)))
        return json_response({"seconds": self.list_lag_seconds})

    def control_rate(self, request: Request) -> Response:
        body = request.get_json(force=True)
        try:
            self.rate.set(float(body.get("per_recipient_seconds", 0)), str(body.get("at", "create")))
        except ValueError as error:
            return json_response({"error": {"message": str(error), "status": 400}}, 400)
        return json_response({"per_recipient_seconds": self.rate.seconds, "at": self.rate.at})

    def control_sender_mps(self, request: Request) -> Response:
        body = request.get_json(force=True)
        sender = str(body.get("from") or "")
        try:
            self.senders.set(sender, float(body.get("mps", 0)))
        except (TypeError, ValueError) as error:
            return json_response({"error": {"message": str(error), "status": 400}}, 400)
        return json_response({"from": sender, "mps": self.senders.rates.get(sender, 0)})

    def control_signing(self, request: Request) -> Response:
        self.sign_url_fragment = bool(request.get_json(force=True).get("url_fragment", True))
        return json_response({"url_fragment": self.sign_url_fragment})


def resource(message: dict[str, Any]) -> dict[str, Any]:
    """The Message resource as the API shows it."""
    return {key: value for key, value in message.items() if key not in _NOT_IN_RESOURCE}
