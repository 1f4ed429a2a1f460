"""What the OpenAI stand-in keeps and answers: conversations, their items, responses, and
OpenAI's error bodies. Shapes follow the API reference and the `openai` SDK's types:
https://platform.openai.com/docs/api-reference/conversations
https://platform.openai.com/docs/api-reference/responses"""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from werkzeug.wrappers import Response

from infra.local.standins.base import json_response


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


@dataclass
class Conversation:
    id: str
    created_at: int
    metadata: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)
    # The response being generated on it, if any: the conversation is locked meanwhile.
    busy_with: str | None = None

    def resource(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "conversation",
            "created_at": self.created_at,
            "metadata": self.metadata,
        }


@dataclass
class ContextWindow:
    """How much a conversation may hold before a response on it overflows the model's
    context window (None: no limit)."""

    max_items: int | None = None
    max_chars: int | None = None

    def fits(self, items: list[dict[str, Any]]) -> bool:
        if self.max_items is not None and len(items) > self.max_items:
            return False
        return self.max_chars is None or sum(len(item_text(i)) for i in items) <= self.max_chars

    def truncate(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """truncation "auto": the model drops items from the beginning of the conversation
        until the input fits (https://platform.openai.com/docs/api-reference/responses/create
        #responses_create-truncation). Only what the model sees: the stored items stay."""
        kept = list(items)
        while len(kept) > 1 and not self.fits(kept):
            kept.pop(0)
        return kept


# --- items --------------------------------------------------------------------------------


def message_item(role: str, content: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": new_id("msg"), "status": status, "role": role, "content": content}


def function_call_item(call_id: str, name: str, arguments: str, item_id: str | None = None) -> dict[str, Any]:
    """A `function_call` item as the API returns it in a response's output and a
    conversation's items (the SDK's ResponseFunctionToolCallItem; a conversation item is one
    of a Response's output types: https://platform.openai.com/docs/api-reference/conversations/list-items):
    `arguments` is a JSON string."""
    return {
        "type": "function_call",
        "id": item_id or new_id("fc"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def function_call_output_item(call_id: str, output: Any) -> dict[str, Any]:
    """A `function_call_output` item as a conversation keeps it (the SDK's
    ResponseFunctionToolCallOutputItem); its id prefix is the stand-in's choice."""
    return {
        "type": "function_call_output",
        "id": new_id("fco"),
        "call_id": call_id,
        "output": output,
        "status": "completed",
    }


def input_items(value: Any) -> list[dict[str, Any]]:
    """The input of `POST /v1/responses` (a string, or a list of items) as conversation items:
    messages, and the function calls and their outputs (openai_tools.py)."""
    if isinstance(value, str):
        return [message_item("user", [{"type": "input_text", "text": value}])]
    items = []
    for entry in value or []:
        call_id = str(entry.get("call_id") or "")
        if entry.get("type") == "function_call_output":
            items.append(function_call_output_item(call_id, entry.get("output") or ""))
            continue
        if entry.get("type") == "function_call":
            name, arguments = str(entry.get("name") or ""), str(entry.get("arguments") or "")
            items.append(function_call_item(call_id, name, arguments, entry.get("id")))
            continue
        if entry.get("type") == "file_search_call":  # a previous output sent back: kept as it is
            items.append({**entry, "id": entry.get("id") or new_id("fs")})
            continue
        content = entry.get("content")
        if isinstance(content, str):
            content = [{"type": "input_text", "text": content}]
        item = message_item(entry.get("role", "user"), list(content or []))
        items.append(item)
    return items


def item_text(item: dict[str, Any]) -> str:
    """An item's text; an image stands as `[image <type>, <n> bytes]` (so the echoed reply
    shows which images the model received, and where); a compaction item as what it keeps;
    a function call as `name(arguments)`, its output as its text."""
    if item.get("type") == "compaction":
        return base64.b64decode(str(item.get("encrypted_content") or "")).decode()
    if item.get("type") == "function_call":
        return f"{item.get('name')}({item.get('arguments')})"
    content = item.get("content")
    if item.get("type") == "function_call_output":
        content = item.get("output")
        if isinstance(content, str):
            return content
    texts = []
    for part in content or []:
        if "text" in part:
            texts.append(str(part["text"]))
        elif part.get("type") == "input_image":
            mime, data = _data_url(str(part.get("image_url") or ""))
            texts.append(f"[image {mime}, {len(data or b'')} bytes]")
    return "\n".join(texts)


# "Supported file types: PNG (.png), JPEG (.jpeg and .jpg), WEBP (.webp), Non-animated GIF
# (.gif)" (https://platform.openai.com/docs/guides/images-vision), told by their first bytes.
_IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def image_refusal(items: list[dict[str, Any]]) -> Response | None:
    """The answer to an `input_image` the model cannot read: a data URL whose data is not
    an image of a supported type. The stand-in cannot download, so a link is refused as
    OpenAI refuses one it cannot download. (The error codes are not in the API
    reference; these have the shape of its other errors.)"""
    for item in items:
        for part in item.get("content") or []:
            if part.get("type") != "input_image":
                continue
            url = str(part.get("image_url") or "")
            if not url.startswith("data:"):
                return error(400, "invalid_image_url", f"Error while downloading {url[:100]}.", "url")
            mime, data = _data_url(url)
            if data is None or not data.startswith(_IMAGE_MAGIC.get(mime, (b"\x00\x00no",))):
                message = "You uploaded an unsupported image. Please make sure your image is valid."
                return error(400, "invalid_image_format", message, "image_url")
    return None


def _data_url(url: str) -> tuple[str, bytes | None]:
    """(MIME type, data) of a base64 data URL; data None if it is not one."""
    head, _, encoded = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        return "", None
    try:
        return head[5:-7], base64.b64decode(encoded, validate=True)
    except binascii.Error:
        return head[5:-7], None


def output_message(text: str, status: str = "completed") -> dict[str, Any]:
    return message_item(
        "assistant", [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}], status
    )


def words(text: str) -> int:
    return len(text.split())


def item_page(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """A list object as `conversations.items.list` pages it (cursor: `last_id`)."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }


# --- responses ----------------------------------------------------------------------------


def response_resource(body: dict[str, Any], conversation: str | None, status: str) -> dict[str, Any]:
    """A Response object as `POST /v1/responses` creates it, before its output."""
    return {
        "id": new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": bool(body.get("background")),
        "completed_at": None,
        "conversation": {"id": conversation} if conversation else None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "metadata": body.get("metadata") or {},
        "model": body.get("model"),
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store") is not False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "safety_identifier": body.get("safety_identifier"),
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "truncation": body.get("truncation") or "disabled",
        "context_management": body.get("context_management"),
        "usage": None,
    }


def usage(input_tokens: int, output_tokens: int, reasoning_tokens: int = 0) -> dict[str, Any]:
    """`output_tokens` counts the reasoning tokens too."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


# --- errors -------------------------------------------------------------------------------
# OpenAI's error body is {"error": {"message", "type", "param", "code"}}; the messages of
# the common ones are listed at https://platform.openai.com/docs/guides/error-codes.

_ERRORS: dict[tuple[int, str | None], tuple[str, str, str | None]] = {
    # A second request on a conversation that is still busy. Not in the API reference; the
    # body as the API returns it (reported in github.com/paulgmiller/careme/issues/379).
    (400, "conversation_locked"): (
        "Another process is currently operating on this conversation. Please retry in a few seconds.",
        "invalid_request_error",
        "conversation",
    ),
    # truncation "disabled" (the default) and an input over the context window: 400
    # (https://platform.openai.com/docs/api-reference/responses/create#responses_create-truncation).
    (400, "context_length_exceeded"): (
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "invalid_request_error",
        "input",
    ),
    (401, "invalid_api_key"): ("Incorrect API key provided: loc*****key.", "invalid_request_error", None),
    (401, None): ("Invalid authorization header.", "invalid_request_error", None),
    # Out of credits: a 429 that retrying does not cure; its type is insufficient_quota too.
    (429, "insufficient_quota"): (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "insufficient_quota",
        None,
    ),
    (429, None): ("Rate limit reached for requests. Please try again in 1s.", "requests", None),
    (500, None): (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    ),
    (503, None): ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def error(
    status: int, code: str | None = None, message: str | None = None, param: str | None = None
) -> Response:
    known = _ERRORS.get((status, code)) or _ERRORS.get((status, None))
    default_message, kind, default_param = known or ("Injected fault.", "invalid_request_error", None)
    if status == 429 and code is None:
        code = "rate_limit_exceeded"
    body = {
        "message": message or default_message,
        "type": kind,
        "param": param or default_param,
        "code": code,
    }
    return json_response({"error": body}, status)


def model_not_found(model: str) -> Response:
    """A model OpenAI does not serve (shut down, misspelt, or not open to the project): 404
    with this body (as quoted in github.com/openai/openai-agents-python/issues/458 and
    github.com/Aider-AI/aider/issues/2030)."""
    message = f"The model `{model}` does not exist or you do not have access to it."
    return error(404, "model_not_found", message)


def not_found(what: str, identifier: str, param: str | None = None, code: str | None = None) -> Response:
    """The API answers 404 for an id it does not know (or no longer knows). The body of
    that 404 is not in the API reference: this one has the shape of OpenAI's other errors."""
    return error(404, code, f"{what} with id '{identifier}' not found.", param)


def fail_response(response: dict[str, Any], fail: str, conversation: Any) -> None:
    """End the response `failed` with the error code `fail` (nothing added to its conversation)."""
    message = "The server had an error processing your request. Please retry."
    if fail != "server_error":
        message = f"The response could not be generated ({fail})."
    response.update(status="failed", error={"code": fail, "message": message})
    if conversation is not None and conversation.busy_with == response["id"]:
        conversation.busy_with = None
