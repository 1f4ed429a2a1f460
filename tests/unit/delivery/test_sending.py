"""Send Reply as a use case, on in-memory fakes: each reply part goes out once, in order."""

import pytest

from functions.contract import ReplySummary, SendInput
from functions.delivery import send_once
from functions.delivery import template as whatsapp_template
from functions.delivery.rules.replies import split_reply
from functions.errors import TwilioPermanentError, TwilioRetryableError
from functions.intake.inbound import Channel
from functions.states import send_reply
from functions.storage.models import Conversation, Delivery, Turn
from tests.support.fake_clock import FakeMonotonic
from tests.support.fakes import FakeTwilio, InMemoryStore, install

TASK = SendInput(
    conversation_id="c1",
    window_id="w1",
    execution_name="c1-w1",
    reply=ReplySummary(answered_by="ai", reply_chars=0, prompt_tokens=0, completion_tokens=0, total_tokens=0),
)
SERVICE = "MG" + "5" * 32
LONG_REPLY = " ".join(f"Sentence number {n} of a long answer." for n in range(120))  # three parts


@pytest.fixture
def world(monkeypatch, configure):
    configure(REPLY_PART_INTERVAL_SECONDS="0", DELIVERY_RECEIPT_WAIT_SECONDS="0.2")
    store, twilio = InMemoryStore(), FakeTwilio()
    store.conversations["c1"] = Conversation(
        conversation_id="c1",
        channel=Channel.WHATSAPP,
        user_address="whatsapp:+15550001111",
        our_address="whatsapp:+15550000001",
        created_at="2026-11-26T00:00:00+00:00",
    )
    store.turns[("c1", TASK.assistant_turn_id)] = Turn(
        conversation_id="c1", turn_id=TASK.assistant_turn_id, role="assistant", body=LONG_REPLY
    )
    install(monkeypatch, store, twilio)
    return store, twilio


def test_a_retry_after_a_failed_part_sends_only_the_parts_not_yet_sent(world):
    store, twilio = world
    twilio.refuse[1] = TwilioRetryableError("503")

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    sent = send_reply.send_reply(TASK)  # the state machine's retry

    assert sent.parts == 3 and len(sent.message_sids) == 3
    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)  # each part once, in order
    assert twilio.attempts == 4  # part 2 was tried twice
    assert store.turns[("c1", TASK.assistant_turn_id)].message_sids == sent.message_sids


def test_a_retry_after_everything_was_sent_sends_nothing(world):
    _, twilio = world
    first = send_reply.send_reply(TASK)

    again = send_reply.send_reply(TASK)

    assert again == first and len(twilio.sent) == 3


def test_a_closed_whatsapp_window_sends_the_template_once_and_records_why(world, monkeypatch):
    store, twilio = world
    monkeypatch.setenv("WHATSAPP_TEMPLATE_CONTENT_SID", "HX" + "1" * 32)
    monkeypatch.setenv("TWILIO_MESSAGING_SERVICE_SID", SERVICE)
    from functions.config import get_settings

    get_settings.cache_clear()
    twilio.refuse[0] = TwilioPermanentError("window closed", 63016)
    try:
        sent = send_reply.send_reply(TASK)
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()

    assert [m["content_sid"] for m in twilio.sent] == ["HX" + "1" * 32] and sent.parts == 1
    assert [m["messaging_service_sid"] for m in twilio.sent] == [SERVICE]
    assert store.delivery_failures == [("c1", 63016)]


def test_nothing_is_sent_for_a_batch_handed_off_to_a_person(world):
    _, twilio = world
    human = TASK.model_copy(update={"reply": TASK.reply.model_copy(update={"answered_by": "human"})})

    assert send_reply.send_reply(human).parts == 0
    assert twilio.attempts == 0


# --- exactly once towards Twilio: answers lost after Twilio accepted ----------------------


def test_a_first_attempt_that_goes_well_makes_no_lookup(world):
    store, twilio = world

    send_reply.send_reply(TASK)

    assert twilio.lookups == 0 and twilio.attempts == 3
    assert store.turns[("c1", TASK.assistant_turn_id)].sending_since is not None


