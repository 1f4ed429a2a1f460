"""Tenants are walled off, over HTTP on the local stack: a message is accepted only from a
registered tenant, signed with its own token, for one of its own numbers; a conversation
belongs to its tenant and is answered from its number with its tenant's credentials only.

The cross-tenant matrix: A's token for B's number, B's AccountSid signed with A's token, an
unknown account, a number moved from A to B, a replay after the duplicate window. Each is
refused (403 where a signature or ownership is wrong) with nothing staged and nothing sent,
and B's own messages are still answered from B's number under B's account."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import pytest

from functions.answer import turns
from functions.config import get_settings
from functions.delivery.callback_urls import status_callback_url
from functions.tenancy import tenants
from infra.local.aws_calls import RECORDER
from infra.local.webhooks import inbound_form, new_message_sid, post_webhook
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.media import PHOTO
from tests.support.twilio_delivery import deliver_as_twilio

pytestmark = pytest.mark.e2e

MOVING = "whatsapp:+1555003"


def _number(prefix: str) -> str:
    """A number no earlier test registered: `prefix` and four random digits."""
    return f"{prefix}{secrets.randbelow(10**4):04d}"


@pytest.fixture
def two_tenants(harness):
    """Tenant A with two numbers (the second is the one to move), tenant B with one."""
    a = harness.add_tenant(_number("whatsapp:+1555001"), _number(MOVING))
    b = harness.add_tenant(_number("whatsapp:+1555002"))
    yield a, b
    for account_sid, _ in (a, b):
        harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def _numbers(account_sid: str) -> list[str]:
    tenant = tenants.get(account_sid)
    assert tenant is not None
    return tenant.numbers


def _post(harness, account_sid: str, token: str, user: str, to: str, body: str, sid: str | None = None):
    form = inbound_form(body, user, to, account_sid, sid)
    return post_webhook(harness.stack.whatsapp_url, form, token)


def _nothing_staged_or_sent(harness, user: str) -> None:
    dynamodb = harness.stack.client("dynamodb")
    for table, attribute in (("StagedMessages", "from_address"), ("Conversations", "user_address")):
        found = dynamodb.scan(
            TableName=table,
            FilterExpression=f"{attribute} = :user",
            ExpressionAttributeValues={":user": {"S": user}},
            ConsistentRead=True,
        )["Items"]
        assert found == [], table
    assert [c for c in harness.stack.twilio.calls if c["to"] == user] == []


def _answered_under(harness, user: str, account_sid: str, our_number: str, body: str, runs: int = 1) -> None:
    conversation = harness.conversation_of(user, our_number, account_sid)
    assert conversation is not None and conversation.tenant_account_sid == account_sid
    harness.wait_until_quiet(conversation.conversation_id, runs=runs)
    sent = [m for m in harness.stack.twilio.messages if m["to"] == user]
    assert [m["body"] for m in sent][-1] == f"You said: {body}"
    assert {(m["account_sid"], m["from"]) for m in sent} == {(account_sid, our_number)}


def test_a_tenants_own_messages_are_answered_from_its_number_under_its_account(harness, two_tenants):
    (b_sid, b_token), b_number = two_tenants[1], _numbers(two_tenants[1][0])[0]
    customer = harness.new_user()

    assert _post(harness, b_sid, b_token, customer, b_number, "hello B").status_code == 200

    _answered_under(harness, customer, b_sid, b_number, "hello B")


def test_a_token_for_another_tenants_number_is_refused(harness, two_tenants):
    (a_sid, a_token), (b_sid, b_token) = two_tenants
    b_number = _numbers(b_sid)[0]
    b_customer = harness.new_user()

    # A signs, with its own valid token, a message to B's number from B's customer.
    response = _post(harness, a_sid, a_token, b_customer, b_number, "relay this")

    assert response.status_code == 403
    _nothing_staged_or_sent(harness, b_customer)


def test_another_accounts_sid_signed_with_ones_own_token_is_refused(harness, two_tenants):
    (a_sid, a_token), (b_sid, _) = two_tenants
    b_customer = harness.new_user()

    response = _post(harness, b_sid, a_token, b_customer, _numbers(b_sid)[0], "pretend to be B")

    assert response.status_code == 403
    _nothing_staged_or_sent(harness, b_customer)


def test_an_unknown_account_is_refused_even_with_its_own_valid_signature(harness):
    stranger = harness.new_user()

    response = _post(harness, "AC" + "7" * 32, "strangers-own-token", stranger, OUR_WHATSAPP, "spam")
    invented = _post(harness, "AC" + "7" * 32, "strangers-own-token", stranger, "+15559999999", "spam")

    assert (response.status_code, invented.status_code) == (403, 403)
    _nothing_staged_or_sent(harness, stranger)


def test_auto_create_answers_no_invented_number(harness):
    stranger = harness.new_user()
    config = harness.stack.config

    # Our own account and token, but a number nobody registered.
    response = _post(
        harness, config.twilio_account_sid, config.twilio_auth_token, stranger, "+15558675309", "x"
    )

    assert response.status_code == 403
    _nothing_staged_or_sent(harness, stranger)


def test_a_number_moved_from_a_to_b_is_b_s_alone(harness, two_tenants):
    (a_sid, a_token), (b_sid, b_token) = two_tenants
    moving = next(n for n in _numbers(a_sid) if n.startswith(MOVING))
    customer = harness.new_user()
    assert _post(harness, a_sid, a_token, customer, moving, "before the move").status_code == 200
    _answered_under(harness, customer, a_sid, moving, "before the move")
    a_conversation = harness.conversation_of(customer, moving, a_sid).conversation_id

    assert harness.stack.tenants.move(moving, b_sid) == a_sid
    harness.forget_tenants()  # the webhook's cache, a minute later

    assert moving not in _numbers(a_sid) and moving in _numbers(b_sid)
    assert tenants.owner_of(moving) == b_sid
    refused = _post(harness, a_sid, a_token, customer, moving, "A after the move")
    assert refused.status_code == 403
    assert [i for i in harness.staged(a_conversation) if "pending_since" in i] == []
    assert len(harness.runs(a_conversation)) == 1

    assert _post(harness, b_sid, b_token, customer, moving, "B after the move").status_code == 200
    b_conversation = harness.conversation_of(customer, moving, b_sid)
    assert b_conversation.conversation_id != a_conversation  # B does not continue A's conversation
    harness.wait_until_quiet(b_conversation.conversation_id, runs=1)
    sent = [m for m in harness.stack.twilio.messages if m["to"] == customer]
    assert [(m["account_sid"], m["from"], m["body"]) for m in sent] == [
        (a_sid, moving, "You said: before the move"),
        (b_sid, moving, "You said: B after the move"),
    ]


def test_a_move_to_an_account_that_is_not_a_tenant_changes_nothing(harness, two_tenants):
    (a_sid, _), _ = two_tenants
    number = _numbers(a_sid)[0]

    with pytest.raises(tenants.TenantChangeRefused):
        harness.stack.tenants.move(number, "AC" + "8" * 32)

    assert tenants.owner_of(number) == a_sid and number in _numbers(a_sid)


def test_a_number_cannot_be_registered_by_a_second_tenant(harness, two_tenants):
    (a_sid, _), (b_sid, _) = two_tenants

    with pytest.raises(tenants.TenantChangeRefused):
        harness.stack.tenants.add(b_sid, "b-token", [_numbers(a_sid)[0]])

    assert tenants.owner_of(_numbers(a_sid)[0]) == a_sid


def test_a_replay_after_the_duplicate_window_is_not_answered_again(harness):
    config = harness.stack.config
    user, sid = harness.new_user(), new_message_sid()
    signed = (config.twilio_account_sid, config.twilio_auth_token, user, OUR_WHATSAPP, "only once", sid)
    assert _post(harness, *signed).status_code == 200
    conversation_id = harness.conversation_of(user).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)

    # Four days on (past the old three-day window), DynamoDB's TTL has removed what expired.
    harness.expire_ttl("StagedMessages", time.time() + 4 * 24 * 3600)
    replayed = _post(harness, *signed)

    assert replayed.status_code == 200
    assert len(harness.runs(conversation_id)) == 1
    assert harness.replies_to(user) == ["You said: only once"]


def test_the_cli_registers_lists_moves_and_removes_on_the_local_stack_with_no_other_setting(harness):
    account_sid, token = "AC" + os.urandom(16).hex(), "cli-token-" + os.urandom(8).hex()
    number, customer = _number("whatsapp:+1555004"), harness.new_user()
    env = {"AWS_ENDPOINT_URL": harness.stack.aws.url, "PATH": os.environ.get("PATH", "")}

    def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "infra.tenants", *args],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
        )
        assert token not in result.stdout + result.stderr
        return result

    harness.stack.twilio.set_account(account_sid, token)  # the account, as opened at Twilio
    added = cli("add", account_sid, "--number", number, stdin=token + "\n")
    assert added.returncode == 0, added.stderr
    assert f"{account_sid}  {number}" in cli("list").stdout
    harness.forget_tenants()

    assert _post(harness, account_sid, token, customer, number, "via the CLI").status_code == 200
    _answered_under(harness, customer, account_sid, number, "via the CLI")

    other_sid, _ = harness.add_tenant()
    moved = cli("move", number, "--to", other_sid)
    assert moved.returncode == 0 and tenants.owner_of(number) == other_sid
    refused = cli("add", account_sid, "--number", number, stdin=token + "\n")
    assert refused.returncode == 1 and "Refused" in refused.stderr  # owned by the other tenant now
    assert cli("remove", account_sid).returncode == 0
    assert cli("remove", other_sid).returncode == 0
    assert account_sid not in cli("list").stdout and tenants.owner_of(number) is None


def _status_callback(harness, conversation_id: str, window_id: str, account_sid: str, token: str, ours: str):
    """A `delivered` status callback, signed by `account_sid`, about a message from `ours`."""
    sid = new_message_sid()
    form = {"AccountSid": account_sid, "From": ours, "To": harness.new_user(), "MessageSid": sid}
    form |= {"MessageStatus": "delivered", "SmsSid": sid, "SmsStatus": "delivered"}
    url = status_callback_url(conversation_id, window_id, "0")
    return deliver_as_twilio(url, form, token).status


def test_a_tenant_cannot_tell_anothers_conversations_from_none_by_its_status_callbacks(harness, two_tenants):
    (a_sid, a_token), (b_sid, b_token) = two_tenants
    a_number, b_number, customer = _numbers(a_sid)[0], _numbers(b_sid)[0], harness.new_user()
    assert _post(harness, a_sid, a_token, customer, a_number, "hello A").status_code == 200
    _answered_under(harness, customer, a_sid, a_number, "hello A")
    a_conversation = harness.conversation_of(customer, a_number, a_sid).conversation_id
    window = turns.list_of(a_conversation)[-1].window_id

    # B, correctly signed, about A's conversation and about one that does not exist.
    for_a = _status_callback(harness, a_conversation, window, b_sid, b_token, b_number)
    for_none = _status_callback(harness, "whatsapp:+15550000000-nobody", window, b_sid, b_token, b_number)
    # A forged signature is refused, whichever conversation it names.
    forged = [
        _status_callback(harness, conversation, window, a_sid, "forged", a_number)
        for conversation in (a_conversation, "whatsapp:+15550000000-nobody")
    ]

    assert for_a == for_none == 204
    assert forged == [403, 403]
    assert _status_callback(harness, a_conversation, window, a_sid, a_token, a_number) == 204


def test_a_tenant_cannot_use_up_the_ai_calls_of_anothers_customer(harness, two_tenants, configure):
    configure(MAX_AI_CALLS_PER_HOUR_PER_SENDER="1")
    (a_sid, a_token), (b_sid, b_token) = two_tenants
    a_number, b_number, customer = _numbers(a_sid)[0], _numbers(b_sid)[0], harness.new_user()

    # B writes, as A's customer, to B's own number: its one AI call this hour at B.
    assert _post(harness, b_sid, b_token, customer, b_number, "as your customer").status_code == 200
    _answered_under(harness, customer, b_sid, b_number, "as your customer")

    assert _post(harness, a_sid, a_token, customer, a_number, "the real customer").status_code == 200
    a_conversation = harness.conversation_of(customer, a_number, a_sid)
    harness.wait_until_quiet(a_conversation.conversation_id, runs=1)
    assert harness.replies_to(customer)[-1] == "You said: the real customer"


def test_a_tenants_photo_is_fetched_with_its_token_read_in_a_session_only_it_is_tagged_with(
    harness, two_tenants
):
    """Generate Reply's role reads no tenant's token: it reads B's, the tenant's own secret
    or one under it that the conversation names, through a session of the tenant reader
    role tagged with B (IAM, judging every recorded call at the end of the run, refuses a
    read outside that session or of another tenant's secret)."""
    (b_sid, b_token), b_number, customer = two_tenants[1], _numbers(two_tenants[1][0])[0], harness.new_user()
    own = get_settings().twilio_tenant_secret_prefix + b_sid
    named = f"{own}/support"
    harness.stack.client("secretsmanager").create_secret(
        Name=named, SecretString=json.dumps({"account_sid": b_sid, "auth_token": b_token})
    )
    assert _post(harness, b_sid, b_token, customer, b_number, "hello B").status_code == 200  # typing…: own
    _answered_under(harness, customer, b_sid, b_number, "hello B")
    conversation = harness.conversation_of(customer, b_number, b_sid).conversation_id
    harness.set_conversation(conversation, twilio_credentials_secret=named)
    photo = harness.stack.twilio_url + harness.stack.twilio.add_media(b_sid, b_token, "image/jpeg", PHOTO)
    form = inbound_form(
        "", customer, b_number, b_sid, NumMedia="1", MediaUrl0=photo, MediaContentType0="image/jpeg"
    )

    assert post_webhook(harness.stack.whatsapp_url, form, b_token).status_code == 200

    harness.wait_until_quiet(conversation, runs=2)
    fetched = [
        (r["user"], r["status"]) for r in harness.stack.twilio.media_requests if photo.endswith(r["path"])
    ]
    assert fetched == [(b_sid, 307)]
    reads = {
        c.names: dict(c.session)
        for c in RECORDER.calls()
        if c.function == "GenerateReply" and c.names in ((("SecretId", own),), (("SecretId", named),))
    }
    session = {"role": get_settings().twilio_tenant_reader_role_arn, "tag:tenant": b_sid}
    assert reads == {(("SecretId", own),): session, (("SecretId", named),): session}
