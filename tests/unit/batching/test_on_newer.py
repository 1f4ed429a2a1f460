"""`on_newer`: a fragment that arrives while the batch's reply is generated. With `merge`
the reply is discarded (the response cancelled, its turn removed from the OpenAI
conversation) and the run asks again with the newer fragments; with `next` it waits for
the next window. On in-memory fakes (tests/support/fakes.py, tests/support/fake_openai.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.answer import ai_requests
from functions.answer.ai_requests import BatchRequest
from functions.batching.rules.debounce import BatchingRules, may_answer_again, newer_fragments_arrived
from functions.contract import BatchSummary, GenerateInput
from functions.errors import AIRetryableError, NewerFragments
from functions.intake.inbound import InboundMessage
from functions.states.generate_reply import newer_fragments_check
from functions.storage.models import BatchWindow
from tests.support.fake_openai import FakeOpenAI, batch_request, install_openai
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2, SM3 = (f"SM{n:032x}" for n in (1, 2, 3))
NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
MERGE, NEXT = BatchingRules(), BatchingRules(on_newer="next")


# --- the rules --------------------------------------------------------------------------


def test_merge_is_the_default_and_allows_two_regenerations():
    assert (MERGE.on_newer, MERGE.max_regenerations) == ("merge", 2)
    assert BatchingRules.parse({"on_newer": "next", "max_regenerations": "1"}) == BatchingRules(
        on_newer="next", max_regenerations=1
    )
    assert BatchingRules.parse({"max_regenerations": 50}).max_regenerations == 5  # clamped


@pytest.mark.parametrize(
    ("rules", "regenerations", "size", "limit", "allowed"),
    [
        (MERGE, 0, 2, 50, True),
        (MERGE, 1, 2, 50, True),
        (MERGE, 2, 2, 50, False),  # max_regenerations reached
        (NEXT, 0, 2, 50, False),  # today's behaviour: the next window answers it
        (MERGE, 0, 50, 50, False),  # a full batch: the newer fragments would not fit
        (BatchingRules(max_regenerations=0), 0, 2, 50, False),
    ],
)
def test_a_reply_may_be_discarded_only_within_the_rules(rules, regenerations, size, limit, allowed):
    assert may_answer_again(rules, regenerations, size, limit) is allowed


def window(opened_ms: int, last_ms: int) -> BatchWindow:
    return BatchWindow(
        conversation_id="c1",
        window_id="w1",
        opened_at="",
        opened_ms=opened_ms,
        last_message_ms=last_ms,
        execution_name="c1-w1",
    )


def test_a_fragment_counted_after_the_merge_is_newer_until_max_wait_from_the_first():
    merged_ms = NOW_MS - 1000
    first_ms = NOW_MS - 10_000
    assert newer_fragments_arrived(MERGE, window(first_ms, merged_ms + 1), merged_ms, NOW_MS)
    assert not newer_fragments_arrived(MERGE, window(first_ms, merged_ms - 1), merged_ms, NOW_MS)
    late = BatchingRules(max_wait_seconds=10)  # the first fragment came 10 s ago: answer now
    assert not newer_fragments_arrived(late, window(first_ms, merged_ms + 1), merged_ms, NOW_MS)


# --- discarding the reply ---------------------------------------------------------------


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    """Three messages pending in conversation c1."""
    store = store_with_conversation(monkeypatch, NOW, USER, US)
    for number, (sid, body) in enumerate(((SM1, "first"), (SM2, "second"), (SM3, "third"))):
        form = {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": body}
        store.stage("c1", InboundMessage.from_form(form), f"2026-11-26T11:59:0{number}+00:00")
    return store


@pytest.fixture
def openai(monkeypatch) -> FakeOpenAI:
    return install_openai(monkeypatch)


def request(sids: tuple[str, ...], body: str, newer: bool | None) -> BatchRequest:
    return batch_request(sids, body, newer=newer)


def test_a_response_still_generating_is_cancelled_and_the_batch_asked_again_as_one_turn(
    store, openai, monkeypatch
):
    counted: list[str] = []
    monkeypatch.setattr(ai_requests, "count", lambda name, value=1: counted.append(name))
    openai.running.add(0)
    with pytest.raises(NewerFragments):
        request((SM1, SM2), "first\nsecond", newer=True).reply()

    assert openai.cancelled == ["resp_0"] and openai.user_texts() == []
    assert counted == ["RepliesDiscarded"]
    assert store.ai_requests("c1", [SM1, SM2, SM3]) == {}  # nothing kept: asked anew

    reply = request((SM1, SM2, SM3), "first\nsecond\nthird", newer=False).reply()

    assert reply.text == "reply 1"
    assert openai.user_texts() == ["first\nsecond\nthird"]  # one user turn for the batch


def test_a_reply_completed_before_the_newer_fragment_was_seen_is_removed_from_the_conversation(store, openai):
    with pytest.raises(NewerFragments):
        request((SM1, SM2), "first\nsecond", newer=True).reply()

    assert openai.cancelled == [] and openai.deleted == ["msg_reply_0", "msg_user_0"]
    request((SM1, SM2, SM3), "first\nsecond\nthird", newer=False).reply()
    assert openai.user_texts() == ["first\nsecond\nthird"]


def test_a_removal_cut_short_by_the_attempts_time_leaves_nothing_the_next_attempt_cannot_remove(
    store, openai
):
    """The discarded reply's items are deleted one by one; the attempt's time may run out
    between them. What is left must still be recognisable as this batch's, so that the
    state's retry removes it: otherwise the model reads a reply nobody was sent."""
    openai.time_out_after_deleting = 1
    with pytest.raises(AIRetryableError):
        request((SM1, SM2), "first\nsecond", newer=True).reply()
    openai.time_out_after_deleting = None

    with pytest.raises(NewerFragments):  # the retry: the newer fragment is still there
        request((SM1, SM2), "first\nsecond", newer=True).reply()

    assert openai.items == []
    request((SM1, SM2, SM3), "first\nsecond\nthird", newer=False).reply()
    assert [(i.role, i.text) for i in openai.items] == [
        ("user", "first\nsecond\nthird"),
        ("assistant", "reply 1"),
    ]


