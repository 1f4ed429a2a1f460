"""Receiving a message (functions/entry_points/webhook.py) as a use case, on
in-memory fakes (tests/support/fakes.py; tests/contract holds them to the DynamoDB
layer). Who may post (tenants, signatures): tests/unit/intake/test_signature.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from twilio.request_validator import RequestValidator

from functions import clock
from functions.entry_points.webhook import MessageOutcome, receive_message
from functions.intake.admission import Signature
from functions.intake.inbound import Channel
from functions.storage.models import Conversation, Tenant
from functions.tenancy import secrets, tenants
from functions.tenancy.secrets import TwilioCredentials
from tests.support.fake_runs import FakeRuns, install_runs
from tests.support.fakes import FakeTwilio, InMemoryStore, install

ACCOUNT = "AC" + "1" * 32
US, USER = "whatsapp:+15550000001", "whatsapp:+15550001111"
URL = "https://hooks.example/prod/whatsapp"
SM1, SM2 = (f"SM{n:032x}" for n in (1, 2))
NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def store(monkeypatch) -> InMemoryStore:
    """A tenant with our number, and its conversation with USER; the clock at NOW."""
    store = InMemoryStore()
    store.conversations["c1"] = Conversation(
        conversation_id="c1",
        channel=Channel.WHATSAPP,
        user_address=USER,
        our_address=US,
        created_at="t",
        tenant_account_sid=ACCOUNT,
    )
    install(monkeypatch, store, FakeTwilio())
    monkeypatch.setattr(tenants, "find", {ACCOUNT: Tenant(account_sid=ACCOUNT, numbers=[US])}.get)
    credentials = {ACCOUNT: TwilioCredentials(account_sid=ACCOUNT, auth_token="token")}
    monkeypatch.setattr(
        secrets, "tenant_twilio_credentials", lambda sid, token_version="": credentials.get(sid)
    )
    monkeypatch.setattr(clock, "now", lambda: NOW)
    return store


@pytest.fixture
def runs(monkeypatch) -> FakeRuns:
    return install_runs(monkeypatch)


def post(sid: str = SM1, sender: str = USER, token: str = "token", **fields: str) -> MessageOutcome:
    """A message to our number, signed with the tenant's token."""
    form = {"MessageSid": sid, "AccountSid": ACCOUNT, "From": sender, "To": US, "Body": "hi", **fields}
    signature = RequestValidator(token).compute_signature(URL, form)
    return receive_message(Channel.WHATSAPP, form, URL, Signature(signature)).outcome


def test_a_first_message_is_staged_and_opens_a_window_whose_run_starts(store, runs):
    assert post() is MessageOutcome.STAGED

    assert [k.message_sid for k in store.pending("c1")] == [SM1]
    assert store.windows["c1"].message_count == 1
    assert list(runs.started) == [store.windows["c1"].execution_name]


def test_a_later_message_is_counted_in_the_open_window(store, runs):
    post(SM1)
    clock_ms = clock.epoch_ms(NOW)

    assert post(SM2) is MessageOutcome.STAGED

    window = store.windows["c1"]
    assert (window.message_count, window.previous_message_ms, window.last_message_ms) == (
        2,
        clock_ms,
        clock_ms,
    )
    assert len(runs.started) == 1


def test_a_duplicate_of_a_pending_message_stages_nothing_and_starts_its_run_again(store, runs):
    post(SM1)

    assert post(SM1, Body="again") is MessageOutcome.DUPLICATE

    assert store.staged[("c1", SM1)]["body"] == "hi"
    assert store.windows["c1"].message_count == 1 and runs.starts == 2  # StartExecution is idempotent


def test_a_duplicate_whose_first_delivery_opened_no_window_opens_it(store, runs):
    post(SM1)
    store.windows.clear()

    assert post(SM1) is MessageOutcome.DUPLICATE
    assert "c1" in store.windows and len(runs.started) == 2


def test_a_duplicate_of_an_answered_message_opens_no_window(store, runs):
    post(SM1)
    store.windows.clear()
    store.mark_answered("c1", [SM1], "w1", 0)

    assert post(SM1) is MessageOutcome.DUPLICATE
    assert store.windows == {} and len(runs.started) == 1


def test_a_signed_form_that_is_not_a_message_is_malformed_and_stages_nothing(store, runs):
    assert post("not-a-sid") is MessageOutcome.MALFORMED
    assert store.staged == {} and store.windows == {}


def test_a_form_not_signed_with_the_tenants_token_is_forbidden(store, runs):
    assert post(token="guess") is MessageOutcome.FORBIDDEN
    assert store.staged == {}


def test_an_unknown_sender_is_not_staged_when_conversations_are_not_created(store, runs, configure):
    configure(AUTO_CREATE_CONVERSATIONS="false")  # the default, but a local stack in this process sets it

    assert post(sender="whatsapp:+15559999999") is MessageOutcome.UNKNOWN_SENDER
    assert store.staged == {} and list(store.conversations) == ["c1"]


def test_an_unknown_sender_gets_a_conversation_when_their_tenant_creates_them(
    store, runs, configure, monkeypatch
):
    """The tenant's own flag (`python -m infra.tenants auto-create`), on the tenant's item
    the webhook has read already: no other read."""
    configure(AUTO_CREATE_CONVERSATIONS="false")
    tenant = Tenant(account_sid=ACCOUNT, numbers=[US], auto_create_conversations=True)
    monkeypatch.setattr(tenants, "find", {ACCOUNT: tenant}.get)

    assert post(sender="whatsapp:+15559999999") is MessageOutcome.STAGED

    [created] = [c for c in store.conversations.values() if c.user_address == "whatsapp:+15559999999"]
    assert (created.tenant_account_sid, created.our_address) == (ACCOUNT, US)


def test_an_unknown_sender_gets_a_conversation_when_they_are_created(store, runs, configure):
    configure(AUTO_CREATE_CONVERSATIONS="true")

    assert post(sender="whatsapp:+15559999999") is MessageOutcome.STAGED

    [created] = [c for c in store.conversations.values() if c.user_address == "whatsapp:+15559999999"]
    assert created.tenant_account_sid == ACCOUNT and [
        k.message_sid for k in store.pending(created.conversation_id)
    ] == [SM1]


def test_a_message_to_an_inactive_project_is_not_staged(store, runs):
    store.conversations["c1"].project_status = "paused"

    assert post() is MessageOutcome.PROJECT_INACTIVE
    assert store.staged == {} and store.windows == {}
