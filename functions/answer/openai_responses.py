"""OpenAI's Responses API with one OpenAI Conversation per chat, in background mode.

A response is created with `background=True`: the API answers at once with its id, which
the caller stores before it waits, and any later attempt polls `responses.retrieve(id)`
instead of creating another (functions/answer/ai_requests.py). Every request of one
attempt shares its time (`Budget`), so an attempt ends inside the Lambda timeout; a response
still running then is an AIRetryableError, and the state machine's Retry polls again later.

The SDK's own retries are off: the state machine's Retry owns them, so each attempt is
visible in the run history. Errors become AIRetryableError or AIPermanentError (quota and
billing errors are permanent; AICredentialsRefused for a key OpenAI refuses, HTTP 401),
AIModelUnavailable for a model OpenAI does not serve (404
`model_not_found`), or OpenAIConversationGone for a conversation the API no longer knows."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Any

import openai

from functions.answer.rules.openai_items import ConversationItem
from functions.errors import AICredentialsRefused, AIModelUnavailable, AIPermanentError, AIRetryableError
from functions.observability import count, logger, milliseconds
from functions.storage.models import AskedCall

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputParam
    from openai.types.responses.response_create_params import ContextManagement
    from openai.types.shared import ReasoningEffort

_RETRYABLE_CODES = {"conversation_locked"}
# The model is shut down, misspelt or not open to the key's project: the configuration's fault.
MODEL_NOT_FOUND = "model_not_found"
# Out of credits, spend limit reached, billing not set up: retrying cannot help.
QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}
# A background response that ended `failed` with one of these may be created again.
RETRYABLE_FAILURES = {"server_error", "rate_limit_exceeded", "vector_store_timeout"}
# A response the content filter stopped: its text is not sent.
CONTENT_FILTER = "content_filter"
# A response that reached max_output_tokens (a reasoning model's reasoning counts in it).
MAX_OUTPUT_TOKENS = "max_output_tokens"
UNFINISHED = ("queued", "in_progress")
# Polling a background response: first after 0.2 s, then doubling up to every 2 s.
FIRST_POLL_SECONDS, MAX_POLL_SECONDS = 0.2, 2.0


class OpenAIConversationGone(Exception):
    """The OpenAI Conversation is not found (deleted, or the key is now another project's)."""


class Budget:
    """The time one attempt may spend on OpenAI: every request's timeout is what is left."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def timeout(self) -> float:
        left = self.left()
        if left <= 0.05:
            raise AIRetryableError("OpenAI: this attempt's time is spent; the next attempt goes on")
        return left


@dataclass(frozen=True)
class ResponseState:
    """What the service reads of a Response."""

    id: str
    status: str  # queued, in_progress, completed, incomplete, failed, cancelled
    text: str = ""
    model: str = ""
    error_code: str | None = None
    incomplete_reason: str | None = None
    item_ids: tuple[str, ...] = ()  # its output items, as added to the conversation
    max_output_tokens: int | None = None  # what it was asked with
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: tuple[AskedCall, ...] = ()  # the function calls it asks for (a tool round follows)

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED


@cache
def client_for(api_key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=api_key, max_retries=0)


def start_conversation(client: openai.OpenAI, conversation_id: str, budget: Budget) -> str:
    created = _call(
        lambda: client.conversations.create(
            metadata={"conversation_id": conversation_id}, timeout=budget.timeout()
        )
    )
    return created.id


def create_response(
    client: openai.OpenAI,
    *,
    conversation: str,
    user_turn: str | ResponseInputParam,  # text, or text and images (functions/answer/turn_input.py)
    model: str,
    instructions: str,
    max_output_tokens: int,
    budget: Budget,
    context_tokens: int = 0,
    reasoning_effort: ReasoningEffort = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
    metadata: dict[str, str] | None = None,
    safety_identifier: str | None = None,
    max_tool_calls: int | None = None,
) -> ResponseState:
    """Start a response in background mode, stored (`store: true`, said explicitly: without
    it, a project with modified abuse monitoring loses a background response after about
    10 minutes, and a later attempt would poll in vain). `truncation: auto` drops the oldest
    items from what the model reads once the conversation outgrows its context window.
    Past `context_tokens` of input (0: never), OpenAI compacts what came before.
    `reasoning_effort`: sent if given (a model that does not reason refuses it).
    `tools`, `tool_choice`, `metadata`, `safety_identifier`, `max_tool_calls`: if given."""
    compaction: list[ContextManagement] = [{"type": "compaction", "compact_threshold": context_tokens}]
    options: dict[str, Any] = {
        "tools": tools or openai.omit,
        "tool_choice": tool_choice if tools and tool_choice else openai.omit,
        "metadata": metadata or openai.omit,
        "safety_identifier": safety_identifier or openai.omit,
        "max_tool_calls": max_tool_calls or openai.omit,  # built-in tools' calls (file_search)
    }
    response = _call(
        lambda: client.responses.create(
            model=model,
            instructions=instructions,
            conversation=conversation,
            input=user_turn,
            background=True,
            store=True,
            truncation="auto",
            max_output_tokens=max_output_tokens,
            context_management=compaction if context_tokens > 0 else openai.omit,
            reasoning={"effort": reasoning_effort} if reasoning_effort else openai.omit,
            timeout=budget.timeout(),
            **options,
        ),
        conversation_call=True,
    )
    return _state(response)


def retrieve_response(client: openai.OpenAI, response_id: str, budget: Budget) -> ResponseState | None:
    """The response as it is now; None if the API does not know it (any more)."""
    found = _unless_gone(lambda: client.responses.retrieve(response_id, timeout=budget.timeout()))
    return None if found is None else _state(found)


def cancel_response(client: openai.OpenAI, response_id: str, budget: Budget) -> ResponseState | None:
    """Cancel a background response (a finished one is returned as it is)."""
    found = _unless_gone(lambda: client.responses.cancel(response_id, timeout=budget.timeout()))
    return None if found is None else _state(found)


def wait_for(
    client: openai.OpenAI,
    response: ResponseState,
    budget: Budget,
    stop: Callable[[], bool] | None = None,
    while_waiting: Callable[[], None] | None = None,
) -> ResponseState:
    """Poll the response until it is finished; AIRetryableError if it still runs when the
    attempt's time is up (the next attempt polls it again). `stop`, asked before each
    poll: True returns the response unfinished (its caller no longer wants it).
    `while_waiting` is called before each pause."""
    pause = FIRST_POLL_SECONDS
    while not response.finished:
        if stop is not None and stop():
            return response
        if while_waiting is not None:
            while_waiting()
        if budget.left() < pause + 0.1:
            raise AIRetryableError(f"OpenAI response {response.id} still {response.status}")
        time.sleep(pause)
        pause = min(pause * 2, MAX_POLL_SECONDS)
        polled = retrieve_response(client, response.id, budget)
        if polled is None:
            raise AIRetryableError(f"OpenAI response {response.id} is not found")
        response = polled
    return response


def newest_items(
    client: openai.OpenAI, conversation: str, budget: Budget, limit: int = 20
) -> list[ConversationItem]:
    """The conversation's newest items, newest first (one page)."""
    page = _call(
        lambda: client.conversations.items.list(
            conversation, limit=limit, order="desc", timeout=budget.timeout()
        ),
        conversation_call=True,
    )
    return [_item(item) for item in page.data]


def delete_items(client: openai.OpenAI, conversation: str, item_ids: list[str], budget: Budget) -> None:
    """Delete items from the conversation (one already gone is fine)."""
    items = client.conversations.items
    for item_id in item_ids:
        _unless_gone(partial(items.delete, item_id, conversation_id=conversation, timeout=budget.timeout()))


def add_items(
    client: openai.OpenAI, conversation: str, items: list[dict[str, Any]], budget: Budget
) -> list[str]:
    """Add items at the end of the conversation (an interrupted tool round's outputs:
    functions/answer/ai_requests.py; a person's reply: functions/handoff/openai_assistant_items.py);
    the ids of the items added."""
    added = _call(
        lambda: client.conversations.items.create(conversation, items=items, timeout=budget.timeout()),  # type: ignore[arg-type]
        conversation_call=True,
    )
    return [item.id for item in added.data if item.id]


def close_unanswered_calls(client: openai.OpenAI, conversation: str, output: str, budget: Budget) -> bool:
    """Give each function call among the conversation's newest items that has no output one
    (`output`: "cancelled"), so that OpenAI takes the conversation again; whether there
    was any (functions/answer/ai_requests.py, after holds_unanswered_call)."""
    items = newest_items(client, conversation, budget, limit=50)
    answered = {item.call_id for item in items if item.kind == "function_call_output"}
    open_calls = [
        item.call_id for item in items if item.kind == "function_call" and item.call_id not in answered
    ]
    if not open_calls:
        return False
    outputs = [
        {"type": "function_call_output", "call_id": call_id, "output": output} for call_id in open_calls
    ]
    add_items(client, conversation, outputs, budget)
    count("ToolCallsCancelled", len(open_calls))
    logger.warning("Tool calls left without output closed as cancelled", extra={"calls": len(open_calls)})
    return True


def holds_unanswered_call(error: BaseException) -> bool:
    """Whether OpenAI refused a request because its conversation holds a function call
    without its output (400 "No tool output found for function call ...")."""
    cause = error.__cause__
    return (
        isinstance(cause, openai.APIStatusError)
        and cause.status_code == 400
        and "no tool output found" in str(cause.message).lower()
    )


def outcome_unknown(error: BaseException) -> bool:
    """Whether a failed request may still have been carried out: no answer (timeout,
    connection lost) or a 5xx. A 4xx answer means the request was refused."""
    cause = error.__cause__
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code >= 500
    return isinstance(cause, openai.APIConnectionError)


def _state(response: Any) -> ResponseState:
    usage = response.usage
    error = response.error
    incomplete = response.incomplete_details
    return ResponseState(
        id=response.id,
        status=response.status or "",
        text=response.output_text.strip(),
        model=response.model or "",
        error_code=error.code if error else None,
        incomplete_reason=incomplete.reason if incomplete else None,
        item_ids=tuple(item.id for item in response.output or [] if getattr(item, "id", None)),
        max_output_tokens=response.max_output_tokens,
        prompt_tokens=usage.input_tokens if usage else 0,
        completion_tokens=usage.output_tokens if usage else 0,
        total_tokens=usage.total_tokens if usage else 0,
        calls=tuple(
            AskedCall(call_id=item.call_id, name=item.name, arguments=item.arguments or "")
            for item in response.output or []
            if getattr(item, "type", "") == "function_call"
        ),
    )


def _item(item: Any) -> ConversationItem:
    kind = getattr(item, "type", "")
    if kind != "message":
        return ConversationItem(
            id=item.id, role="", text="", kind=kind, call_id=getattr(item, "call_id", "") or ""
        )
    parts = [getattr(part, "text", "") for part in item.content or []]
    return ConversationItem(id=item.id, role=item.role, text="\n".join(p for p in parts if p))


def _call[T](request: Callable[[], T], conversation_call: bool = False) -> T:
    """Make one OpenAI request, timed, with its error classified. `conversation_call`: a
    404 means the conversation named in the request is gone."""
    started = time.monotonic()
    try:
        return request()
    except (openai.APITimeoutError, openai.APIConnectionError) as error:
        count("AIErrors")
        raise AIRetryableError(f"OpenAI unreachable: {type(error).__name__}") from error
    except openai.APIStatusError as error:
        count("AIErrors")
        described = f"OpenAI HTTP {error.status_code} {error.code or ''}".strip()
        if error.code == MODEL_NOT_FOUND:
            count("AIModelUnavailable")
            logger.error("OpenAI does not serve the model", extra={"status": error.status_code})
            raise AIModelUnavailable(described) from error
        if error.status_code == 401:  # `invalid_api_key`: revoked, rotated, or another project's
            raise AICredentialsRefused(described, error.code) from error
        if conversation_call and error.status_code == 404 and _names_conversation(error):
            raise OpenAIConversationGone(described) from error
        if is_quota_error(error.status_code, error.code, error.type):
            count("AIQuotaExhausted")
            logger.error("OpenAI quota or billing limit reached", extra={"code": error.code})
            raise AIPermanentError(f"{described}: quota or billing limit", error.code) from error
        if is_retryable(error.status_code, error.code):
            raise AIRetryableError(described) from error
        raise AIPermanentError(described, error.code) from error
    finally:
        milliseconds("AILatency", (time.monotonic() - started) * 1000)


def _unless_gone[T](request: Callable[[], T]) -> T | None:
    """`_call(request)`, or None if the API does not know what it names (any more)."""
    try:
        return _call(request)
    except AIPermanentError as error:
        if isinstance(error.__cause__, openai.NotFoundError):
            return None
        raise


def _names_conversation(error: openai.APIStatusError) -> bool:
    return error.code != MODEL_NOT_FOUND and (
        error.param == "conversation" or "conversation" in str(error.message).lower()
    )


def is_quota_error(status: int, code: str | None, kind: str | None = None) -> bool:
    """429 `insufficient_quota` (and the billing errors): not transient, whatever the status."""
    return code in QUOTA_CODES or kind in QUOTA_CODES


def is_retryable(status: int, code: str | None) -> bool:
    """429 (not quota), 5xx, and a conversation still busy with an earlier request."""
    return status in (408, 409, 429) or status >= 500 or code in _RETRYABLE_CODES


# --- deleting what was stored (a person forgotten: functions/personal_data/forgetting.py) ----


def conversation_item_ids(client: openai.OpenAI, conversation: str, budget: Budget) -> list[str] | None:
    """The ids of every item of the conversation, oldest first (every page); None when the
    conversation is gone (deleted)."""
    items = all_conversation_items(client, conversation, budget)
    return None if items is None else [item.id for item in items]


def all_conversation_items(
    client: openai.OpenAI, conversation: str, budget: Budget
) -> list[ConversationItem] | None:
    """Every item of the conversation, oldest first (every page); None when the
    conversation is gone (deleted)."""
    items: list[ConversationItem] = []
    while True:
        after = items[-1].id if items else openai.omit
        page = _unless_gone(
            partial(
                client.conversations.items.list,
                conversation,
                limit=100,
                order="asc",
                after=after,
                timeout=budget.timeout(),
            )
        )
        if page is None:
            return items or None
        items += [_item(item) for item in page.data if getattr(item, "id", None)]
        if not page.has_more or not page.data:
            return items


def delete_conversation(client: openai.OpenAI, conversation: str, budget: Budget) -> None:
    """Delete the conversation (gone already is fine). Its items are not deleted with it
    ("Items in the conversation will not be deleted":
    https://platform.openai.com/docs/api-reference/conversations/delete): delete them first."""
    _unless_gone(partial(client.conversations.delete, conversation, timeout=budget.timeout()))


def delete_response(client: openai.OpenAI, response_id: str, budget: Budget) -> None:
    """Delete a stored response, its input and output with it (gone already is fine:
    https://platform.openai.com/docs/api-reference/responses/delete)."""
    _unless_gone(partial(client.responses.delete, response_id, timeout=budget.timeout()))
