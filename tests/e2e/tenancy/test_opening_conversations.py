"""Who is answered when the deployment does not create conversations for unknown senders
(AUTO_CREATE_CONVERSATIONS=false, the deployed default), over HTTP on the local stack: an
operator opens a conversation (`python -m infra.conversations create`, in a shell of its
own), exactly as the webhook's auto-create would, and its person is answered from then on;
or turns auto-create on for one tenant (`python -m infra.tenants auto-create`), whose
unknown senders are then answered while another tenant's are not."""

from __future__ import annotations

import secrets
import subprocess
import sys
from typing import Any

import pytest

from functions.intake.inbound import Channel, address_key
from functions.tenancy import conversations
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.operator_shell import ROOT, operator_shell

pytestmark = pytest.mark.e2e

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'


def _number(prefix: str) -> str:
    """A number no earlier test registered: `prefix` and four random digits."""
    return f"{prefix}{secrets.randbelow(10**4):04d}"


def command(harness: Any, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m infra.<module> ...` in an operator's shell of its own."""
    return subprocess.run(
        [sys.executable, "-m", f"infra.{module}", *args],
        cwd=ROOT,
        env=operator_shell(harness.stack),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def tenant_pair(harness, configure):
    """Auto-create off for the deployment; tenant A with a WhatsApp number and an SMS
    number, tenant B with a WhatsApp number."""
    configure(AUTO_CREATE_CONVERSATIONS="false", UNKNOWN_SENDER_REPLY="")
    a_numbers = (_number("whatsapp:+1555011"), _number("+1555012"))
    a = (*harness.add_tenant(*a_numbers), a_numbers)
    b_number = _number("whatsapp:+1555013")
    b = (*harness.add_tenant(b_number), (b_number,))
    yield a, b
    for account_sid, _, _ in (a, b):
        harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def _post(harness, tenant: tuple[str, str, tuple[str, ...]], user: str, body: str, to: str = ""):
    account_sid, token, numbers = tenant
    response = post_webhook(
        harness.stack.whatsapp_url, inbound_form(body, user, to or numbers[0], account_sid), token
    )
    assert response.status_code == 200
    return response


def _not_answered(harness, user: str, our_number: str, account_sid: str, response) -> None:
    assert response.text == EMPTY_TWIML  # no configured answer either
    assert harness.conversation_of(user, our_number, account_sid) is None
    assert harness.replies_to(user) == []


def test_an_unknown_sender_is_answered_once_the_operator_creates_their_conversation(harness, tenant_pair):
    a, _ = tenant_pair
    account_sid, _, (ours, _) = a
    user = harness.new_user()
    _not_answered(harness, user, ours, account_sid, _post(harness, a, user, "anyone there?"))

    created = command(harness, "conversations", "create", user, "--tenant", account_sid)

    assert created.returncode == 0, created.stderr
    key = address_key(Channel.WHATSAPP, user, ours)
    conversation_id = conversations.new_conversation_id(account_sid, key)  # the webhook's own id
    assert created.stdout.splitlines() == [
        f"Created {conversation_id}: {user} with {ours} (tenant {account_sid})."
    ]
    item = harness.conversation_item(conversation_id)
    strings = {k: v["S"] for k, v in item.items() if "S" in v}
    assert (
        strings.items()
        >= {
            "conversation_id": conversation_id,
            "address_key": key,
            "channel": "whatsapp",
            "user_address": user,
            "our_address": ours,
            "tenant_account_sid": account_sid,
            "conversation_status": "open",
        }.items()
    )

    again = command(harness, "conversations", "create", user, "--tenant", account_sid, "--number", ours)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"Exists {conversation_id}: {user} with {ours} (tenant {account_sid}); nothing changed."
    ]
    assert harness.conversation_item(conversation_id) == item

    _post(harness, a, user, "hello now")
    harness.wait_until_quiet(conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: hello now"]


def test_create_refuses_a_number_its_tenant_does_not_own_and_asks_which_number(harness, tenant_pair):
    (a_sid, _, (a_whatsapp, _)), (b_sid, _, (b_whatsapp,)) = tenant_pair
    user = harness.new_user()

    refused = command(harness, "conversations", "create", user, "--tenant", a_sid, "--number", b_whatsapp)
    other_channel = command(harness, "conversations", "create", user, "--number", "+15550000002")
    no_tenant = command(harness, "conversations", "create", user)  # every tenant has a WhatsApp number
    not_an_address = command(harness, "conversations", "create", "whatsapp:15551234", "--tenant", a_sid)

    assert refused.returncode == 1 and refused.stderr.splitlines() == [
        f"infra.conversations: {b_whatsapp} is not a number of tenant {a_sid}: it is {b_sid}'s"
    ]
    assert other_channel.returncode == 1 and "not on the same channel" in other_channel.stderr
    assert no_tenant.returncode == 1 and "name the tenant with --tenant" in no_tenant.stderr
    assert not_an_address.returncode == 1 and "not an address" in not_an_address.stderr
    assert "" == refused.stdout == other_channel.stdout == no_tenant.stdout == not_an_address.stdout
    for ours, sid in ((a_whatsapp, a_sid), (b_whatsapp, b_sid), (b_whatsapp, a_sid)):
        assert harness.conversation_of(user, ours, sid) is None


def test_create_on_sms_takes_the_tenants_sms_number(harness, tenant_pair):
    a, _ = tenant_pair
    account_sid, token, (_, sms) = a
    user = harness.new_user().removeprefix("whatsapp:")

    created = command(harness, "conversations", "create", user, "--tenant", account_sid)

    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("Created c") and f"{user} with {sms}" in created.stdout
    conversation = harness.conversation_of(user, sms, account_sid)
    assert conversation is not None and conversation.channel == Channel.SMS
    form = inbound_form("by text", user, sms, account_sid)
    assert post_webhook(harness.stack.sms_url, form, token).status_code == 200
    harness.wait_until_quiet(conversation.conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: by text"]


def test_a_tenants_own_auto_create_answers_its_unknown_senders_only(harness, tenant_pair):
    a, b = tenant_pair
    (a_sid, _, (a_number, _)), (b_sid, _, (b_number,)) = a, b

    turned_on = command(harness, "tenants", "auto-create", a_sid, "on")
    assert turned_on.returncode == 0, turned_on.stderr
    assert turned_on.stdout.splitlines() == [
        f"{a_sid}: auto-create on: the webhook creates a conversation for any sender of its numbers"
    ]
    listed = command(harness, "tenants", "list").stdout.splitlines()
    assert f"{a_sid}  {a[2][1]}, {a_number}  (auto-create on)" in listed  # numbers sorted
    assert any(line.startswith(b_sid) and "auto-create" not in line for line in listed)
    harness.forget_tenants()  # the webhook's tenant cache, a minute later

    a_user, b_user = harness.new_user(), harness.new_user()
    _post(harness, a, a_user, "hello A")
    _not_answered(harness, b_user, b_number, b_sid, _post(harness, b, b_user, "hello B"))

    a_conversation = harness.conversation_of(a_user, a_number, a_sid)
    assert a_conversation is not None
    harness.wait_until_quiet(a_conversation.conversation_id, runs=1)
    assert harness.replies_to(a_user) == ["You said: hello A"]

    turned_off = command(harness, "tenants", "auto-create", a_sid, "off")
    assert turned_off.returncode == 0, turned_off.stderr
    harness.forget_tenants()
    later = harness.new_user()
    _not_answered(harness, later, a_number, a_sid, _post(harness, a, later, "and me?"))


def test_auto_create_for_an_account_that_is_not_a_tenant_is_refused(harness):
    refused = command(harness, "tenants", "auto-create", "AC" + "9" * 32, "on")

    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [f"Refused: {'AC' + '9' * 32} is not a tenant"]