def test_a_cut_short_removal_retried_without_newer_fragments_asks_again(store, openai):
    """The retry may no longer discard (no newer fragment left to merge, or the rules
    forbid another regeneration). The reply the cut-short removal took out of the OpenAI
    conversation must not be sent as if the model still held it: the batch is asked again."""
    openai.time_out_after_deleting = 1
    with pytest.raises(AIRetryableError):
        request((SM1, SM2), "first\nsecond", newer=True).reply()
    openai.time_out_after_deleting = None

    reply = request((SM1, SM2), "first\nsecond", newer=None).reply()

    assert [(i.role, i.text) for i in openai.items] == [("user", "first\nsecond"), ("assistant", reply.text)]


def test_without_newer_fragments_or_when_the_rules_forbid_it_the_reply_is_kept(store, openai):
    openai.running.add(0)
    assert request((SM1, SM2), "first\nsecond", newer=None).reply().text == "reply 0"
    assert request((SM3,), "third", newer=False).reply().text == "reply 1"
    assert openai.cancelled == [] and openai.user_texts() == ["first\nsecond", "third"]


# --- what Generate Reply asks ----------------------------------------------------------


def task(rules: BatchingRules, regenerations: int = 0) -> GenerateInput:
    return GenerateInput(
        conversation_id="c1",
        window_id="w1",
        execution_name="c1-w1",
        batch=BatchSummary(message_count=2, message_sids=[SM1, SM2]),
        rules=rules,
        regenerations=regenerations,
        batch_limit=50,
    )


def test_generate_reply_asks_the_batch_window_whether_a_fragment_came_after_the_merge(store):
    merged_at = "2026-11-26T11:59:59+00:00"
    store.open_window(window(NOW_MS - 5000, NOW_MS - 2000))
    newer = newer_fragments_check(task(MERGE), merged_at)
    assert newer is not None and newer() is False

    store.count_message_in_window(window(0, 0), NOW_MS, flush=False)  # a fragment, counted now

    assert newer() is True
    assert newer_fragments_check(task(NEXT), merged_at) is None
    assert newer_fragments_check(task(MERGE, regenerations=2), merged_at) is None
