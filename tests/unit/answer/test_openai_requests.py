"""Reading OpenAI's errors as the API means them, an attempt's time, and finding a batch's
turn among a conversation's newest items."""

from __future__ import annotations

import time

import pytest

from functions.answer.openai_responses import Budget, is_quota_error, is_retryable
from functions.answer.rules.conversation_items import (
    ConversationItem,
    exchange_of,
    exchanges,
    unanswered_copies,
)
from functions.config import Settings
from functions.errors import AIRetryableError
from functions.registry import BY_NAME


@pytest.mark.parametrize(
    ("status", "code", "kind", "quota", "retryable"),
    [
        (429, "insufficient_quota", "insufficient_quota", True, True),
        (429, "billing_not_active", "billing_not_active", True, True),
        (400, "billing_hard_limit_reached", "invalid_request_error", True, False),
        (429, None, "insufficient_quota", True, True),
        (429, "rate_limit_exceeded", "requests", False, True),
        (400, "conversation_locked", "invalid_request_error", False, True),
        (503, None, "server_error", False, True),
        (400, "context_length_exceeded", "invalid_request_error", False, False),
        (401, "invalid_api_key", "invalid_request_error", False, False),
    ],
)
def test_quota_and_billing_errors_are_not_transient_whatever_their_status(
    status, code, kind, quota, retryable
):
    # _call asks is_quota_error first: a quota 429 never reaches is_retryable.
    assert is_quota_error(status, code, kind) is quota
    assert is_retryable(status, code) is retryable


def test_an_attempt_shares_its_time_between_its_requests():
    budget = Budget(0.3)
    assert 0.2 < budget.timeout() <= 0.3
    time.sleep(0.3)
    with pytest.raises(AIRetryableError):
        budget.timeout()


def _longest(setting: str) -> float:
    return next(m.le for m in Settings.model_fields[setting].metadata if getattr(m, "le", None) is not None)


def test_an_attempt_ends_inside_the_generate_functions_timeout():
    # Loading the turn's media, then one attempt's requests and polls, plus DynamoDB and a
    # margin, fit in the function.
    longest = _longest("media_time_budget_seconds") + _longest("openai_timeout_seconds")
    assert longest + 10 <= BY_NAME["GenerateReply"].timeout_seconds


def user(item_id: str, text: str) -> ConversationItem:
    return ConversationItem(item_id, "user", text)


def assistant(item_id: str, text: str) -> ConversationItem:
    return ConversationItem(item_id, "assistant", text)


def page(*oldest_first: ConversationItem) -> list[ConversationItem]:
    return list(reversed(oldest_first))  # listed newest first


def test_items_are_read_as_exchanges_newest_first():
    found = exchanges(
        page(
            assistant("a0", "cut off"),
            user("u1", "hi"),
            ConversationItem("r1", "", ""),
            assistant("a1", "hello"),
        )
    )
    (only,) = found  # the reply whose question is on the next page is left out
    assert only.item_ids == ["u1", "r1", "a1"] and only.reply_text == "hello"


def test_a_responses_exchange_is_found_by_its_items_or_else_by_its_texts():
    found = exchanges(
        page(user("u1", "hi"), assistant("a1", "hello"), user("u2", "hi"), assistant("a2", "hey"))
    )
    assert exchange_of(found, ["a1"], "hi", "hello").item_ids == ["u1", "a1"]
    assert exchange_of(found, ["not-listed"], "hi", "hey").item_ids == ["u2", "a2"]
    assert exchange_of(found, ["not-listed"], None, "hey") is None


def test_copies_are_looked_for_only_after_the_last_reply_sent():
    found = exchanges(
        page(
            user("u1", "ok"),
            assistant("a1", "You said: ok"),  # the last reply the user received
            user("u2", "ok"),
            assistant("a2", "You said: ok"),  # a lost request's turn
            user("u3", "ok"),
            assistant("a3", "You said: ok"),  # this batch's own
        )
    )
    own = exchange_of(found, ["a3"], None, "")
    copies = unanswered_copies(found, "ok", ["a1"], "You said: ok", keep=own)
    assert [c.item_ids for c in copies] == [["u2", "a2"]]
    # Without its own response yet, every unanswered copy goes.
    assert len(unanswered_copies(found, "ok", ["a1"], "You said: ok")) == 2
    # A last reply recorded without item ids is recognised by its text.
    assert (
        unanswered_copies(exchanges(page(user("u1", "ok"), assistant("a1", "done"))), "ok", [], "done") == []
    )
    # Another text is never a copy.
    assert unanswered_copies(found, "something else", ["a1"], None) == []
