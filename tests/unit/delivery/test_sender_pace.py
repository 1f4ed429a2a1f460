"""Send Reply takes its sender's turn before each create, at the sender's rate, across all
conversations (functions/delivery/sender_pace.py), on in-memory fakes and a fake clock:
the turns the fake books are those functions/delivery/sender_budget.py books on DynamoDB
(tests/contract/test_sender_budget_contract.py holds them to one contract)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.contract import ReplySummary, SendInput
from functions.delivery import sender_pace
from functions.delivery.rules.replies import split_reply
from functions.delivery.sender_budget import shard_key
from functions.errors import TwilioRetryableError
from functions.intake.inbound import Channel
from functions.states import send_reply
from functions.storage.models import Conversation, Turn
from tests.support.fakes import FakeTwilio, InMemoryStore, install

OURS = "whatsapp:+15550000001"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NOW_US = int(NOW.timestamp() * 1_000_000)
LONG_REPLY = " ".join(f"Sentence number {n} of a long answer." for n in range(120))  # three parts


def _task(conversation_id: str) -> SendInput:
    summary = ReplySummary(
        answered_by="ai", reply_chars=0, prompt_tokens=0, completion_tokens=0, total_tokens=0
    )
    return SendInput(
        conversation_id=conversation_id, window_id="w1", execution_name=f"{conversation_id}-w1", reply=summary
    )


class StillClock:
    """Every reply begins at NOW, as replies sent at the same moment by as many Lambdas do:
    a wait is recorded (and what the reply does after it happens that much later), but the
    clock does not move for the others."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.moment = NOW

    def now(self) -> datetime:
        return self.moment

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.sleeps.append(seconds)


@pytest.fixture
def world(monkeypatch, configure):
    configure(REPLY_PART_INTERVAL_SECONDS="0", DELIVERY_RECEIPT_WAIT_SECONDS="0.2")
    store, twilio, still = InMemoryStore(), FakeTwilio(), StillClock()
    install(monkeypatch, store, twilio)
    monkeypatch.setattr(clock, "now", still.now)
    monkeypatch.setattr(clock, "sleep", still.sleep)
    return store, twilio, still


def _conversation(store: InMemoryStore, conversation_id: str, body: str = "Hello there.") -> SendInput:
    store.conversations[conversation_id] = Conversation(
        conversation_id=conversation_id,
        channel=Channel.WHATSAPP,
        user_address=f"whatsapp:+1555{len(store.conversations):07d}",
        our_address=OURS,
        created_at="2026-12-01T00:00:00+00:00",
    )
    task = _task(conversation_id)
    store.turns[(conversation_id, task.assistant_turn_id)] = Turn(
        conversation_id=conversation_id, turn_id=task.assistant_turn_id, role="assistant", body=body
    )
    return task


def _seconds(turns: list[tuple[str, int]]) -> list[float]:
    return [(turn - NOW_US) / 1_000_000 for _, turn in turns]


def test_the_replies_of_many_conversations_take_their_senders_turns_at_its_rate(world, configure):
    configure(TWILIO_SENDER_MPS="2")  # the ValidityPeriod: 1 s (DELIVERY_RECEIPT_WAIT_SECONDS 0.2 + margin)
    store, twilio, still = world
    tasks = [_conversation(store, f"c{n}") for n in range(6)]

    for task in tasks:
        send_reply.send_reply(task)

    assert _seconds(store.turns_taken) == [0, 0.5, 1.0, 1.5, 2.0, 2.5]  # one a turn, in order
    assert len(twilio.sent) == 6
    # Each created at most a quarter of its ValidityPeriod (1 s) before its turn: 0.25 s.
    assert still.sleeps == pytest.approx([0.25, 0.75, 1.25, 1.75, 2.25])


def test_a_number_with_its_own_rate_is_paced_at_it(world, configure):
    configure(TWILIO_SENDER_MPS="80")
    store, _, _ = world
    store.sender_rates[OURS] = 0.5  # one message every 2 s
    tasks = [_conversation(store, f"c{n}") for n in range(3)]

    for task in tasks:
        send_reply.send_reply(task)

    assert _seconds(store.turns_taken) == [0, 2.0, 4.0]


def test_each_part_takes_a_turn_once_a_retry_takes_none_for_a_part_already_sent(world, configure):
    configure(TWILIO_SENDER_MPS="2")
    store, twilio, still = world
    task = _conversation(store, "c1", LONG_REPLY)
    twilio.lose_answer.add(1)  # part 2 accepted by Twilio, its answer lost

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(task)
    still.moment += timedelta(seconds=2)
    send_reply.send_reply(task)  # the state machine's retry: part 2 found in the list, not sent again
    still.moment += timedelta(seconds=2)
    send_reply.send_reply(task)  # and again: every part recorded

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)
    assert len(store.turns_taken) == len(twilio.sent) == 3  # a turn for each create, no more


def test_turns_booked_past_what_the_attempt_can_wait_fail_it_retryably_with_nothing_created(world, configure):
    configure(TWILIO_SENDER_MPS="2")
    store, twilio, still = world
    task = _conversation(store, "c1")
    ahead = timedelta(seconds=sender_pace.WAIT_SECONDS + 5)
    store.next_turns[shard_key(OURS, 0)] = NOW_US + int(ahead.total_seconds() * 1_000_000)

    with pytest.raises(TwilioRetryableError) as deferred:
        send_reply.send_reply(task)

    assert deferred.value.refused  # nothing created: the retry need not wait for a receipt
    assert twilio.sent == [] and still.sleeps == [] and store.turns_taken == []
    store.next_turns.clear()  # the queue drained meanwhile
    send_reply.send_reply(task)
    assert len(twilio.sent) == 1 and twilio.lookups == 0  # sent at once, nothing looked up


def test_a_rate_of_0_is_not_paced(world, configure):
    configure(TWILIO_SENDER_MPS="0")
    store, twilio, still = world
    for task in [_conversation(store, f"c{n}") for n in range(3)]:
        send_reply.send_reply(task)
    assert store.turns_taken == [] and len(twilio.sent) == 3 and still.sleeps == []


def test_waits_are_counted_and_timed(world, configure, monkeypatch):
    configure(TWILIO_SENDER_MPS="1")
    store, _, _ = world
    counted, timed = [], []
    monkeypatch.setattr(sender_pace, "count", lambda name, value=1: counted.append(name))
    monkeypatch.setattr(sender_pace, "milliseconds", lambda name, value: timed.append((name, value)))

    for task in [_conversation(store, f"c{n}") for n in range(3)]:
        send_reply.send_reply(task)

    assert counted == ["RepliesWaitingForSender"] * 2  # the first goes at once
    assert [name for name, _ in timed] == ["SenderWait"] * 3
    assert [value for _, value in timed] == pytest.approx([0, 750, 1750])