def test_a_part_accepted_whose_answer_was_lost_is_found_not_sent_again(world):
    store, twilio = world
    twilio.lose_answer.add(1)  # part 2 reaches Twilio; its answer never comes back

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    sent = send_reply.send_reply(TASK)

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)  # part 2 once
    assert sent.message_sids == [m["sid"] for m in twilio.sent]
    assert twilio.lookups == 1 and twilio.attempts == 3  # one lookup instead of a second send


def test_a_task_that_died_after_twilio_accepted_a_part_does_not_send_it_again(world):
    store, twilio = world
    store.die_after["append_sent_part"] = RuntimeError("the sandbox was stopped")

    with pytest.raises(RuntimeError):
        send_reply.send_reply(TASK)  # part 1 accepted, not recorded
    sent = send_reply.send_reply(TASK)

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)
    assert sent.message_sids == [m["sid"] for m in twilio.sent]
    assert twilio.lookups == 1


def test_a_retry_after_a_part_in_doubt_looks_once_then_sends_it(world):
    _, twilio = world
    twilio.refuse[2] = TwilioRetryableError("Twilio HTTP 503 code None")

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    send_reply.send_reply(TASK)

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)
    assert twilio.lookups == 1 and twilio.attempts == 4  # part 3: failed, looked up, sent


def test_a_retry_after_twilio_refused_a_part_sends_it_without_looking_or_waiting(
    world, configure, monkeypatch
):
    configure(REPLY_PART_INTERVAL_SECONDS="0", DELIVERY_RECEIPT_WAIT_SECONDS="20")
    _, twilio = world
    twilio.refuse[2] = TwilioRetryableError("Twilio HTTP 400 code 63018", refused=True)

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    clock = FakeMonotonic()
    monkeypatch.setattr(send_once, "time", clock)  # the wait for a receipt, on a fake clock
    send_reply.send_reply(TASK)

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)
    assert twilio.lookups == 0 and twilio.attempts == 4 and clock.sleeps == []


def test_a_part_the_list_does_not_show_yet_is_found_by_its_status_callback(world):
    store, twilio = world
    twilio.list_lags = True
    twilio.lose_answer.add(1)  # part 2 accepted, the answer lost
    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    part_two = twilio.sent[1]["sid"]
    turn = store.turns[("c1", TASK.assistant_turn_id)]
    turn.deliveries = {part_two: Delivery(message="1", status="sent", rank=2)}  # its callback came

    sent = send_reply.send_reply(TASK)

    assert [m["body"] for m in twilio.sent] == split_reply(LONG_REPLY)  # part 2 not sent again
    assert sent.message_sids[1] == part_two


def test_the_parts_of_a_reply_are_paced(world, configure):
    configure(REPLY_PART_INTERVAL_SECONDS="0.4")
    _, twilio = world

    send_reply.send_reply(TASK)

    times = [m["at"] for m in twilio.sent]
    assert len(times) == 3 and all(b - a >= 0.4 for a, b in zip(times, times[1:], strict=False))


def test_only_the_first_missing_part_is_looked_up(world):
    _, twilio = world
    twilio.refuse[0] = TwilioRetryableError("Twilio HTTP 503 code None")

    with pytest.raises(TwilioRetryableError):
        send_reply.send_reply(TASK)
    send_reply.send_reply(TASK)

    assert twilio.lookups == 1 and len(twilio.sent) == 3


# --- the WhatsApp template, once per turn --------------------------------------------------


@pytest.fixture
def template(monkeypatch):
    from functions.config import get_settings

    monkeypatch.setenv("WHATSAPP_TEMPLATE_CONTENT_SID", "HX" + "2" * 32)
    monkeypatch.setenv("TWILIO_MESSAGING_SERVICE_SID", SERVICE)
    monkeypatch.setenv("WEBHOOK_BASE_URL", "https://hooks.example/prod")
    monkeypatch.setenv("TWILIO_CONNECTION_OVERRIDES", "rc=5&rp=all")
    get_settings.cache_clear()
    yield "HX" + "2" * 32
    monkeypatch.undo()
    get_settings.cache_clear()


def test_the_template_is_sent_once_whoever_asks_and_only_by_the_first(world, template):
    store, twilio = world
    conversation = store.conversations["c1"]

    first = whatsapp_template.send_template_once(conversation, "w1", owner="SM-part-1")
    again = whatsapp_template.send_template_once(
        conversation, "w1", owner="SM-part-1"
    )  # its callback, repeated
    other = whatsapp_template.send_template_once(
        conversation, "w1", owner="SM-part-2"
    )  # another part's 63016

    assert first == again == other and [m["content_sid"] for m in twilio.sent] == [template]
    callback = "https://hooks.example/prod/twilio/status/c1/w1/template#rc=5&rp=all"
    assert twilio.sent[0]["status_callback"] == callback


