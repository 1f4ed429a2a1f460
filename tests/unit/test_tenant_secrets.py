"""A conversation's secrets are its tenant's: a name outside the tenant's prefix is
refused before anything is read, and the Twilio secret must be the tenant's account."""

import pytest

from functions.dal.models import Conversation
from functions.errors import SecretOutsideTenant
from functions.inbound import Channel
from functions.integrations import secrets
from functions.stack_names import (
    STACK_NAME,
    openai_secret_name,
    openai_tenant_secret_prefix,
    twilio_tenant_secret_prefix,
)

A, B = "AC" + "a" * 32, "AC" + "b" * 32
# The functions' defaults: the names of the stack named STACK_NAME.
TWILIO, OPENAI = twilio_tenant_secret_prefix(STACK_NAME), openai_tenant_secret_prefix(STACK_NAME)
DEPLOYMENT_KEY = openai_secret_name(STACK_NAME)
STORED = {
    TWILIO + A: {"account_sid": A, "auth_token": "token-a"},
    TWILIO + B: {"account_sid": B, "auth_token": "token-b"},
    TWILIO + A + "/misfiled": {"account_sid": B, "auth_token": "token-b"},
    OPENAI + A + "/support": {"api_key": "key-a"},
    OPENAI + B: {"api_key": "key-b"},
    DEPLOYMENT_KEY: {"api_key": "deployment-key"},
}


@pytest.fixture
def read(monkeypatch):
    names: list[str] = []

    def fake_secret(name, fresh=False):
        names.append(name)
        return STORED[name]

    monkeypatch.setattr(secrets, "_secret", fake_secret)
    return names


def _conversation(tenant: str | None = A, **fields) -> Conversation:
    return Conversation(
        conversation_id="c1",
        channel=Channel.WHATSAPP,
        user_address="whatsapp:+15551234567",
        our_address="whatsapp:+15550000001",
        created_at="2026-11-26T00:00:00.000000+00:00",
        tenant_account_sid=tenant,
        **fields,
    )


def test_replies_use_the_tenants_own_twilio_credentials(read):
    credentials = secrets.twilio_credentials_for(_conversation())
    assert (credentials.account_sid, credentials.auth_token) == (A, "token-a")
    assert read == [TWILIO + A]


def test_the_deployments_openai_key_or_one_of_the_tenants_own(read):
    assert secrets.openai_api_key_for(_conversation()) == "deployment-key"
    own = _conversation(openai_api_key_secret=OPENAI + A + "/support")
    assert secrets.openai_api_key_for(own) == "key-a"


@pytest.mark.parametrize(
    "fields",
    [
        {"twilio_credentials_secret": TWILIO + B},  # another tenant's account
        {"twilio_credentials_secret": TWILIO + A + "x"},  # a prefix of a name is not the name
        {"twilio_credentials_secret": DEPLOYMENT_KEY},
        {"twilio_credentials_secret": "prod/database-password"},
        {"openai_api_key_secret": OPENAI + B},
        {"openai_api_key_secret": OPENAI + A + "-other"},
        {"openai_api_key_secret": TWILIO + A},  # a Twilio secret is not an OpenAI key
    ],
)
def test_a_secret_outside_the_tenants_prefix_is_refused_unread(read, fields):
    conversation = _conversation(**fields)
    with pytest.raises(SecretOutsideTenant):
        if "twilio_credentials_secret" in fields:
            secrets.twilio_credentials_for(conversation)
        else:
            secrets.openai_api_key_for(conversation)
    assert read == []


def test_a_twilio_secret_under_the_prefix_must_hold_the_tenants_account(read):
    with pytest.raises(SecretOutsideTenant):
        secrets.twilio_credentials_for(_conversation(twilio_credentials_secret=TWILIO + A + "/misfiled"))


def test_a_conversation_without_a_tenant_gets_no_credentials(read):
    with pytest.raises(SecretOutsideTenant):
        secrets.twilio_credentials_for(_conversation(tenant=None))
    with pytest.raises(SecretOutsideTenant):
        secrets.openai_api_key_for(_conversation(tenant=None, openai_api_key_secret=OPENAI + A))
    assert read == []
