"""Local stand-ins for OpenAI and Twilio, reached through the real SDKs over HTTP.

Both record what they receive and can be told to misbehave, for tests and demos:
`POST /_control/faults` with `{"faults": [...]}` queues faults, each consumed by one API
call (the OpenAI stand-in's `/v1/responses`, the Twilio stand-in's message create), in
order. A fault is an object with any of:
  - "delay": seconds to wait before answering (longer than the SDK timeout = a timeout)
  - "status": HTTP status to answer with instead (429, 500, 503, 400, ...)
  - "code": the error code in the body (OpenAI "conversation_locked"; Twilio 20429, 21610...)
An empty fault `{}` lets its call through, so that a later call can be made to fail.
`POST /_control/chaos` with `{"rate": 0.2, "faults": [...], "seed": 1}` fails that share
of the calls, at random, with faults drawn from the list.
`GET /_control/calls` lists the calls received; `POST /_control/reset` forgets everything.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from collections import deque
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response


class StandIn:
    """Shared plumbing: routes, fault queue, recorded calls."""

    rules: list[Rule] = []

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: deque[dict[str, Any]] = deque()
        self._chaos: tuple[float, list[dict[str, Any]], random.Random] | None = None
        self.calls: list[dict[str, Any]] = []
        self._map = Map(
            [
                Rule("/_control/faults", endpoint="control_faults", methods=["POST"]),
                Rule("/_control/chaos", endpoint="control_chaos", methods=["POST"]),
                Rule("/_control/calls", endpoint="control_calls", methods=["GET"]),
                Rule("/_control/reset", endpoint="control_reset", methods=["POST"]),
                *self.rules,
            ]
        )

    def inject(self, *faults: dict[str, Any]) -> None:
        with self._lock:
            self._faults.extend(faults)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._chaos = None
            self.calls.clear()
            self._reset()

    def _reset(self) -> None:
        pass

    def chaos(self, rate: float, faults: list[dict[str, Any]], seed: int = 0) -> None:
        """From now on, fail each call with probability `rate`, with a fault drawn from
        `faults` (after the queued faults are used up). Rate 0 turns it off."""
        with self._lock:
            self._chaos = (rate, list(faults), random.Random(seed)) if rate > 0 else None

    def _next_fault(self) -> dict[str, Any] | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            if self._chaos is not None:
                rate, faults, rng = self._chaos
                if rng.random() < rate:
                    return dict(rng.choice(faults))
            return None

    def _record(self, call: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append(call)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        adapter = self._map.bind_to_environ(environ)
        try:
            endpoint, args = adapter.match()
        except Exception:
            return Response("not found", 404)(environ, start_response)
        response = getattr(self, endpoint)(request, **args)
        return response(environ, start_response)

    def control_faults(self, request: Request) -> Response:
        self.inject(*(request.get_json(force=True).get("faults") or []))
        return _json({"queued": len(self._faults)})

    def control_chaos(self, request: Request) -> Response:
        body = request.get_json(force=True)
        self.chaos(float(body.get("rate", 0)), body.get("faults") or [], int(body.get("seed", 0)))
        return _json({"chaos": body})

    def control_calls(self, request: Request) -> Response:
        return _json({"calls": self.calls})

    def control_reset(self, request: Request) -> Response:
        self.reset()
        return _json({"reset": True})

    def _apply_fault(self) -> dict[str, Any] | None:
        """Sleep for a delay fault; return the fault if it asks for an error answer."""
        fault = self._next_fault()
        if fault is None:
            return None
        if fault.get("delay"):
            time.sleep(float(fault["delay"]))
        return fault if fault.get("status") else None


class OpenAIStandIn(StandIn):
    """`/v1/conversations` and `/v1/responses`; the reply quotes the user turn."""

    rules = [
        Rule("/v1/conversations", endpoint="create_conversation", methods=["POST"]),
        Rule("/v1/responses", endpoint="create_response", methods=["POST"]),
    ]

    def create_conversation(self, request: Request) -> Response:
        body = request.get_json(force=True, silent=True) or {}
        conversation = {
            "id": "conv_" + secrets.token_hex(12),
            "object": "conversation",
            "created_at": int(time.time()),
            "metadata": body.get("metadata") or {},
        }
        return _json(conversation)

    def create_response(self, request: Request) -> Response:
        body = request.get_json(force=True)
        fault = self._apply_fault()
        self._record(
            {
                "conversation": body.get("conversation"),
                "model": body.get("model"),
                "instructions": body.get("instructions"),
                "input": body.get("input"),
                "status": int(fault["status"]) if fault else 200,
                "at": time.time(),
            }
        )
        if fault:
            error = {"message": "injected fault", "type": "invalid_request_error", "code": fault.get("code")}
            return _json({"error": error}, int(fault["status"]))
        text = f"You said: {body.get('input')}"
        input_tokens = len(str(body.get("input")).split()) + len(str(body.get("instructions") or "").split())
        output_tokens = len(text.split())
        return _json(
            {
                "id": "resp_" + secrets.token_hex(12),
                "object": "response",
                "created_at": int(time.time()),
                "status": "completed",
                "model": body.get("model"),
                "conversation": {"id": body.get("conversation")},
                "output": [
                    {
                        "type": "message",
                        "id": "msg_" + secrets.token_hex(12),
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {
                    "input_tokens": input_tokens,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": input_tokens + output_tokens,
                },
            }
        )


class TwilioStandIn(StandIn):
    """Create and list messages under `/2010-04-01/Accounts/<sid>/Messages.json`."""

    rules = [
        Rule(
            "/2010-04-01/Accounts/<account_sid>/Messages.json",
            endpoint="messages_api",
            methods=["GET", "POST"],
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[dict[str, Any]] = []

    def _reset(self) -> None:
        self.messages.clear()

    def messages_endpoint_for(self, account_sid: str) -> str:
        return f"/2010-04-01/Accounts/{account_sid}/Messages.json"

    def messages_api(self, request: Request, account_sid: str) -> Response:
        if request.authorization is None or request.authorization.username != account_sid:
            return _twilio_error(401, 20003, "Authenticate")
        if request.method == "GET":
            with self._lock:
                listed = [m for m in reversed(self.messages) if m["account_sid"] == account_sid]
            return _json(
                {
                    "messages": listed,
                    "first_page_uri": self.messages_endpoint_for(account_sid),
                    "next_page_uri": None,
                    "previous_page_uri": None,
                    "page": 0,
                    "page_size": len(listed),
                    "start": 0,
                    "end": max(0, len(listed) - 1),
                    "uri": self.messages_endpoint_for(account_sid),
                }
            )
        form = request.form
        fault = self._apply_fault()
        status = int(fault["status"]) if fault else 201
        self._record(
            {"to": form.get("To"), "from": form.get("From"), "body": form.get("Body"), "status": status}
        )
        if fault:
            return _twilio_error(
                int(fault["status"]), int(fault.get("code") or fault["status"]), "injected fault"
            )
        now = format_datetime(datetime.now(UTC))
        message = {
            "sid": "SM" + secrets.token_hex(16),
            "account_sid": account_sid,
            "to": form.get("To"),
            "from": form.get("From"),
            "body": form.get("Body"),
            "content_sid": form.get("ContentSid"),
            "status": "queued",
            "direction": "outbound-api",
            "num_segments": "1",
            "num_media": "0",
            "date_created": now,
            "date_updated": now,
            "date_sent": None,
            "api_version": "2010-04-01",
            "error_code": None,
            "error_message": None,
            "price": None,
            "uri": self.messages_endpoint_for(account_sid),
        }
        with self._lock:
            self.messages.append(message)
        return _json(message, 201)


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status, content_type="application/json")


def _twilio_error(status: int, code: int, message: str) -> Response:
    return _json(
        {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        },
        status,
    )
