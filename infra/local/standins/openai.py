"""The OpenAI stand-in: Conversations and Responses, stateful, through the real endpoints.

A response on a conversation reads the conversation's items, and "input items and output
items from this response are automatically added to this conversation after this response
completes" (https://platform.openai.com/docs/api-reference/responses/create#responses_create-conversation):
the docs tie it to the response, not to its client, so a `delay` fault longer than the
client's timeout still completes the work and adds the items.
While a response is in progress its conversation is locked: another response on it is
refused with 400 `conversation_locked`. The reply is `You said: <input text>`.

Function tools (openai_tools.py, after OpenAI's function calling guide): a request may offer
`tools` and a `tool_choice`; a call queued with `POST /_control/tool_calls` `{"name":
"lookup_order", "arguments": {"order": "12345"}}` (or `{"calls": [...]}`) is made by the next
response that may call it: it ends `completed` with `function_call` items and no message.
The reply to an input holding `function_call_output` items is one line per output,
`Tool said: <output>` (after `You said: <text>` when the input holds messages too). An
output that answers no open call, and any request on a conversation (or after a previous
response) holding a call without its output, are refused with 400 as OpenAI refuses them.
`metadata` (16 pairs, keys up to 64 characters, values up to 512) and `safety_identifier`
(up to 64 characters) are checked as OpenAI checks them. Each call in `GET /_control/calls`
records the request's `tools` (names), `tool_choice`, `metadata` and `safety_identifier`.
The faults below apply to tool rounds as to any request.

Knowledge (openai_files.py, openai_knowledge.py, after OpenAI's file search guide): files
uploaded to `/v1/files` and added to vector stores (`/v1/vector_stores`, their `/files`),
owned by the key's project, are searched by a request offering `{"type": "file_search",
"vector_store_ids": [...]}`: its output holds a `file_search_call` item before the message,
and the reply ends with a line `Knowledge said: <best passage>` when the search found one.
A store the key's project does not hold gets 404 "No vector store found with id 'vs_…'.".

Faults (see base.py for the queue) are used by `POST /v1/responses`:
  - `{"status": 503}`, `{"status": 429}`, `{"status": 429, "code": "insufficient_quota"}`,
    `{"status": 400, "code": "conversation_locked"}`, `{"status": 400, "code":
    "context_length_exceeded"}`, `{"status": 401, "code": "invalid_api_key"}`, `{"status":
    404}` (the conversation is not found), `{"status": 404, "code": "model_not_found"}`:
    answered at once (after `delay`, if given), with OpenAI's error body, and nothing is
    done;
  - `{"delay": 30}`: the response is generated in 30 s, then answered (or, in background
    mode, it completes 30 s later);
  - `{"fail": "server_error"}` (with a `delay`, if given): the response is accepted and
    then ends `failed` with that error code, as a background response can; it adds nothing
    to its conversation;
  - `{"refuse_image": "image_content_policy_violation"}` (any image error code): a request
    whose input holds an `input_image` is refused with 400 and that code, nothing done;
    with `"failed": true` it is accepted and then ends `failed` with that code, as `fail`
    does. A request without an image spends the fault and is answered as usual;
  - `{"incomplete": "content_filter"}`: the response ends `incomplete` with that reason,
    its reply cut after a few words, and its input and output added to its conversation;
  - `{"reasoning_tokens": N}`, `{"cancel_keeps_input": true}`: openai_reasoning.py (with
    what a request on a reasoning model, or after its reasoning, is refused for).
`context_management` compacts a long conversation as OpenAI does (openai_compaction.py).
A model OpenAI does not serve (one past its shutdown date by the stand-in's `today`, or one
not in functions/answer/openai_models.py) is refused with 404 `model_not_found`, as
OpenAI refuses it; `POST /_control/today {"today": "2026-12-11"}` moves that date (null:
the clock's UTC date again).
The conversations and the control calls on them are in openai_conversations.py; speech
to text in openai_transcriptions.py. An `input_image` must be a data URL of a PNG, JPEG,
WEBP or GIF image (openai_model.py); the echoed reply shows each image it received.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from functions.answer import openai_models
from infra.local.standins.base import Fault, json_response
from infra.local.standins.openai_compaction import compaction_item, compaction_threshold, rendered
from infra.local.standins.openai_knowledge import KnowledgeStandIn, cite, store_ids_named, with_knowledge
from infra.local.standins.openai_model import (
    error,
    fail_response,
    image_refusal,
    input_items,
    item_text,
    model_not_found,
    not_found,
    response_resource,
    words,
)
from infra.local.standins.openai_reasoning import effort_refusal, finish, orphan_reasoning
from infra.local.standins.openai_tools import (
    chain_items,
    finish_with_calls,
    may_call,
    previous_not_found,
    reply_text,
    request_refusal,
    round_refusal,
    tool_names,
)

_UNFINISHED = ("queued", "in_progress")


class OpenAIStandIn(KnowledgeStandIn):
    rules = [
        *KnowledgeStandIn.rules,
        Rule("/v1/responses", endpoint="create_response", methods=["POST"]),
        Rule("/v1/responses/<response_id>", endpoint="retrieve_response", methods=["GET"]),
        Rule("/v1/responses/<response_id>", endpoint="delete_response", methods=["DELETE"]),
        Rule("/v1/responses/<response_id>/cancel", endpoint="cancel_response", methods=["POST"]),
        Rule("/_control/today", endpoint="control_today", methods=["POST"]),
    ]

    def __init__(self, background_seconds: float = 0.05) -> None:
        super().__init__()
        self.responses: dict[str, dict[str, Any]] = {}
        # Response id → its input items (a later `previous_response_id` reads them).
        self.response_inputs: dict[str, list[dict[str, Any]]] = {}
        # How long a background response takes without a delay fault.
        self.background_seconds = background_seconds
        # The day the served models are judged by (their shutdown dates).
        self.today: Callable[[], date] = _utc_today
        # Response id → the input items its cancellation leaves (`cancel_keeps_input`).
        self.kept_on_cancel: dict[str, list[dict[str, Any]]] = {}

    def _reset(self) -> None:
        super()._reset()
        self.responses.clear()
        self.response_inputs.clear()
        self.kept_on_cancel.clear()
        self.today = _utc_today

    # --- responses ------------------------------------------------------------------------

    def create_response(self, request: Request) -> Response:
        body = request.get_json(force=True)
        conversation_id = _conversation_id(body.get("conversation"))
        background = bool(body.get("background"))
        fault = self._next_fault()
        project = self.project_of(request.headers.get("Authorization", ""))
        call = _call_record(body, conversation_id, fault)
        inputs = input_items(body.get("input"))
        fault = _for_this_input(fault, inputs)
        if fault.get("status"):
            time.sleep(float(fault.get("delay") or 0))
            return self._answer(call, _fault_error(fault, conversation_id, str(body.get("model") or "")))
        with self._lock:
            refusal = self._refusal(body, conversation_id, inputs, project)
            if refusal is not None:
                return self._answer(call, refusal)
            response = response_resource(body, conversation_id, "queued" if background else "in_progress")
            self.responses[response["id"]] = response
            self.plan_search(response["id"], body, project, call)
            self.response_inputs[response["id"]] = inputs
            if conversation_id:
                self.conversations[conversation_id].busy_with = response["id"]
            created = copy.deepcopy(response)
            epoch = self._epoch
        call["response_id"] = response["id"]
        seconds = float(fault.get("delay") or (self.background_seconds if background else 0))
        if background:
            # Background mode answers at once; GET /v1/responses/{id} shows the progress
            # (https://platform.openai.com/docs/guides/background).
            work = threading.Thread(
                target=self._generate, args=(response, inputs, seconds, epoch, fault), daemon=True
            )
            work.start()
            return self._answer(call, json_response(created))
        self._generate(response, inputs, seconds, epoch, fault)
        with self._lock:
            return self._answer(call, json_response(copy.deepcopy(response)))

    def _refusal(
        self, body: dict[str, Any], conversation_id: str | None, inputs: list[dict[str, Any]], project: str
    ) -> Response | None:
        """Why the request is refused before any work, if it is (lock held)."""
        if (invalid := request_refusal(body) or self.knowledge_refusal(body, project)) is not None:
            return invalid
        model = str(body.get("model") or "")
        if not openai_models.served(model, self.today()):
            return model_not_found(model)
        max_output_tokens = body.get("max_output_tokens")
        if max_output_tokens is not None and int(max_output_tokens) < 16:
            message = "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16."
            return error(400, "integer_below_min_value", message, "max_output_tokens")
        history: list[dict[str, Any]] = []
        if conversation_id:
            conversation = self.conversations.get(conversation_id)
            if conversation is None:  # never created, or deleted
                return not_found("Conversation", conversation_id, "conversation")
            if conversation.busy_with:
                return error(400, "conversation_locked")
            history = rendered(conversation.items)
        if (unsupported := effort_refusal(body) or orphan_reasoning(history)) is not None:
            return unsupported
        if previous_id := body.get("previous_response_id"):
            earlier = chain_items(self.responses, self.response_inputs, str(previous_id))
            if earlier is None:
                return previous_not_found(str(previous_id))
            history = [*history, *earlier]
        if (unanswered := round_refusal(history, inputs)) is not None:
            return unanswered
        if body.get("truncation") != "auto" and not self.context_window.fits(history + inputs):
            return error(400, "context_length_exceeded")
        return image_refusal(inputs)

    def _generate(
        self,
        response: dict[str, Any],
        inputs: list[dict[str, Any]],
        seconds: float,
        epoch: int,
        fault: Fault,
    ) -> None:
        """Do the work of a response: after `seconds`, complete it and add its items to its
        conversation (even if its client has gone), unless it was cancelled meanwhile, or
        end it `failed` with the fault's error code `fail` (nothing added), or `incomplete`
        with its reason `incomplete`."""
        fail = fault.get("fail")
        with self._lock:
            if response["status"] == "queued":
                response["status"] = "in_progress"
            if fault.get("cancel_keeps_input"):
                self.kept_on_cancel[response["id"]] = inputs
        time.sleep(seconds)
        with self._lock:
            if self._epoch != epoch or response["status"] not in _UNFINISHED:
                return
            conversation_id = (response["conversation"] or {}).get("id")
            conversation = self.conversations.get(conversation_id) if conversation_id else None
            if fail:
                fail_response(response, fail, conversation)
                return
            self._complete(response, inputs, conversation, fault)

    def _complete(
        self, response: dict[str, Any], inputs: list[dict[str, Any]], conversation: Any, fault: Fault
    ) -> None:
        """The response done: its reasoning and reply (cut if asked to, or by
        max_output_tokens) or the tool calls it was told to make, its usage, and its items
        added to its conversation."""
        history = rendered(conversation.items) if conversation else []
        seen = history + inputs
        if response["truncation"] == "auto":
            seen = self.context_window.truncate(seen)
        threshold = compaction_threshold(response)
        input_tokens = sum(words(item_text(item)) for item in seen) + words(response["instructions"] or "")
        compacted = []
        if threshold is not None and input_tokens > threshold:
            compacted = [compaction_item(seen, threshold)]
        names = may_call(response, fault)
        calls = self.take_tool_calls(names, response["parallel_tool_calls"]) if names else None
        if calls:
            output = finish_with_calls(response, calls, input_tokens, compacted, fault)
        else:
            found = self.run_search(response, inputs, fault)
            reply = with_knowledge(reply_text(inputs), found)
            output = finish(response, reply, input_tokens + found.tokens, [*compacted, *found.items], fault)
            cite(output, found)
        if conversation is not None:
            conversation.items.extend([*inputs, *output])
            if conversation.busy_with == response["id"]:
                conversation.busy_with = None

    def retrieve_response(self, request: Request, response_id: str) -> Response:
        with self._lock:
            response = self.responses.get(response_id)
            if response is None or not (response["store"] or response["background"]):
                return not_found("Response", response_id)
            return json_response(copy.deepcopy(response))

    def delete_response(self, request: Request, response_id: str) -> Response:
        """A stored response deleted, its input with it: 404 for it from then on, as for one
        never stored (https://platform.openai.com/docs/api-reference/responses/delete answers
        `{"id", "object": "response", "deleted": true}`). The items it added to a
        conversation stay in that conversation."""
        with self._lock:
            response = self.responses.get(response_id)
            if response is None or not (response["store"] or response["background"]):
                return not_found("Response", response_id)
            del self.responses[response_id]
            self.response_inputs.pop(response_id, None)
            self.kept_on_cancel.pop(response_id, None)
            return json_response({"id": response_id, "object": "response", "deleted": True})

    def cancel_response(self, request: Request, response_id: str) -> Response:
        """Only a background response can be cancelled; cancelling a finished one returns
        it as it is (https://platform.openai.com/docs/guides/background#cancelling-a-background-response).
        A cancelled response never completes, so it adds nothing to its conversation (but its
        input, with the fault `cancel_keeps_input`)."""
        with self._lock:
            response = self.responses.get(response_id)
            if response is None:
                return not_found("Response", response_id)
            if not response["background"]:
                return error(400, None, "Only responses created with background=true can be cancelled.")
            kept = self.kept_on_cancel.pop(response_id, [])
            if response["status"] in _UNFINISHED:
                response["status"] = "cancelled"
                conversation = self.conversations.get((response["conversation"] or {}).get("id", ""))
                if conversation is not None and conversation.busy_with == response_id:
                    conversation.busy_with = None
                if conversation is not None:
                    conversation.items.extend(kept)
            return json_response(copy.deepcopy(response))

    def control_today(self, request: Request) -> Response:
        """Set the day the models' shutdown dates are compared with (null: today's)."""
        given = request.get_json(force=True).get("today")
        if given:
            fixed = date.fromisoformat(given)
            self.today = lambda: fixed
        else:
            self.today = _utc_today
        return json_response({"today": self.today().isoformat()})

    def _answer(self, call: dict[str, Any], response: Response) -> Response:
        call["status"] = response.status_code
        self._record(call)
        return response


def _utc_today() -> date:
    return datetime.now(UTC).date()


def _call_record(body: dict[str, Any], conversation_id: str | None, fault: Fault) -> dict[str, Any]:
    """What `GET /_control/calls` shows of a request (its `status` and `response_id` added
    when it is answered)."""
    return {
        "conversation": conversation_id,
        "model": body.get("model"),
        "instructions": body.get("instructions"),
        "input": body.get("input"),
        "background": bool(body.get("background")),
        "store": body.get("store"),
        "truncation": body.get("truncation"),
        "context_management": body.get("context_management"),
        "max_output_tokens": body.get("max_output_tokens"),
        "reasoning": body.get("reasoning"),
        "tools": tool_names(body.get("tools")),
        "tool_choice": body.get("tool_choice"),
        "vector_store_ids": store_ids_named(body),
        "include": body.get("include"),
        "max_tool_calls": body.get("max_tool_calls"),
        "file_searches": 0,  # made when the response completes (openai_knowledge.py)
        "metadata": body.get("metadata"),
        "safety_identifier": body.get("safety_identifier"),
        "response_id": None,
        "at": time.time(),
        "fault": fault or None,  # what the stand-in was told to do with it
    }


def _conversation_id(value: Any) -> str | None:
    """`conversation` is an id, or an object with one."""
    if isinstance(value, dict):
        return value.get("id")
    return value or None


def _for_this_input(fault: Fault, inputs: list[dict[str, Any]]) -> Fault:
    """An image refusal as the fault it is for this input: a 400 or a `fail` if the input
    holds an image, nothing otherwise."""
    code = fault.get("refuse_image")
    if not code:
        return fault
    if not any(part.get("type") == "input_image" for item in inputs for part in item.get("content") or []):
        return {}
    if fault.get("failed"):
        return {"fail": code, "delay": fault.get("delay")}
    return {"status": 400, "code": code, "delay": fault.get("delay")}


def _fault_error(fault: Fault, conversation_id: str | None, model: str) -> Response:
    status, code = int(fault["status"]), fault.get("code")
    if code == "model_not_found":
        return model_not_found(model)
    if status == 404:
        return not_found("Conversation", conversation_id or "", "conversation", code)
    return error(status, code)
