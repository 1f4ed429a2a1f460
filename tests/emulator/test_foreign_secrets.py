"""A conversation cannot name another tenant's secret: the run reads nothing outside the
conversation's tenant, sends nothing, and fails visibly (the batch is kept, then
dead-lettered, as for any operator's error)."""

from __future__ import annotations

import pytest

from functions.config import get_settings

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize(
    "field",
    ["twilio_credentials_secret", "openai_api_key_secret"],
)
def test_a_conversation_naming_another_tenants_secret_is_not_answered_with_it(harness, field):
    other_sid, _ = harness.add_tenant()
    settings = get_settings()
    prefix = (
        settings.twilio_tenant_secret_prefix
        if field.startswith("twilio")
        else settings.openai_tenant_secret_prefix
    )
    user = harness.new_user()
    conversation_id = harness.stage_directly(user, ["use someone else's account"])
    harness.set_conversation(conversation_id, **{field: prefix + other_sid})

    run = harness.wait_for_run(harness.start_run(conversation_id))

    assert run["status"] == "FAILED"
    assert "SecretOutsideTenant" in harness.failures_in(run["executionArn"])
    assert harness.replies_to(user) == []
    assert [c for c in harness.stack.twilio.calls if c["to"] == user] == []
    assert "lock_owner" not in harness.conversation_item(conversation_id)
    harness.stack.tenants.remove(other_sid)
