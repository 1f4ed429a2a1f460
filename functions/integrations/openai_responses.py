"""Generating a reply with OpenAI's Responses API, one OpenAI Conversation per chat.

The SDK's own retries are off: the state machine's Retry owns them, so each attempt is
visible in the run history. Errors become AIRetryableError or AIPermanentError."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeVar

import openai

from functions.config import get_settings
from functions.errors import AIPermanentError, AIRetryableError
from functions.observability import count, milliseconds

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputParam

T = TypeVar("T")

_RETRYABLE_CODES = {"conversation_locked"}


@dataclass(frozen=True)
class AIReply:
    text: str
    response_id: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@cache
def client_for(api_key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=api_key, max_retries=0, timeout=get_settings().openai_timeout_seconds)


def start_conversation(client: openai.OpenAI, conversation_id: str) -> str:
    created = _call(lambda: client.conversations.create(metadata={"conversation_id": conversation_id}))
    return created.id


def generate_reply(
    client: openai.OpenAI,
    openai_conversation_id: str,
    user_turn: str | ResponseInputParam,  # text, or text and images (functions/logic/turn_input.py)
    model: str,
    instructions: str,
) -> AIReply:
    response = _call(
        lambda: client.responses.create(
            model=model,
            instructions=instructions,
            conversation=openai_conversation_id,
            input=user_turn,
        )
    )
    text = response.output_text.strip()
    if not text:
        raise AIPermanentError(f"response {response.id} has no text output (status {response.status})")
    usage = response.usage
    return AIReply(
        text=text,
        response_id=response.id,
        model=response.model,
        prompt_tokens=usage.input_tokens if usage else 0,
        completion_tokens=usage.output_tokens if usage else 0,
        total_tokens=usage.total_tokens if usage else 0,
    )


def _call(request: Callable[[], T]) -> T:
    """Make one OpenAI request, timed, with its error classified."""
    started = time.monotonic()
    try:
        return request()
    except (openai.APITimeoutError, openai.APIConnectionError) as error:
        count("AIErrors")
        raise AIRetryableError(f"OpenAI unreachable: {type(error).__name__}") from error
    except openai.APIStatusError as error:
        count("AIErrors")
        described = f"OpenAI HTTP {error.status_code} {error.code or ''}".strip()
        if is_retryable(error.status_code, getattr(error, "code", None)):
            raise AIRetryableError(described) from error
        raise AIPermanentError(described) from error
    finally:
        milliseconds("AILatency", (time.monotonic() - started) * 1000)


def is_retryable(status: int, code: str | None) -> bool:
    """429, 5xx, and a conversation still busy with an earlier request."""
    return status in (408, 409, 429) or status >= 500 or code in _RETRYABLE_CODES
