"""Credentials a vendor refuses, and a rotated token, in the code alone: Twilio's 401 and
OpenAI's 401 are errors of their own, kept as the configuration's fault; the webhook reads
a tenant's secret again once for each token version its item names, never for a bad
signature (tests/e2e/tenancy/test_stale_credentials.py and tests/e2e/intake/test_outsiders.py
show it over HTTP)."""

from __future__ import annotations

import httpx2
import openai
import pytest
from twilio.base.exceptions import TwilioRestException

from functions.answer import openai_responses
from functions.batching.rules.failures import FailureKind, classify
from functions.delivery import twilio_messages
from functions.errors import AICredentialsRefused, TwilioCredentialsRefused, TwilioPermanentError
from functions.stack_names import STACK_NAME, twilio_tenant_secret_prefix
from functions.tenancy import secrets

A = "AC" + "a" * 32
NAME = twilio_tenant_secret_prefix(STACK_NAME) + A


def test_a_refused_key_or_token_keeps_the_batch_without_counting_an_attempt():
    assert classify("TwilioCredentialsRefused") is FailureKind.CONFIGURATION
    assert classify("AICredentialsRefused") is FailureKind.CONFIGURATION
    assert classify("TwilioPermanentError") is FailureKind.PERMANENT  # unchanged


def test_twilios_401_is_a_refused_token_and_still_a_refusal():
    with pytest.raises(TwilioCredentialsRefused) as refused, twilio_messages._calling_twilio():
        raise TwilioRestException(401, "https://api.twilio.com/x", "Authenticate", code=20003)
    assert isinstance(refused.value, TwilioPermanentError) and refused.value.refused  # created nothing
    with pytest.raises(TwilioPermanentError) as other, twilio_messages._calling_twilio():
        raise TwilioRestException(400, "https://api.twilio.com/x", "Unsubscribed", code=21610)
    assert not isinstance(other.value, TwilioCredentialsRefused)


def test_openais_401_is_a_refused_key():
    request = httpx2.Request("POST", "https://api.openai.com/v1/responses")
    body = {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
    response = httpx2.Response(401, request=request, json=body)

    def refused() -> None:
        raise openai.AuthenticationError("Incorrect API key provided", response=response, body=body["error"])

    with pytest.raises(AICredentialsRefused) as error:
        openai_responses._call(refused)
    assert error.value.code == "invalid_api_key"


@pytest.fixture
def stored(monkeypatch) -> tuple[dict[str, str], list[bool]]:
    """The tenant's secret as Secrets Manager holds it, and each read: True when past the
    cache. The cache holds the version first read."""
    secret = {"account_sid": A, "auth_token": "old", "token_version": "v1"}
    cached = dict(secret)
    reads: list[bool] = []

    def fake_secret(name, fresh=False, provider=None):
        assert name == NAME
        reads.append(fresh)
        if fresh:
            cached.update(secret)
        return dict(cached)

    monkeypatch.setattr(secrets, "_secret", fake_secret)
    monkeypatch.setattr(secrets, "_read_for_version", {})
    return secret, reads


def test_the_secret_is_read_again_once_for_each_new_token_version(stored):
    secret, reads = stored
    assert secrets.tenant_twilio_credentials(A, "v1").auth_token == "old"
    assert reads == [False]  # the version it holds: the cache

    secret.update(auth_token="new", token_version="v2")  # infra.tenants: the secret, then the item
    taken = [secrets.tenant_twilio_credentials(A, "v2").auth_token for _ in range(3)]

    assert taken == ["new"] * 3
    assert reads == [False, False, True, False, False]  # once past the cache, for v2


def test_an_item_ahead_of_its_secret_costs_one_read_per_version(stored):
    """A secret written by hand without the version (or not yet): read again once, then
    taken from the cache until it expires or the item names another version."""
    _, reads = stored
    for _ in range(3):
        assert secrets.tenant_twilio_credentials(A, "v9").auth_token == "old"
    assert reads.count(True) == 1
