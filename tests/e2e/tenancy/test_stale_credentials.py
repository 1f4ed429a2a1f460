"""A vendor refuses the credentials we hold (a Twilio token rotated at Twilio, an OpenAI key
revoked), over HTTP on the local stack, whose stand-ins check credentials as the vendors
do (infra/local/standins/twilio_accounts.py, openai_keys.py): the secret is read again at
once; while it holds no credentials the vendor accepts, the batch is kept pending, no
attempt counted, nobody is told anything, the run fails and the refusal is counted
(alarmed); once the operator stores the new credentials, the kept batch is answered with
the reply already generated. Status callbacks come signed with the account's token of the
moment, and are accepted."""

from __future__ import annotations

import secrets

import pytest
from twilio.request_validator import RequestValidator

from functions.answer import turns
from functions.delivery import send_once
from functions.intake import staged_messages
from functions.states import generate_reply
from functions.tenancy import fresh_credentials
from functions.tenancy.settings import OpenAIKeySettings
from infra.local.aws_calls import RECORDER
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def tenant(harness):
    """A tenant of its own, with one number; (AccountSid, token, number)."""
    number = f"whatsapp:+1555006{secrets.randbelow(10**4):04d}"
    account_sid, token = harness.add_tenant(number)
    yield account_sid, token, number
    harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The metrics Send Reply (its parts': functions/delivery/send_once.py) and Generate Reply
    count (a refusal: in fresh_credentials)."""
    names: list[str] = []
    for module in (send_once, generate_reply, fresh_credentials):
        real = module.count
        monkeypatch.setattr(
            module, "count", lambda name, value=1, real=real: (names.append(name), real(name))
        )
    return names


def _error_of(harness, run: dict) -> str:
    return harness.sfn.describe_execution(executionArn=run["executionArn"]).get("error", "")


def test_a_token_rotated_at_twilio_keeps_the_batch_until_the_secret_has_it(harness, tenant, counted):
    account_sid, old_token, number = tenant
    customer = harness.new_user()
    form = inbound_form("are you there?", customer, number, account_sid)
    assert post_webhook(harness.stack.whatsapp_url, form, old_token).status_code == 200
    new_token = secrets.token_hex(16)
    harness.stack.twilio.set_account(account_sid, new_token)  # promoted at Twilio; the secret not yet
    conversation_id = harness.conversation_of(customer, number, account_sid).conversation_id

    (run,) = harness.wait_until_quiet(conversation_id, runs=1)

    assert run["status"] == "FAILED" and _error_of(harness, run) == "TwilioCredentialsRefused"
    assert harness.replies_to(customer) == []
    assert [key.attempts for key in staged_messages.pending(conversation_id)] == [0]  # kept, uncounted
    assert all(turn.status not in ("failed", "dead_lettered") for turn in turns.list_of(conversation_id))
    assert "TwilioCredentialsRefused" in counted

    harness.stack.tenants.add(account_sid, new_token, [number])  # the operator stores the new token
    again = harness.wait_for_run(harness.start_run(conversation_id))  # as the reconciler does

    assert again["status"] == "SUCCEEDED"
    assert harness.replies_to(customer) == ["You said: are you there?"]
    assert staged_messages.pending(conversation_id) == []
    assert len(harness.ai_inputs(conversation_id)) == 1  # the reply kept, not asked for again


def test_status_callbacks_signed_with_the_accounts_token_of_the_moment_are_accepted(harness, tenant):
    account_sid, old_token, number = tenant
    customer = harness.new_user()
    harness.wait_until_no_run_is_running()  # the next message created is this test's reply
    harness.stack.twilio.inject({"outcome": "read", "after": 3})  # its statuses over 3 s
    form = inbound_form("hello", customer, number, account_sid)
    assert post_webhook(harness.stack.whatsapp_url, form, old_token).status_code == 200
    (reply,) = wait_until(
        lambda: [m for m in harness.stack.twilio.messages if m["to"] == customer], timeout=15
    )
    new_token = secrets.token_hex(16)
    harness.stack.twilio.set_account(account_sid, new_token)  # rotated at Twilio, sent with the old one
    harness.stack.tenants.add(account_sid, new_token, [number])  # and in the secret

    def callbacks() -> list[dict]:
        return [c for c in harness.stack.twilio.callbacks if c["params"]["MessageSid"] == reply["sid"]]

    wait_until(lambda: any(c["params"]["MessageStatus"] == "read" for c in callbacks()), timeout=30)

    validator = RequestValidator(new_token)
    assert [c["params"]["MessageStatus"] for c in callbacks()] == ["sent", "delivered", "read"]
    assert all(validator.validate(c["url"], c["params"], c["signature"]) for c in callbacks())
    assert [c["status"] for c in callbacks()] == [204, 204, 204]
    conversation_id = harness.conversation_of(customer, number, account_sid).conversation_id
    (assistant,) = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    assert assistant.deliveries[reply["sid"]].status == "read"


def test_a_revoked_openai_key_keeps_the_batch_until_the_secret_has_a_new_one(harness, counted):
    account_sid = harness.stack.config.twilio_account_sid
    name, old_key = secrets.token_hex(4), "sk-tenant-" + secrets.token_hex(16)
    secret = harness.stack.tenants.set_openai_key(account_sid, old_key, name)  # known to OpenAI too
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["hello?", "anyone there?"])
    harness.set_conversation(conversation_id, openai_api_key_secret=secret)
    new_key = "sk-tenant-" + secrets.token_hex(16)
    harness.stack.openai.revoke_key(old_key)  # revoked at OpenAI, a new one made; the secret not yet
    harness.stack.openai.add_key(new_key)
    refused_before = harness.stack.openai.request_counts["unauthenticated"]

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED" and run["error"] == "AICredentialsRefused"
    assert harness.replies_to(user) == []  # no fallback reply: not the user's doing
    assert [key.attempts for key in staged_messages.pending(conversation_id)] == [0, 0]
    assert "AICredentialsRefused" in counted
    # Refused once: the key read again was the same, so it was not tried again.
    assert harness.stack.openai.request_counts["unauthenticated"] == refused_before + 1

    harness.stack.tenants.set_openai_key(account_sid, new_key, name)  # the operator stores it
    again = harness.wait_for_run(harness.start_run(conversation_id))

    assert again["status"] == "SUCCEEDED"
    assert harness.replies_to(user) == ["You said: hello?\nanyone there?"]
    assert staged_messages.pending(conversation_id) == []
    # the tenant's own key, read only in a session of the OpenAI reader tagged with the tenant
    sessions = {
        c.session
        for c in RECORDER.calls()
        if c.function == "GenerateReply" and c.names == (("SecretId", secret),)
    }
    assert sessions == {
        (("role", OpenAIKeySettings.get().openai_tenant_reader_role_arn), ("tag:tenant", account_sid))
    }
