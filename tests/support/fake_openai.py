"""A fake of OpenAI's Responses and Conversations APIs as
functions/answer/openai_responses.py offers them: one OpenAI conversation's items,
and responses that complete at once, adding their input and reply to it (as a background
response does when it completes, whether or not its client still waits)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2
import openai
import pytest

from functions.answer import openai_responses as ai
from functions.answer.ai_requests import BatchRequest
from functions.answer.openai_responses import Budget, ResponseState
from functions.answer.rules.conversation_items import ConversationItem
from functions.errors import AIRetryableError


def answer_lost() -> AIRetryableError:
    """What a creation whose answer never came raises (its outcome is unknown)."""
    timeout = openai.APITimeoutError(request=httpx2.Request("POST", "https://api.openai.com/v1/responses"))
    error = AIRetryableError("OpenAI unreachable: APITimeoutError")
    error.__cause__ = timeout
    return error


@dataclass
class FakeOpenAI:
    """Creation number n (0-based) answers "reply n"; those in `lose_answer` complete and
    their answer is lost; those in `refuse` raise the error and do nothing; those in
    `fail` complete with that error code and no reply; those in `running` are still in
    progress when first waited for, and complete (adding their exchange) unless the wait
    is stopped and they are cancelled. `forgotten`: response ids that retrieve no longer
    finds. Those in `reasoning` reason before their reply (a reasoning item, then the
    reply); those in `out_of_room` spend their max_output_tokens on reasoning (a reasoning
    item, no reply: `incomplete`); those in `cancel_keeps_input` leave their input when
    cancelled."""

    items: list[ConversationItem] = field(default_factory=list)  # oldest first
    responses: dict[str, ResponseState] = field(default_factory=dict)
    created: int = 0
    retrieved: int = 0
    deleted: list[str] = field(default_factory=list)
    lose_answer: set[int] = field(default_factory=set)
    refuse: dict[int, Exception] = field(default_factory=dict)
    fail: dict[int, str] = field(default_factory=dict)
    forgotten: set[str] = field(default_factory=set)
    running: set[int] = field(default_factory=set)
    cancelled: list[str] = field(default_factory=list)
    reasoning: set[int] = field(default_factory=set)
    out_of_room: set[int] = field(default_factory=set)
    cancel_keeps_input: set[int] = field(default_factory=set)
    # The options each creation was asked with (max_output_tokens, reasoning_effort, ...).
    asked_with: list[dict[str, Any]] = field(default_factory=list)
    # A deletion deletes this many items, then its attempt's time is up (None: all of them).
    time_out_after_deleting: int | None = None
    # The user texts the conversation held when each creation was asked (what it read).
    read_at_creation: list[list[str]] = field(default_factory=list)
    _unfinished: dict[str, tuple[int, str]] = field(default_factory=dict)

    def exchange(self, number: int, user_text: str, reply_text: str | None = None) -> ResponseState:
        """Add an exchange to the conversation; the response it stands for."""
        reply_id, thought = f"msg_reply_{number}", f"rs_{number}"
        self.items += [ConversationItem(f"msg_user_{number}", "user", user_text)]
        if number in self.reasoning | self.out_of_room and reply_text is not None:
            self.items += [ConversationItem(thought, "", "")]
        if number in self.out_of_room and reply_text is not None:
            self.responses[f"resp_{number}"] = ResponseState(
                f"resp_{number}", "incomplete", incomplete_reason="max_output_tokens", item_ids=(thought,)
            )
            return self.responses[f"resp_{number}"]
        if reply_text is not None:
            self.items += [ConversationItem(reply_id, "assistant", reply_text)]
        reasoned = (thought,) if number in self.reasoning else ()
        state = ResponseState(
            id=f"resp_{number}", status="completed", text=reply_text or "", item_ids=(*reasoned, reply_id)
        )
        self.responses[state.id] = state
        return state

    def create_response(
        self, client: Any, *, conversation: str, user_turn: Any, **options: Any
    ) -> ResponseState:
        number, self.created = self.created, self.created + 1
        self.read_at_creation.append(self.user_texts())
        self.asked_with.append(options)
        if number in self.refuse:
            raise self.refuse[number]
        if number in self.fail:
            state = self.exchange(number, str(user_turn))
            self.responses[state.id] = replace(state, status="failed", error_code=self.fail[number])
            return self.responses[state.id]
        if number in self.running:
            state = ResponseState(id=f"resp_{number}", status="in_progress")
            self.responses[state.id] = state
            self._unfinished[state.id] = (number, str(user_turn))
            return state
        state = self.exchange(number, str(user_turn), f"reply {number}")
        state = self.responses[state.id] = replace(state, max_output_tokens=options.get("max_output_tokens"))
        if number in self.lose_answer:
            raise answer_lost()
        return replace(state, status="queued")

    def retrieve_response(self, client: Any, response_id: str, budget: Any) -> ResponseState | None:
        self.retrieved += 1
        return None if response_id in self.forgotten else self.responses.get(response_id)

    def cancel_response(self, client: Any, response_id: str, budget: Any) -> ResponseState | None:
        if response_id in self._unfinished:  # a cancelled response adds nothing (or its input)
            number, user_text = self._unfinished.pop(response_id)
            if number in self.cancel_keeps_input:
                self.items += [ConversationItem(f"msg_user_{number}", "user", user_text)]
            self.cancelled.append(response_id)
            self.responses[response_id] = replace(self.responses[response_id], status="cancelled")
        return self.responses.get(response_id)

    def wait_for(
        self,
        client: Any,
        response: ResponseState,
        budget: Any,
        stop: Callable[[], bool] | None = None,
        while_waiting: Any = None,
    ) -> ResponseState:
        if response.id in self._unfinished:
            if stop is not None and stop():
                return self.responses[response.id]
            number, user_text = self._unfinished.pop(response.id)
            self.exchange(number, user_text, f"reply {number}")
        return self.responses[response.id]

    def newest_items(
        self, client: Any, conversation: str, budget: Any, limit: int = 20
    ) -> list[ConversationItem]:
        return list(reversed(self.items))[:limit]

    def delete_items(self, client: Any, conversation: str, item_ids: list[str], budget: Any) -> None:
        if self.time_out_after_deleting is not None:  # the attempt's time runs out midway
            item_ids, left = (
                item_ids[: self.time_out_after_deleting],
                item_ids[self.time_out_after_deleting :],
            )
        else:
            left = []
        self.deleted += item_ids
        self.items = [item for item in self.items if item.id not in item_ids]
        if left:
            raise AIRetryableError("OpenAI: this attempt's time is spent; the next attempt goes on")

    def user_texts(self) -> list[str]:
        return [item.text for item in self.items if item.role == "user"]


def install_openai(monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    fake = FakeOpenAI()
    for name in ("create_response", "retrieve_response", "cancel_response", "wait_for", "newest_items"):
        monkeypatch.setattr(ai, name, getattr(fake, name))
    monkeypatch.setattr(ai, "delete_items", fake.delete_items)
    return fake


def batch_request(
    message_sids: tuple[str, ...], body: str, window_id: str = "w1", newer: bool | None = None
) -> BatchRequest:
    """Conversation c1's request for these messages, on OpenAI conversation conv_1, with the
    fake's client (none); `newer`: what the check for newer fragments answers (None: none)."""
    return BatchRequest(
        conversation_id="c1",
        window_id=window_id,
        message_sids=list(message_sids),
        input=body,
        body=body,
        openai_conversation="conv_1",
        client=None,  # type: ignore[arg-type]  # the fake takes none
        budget=Budget(30),
        model="gpt-test",
        instructions="Be brief.",
        max_output_tokens=500,
        newer=None if newer is None else (lambda: newer),
    )
