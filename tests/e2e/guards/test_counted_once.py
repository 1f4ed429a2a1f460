"""An AI call is counted once however many times Generate Reply is retried (issue 29): an
attempt that gives up waiting for OpenAI (a client timeout; the response still completes
on OpenAI's side) is retried by the state machine, and the retry polls the request it
already made instead of asking again. Before, each retry counted the call again, and a slow
OpenAI day used up a tenant's hourly ceiling several times faster than it was spent.
Over HTTP, on a tenant of its own with a ceiling of 3 AI calls an hour."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from functions.answer import turns
from infra.local.stack import LocalStack
from infra.local.webhooks import inbound_form, post_webhook
from tests.support.bench import counted_calls

pytestmark = pytest.mark.e2e


@pytest.fixture
def fast_retries(stack: LocalStack) -> Iterator[None]:
    """The state machine's Retry as deployed, its delays a hundredth as long."""
    stack.scale_retry_delays(0.01)
    yield
    stack.scale_retry_delays(1)


@pytest.fixture
def tenant(harness):
    number = f"whatsapp:+1555006{secrets.randbelow(10**4):04d}"
    account_sid, token = harness.add_tenant(number)
    yield account_sid, token, number
    harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def test_three_people_are_answered_within_a_ceiling_of_three_when_two_calls_time_out_once(
    harness, configure, fast_retries, tenant
):
    configure(MAX_AI_CALLS_PER_HOUR_PER_TENANT="3", OPENAI_TIMEOUT_SECONDS="0.5")
    account_sid, token, number = tenant
    people = [harness.new_user() for _ in range(3)]

    for n, person in enumerate(people):
        if n < 2:  # answered by OpenAI after the attempt stopped waiting
            harness.stack.openai.inject({"delay": 1.0})
        form = inbound_form(f"question {n}", person, number, account_sid)
        assert post_webhook(harness.stack.whatsapp_url, form, token).status_code == 200
        conversation_id = harness.conversation_of(person, number, account_sid).conversation_id
        (run,) = harness.wait_until_quiet(conversation_id, runs=1)
        if n < 2:
            assert "AIRetryableError" in harness.failures_in(run["executionArn"])  # it was retried
        (assistant,) = [t for t in turns.list_of(conversation_id) if t.role == "assistant"]
        assert assistant.limited is None

    assert [harness.replies_to(p) for p in people] == [[f"You said: question {n}"] for n in range(3)]


def test_the_benchs_count_of_ai_calls_under_injected_retries(harness):
    """`make bench`'s figure, on two slow conversations: counted as made, each retried."""
    result = counted_calls.measure_counted_calls(harness.stack, conversations_slow=2)

    assert result["counted"] == result["made"] == 2 and result["retried"] >= 2
    assert counted_calls.row(result)[1].startswith("2 counted / 2 made")
