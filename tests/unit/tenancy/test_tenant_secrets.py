"""A conversation's secrets are its tenant's: a name outside the tenant's prefix is
refused before anything is read, and the Twilio secret must be the tenant's account."""

import time
from datetime import UTC, datetime, timedelta

import pytest

from functions.errors import SecretOutsideTenant
from functions.intake.inbound import Channel
from functions.stack_names import (
    STACK_NAME,
    openai_secret_name,
    openai_tenant_secret_prefix,
    twilio_tenant_secret_prefix,
)
from functions.storage.models import Conversation
from functions.tenancy import secrets, tenant_sessions

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

    def fake_secret(name, fresh=False, provider=None):
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


class FakeSts:
    """STS's AssumeRole: each call a new session, lasting what was asked."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    def assume_role(self, **request):
        self.requests.append(request)
        expires = datetime.now(UTC) + timedelta(seconds=request["DurationSeconds"])
        key = f"ASIA{len(self.requests)}"
        return {
            "Credentials": {
                "AccessKeyId": key,
                "SecretAccessKey": "s",
                "SessionToken": "t",
                "Expiration": expires,
            }
        }


@pytest.fixture
def sts(monkeypatch, configure):
    configure(TWILIO_TENANT_READER_ROLE_ARN="arn:aws:iam::123456789012:role/reader")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    fake = FakeSts()
    monkeypatch.setattr(tenant_sessions, "_sts", lambda: fake)
    monkeypatch.setattr(tenant_sessions, "_sessions", {})
    return fake


def test_media_credentials_are_read_in_a_session_tagged_with_the_conversations_tenant(sts, monkeypatch):
    providers = []

    def fake_secret(name, fresh=False, provider=None):
        providers.append((name, provider))
        return STORED[name]

    monkeypatch.setattr(secrets, "_secret", fake_secret)

    credentials = secrets.twilio_credentials_in_tenant_session(_conversation())
    secrets.twilio_credentials_in_tenant_session(_conversation())  # the same session again

    assert credentials.account_sid == A
    assert [(r["RoleArn"], r["Tags"]) for r in sts.requests] == [
        ("arn:aws:iam::123456789012:role/reader", [{"Key": "tenant", "Value": A}])
    ]
    assert providers == [(TWILIO + A, tenant_sessions.secrets_of(A))] * 2
    signer = tenant_sessions.secrets_of(A).client._request_signer
    assert signer._credentials.access_key == "ASIA1"  # it signs with the session's credentials
    with pytest.raises(SecretOutsideTenant):  # still refused before anything is read
        secrets.twilio_credentials_in_tenant_session(_conversation(twilio_credentials_secret=TWILIO + B))
    assert len(providers) == 2


def test_a_tenants_own_openai_key_is_read_in_a_session_of_the_openai_reader_tagged_with_it(
    sts, configure, monkeypatch
):
    configure(OPENAI_TENANT_READER_ROLE_ARN="arn:aws:iam::123456789012:role/openai-reader")
    providers = []

    def fake_secret(name, fresh=False, provider=None):
        providers.append((name, provider))
        return STORED[name]

    monkeypatch.setattr(secrets, "_secret", fake_secret)

    own = _conversation(openai_api_key_secret=OPENAI + A + "/support")
    assert secrets.openai_api_key_for(own) == "key-a"
    assert secrets.openai_api_key_for(_conversation()) == "deployment-key"  # the deployment's: own role

    assert [(r["RoleArn"], r["Tags"]) for r in sts.requests] == [
        ("arn:aws:iam::123456789012:role/openai-reader", [{"Key": "tenant", "Value": A}])
    ]
    openai_session = tenant_sessions.secrets_of(A, "arn:aws:iam::123456789012:role/openai-reader")
    assert providers == [(OPENAI + A + "/support", openai_session), (DEPLOYMENT_KEY, None)]
    assert openai_session is not tenant_sessions.secrets_of(A)  # the Twilio reader's is another
    with pytest.raises(SecretOutsideTenant):  # still refused before anything is read
        secrets.openai_api_key_for(_conversation(openai_api_key_secret=OPENAI + B))
    assert len(providers) == 2


def test_a_tenants_session_is_taken_again_before_it_ends(sts, monkeypatch):
    first = tenant_sessions.secrets_of(A)
    assert tenant_sessions.secrets_of(B) is not first  # each tenant its own
    now = time.time()
    ending = now + tenant_sessions.SESSION_SECONDS - tenant_sessions.RENEW_BEFORE_SECONDS + 1
    monkeypatch.setattr(tenant_sessions.time, "time", lambda: ending)

    assert tenant_sessions.secrets_of(A) is not first
    assert [r["Tags"][0]["Value"] for r in sts.requests] == [A, B, A]
