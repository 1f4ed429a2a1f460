"""Webhooks as Twilio delivers them, over HTTP: to the URL pasted in its console, which
carries our connection overrides (`#rc=5&rp=all`), signed over that URL with or without
its fragment (Twilio's docs do not say which), and retried only as the overrides say."""

from __future__ import annotations

import pytest

from functions.intake import staged_messages
from infra.local.webhooks import inbound_form
from tests.support.local_stack import OUR_WHATSAPP
from tests.support.twilio_delivery import deliver_as_twilio, given_to_twilio

pytestmark = pytest.mark.e2e


def _deliver(harness, user: str, body: str, url: str, include_fragment: bool = True):
    config = harness.stack.config
    form = inbound_form(body, user, OUR_WHATSAPP, config.twilio_account_sid)
    return deliver_as_twilio(url, form, config.twilio_auth_token, include_fragment)


@pytest.mark.parametrize("include_fragment", [True, False], ids=["signed-with-fragment", "signed-without"])
def test_a_webhook_to_the_pasted_url_is_accepted_however_twilio_signs_it(harness, include_fragment):
    user = harness.new_user()
    pasted = given_to_twilio(harness.stack.whatsapp_url)
    assert pasted.endswith("/whatsapp#rc=5&rp=all")

    delivery = _deliver(harness, user, "hello", pasted, include_fragment)

    assert [a["status"] for a in delivery.attempts] == [200]
    harness.wait_until_quiet(harness.conversation_of(user).conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: hello"]


def test_a_base_url_configured_with_the_overrides_does_not_break_signatures(harness, configure):
    configure(WEBHOOK_BASE_URL=harness.stack.gateway.url + "#rc=5&rp=all")
    user = harness.new_user()

    delivery = _deliver(harness, user, "still me", harness.stack.gateway.url + "/whatsapp#rc=5&rp=all")

    assert [a["status"] for a in delivery.attempts] == [200]


def test_a_5xx_is_retried_by_twilio_with_the_overrides_and_the_message_answered_once(harness, monkeypatch):
    user = harness.new_user()
    stage = staged_messages.stage
    failures = iter([RuntimeError("DynamoDB unavailable")])

    def fails_once(*args, **kwargs):
        error = next(failures, None)
        if error:
            raise error
        return stage(*args, **kwargs)

    monkeypatch.setattr(staged_messages, "stage", fails_once)

    delivery = _deliver(harness, user, "retry me", given_to_twilio(harness.stack.whatsapp_url))

    assert [a["status"] for a in delivery.attempts] == [500, 200]
    harness.wait_until_quiet(harness.conversation_of(user).conversation_id, runs=1)
    assert harness.replies_to(user) == ["You said: retry me"]


def test_without_the_overrides_twilio_does_not_retry_a_5xx(harness, monkeypatch):
    def unavailable(*args, **kwargs):
        raise RuntimeError("DynamoDB unavailable")

    monkeypatch.setattr(staged_messages, "stage", unavailable)

    delivery = _deliver(harness, harness.new_user(), "lost", harness.stack.whatsapp_url)

    assert [a["status"] for a in delivery.attempts] == [500]  # Twilio's default: rc=1, rp=ct
