"""The send-once protocol itself (functions/delivery/send_once.py), on in-memory fakes:
a message whose record is a dict, sent through the fake Twilio; then the fallback reply,
which uses it. Whatever fails, the user gets the message once and its SID is recorded.
(Reply parts and the WhatsApp template: test_sending.py.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pytest

from functions.answer import turns
from functions.contract import ErrorInfo, FailedInput, FailedRun, MergedOrQueried
from functions.delivery import send_once as send_once_module
from functions.delivery.send_once import RECEIPT_POLL_SECONDS, Claim, send_once
from functions.intake import staged_messages
from functions.intake.inbound import Channel
from functions.states import record_failed_batch
from functions.storage.models import Conversation
from tests.support.fake_clock import FakeMonotonic
from tests.support.fakes import FakeTwilio, InMemoryStore, TwilioPermanentError, TwilioRetryableError, install

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"


def on_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeMonotonic:
    """The wait for a delivery receipt, on a fake clock: how long it waited, and how often."""
    clock = FakeMonotonic()
    monkeypatch.setattr(send_once_module, "time", clock)
    return clock


@dataclass
class Note:
    """One message to send once; `record_item` stands for its DynamoDB item (the time the first
    attempt began, who sends it, its SID)."""

    twilio: FakeTwilio
    body: str = "We cannot answer right now."
    owner: str = "first"
    record_item: dict[str, str] = field(default_factory=dict)
    die_before_recording: bool = False
    # Its status callback, as recorded: reported after that many reads (None: never).
    reported_after_reads: int | None = None
    reads: int = 0

    def claim(self, now: str) -> Claim:
        since = self.record_item.setdefault("since", now)
        owner = self.record_item.setdefault("owner", self.owner)
        return Claim.began(since, now, sent=self.record_item.get("sid"), ours=owner == self.owner)

    def reported(self) -> str | None:
        self.reads += 1
        arrived = self.reported_after_reads is not None and self.reads > self.reported_after_reads
        sent = [m["sid"] for m in self.twilio.sent if m["body"] == self.body]
        return sent[0] if arrived and sent else None

    def refused(self) -> None:
        self.record_item["refused"] = "yes"

    def find(self, since: datetime) -> str | None:
        return self.twilio.find_sent(None, US, USER, self.body, since)

    def send(self) -> str:
        return self.twilio.send_message(None, US, USER, self.body)

    def record(self, sid: str) -> None:
        if self.die_before_recording:
            self.die_before_recording = False
            raise RuntimeError("the sandbox was stopped")
        self.record_item["sid"] = sid


@pytest.fixture
def twilio() -> FakeTwilio:
    return FakeTwilio()


def test_a_first_attempt_sends_without_looking_and_records_the_sid(twilio):
    note = Note(twilio)

    sid = send_once(note)

    assert [m["sid"] for m in twilio.sent] == [sid] and note.record_item["sid"] == sid
    assert twilio.lookups == 0 and twilio.attempts == 1


def test_a_retry_after_the_sid_was_recorded_does_nothing(twilio):
    note = Note(twilio)
    first = send_once(note)

    again = send_once(note)

    assert again == first
    assert twilio.attempts == 1 and twilio.lookups == 0  # neither sent nor looked up


def test_a_message_an_earlier_attempt_sent_is_found_in_the_list_not_sent_again(twilio):
    note = Note(twilio)
    twilio.lose_answer.add(0)  # accepted by Twilio; the answer is lost (a timeout)

    with pytest.raises(TwilioRetryableError):
        send_once(note)
    assert "sid" not in note.record_item and "since" in note.record_item  # the attempt began
    sid = send_once(note)

    assert [m["sid"] for m in twilio.sent] == [sid]  # sent once
    assert twilio.lookups == 1 and twilio.attempts == 1
    assert note.record_item["sid"] == sid


def test_a_message_sent_by_an_attempt_that_died_before_recording_it_is_found(twilio):
    note = Note(twilio, die_before_recording=True)

    with pytest.raises(RuntimeError):
        send_once(note)
    sid = send_once(note)

    assert [m["sid"] for m in twilio.sent] == [sid] and note.record_item["sid"] == sid
    assert twilio.lookups == 1 and twilio.attempts == 1


def test_a_message_an_earlier_attempt_began_but_twilio_never_got_is_sent(twilio, configure):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="0.3")
    note = Note(twilio)
    twilio.refuse[0] = TwilioRetryableError("Twilio HTTP 503 code None")

    with pytest.raises(TwilioRetryableError):
        send_once(note)
    sid = send_once(note)

    assert [m["sid"] for m in twilio.sent] == [sid] and note.record_item["sid"] == sid
    assert twilio.lookups == 1 and twilio.attempts == 2  # looked up, not found, sent


def test_another_owners_claim_sends_nothing(twilio):
    first = Note(twilio, owner="first")
    twilio.refuse[0] = TwilioRetryableError("Twilio HTTP 503 code None")
    with pytest.raises(TwilioRetryableError):
        send_once(first)

    other = Note(twilio, owner="second", record_item=first.record_item)

    assert send_once(other) is None
    assert twilio.sent == [] and twilio.attempts == 1 and twilio.lookups == 0


def test_a_message_the_list_does_not_show_yet_is_found_by_its_receipt_not_sent_again(
    twilio, configure, monkeypatch
):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="5")
    note = Note(twilio, reported_after_reads=3)  # its status callback comes during the wait
    twilio.list_lags = True
    twilio.lose_answer.add(0)
    with pytest.raises(TwilioRetryableError):
        send_once(note)

    clock = on_a_fake_clock(monkeypatch)
    sid = send_once(note)

    assert [m["sid"] for m in twilio.sent] == [sid] and note.record_item["sid"] == sid
    assert twilio.attempts == 1 and note.reads == 4
    # It stopped waiting once the receipt came: three polls, not the 5 s bound.
    assert clock.sleeps == [RECEIPT_POLL_SECONDS] * 3


def test_a_message_in_doubt_without_a_receipt_is_sent_again_after_the_bounded_wait(
    twilio, configure, monkeypatch
):
    configure(DELIVERY_RECEIPT_WAIT_SECONDS="0.6")
    note = Note(twilio)  # no callback ever (a message that never left Twilio's queue)
    twilio.list_lags = True
    twilio.lose_answer.add(0)
    with pytest.raises(TwilioRetryableError):
        send_once(note)

    clock = on_a_fake_clock(monkeypatch)
    send_once(note)

    assert clock.elapsed == pytest.approx(0.6)  # waited the bound out, no more
    assert note.reads == 1 + len(clock.sleeps)  # read again after each poll, for nothing
    assert twilio.attempts == 2  # the bound passed: sent again (the risk the bound takes)


def test_a_create_twilio_refused_is_kept_as_refused(twilio):
    note = Note(twilio)
    twilio.refuse[0] = TwilioRetryableError("Twilio HTTP 400 code 63018", refused=True)

    with pytest.raises(TwilioRetryableError):
        send_once(note)

    assert note.record_item["refused"] == "yes"


# --- the fallback reply (Record Failed Batch), on the store's fakes ------------------------

AI_REFUSED = FailedInput(
    conversation_id="c1",
    window_id="w1",
    execution_name="c1-w1",
    run=FailedRun(error=ErrorInfo(error="AIPermanentError"), batch=MergedOrQueried(message_sids=["SMuser1"])),
)


@pytest.fixture
def store(monkeypatch, twilio) -> InMemoryStore:
    store = InMemoryStore()
    store.conversations["c1"] = Conversation(
        conversation_id="c1",
        channel=Channel.WHATSAPP,
        user_address=USER,
        our_address=US,
        created_at="2026-11-26T00:00:00+00:00",
    )
    install(monkeypatch, store, twilio)
    monkeypatch.setattr(staged_messages, "set_aside", lambda *args: None)
    return store


def _fallback_sid(store: InMemoryStore) -> str | None:
    return store.turns[("c1", AI_REFUSED.user_turn_id)].fallback_message_sid


def test_a_fallback_whose_answer_was_lost_is_found_not_sent_again(store, twilio):
    twilio.lose_answer.add(0)

    with pytest.raises(TwilioRetryableError):
        record_failed_batch.record_failed_batch(AI_REFUSED)
    record_failed_batch.record_failed_batch(AI_REFUSED)  # the state's retry
    record_failed_batch.record_failed_batch(AI_REFUSED)  # and another: the SID is recorded

    assert [m["sid"] for m in twilio.sent] == [_fallback_sid(store)]
    assert twilio.lookups == 1 and twilio.attempts == 1


def test_a_fallback_sent_but_not_recorded_raises_and_the_retry_finds_it(store, twilio, monkeypatch):
    record = store.record_once

    def dies_recording_the_sid(*args):
        monkeypatch.setattr(turns, "record_once", record)
        raise RuntimeError("the sandbox was stopped")

    monkeypatch.setattr(turns, "record_once", dies_recording_the_sid)

    with pytest.raises(RuntimeError):  # not logged and dropped: the state retries
        record_failed_batch.record_failed_batch(AI_REFUSED)
    record_failed_batch.record_failed_batch(AI_REFUSED)

    assert [m["sid"] for m in twilio.sent] == [_fallback_sid(store)] and twilio.lookups == 1


def test_a_fallback_twilio_refuses_for_good_is_logged_and_the_batch_set_aside(store, twilio):
    twilio.refuse[0] = TwilioPermanentError("Twilio HTTP 400 code 21610", 21610)

    outcome = record_failed_batch.record_failed_batch(AI_REFUSED)

    assert outcome.outcome == "failed" and twilio.sent == [] and _fallback_sid(store) is None
