"""WhatsApp's typing indicator (functions/answer/typing_indicator.py) on in-memory
fakes: once per batch however often Generate Reply is attempted, refreshed once 26 s
later, none on SMS or when turned off, and a failure that never fails the batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.answer import typing_indicator
from functions.answer.typing_indicator import TypingIndicator
from functions.intake.inbound import Channel
from functions.storage.models import Turn
from functions.storage.tables import user_turn_id
from tests.support.fakes import FakeTwilio, InMemoryStore, install

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
TURN = user_turn_id("w1")
SIDS = ["SM" + "1" * 32, "SM" + "2" * 32, "SM" + "3" * 32]


@pytest.fixture
def world(monkeypatch, configure):
    configure(TYPING_INDICATOR="true")
    store, twilio, counted = InMemoryStore(), FakeTwilio(), []
    install(monkeypatch, store, twilio)
    world = {"store": store, "twilio": twilio, "counted": counted, "now": NOW}
    monkeypatch.setattr(clock, "now", lambda: world["now"])
    monkeypatch.setattr(typing_indicator, "count", lambda name, value=1: counted.append(name))
    for channel, user in ((Channel.WHATSAPP, "whatsapp:+15550001111"), (Channel.SMS, "+15550002222")):
        conversation = store.create_conversation(channel, user, "us", clock.iso(NOW), "AC1")
        store.put_turn(
            Turn(
                conversation_id=conversation.conversation_id,
                turn_id=TURN,
                role="user",
                message_sids=SIDS,
            )
        )
        world[channel.value] = conversation.conversation_id
    return world


def attempt(world, channel: str = "whatsapp") -> TypingIndicator:
    """One Generate Reply attempt's indicator: the conversation and user turn as read now."""
    store, conversation_id = world["store"], world[channel]
    typing = TypingIndicator(
        store.require_conversation(conversation_id), store.require_turn(conversation_id, TURN)
    )
    typing.show()
    return typing


def test_one_indicator_per_batch_on_its_last_message_however_often_it_is_attempted(world):
    attempt(world)
    attempt(world)  # a retry of Generate Reply
    assert world["twilio"].typing == [SIDS[-1]]
    assert world["counted"] == ["TypingIndicators"]


def test_none_on_sms(world):
    attempt(world, "sms")
    assert world["twilio"].typing == []


def test_none_when_turned_off(world, configure):
    configure(TYPING_INDICATOR="false")
    attempt(world)
    assert world["twilio"].typing == []


def test_shown_again_once_if_the_reply_is_still_written_after_twilios_25_seconds(world):
    # WhatsApp shows it 25 s at most (https://www.twilio.com/docs/whatsapp/api/typing-indicators-resource):
    # sent again sooner, it is reported ignored.
    typing = attempt(world)
    world["now"] = NOW + timedelta(seconds=25)
    typing.refresh_if_due()
    assert world["twilio"].typing == [SIDS[-1]]
    world["now"] = NOW + timedelta(seconds=26)
    typing.refresh_if_due()
    typing.refresh_if_due()
    later = attempt(world)  # the next attempt polls the same response
    world["now"] = NOW + timedelta(seconds=45)
    later.refresh_if_due()
    assert world["twilio"].typing == [SIDS[-1], SIDS[-1]]


def test_a_failing_indicator_is_logged_and_counted_and_the_batch_goes_on(world):
    world["twilio"].typing_fails = RuntimeError("Twilio HTTP 404 code 20404")
    attempt(world)  # does not raise
    assert world["counted"] == ["TypingIndicatorsFailed"]
    attempt(world)  # claimed: a retry does not try again
    assert world["twilio"].typing == [SIDS[-1]]
