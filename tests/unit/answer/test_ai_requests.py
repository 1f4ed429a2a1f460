"""A batch's OpenAI request, asked once (functions/answer/ai_requests.py), on
in-memory fakes: the store (tests/support/fakes.py) and OpenAI (tests/support/fake_openai.py).
Whatever attempt times out or dies, the OpenAI conversation holds one turn per batch."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.answer.ai_requests import BatchRequest
from functions.errors import AIPermanentError, AIRetryableError
from functions.intake.inbound import InboundMessage
from functions.storage.models import AIRequest, Turn
from functions.storage.tables import assistant_turn_id, user_turn_id
from tests.support.fake_openai import FakeOpenAI, batch_request, install_openai
from tests.support.fakes import InMemoryStore, store_with_conversation

US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
SM1, SM2 = (f"SM{n:032x}" for n in (1, 2))
BODY = "first\nsecond"


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    """Two messages pending in conversation c1."""
    store = store_with_conversation(monkeypatch, datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC), USER, US)
    for number, (sid, body) in enumerate(((SM1, "first"), (SM2, "second"))):
        form = {"MessageSid": sid, "AccountSid": "AC" + "1" * 32, "From": USER, "To": US, "Body": body}
        store.stage("c1", InboundMessage.from_form(form), f"2026-11-26T11:59:0{number}+00:00")
    return store


@pytest.fixture
def openai(monkeypatch) -> FakeOpenAI:
    return install_openai(monkeypatch)


def request(
    window_id: str = "w1", message_sids: tuple[str, ...] = (SM1, SM2), body: str = BODY
) -> BatchRequest:
    return batch_request(message_sids, body, window_id)


def kept(store: InMemoryStore) -> dict[str, AIRequest]:
    return store.ai_requests("c1", [SM1, SM2])


def test_a_first_attempt_asks_once_and_keeps_the_request_on_the_first_message(store, openai):
    reply = request().reply()

    assert reply.text == "reply 0" and openai.created == 1
    assert kept(store)[SM1].response_id == "resp_0" and list(kept(store)) == [SM1]


def test_a_kept_request_is_retrieved_not_made_again(store, openai):
    request().reply()

    reply = request().reply()  # the state's retry

    assert reply.text == "reply 0"
    assert (openai.created, openai.retrieved) == (1, 1) and openai.user_texts() == [BODY]


def test_a_lost_requests_copy_is_removed_before_asking_again(store, openai):
    openai.lose_answer.add(0)
    with pytest.raises(AIRetryableError):
        request().reply()
    assert kept(store)[SM1].response_id is None  # asked; the outcome is unknown

    reply = request().reply()

    assert reply.text == "reply 1" and openai.created == 2
    assert openai.read_at_creation[1] == []  # the copy was gone before asking again
    assert openai.deleted == ["msg_reply_0", "msg_user_0"] and openai.user_texts() == [BODY]
    assert kept(store)[SM1].response_id == "resp_1"


def test_a_request_openai_no_longer_knows_is_asked_again_once_its_copy_is_removed(store, openai):
    request().reply()
    openai.forgotten.add("resp_0")

    reply = request().reply()

    assert reply.text == "reply 1" and openai.user_texts() == [BODY]
    assert openai.read_at_creation[1] == []


def test_a_request_kept_on_another_of_the_batchs_messages_moves_to_its_first(store, openai):
    request().reply()
    store.keep_ai_request("c1", SM2, kept(store)[SM1])
    store.drop_ai_request("c1", SM1)

    assert request().reply().text == "reply 0" and openai.created == 1
    assert list(kept(store)) == [SM1]


def test_a_request_openai_refused_is_not_kept(store, openai):
    openai.refuse[0] = AIPermanentError("OpenAI HTTP 400 invalid_request_error")

    with pytest.raises(AIPermanentError):
        request().reply()

    assert kept(store) == {} and openai.items == []


def test_a_later_window_for_the_same_messages_reuses_the_reply_an_earlier_one_stored(store, openai):
    request("w1").reply()
    store.put_turn(
        Turn(
            conversation_id="c1",
            turn_id=assistant_turn_id("w1"),
            role="assistant",
            body="reply 0",
            response_id="resp_0",
            item_ids=["msg_reply_0"],
        )
    )

    reply = request("w2").reply()

    assert reply.text == "reply 0" and (openai.created, openai.retrieved) == (1, 0)


def test_an_earlier_request_for_some_of_the_messages_is_withdrawn_and_the_whole_batch_asked(store, openai):
    request("w1", (SM1,), "first").reply()
    store.put_turn(Turn(conversation_id="c1", turn_id=user_turn_id("w1"), role="user", body="first"))

    reply = request("w2").reply()

    assert reply.text == "reply 1" and openai.user_texts() == [BODY]
    assert kept(store)[SM1].message_sids == [SM1, SM2]


def test_a_request_on_a_replaced_openai_conversation_is_asked_anew(store, openai):
    store.keep_ai_request(
        "c1",
        SM1,
        AIRequest(
            message_sids=[SM1, SM2],
            window_id="w1",
            openai_conversation_id="conv_0",
            requested_at="t",
            response_id="resp_old",
        ),
    )

    assert request().reply().text == "reply 0"
    assert openai.retrieved == 0 and kept(store)[SM1].openai_conversation_id == "conv_1"


@pytest.mark.parametrize(
    ("code", "error"), [("server_error", AIRetryableError), ("invalid_prompt", AIPermanentError)]
)
def test_a_failed_response_leaves_no_turn_and_no_kept_request(store, openai, code, error):
    openai.fail[0] = code

    with pytest.raises(error):
        request().reply()

    assert openai.items == [] and kept(store) == {}
