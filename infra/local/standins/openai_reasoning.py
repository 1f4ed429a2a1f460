"""What a response of the OpenAI stand-in outputs: its reasoning, its reply, and why it
stopped, as a reasoning model's response does (https://platform.openai.com/docs/guides/reasoning,
"Allocating space for reasoning"): reasoning tokens are output tokens, counted in
`max_output_tokens` and reported in `usage.output_tokens_details.reasoning_tokens`; a
response that reaches `max_output_tokens` ends `incomplete` with reason
`max_output_tokens`, "before any visible output tokens are produced" when the reasoning
spent them all. The model's reasoning is an item of type `reasoning` before its message.

Faults (openai.py's queue):
  - `{"reasoning_tokens": N}`: the response reasons for N output tokens (a `reasoning`
    item, then its reply); with N at `max_output_tokens` or above, it ends `incomplete`
    (`max_output_tokens`) with the reasoning item only, and no text;
  - `{"cancel_keeps_input": true}` (with a `delay`): cancelling the response leaves its
    input items in its conversation. OpenAI does not document whether a cancelled
    response adds anything (https://platform.openai.com/docs/guides/background#cancelling-a-background-response);
    this is the worse case.

A model that does not reason refuses `reasoning.effort` (400 `unsupported_parameter`).

The API refuses a request on a conversation holding a reasoning item without the item that
followed it: 400 "Item 'rs_…' of type 'reasoning' was provided without its required
following item." (as reported in github.com/openai/openai-agents-js/issues/929 and
github.com/continuedev/continue/issues/8933; github.com/openai/openai-python/issues/3009 reports
the pairing from the other side, a message without its reasoning)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from werkzeug.wrappers import Response

from functions.answer import openai_models
from infra.local.standins.base import Fault
from infra.local.standins.openai_model import error, new_id, output_message, usage, words


@dataclass(frozen=True)
class Output:
    """A finished response's output items, status and tokens."""

    status: str  # completed or incomplete
    items: list[dict[str, Any]] = field(default_factory=list)
    incomplete_reason: str | None = None
    text_tokens: int = 0
    reasoning_tokens: int = 0


def reasoning_item() -> dict[str, Any]:
    """A reasoning item as the API returns it when no summary was asked for."""
    return {"type": "reasoning", "id": new_id("rs"), "summary": []}


def output_of(reply: str, limit: int | None, cut: str | None, reasoning_tokens: int) -> Output:
    """The output of a response whose reply is `reply`, within `limit` output tokens (None:
    none), after `reasoning_tokens` of reasoning; `cut`: stopped for that reason (the
    content filter) after a few words."""
    reasoning = min(reasoning_tokens, limit) if limit is not None else reasoning_tokens
    thought = [reasoning_item()] if reasoning > 0 else []
    if limit is not None and reasoning >= limit:  # spent on reasoning: no text at all
        return Output("incomplete", thought, "max_output_tokens", 0, reasoning)
    status, reason = "completed", None
    if cut:
        status, reason, reply = "incomplete", str(cut), " ".join(reply.split()[:3])
    elif limit is not None and words(reply) + reasoning > limit:
        status, reason = "incomplete", "max_output_tokens"
        reply = " ".join(reply.split()[: limit - reasoning])
    message = output_message(reply, status)
    return Output(status, [*thought, message], reason, words(reply), reasoning)


def finish(
    response: dict[str, Any], reply: str, input_tokens: int, compacted: list[dict[str, Any]], fault: Fault
) -> list[dict[str, Any]]:
    """Finish `response` with its output (after the `compacted` items, if any), its status
    and usage; the output items (what its conversation gains besides its input)."""
    limit = response["max_output_tokens"]
    reasoning = int(fault.get("reasoning_tokens") or 0)
    done = output_of(reply, None if limit is None else int(limit), fault.get("incomplete"), reasoning)
    if done.incomplete_reason:
        response["incomplete_details"] = {"reason": done.incomplete_reason}
    response.update(
        status=done.status,
        output=[*compacted, *done.items],
        completed_at=int(time.time()),
        usage=usage(input_tokens, done.text_tokens + done.reasoning_tokens, done.reasoning_tokens),
    )
    return [*compacted, *done.items]


def effort_refusal(body: dict[str, Any]) -> Response | None:
    """A model that is not asked to reason refuses `reasoning.effort` (400
    unsupported_parameter; which models take it: functions/answer/openai_models.py)."""
    effort = (body.get("reasoning") or {}).get("effort")
    if effort is None or openai_models.takes_reasoning_effort(str(body.get("model") or "")):
        return None
    message = "Unsupported parameter: 'reasoning.effort' is not supported with this model."
    return error(400, "unsupported_parameter", message, "reasoning.effort")


def orphan_reasoning(items: list[dict[str, Any]]) -> Response | None:
    """The API's 400 for a reasoning item not followed by the output item it led to."""
    for index, item in enumerate(items):
        if item.get("type") != "reasoning":
            continue
        following = items[index + 1] if index + 1 < len(items) else {}
        if not following or following.get("type") == "reasoning" or following.get("role") == "user":
            message = (
                f"Item '{item['id']}' of type 'reasoning' was provided without its required following item."
            )
            return error(400, None, message, "input")
    return None
