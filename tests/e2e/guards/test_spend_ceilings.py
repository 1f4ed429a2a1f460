"""A tenant's spend has a ceiling, over HTTP on the local stack: a tenant signs its own
webhooks, so it chooses `From`, and senders it invents are new conversations, each with
AI calls of its own. Past the tenant's AI calls (or new conversations) an hour, a batch
is recorded `limited` without an AI call, `TenantCeilingReached` is counted under the
tenant's AccountSid, and another tenant's customers are still answered."""

from __future__ import annotations

import secrets

import pytest

from functions.answer import turns
from functions.intake.inbound import Channel, address_key
from functions.tenancy import conversations, tenants
from infra.local.webhooks import inbound_form, post_webhook
from infra.names import NAMESPACE, SERVICE
from tests.support.emf import emf_records

pytestmark = pytest.mark.e2e


def _number() -> str:
    return f"whatsapp:+1555004{secrets.randbelow(10**4):04d}"


@pytest.fixture
def two_tenants(harness):
    a, b = harness.add_tenant(_number()), harness.add_tenant(_number())
    yield a, b
    for account_sid, _ in (a, b):
        harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def _number_of(account_sid: str) -> str:
    tenant = tenants.get(account_sid)
    assert tenant is not None
    return tenant.numbers[0]


def _write(harness, tenant: tuple[str, str], number: str, user: str, body: str) -> str:
    account_sid, token = tenant
    response = post_webhook(harness.stack.whatsapp_url, inbound_form(body, user, number, account_sid), token)
    assert response.status_code == 200
    conversation = harness.conversation_of(user, number, account_sid)
    assert conversation is not None
    return conversation.conversation_id


def _limits_of_last_batch(harness, conversation_id: str) -> str | None:
    harness.wait_until_quiet(conversation_id, runs=1)
    assistant = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
    return assistant[-1].limited if assistant else "no assistant turn"


def _tenants_counted(printed: str, metric: str) -> list[str]:
    """The Tenant dimension of each `metric` EMF record printed, checked to be in the
    namespace and dimensions the per-tenant alarm's query reads."""
    tenants = []
    for record in emf_records(printed):
        if metric not in record:
            continue
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE and ["service", "Tenant"] in directive["Dimensions"]
        assert record["service"] == SERVICE
        tenants.append(record["Tenant"])
    return tenants


def test_a_tenants_invented_senders_stop_at_its_ceiling_and_another_tenant_is_still_answered(
    harness, two_tenants, configure, monkeypatch, capfd
):
    configure(MAX_AI_CALLS_PER_HOUR_PER_TENANT="2", AUTO_CREATE_CONVERSATIONS="true")
    harness.wait_until_no_run_is_running()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    a, b = two_tenants
    a_number, b_number = (_number_of(sid) for sid, _ in two_tenants)
    capfd.readouterr()

    invented = [_write(harness, a, a_number, harness.new_user(), f"spam {i}") for i in range(3)]
    customer = _write(harness, b, b_number, harness.new_user(), "a real question")
    outcomes = sorted(str(_limits_of_last_batch(harness, c)) for c in invented)

    assert outcomes == ["None", "None", "ai_calls_per_hour_per_tenant"]
    assert _limits_of_last_batch(harness, customer) is None
    assert _tenants_counted(capfd.readouterr().out, "TenantCeilingReached") == [a[0]]


def test_past_its_new_conversations_ceiling_an_invented_sender_costs_no_conversation_and_no_run(
    harness, two_tenants, configure, monkeypatch, capfd
):
    """Checked by the webhook, before the conversation is created or a run started."""
    configure(MAX_NEW_CONVERSATIONS_PER_HOUR_PER_TENANT="2", AUTO_CREATE_CONVERSATIONS="true")
    harness.wait_until_no_run_is_running()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    a, b = two_tenants
    a_number, b_number = (_number_of(sid) for sid, _ in two_tenants)
    capfd.readouterr()

    admitted = [_write(harness, a, a_number, harness.new_user(), f"spam {i}") for i in range(2)]
    invented = harness.new_user()
    response = post_webhook(
        harness.stack.whatsapp_url, inbound_form("spam 2", invented, a_number, a[0]), a[1]
    )
    customer = _write(harness, b, b_number, harness.new_user(), "a real question")

    assert response.status_code == 200 and response.text.endswith("<Response/>")
    assert harness.conversation_of(invented, a_number, a[0]) is None
    would_be = conversations.new_conversation_id(a[0], address_key(Channel.WHATSAPP, invented, a_number))
    assert (harness.staged(would_be), harness.runs(would_be)) == ([], [])
    assert [_limits_of_last_batch(harness, c) for c in admitted] == [None, None]
    assert _limits_of_last_batch(harness, customer) is None
    assert _tenants_counted(capfd.readouterr().out, "TenantCeilingReached") == [a[0]]
