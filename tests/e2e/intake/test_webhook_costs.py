"""What a webhook request costs in AWS calls, counted as botocore sends them, on the local
stack (the webhook handler invoked in this thread with an API Gateway event).

A stranger costs nothing: oversized, many-field, non-UTF-8, malformed-AccountSid and
unknown-account requests make no Secrets Manager call and get no 5xx; an unknown account
costs one GetItem, then nothing while it is cached as unknown. A normal message costs what
it cost before tenants were checked (3 calls for a message in an open window; 5 for the
first message of a new conversation, plus one GetSecretValue when the token is not
cached): the tenant is read once a minute, the token once in five. The key of conversation
ids is read once per instance, by the first message that creates a conversation."""

from __future__ import annotations

from collections import Counter

import pytest
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from functions.config import get_settings
from functions.tenancy import tenants
from infra.local.gateway import proxy_event
from infra.local.lambdas import invoke
from infra.local.webhooks import inbound_form, sign
from tests.support.costs import AwsCallCounter
from tests.support.local_stack import OUR_WHATSAPP

pytestmark = pytest.mark.e2e

FORM = "application/x-www-form-urlencoded"


def _event(data: bytes | dict[str, str], signature: str | None) -> dict:
    headers = {"Content-Type": FORM, **({"X-Twilio-Signature": signature} if signature else {})}
    base = get_settings().webhook_base_url
    builder = EnvironBuilder(path="/whatsapp", base_url=base, method="POST", data=data, headers=headers)
    # Raw bytes as an API whose binary media types include forms would pass them (base64):
    # the deployed API has none, and would hand over text with U+FFFD in their place.
    binary = ("*/*",) if isinstance(data, bytes) else ()
    return proxy_event(Request(builder.get_environ()), binary_media_types=binary)


@pytest.fixture
def webhook(harness):
    """Invoke the webhook with a signed form (or raw bytes); its status and AWS calls."""
    counter = AwsCallCounter.installed()
    if "secrets" not in DEFAULT_PROVIDERS:
        # Made here, with no other handler running in this process: Powertools makes the
        # provider on first use without a lock, and a handler of an earlier test's run
        # doing so at the same moment as the webhook would put an empty one in place of the
        # one that has just cached the token (one GetSecretValue more, at random).
        harness.wait_until_no_run_is_running()
        DEFAULT_PROVIDERS["secrets"] = SecretsProvider()
    token = harness.stack.config.twilio_auth_token

    def call(data: bytes | dict[str, str], signed_with: str | None = token) -> tuple[int, Counter[str]]:
        """`data` signed with `signed_with`'s token (no signature when None; raw bytes carry
        a signature that cannot be checked)."""
        url = get_settings().webhook_base_url + "/whatsapp"
        signature = "not-checkable" if isinstance(data, bytes) else None
        if isinstance(data, dict) and signed_with:
            signature = sign(url, data, signed_with)
        event = _event(data, signature)
        (result, error), calls = counter.measure(lambda: invoke("Webhook", event))
        assert error is None, result
        return result["statusCode"], Counter(calls)

    return call


def _cold_caches() -> None:
    """A new Lambda instance: no token and no tenant in memory. The provider's cache is
    emptied, not the provider removed as `parameters.clear_caches` does (see `webhook`)."""
    DEFAULT_PROVIDERS["secrets"].clear_cache()
    tenants.forget()


def _secrets_manager(calls: Counter[str]) -> int:
    return sum(n for name, n in calls.items() if name.startswith("secretsmanager:"))


def test_a_normal_message_costs_no_more_aws_calls_than_before(harness, webhook):
    account = harness.stack.config.twilio_account_sid
    user = harness.new_user()
    _cold_caches()

    first_cold = webhook(inbound_form("hello", user, OUR_WHATSAPP, account))
    later_warm = webhook(inbound_form("again", user, OUR_WHATSAPP, account))
    other_user_first_warm = webhook(inbound_form("hi", harness.new_user(), OUR_WHATSAPP, account))

    assert later_warm == (
        200,
        Counter({"dynamodb:Query": 1, "dynamodb:PutItem": 1, "dynamodb:UpdateItem": 1}),
    )
    # find, create the conversation, stage, open the window, start the run (6 before the
    # window was opened with one UpdateItem)
    assert other_user_first_warm[0] == 200 and sum(other_user_first_warm[1].values()) == 5
    status, calls = first_cold
    assert status == 200
    # The token, as before (once per five minutes), and the key of conversation ids: this
    # cold instance's first new conversation reads it, once for the instance's life (the
    # warm instance's new conversation above read none).
    assert calls["secretsmanager:GetSecretValue"] == 2
    assert calls["dynamodb:GetItem"] == 1  # new: the tenant, once per minute
    assert sum(calls.values()) == 5 + 1 + 2


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("oversized", 413),
        ("many fields", 400),
        ("not UTF-8", 400),
        ("malformed AccountSid", 403),
        ("unknown account", 403),
        ("another tenant's number", 403),
        ("unsigned", 403),
    ],
)
def test_a_refused_request_costs_no_secrets_manager_call_and_no_5xx(harness, webhook, name, status):
    config = harness.stack.config
    user = harness.new_user()
    form = inbound_form("hi", user, OUR_WHATSAPP, config.twilio_account_sid)
    request: bytes | dict[str, str] = {
        "oversized": {**form, "Body": "y" * 1_000_000, "Padding": "z" * 1_000_000},
        "many fields": {**form, **{f"Field{i}": "x" for i in range(5000)}},
        "not UTF-8": b"AccountSid=" + config.twilio_account_sid.encode() + b"&Body=\xff\xfe",
        "malformed AccountSid": {**form, "AccountSid": "AC/../../burst-reply/openai"},
        "unknown account": {**form, "AccountSid": "AC" + "9" * 32},
        "another tenant's number": {**form, "To": "whatsapp:+15550000999"},
        "unsigned": form,
    }[name]
    _cold_caches()

    got, calls = webhook(request, None if name == "unsigned" else config.twilio_auth_token)
    again, calls_again = webhook(request, None if name == "unsigned" else config.twilio_auth_token)

    assert (got, again) == (status, status)
    assert _secrets_manager(calls) == _secrets_manager(calls_again) == 0
    assert sum(calls.values()) <= (1 if name in ("unknown account", "another tenant's number") else 0)
    assert sum(calls_again.values()) == 0  # cached: the tenant, or the account as unknown
    assert harness.conversation_of(user) is None


def test_an_adaptive_conversations_message_costs_what_any_other_does(harness, webhook, configure):
    """What `adaptive` batching learns is read with the conversation and written with the
    processing lock: no call of its own."""
    configure(BATCH_MODE="adaptive")
    account = harness.stack.config.twilio_account_sid
    user = harness.new_user()
    _cold_caches()  # the tenant and the token read now, not expiring between the two messages
    webhook(inbound_form("hello", user, OUR_WHATSAPP, account))

    later = webhook(inbound_form("again", user, OUR_WHATSAPP, account))

    assert later == (200, Counter({"dynamodb:Query": 1, "dynamodb:PutItem": 1, "dynamodb:UpdateItem": 1}))
