"""Shared plumbing of the local stand-ins: routes, the fault queue, chaos, recorded calls.

Every stand-in answers the control API under `/_control/`:
  - `POST /_control/faults` `{"faults": [...]}` queues faults, each used by one API call
    (the OpenAI stand-in's `POST /v1/responses`, the Twilio stand-in's message create), in
    order. An empty fault `{}` lets its call through, so that a later call can be made to
    fail. What a fault may say is described by each stand-in.
  - `POST /_control/chaos` `{"rate": 0.2, "faults": [...], "seed": 1}` fails that share of
    the calls, at random, with faults drawn from the list (after the queued ones are used).
  - `GET /_control/calls` lists the calls received (`calls`) and counts the requests per
    endpoint (`requests`, reads included); `POST /_control/reset` forgets everything.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, deque
from typing import Any, ClassVar

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

Fault = dict[str, Any]


class StandIn:
    """Routes, fault queue and recorded calls; subclasses add their own `rules`."""

    rules: ClassVar[list[Rule]] = []

    def __init__(self) -> None:
        # Re-entrant: handlers hold it while calling helpers that take it too.
        self._lock = threading.RLock()
        self._faults: deque[Fault] = deque()
        self._chaos: tuple[float, list[Fault], random.Random] | None = None
        # Bumped by reset(), so that work started before it stops touching the new state.
        self._epoch = 0
        self.calls: list[dict[str, Any]] = []
        # Requests per endpoint (the control API excluded): what a flow costs in API calls.
        self.request_counts: Counter[str] = Counter()
        control = [
            Rule("/_control/faults", endpoint="control_faults", methods=["POST"]),
            Rule("/_control/chaos", endpoint="control_chaos", methods=["POST"]),
            Rule("/_control/calls", endpoint="control_calls", methods=["GET"]),
            Rule("/_control/reset", endpoint="control_reset", methods=["POST"]),
        ]
        # A Rule binds to one Map: copy the class-level rules for this instance.
        self._map = Map([rule.empty() for rule in [*control, *self.rules]])

    # --- for tests ------------------------------------------------------------------------

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def chaos(self, rate: float, faults: list[Fault], seed: int = 0) -> None:
        """From now on, fail each call with probability `rate`, with a fault drawn from
        `faults` (after the queued faults are used up). Rate 0 turns it off."""
        with self._lock:
            self._chaos = (rate, list(faults), random.Random(seed)) if rate > 0 else None

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._chaos = None
            self.calls.clear()
            self.request_counts.clear()
            self._epoch += 1
            self._reset()

    def _reset(self) -> None:
        """Forget the subclass's own state (called with the lock held)."""

    # --- for subclasses -------------------------------------------------------------------

    def _next_fault(self) -> Fault:
        """The fault for this call: the next queued one, or a chaos draw, or `{}`."""
        with self._lock:
            if self._faults:
                return dict(self._faults.popleft())
            if self._chaos is not None:
                rate, faults, rng = self._chaos
                if rng.random() < rate:
                    return dict(rng.choice(faults))
            return {}

    def _record(self, call: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append(call)

    def _current(self, epoch: int) -> bool:
        """Whether nothing was reset since `epoch` was read."""
        with self._lock:
            return self._epoch == epoch

    # --- WSGI -----------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        adapter = self._map.bind_to_environ(environ)
        try:
            endpoint, args = adapter.match()
        except HTTPException as error:
            code = error.code or 404
            return json_response({"error": {"message": error.description, "status": code}}, code)(
                environ, start_response
            )
        if not endpoint.startswith("control_"):
            with self._lock:
                self.request_counts[endpoint] += 1
        response = getattr(self, endpoint)(request, **args)
        return response(environ, start_response)

    # --- the control API ------------------------------------------------------------------

    def control_faults(self, request: Request) -> Response:
        self.inject(*(request.get_json(force=True).get("faults") or []))
        with self._lock:
            return json_response({"queued": len(self._faults)})

    def control_chaos(self, request: Request) -> Response:
        body = request.get_json(force=True)
        self.chaos(float(body.get("rate", 0)), body.get("faults") or [], int(body.get("seed", 0)))
        return json_response({"chaos": body})

    def control_calls(self, request: Request) -> Response:
        with self._lock:
            return json_response({"calls": list(self.calls), "requests": dict(self.request_counts)})

    def control_reset(self, request: Request) -> Response:
        self.reset()
        return json_response({"reset": True})


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status, headers=headers, content_type="application/json")
