"""Signature validation with the twilio SDK's RequestValidator, keyed by the auth token of
the account the request names. The credential lookup is replaced by a table here; the
end-to-end tests use Secrets Manager on the emulator."""

import pytest
from twilio.request_validator import RequestValidator

from functions.handlers.webhook import public_url
from functions.integrations import secrets
from functions.logic import intake

OURS = "AC" + "1" * 32
TENANT = "AC" + "2" * 32
URL = "https://abc.execute-api.us-east-1.amazonaws.com/prod/whatsapp"
TOKENS = {OURS: "our-token", TENANT: "tenant-token"}


@pytest.fixture(autouse=True)
def known_accounts(monkeypatch):
    monkeypatch.setattr(secrets, "twilio_auth_token_for", TOKENS.get)


def _signed(form: dict[str, str], token: str, url: str = URL) -> str:
    return RequestValidator(token).compute_signature(url, form)


def test_a_request_signed_by_our_account_is_valid():
    form = {"AccountSid": OURS, "Body": "hi", "From": "whatsapp:+1"}
    assert intake.signature_is_valid(form, URL, _signed(form, "our-token"))


def test_each_account_is_checked_with_its_own_token():
    form = {"AccountSid": TENANT, "Body": "hi"}
    assert intake.signature_is_valid(form, URL, _signed(form, "tenant-token"))
    assert not intake.signature_is_valid(form, URL, _signed(form, "our-token"))


@pytest.mark.parametrize(
    ("form", "signature"),
    [
        ({"AccountSid": OURS, "Body": "hi"}, None),  # missing
        ({"AccountSid": OURS, "Body": "hi"}, "forged"),
        ({"Body": "hi"}, "anything"),  # no account named
        ({"AccountSid": "AC" + "9" * 32, "Body": "hi"}, "anything"),  # not our account
    ],
)
def test_invalid_signatures_are_refused(form, signature):
    assert not intake.signature_is_valid(form, URL, signature)


def test_a_signature_over_another_url_or_other_fields_is_refused():
    form = {"AccountSid": OURS, "Body": "hi"}
    assert not intake.signature_is_valid(form, URL, _signed(form, "our-token", URL.replace("prod", "dev")))
    assert not intake.signature_is_valid({**form, "Body": "changed"}, URL, _signed(form, "our-token"))


def test_the_public_url_is_rebuilt_from_host_and_stage_path():
    event = {
        "path": "/whatsapp",
        "headers": {"Host": "abc.execute-api.us-east-1.amazonaws.com", "X-Forwarded-Proto": "https"},
        "requestContext": {"path": "/prod/whatsapp", "stage": "prod"},
    }
    assert public_url(event) == URL
