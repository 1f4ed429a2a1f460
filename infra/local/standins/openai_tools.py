"""Function tools in the OpenAI stand-in, as OpenAI's function calling guide describes them
for the Responses API (https://developers.openai.com/api/docs/guides/function-calling?api-mode=responses):
the request offers `tools` (`{"type": "function", "name", "description", "parameters",
"strict"}`; other tool types are taken and ignored); the model may answer with
`function_call` items (`call_id`, `name`, `arguments` as a JSON string) instead of a
message; the client runs them and sends each result back as a `function_call_output`
(`call_id`, `output`) in the next request's input. `tool_choice` is "auto" (the default:
zero, one or more calls), "required" (one or more), "none" (no call), or
`{"type": "function", "name": ...}` (that function only) (same guide, "Tool choice").

The stand-in cannot decide to call a tool: a test tells it to, beforehand.
`POST /_control/tool_calls` `{"name": "lookup_order", "arguments": {"order": "12345"}}`
(or `{"calls": [{...}, {...}]}`: several calls in one response) queues a tool call
(`queue_tool_calls` in Python). The next response whose request may call every function of
the group (offered in `tools`, and allowed by its `tool_choice`) takes it when it completes:
it ends `completed` with one `function_call` item per call (`id` "fc_…", `call_id`
"call_…", `arguments` the JSON of what was queued, `status` "completed") and no message
(`output_text` ""); like any response on a conversation, its input and output items are
added to the conversation then. A group no request may call waits, in order, for one that
may; a group of several calls waits for a request that leaves `parallel_tool_calls` on
("whether to allow the model to run tool calls in parallel", default true: the API
reference, pointing to the guide's "parallel function calling"); a response that fails or
is cancelled takes none. `GET /_control/tool_calls` lists the
queued groups; `POST /_control/reset` forgets them. Without a queued call, a request with
`tool_choice` "required" or a forced function is answered with text all the same (a real
model would call a tool).

The reply to a request whose input holds `function_call_output` items is one line
`Tool said: <output>` per output, in input order, after the usual `You said: <text>` line
when the input also holds messages; e.g. `Tool said: Order 12345 ships on Monday.`.

Refusals, each a 400 with OpenAI's body, nothing done:
  - a `function_call_output` whose `call_id` answers no `function_call` without an output
    in the conversation (or in `previous_response_id`'s chain, or earlier in the input):
    "No tool call found for function call output with call_id call_….", param `input`,
    code null (the body OpenAI returns, as quoted in github.com/continuedev/continue/issues/10092);
  - any request on a conversation (or after a previous response) holding a `function_call`
    whose output neither it nor the input holds: "No tool output found for function call
    call_….", param `input`, code null (as quoted in github.com/tjardoo/openai-client/pull/124;
    the guide's loop sends every call's output back). This is what forces a client never to
    leave a call unanswered;
  - `previous_response_id` naming a response the stand-in does not keep: "Previous
    response with id 'resp_…' not found.", code `previous_response_not_found` (as relayed
    in github.com/maximhq/bifrost/issues/2441);
  - `metadata` over "16 key-value pairs", a key over 64 characters or a value over 512
    (https://platform.openai.com/docs/api-reference/responses/create#responses_create-metadata,
    the text of OpenAI's OpenAPI spec),
    or a value that is not a string; `safety_identifier` over 64 characters ("a maximum
    length of 64 characters", same page): messages and codes as OpenAI words them (the
    16-property one is quoted from the Responses validator in a Microsoft Foundry
    troubleshooting note, the 512 one in github.com/spiceai/docs/issues/928, the length
    format for input call ids in github.com/AnswerDotAI/fastllm/issues/45);
  - a function name outside `^[a-zA-Z0-9_-]+$` (OpenAI's message, as reported by many
    clients; the code `invalid_value` is the stand-in's guess); a `tool_choice` string other
    than the three, or a forced function not among the `tools` (in the stand-in's wording,
    after OpenAI's usual "Invalid value" form: OpenAI's own is not documented).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import Fault, json_response
from infra.local.standins.openai_model import error, function_call_item, item_text, usage, words
from infra.local.standins.openai_reasoning import reasoning_item
from infra.local.standins.openai_transcriptions import TranscriptionsStandIn

CHOICES = ("none", "auto", "required")
NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_NAME = 64
MAX_METADATA_PAIRS, MAX_METADATA_KEY, MAX_METADATA_VALUE = 16, 64, 512
MAX_SAFETY_IDENTIFIER = 64


class ToolsStandIn(TranscriptionsStandIn):
    """The queue of tool calls the stand-in is told to make, and its control call."""

    rules = [
        *TranscriptionsStandIn.rules,
        Rule("/_control/tool_calls", endpoint="control_tool_calls", methods=["GET", "POST"]),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._tool_calls: list[list[dict[str, Any]]] = []  # groups, oldest first

    def _reset(self) -> None:
        super()._reset()
        self._tool_calls.clear()

    # --- for tests ------------------------------------------------------------------------

    def queue_tool_calls(self, *calls: dict[str, Any]) -> None:
        """The next response that may call every one of `calls` ({"name", "arguments"})
        makes them, and only them."""
        group = [_queued(call) for call in calls]
        if not group:
            raise ValueError("no call to queue")
        with self._lock:
            self._tool_calls.append(group)

    def queue_tool_call(self, name: str, arguments: dict[str, Any] | str | None = None) -> None:
        self.queue_tool_calls({"name": name, "arguments": arguments if arguments is not None else {}})

    def take_tool_calls(self, names: set[str], parallel: bool = True) -> list[dict[str, Any]] | None:
        """The oldest queued group whose every call is among `names` (and that is one call,
        unless `parallel`), taken off the queue."""
        with self._lock:
            for group in self._tool_calls:
                if {call["name"] for call in group} <= names and (parallel or len(group) == 1):
                    self._tool_calls.remove(group)
                    return group
            return None

    # --- control --------------------------------------------------------------------------

    def control_tool_calls(self, request: Request) -> Response:
        if request.method == "POST":
            body = request.get_json(force=True, silent=True)
            calls = body.get("calls") if isinstance(body, dict) and "calls" in body else [body]
            try:
                self.queue_tool_calls(*(calls if isinstance(calls, list) else [calls]))
            except (ValueError, TypeError) as refused:
                return json_response({"error": {"message": str(refused), "status": 400}}, 400)
        with self._lock:
            if request.method == "POST":
                return json_response({"queued": len(self._tool_calls)})
            return json_response({"tool_calls": json.loads(json.dumps(self._tool_calls))})


def _queued(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ValueError("a tool call needs a name")
    name, arguments = call["name"], call.get("arguments", {})
    if not NAME.match(name) or len(name) > MAX_NAME:
        raise ValueError(f"a function name matches {NAME.pattern}, at most {MAX_NAME} characters")
    if not isinstance(arguments, dict | str):
        raise ValueError("arguments are an object, or its JSON")
    return {"name": name, "arguments": arguments}


# --- what a request offers ----------------------------------------------------------------


def tool_names(tools: Any) -> list[str]:
    """The tools offered, as recorded in the calls: a function by its name, any other tool
    by its type."""
    if not isinstance(tools, list):
        return []
    return [
        str(tool.get("name") if tool.get("type") == "function" else tool.get("type"))
        for tool in tools
        if isinstance(tool, dict)
    ]


def callable_names(tools: Any, tool_choice: Any) -> set[str]:
    """The functions the model may call: those offered, as `tool_choice` allows."""
    names = {
        str(tool["name"])
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict) and tool.get("type") == "function" and tool.get("name")
    }
    if tool_choice == "none":
        return set()
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
        return names & {str(tool_choice.get("name"))}
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
        allowed = {str(t.get("name")) for t in tool_choice.get("tools") or [] if t.get("type") == "function"}
        return names & allowed
    return names


def may_call(response: dict[str, Any], fault: Fault) -> set[str]:
    """The functions a finishing response may call: none when a fault cuts it short (the
    content filter, or reasoning that spends `max_output_tokens`), as it ends without output."""
    limit, reasoning = response.get("max_output_tokens"), int(fault.get("reasoning_tokens") or 0)
    if fault.get("incomplete") or (limit is not None and reasoning >= int(limit)):
        return set()
    return callable_names(response.get("tools"), response.get("tool_choice"))


# --- refusals -----------------------------------------------------------------------------


def request_refusal(body: dict[str, Any]) -> Response | None:
    """Why OpenAI refuses the request's tools, tool_choice, metadata or safety_identifier."""
    return (
        _tools_refusal(body.get("tools"))
        or _tool_choice_refusal(body.get("tools"), body.get("tool_choice"))
        or metadata_refusal(body.get("metadata"))
        or _string_refusal("safety_identifier", body.get("safety_identifier"), MAX_SAFETY_IDENTIFIER)
    )


