"""Opt-out: the last keyword of a batch, in arrival order, decides; the conversation
remembers it between batches."""

from __future__ import annotations

import pytest

from functions.dal import conversations
from functions.dal.models import Conversation, StagedMessage, Turn
from functions.dal.tables import user_turn_id
from functions.logic.rules.merge import last_consent
from functions.logic.shared import consent


def _conversation(opted_out: bool) -> Conversation:
    return Conversation(
        conversation_id="c1",
        channel="sms",
        user_address="+15551230000",
        our_address="+15559990000",
        created_at="2026-01-01T00:00:00+00:00",
        opted_out=opted_out,
    )


def _batch(*keywords: str | None) -> Turn:
    messages = [
        StagedMessage(conversation_id="c1", message_sid=f"SM{n}", body="x", consent=k)
        for n, k in enumerate(keywords)
    ]
    order = [m.message_sid for m in messages]
    return Turn(
        conversation_id="c1", turn_id=user_turn_id("w"), role="user", consent=last_consent(messages, order)
    )


@pytest.mark.parametrize(
    ("opted_out", "keywords", "held_back", "recorded"),
    [
        (False, [None, None], False, []),
        (False, [None, "opt_out"], True, [True]),  # "hi", "STOP"
        (False, ["opt_out", None], True, [True]),  # "STOP", "hi": still opted out
        (True, [None], True, []),  # opted out earlier: not answered
        (True, ["opt_in", None], False, [False]),  # "START", "hi": answered
        (True, ["opt_in", "opt_out"], True, []),  # START then STOP: the last one holds
        (False, ["opt_in"], False, []),  # "YES" from someone never opted out: a message like any
    ],
)
def test_the_last_keyword_of_the_batch_holds(monkeypatch, opted_out, keywords, held_back, recorded):
    changes: list[bool] = []
    monkeypatch.setattr(conversations, "set_opted_out", lambda cid, value, at: changes.append(value))

    assert consent.record_consent_and_hold_back(_conversation(opted_out), _batch(*keywords)) is held_back
    assert changes == recorded
