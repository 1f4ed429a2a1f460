"""A conversation cannot name another tenant's secret: the run reads nothing outside the
conversation's tenant, sends nothing, and fails visibly (the batch is kept, then
dead-lettered, as for any operator's error)."""

from __future__ import annotations

import pytest

from functions.answer import turns
from functions.intake import staged_messages
from functions.tenancy.settings import OpenAIKeySettings, TenancySettings

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize(
    "field",
    ["twilio_credentials_secret", "openai_api_key_secret"],
)
def test_a_conversation_naming_another_tenants_secret_is_not_answered_with_it(harness, configure, field):
    configure(MAX_BATCH_ATTEMPTS="2")
    other_sid, _ = harness.add_tenant()
    prefix = (
        TenancySettings.get().twilio_tenant_secret_prefix
        if field.startswith("twilio")
        else OpenAIKeySettings.get().openai_tenant_secret_prefix
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["use someone else's account"])
    harness.set_conversation(conversation_id, **{field: prefix + other_sid})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED"
    assert "SecretOutsideTenant" in harness.failures_in(run["executionArn"])
    assert len(staged_messages.pending(conversation_id)) == 1  # kept for another attempt
    assert not [t for t in turns.list_of(conversation_id) if t.status == "dead_lettered"]

    again = harness.wait_for_run(harness.start_run(conversation_id))  # the second of two attempts

    assert again["status"] == "FAILED"
    assert "SecretOutsideTenant" in harness.failures_in(again["executionArn"])
    assert staged_messages.pending(conversation_id) == []  # set aside
    (dead,) = [t for t in turns.list_of(conversation_id) if t.status == "dead_lettered"]
    assert (dead.error, dead.dead_letter_reason, dead.message_count) == (
        "SecretOutsideTenant",
        "max_batch_attempts",
        1,
    )
    assert harness.replies_to(user) == []
    assert [c for c in harness.stack.twilio.calls if c["to"] == user] == []
    assert "lock_owner" not in harness.conversation_item(conversation_id)
    harness.stack.tenants.remove(other_sid)