def test_a_template_whose_answer_was_lost_is_found_not_sent_again(world, template):
    store, twilio = world
    conversation = store.conversations["c1"]
    twilio.lose_answer.add(0)

    with pytest.raises(TwilioRetryableError):
        whatsapp_template.send_template_once(conversation, "w1", owner="SM-part-1")
    sid = whatsapp_template.send_template_once(conversation, "w1", owner="SM-part-1")  # the callback, retried

    assert [m["sid"] for m in twilio.sent] == [sid] and twilio.lookups == 1


def test_another_owner_does_not_send_while_the_first_has_not_succeeded(world, template):
    store, twilio = world
    conversation = store.conversations["c1"]
    twilio.refuse[0] = TwilioRetryableError("Twilio HTTP 503 code None")

    with pytest.raises(TwilioRetryableError):
        whatsapp_template.send_template_once(conversation, "w1", owner="SM-part-1")

    assert whatsapp_template.send_template_once(conversation, "w1", owner="SM-part-2") is None
    assert twilio.sent == []


def test_no_template_without_one_configured_or_outside_whatsapp(world, template, monkeypatch):
    store, twilio = world
    sms = store.conversations["c1"].model_copy(update={"channel": Channel.SMS})
    assert whatsapp_template.send_template_once(sms, "w1", owner="SM-part-1") is None
    monkeypatch.setenv("WHATSAPP_TEMPLATE_CONTENT_SID", "")
    from functions.config import get_settings

    get_settings.cache_clear()
    assert whatsapp_template.send_template_once(store.conversations["c1"], "w1", owner="SM-part-1") is None
    assert twilio.sent == []


def test_a_template_without_a_messaging_service_is_not_sent_and_said_so(world, template, monkeypatch, caplog):
    store, twilio = world
    monkeypatch.setenv("TWILIO_MESSAGING_SERVICE_SID", "")
    from functions.config import get_settings

    get_settings.cache_clear()
    monkeypatch.setattr(whatsapp_template, "_said_amiss", [])
    twilio.refuse[0] = TwilioPermanentError("window closed", 63016)

    with pytest.raises(TwilioPermanentError):  # as without a template: the reply's refusal
        send_reply.send_reply(TASK)
    assert whatsapp_template.send_template_once(store.conversations["c1"], "w1", owner="SM-part-1") is None

    assert [m["content_sid"] for m in twilio.sent] == []
    said = [r for r in caplog.records if "TWILIO_MESSAGING_SERVICE_SID" in r.getMessage()]
    assert [r.levelname for r in said] == ["ERROR"]  # once, however many sends


def test_the_template_carries_the_configured_variables(world, template, configure):
    # Without ContentVariables Twilio fills in the template's sample values
    # (https://www.twilio.com/docs/content/using-variables-with-content-api).
    store, twilio = world
    configure(WHATSAPP_TEMPLATE_VARIABLES='{"1": "our shop"}')

    whatsapp_template.send_template_once(store.conversations["c1"], "w1", owner="SM-part-1")

    assert [m["content_variables"] for m in twilio.sent] == ['{"1": "our shop"}']


def test_the_status_callbacks_template_is_sent_with_credentials_read_in_the_tenants_session(
    world, template, monkeypatch
):
    """Its own role may read every tenant's token (it checks a claimed tenant's signature),
    so the template it sends for a conversation goes out with a session of that tenant."""
    from functions.tenancy import secrets

    store, twilio = world
    read_in_session: list[str] = []

    def own_role(conversation, fresh=False):
        raise AssertionError("read with the function's own role")

    def in_session(conversation, fresh=False):
        read_in_session.append(conversation.conversation_id)

    monkeypatch.setattr(secrets, "twilio_credentials_for", own_role)
    monkeypatch.setattr(secrets, "twilio_credentials_in_tenant_session", in_session)

    whatsapp_template.send_template_once(store.conversations["c1"], "w1", owner="SM-part-1")

    assert read_in_session == ["c1"] and [m["content_sid"] for m in twilio.sent] == [template]
