"""What the webhook tells CloudWatch, over HTTP through the local stack: a refused message
is counted as `WebhooksRefused` in the namespace and dimension the refused-webhooks alarm
reads (tests/infra/test_stack.py asserts the alarm's side), an accepted one is not, and
neither the message's body nor the token shows in what the function prints.

Locally the metrics are not printed (POWERTOOLS_METRICS_DISABLED); these tests turn them on,
so the handlers print their Embedded Metric Format records as they do in Lambda."""

from __future__ import annotations

import pytest

from infra.local.webhooks import inbound_form, post_webhook
from infra.names import NAMESPACE, SERVICE
from tests.support.emf import emf_records
from tests.support.local_stack import OUR_WHATSAPP

pytestmark = pytest.mark.e2e


def _refusals(printed: str) -> list[float]:
    """The WebhooksRefused values of the EMF records printed, checked to be where the
    alarm looks: namespace BurstReply, dimension service=burst-reply."""
    values = []
    for record in emf_records(printed):
        if "WebhooksRefused" not in record:
            continue
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        assert ["service"] in directive["Dimensions"] and record["service"] == SERVICE
        assert {"Name": "WebhooksRefused", "Unit": "Count"} in directive["Metrics"]
        value = record["WebhooksRefused"]  # EMF: a value, or the list of values in the record
        values += value if isinstance(value, list) else [value]
    return values


def test_a_forged_webhook_counts_as_refused_and_a_genuine_one_does_not(harness, monkeypatch, capfd, caplog):
    harness.wait_until_no_run_is_running()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    config = harness.stack.config
    body = "my card number is in this message"
    form = inbound_form(body, harness.new_user(), OUR_WHATSAPP, config.twilio_account_sid)
    capfd.readouterr()

    forged = post_webhook(harness.stack.whatsapp_url, form, "not-the-auth-token")
    printed = capfd.readouterr().out
    assert forged.status_code == 403
    assert _refusals(printed) == [1]
    logged = printed + "".join(str(vars(r)) for r in caplog.records)
    assert "Webhook refused" in logged
    assert body not in logged and config.twilio_auth_token not in logged

    user = harness.new_user()
    genuine = post_webhook(
        harness.stack.whatsapp_url,
        inbound_form("hello", user, OUR_WHATSAPP, config.twilio_account_sid),
        config.twilio_auth_token,
    )
    assert genuine.status_code == 200
    harness.wait_until_quiet(harness.conversation_of(user).conversation_id, runs=1)
    assert _refusals(capfd.readouterr().out) == []
