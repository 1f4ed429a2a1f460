"""What a batch spends at OpenAI is counted as what it is, once (issue 29): a request asked
again without a photo OpenAI refused, or of the fallback model, is a second AI call; each
voice note's transcription is one; each response's tokens count on the tenant's and
everyone's token counters. Over HTTP through the local stack, read on the hourly counters."""

from __future__ import annotations

import secrets
from datetime import date

import pytest

from functions import clock
from functions.answer import turns
from functions.answer.openai_models import DEFAULT_MODEL
from functions.config import get_settings
from functions.guards import usage_counters
from functions.guards.usage_counters import Counter
from functions.storage.models import Turn
from infra.local.webhooks import inbound_form, post_webhook
from tests.e2e.answer.test_corpus import send_burst
from tests.support.emf import emf_records

pytestmark = pytest.mark.e2e


def _calls_of(conversation_id: str) -> int:
    hour = int(clock.now().timestamp()) // 3600
    return usage_counters.calls(f"conversation#{conversation_id}#{hour}")


def test_a_request_asked_again_without_a_refused_photo_counts_as_a_second_call(harness):
    user = harness.new_user()
    harness.stack.openai.inject({"refuse_image": "image_parse_error", "failed": True})
    conversation_id = send_burst(harness, user, ["whatsapp_text", "whatsapp_image"])
    harness.wait_until_quiet(conversation_id, runs=1)

    assert len(harness.ai_inputs(conversation_id)) == _calls_of(conversation_id) == 2


def test_a_request_answered_by_the_fallback_model_counts_as_a_second_call(harness, configure, monkeypatch):
    monkeypatch.setattr(harness.stack.openai, "today", lambda: date(2026, 12, 11))
    configure(OPENAI_MODEL="gpt-5-mini", OPENAI_FALLBACK_MODEL=DEFAULT_MODEL)  # retired that day
    user = harness.new_user()
    conversation_id = send_burst(harness, user, ["whatsapp_text"])
    harness.wait_until_quiet(conversation_id, runs=1)

    assert harness.replies_to(user) and _calls_of(conversation_id) == 2


def test_a_voice_notes_transcription_counts_as_a_call(harness):
    user = harness.new_user()
    conversation_id = send_burst(harness, user, ["whatsapp_voice_note"])
    harness.wait_until_quiet(conversation_id, runs=1)

    assert len(harness.stack.openai.transcriptions) >= 1
    assert _calls_of(conversation_id) == 2  # the transcription and the reply


@pytest.fixture
def tenant(harness):
    number = f"whatsapp:+1555007{secrets.randbelow(10**4):04d}"
    account_sid, token = harness.add_tenant(number)
    yield account_sid, token, number
    harness.stack.tenants.remove(account_sid)
    harness.forget_tenants()


def _answers(harness, tenant: tuple[str, str, str], people: int, at_once: bool = True) -> list[Turn]:
    """`people` new senders write to the tenant's number; the assistant turn of each."""
    account_sid, token, number = tenant
    users = [harness.new_user() for _ in range(people)]
    answers = []
    for user in users:
        form = inbound_form("how long does shipping take?", user, number, account_sid)
        assert post_webhook(harness.stack.whatsapp_url, form, token).status_code == 200
        if not at_once:
            answers += _assistant_turn(harness, user, number, account_sid)
    if at_once:
        for user in users:
            answers += _assistant_turn(harness, user, number, account_sid)
    return answers


def _assistant_turn(harness, user: str, number: str, account_sid: str) -> list[Turn]:
    conversation_id = harness.conversation_of(user, number, account_sid).conversation_id
    harness.wait_until_quiet(conversation_id, runs=1)
    return [t for t in turns.list_of(conversation_id) if t.role == "assistant"]


def test_each_responses_tokens_count_on_its_tenants_token_counter(harness, tenant):
    account_sid = tenant[0]
    replies = _answers(harness, tenant, people=3)

    hour = int(clock.now().timestamp()) // 3600
    ceiling = get_settings().max_ai_tokens_per_hour_per_tenant
    spent = usage_counters.total(
        Counter.sharded(f"tenant_tokens#{account_sid}#{hour}", ceiling, "", "tokens")
    )
    assert all(r.total_tokens > 0 for r in replies) and spent == sum(r.total_tokens for r in replies)


def test_past_its_token_ceiling_a_tenants_next_batch_is_limited_and_counted(
    harness, tenant, configure, monkeypatch, capfd
):
    configure(MAX_AI_TOKENS_PER_HOUR_PER_TENANT="10")  # one reply of the stand-in passes it
    harness.wait_until_no_run_is_running()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    capfd.readouterr()

    answers = _answers(harness, tenant, people=2, at_once=False)

    assert [a.limited for a in answers] == [None, "ai_tokens_per_hour_per_tenant"]
    printed = emf_records(capfd.readouterr().out)
    assert [r.get("Tenant") for r in printed if "TenantCeilingReached" in r] == [tenant[0]]
    assert sum(1 for r in printed if "TokenCeilingReached" in r) == 1
