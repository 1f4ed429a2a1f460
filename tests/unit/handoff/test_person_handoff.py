"""Hand-off to a person, on in-memory fakes: when a conversation waits for a person, what
asks for one, what Generate Reply and Record Turns And Release Lock make of a batch then,
and a helpdesk's commands refused unless they name a conversation of their tenant's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from functions import clock
from functions.batching.rules.burst import BatchingRules
from functions.contract import BatchSummary, GenerateInput, RecordInput, ReplySummary, SentSummary
from functions.delivery import event_bus
from functions.entry_points.conversation_commands import run_command
from functions.guards import limits
from functions.handoff.rules import pause as rules
from functions.intake.inbound import Channel
from functions.states.generate_reply import generate_reply
from functions.states.record_turns_and_release_lock import record_turns_and_release_lock
from functions.storage.models import Conversation, Tenant, Turn
from functions.storage.tables import assistant_turn_id, user_turn_id
from functions.tenancy import conversations, tenants
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
TENANT, STRANGER = "AC" + "1" * 32, "AC" + "2" * 32
NOW = datetime(2026, 11, 26, 12, 0, 30, tzinfo=UTC)
SM1, SM2 = (f"SM{n:032x}" for n in (1, 2))
HUMAN = BatchingRules(handoff_keywords=("human", "talk to someone"), handoff_reply="A person will answer.")


def paused(
    at: datetime = NOW, until: datetime | None = None, by: str = "operator", message: str | None = None
):
    return {
        "paused_at": clock.iso(at),
        "paused_until": clock.iso(until) if until else None,
        "paused_by": by,
        "paused_by_message": message,
    }


def conversation(**fields) -> Conversation:
    fields = {"channel": "whatsapp", **fields}
    return Conversation(conversation_id="c1", user_address=USER, our_address=US, created_at="t", **fields)


# --- the rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pause", "waits"),
    [
        ({}, False),
        (paused(), True),  # until resumed
        (paused(until=NOW + timedelta(hours=2)), True),
        (paused(at=NOW - timedelta(hours=3), until=NOW - timedelta(hours=1)), False),  # --for 2h, over
    ],
)
def test_a_conversation_waits_for_a_person_while_paused_and_until_its_pause_ends(pause, waits):
    assert rules.is_paused(conversation(**pause), NOW) is waits


@pytest.mark.parametrize(
    ("body", "typed", "asks"),
    [
        ("I want a human", True, True),
        ("HUMAN!", True, True),
        ("can I talk to someone please", True, True),
        ("human", False, False),  # a button labelled "human": an answer, not a request
        ("humane treatment", True, False),  # a word, not a part of one
        ("hello", True, False),
    ],
)
def test_only_typed_text_with_a_keyword_asks_for_a_person(body, typed, asks):
    assert rules.asks_for_a_person(HUMAN, body, typed) is asks
    assert not rules.asks_for_a_person(BatchingRules(), body, typed)  # HANDOFF_KEYWORDS empty: never


def test_a_pause_span_is_read_and_refused_when_it_is_no_span():
    assert rules.span("2h") == timedelta(hours=2) and rules.span("30m") == timedelta(minutes=30)
    for wrong in ("2", "0h", "2 weeks", "400d"):
        with pytest.raises(ValueError):
            rules.span(wrong)


# --- Generate Reply, Record Turns And Release Lock ----------------------------------------


def task(*sids: str) -> GenerateInput:
    batch = BatchSummary(message_count=len(sids), message_sids=list(sids))
    return GenerateInput(
        conversation_id="c1", window_id="w1", execution_name="c1-w1", batch=batch, rules=HUMAN
    )


def prepared(monkeypatch, **pause) -> InMemoryStore:
    store = store_with_conversation(monkeypatch, NOW, USER, US, tenant_account_sid=TENANT, **pause)
    store.put_turn(Turn(conversation_id="c1", turn_id=task().user_turn_id, role="user", body="x"))
    return store


def test_a_batch_of_a_paused_conversation_gets_no_ai_call_and_no_reply(monkeypatch):
    store = prepared(monkeypatch, **paused())

    summary = generate_reply(task(SM1))  # no OpenAI client is set up here: any call would fail

    assert summary.answered_by == "human" and summary.reply_chars == 0
    assert ("c1", task().assistant_turn_id) not in store.turns


def test_the_batch_that_asked_for_a_person_is_told_so_once_and_the_next_is_not(monkeypatch):
    store = prepared(monkeypatch, **paused(by=rules.BY_KEYWORD, message=SM2))

    asking = generate_reply(task(SM1, SM2))
    turn = store.turns[("c1", task().assistant_turn_id)]
    store.turns.pop(("c1", task().assistant_turn_id))
    later = generate_reply(task(f"SM{3:032x}"))

    assert (asking.answered_by, turn.body, turn.limited) == ("limited", "A person will answer.", "handed_off")
    assert later.answered_by == "human"


@pytest.mark.parametrize(("answered_by", "limited"), [("human", None), ("limited", "handed_off")])
def test_a_batch_for_a_person_is_announced_handed_off_not_answered(monkeypatch, answered_by, limited):
    store = prepared(monkeypatch)
    published: list[tuple[str, dict]] = []
    monkeypatch.setattr(event_bus, "publish", lambda kind, detail: published.append((kind, detail)))
    monkeypatch.setattr(
        event_bus, "publish_batch_answered", lambda detail: published.append(("answered", detail))
    )
    record = RecordInput(
        conversation_id="c1",
        window_id="w1",
        execution_name="c1-w1",
        lock_acquired_at=clock.iso(NOW - timedelta(seconds=2)),
        batch=BatchSummary(message_count=1, message_sids=[SM1]),
        reply=ReplySummary(
            answered_by=answered_by, reply_chars=0, prompt_tokens=0, completion_tokens=0, total_tokens=0
        ),
        sent=SentSummary(message_sids=[], parts=0),
    )
    store.put_turn(
        Turn(conversation_id="c1", turn_id=record.assistant_turn_id, role="assistant", limited=limited)
    )
    store.locks["c1"] = ("c1-w1", 1_900_000_000)

    assert record_turns_and_release_lock(record).announced
    ((kind, detail),) = published
    assert kind == "batch.handed_off"
    assert (detail["conversation_id"], detail["user_turn_id"]) == ("c1", record.user_turn_id)


# --- a helpdesk's commands ------------------------------------------------------------------


def command(detail_type: str, **detail: object) -> dict[str, object]:
    return {
        "id": "e1",
        "detail-type": detail_type,
        "source": f"helpdesk.{TENANT}",
        "time": "2026-11-26T12:00:00Z",
        "detail": {"AccountSid": TENANT, "conversation": "c1", **detail},
    }


@pytest.fixture
def commanded(monkeypatch) -> list[tuple[str, ...]]:
    done: list[tuple[str, ...]] = []
    monkeypatch.setattr(
        conversations, "get", lambda cid: conversation(tenant_account_sid=TENANT) if cid == "c1" else None
    )
    monkeypatch.setattr(conversations, "find", lambda *args: None)
    monkeypatch.setattr(tenants, "get", lambda sid: Tenant(account_sid=sid, numbers=[US]))
    monkeypatch.setattr(
        conversations, "pause", lambda cid, at, by, until, message=None: done.append(("pause", by))
    )
    monkeypatch.setattr(conversations, "resume", lambda cid: done.append(("resume",)))
    monkeypatch.setattr(
        limits, "admit_command", lambda c, event_id: limits.CommandAdmission(clock.now(), None)
    )
    return done


def test_a_helpdesk_pauses_and_resumes_its_tenants_conversation(commanded):
    assert run_command(command("conversation.pause", for_seconds=3600))["outcome"] == "paused"
    assert run_command(command("conversation.resume"))["outcome"] == "resumed"
    assert commanded == [("pause", "helpdesk"), ("resume",)]


@pytest.mark.parametrize(
    "event",
    [
        command("conversation.pause") | {"detail": {"AccountSid": STRANGER, "conversation": "c1"}},
        command("conversation.pause", conversation=USER)
        | {"detail": {"AccountSid": STRANGER, "conversation": USER}},
        command("conversation.pause", conversation="c2"),
    ],
    ids=["another tenant's by id", "another tenant's by address", "no such conversation"],
)
def test_a_command_naming_no_conversation_of_its_tenant_is_refused(commanded, event):
    assert run_command(event) == {"outcome": "refused"}
    assert commanded == []


@pytest.mark.parametrize("source", ["helpdesk.example", f"helpdesk.{STRANGER}", "burst-reply"])
def test_a_command_from_any_source_but_its_tenants_own_is_refused(commanded, source):
    assert run_command(command("conversation.pause") | {"source": source}) == {"outcome": "refused"}
    assert commanded == []


def test_a_closed_conversation_cannot_be_commanded(commanded, monkeypatch):
    closed = conversation(tenant_account_sid=TENANT, task_complete=True)
    monkeypatch.setattr(conversations, "get", lambda cid: closed)
    assert run_command(command("conversation.pause")) == {"outcome": "refused"}
    assert commanded == []


@pytest.mark.parametrize(
    ("fields", "body", "outcome"),
    [
        ({"opted_out": True}, "Hello from Sam.", "opted_out"),
        ({"channel": Channel.SMS}, "word " * 400, "too_long"),  # 2,000 characters: 14 SMS segments
    ],
    ids=["opted out", "more SMS segments than a reply may have"],
)
def test_a_persons_reply_that_breaks_a_rule_is_not_sent(commanded, monkeypatch, fields, body, outcome):
    monkeypatch.setattr(conversations, "get", lambda cid: conversation(tenant_account_sid=TENANT, **fields))
    event = command("conversation.reply", body=body)
    assert run_command(event)["outcome"] == outcome


@pytest.mark.parametrize(
    "event",
    [command("conversation.reply"), command("conversation.delete"), {"detail-type": "conversation.pause"}],
    ids=["a reply without a body", "an unknown command", "no detail"],
)
def test_a_malformed_command_is_dropped(commanded, event):
    assert run_command(event) == {"outcome": "malformed"}
    assert commanded == []


def test_infra_runs_stats_counts_the_batches_handed_off_and_the_persons_replies():
    from infra.run_stats import burst_stats

    def turn(window: str, role: str, **fields) -> Turn:
        turn_id = user_turn_id(window) if role == "user" else assistant_turn_id(window)
        return Turn(conversation_id="c1", turn_id=turn_id, role=role, window_id=window, **fields)

    at = clock.iso(NOW)
    recorded = [
        turn("w1", "user", status="answered", answered_at=at),
        turn("w1", "assistant", status="sent", sent_at=at, message_sids=["SMa"]),
        turn("w2", "user", status="handed_off", answered_at=at),  # paused: no reply
        turn("w3", "user", status="limited", answered_at=at),  # asked for a person: HANDOFF_REPLY
        turn("w3", "assistant", status="limited", limited="handed_off", message_sids=["SMb"]),
        turn("w4-p1", "assistant", status="sent", sent_at=at, message_sids=["SMc"], written_by="person"),
    ]

    stats = burst_stats(recorded, NOW - timedelta(hours=1), 30)

    assert (stats.batches, stats.handed_off_batches, stats.handed_off, stats.person_replies) == (
        3,
        2,
        {"c1"},
        1,
    )
    assert "  HandedOffBatches    2 (of 1 conversations)" in stats.lines()