def _tools_refusal(tools: Any) -> Response | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return _invalid_type("tools", "an array", tools)
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            return _invalid_type(where, "an object", tool)
        if tool.get("type") != "function":
            continue
        if tool.get("name") is None:
            message = f"Missing required parameter: '{where}.name'."
            return error(400, "missing_required_parameter", message, f"{where}.name")
        name = tool["name"]
        if (refused := _string_refusal(f"{where}.name", name, MAX_NAME)) is not None:
            return refused
        if not NAME.match(name):
            message = (
                f"Invalid '{where}.name': string does not match pattern. "
                f"Expected a string that matches the pattern '{NAME.pattern}'."
            )
            return error(400, "invalid_value", message, f"{where}.name")
    return None


def _tool_choice_refusal(tools: Any, tool_choice: Any) -> Response | None:
    if tool_choice is None:
        return None
    if isinstance(tool_choice, str):
        if tool_choice in CHOICES:
            return None
        message = f"Invalid value: '{tool_choice}'. Supported values are: 'none', 'auto', and 'required'."
        return error(400, "invalid_value", message, "tool_choice")
    if not isinstance(tool_choice, dict):
        return _invalid_type("tool_choice", "a string or an object", tool_choice)
    if tool_choice.get("type") == "function" and not callable_names(tools, tool_choice):
        message = f"Tool choice 'function' named '{tool_choice.get('name')}' not found in 'tools' parameter."
        return error(400, None, message, "tool_choice")
    return None  # another tool type, or allowed_tools: taken as it is


