"""Opt-out: the last keyword of a batch, in arrival order, decides; the conversation
remembers it between batches."""

from __future__ import annotations

import pytest

from functions.answer import turns
from functions.batching.rules.merge import last_consent
from functions.config import Settings
from functions.contract import BatchRef
from functions.guards import consent
from functions.storage.models import Conversation, StagedMessage, Turn
from functions.storage.tables import user_turn_id
from functions.tenancy import conversations


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
    monkeypatch.setattr(conversations, "set_opted_out", lambda cid, value, at, by: changes.append(value))

    state = consent.record_consent(_conversation(opted_out), _batch(*keywords))
    assert (state is not consent.ConsentState.ANSWER) is held_back
    assert changes == recorded


def test_the_batch_that_opts_out_is_known_again_by_its_retry_and_only_by_it(monkeypatch):
    monkeypatch.setattr(conversations, "set_opted_out", lambda cid, value, at, by: None)
    stop = _batch("opt_out")
    assert consent.record_consent(_conversation(False), stop) is consent.ConsentState.OPTED_OUT_NOW
    # A retry after the change was recorded by this batch's own user turn: still this batch's.
    recorded = _conversation(True).model_copy(update={"opted_out_by": stop.turn_id})
    assert consent.record_consent(recorded, stop) is consent.ConsentState.OPTED_OUT_NOW
    # STOP again in a later batch: already opted out, not confirmed again.
    later = stop.model_copy(update={"turn_id": user_turn_id("w2")})
    assert consent.record_consent(recorded, later) is consent.ConsentState.HOLD_BACK
    assert consent.record_consent(recorded, _batch(None)) is consent.ConsentState.HOLD_BACK


@pytest.mark.parametrize(("channel", "confirmed"), [("whatsapp", True), ("sms", False)])
def test_only_a_whatsapp_opt_out_carries_the_confirmation(monkeypatch, channel, confirmed):
    stored: list[Turn] = []
    monkeypatch.setattr(conversations, "set_opted_out", lambda cid, value, at, by: None)
    monkeypatch.setattr(turns, "put", stored.append)
    conversation = _conversation(False).model_copy(update={"channel": channel})
    task = BatchRef(conversation_id="c1", window_id="w", execution_name="c1-w")

    turn = consent.held_back_turn(task, conversation, _batch("opt_out"))

    assert turn is not None and stored == [turn] and turn.limited == "opted_out"
    default = Settings.model_fields["opt_out_confirmation"].default
    assert turn.body == (default if confirmed else "")