def metadata_refusal(metadata: Any) -> Response | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return _invalid_type("metadata", "an object", metadata)
    if len(metadata) > MAX_METADATA_PAIRS:
        message = (
            f"Invalid 'metadata': too many properties. Expected an object with at most "
            f"{MAX_METADATA_PAIRS} properties, but got an object with {len(metadata)} properties instead."
        )
        return error(400, "object_above_max_properties", message, "metadata")
    for key, value in metadata.items():
        if len(key) > MAX_METADATA_KEY:
            message = (
                f"Invalid property name in 'metadata': '{key}' is too long. Expected a string with "
                f"maximum length {MAX_METADATA_KEY}, but got a string with length {len(key)} instead."
            )
            return error(400, "property_name_above_max_length", message, f"metadata.{key}")
        if (refused := _string_refusal(f"metadata.{key}", value, MAX_METADATA_VALUE)) is not None:
            return refused
    return None


def _string_refusal(param: str, value: Any, longest: int) -> Response | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return _invalid_type(param, "a string", value)
    if len(value) > longest:
        message = (
            f"Invalid '{param}': string too long. Expected a string with maximum length {longest}, "
            f"but got a string with length {len(value)} instead."
        )
        return error(400, "string_above_max_length", message, param)
    return None


def _invalid_type(param: str, expected: str, value: Any) -> Response:
    message = f"Invalid type for '{param}': expected {expected}, but got {_kind(value)} instead."
    return error(400, "invalid_type", message, param)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def round_refusal(history: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> Response | None:
    """OpenAI's 400 for an output in `inputs` that answers no open call, or for a call in
    `history` or `inputs` left without its output."""
    answered: dict[str, bool] = {}  # call_id → whether its output came
    for item in history:
        if item.get("type") == "function_call":
            answered[str(item.get("call_id"))] = False
        elif item.get("type") == "function_call_output" and str(item.get("call_id")) in answered:
            answered[str(item.get("call_id"))] = True
    for item in inputs:
        call_id = str(item.get("call_id"))
        if item.get("type") == "function_call":
            answered[call_id] = False
        elif item.get("type") == "function_call_output":
            if answered.get(call_id) is not False:
                message = f"No tool call found for function call output with call_id {call_id}."
                return error(400, None, message, "input")
            answered[call_id] = True
    for call_id, done in answered.items():
        if not done:
            return error(400, None, f"No tool output found for function call {call_id}.", "input")
    return None


def chain_items(
    responses: dict[str, dict[str, Any]], inputs_of: dict[str, list[dict[str, Any]]], previous_id: str
) -> list[dict[str, Any]] | None:
    """The items of `previous_id` and the responses before it (input, then output), oldest
    first; None if the stand-in does not keep that response."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: str | None = previous_id
    while current and current not in seen:
        response = responses.get(current)
        if response is None or not response["store"]:
            return None if current == previous_id else chain
        seen.add(current)
        chain[:0] = [*inputs_of.get(current, []), *response["output"]]
        current = response.get("previous_response_id")
    return chain


def previous_not_found(previous_id: str) -> Response:
    message = f"Previous response with id '{previous_id}' not found."
    return error(400, "previous_response_not_found", message, "previous_response_id")


# --- the answer ---------------------------------------------------------------------------


def reply_text(inputs: list[dict[str, Any]]) -> str:
    """`You said: <text>`; with function call outputs, one `Tool said: <output>` line each."""
    outputs = [item_text(item) for item in inputs if item.get("type") == "function_call_output"]
    if not outputs:
        return "You said: " + "\n".join(item_text(item) for item in inputs)
    said = [item_text(item) for item in inputs if item.get("type") == "message"]
    lines = ["You said: " + "\n".join(said)] if said else []
    return "\n".join([*lines, *(f"Tool said: {output}" for output in outputs)])


def finish_with_calls(
    response: dict[str, Any],
    calls: list[dict[str, Any]],
    input_tokens: int,
    compacted: list[dict[str, Any]],
    fault: Fault,
) -> list[dict[str, Any]]:
    """Finish `response` with a function call per queued call (after its reasoning, if the
    fault asks for some) and no message; the output items."""
    reasoning = int(fault.get("reasoning_tokens") or 0)
    thought = [reasoning_item()] if reasoning > 0 else []
    made = [
        function_call_item("call_" + secrets.token_hex(12), call["name"], _arguments(call["arguments"]))
        for call in calls
    ]
    output = [*compacted, *thought, *made]
    spent = sum(words(item["arguments"]) for item in made) + reasoning
    response.update(
        status="completed",
        output=output,
        completed_at=int(time.time()),
        usage=usage(input_tokens, spent, reasoning),
    )
    return output


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
